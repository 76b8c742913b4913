//! Which AWS action a request calls, read every way AWS clients carry it, to refuse the actions that mint
//! credentials ([`crate::config::minting`]) unless the credential's `allow_minting` names them.
//!
//! The action is in an `Action` parameter of the query or of a form-encoded body (the query protocol: STS,
//! IAM, EC2, Redshift...; the parameter's name in any case, percent-decoded, every one of them when it is
//! repeated), in the `X-Amz-Target` header (the JSON protocol: Cognito, ECR, SSM...: `Prefix.Action`), or in
//! the method and path (REST services: CodeArtifact, SSO, IoT, API Gateway, AppSync). The service is every one
//! the request may be for: its signature's scope, the credential's pinned service, and the labels of an AWS
//! host name (`sts.amazonaws.com`, `api.ecr.us-east-1.amazonaws.com`), so that neither the host nor the scope
//! alone decides.

use http::request::Parts;

use crate::config::minting::{MINTING, Minting, MintingKind};

/// The suffixes of AWS endpoint names, whose labels name the service.
const AWS_SUFFIXES: [&str; 4] = [".amazonaws.com", ".amazonaws.com.cn", ".api.aws", ".on.aws"];

/// The services a request may be for: `scope` (its signature's), `pinned` (the credential's), and the labels of
/// `host` when it is an AWS endpoint name; lower case.
pub(crate) fn services(scope: &str, pinned: Option<&str>, host: &str) -> Vec<String> {
    let host = host.to_ascii_lowercase();
    let host = host.split(':').next().unwrap_or_default().trim_end_matches('.');
    let mut out = vec![scope.to_ascii_lowercase()];
    out.extend(pinned.map(str::to_ascii_lowercase));
    if let Some(stem) = AWS_SUFFIXES.iter().find_map(|s| host.strip_suffix(s)) {
        out.extend(stem.split('.').map(str::to_string));
    }
    out.sort();
    out.dedup();
    out
}

/// Whether any of `services` has a minting action.
pub(crate) fn mints(services: &[String]) -> bool {
    MINTING
        .iter()
        .any(|m| m.kind == MintingKind::Aws && services.contains(&service_of(m)))
}

/// Whether any of `services` has a minting action named in a request's body (then its requests' bodies are
/// read to find the action; a REST action is its method and path, and an S3 upload of any size goes unread).
pub(crate) fn reads_body(services: &[String]) -> bool {
    MINTING
        .iter()
        .any(|m| m.kind == MintingKind::Aws && m.rest.is_none() && services.contains(&service_of(m)))
}

/// The action names a request carries: every `Action` parameter of its query and of `body` (a form), and the
/// operation of every `X-Amz-Target` header.
pub(crate) fn actions(parts: &Parts, body: Option<&[u8]>) -> Vec<String> {
    let mut out = Vec::new();
    let mut params = |bytes: &[u8]| {
        out.extend(
            form_urlencoded::parse(bytes)
                .filter(|(k, _)| k.trim().eq_ignore_ascii_case("action"))
                .map(|(_, v)| v.trim().to_string()),
        );
    };
    if let Some(q) = parts.uri.query() {
        params(q.as_bytes());
    }
    if let Some(body) = body {
        params(body);
    }
    for target in parts.headers.get_all("x-amz-target") {
        let target = String::from_utf8_lossy(target.as_bytes());
        let operation = target.rsplit('.').next().unwrap_or_default().trim();
        out.push(operation.to_string());
    }
    out
}

/// The first minting call among `services`' that the request (`parts`, its `body` when read) makes and
/// `allowed` does not name.
pub(crate) fn refused(
    parts: &Parts,
    body: Option<&[u8]>,
    services: &[String],
    allowed: &[&str],
) -> Option<&'static str> {
    let actions = actions(parts, body);
    let path = segments(parts.uri.path());
    let query = parts.uri.query().unwrap_or_default();
    MINTING
        .iter()
        .filter(|m| m.kind == MintingKind::Aws && services.contains(&service_of(m)))
        .filter(|m| !allowed.iter().any(|a| a.eq_ignore_ascii_case(m.name)))
        .find(|m| {
            let action = m.name.split_once(':').map(|(_, a)| a).unwrap_or_default();
            let rest = m.rest.is_some_and(|(method, pattern)| {
                parts.method.as_str().eq_ignore_ascii_case(method) && matches_with_query(&path, query, pattern)
            });
            rest || actions.iter().any(|a| a.eq_ignore_ascii_case(action))
        })
        .map(|m| m.name)
}

fn service_of(m: &Minting) -> String {
    m.name.split_once(':').map(|(s, _)| s).unwrap_or_default().to_string()
}

/// The path's segments as a service reads them: percent-decoded, without empty and `.` segments, `..` taking
/// the one before it away.
pub(crate) fn segments(path: &str) -> Vec<String> {
    let decoded = percent_encoding::percent_decode_str(path).decode_utf8_lossy();
    let mut out: Vec<String> = Vec::new();
    for segment in decoded.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                out.pop();
            }
            s => out.push(s.to_ascii_lowercase()),
        }
    }
    out
}

/// Whether `path`'s segments are `pattern`'s, `*` standing for any one segment and a last `**` for any number
/// of them (none included).
pub(crate) fn matches(path: &[String], pattern: &str) -> bool {
    let mut pattern: Vec<&str> = pattern.split('/').filter(|s| !s.is_empty()).collect();
    let any_tail = pattern.last() == Some(&"**");
    if any_tail {
        pattern.pop();
    }
    (path.len() == pattern.len() || (any_tail && path.len() >= pattern.len()))
        && path
            .iter()
            .zip(&pattern)
            .all(|(s, p)| *p == "*" || s.eq_ignore_ascii_case(p))
}

/// [`matches`], and for a pattern ending `?name`, whether `query` has a parameter so named (in any case,
/// percent-decoded, with or without a value: S3 reads `?acl` and `?acl=`).
fn matches_with_query(path: &[String], query: &str, pattern: &str) -> bool {
    let (pattern, name) = pattern.split_once('?').unwrap_or((pattern, ""));
    matches(path, pattern)
        && (name.is_empty()
            || form_urlencoded::parse(query.as_bytes()).any(|(k, _)| k.trim().eq_ignore_ascii_case(name)))
}

#[cfg(test)]
#[path = "aws_minting_tests.rs"]
mod tests;
