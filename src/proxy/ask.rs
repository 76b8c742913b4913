//! What a person deciding an `action: ask` rule's request is shown: the whole request as the sandbox sent it,
//! before any credential of cordon's is attached, with the sandbox's own credentials and every placeholder
//! redacted.

use std::sync::Arc;

use bytes::Bytes;
use http::{HeaderMap, Request};

use super::handover::Asking;
use crate::approval::{self, BodySeen, Header, HeldRequest};
use crate::body::ProxyBody;
use crate::identity::Sandbox;
use crate::placeholder::redact;
use crate::policy::Rule;
use crate::target::Target;

/// The ask for `req` (whose URI is absolute), with its whole `body`, held by `rule` (the `index`th of the
/// sandbox's policy).
pub(super) fn ask(
    sandbox: &Sandbox,
    target: &Target,
    req: &Request<ProxyBody>,
    body: &Bytes,
    index: usize,
    rule: &Rule,
    held: Option<&Asking>,
) -> HeldRequest {
    let query = req.uri().query().map(str::to_string);
    let mut shown = HeldRequest {
        who: Arc::new(sandbox.clone()),
        sandbox: sandbox.id.clone(),
        user: sandbox.user.clone(),
        policy: sandbox.policy.clone(),
        method: req.method().to_string(),
        host: target.host.to_string(),
        port: target.port,
        path: req.uri().path().to_string(),
        shown_query: query.as_deref().map(redact),
        query,
        url: redact(&req.uri().to_string()),
        headers: headers(req.headers()),
        body: BodySeen {
            length: body.len() as u64,
            sha256: hex::encode(ring::digest::digest(&ring::digest::SHA256, body)),
        },
        excerpt: redact(&approval::excerpt(body)),
        rule: index,
        rule_fingerprint: rule.fingerprint(),
        calls: None,
        tools: None,
        operations: None,
        spent: None,
    };
    // What the protocol asks about: MCP tools and their calls, GraphQL operations.
    if let Some(Asking { protocol, asked }) = held {
        protocol.show(asked, body, &mut shown);
    }
    shown
}

/// The request's headers in order, as the approver sees them: the value of a header that carries a credential
/// (by its name) replaced by its length, and placeholders redacted in every other value.
fn headers(headers: &HeaderMap) -> Vec<Header> {
    headers
        .iter()
        .map(|(name, value)| {
            let name = name.as_str();
            // SECURITY: the approver (and the webhook it is posted to) never sees a credential the sandbox sent.
            let value = if carries_credential(name) {
                format!("[redacted: {} bytes]", value.len())
            } else {
                redact(&String::from_utf8_lossy(value.as_bytes()))
            };
            Header {
                name: name.to_string(),
                value,
            }
        })
        .collect()
}

/// Whether a header of this (lower-case) name carries a credential: `Authorization`, `Cookie` and the like,
/// and any name speaking of a key, token, secret, session, password, signature or credential.
fn carries_credential(name: &str) -> bool {
    const WORDS: [&str; 10] = [
        "auth",
        "cookie",
        "key",
        "token",
        "secret",
        "session",
        "password",
        "passwd",
        "signature",
        "credential",
    ];
    WORDS.iter().any(|w| name.contains(w))
}

#[cfg(test)]
#[path = "ask_tests.rs"]
mod tests;
