//! `approval:`: how long and how many requests of `action: ask` rules wait for a person, and where they are
//! announced, as written and validated.

use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;

use super::credentials::{RawSecretRef, secret_ref};
use super::errors::Errors;
use super::fields::{A_COUNT, duration, whole};
use super::scalars::Whole;
use super::shapes;

/// `approval:`
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "a mapping of keys and values")]
pub(super) struct RawApproval {
    /// How long a request waits for a decision.
    #[schemars(with = "Option<shapes::Duration>")]
    pub(crate) timeout: Option<String>,
    /// Requests waiting at once.
    pub(crate) max_pending: Option<Whole>,
    /// Requests of one sandbox waiting at once.
    pub(crate) max_pending_per_sandbox: Option<Whole>,
    /// Requests of one user's sandboxes waiting at once.
    pub(crate) max_pending_per_user: Option<Whole>,
    /// Where pending approvals are announced.
    pub(crate) webhook: Option<RawWebhook>,
}

/// `approval.webhook:`
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "a mapping of keys and values")]
pub(super) struct RawWebhook {
    /// The URL POSTed to.
    #[schemars(with = "shapes::HttpUrl")]
    pub(crate) url: String,
    /// The HMAC key of the signature header.
    pub(crate) secret: Option<RawSecretRef>,
}

/// `approval:` — requests of `action: ask` rules wait for a human.
#[derive(Debug, Clone)]
pub(crate) struct ApprovalConfig {
    /// How long a request waits for a decision before it is refused.
    pub(crate) timeout: Duration,
    /// Requests waiting at once; more are refused at once.
    pub(crate) max_pending: usize,
    /// Requests of one sandbox waiting at once.
    pub(crate) max_pending_per_sandbox: usize,
    /// Requests of one user's sandboxes waiting at once.
    pub(crate) max_pending_per_user: usize,
    /// Where pending approvals are announced.
    pub(crate) webhook: Option<WebhookSpec>,
}

impl Default for ApprovalConfig {
    fn default() -> Self {
        ApprovalConfig {
            timeout: Duration::from_secs(300),
            max_pending: 100,
            max_pending_per_sandbox: 10,
            max_pending_per_user: 50,
            webhook: None,
        }
    }
}

/// `approval.webhook:`
#[derive(Debug, Clone)]
pub(crate) struct WebhookSpec {
    /// POSTed to.
    pub(crate) url: http::Uri,
    /// Signs each POST (`X-Cordon-Signature`).
    pub(crate) secret: Option<crate::config::credentials::SecretRef>,
}

/// `approval:`: the wait and the caps on held requests (a sandbox's cap within its user's), and the webhook.
pub(super) fn approval(errs: &mut Errors, raw: RawApproval) -> ApprovalConfig {
    let mut a = ApprovalConfig {
        timeout: duration(errs, "approval.timeout", raw.timeout, ApprovalConfig::default().timeout),
        ..ApprovalConfig::default()
    };
    if a.timeout > Duration::from_secs(24 * 3600) {
        errs.at(
            "approval.timeout",
            "is over a day; a held request keeps a connection open all that time",
        );
    }
    let per_sandbox_given = raw.max_pending_per_sandbox.is_some();
    for (path, raw, slot) in [
        ("approval.max_pending", raw.max_pending, &mut a.max_pending),
        (
            "approval.max_pending_per_sandbox",
            raw.max_pending_per_sandbox,
            &mut a.max_pending_per_sandbox,
        ),
        (
            "approval.max_pending_per_user",
            raw.max_pending_per_user,
            &mut a.max_pending_per_user,
        ),
    ] {
        if let Some(n) = whole(errs, path, raw, A_COUNT) {
            match usize::try_from(n) {
                Ok(n) if n >= 1 => *slot = n,
                _ => errs.at(path, format!("{n} must be at least 1")),
            }
        }
    }
    if !per_sandbox_given {
        // The default gives way to a smaller per-user cap.
        a.max_pending_per_sandbox = a.max_pending_per_sandbox.min(a.max_pending_per_user);
    }
    if a.max_pending_per_sandbox > a.max_pending_per_user {
        errs.at(
            "approval.max_pending_per_sandbox",
            format!(
                "{} is over approval.max_pending_per_user ({}); a sandbox's asks count towards its user's",
                a.max_pending_per_sandbox, a.max_pending_per_user
            ),
        );
    }
    if let Some(w) = raw.webhook {
        let url = match w.url.parse::<http::Uri>() {
            Ok(u) if matches!(u.scheme_str(), Some("http" | "https")) && u.authority().is_some() => Some(u),
            _ => {
                errs.at("approval.webhook.url", format!("{:?} is not an http(s) URL", w.url));
                None
            }
        };
        let secret = w.secret.and_then(|s| secret_ref(errs, "approval.webhook.secret", s));
        a.webhook = url.map(|url| WebhookSpec { url, secret });
    }
    a
}
