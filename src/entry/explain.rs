//! `cordon explain`: what cordon would do with a URL for a sandbox, and why. The request is a dry run of the
//! pipeline (the same steps, policy, resolver and address guard as live traffic, with nothing counted, held,
//! attached or sent): an `https://` URL as the CONNECT and then the request inside it, an `http://` URL as
//! one plain request.

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::str::FromStr;
use std::sync::Arc;

use http::{Method, Request, Uri};

use crate::addr::ClientAddr;
use crate::audit::Kind;
use crate::config::Config;
use crate::error::ProxyError;
use crate::pipeline::{self, Ask, Claim, CredentialUse, Input, Inside, Note};
use crate::policy::Mode;
use crate::state::Generation;
use crate::target::Target;

/// The explanation, and whether the request would be allowed end to end.
#[derive(Debug)]
pub(crate) struct Explanation {
    /// Lines for a person.
    pub(crate) text: String,
    /// Allowed by the policy and by the guard.
    pub(crate) allowed: bool,
}

/// Explain a request of `method` to `url` from sandbox `sandbox_id`.
pub(crate) async fn explain(config: &Config, sandbox_id: &str, method: &str, url: &str) -> Result<Explanation, String> {
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
    // The destination as the entry of that request would read it: a CONNECT's authority, or the absolute URI.
    let target = if https {
        let authority = uri.authority().ok_or("the URL has no host")?;
        Target::from_host_value(authority.as_str().as_bytes(), 443)
    } else {
        Target::from_absolute_uri(&uri)
    }
    .map_err(|e| format!("cordon would answer 400: {e}"))?;

    let mut out = String::new();
    let _ = writeln!(
        out,
        "sandbox  {} (user {}), policy {:?} ({})",
        sandbox.id,
        sandbox.user,
        policy.name,
        policy.mode.as_str()
    );
    let _ = writeln!(
        out,
        "request  {method} {url} (destination {target}, path {})",
        uri.path()
    );

    let generation = Arc::new(Generation::dry(config.clone())?);
    let mut allowed = true;
    let input = |kind, ask| Input {
        kind,
        client: ClientAddr(SocketAddr::from(([127, 0, 0, 1], 0))),
        original_dst: None,
        conn: None,
        claim: Claim::Named(sandbox.id.clone()),
        target: Ok(target.clone()),
        ask,
    };
    let request = Request::builder()
        .method(method)
        .uri(uri)
        .body(crate::body::empty())
        .map_err(|e| format!("{url:?} cannot be a request: {e}"))?;
    if https {
        let notes = pipeline::dry_run(generation.clone(), input(Kind::Connect, Ask::Tunnel)).await;
        allowed &= write_notes(&mut out, "connect", &notes.take(), &target);
        let inside = Some(Arc::new(Inside::new(&target)));
        let notes = pipeline::dry_run(generation, input(Kind::Https, Ask::Request { req: request, inside })).await;
        allowed &= write_notes(&mut out, "inside ", &notes.take(), &target);
    } else {
        let notes = pipeline::dry_run(
            generation,
            input(
                Kind::Http,
                Ask::Request {
                    req: request,
                    inside: None,
                },
            ),
        )
        .await;
        allowed &= write_notes(&mut out, "policy ", &notes.take(), &target);
    }
    let _ = writeln!(out, "verdict  {}", if allowed { "ALLOW" } else { "DENY" });
    Ok(Explanation { text: out, allowed })
}

/// One line per note; whether nothing noted refuses the request.
fn write_notes(out: &mut String, label: &str, notes: &[Note], target: &Target) -> bool {
    let mut allowed = true;
    for note in notes {
        let line = match note {
            Note::Decided { rule: Some(rule), .. } => format!("{label}  allow by rule {rule}"),
            Note::Decided {
                deny: Some((reason, why)),
                mode: Mode::Report,
                ..
            } => format!(
                "{label}  would deny ({}): {why}; allowed because the policy is in report mode",
                reason.code()
            ),
            Note::Decided {
                deny: Some((reason, why)),
                ..
            } => {
                allowed = false;
                format!("{label}  deny ({}): {why}", reason.code())
            }
            Note::Decided { .. } => {
                allowed = false;
                format!("{label}  deny")
            }
            Note::Refused(status, code, message) => {
                allowed = false;
                format!("refused  {status} ({code}): {message}")
            }
            Note::Address(addr, None) => format!("guard    {addr} may be dialled"),
            Note::Address(addr, Some((code, message))) => {
                allowed = false;
                format!("guard    {addr} refused ({code}): {message}")
            }
            Note::Unresolved(code, message) => {
                allowed = false;
                format!("guard    refused ({code}): {message}")
            }
            Note::NoAddress(host) => {
                allowed = false;
                let e = ProxyError::Dial(crate::net::DialError::NoAddress { target: target.clone() });
                format!("guard    {host} has no address ({})", e.status().as_u16())
            }
            Note::WouldAsk(rule) => format!("approval rule {rule} asks a human: the request waits for a decision"),
            Note::Credential(name, CredentialUse::Applied(how)) => {
                format!("         credential {name}: applied ({how})")
            }
            Note::Credential(name, CredentialUse::NotBound) => {
                format!("         credential {name}: not bound to this request")
            }
            Note::Credential(name, CredentialUse::Cleartext) => {
                format!("         credential {name}: bound, but never sent over cleartext")
            }
        };
        let _ = writeln!(out, "{line}");
    }
    allowed
}
