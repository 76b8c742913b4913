//! The minting calls of GitHub and OAuth2 credentials ([`crate::config::minting`]), recognised in a request
//! cordon is about to inject a credential into, and the one decision for them: refused 403
//! `credential_minting` unless the credential's `allow_minting` names the call; let through, its answer has
//! its tokens masked.
//!
//! A GitHub call is its method and path as GitHub routes it: the method in any case, the path percent-decoded,
//! in any case, without empty and `.` segments (`..` taking the one before it away) and without Enterprise's
//! `/api/v3` prefix. An OAuth2 token request is any request carrying a `grant_type`: in the query, in a body
//! read as a form (the name in any case, percent-decoded, every one when repeated) or in a JSON object body
//! (every member so named, in any case, repeated or not); a device authorization request is a `POST` to a path
//! ending as such endpoints do ([`DEVICE_PATHS`]).

use http::header::{CONTENT_LENGTH, CONTENT_TYPE};
use http::request::Parts;

use crate::config::credentials::Inject;
use crate::config::minting::{DEVICE_AUTHORIZATION, DEVICE_PATHS, MINTING, Minting, MintingKind};
use crate::error::ProxyError;
use crate::inject::apply::Credentials;
use crate::inject::aws_minting::{matches, segments};
use crate::leak::scan::views::Readings;
use crate::names::CredentialName;
use crate::reason::Reason;

/// The path's segments as GitHub routes it (see the module's doc).
pub(crate) fn github_path(path: &str) -> Vec<String> {
    let mut out = segments(path);
    if out.len() >= 2 && out[0] == "api" && out[1] == "v3" {
        out.drain(..2);
    }
    out
}

/// The GitHub minting calls the request makes (its method and path).
pub(crate) fn github_calls(parts: &Parts) -> Vec<&'static Minting> {
    let path = github_path(parts.uri.path());
    MINTING
        .iter()
        .filter(|m| m.kind == MintingKind::GitHub)
        .filter(|m| {
            m.rest.is_some_and(|(method, pattern)| {
                parts.method.as_str().eq_ignore_ascii_case(method) && matches(&path, pattern)
            })
        })
        .collect()
}

/// The OAuth2 minting calls the request makes: one per grant it carries (`grants`, as
/// [`crate::inject::token_request`] read them; an unknown grant is `oauth2:other_grants`), and a device
/// authorization request.
pub(crate) fn oauth2_calls(parts: &Parts, grants: &[String]) -> Vec<&'static Minting> {
    let rows = || MINTING.iter().filter(|m| m.kind == MintingKind::OAuth2);
    let mut out: Vec<&'static Minting> = Vec::new();
    for grant in grants {
        let row = rows()
            .find(|m| m.grant.is_some_and(|g| g.eq_ignore_ascii_case(grant)))
            .or_else(|| rows().find(|m| m.grant == Some("*")));
        out.extend(row);
    }
    if parts.method.as_str().eq_ignore_ascii_case("POST") {
        let path = segments(parts.uri.path()).join("/");
        if DEVICE_PATHS
            .iter()
            .any(|end| path == *end || path.ends_with(&format!("/{end}")))
        {
            out.push(&DEVICE_AUTHORIZATION);
        }
    }
    out
}

/// Whether a body cordon could not read might be a token request: a `POST` whose body is a form, or says
/// nothing of what it is.
fn form_like(parts: &Parts) -> bool {
    let media = parts
        .headers
        .get(CONTENT_TYPE)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).trim().to_ascii_lowercase());
    parts.method.as_str().eq_ignore_ascii_case("POST")
        && media.is_none_or(|m| m.starts_with("application/x-www-form-urlencoded"))
}

/// Whether a body may be a token request worth reading whole before it goes (a form, JSON, or untyped body of
/// unknown length: one of known length up to the limit is read anyway).
fn token_shaped(parts: &Parts) -> bool {
    let media = parts
        .headers
        .get(CONTENT_TYPE)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).trim().to_ascii_lowercase());
    !matches!(parts.method.as_str(), "GET" | "HEAD")
        && !parts.headers.contains_key(CONTENT_LENGTH)
        && media.is_none_or(|m| m.starts_with("application/x-www-form-urlencoded") || m.contains("json"))
}

impl Credentials {
    /// The credentials among `usable` that are injected as they are (not AWS keys, which sign).
    fn injected<'a>(&'a self, usable: &'a [CredentialName]) -> impl Iterator<Item = &'a CredentialName> {
        usable.iter().filter(|n| {
            self.specs
                .get(*n)
                .is_some_and(|s| !matches!(s.inject, Inject::AwsSigV4 { .. }))
        })
    }

    /// Whether the request's body must be read whole to see whether it is an OAuth2 token request.
    pub(super) fn minting_needs_body(&self, usable: &[CredentialName], parts: &Parts) -> bool {
        self.injected(usable).next().is_some() && token_shaped(parts)
    }

    /// SECURITY: a request that would mint a credential through an injected credential (a GitHub token or
    /// key, an OAuth2 token) is refused before anything of it leaves, unless the credential's
    /// `allow_minting` names the call; `body` is the body as read, with its readings (`None`: not read, too large or
    /// compressed: a form then is refused rather than guessed at). Whether the answer's tokens are to be
    /// masked (a minting call let through).
    pub(super) fn minting_check(
        &self,
        usable: &[CredentialName],
        parts: &Parts,
        body: Option<&Readings>,
    ) -> Result<bool, ProxyError> {
        let mut mask = false;
        if self.injected(usable).next().is_none() {
            return Ok(false);
        }
        // SECURITY: a request that may be a token request in a way some server reads and cordon cannot is
        // refused whatever the credentials allow.
        let grants = crate::inject::token_request::grants(parts, body).map_err(|why| ProxyError::BadRequest {
            code: Reason::TokenRequestAmbiguous,
            message: format!(
                "this request may be an OAuth2 token request that cordon cannot read as every server would: {why}"
            ),
        })?;
        for name in self.injected(usable) {
            let Some(spec) = self.specs.get(name) else { continue };
            let mut calls = oauth2_calls(parts, &grants);
            if spec.github {
                calls.extend(github_calls(parts));
            }
            if body.is_none() && form_like(parts) && calls.is_empty() {
                return Err(ProxyError::BadRequest {
                    code: Reason::MintingBodyUnreadable,
                    message: format!(
                        "cordon reads a form sent with credential {name} to see whether it asks for a token: \
                         send it uncompressed and under {} bytes",
                        crate::body::read::MAX_SCANNED_BODY
                    ),
                });
            }
            if let Some(call) = calls.iter().find(|m| !spec.allow_minting.contains(&m.name)) {
                return Err(ProxyError::Minting {
                    credential: name.clone(),
                    call: call.name.to_string(),
                });
            }
            mask |= !calls.is_empty();
        }
        Ok(mask)
    }
}

#[cfg(test)]
#[path = "minting_tests.rs"]
mod tests;
