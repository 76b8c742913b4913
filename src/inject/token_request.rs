//! The `grant_type` of a request that may be an OAuth2 token request, read strictly: a request that names a
//! grant in any way some server could read (anywhere in its query or body, in any case, percent-encoded,
//! JSON-escaped, after a byte order mark or a NUL, with `-`, a space or nothing for the `_`) must say it in the
//! one way every server reads alike, or it is refused (400 `token_request_ambiguous`), as the GraphQL reader
//! refuses what two servers would read as two requests ([`crate::graphql`]).
//!
//! The one way: `grant_type` written as it is, once in the whole request, in the URL's query or in a body of
//! `application/x-www-form-urlencoded` or JSON (`application/json`, `+json`) whose only parameter is
//! `charset=utf-8`; the body valid UTF-8 without a byte order mark, a NUL or a `Content-Encoding`, and not
//! multipart; a form without a `;` that changes the grant read (some servers split on it), the value without
//! `+` (a space to some, a plus to others); a JSON object whose members are each there once, with `grant_type` a
//! string at its top level and nowhere deeper. A body of no type or another (`text/plain`) is read both as a
//! form and, when it parses, as JSON, and every grant found is judged. A text that only mentions a grant in
//! passing (a JSON chat message, a form value) is read as it is and mints nothing.

use std::borrow::Cow;

use http::header::{CONTENT_ENCODING, CONTENT_TYPE};
use http::request::Parts;
use serde_json::Value;

use crate::leak::scan::views::{Readings, views};

/// Every grant the request asks for (at most one), or why it cannot be read as every server would: `body` is the
/// body as read with its readings (made once, for the exfiltration scan too).
pub(crate) fn grants(parts: &Parts, body: Option<&Readings>) -> Result<Vec<String>, String> {
    let query = parts.uri.query().map(str::as_bytes).filter(|q| mentions(&views(q)));
    let body = body.filter(|b| mentions(&b.all()));
    let mut out = Vec::new();
    if let Some(q) = query {
        form(q, "the URL's query string", &mut out)?;
    }
    if let Some(body) = body {
        read_body(parts, body.text(), &mut out)?;
    }
    if out.len() > 1 {
        return Err(format!(
            "grant_type is given {} times (in the query and the body, or twice): servers take the first or the \
             last; give it once",
            out.len()
        ));
    }
    Ok(out)
}

/// Whether a text or any of its `readings` (percent-decoded, JSON-unescaped, as the exfiltration scan reads it)
/// has `grant`, then at most three bytes that are not letters, then `type` (ASCII case ignored, NULs skipped):
/// only such a request may be a token request.
fn mentions(readings: &[Cow<'_, [u8]>]) -> bool {
    readings.iter().any(|v| {
        let lower: Vec<u8> = v.iter().filter(|b| **b != 0).map(u8::to_ascii_lowercase).collect();
        memchr::memmem::find_iter(&lower, b"grant").any(|at| {
            let rest = &lower[at + 5..];
            (0..=3).any(|gap| {
                rest.get(gap..gap + 4) == Some(&b"type"[..]) && rest[..gap].iter().all(|b| !b.is_ascii_alphabetic())
            })
        })
    })
}

/// Whether a parameter's name (as a server decodes it) is one some server reads as `grant_type`: the same
/// letters in any case, with anything or nothing between the two words, and an array's `[]` or `[0]` after.
fn grant_like(name: &str) -> bool {
    let name = name.split('[').next().unwrap_or_default();
    let letters: String = name
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect();
    letters == "granttype"
}

/// The body of a request that mentions a grant, read strictly.
fn read_body(parts: &Parts, body: &[u8], out: &mut Vec<String>) -> Result<(), String> {
    if let Some(coding) = parts.headers.get(CONTENT_ENCODING) {
        let coding = String::from_utf8_lossy(coding.as_bytes());
        if !coding.trim().eq_ignore_ascii_case("identity") {
            return Err(format!(
                "the body is sent with Content-Encoding: {coding}, and servers differ on whether they decompress a \
                 request; send a token request uncompressed"
            ));
        }
    }
    if [&[0xEF, 0xBB, 0xBF][..], &[0xFE, 0xFF], &[0xFF, 0xFE]]
        .iter()
        .any(|bom| body.starts_with(bom))
    {
        return Err(
            "the body starts with a byte order mark, which some servers skip and others read as part of \
                    the first name; send it without"
                .into(),
        );
    }
    if let Some(at) = memchr::memchr(0, body) {
        return Err(format!(
            "the body has a NUL byte (at {at}), where some servers end the text; send it without"
        ));
    }
    let text = std::str::from_utf8(body).map_err(|e| {
        format!(
            "the body is not UTF-8 (at byte {}: an overlong or broken sequence some servers decode leniently)",
            e.valid_up_to()
        )
    })?;
    let (media, params) = media_type(parts)?;
    let form_or_json = media == "application/x-www-form-urlencoded"
        || media == "application/json"
        || (media.starts_with("application/") && media.ends_with("+json"));
    if let Some(param) = params.filter(|_| form_or_json) {
        return Err(format!(
            "the Content-Type has {param:?}: cordon reads a token request in UTF-8 with no other parameter, and a \
             server may decode it otherwise"
        ));
    }
    match media.as_str() {
        "application/x-www-form-urlencoded" => {
            // A server that reads a body by what it looks like would read this one as JSON.
            let as_json = serde_json::from_str::<Value>(text).ok();
            if let Some(name) = as_json.as_ref().and_then(nested_grant) {
                return Err(format!(
                    "the form is JSON with {name:?}, which servers that read a body by its look take for a grant; \
                     send JSON as application/json"
                ));
            }
            form(text.as_bytes(), "the form", out)
        }
        m if m == "application/json" || (m.starts_with("application/") && m.ends_with("+json")) => json(text, out),
        m if m.starts_with("multipart/") => Err(format!(
            "a {m} body naming grant_type: servers that read multipart forms take its parts as parameters, and \
             cordon does not; send application/x-www-form-urlencoded"
        )),
        // Untyped, text/plain or another type: some servers read it as a form, some sniff JSON, most leave it
        // unread; every grant any of those readings finds is judged (two are refused as twice).
        _ => {
            if serde_json::from_str::<Value>(text).is_ok() {
                json(text, out)?;
            }
            form(text.as_bytes(), "the body", out)
        }
    }
}

/// The request's media type, lower case (empty when there is none), and its first parameter that is not
/// `charset=utf-8`; it must be given once.
fn media_type(parts: &Parts) -> Result<(String, Option<String>), String> {
    let mut all = parts.headers.get_all(CONTENT_TYPE).iter();
    let Some(value) = all.next() else {
        return Ok((String::new(), None));
    };
    if all.next().is_some() {
        return Err("the request has two Content-Type headers: servers read one or the other".into());
    }
    let value = value
        .to_str()
        .map_err(|_| "the Content-Type is not ASCII".to_string())?
        .to_ascii_lowercase();
    let mut pieces = value.split(';');
    let media = pieces.next().unwrap_or_default().trim().to_string();
    let odd = pieces.map(str::trim).find(|param| {
        let (k, v) = param.split_once('=').unwrap_or((param, ""));
        k.trim() != "charset" || !v.trim().trim_matches('"').eq_ignore_ascii_case("utf-8")
    });
    Ok((media, odd.map(str::to_string)))
}

/// The grants of a form or query string, written as every server reads them, pushed onto `out`. A `;` is
/// refused only where it changes what is read: split on `&` alone and on `&` and `;`, the grants must be the same.
fn form(text: &[u8], what: &str, out: &mut Vec<String>) -> Result<(), String> {
    let by_amp = form_pairs(text, b"&", what)?;
    let by_both = form_pairs(text, b"&;", what)?;
    if by_amp != by_both {
        return Err(format!(
            "{what} has a ';', which some servers read as a separator and others do not, and the grant_type read \
             differs; encode it (%3B)"
        ));
    }
    out.extend(by_amp);
    Ok(())
}

/// The `grant_type` values of `text` split into pairs at any of `separators`; a name some server reads as
/// `grant_type` written otherwise, or a value servers read apart, is an error.
fn form_pairs(text: &[u8], separators: &[u8], what: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for pair in text.split(|b| separators.contains(b)) {
        let (raw_name, raw_value) = match pair.iter().position(|&b| b == b'=') {
            Some(i) => (&pair[..i], &pair[i + 1..]),
            None => (pair, &b""[..]),
        };
        let name = decoded(raw_name);
        if raw_name == b"grant_type" {
            let value = decoded(raw_value);
            if raw_value.contains(&b'+') {
                return Err(format!(
                    "{what} has a '+' in grant_type's value, a space to some servers and a plus to others; \
                     encode it (%2B or %20)"
                ));
            }
            if value.chars().any(|c| c.is_control() || c == ' ') || value.contains('\u{FFFD}') {
                return Err(format!(
                    "{what} has a grant_type with spaces, controls or bytes that are not UTF-8"
                ));
            }
            out.push(value);
        } else if grant_like(&name) || grant_like(&decoded(name.as_bytes())) {
            return Err(format!(
                "{what} has {:?}, which some servers read as grant_type and others do not; write it grant_type",
                String::from_utf8_lossy(raw_name)
            ));
        }
    }
    Ok(out)
}

/// Percent-decoded, `+` as a space (as form readers do), lossily as UTF-8.
fn decoded(raw: &[u8]) -> String {
    form_urlencoded::parse(&[b"x=", raw].concat())
        .next()
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default()
}

/// The grant of a JSON body: a string member `grant_type` of the top-level object, once, nowhere deeper.
fn json(text: &str, out: &mut Vec<String>) -> Result<(), String> {
    crate::body::json::unique_members(text.as_bytes()).map_err(|e| format!("the JSON body: {e}"))?;
    let value: Value = serde_json::from_str(text).map_err(|e| format!("the JSON body: {e}"))?;
    let top = match &value {
        Value::Object(map) => map.iter().collect(),
        _ => Vec::new(),
    };
    for (k, v) in &top {
        if k.as_str() == "grant_type" {
            match v {
                Value::String(s) if s.trim() == s && !s.chars().any(char::is_control) => out.push(s.clone()),
                Value::String(_) => return Err("grant_type has spaces or controls around or in it".into()),
                other => {
                    return Err(format!(
                        "grant_type is {}, not a string: servers read an array's first or last element, or refuse",
                        kind(other)
                    ));
                }
            }
        } else if grant_like(k) {
            return Err(format!(
                "the JSON body has {k:?}, which some servers read as grant_type and others do not; write it \
                 grant_type"
            ));
        }
    }
    // SECURITY: a grant_type nested anywhere (or in a top-level array) is one some server unwraps.
    let deeper = match &value {
        Value::Object(map) => map.values().find_map(nested_grant),
        other => nested_grant(other),
    };
    if let Some(path) = deeper {
        return Err(format!(
            "the JSON body has {path:?} below its top level, which servers that unwrap a body read as grant_type; \
             give it at the top level only"
        ));
    }
    Ok(())
}

/// A member named like `grant_type` anywhere inside `v`, by its name.
fn nested_grant(v: &Value) -> Option<String> {
    match v {
        Value::Object(map) => map
            .iter()
            .find(|(k, _)| grant_like(k))
            .map(|(k, _)| k.clone())
            .or_else(|| map.values().find_map(nested_grant)),
        Value::Array(items) => items.iter().find_map(nested_grant),
        _ => None,
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
#[path = "token_request_tests.rs"]
mod tests;
