//! Short-lived AWS keys from STS `AssumeRole`, asked with the configured keys (the request signed with
//! `aws-sigv4`), optionally narrowed by a session policy. The answer is read as XML with `quick-xml`.

use std::time::SystemTime;

use bytes::Bytes;
use http::header;
use http_body_util::Full;
use secrecy::SecretString;
use serde::Deserialize;

use crate::secrets::issuer::{ISSUER_TIMEOUT, IssuerError};
use crate::sigv4::AwsKeys;
use crate::sigv4::sign::{Canonical, Payload, sign};
use crate::sigv4::signature::Location;
use crate::upstream::outbound::HttpClient;

/// One AssumeRole call.
pub(crate) struct AssumeRole<'a> {
    /// The STS endpoint.
    pub(crate) endpoint: &'a http::Uri,
    /// The region STS is signed for.
    pub(crate) region: &'a str,
    /// The role.
    pub(crate) role_arn: &'a str,
    /// `RoleSessionName`.
    pub(crate) session_name: &'a str,
    /// `DurationSeconds`.
    pub(crate) duration_secs: u64,
    /// `ExternalId`.
    pub(crate) external_id: Option<&'a str>,
    /// `Policy` (JSON).
    pub(crate) session_policy: Option<&'a str>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct AssumeRoleResponse {
    assume_role_result: AssumeRoleResult,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct AssumeRoleResult {
    credentials: StsCredentials,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct StsCredentials {
    access_key_id: String,
    secret_access_key: String,
    session_token: String,
    expiration: String,
}

/// `<ErrorResponse><Error>` (AWS) or `<ErrorResponse><Errors><Error>` (some look-alikes).
#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct StsErrorResponse {
    error: Option<StsError>,
    errors: Option<StsErrors>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct StsErrors {
    error: StsError,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct StsError {
    code: Option<String>,
    message: Option<String>,
}

/// Everything but RFC 3986's unreserved characters is percent-encoded: the form AWS SDKs send (a server that
/// hashes the form it re-encodes, as moto does, gets the same bytes).
const FORM: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

/// `key=value&...`, encoded as [`FORM`] says.
pub(crate) fn form_encode(pairs: &[(&str, &str)]) -> String {
    pairs
        .iter()
        .map(|(k, v)| {
            format!(
                "{}={}",
                percent_encoding::utf8_percent_encode(k, FORM),
                percent_encoding::utf8_percent_encode(v, FORM)
            )
        })
        .collect::<Vec<_>>()
        .join("&")
}

impl AssumeRole<'_> {
    /// Assume the role with `keys`: the role's keys and when they expire.
    pub(crate) async fn fetch(&self, http: &HttpClient, keys: &AwsKeys) -> Result<(AwsKeys, SystemTime), IssuerError> {
        let issuer = format!(
            "{}://{}{}",
            self.endpoint.scheme_str().unwrap_or("https"),
            self.endpoint.authority().map(|a| a.as_str()).unwrap_or_default(),
            self.endpoint.path()
        );
        let duration = self.duration_secs.to_string();
        let mut form = vec![
            ("Action", "AssumeRole"),
            ("Version", "2011-06-15"),
            ("RoleArn", self.role_arn),
            ("RoleSessionName", self.session_name),
            ("DurationSeconds", duration.as_str()),
        ];
        if let Some(id) = self.external_id {
            form.push(("ExternalId", id));
        }
        if let Some(policy) = self.session_policy {
            form.push(("Policy", policy));
        }
        let body = form_encode(&form);
        let content_type = "application/x-www-form-urlencoded; charset=utf-8";
        // Every header sent is signed (a server that recomputes over what it received, as moto does, agrees).
        let length = body.len().to_string();
        let canonical = Canonical {
            method: "POST".into(),
            uri: issuer.clone(),
            headers: vec![
                ("content-type".into(), content_type.into()),
                ("content-length".into(), length.clone()),
            ],
        };
        let made = sign(
            &canonical,
            keys,
            (self.region, "sts"),
            SystemTime::now(),
            Location::Header,
            &Payload::Bytes(body.as_bytes()),
        )
        .map_err(IssuerError::Config)?;
        let mut builder = http::Request::post(self.endpoint.clone())
            .header(header::CONTENT_TYPE, content_type)
            .header(header::CONTENT_LENGTH, length);
        for (name, value, sensitive) in made.headers {
            let mut value = http::HeaderValue::from_str(&value)
                .map_err(|_| IssuerError::Config("the AWS keys cannot form a header".into()))?;
            value.set_sensitive(sensitive);
            builder = builder.header(name, value);
        }
        let req = builder
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| IssuerError::Config(format!("cannot build the AssumeRole request: {e}")))?;
        let (status, _headers, body) = http
            .send(req, ISSUER_TIMEOUT)
            .await
            .map_err(|e| IssuerError::from_http(&issuer, e))?;
        let text = String::from_utf8_lossy(&body);
        if !status.is_success() {
            let error: Option<StsErrorResponse> = quick_xml::de::from_str(&text).ok();
            let (code, message) = error
                .and_then(|e| e.error.or(e.errors.map(|e| e.error)))
                .map(|e| (e.code, e.message))
                .unwrap_or_default();
            let cut = |s: Option<String>| s.map(|s| s.chars().filter(|c| !c.is_control()).take(200).collect());
            if status.is_server_error() || status == http::StatusCode::TOO_MANY_REQUESTS {
                return Err(IssuerError::Unavailable {
                    issuer,
                    detail: format!("HTTP {}", status.as_u16()),
                });
            }
            return Err(IssuerError::Refused {
                issuer,
                status: status.as_u16(),
                code: cut(code),
                description: cut(message),
            });
        }
        let answer: AssumeRoleResponse = quick_xml::de::from_str(&text).map_err(|e| IssuerError::InvalidResponse {
            issuer: issuer.clone(),
            detail: format!("not an AssumeRole answer: {e}"),
        })?;
        let c = answer.assume_role_result.credentials;
        let expires = crate::rfc3339::parse(&c.expiration).ok_or_else(|| IssuerError::InvalidResponse {
            issuer: issuer.clone(),
            detail: format!("Expiration {:?} is not a time", c.expiration),
        })?;
        Ok((
            AwsKeys {
                id: c.access_key_id,
                secret: SecretString::from(c.secret_access_key),
                token: Some(SecretString::from(c.session_token)),
            },
            expires,
        ))
    }
}

#[cfg(test)]
#[path = "sts_tests.rs"]
mod tests;
