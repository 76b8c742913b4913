//! A credential's `inject:`: a header, Basic auth, the sandbox's placeholder swapped for the secret, or an AWS
//! signature (`aws_sigv4`: the region and service cordon signs for). As written and validated.

use http::HeaderName;
use schemars::JsonSchema;
use serde::Deserialize;

use super::aws::is_region;
use crate::config::errors::Errors;
use crate::config::fields::flag;
use crate::config::scalars::Flag;

/// `inject:` of a credential: a header, Basic auth, or a placeholder.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "a mapping of keys and values")]
pub(crate) struct RawInject {
    /// Header to set.
    pub(crate) header: Option<String>,
    /// Its value, with `{secret}` where the secret goes.
    pub(crate) value: Option<String>,
    /// `Authorization: Basic base64(user:secret)` with this user.
    pub(crate) basic_user: Option<String>,
    /// Swap the sandbox's placeholder for the secret.
    pub(crate) placeholder: Option<RawPlaceholder>,
    /// Check the sandbox's AWS signature and sign again with the real keys.
    pub(crate) aws_sigv4: Option<RawAwsSigV4>,
}

/// `inject.placeholder:`
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "a mapping of keys and values")]
pub(crate) struct RawPlaceholder {
    /// Also replace it in the query string.
    #[serde(default)]
    pub(crate) query: Flag,
    /// Also replace it in request bodies up to 1 MiB (413 beyond).
    #[serde(default)]
    pub(crate) body: Flag,
}

/// `inject.aws_sigv4:`
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "a mapping of keys and values")]
pub(crate) struct RawAwsSigV4 {
    /// The region (default: from the host).
    pub(crate) region: Option<String>,
    /// The service (default: from the host).
    pub(crate) service: Option<String>,
}

/// How a credential is applied to a request that matches its binding.
#[derive(Debug, Clone)]
pub(crate) enum Inject {
    /// Set this header to the template with `{secret}` replaced, replacing whatever the sandbox sent.
    Header {
        /// The header.
        name: HeaderName,
        /// e.g. `Bearer {secret}`.
        template: String,
    },
    /// `Authorization: Basic base64(user:secret)`, replacing whatever the sandbox sent.
    Basic {
        /// The user part.
        user: String,
    },
    /// Replace the sandbox's placeholder with the secret wherever the sandbox put it in headers (and, if
    /// `query`, in the query string).
    Placeholder {
        /// Also in the query string.
        query: bool,
        /// Also in request bodies up to 1 MiB (413 beyond).
        body: bool,
    },
    /// AWS Signature Version 4: the sandbox signs with its placeholder keys; cordon checks that signature,
    /// removes it and signs the request again with the real keys.
    AwsSigV4 {
        /// The region to sign for; `None`: read from the host (`service.region.amazonaws.com`).
        region: Option<String>,
        /// The service to sign for (`s3`, `sts`, `bedrock`...); `None`: read from the host.
        service: Option<String>,
    },
}

/// Headers a credential may never be written into: they are cordon's own or framing.
const FORBIDDEN_HEADERS: [&str; 6] = [
    "proxy-authorization",
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
    "upgrade",
];

/// `inject:` at `base`: exactly one way of applying the secret.
pub(super) fn inject(errs: &mut Errors, base: &str, raw: RawInject) -> Option<Inject> {
    if let Some(aws) = raw.aws_sigv4 {
        if raw.header.is_some() || raw.value.is_some() || raw.basic_user.is_some() || raw.placeholder.is_some() {
            errs.at(
                base,
                "`aws_sigv4` signs the request; it takes no `header`, `basic_user` or `placeholder`",
            );
            return None;
        }
        return aws_sigv4(errs, &format!("{base}.aws_sigv4"), aws);
    }
    match (raw.header, raw.value, raw.basic_user, raw.placeholder) {
        (Some(header), value, None, None) => {
            let lower = header.to_ascii_lowercase();
            let Ok(name) = HeaderName::from_bytes(lower.as_bytes()) else {
                errs.at(format!("{base}.header"), format!("{header:?} is not a header name"));
                return None;
            };
            if FORBIDDEN_HEADERS.contains(&lower.as_str()) || lower.starts_with("x-cordon-") {
                errs.at(
                    format!("{base}.header"),
                    format!("{header:?} cannot carry a credential"),
                );
                return None;
            }
            let template = value.unwrap_or_else(|| "{secret}".to_string());
            if !template.contains("{secret}") {
                errs.at(
                    format!("{base}.value"),
                    "must contain {secret}, e.g. \"Bearer {secret}\"",
                );
                return None;
            }
            Some(Inject::Header { name, template })
        }
        (None, None, Some(user), None) => {
            if user.contains(':') {
                errs.at(
                    format!("{base}.basic_user"),
                    "cannot contain ':' (it separates user and secret)",
                );
                return None;
            }
            Some(Inject::Basic { user })
        }
        (None, None, None, Some(p)) => Some(Inject::Placeholder {
            query: flag(errs, &format!("{base}.placeholder.query"), Some(p.query)).unwrap_or(false),
            body: flag(errs, &format!("{base}.placeholder.body"), Some(p.body)).unwrap_or(false),
        }),
        _ => {
            errs.at(
                base,
                "needs exactly one of: `header` (with `value: \"Bearer {secret}\"`), `basic_user`, `placeholder: {}` or \
                 `aws_sigv4: {}`",
            );
            None
        }
    }
}

/// `inject.aws_sigv4` at `base`.
pub(super) fn aws_sigv4(errs: &mut Errors, base: &str, raw: RawAwsSigV4) -> Option<Inject> {
    let before = errs.list.len();
    if let Some(region) = &raw.region
        && !is_region(region)
    {
        errs.at(
            format!("{base}.region"),
            format!("{region:?} is not an AWS region name"),
        );
    }
    if let Some(service) = &raw.service
        && (service.is_empty()
            || !service
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'))
    {
        errs.at(
            format!("{base}.service"),
            format!("{service:?} is not an AWS service signing name (e.g. s3, sts, bedrock)"),
        );
    }
    (errs.list.len() == before).then_some(Inject::AwsSigV4 {
        region: raw.region,
        service: raw.service,
    })
}
