//! Every preview is a web origin of its own (`<scheme>://<port>-<sandbox>.<domain>[:<port>]`), and all of them
//! are one *site*, so `SameSite` cookies do not keep one preview's page from acting on another with the
//! person's session. What a browser says about where a request comes from is checked here instead:
//!
//! - an `Origin` header, on any request, must be the preview's own origin: same scheme (the listener's), same
//!   host (ASCII case aside, as browsers compare), same port (the scheme's default spelled or not); `null`
//!   (sandboxed frames, opaque redirects, `Referrer-Policy: no-referrer`) and anything unparsable are refused;
//! - a WebSocket (any `Upgrade`) or a request that may change state (every method but GET, HEAD and OPTIONS)
//!   that carries no `Origin` is refused when `Sec-Fetch-Site` says it comes from another origin
//!   (`same-site`, `cross-site`); with neither header it passes: browsers send `Origin` on every WebSocket
//!   handshake and every such request of another origin, so what sends neither is not a browser acting for
//!   another page (curl, a script), and it needs the session cookie itself.

use http::header::{HeaderMap, ORIGIN, UPGRADE};
use http::{HeaderName, Method};

/// `Sec-Fetch-Site` (not among `http`'s constants).
const SEC_FETCH_SITE: HeaderName = HeaderName::from_static("sec-fetch-site");

/// Whether the request described by `method` and `headers`, received as `host` (its `Host`, with or without
/// a port) on a listener speaking `scheme`, comes from the preview's own origin (or from no browser page at
/// all); else why not.
pub(crate) fn check(method: &Method, headers: &HeaderMap, scheme: &str, host: &str) -> Result<(), String> {
    let own = canonical(scheme, host).ok_or_else(|| format!("the request's Host {host:?} is not a valid origin"))?;
    let own_text = own.to_string();
    let mut origins = headers.get_all(ORIGIN).iter();
    if let Some(origin) = origins.next() {
        if origins.next().is_some() {
            return Err("the request carries more than one Origin".into());
        }
        let text = String::from_utf8_lossy(origin.as_bytes());
        let theirs = parse(&text).ok_or_else(|| {
            format!("a request from origin {text:?} (not a page of this preview) to {own_text} is refused")
        })?;
        if theirs != own {
            return Err(format!(
                "a request from {theirs} (another origin) to the preview {own_text} is refused"
            ));
        }
        return Ok(());
    }
    let checked = headers.contains_key(UPGRADE) || !matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS);
    if checked && let Some(site) = headers.get(SEC_FETCH_SITE) {
        let site = String::from_utf8_lossy(site.as_bytes()).trim().to_ascii_lowercase();
        if site != "same-origin" && site != "none" {
            return Err(format!(
                "a {} request from another origin (Sec-Fetch-Site: {site}) to the preview {own_text} is refused",
                if headers.contains_key(UPGRADE) {
                    "WebSocket"
                } else {
                    method.as_str()
                }
            ));
        }
    }
    Ok(())
}

/// An origin, compared as browsers do: scheme and host in lower case, the port explicit.
#[derive(Debug, PartialEq, Eq)]
struct BrowserOrigin {
    scheme: String,
    host: String,
    port: u16,
}

impl std::fmt::Display for BrowserOrigin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match default_port(&self.scheme) {
            Some(p) if p == self.port => write!(f, "{}://{}", self.scheme, self.host),
            _ => write!(f, "{}://{}:{}", self.scheme, self.host, self.port),
        }
    }
}

/// An `Origin` header's value (`scheme://host[:port]`, nothing more); `null` and anything else: `None`.
fn parse(text: &str) -> Option<BrowserOrigin> {
    let (scheme, authority) = text.trim().split_once("://")?;
    if scheme.is_empty() || !scheme.bytes().all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(&b)) {
        return None;
    }
    canonical(scheme, authority)
}

/// The origin of `authority` (`host[:port]`) under `scheme`.
fn canonical(scheme: &str, authority: &str) -> Option<BrowserOrigin> {
    let scheme = scheme.to_ascii_lowercase();
    if authority.is_empty()
        || authority
            .bytes()
            .any(|b| b"/?#@[]\\ ".contains(&b) || b.is_ascii_control())
    {
        return None;
    }
    let (host, port) = match authority.rsplit_once(':') {
        Some((host, port)) => {
            if port.is_empty() || !port.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            (host, port.parse::<u16>().ok()?)
        }
        None => (authority, default_port(&scheme)?),
    };
    if host.is_empty() || host.contains(':') {
        return None;
    }
    Some(BrowserOrigin {
        scheme,
        host: host.to_ascii_lowercase(),
        port,
    })
}

/// The port a scheme means when none is written.
fn default_port(scheme: &str) -> Option<u16> {
    match scheme {
        "http" | "ws" => Some(80),
        "https" | "wss" => Some(443),
        _ => None,
    }
}

#[cfg(test)]
#[path = "origin_tests.rs"]
mod tests;
