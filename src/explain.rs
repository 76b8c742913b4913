//! `cordon explain`: what cordon would do with a URL for a sandbox, and why — using the same policy,
//! resolver and address guard as live traffic.

use std::fmt::Write as _;
use std::str::FromStr;

use http::{Method, Uri};

use crate::config::Config;
use crate::credentials::spec::Inject;
use crate::net::{Dialer, Guard};
use crate::policy::{Mode, Question};
use crate::target::{Target, check_path};

/// The explanation, and whether the request would be allowed end to end.
#[derive(Debug)]
pub struct Explanation {
    /// Lines for a person.
    pub text: String,
    /// Allowed by the policy and by the guard.
    pub allowed: bool,
}

/// Explain a request of `method` to `url` from sandbox `sandbox_id`.
pub async fn explain(config: &Config, sandbox_id: &str, method: &str, url: &str) -> Result<Explanation, String> {
    let sandbox = config.sandbox(sandbox_id).ok_or_else(|| {
        let ids: Vec<&str> = config.sandboxes.iter().map(|s| s.id.as_str()).collect();
        format!(
            "no sandbox {sandbox_id:?} in {}; the sandboxes are: {}",
            config.source,
            ids.join(", ")
        )
    })?;
    let policy = config
        .policies
        .get(&sandbox.policy)
        .ok_or_else(|| format!("sandbox {sandbox_id:?} names a missing policy"))?;
    let method = Method::from_str(&method.to_ascii_uppercase()).map_err(|_| format!("{method:?} is not a method"))?;
    let uri = Uri::from_str(url).map_err(|e| format!("{url:?} is not a URL: {e}"))?;
    let https = uri.scheme_str().is_some_and(|s| s.eq_ignore_ascii_case("https"));
    let target = if https {
        let authority = uri.authority().ok_or("the URL has no host")?;
        Target::from_host_value(authority.as_str().as_bytes(), 443)
    } else {
        Target::from_absolute_uri(&uri)
    }
    .map_err(|e| format!("cordon would answer 400: {e}"))?;
    let path = uri.path();

    let mut out = String::new();
    let _ = writeln!(
        out,
        "sandbox  {} (user {}), policy {:?} ({})",
        sandbox.id,
        sandbox.user,
        policy.name,
        policy.mode.as_str()
    );
    let _ = writeln!(out, "request  {method} {url} (destination {target}, path {path})");
    if let Err(e) = check_path(path) {
        let _ = writeln!(out, "verdict  DENY (400 {}): {e}", e.code());
        return Ok(Explanation {
            text: out,
            allowed: false,
        });
    }

    let mut allowed = true;
    if https {
        let tunnel = policy.decide(Question {
            target: &target,
            request: None,
        });
        let _ = writeln!(out, "connect  {}", describe(&tunnel, &target, policy.mode));
        allowed &= tunnel.allowed;
    }
    let inner = policy.decide(Question {
        target: &target,
        request: Some((&method, path)),
    });
    let label = if https { "inside  " } else { "policy  " };
    let _ = writeln!(out, "{label} {}", describe(&inner, &target, policy.mode));
    allowed &= inner.allowed;

    let guard = Guard::new(
        config.network.allow_cidrs.clone(),
        config.network.dangerous_allow_metadata.clone(),
        vec![config.listen.proxy],
    );
    let dialer = Dialer::new(guard, config.network.hosts.clone(), config.timeouts.connect);
    match dialer.explain(&target).await {
        Ok(res) if res.addrs.is_empty() => {
            let _ = writeln!(out, "guard    {} has no address (502)", target.host);
            allowed = false;
        }
        Ok(res) => {
            for (addr, verdict) in res.addrs {
                match verdict {
                    Ok(()) => {
                        let _ = writeln!(out, "guard    {addr} may be dialled");
                    }
                    Err(r) => {
                        allowed = false;
                        let _ = writeln!(out, "guard    {addr} refused ({}): {r}", r.code());
                    }
                }
            }
        }
        Err(e) => {
            allowed = false;
            let _ = writeln!(out, "guard    refused ({}): {e}", e.code());
        }
    }
    for name in &policy.credentials {
        let Some(spec) = config.credentials.get(name) else {
            continue;
        };
        let how = match &spec.inject {
            Inject::Header { name: h, .. } => format!("header {h}"),
            Inject::Basic { .. } => "Basic authorization".to_string(),
            Inject::Placeholder { .. } => "placeholder swap".to_string(),
        };
        let line = if !spec.binding.matches(&target, &method, path) {
            format!("credential {name}: not bound to this request")
        } else if !https {
            format!("credential {name}: bound, but never sent over cleartext")
        } else {
            format!("credential {name}: applied ({how})")
        };
        let _ = writeln!(out, "         {line}");
    }
    let _ = writeln!(out, "verdict  {}", if allowed { "ALLOW" } else { "DENY" });
    Ok(Explanation { text: out, allowed })
}

fn describe(d: &crate::policy::Decision, target: &Target, mode: Mode) -> String {
    match (&d.rule, &d.deny) {
        (Some(rule), _) => format!("allow by rule {rule}"),
        (None, Some(reason)) if mode == Mode::Report => {
            format!(
                "would deny ({}): {}; allowed because the policy is in report mode",
                reason.code(),
                reason.describe(target)
            )
        }
        (None, Some(reason)) => format!("deny ({}): {}", reason.code(), reason.describe(target)),
        (None, None) => "deny".into(),
    }
}
