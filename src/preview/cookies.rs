//! cordon's session cookie on the wire: the one name accepted from the browser, cordon's cookie kept from the
//! dev server, and the `Set-Cookie` lines a dev server may not send (cordon's cookie under any spelling, or a
//! `Domain` other than the preview's own host: cookie tossing into other previews).

use http::HeaderMap;
use http::header::{COOKIE, SET_COOKIE};

/// The session cookie's name. `__Host-`: the browser keeps it only when it is `Secure`, has `Path=/` and no
/// `Domain`, so no other host (another preview's dev server or page) can set or overwrite it.
pub(crate) const NAME: &str = "__Host-cordon_preview";

/// The part every spelling of cordon's cookie holds (lower case).
const STEM: &str = "cordon_preview";

/// At most this many session cookies of a request are checked (a browser sends one).
const MOST: usize = 8;

/// Whether `name`, as a browser would send it back, is cordon's cookie under some spelling: any case, any
/// prefix (`__Host-`, `__Secure-`), and a nameless cookie (`=cordon_preview=...`), which browsers send back
/// as `cordon_preview=...`.
pub(crate) fn is_cordon(name: &str) -> bool {
    sent_name(name).to_ascii_lowercase().contains(STEM)
}

/// The name a cookie's `name=value` pair goes back under: what precedes the first `=` once a nameless cookie's
/// leading `=` is dropped.
fn sent_name(pair: &str) -> &str {
    pair.trim_start_matches(|c: char| c == '=' || c.is_ascii_whitespace())
        .split('=')
        .next()
        .unwrap_or_default()
        .trim()
}

/// The values of the session cookies (`NAME` exactly, as the browser sends it) a request carries.
pub(crate) fn sessions(headers: &HeaderMap) -> Vec<String> {
    headers
        .get_all(COOKIE)
        .iter()
        .filter_map(|h| h.to_str().ok())
        .flat_map(|text| text.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .filter(|(name, _)| name.trim() == NAME)
        .map(|(_, value)| value.trim().to_string())
        .take(MOST)
        .collect()
}

/// Remove every spelling of cordon's cookie from the `Cookie` the dev server receives (it is cordon's, not the
/// dev server's), keeping the dev server's own cookies in order.
pub(crate) fn strip_request(headers: &mut HeaderMap) {
    let kept: Vec<String> = headers
        .get_all(COOKIE)
        .iter()
        .map(|h| String::from_utf8_lossy(h.as_bytes()).into_owned())
        .flat_map(|text| text.split(';').map(|c| c.trim().to_string()).collect::<Vec<_>>())
        .filter(|c| !c.is_empty() && !is_cordon(c))
        .collect();
    headers.remove(COOKIE);
    if !kept.is_empty()
        && let Ok(v) = http::HeaderValue::from_str(&kept.join("; "))
    {
        headers.insert(COOKIE, v);
    }
}

/// Remove from a dev server's response every `Set-Cookie` line that names cordon's cookie (any spelling) or
/// carries a `Domain` other than `own` (the preview's host, lower case, without port): such a cookie would reach
/// other previews, whose sessions and apps it could replace. The dev server's host-only cookies stay. The names
/// of the cookies removed.
pub(crate) fn strip_response(headers: &mut HeaderMap, own: &str) -> Vec<String> {
    let lines: Vec<http::HeaderValue> = headers.get_all(SET_COOKIE).iter().cloned().collect();
    if lines.is_empty() {
        return Vec::new();
    }
    let mut stripped = Vec::new();
    headers.remove(SET_COOKIE);
    for line in lines {
        let text = String::from_utf8_lossy(line.as_bytes());
        let mut parts = text.split(';');
        let pair = parts.next().unwrap_or_default();
        let foreign_domain = parts.any(|attribute| {
            let (key, value) = attribute.split_once('=').unwrap_or((attribute, ""));
            key.trim().eq_ignore_ascii_case("domain") && !is_own(value, own)
        });
        if is_cordon(pair) || foreign_domain {
            stripped.push(sent_name(pair).chars().take(64).collect());
        } else {
            headers.append(SET_COOKIE, line);
        }
    }
    stripped
}

/// Whether a `Domain` attribute's value names the preview's host itself (or is empty, which browsers ignore).
fn is_own(value: &str, own: &str) -> bool {
    let value = value.trim();
    value.is_empty() || value.strip_prefix('.').unwrap_or(value).eq_ignore_ascii_case(own)
}

#[cfg(test)]
#[path = "cookies_tests.rs"]
mod tests;
