//! Validation of AWS credentials: `source.aws` (keys, and a role to assume with them) and
//! `inject.aws_sigv4` (the region and service cordon signs for).

use std::time::Duration;

use super::fields::{Errors, duration, secret_ref, url};
use crate::config::credentials::{AssumeRoleSpec, AwsSpec, Inject};
use crate::config::raw::{RawAws, RawAwsSigV4};

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

/// `inject.aws_sigv4` at `base`.
pub(super) fn inject(errs: &mut Errors, base: &str, raw: RawAwsSigV4) -> Option<Inject> {
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
