//! A refusal as the sandbox reads it: a body an agent can act on (JSON for a client whose `Accept` takes it, a
//! short text otherwise) and the same facts in `x-cordon-*` headers, which is all a client shows of a refused
//! CONNECT. The schema is `cordon.refusal/1`, documented in the book (`docs/src/refused.md`).
//!
//! What it says is what the sandbox sent or may know: the reason and its registry facts, the public message,
//! and what was refused (method, host, port, and the path without its query). It never carries a credential,
//! a placeholder, the proxy token or a query string; a path with a placeholder in any spelling is withheld,
//! and so is the path of a refusal about what the request carries (a credential or a signature).

use headers_accept::Accept;
use http::{HeaderMap, HeaderValue, header};
use mediatype::{MediaType, names};
use serde_json::{Value, json};

use crate::reason::{NO_WAY_AROUND, Reason};

pub(crate) use crate::reason::SCHEMA;

/// The most bytes of the path a refusal shows (longer ones end in `...`).
const PATH_MAX: usize = 256;

/// The most bytes of an `x-cordon-*` header's value.
const HEADER_MAX: usize = 300;

const JSON: MediaType<'static> = MediaType::new(names::APPLICATION, names::JSON);
/// The media type of a refusal's JSON body.
pub(crate) const REFUSAL_TYPE: &str = "application/vnd.cordon.refusal+json";
const TEXT: MediaType<'static> = MediaType::new(names::TEXT, names::PLAIN);

/// How the refusal's body is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    /// `application/vnd.cordon.refusal+json`, the `cordon.refusal/1` object.
    Json,
    /// `text/plain`, a few `key: value` lines.
    Text,
}

impl Format {
    /// The format the request's `Accept` prefers: JSON when it takes `application/json` more than `text/plain`
    /// (named, at a q-value above 0; `*/*` alone takes text first); text when it is absent, unreadable or takes
    /// no JSON.
    pub(crate) fn of(headers: &HeaderMap) -> Format {
        let mut joined = String::new();
        for value in headers.get_all(header::ACCEPT) {
            let Ok(value) = value.to_str() else {
                return Format::Text;
            };
            if !joined.is_empty() {
                joined.push(',');
            }
            joined.push_str(value);
        }
        if joined.trim().is_empty() {
            return Format::Text;
        }
        match joined.parse::<Accept>() {
            // Text first: a client that takes anything (`*/*`: git, curl, most libraries) gets the text people and
            // tools show as it is (git prints it as `remote:` lines); JSON only where it is named and preferred.
            Ok(accept) if accept.negotiate(&[TEXT, JSON]) == Some(&JSON) => Format::Json,
            _ => Format::Text,
        }
    }
}

/// What a phase that takes the request in flight away leaves in its place: an empty request with the taken one's
/// `Accept`, so that, should the phase fail, its refusal is still written as the request preferred.
pub(crate) fn left_for_refusal(headers: &HeaderMap) -> http::Request<crate::body::ProxyBody> {
    let mut left = http::Request::new(crate::body::empty());
    for accept in headers.get_all(header::ACCEPT) {
        left.headers_mut().append(header::ACCEPT, accept.clone());
    }
    left
}

/// What was asked for and refused, as the sandbox sent it (from the audit record, filled before any phase changed the
/// request): each part only when known.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Subject {
    /// The method (`CONNECT` for a tunnel).
    pub(crate) method: Option<String>,
    /// The destination's normalised host.
    pub(crate) host: Option<String>,
    /// The destination's port.
    pub(crate) port: Option<u16>,
    /// The path, without its query.
    pub(crate) path: Option<String>,
}

impl Subject {
    /// The path as a refusal for `reason` may show it: none for a refusal about what the request carries, a
    /// placeholder's path withheld, a long one cut.
    fn shown_path(&self, reason: Reason) -> Option<String> {
        let path = self.path.as_deref()?;
        if carries(reason) {
            return None;
        }
        // SECURITY: a placeholder in the path, in any case or percent-encoding, is not echoed.
        let decoded = percent_encoding::percent_decode_str(path)
            .decode_utf8_lossy()
            .to_ascii_lowercase();
        if decoded.contains(crate::placeholder::PREFIX) || !path.bytes().all(|b| (0x21..0x7f).contains(&b)) {
            return Some("[withheld]".to_string());
        }
        Some(cut(path, PATH_MAX))
    }

    /// The JSON object `refused`: every key present, `null` when unknown.
    fn json(&self, reason: Reason) -> Value {
        json!({
            "method": self.method,
            "host": self.host,
            "port": self.port,
            "path": self.shown_path(reason),
        })
    }

    /// One line: `METHOD HOST:PORT PATH`, the parts known.
    fn line(&self, reason: Reason) -> String {
        let mut parts = Vec::new();
        if let Some(m) = &self.method {
            parts.push(m.clone());
        }
        match (&self.host, self.port) {
            (Some(h), Some(p)) if h.contains(':') => parts.push(format!("[{h}]:{p}")),
            (Some(h), Some(p)) => parts.push(format!("{h}:{p}")),
            (Some(h), None) => parts.push(h.clone()),
            (None, _) => {}
        }
        if let Some(p) = self.shown_path(reason) {
            parts.push(p);
        }
        parts.join(" ")
    }
}

/// Whether `reason` is about what the request carries (a credential, a placeholder, a signature), whose path
/// may be where it carried it.
fn carries(reason: Reason) -> bool {
    matches!(
        reason,
        Reason::CredentialExfiltration
            | Reason::SecretExfiltration
            | Reason::CredentialMinting
            | Reason::AwsUnsigned
            | Reason::AwsSignatureMalformed
            | Reason::AwsSignatureUnsupported
            | Reason::AwsSignatureKey
            | Reason::AwsSignatureScope
            | Reason::AwsSignatureExpired
            | Reason::AwsSignatureMismatch
            | Reason::AwsSessionToken
    )
}

/// `text` cut to at most `max` bytes on a character boundary, ending in `...` when cut.
fn cut(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max.saturating_sub(3);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &text[..end])
}

/// Everything a refusal says, gathered once for its body and headers.
pub(crate) struct Facts<'a> {
    pub(crate) reason: Reason,
    pub(crate) status: u16,
    /// The public message (`ProxyError::public_message`).
    pub(crate) message: String,
    pub(crate) refused: &'a Subject,
    /// Seconds to wait, for a refusal over a limit.
    pub(crate) retry_after: Option<u64>,
}

impl Facts<'_> {
    /// The `cordon.refusal/1` object.
    pub(crate) fn json(&self) -> Value {
        let mut v = json!({
            "schema": SCHEMA,
            "reason": self.reason.code(),
            "status": self.status,
            "whose": self.reason.whose().as_str(),
            "ask": self.reason.ask(),
            "refused": self.refused.json(self.reason),
            "message": self.message,
            "meaning": self.reason.meaning(),
            "hint": self.reason.hint(),
            "no_way_around": NO_WAY_AROUND,
        });
        if let (Some(secs), Some(obj)) = (self.retry_after, v.as_object_mut()) {
            obj.insert("retry_after".into(), json!(secs));
        }
        v
    }

    /// The body and its media type.
    pub(crate) fn body(&self, format: Format) -> (&'static str, String) {
        match format {
            // Not `application/json`: a JSON-RPC or GraphQL client that asked for JSON (the MCP SDKs) would read the
            // refusal as its protocol's answer; its own type makes it an HTTP error to them, and JSON to an agent.
            Format::Json => (REFUSAL_TYPE, format!("{}\n", self.json())),
            Format::Text => ("text/plain; charset=utf-8", self.text()),
        }
    }

    /// The short text: the message first (as cordon's refusals always began), then the facts.
    fn text(&self) -> String {
        let mut out = format!(
            "cordon: {}\nreason: {} ({}, {})\n",
            self.message,
            self.reason.code(),
            self.status,
            self.reason.whose().as_str()
        );
        let refused = self.refused.line(self.reason);
        if !refused.is_empty() {
            out.push_str(&format!("refused: {refused}\n"));
        }
        out.push_str(&format!(
            "ask a person: {}\nwhat to do: {}\n{NO_WAY_AROUND}\n",
            if self.reason.ask() { "yes" } else { "no" },
            self.reason.hint()
        ));
        if let Some(secs) = self.retry_after {
            out.push_str(&format!("retry after: {secs}s\n"));
        }
        out
    }

    /// The `x-cordon-*` headers (the reason is set by the caller): header-safe, ASCII without CR or LF, bounded.
    pub(crate) fn headers(&self, h: &mut HeaderMap) {
        h.insert(WHOSE_HEADER, HeaderValue::from_static(self.reason.whose().as_str()));
        h.insert(
            ASK_HEADER,
            HeaderValue::from_static(if self.reason.ask() { "yes" } else { "no" }),
        );
        if let Ok(v) = HeaderValue::from_str(&header_safe(self.reason.hint())) {
            h.insert(HINT_HEADER, v);
        }
        let refused = self.refused.line(self.reason);
        if !refused.is_empty()
            && let Ok(v) = HeaderValue::from_str(&header_safe(&refused))
        {
            h.insert(REFUSED_HEADER, v);
        }
    }
}

/// Whose side the refusal is on (`policy`, `request`, `limit`, `upstream`, `cordon`).
pub(crate) const WHOSE_HEADER: &str = "x-cordon-whose";
/// Whether asking a person for access can help: `yes` or `no`.
pub(crate) const ASK_HEADER: &str = "x-cordon-ask";
/// What to do, in a sentence.
pub(crate) const HINT_HEADER: &str = "x-cordon-hint";
/// What was refused: `METHOD HOST:PORT PATH`.
pub(crate) const REFUSED_HEADER: &str = "x-cordon-refused";

/// `text` as a header value: visible ASCII and spaces only (anything else is `?`), at most [`HEADER_MAX`] bytes.
fn header_safe(text: &str) -> String {
    let safe: String = text
        .chars()
        .map(|c| if c == ' ' || c.is_ascii_graphic() { c } else { '?' })
        .collect();
    cut(&safe, HEADER_MAX)
}

#[cfg(test)]
#[path = "refusal_tests.rs"]
mod tests;
