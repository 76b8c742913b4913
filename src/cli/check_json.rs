//! `cordon check --json`: what the configuration sets up, as one JSON object. Its shape is an interface
//! (scripts read it): fields are added, never renamed or removed. Addresses are `host:port` strings, durations
//! whole seconds (`*_secs`), an absent listener or limit `null`.
//! Also how a credential is described, in the summary's text and in its JSON alike.

use serde_json::{Value, json};

use crate::config::Config;
use crate::limits::Rate;
use crate::secrets::probe::Probed;

/// The summary of `c`: `source`, `paths_relative_to` (the folder relative paths were read against; null when
/// read as written), `listen`, `console`, `previews`, `control`, `jail`, `limits`, `audit`,
/// `network`, `sandboxes`, `policies`, `credentials`, `budgets`, and `probe` (null without `--probe`).
pub(super) fn summary(c: &Config, probed: Option<&[Probed]>) -> Value {
    let addr = |a: Option<std::net::SocketAddr>| a.map(|a| a.to_string());
    json!({
        "source": c.source.to_string(),
        "paths_relative_to": c.base.folder().map(|f| f.display().to_string()),
        "listen": {
            "proxy": c.listen.proxy.to_string(),
            "admin": addr(c.listen.admin),
            "admin_tls": c.admin_tls.is_some(),
            "admin_client_certificates": c.admin_tls.as_ref().is_some_and(|t| t.client_ca.is_some()),
            "admin_api_served": c.listen.admin.is_some() && c.listen.admin_api_served(c.admin_tls.is_some()),
            "transparent": addr(c.listen.transparent),
            "transparent_tproxy": c.listen.transparent_tproxy,
            "dns": addr(c.listen.dns),
            "preview": addr(c.listen.preview),
            "console": addr(c.listen.console),
        },
        "console": c.console.as_ref().map(|console| json!({
            "tls": console.tls.is_some(),
            "oidc_issuer": console.oidc.as_ref().map(|o| o.issuer.to_string()),
            "session_ttl_secs": console.session_ttl.as_secs(),
        })),
        "previews": c.previews.as_ref().map(|p| json!({
            "domain": p.domain,
            "tls": p.tls.is_some(),
            "link_ttl_secs": p.link_ttl.as_secs(),
            "session_ttl_secs": p.session_ttl.as_secs(),
        })),
        "control": {
            "store": c.control.store.as_ref().map(|p| p.display().to_string()),
            "postgres": c.control.postgres.is_some(),
            "default_ttl_secs": c.control.default_ttl.as_secs(),
            "max_ttl_secs": c.control.max_ttl.as_secs(),
            "admin_tokens": c.control.admin_tokens.iter().map(|t| json!({
                "name": t.name, "roles": t.roles.iter().map(|r| r.as_str()).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
        },
        "jail": {
            "limits": c.jail.defaults.summary(),
            "per_policy": c.jail.per_policy.iter().map(|(policy, own)| {
                (policy.clone(), Value::from(c.jail.defaults.with(*own).summary()))
            }).collect::<serde_json::Map<_, _>>(),
            "activity": c.jail.activity,
            "per_user": c.jail.per_user,
        },
        "limits": {
            "sandbox_requests": rate(c.limits.rates.sandbox_requests),
            "sandbox_open": c.limits.rates.sandbox_open,
            "user_requests": rate(c.limits.rates.user_requests),
            "budgets": c.limits.rates.sandbox_upload.is_some() || c.limits.rates.sandbox_download.is_some(),
        },
        "audit": {
            "to": match &c.audit {
                crate::config::AuditConfig::Stdout => "stdout".to_owned(),
                crate::config::AuditConfig::File(p) => p.display().to_string(),
            },
            "otlp_endpoint": c.audit_chain.otlp.as_ref().map(|o| o.endpoint.to_string()),
        },
        "network": {
            "allow_cidrs": c.network.allow_cidrs.len(),
            "dangerous_allow_metadata": c.network.dangerous_allow_metadata.len(),
            "hosts": c.network.hosts.len(),
            "resolver": c.network.resolver.name(),
        },
        "sandboxes": c.sandboxes.iter().map(|s| json!({
            "id": s.id, "user": s.user, "policy": s.policy,
            "token": s.token_sha256.is_some(),
            "source_cidrs": s.source_cidrs.iter().map(ToString::to_string).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
        "policies": c.policies.iter().map(|(name, p)| json!({
            "name": name,
            "mode": p.mode.as_str(),
            "rules": p.rule_count(),
            "exposes": p.expose,
            "narrows": p.credential_scope.keys().collect::<Vec<_>>(),
            "on_violation": c.on_violation.get(name).map(|o| json!({
                "window_secs": o.window.as_secs(),
                "thresholds": o.thresholds.iter().map(|(k, n)| (k.as_str().to_owned(), Value::from(*n)))
                    .collect::<serde_json::Map<_, _>>(),
                "action": o.action.as_str(),
            })),
        })).collect::<Vec<_>>(),
        "credentials": c.credentials.iter().map(|(name, spec)| json!({
            "name": name, "kind": credential_kind(spec),
        })).collect::<Vec<_>>(),
        "budgets": budgets(c),
        "probe": probed.map(|all| all.iter().map(|p| json!({
            "credential": p.name,
            "reaches": p.reaches,
            "ok": p.result.is_ok(),
            "error": p.result.as_ref().err(),
        })).collect::<Vec<_>>()),
    })
}

/// A rate as `{"per_second", "burst"}`, or null when unlimited.
fn rate(r: Option<Rate>) -> Value {
    r.map_or(
        Value::Null,
        |r| json!({ "per_second": r.per_second.get(), "burst": r.burst.get() }),
    )
}

/// Each credential budget: the credential, the policy it is set for (null: every policy), its limits.
fn budgets(c: &Config) -> Vec<Value> {
    let b = &c.credential_budgets;
    let all = b.credentials.iter().map(|(cred, b)| (cred, None, b));
    let per_policy = b.policies.iter().map(|((p, cred), b)| (cred, Some(p), b));
    all.chain(per_policy)
        .map(|(credential, policy, b)| {
            json!({
                "credential": credential,
                "policy": policy,
                "requests": b.budget.requests,
                "bytes": b.budget.bytes,
                "window_secs": b.budget.window.as_secs(),
                "per": if b.per_user { "user" } else { "sandbox" },
            })
        })
        .collect()
}

/// Where a credential's value comes from and how it is applied, in a few words.
pub(super) fn credential_kind(spec: &crate::config::credentials::CredentialSpec) -> String {
    use crate::config::credentials::{Inject, SecretSource};
    let source = match &spec.source {
        SecretSource::Static(_) => "stored secret".to_string(),
        SecretSource::OAuth2(o) => format!("OAuth2 tokens from {}", o.token_url),
        SecretSource::OAuth2Refresh(o) => format!("OAuth2 sign-in held in the store, refreshed at {}", o.token_url),
        SecretSource::GitHubApp(g) => format!("GitHub App {} tokens", g.app_id),
        SecretSource::Aws(a) => match &a.assume_role {
            None => "AWS keys".to_string(),
            Some(r) => format!(
                "AWS keys of role {} ({}, from {}{})",
                r.role_arn,
                humantime::format_duration(r.duration),
                r.endpoint,
                if r.session_policy.is_some() {
                    ", session policy"
                } else {
                    ""
                }
            ),
        },
    };
    let how = match &spec.inject {
        Inject::Header { name, .. } => format!("header {name}"),
        Inject::Basic { .. } => "Basic authorization".to_string(),
        Inject::Placeholder { .. } => "placeholder swap".to_string(),
        Inject::AwsSigV4 { region, service } => format!(
            "SigV4 re-signed for region {}, service {}",
            region.as_deref().unwrap_or("as signed"),
            service.as_deref().unwrap_or("as signed")
        ),
    };
    let how = if spec.github { format!("{how}, GitHub API") } else { how };
    if spec.allow_minting.is_empty() {
        return format!("{source}, {how}");
    }
    format!("{source}, {how}, may mint {}", spec.allow_minting.join(", "))
}
