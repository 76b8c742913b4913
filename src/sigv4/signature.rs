//! The signature a request carries, read from where SigV4 clients put it: the `Authorization` header
//! (`AWS4-HMAC-SHA256 Credential=KEY/DATE/REGION/SERVICE/aws4_request, SignedHeaders=a;b, Signature=HEX`) or
//! a presigned URL's `X-Amz-*` query parameters. Signature Version 2, SigV4a and signed streaming payloads
//! are named as such, so that the refusal says what to change.

use std::time::{Duration, SystemTime};

use http::request::Parts;

/// The one algorithm cordon re-signs.
pub(crate) const ALGORITHM: &str = "AWS4-HMAC-SHA256";

/// The query parameters of a presigned URL's signature (removed before it is signed again).
pub(crate) const QUERY_PARAMS: [&str; 7] = [
    "X-Amz-Algorithm",
    "X-Amz-Credential",
    "X-Amz-Date",
    "X-Amz-Expires",
    "X-Amz-SignedHeaders",
    "X-Amz-Signature",
    "X-Amz-Security-Token",
];

/// The longest a presigned URL may live (what AWS accepts).
const MAX_EXPIRES: u64 = 7 * 24 * 3600;

/// Where the signature is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Location {
    /// `Authorization` and `X-Amz-Date` headers.
    Header,
    /// A presigned URL, valid this many seconds from its date.
    Query {
        /// `X-Amz-Expires`.
        expires: u64,
    },
}

/// A SigV4 signature as the sandbox made it.
#[derive(Debug, Clone)]
pub(crate) struct Signed {
    /// Header or query.
    pub(crate) location: Location,
    /// The access key id it names.
    pub(crate) key_id: String,
    /// The region of its credential scope.
    pub(crate) region: String,
    /// The service of its credential scope.
    pub(crate) service: String,
    /// `X-Amz-Date`.
    pub(crate) time: SystemTime,
    /// The headers it signed, lower case, in its order.
    pub(crate) signed_headers: Vec<String>,
    /// The signature, lower-case hex.
    pub(crate) signature: String,
    /// `x-amz-content-sha256` when it is among the signed headers: the payload's hash or a marker such as
    /// `UNSIGNED-PAYLOAD` or `STREAMING-UNSIGNED-PAYLOAD-TRAILER`.
    pub(crate) payload: Option<String>,
}

/// Why a request's AWS signature is not one cordon can take.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Unfit {
    /// A form cordon does not re-sign (SigV2, SigV4a, signed streaming chunks): what to do instead.
    Unsupported(String),
    /// Not a well-formed SigV4 signature.
    Malformed(String),
}

/// The SigV4 signature of a request: `Ok(None)` if it carries none at all.
pub(crate) fn read(parts: &Parts) -> Result<Option<Signed>, Unfit> {
    let mut auth = parts.headers.get_all(http::header::AUTHORIZATION).iter();
    let header = auth.next();
    if auth.next().is_some() {
        return Err(Unfit::Malformed("more than one Authorization header".into()));
    }
    let query: Vec<(String, String)> = parts
        .uri
        .query()
        .map(|q| form_urlencoded::parse(q.as_bytes()).into_owned().collect())
        .unwrap_or_default();
    let param = |name: &str| query.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str());
    if param("AWSAccessKeyId").is_some() && param("Signature").is_some() {
        return Err(sigv2());
    }
    let presigned = param("X-Amz-Algorithm").is_some() || param("X-Amz-Signature").is_some();
    match (header, presigned) {
        (Some(_), true) => Err(Unfit::Malformed(
            "signed twice: an Authorization header and a presigned query".into(),
        )),
        (None, false) => Ok(None),
        (Some(value), false) => {
            let text = value
                .to_str()
                .map_err(|_| Unfit::Malformed("the Authorization header is not text".into()))?;
            from_header(parts, text).map(Some)
        }
        (None, true) => from_query(&param).map(Some),
    }
}

fn sigv2() -> Unfit {
    Unfit::Unsupported(
        "AWS Signature Version 2 cannot be re-signed; sign with Signature Version 4 (boto3: \
         Config(signature_version=\"s3v4\"); AWS CLI: `aws configure set default.s3.signature_version s3v4`)"
            .into(),
    )
}

fn from_header(parts: &Parts, text: &str) -> Result<Signed, Unfit> {
    let (algorithm, rest) = text.split_once(' ').unwrap_or((text, ""));
    match algorithm {
        ALGORITHM => {}
        "AWS" => return Err(sigv2()),
        "AWS4-ECDSA-P256-SHA256" => {
            return Err(Unfit::Unsupported(
                "SigV4a (multi-region) signatures cannot be re-signed; sign with SigV4 for one region".into(),
            ));
        }
        _ => return Err(Unfit::Malformed(format!("{algorithm:?} is not an AWS signature"))),
    }
    let mut fields = (None, None, None);
    for field in rest.split(',').map(str::trim).filter(|f| !f.is_empty()) {
        match field.split_once('=') {
            Some(("Credential", v)) if fields.0.is_none() => fields.0 = Some(v),
            Some(("SignedHeaders", v)) if fields.1.is_none() => fields.1 = Some(v),
            Some(("Signature", v)) if fields.2.is_none() => fields.2 = Some(v),
            _ => {
                return Err(Unfit::Malformed(format!(
                    "unexpected {field:?} in the Authorization header"
                )));
            }
        }
    }
    let (Some(credential), Some(signed), Some(signature)) = fields else {
        return Err(Unfit::Malformed(
            "the Authorization header lacks Credential, SignedHeaders or Signature".into(),
        ));
    };
    let date = one_header(parts, "x-amz-date")?
        .ok_or_else(|| Unfit::Malformed("a header signature without an X-Amz-Date header".into()))?;
    let signed_headers = signed_list(signed)?;
    let payload = match signed_headers.iter().any(|h| h == "x-amz-content-sha256") {
        true => Some(
            one_header(parts, "x-amz-content-sha256")?
                .ok_or_else(|| Unfit::Malformed("x-amz-content-sha256 is signed but not sent".into()))?
                .to_string(),
        ),
        false => None,
    };
    if let Some(p) = &payload
        && p.starts_with("STREAMING-AWS4-")
    {
        return Err(Unfit::Unsupported(format!(
            "a payload signed chunk by chunk ({p}) cannot be re-signed; send it unsigned over HTTPS \
             (STREAMING-UNSIGNED-PAYLOAD-TRAILER or UNSIGNED-PAYLOAD, what AWS SDKs do over HTTPS)"
        )));
    }
    finish(Location::Header, credential, date, signed_headers, signature, payload)
}

fn from_query<'a>(param: &impl Fn(&str) -> Option<&'a str>) -> Result<Signed, Unfit> {
    let get = |name: &str| param(name).ok_or_else(|| Unfit::Malformed(format!("a presigned URL without {name}")));
    match get("X-Amz-Algorithm")? {
        ALGORITHM => {}
        other => {
            return Err(Unfit::Unsupported(format!(
                "{other:?} presigned URLs cannot be re-signed"
            )));
        }
    }
    let expires: u64 = get("X-Amz-Expires")?
        .parse()
        .ok()
        .filter(|e| (1..=MAX_EXPIRES).contains(e))
        .ok_or_else(|| Unfit::Malformed(format!("X-Amz-Expires is not 1 to {MAX_EXPIRES} seconds")))?;
    let signed_headers = signed_list(get("X-Amz-SignedHeaders")?)?;
    finish(
        Location::Query { expires },
        get("X-Amz-Credential")?,
        get("X-Amz-Date")?,
        signed_headers,
        get("X-Amz-Signature")?,
        None,
    )
}

fn finish(
    location: Location,
    credential: &str,
    date: &str,
    signed_headers: Vec<String>,
    signature: &str,
    payload: Option<String>,
) -> Result<Signed, Unfit> {
    let scope: Vec<&str> = credential.split('/').collect();
    let [key_id, day, region, service, "aws4_request"] = scope[..] else {
        return Err(Unfit::Malformed(
            "the credential is not KEY/DATE/REGION/SERVICE/aws4_request".into(),
        ));
    };
    let time = amz_date(date).ok_or_else(|| Unfit::Malformed(format!("{date:?} is not an X-Amz-Date")))?;
    if !date.starts_with(day) || day.len() != 8 {
        return Err(Unfit::Malformed("the credential's date is not the X-Amz-Date's".into()));
    }
    if signature.len() != 64
        || !signature
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    {
        return Err(Unfit::Malformed("the signature is not 64 lower-case hex digits".into()));
    }
    if !signed_headers.iter().any(|h| h == "host") {
        return Err(Unfit::Malformed("the signature does not cover the host".into()));
    }
    Ok(Signed {
        location,
        key_id: key_id.to_string(),
        region: region.to_string(),
        service: service.to_string(),
        time,
        signed_headers,
        signature: signature.to_string(),
        payload,
    })
}

fn signed_list(text: &str) -> Result<Vec<String>, Unfit> {
    let list: Vec<String> = text.split(';').map(str::to_string).collect();
    if list
        .iter()
        .any(|h| h.is_empty() || h.bytes().any(|b| b.is_ascii_uppercase() || !b.is_ascii_graphic()))
    {
        return Err(Unfit::Malformed(format!("{text:?} is not a list of signed headers")));
    }
    Ok(list)
}

/// The one value of header `name`, if sent (twice is refused: which one was signed?).
fn one_header<'a>(parts: &'a Parts, name: &str) -> Result<Option<&'a str>, Unfit> {
    let mut all = parts.headers.get_all(name).iter();
    let (Some(v), None) = (all.next(), all.next()) else {
        return match parts.headers.contains_key(name) {
            true => Err(Unfit::Malformed(format!("more than one {name} header"))),
            false => Ok(None),
        };
    };
    v.to_str()
        .map(Some)
        .map_err(|_| Unfit::Malformed(format!("the {name} header is not text")))
}

/// `20261201T204000Z` as a time.
pub(crate) fn amz_date(text: &str) -> Option<SystemTime> {
    let b = text.as_bytes();
    if b.len() != 16 || b[8] != b'T' || b[15] != b'Z' {
        return None;
    }
    let num = |range: std::ops::Range<usize>| -> Option<u32> {
        let part = text.get(range)?;
        part.bytes().all(|c| c.is_ascii_digit()).then(|| part.parse().ok())?
    };
    let month = time::Month::try_from(u8::try_from(num(4..6)?).ok()?).ok()?;
    let date =
        time::Date::from_calendar_date(i32::try_from(num(0..4)?).ok()?, month, u8::try_from(num(6..8)?).ok()?).ok()?;
    let at = time::Time::from_hms(
        u8::try_from(num(9..11)?).ok()?,
        u8::try_from(num(11..13)?).ok()?,
        u8::try_from(num(13..15)?).ok()?,
    )
    .ok()?;
    let secs = u64::try_from(time::PrimitiveDateTime::new(date, at).assume_utc().unix_timestamp()).ok()?;
    SystemTime::UNIX_EPOCH.checked_add(Duration::from_secs(secs))
}

#[cfg(test)]
#[path = "signature_tests.rs"]
mod tests;
