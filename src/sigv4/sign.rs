//! SigV4 with the `aws-sigv4` crate. One function serves both ends: signing the request as the sandbox sent
//! it with the sandbox's placeholder keys must give the signature it carries (the check), and signing it with
//! the real keys gives the signature that goes upstream. The headers signed are the ones the sandbox signed,
//! with their values as they go upstream; the time is the sandbox's `X-Amz-Date`.

use std::borrow::Cow;
use std::time::{Duration, SystemTime};

use aws_sigv4::http_request::{
    PayloadChecksumKind, PercentEncodingMode, SignableBody, SignableRequest, SignatureLocation, SigningSettings,
    UriPathNormalizationMode,
};
use http::request::Parts;
use secrecy::ExposeSecret;

use crate::sigv4::AwsKeys;
use crate::sigv4::signature::{Location, QUERY_PARAMS, Signed};

/// The headers the signer sets itself: never handed to it.
const SIGNER_HEADERS: [&str; 3] = ["x-amz-date", "x-amz-content-sha256", "x-amz-security-token"];

/// What the payload hash is.
#[derive(Debug, Clone)]
pub(crate) enum Payload<'a> {
    /// The `x-amz-content-sha256` the sandbox signed (a hash, or a marker like `UNSIGNED-PAYLOAD`).
    Given(String),
    /// The body itself, hashed.
    Bytes(&'a [u8]),
    /// `UNSIGNED-PAYLOAD` (presigned S3 URLs).
    Unsigned,
}

/// The parts of a request that are signed.
#[derive(Debug, Clone)]
pub(crate) struct Canonical {
    /// The method.
    pub(crate) method: String,
    /// `https://AUTHORITY/PATH?QUERY`, the query without a presigned signature's parameters.
    pub(crate) uri: String,
    /// The signed headers but the signer's own: (name, value), one entry per value.
    pub(crate) headers: Vec<(String, String)>,
}

/// A signature made: the headers or query parameters to set, and its hex.
#[derive(Debug)]
pub(crate) struct Made {
    /// Headers to set: (name, value, sensitive).
    pub(crate) headers: Vec<(&'static str, String, bool)>,
    /// Query parameters to append.
    pub(crate) params: Vec<(&'static str, String)>,
    /// The signature.
    pub(crate) signature: String,
}

/// The query of `query` without a presigned signature's parameters, each other parameter as it was written.
pub(crate) fn unsigned_query(query: &str) -> String {
    query
        .split('&')
        .filter(|pair| {
            let key = pair.split('=').next().unwrap_or_default();
            let key: String = form_urlencoded::parse(key.as_bytes())
                .next()
                .map(|(k, _)| k.into_owned())
                .unwrap_or_default();
            !pair.is_empty() && !QUERY_PARAMS.contains(&key.as_str())
        })
        .collect::<Vec<_>>()
        .join("&")
}

/// What of `parts` the sandbox's signature `signed` covers, with `authority` as the host.
pub(crate) fn canonical(parts: &Parts, signed: &Signed, authority: &str) -> Result<Canonical, String> {
    let path = parts.uri.path();
    let query = parts.uri.query().map(|q| match signed.location {
        Location::Query { .. } => unsigned_query(q),
        Location::Header => q.to_string(),
    });
    let uri = match query.as_deref() {
        Some(q) if !q.is_empty() => format!("https://{authority}{path}?{q}"),
        _ => format!("https://{authority}{path}"),
    };
    let mut headers = Vec::new();
    for name in &signed.signed_headers {
        if SIGNER_HEADERS.contains(&name.as_str()) {
            continue;
        }
        if name == "host" && !parts.headers.contains_key(http::header::HOST) {
            // HTTP/2: the host is the :authority, which the signer reads from the URI.
            continue;
        }
        let mut any = false;
        for value in parts.headers.get_all(name.as_str()) {
            let value = value
                .to_str()
                .map_err(|_| format!("the signed header {name} is not text"))?;
            headers.push((name.clone(), value.to_string()));
            any = true;
        }
        if !any {
            return Err(format!("the signed header {name} is not in the request"));
        }
    }
    Ok(Canonical {
        method: parts.method.as_str().to_string(),
        uri,
        headers,
    })
}

/// Sign `request` with `keys` for `region` and `service` at `time`, at `location`.
pub(crate) fn sign(
    request: &Canonical,
    keys: &AwsKeys,
    scope: (&str, &str),
    time: SystemTime,
    location: Location,
    payload: &Payload<'_>,
) -> Result<Made, String> {
    let (region, service) = scope;
    let mut settings = SigningSettings::default();
    // Exactly the headers handed over are signed: the sandbox chose them.
    settings.excluded_headers = None;
    if service == "s3" {
        settings.percent_encoding_mode = PercentEncodingMode::Single;
        settings.uri_path_normalization_mode = UriPathNormalizationMode::Disabled;
    }
    let body = match payload {
        Payload::Given(hash) => {
            if location == Location::Header {
                settings.payload_checksum_kind = PayloadChecksumKind::XAmzSha256;
            }
            SignableBody::Precomputed(hash.clone())
        }
        Payload::Bytes(bytes) => SignableBody::Bytes(bytes),
        Payload::Unsigned => SignableBody::UnsignedPayload,
    };
    if let Location::Query { expires } = location {
        settings.signature_location = SignatureLocation::QueryParams;
        settings.expires_in = Some(Duration::from_secs(expires));
    }
    let credentials = aws_credential_types::Credentials::new(
        keys.id.clone(),
        keys.secret.expose_secret().to_string(),
        keys.token.as_ref().map(|t| t.expose_secret().to_string()),
        None,
        "cordon",
    );
    let identity = credentials.into();
    let params = aws_sigv4::sign::v4::SigningParams::builder()
        .identity(&identity)
        .region(region)
        .name(service)
        .time(time)
        .settings(settings)
        .build()
        .map_err(|e| format!("cannot set up signing: {e}"))?
        .into();
    let signable = SignableRequest::new(
        &request.method,
        Cow::Borrowed(request.uri.as_str()),
        request.headers.iter().map(|(n, v)| (n.as_str(), v.as_str())),
        body,
    )
    .map_err(|e| format!("cannot sign this request: {e}"))?;
    let (instructions, signature) = aws_sigv4::http_request::sign(signable, &params)
        .map_err(|e| format!("cannot sign this request: {e}"))?
        .into_parts();
    let (headers, params) = instructions.into_parts();
    Ok(Made {
        headers: headers
            .into_iter()
            .map(|h| (h.name(), h.value().to_string(), h.sensitive()))
            .collect(),
        params: params.into_iter().map(|(k, v)| (k, v.into_owned())).collect(),
        signature,
    })
}

/// Whether two signatures are the same, in time independent of where they differ.
pub(crate) fn same(a: &str, b: &str) -> bool {
    use subtle::ConstantTimeEq;
    a.len() == b.len() && bool::from(a.as_bytes().ct_eq(b.as_bytes()))
}

#[cfg(test)]
#[path = "sign_tests.rs"]
mod tests;
