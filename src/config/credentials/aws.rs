//! AWS credentials: `source.aws` (keys, and a role to assume with them), as written and validated (how cordon
//! signs with them, `inject.aws_sigv4`, is in `inject.rs`).

use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;

use super::secret::{RawSecretRef, SecretRef, secret_ref};
use crate::config::errors::Errors;
use crate::config::fields::{duration, url};
use crate::config::shapes;

/// `source.aws:`
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "a mapping of keys and values")]
pub(crate) struct RawAws {
    /// Where the access key id is.
    pub(crate) access_key_id: RawSecretRef,
    /// Where the secret access key is.
    pub(crate) secret_access_key: RawSecretRef,
    /// Where a session token is (keys that are themselves temporary).
    pub(crate) session_token: Option<RawSecretRef>,
    /// Assume a role with these keys.
    pub(crate) assume_role: Option<RawAssumeRole>,
}

/// `source.aws.assume_role:`
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "a mapping of keys and values")]
pub(crate) struct RawAssumeRole {
    /// The role's ARN.
    pub(crate) role_arn: String,
    /// `RoleSessionName` (default `cordon`).
    pub(crate) session_name: Option<String>,
    /// Lifetime of the keys, e.g. `1h` (default; 15m to 12h).
    #[schemars(with = "Option<shapes::Duration>")]
    pub(crate) duration: Option<String>,
    /// `ExternalId`.
    #[schemars(with = "Option<shapes::Text>")]
    pub(crate) external_id: Option<String>,
    /// STS endpoint (default `https://sts.<region>.amazonaws.com`).
    #[schemars(with = "Option<shapes::HttpUrl>")]
    pub(crate) endpoint: Option<String>,
    /// Region of the STS endpoint (default `us-east-1`).
    pub(crate) region: Option<String>,
    /// A session policy (an IAM policy document) narrowing the role.
    pub(crate) session_policy: Option<serde_json::Value>,
}

/// AWS credentials: an access key, and optionally a role assumed with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AwsSpec {
    /// The access key id.
    pub(crate) access_key_id: SecretRef,
    /// The secret access key.
    pub(crate) secret_access_key: SecretRef,
    /// A session token, for keys that are themselves temporary.
    pub(crate) session_token: Option<SecretRef>,
    /// Assume this role with the key and sign with the role's short-lived keys.
    pub(crate) assume_role: Option<AssumeRoleSpec>,
}

/// STS AssumeRole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AssumeRoleSpec {
    /// The role's ARN.
    pub(crate) role_arn: String,
    /// `RoleSessionName` (what CloudTrail shows).
    pub(crate) session_name: String,
    /// How long the keys live (900 s to 12 h).
    pub(crate) duration: std::time::Duration,
    /// `ExternalId`, if the role's trust policy asks for one.
    pub(crate) external_id: Option<String>,
    /// The STS endpoint.
    pub(crate) endpoint: http::Uri,
    /// The region STS requests are signed for.
    pub(crate) region: String,
    /// A session policy narrowing the role for every policy that does not set its own (JSON).
    pub(crate) session_policy: Option<String>,
}

/// The shortest and longest lives STS gives assumed-role keys.
const ROLE_DURATION: (Duration, Duration) = (Duration::from_secs(15 * 60), Duration::from_secs(12 * 3600));

/// `source.aws` at `base`.
pub(super) fn source(errs: &mut Errors, base: &str, raw: RawAws) -> Option<AwsSpec> {
    let before = errs.list.len();
    let id = secret_ref(errs, &format!("{base}.access_key_id"), raw.access_key_id);
    let secret = secret_ref(errs, &format!("{base}.secret_access_key"), raw.secret_access_key);
    let token = raw
        .session_token
        .and_then(|t| secret_ref(errs, &format!("{base}.session_token"), t));
    let assume_role = raw.assume_role.and_then(|r| {
        let at = format!("{base}.assume_role");
        if !r.role_arn.starts_with("arn:") || r.role_arn.split(':').count() < 6 {
            errs.at(
                format!("{at}.role_arn"),
                format!("{:?} is not a role ARN (arn:aws:iam::ACCOUNT:role/NAME)", r.role_arn),
            );
        }
        let session_name = r.session_name.unwrap_or_else(|| "cordon".to_string());
        // STS: 2 to 64 of [\w+=,.@-].
        let name_ok = (2..=64).contains(&session_name.len())
            && session_name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "_+=,.@-".contains(c));
        if !name_ok {
            errs.at(
                format!("{at}.session_name"),
                format!("{session_name:?} is not a session name STS takes (2 to 64 of letters, digits and _+=,.@-)"),
            );
        }
        let lifetime = duration(errs, &format!("{at}.duration"), r.duration, Duration::from_secs(3600));
        if lifetime < ROLE_DURATION.0 || lifetime > ROLE_DURATION.1 {
            errs.at(
                format!("{at}.duration"),
                "must be between 15m and 12h (what STS gives assumed roles)",
            );
        }
        let region = r.region.unwrap_or_else(|| "us-east-1".to_string());
        if !is_region(&region) {
            errs.at(format!("{at}.region"), format!("{region:?} is not an AWS region name"));
        }
        let endpoint = r
            .endpoint
            .unwrap_or_else(|| format!("https://sts.{region}.amazonaws.com/"));
        let endpoint = url(errs, &format!("{at}.endpoint"), &endpoint);
        let session_policy = r
            .session_policy
            .and_then(|p| session_policy(errs, &format!("{at}.session_policy"), p));
        Some(AssumeRoleSpec {
            role_arn: r.role_arn,
            session_name,
            duration: lifetime,
            external_id: r.external_id,
            endpoint: endpoint?,
            region,
            session_policy,
        })
    });
    let spec = AwsSpec {
        access_key_id: id?,
        secret_access_key: secret?,
        session_token: token,
        assume_role,
    };
    (errs.list.len() == before).then_some(spec)
}

/// A session policy: an IAM policy document (an object), kept as compact JSON; STS takes up to 2,048
/// characters.
pub(super) fn session_policy(errs: &mut Errors, path: &str, raw: serde_json::Value) -> Option<String> {
    if !raw.is_object() {
        errs.at(
            path,
            "must be an IAM policy document, e.g. {Version: \"2012-10-17\", Statement: [...]}",
        );
        return None;
    }
    let text = raw.to_string();
    if text.len() > 2048 {
        errs.at(
            path,
            format!("is {} characters as JSON; STS takes at most 2048", text.len()),
        );
        return None;
    }
    Some(text)
}

/// `us-east-1`, `eu-central-2`, `us-gov-west-1`, `cn-north-1`...: lower-case words and a number.
pub(crate) fn is_region(text: &str) -> bool {
    let parts: Vec<&str> = text.split('-').collect();
    parts.len() >= 3
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit()))
        && parts.last().is_some_and(|p| p.chars().all(|c| c.is_ascii_digit()))
}
