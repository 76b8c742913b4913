//! Applying credentials to a request at the proxy, and refusing what must not leave.
//!
//! Order: everything the request carries is scanned first, raw and in every reading decoding makes of it
//! ([`crate::leak::scan::detect`]): headers one by one and together, the path, the query, and the body (read whole where
//! a placeholder may be swapped in it, else streamed through the scan, whatever its size). SECURITY:
//! credential exfiltration: a placeholder is only ever turned into its secret for the destination it is
//! bound to, by the sandbox it was issued to, over intercepted HTTPS, written as cordon issued it; and a
//! real secret goes nowhere but its binding. Then bound header credentials are set, replacing whatever the
//! sandbox sent; then the placeholders are swapped for their secrets.

use base64::Engine;
use bytes::Bytes;
use http::header::{AUTHORIZATION, CONTENT_ENCODING, CONTENT_LENGTH};
use http::request::Parts;
use http::uri::PathAndQuery;
use http::{HeaderValue, Uri};
use http_body::Body as _;
use http_body_util::BodyExt;
use secrecy::ExposeSecret;

use crate::body::ProxyBody;
use crate::body::decode::Decoder;
use crate::body::read::{MAX_SCANNED_BODY, Read};
use crate::config::credentials::Inject;
use crate::error::ProxyError;
use crate::identity::Sandbox;
use crate::inject::apply::{Credentials, unavailable};
use crate::leak::scan::body::{ScanBody, ScanVerdict};
use crate::leak::scan::detect::Found;
use crate::leak::scan::stream::streamed_refuses;
use crate::leak::scan::views::Readings;
use crate::names::CredentialName;
use crate::policy::Policy;
use crate::reason::Reason;

/// What `apply` did.
pub(crate) struct Applied {
    /// Names of the credentials applied.
    pub(crate) names: Vec<CredentialName>,
    /// The request body: read and rewritten if placeholders were swapped in it, else scanned as it streams.
    pub(crate) body: ProxyBody,
    /// Set when the streaming scan refuses the body on its way up.
    pub(crate) verdict: Option<ScanVerdict>,
    /// A GitHub or OAuth2 minting call was let through: the tokens of its answer are masked.
    pub(crate) tokens: bool,
}

/// Where in the request a placeholder was found as issued.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PlaceholderSite {
    Header,
    Query,
    /// The request body, where placeholders of `body: true` credentials are swapped.
    Body,
    /// The path, or a body no placeholder may be swapped in: never a place for one.
    Elsewhere,
}

impl Credentials {
    /// Scan and apply credentials to a request going upstream: `usable` are the credentials the decision
    /// found bound to it ([`Credentials::usable`]).
    pub(crate) async fn apply(
        &self,
        sandbox: &Sandbox,
        policy: &Policy,
        usable: &[CredentialName],
        parts: &mut Parts,
        body: ProxyBody,
    ) -> Result<Applied, ProxyError> {
        // No credential configured: nothing to protect, nothing to scan for.
        if !self.any {
            return Ok(Applied {
                names: Vec::new(),
                body,
                verdict: None,
                tokens: false,
            });
        }
        let detector = self.detector();
        let is_usable = |name: &str| usable.iter().any(|u| u == name);
        let mut swaps: Vec<(CredentialName, String)> = Vec::new();
        let mut judge = |found: Found, place: PlaceholderSite| -> Result<(), ProxyError> {
            self.judge(sandbox, found, place, &is_usable, &mut swaps)
        };
        // Headers one by one, then together (a placeholder or secret split over two headers).
        let mut each = Found::default();
        for value in parts.headers.values() {
            let found = detector.scan(value.as_bytes());
            each.merge(found.clone());
            judge(found, PlaceholderSite::Header)?;
        }
        let joined: Vec<u8> = parts
            .headers
            .values()
            .flat_map(|v| v.as_bytes().iter().copied())
            .collect();
        judge(split_only(detector.scan(&joined), &each), PlaceholderSite::Header)?;
        judge(detector.scan(parts.uri.path().as_bytes()), PlaceholderSite::Elsewhere)?;
        if let Some(query) = parts.uri.query() {
            judge(detector.scan(query.as_bytes()), PlaceholderSite::Query)?;
        }
        // The body: read whole where a placeholder may be swapped in it, else scanned as it streams.
        let body_swaps_possible = usable.iter().any(|n| {
            self.specs
                .get(n)
                .is_some_and(|s| matches!(s.inject, Inject::Placeholder { body: true, .. }))
        });
        let coding = parts
            .headers
            .get(CONTENT_ENCODING)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
        let decoder = match &coding {
            None => None,
            Some(c) => Decoder::for_coding(c).map_err(|e| ProxyError::BadRequest {
                code: Reason::UnreadableBody,
                message: format!("cordon reads request bodies to keep secrets in: {e}"),
            })?,
        };
        let declared = parts
            .headers
            .get(CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<usize>().ok());
        let mut whole = None;
        let mut verdict = None;
        // The body as read, uncompressed, with its readings (made once: the scan's are the minting check's).
        let mut seen: Option<Readings> = None;
        // A body is read whole where a placeholder may be swapped in it, or where an AWS signature covers its
        // hash without saying it.
        let read_whole =
            body_swaps_possible || self.aws_needs_body(usable, parts) || self.minting_needs_body(usable, parts);
        let empty = body.is_end_stream();
        let body = if empty {
            body
        } else if read_whole && decoder.is_none() && declared.is_none_or(|n| n <= MAX_SCANNED_BODY)
            || declared.is_some_and(|n| n <= MAX_SCANNED_BODY)
        {
            // A body of known, bounded length (or one a placeholder may be swapped in) is read and scanned
            // whole before anything of the request goes upstream: a refusal leaves the upstream untouched.
            let (data, trailers) = match crate::body::read::read(body, MAX_SCANNED_BODY).await {
                Ok(Read::Whole(data, trailers)) => (data, trailers),
                Ok(Read::TooLarge) => {
                    return Err(ProxyError::PayloadTooLarge {
                        limit: MAX_SCANNED_BODY,
                    });
                }
                Err(e) => {
                    return Err(ProxyError::BadRequest {
                        code: Reason::BodyUnreadable,
                        message: format!("the request body could not be read: {e}"),
                    });
                }
            };
            match decoder {
                // A compressed body is scanned as the upstream will read it; it goes as it came.
                Some(decoder) => {
                    let verdict = ScanVerdict::default();
                    let refuses = streamed_refuses(usable);
                    let scan = ScanBody::new(
                        crate::body::read::whole(data.clone(), None),
                        detector.clone(),
                        Some(decoder),
                        refuses,
                        verdict.clone(),
                    );
                    if scan.collect().await.is_err() {
                        let found = verdict.take().unwrap_or_default();
                        return Err(refusal(&found, sandbox, self));
                    }
                    crate::body::read::whole(data, trailers)
                }
                None if read_whole => {
                    let place = if body_swaps_possible {
                        PlaceholderSite::Body
                    } else {
                        PlaceholderSite::Elsewhere
                    };
                    judge(detector.scan_read(seen.insert(Readings::of(data.clone()))), place)?;
                    whole = Some((data, trailers));
                    crate::body::empty()
                }
                None => {
                    // No placeholder may be swapped in this body: any found in it is out of place.
                    let read = seen.insert(Readings::of(data.clone()));
                    judge(detector.scan_read(read), PlaceholderSite::Elsewhere)?;
                    crate::body::read::whole(data, trailers)
                }
            }
        } else if read_whole && decoder.is_none() {
            // A placeholder may be swapped in this body (or an AWS signature needs its hash), and it is larger
            // than cordon reads whole.
            return Err(ProxyError::PayloadTooLarge {
                limit: MAX_SCANNED_BODY,
            });
        } else {
            // SECURITY: no size limit to hide behind: a larger or streamed body is scanned on its way up, and
            // a finding ends it there (the upstream never gets the rest) and the request with 403.
            let v = ScanVerdict::default();
            verdict = Some(v.clone());
            ScanBody::new(body, detector.clone(), decoder, streamed_refuses(usable), v).boxed_unsync()
        };
        let sent: Option<Bytes> = whole.as_ref().map(|(data, _)| data.clone()).or(empty.then(Bytes::new));
        let aws = self.aws_check(sandbox, usable, parts, sent.as_deref())?;
        let seen = seen.or(empty.then(|| Readings::of(Bytes::new())));
        let tokens = self.minting_check(usable, parts, seen.as_ref())?;
        drop(seen);
        let names = self.inject(policy, usable, parts).await?;
        let mut names = self.swap(policy, swaps, parts, &mut whole, names).await?;
        if let Some(checked) = aws {
            let now: Option<Bytes> = whole.as_ref().map(|(data, _)| data.clone()).or(empty.then(Bytes::new));
            names.push(self.aws_sign(policy, checked, parts, now.as_deref()).await?);
        }
        let body = match whole {
            Some((data, trailers)) => {
                if parts.headers.contains_key(CONTENT_LENGTH) {
                    parts.headers.insert(CONTENT_LENGTH, HeaderValue::from(data.len()));
                }
                crate::body::read::whole(data, trailers)
            }
            None => body,
        };
        Ok(Applied {
            names,
            body,
            verdict,
            tokens,
        })
    }

    /// What a finding means: a placeholder as issued, in a place its credential allows, by its own sandbox,
    /// bound here, is to be swapped; anything else found refuses the request.
    fn judge(
        &self,
        sandbox: &Sandbox,
        found: Found,
        place: PlaceholderSite,
        usable: &dyn Fn(&str) -> bool,
        swaps: &mut Vec<(CredentialName, String)>,
    ) -> Result<(), ProxyError> {
        if let Some(credential) = found.off_binding(usable) {
            return Err(ProxyError::SecretExfiltration {
                credential: credential.to_string().into(),
            });
        }
        if let Some(token) = found.disguised.first() {
            let credential = self.owner_of(sandbox, token).unwrap_or_else(|| "unknown".into());
            return Err(exfiltration(credential.as_str(), "encoded, split or re-cased"));
        }
        let incarnation = sandbox.incarnation();
        for token in found.plain {
            let own = self
                .specs
                .keys()
                .find(|c| self.placeholders.value(incarnation, c) == token);
            let credential = match (own, self.placeholders.owner(&token)) {
                (Some(credential), _) => credential.clone(),
                (None, Some((_, credential))) => {
                    return Err(exfiltration(credential.as_str(), "another sandbox's placeholder"));
                }
                (None, None) => return Err(exfiltration("unknown", "a placeholder cordon did not issue")),
            };
            let swappable = match self.specs.get(credential.as_str()).map(|s| &s.inject) {
                Some(Inject::Placeholder { query, body }) => match place {
                    PlaceholderSite::Header => true,
                    PlaceholderSite::Query => *query,
                    PlaceholderSite::Body => *body,
                    PlaceholderSite::Elsewhere => false,
                },
                // The AWS access key id: in the Authorization header or a presigned URL's X-Amz-Credential
                // (anywhere else is refused once the signature is replaced).
                Some(Inject::AwsSigV4 { .. }) => matches!(place, PlaceholderSite::Header | PlaceholderSite::Query),
                _ => false,
            };
            if !(swappable && usable(credential.as_str())) {
                return Err(exfiltration(credential.as_str(), "sent where it is not bound"));
            }
            if !swaps.iter().any(|(c, _)| *c == credential) {
                swaps.push((credential, token));
            }
        }
        Ok(())
    }

    /// Refuse a destination name that carries a placeholder or a secret: a name is sent to a resolver (and, under
    /// an allowed wildcard, to the upstream's DNS) before any rule could stop it, so it is scanned like any other
    /// part of a request, as written and with its dots taken out (a value split over labels).
    pub(crate) fn check_name(&self, sandbox: &Sandbox, name: &str) -> Result<(), ProxyError> {
        if !self.any {
            return Ok(());
        }
        let detector = self.detector();
        let joined: String = if name.contains('.') {
            name.chars().filter(|c| *c != '.').collect()
        } else {
            String::new()
        };
        for text in [name, joined.as_str()].into_iter().filter(|t| !t.is_empty()) {
            let found = detector.scan(text.as_bytes());
            if let Some(credential) = found.secrets.first().and_then(|owners| owners.first()) {
                return Err(ProxyError::SecretExfiltration {
                    credential: credential.as_str().into(),
                });
            }
            if let Some(token) = found.plain.first().or(found.disguised.first()) {
                let credential = self.owner_of(sandbox, token).unwrap_or_else(|| "unknown".into());
                return Err(exfiltration(credential.as_str(), "in a host name"));
            }
        }
        Ok(())
    }

    /// The credential a placeholder token stands for, this sandbox's or another's.
    fn owner_of(&self, sandbox: &Sandbox, token: &str) -> Option<CredentialName> {
        let incarnation = sandbox.incarnation();
        self.specs
            .keys()
            .find(|c| self.placeholders.value(incarnation, c) == token)
            .cloned()
            .or_else(|| self.placeholders.owner(token).map(|(_, c)| c.clone()))
    }

    /// Set the bound header and Basic credentials, replacing whatever the sandbox sent.
    async fn inject(
        &self,
        policy: &Policy,
        usable: &[CredentialName],
        parts: &mut Parts,
    ) -> Result<Vec<CredentialName>, ProxyError> {
        let mut applied = Vec::new();
        for name in usable {
            let Some(spec) = self.specs.get(name) else { continue };
            let value = match &spec.inject {
                Inject::Header { template, .. } => {
                    let secret = self.secret(spec, policy).await?;
                    template.replace("{secret}", secret.expose_secret())
                }
                Inject::Basic { user } => {
                    let secret = self.secret(spec, policy).await?;
                    let pair = format!("{user}:{}", secret.expose_secret());
                    format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(pair))
                }
                Inject::Placeholder { .. } | Inject::AwsSigV4 { .. } => continue,
            };
            let header = match &spec.inject {
                Inject::Header { name, .. } => name.clone(),
                _ => AUTHORIZATION,
            };
            parts.headers.insert(header, sensitive(&value, name)?);
            applied.push(name.clone());
        }
        Ok(applied)
    }

    /// Swap each accepted placeholder for its secret in the headers, the query and a whole body.
    async fn swap(
        &self,
        policy: &Policy,
        swaps: Vec<(CredentialName, String)>,
        parts: &mut Parts,
        whole: &mut Option<(Bytes, Option<http::HeaderMap>)>,
        mut applied: Vec<CredentialName>,
    ) -> Result<Vec<CredentialName>, ProxyError> {
        for (credential, token) in swaps {
            let Some(spec) = self.specs.get(credential.as_str()) else {
                continue;
            };
            if matches!(spec.inject, Inject::AwsSigV4 { .. }) {
                continue; // signed, not swapped: see aws_step.rs
            }
            let secret = self.secret(spec, policy).await?;
            for value in parts.headers.values_mut() {
                if let Ok(text) = value.to_str()
                    && text.contains(&token)
                {
                    *value = sensitive(&text.replace(&token, secret.expose_secret()), &credential)?;
                }
            }
            if let Some(q) = parts.uri.query()
                && q.contains(&token)
            {
                let encoded: String = form_urlencoded::byte_serialize(secret.expose_secret().as_bytes()).collect();
                let pq = format!("{}?{}", parts.uri.path(), q.replace(&token, &encoded));
                let mut uri = parts.uri.clone().into_parts();
                let bad_uri = || unavailable(credential.as_str(), "not valid in a URI".into());
                uri.path_and_query = Some(PathAndQuery::try_from(pq).map_err(|_| bad_uri())?);
                parts.uri = Uri::from_parts(uri).map_err(|_| bad_uri())?;
            }
            if let Some((data, _)) = whole.as_mut()
                && data.windows(token.len()).any(|w| w == token.as_bytes())
            {
                *data = Bytes::from(crate::body::read::replace(
                    data,
                    token.as_bytes(),
                    secret.expose_secret().as_bytes(),
                ));
            }
            applied.push(credential);
        }
        Ok(applied)
    }
}

/// What the headers together show that none of them shows alone (a placeholder or secret split over two).
fn split_only(joined: Found, each: &Found) -> Found {
    let count = |list: &[String], t: &String| list.iter().filter(|x| *x == t).count();
    let mut out = Found::default();
    for token in joined.plain.iter().chain(&joined.disguised) {
        let alone = count(&each.plain, token) + count(&each.disguised, token);
        let together = count(&joined.plain, token) + count(&joined.disguised, token);
        if together > alone && !out.disguised.contains(token) {
            out.disguised.push(token.clone());
        }
    }
    out.secrets = joined
        .secrets
        .into_iter()
        .filter(|s| !each.secrets.contains(s))
        .collect();
    out
}

fn sensitive(value: &str, credential: &CredentialName) -> Result<HeaderValue, ProxyError> {
    let mut v = HeaderValue::from_str(value)
        .map_err(|_| unavailable(credential.as_str(), "not a valid header value".into()))?;
    v.set_sensitive(true);
    Ok(v)
}

fn exfiltration(credential: &str, why: &str) -> ProxyError {
    ProxyError::Exfiltration {
        credential: credential.to_string().into(),
        why: why.to_string(),
    }
}

/// Map a streaming scan's finding to the refusal the sandbox gets.
pub(crate) fn refusal(found: &Found, sandbox: &Sandbox, credentials: &Credentials) -> ProxyError {
    if let Some(credential) = found.secrets.first().and_then(|owners| owners.first()) {
        return ProxyError::SecretExfiltration {
            credential: credential.as_str().into(),
        };
    }
    let token = found.plain.first().or(found.disguised.first());
    let credential = token
        .and_then(|t| credentials.owner_of(sandbox, t))
        .unwrap_or_else(|| "unknown".into());
    exfiltration(credential.as_str(), "in the request body")
}
