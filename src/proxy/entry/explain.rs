//! `cordon explain`: what cordon would do with a URL for a sandbox, and why. The request is a dry run of the
//! pipeline (the same steps, policy, resolver and address guard as live traffic, with nothing counted, held,
//! attached or sent): an `https://` URL as the CONNECT and then, if the CONNECT is intercepted, the request
//! inside it; an `http://` URL as one plain request. The method is read as a client's request line is, byte
//! for byte: methods are case-sensitive (RFC 9110 §9.1), so `get` is not `GET`, here as on the wire.

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::str::FromStr;
use std::sync::Arc;

use http::{Method, Request, Uri};
use serde::Serialize;

use crate::addr::ClientAddr;
use crate::audit::Kind;
use crate::config::Config;
use crate::generation::Generation;
use crate::policy::{Mode, TlsMode};
use crate::proxy::{self, Claim, CredentialUse, Ending, Input, Inside, Intent, Note};
use crate::target::Target;

/// The explanation, and whether the request would be allowed end to end.
#[derive(Debug)]
pub(crate) struct Explanation {
    /// Lines for a person.
    pub(crate) text: String,
    /// The same, for a program: every exchange the request makes, as its audit record would end.
    pub(crate) json: Summary,
    /// Allowed by the policy and by the guard.
    pub(crate) allowed: bool,
}

/// What `cordon explain --json` prints.
#[derive(Debug, Serialize)]
pub(crate) struct Summary {
    sandbox: String,
    user: String,
    policy: String,
    mode: &'static str,
    method: String,
    url: String,
    host: String,
    port: u16,
    path: String,
    /// `allow` or `deny`: whether the request reaches its upstream.
    verdict: &'static str,
    /// Each exchange live traffic makes, in order: the CONNECT and the request inside it, or the one request.
    exchanges: Vec<Exchange>,
    /// What explain cannot know and live traffic may decide otherwise: a listener of cordon's own configured
    /// with port 0 (its port is chosen when cordon starts) on an address the request may be dialled at.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    caveats: Vec<String>,
}

/// One exchange: its kind (the audit record's) and how it ends.
#[derive(Debug, Serialize)]
struct Exchange {
    kind: Kind,
    #[serde(flatten)]
    ending: Ending,
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
    // As hyper reads a request line: the bytes as sent, no case folded.
    let method = Method::from_bytes(method.as_bytes())
        .map_err(|_| format!("{method:?} is not an HTTP method (a token of letters, digits and !#$%&'*+-.^_`|~)"))?;
    let uri = Uri::from_str(url).map_err(|e| format!("{url:?} is not a URL: {e}"))?;
    let https = uri.scheme_str().is_some_and(|s| s.eq_ignore_ascii_case("https"));
    // The destination as the entry of that request would read it: a CONNECT's authority (a client names the
    // port it means, 443 when the URL names none), or the absolute URI.
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
    let mut summary = Summary {
        sandbox: sandbox.id.to_string(),
        user: sandbox.user.clone(),
        policy: policy.name.clone(),
        mode: policy.mode.as_str(),
        method: method.to_string(),
        url: url.to_owned(),
        host: target.host.to_string(),
        port: target.port,
        path: uri.path().to_owned(),
        verdict: "deny",
        exchanges: Vec::new(),
        caveats: Vec::new(),
    };

    let generation = Arc::new(Generation::dry(config.clone())?);
    let input = |kind, intent| Input {
        kind,
        client: ClientAddr(SocketAddr::from(([127, 0, 0, 1], 0))),
        original_dst: None,
        conn: None,
        claim: Claim::Named(sandbox.id.to_string()),
        target: Ok(target.clone()),
        intent,
    };
    let request = Request::builder()
        .method(method)
        .uri(uri)
        .body(crate::body::empty())
        .map_err(|e| format!("{url:?} cannot be a request: {e}"))?;
    let mut caveats = Vec::new();
    let mut record = |kind, label, notes: Vec<Note>| {
        write_notes(&mut out, label, &notes);
        caveats.extend(unknown_ports(config, &notes));
        summary.exchanges.push(Exchange {
            kind,
            ending: Ending::of(&notes),
        });
        notes.iter().any(|n| n.refusal().is_some())
    };
    let refused = if https {
        let notes = proxy::dry_run(generation.clone(), input(Kind::Connect, Intent::Tunnel))
            .await
            .take();
        let blind = notes.contains(&Note::Tunnel(TlsMode::Tunnel));
        if record(Kind::Connect, "connect", notes) {
            let _ = writeln!(out, "inside   not reached: the CONNECT is refused");
            true
        } else if blind {
            // Live, cordon passes the bytes through: there is no request inside for it to decide.
            false
        } else {
            let inside = Some(Arc::new(Inside::new(&target)));
            let ask = Intent::Request { req: request, inside };
            let notes = proxy::dry_run(generation, input(Kind::Https, ask)).await.take();
            record(Kind::Https, "inside ", notes)
        }
    } else {
        let ask = Intent::Request {
            req: request,
            inside: None,
        };
        let notes = proxy::dry_run(generation, input(Kind::Http, ask)).await.take();
        record(Kind::Http, "policy ", notes)
    };
    let allowed = !refused;
    caveats.dedup();
    for caveat in &caveats {
        let _ = writeln!(out, "caveat   {caveat}");
    }
    summary.caveats = caveats;
    summary.verdict = if allowed { "allow" } else { "deny" };
    let _ = writeln!(out, "verdict  {}", if allowed { "ALLOW" } else { "DENY" });
    Ok(Explanation {
        text: out,
        json: summary,
        allowed,
    })
}

/// What explain cannot judge in `notes`: an address the guard let through that a listener of cordon's own,
/// configured with port 0, may be on. Live, the port is the one the kernel chose when cordon started, and a
/// request to it is refused (403 `self_address`); explain opens nothing, so it cannot know that port.
fn unknown_ports(config: &Config, notes: &[Note]) -> Vec<String> {
    let mut said = Vec::new();
    for note in notes {
        let Note::Address(addr, None) = note else { continue };
        for (listener, own) in config.listen.listeners() {
            if own.port() == 0 && crate::net::ipguard::lands_on(own.ip(), *addr) {
                said.push(format!(
                    "{} is {own}: its port is chosen when cordon starts, which explain cannot know; if {addr} is \
                     that port, live traffic refuses it (403 self_address)",
                    listener.key()
                ));
            }
        }
    }
    said
}

/// One line per note.
fn write_notes(out: &mut String, label: &str, notes: &[Note]) {
    for note in notes {
        let line = match note {
            Note::Decided { rule: Some(rule), .. } => format!("{label}  allow by rule {rule}"),
            Note::Decided {
                deny: Some((reason, why)),
                mode: Mode::Report,
                refused: None,
                ..
            } => format!(
                "{label}  would deny ({}): {why}; allowed because the policy is in report mode",
                reason.reason().code()
            ),
            Note::Decided {
                deny: Some((reason, why)),
                ..
            } => format!("{label}  deny ({}): {why}", reason.reason().code()),
            Note::Decided { .. } => format!("{label}  deny"),
            Note::Refused(r) => format!("refused  {} ({}): {}", r.status, r.code, r.message),
            Note::AnsweredByCordon => {
                "cordon   answered by cordon itself: the sandbox's access requests (nothing is resolved or sent on)"
                    .to_string()
            }
            Note::Address(addr, None) => format!("guard    {addr} may be dialled"),
            Note::Address(addr, Some(r)) => format!("guard    {addr} refused ({}): {}", r.code, r.message),
            Note::Unresolved(r) => format!("guard    refused ({}): {}", r.code, r.message),
            Note::NoAddress(host, r) => format!("guard    {host} has no address ({})", r.status),
            Note::Tunnel(TlsMode::Intercept) => {
                "tls      intercepted: each request inside is decided again".to_string()
            }
            Note::Tunnel(TlsMode::Tunnel) => {
                "tls      blind tunnel (tls: tunnel): cordon reads no request inside and attaches no credential"
                    .to_string()
            }
            Note::WouldAsk(rule) => format!("approval rule {rule} asks a human: the request waits for a decision"),
            Note::Protocol { name, rule, does } => format!("{name:<8} rule {rule} {does}"),
            Note::Credential(name, CredentialUse::Applied(how)) => {
                format!("         credential {name}: applied ({how})")
            }
            Note::Credential(name, CredentialUse::Refused) => {
                format!("         credential {name}: not applied: the request is refused")
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
}
