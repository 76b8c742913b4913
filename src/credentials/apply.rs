//! Applying credentials to a request at the proxy, and refusing placeholders that are out of place.
//!
//! Order: every placeholder-shaped token anywhere in the request is accounted for first (SECURITY:
//! credential exfiltration: a placeholder is only ever turned into its secret for the destination it is
//! bound to, by the sandbox it was issued to, over intercepted HTTPS); then bound header credentials are set,
//! replacing whatever the sandbox sent; then the placeholders are swapped for their secrets.

use std::collections::BTreeMap;
use std::sync::Arc;

use base64::Engine;
use http::header::AUTHORIZATION;
use http::request::Parts;
use http::uri::PathAndQuery;
use http::{HeaderValue, Method, Uri};
use secrecy::{ExposeSecret, SecretString};

use super::body::{MAX_SCANNED_BODY, Read};
use super::placeholder::{self, Placeholders};
use super::secrets::Secrets;
use crate::body::ProxyBody;
use crate::config::Config;
use crate::config::credentials::{CredentialSpec, Inject};
use crate::error::ProxyError;
use crate::identity::Sandbox;
use crate::policy::Policy;
use crate::target::Target;
use bytes::Bytes;
use http_body::Body as _;

/// The configured credentials, their placeholders, and where their secrets come from.
pub(crate) struct Credentials {
    specs: Arc<BTreeMap<String, CredentialSpec>>,
    /// Whether any credential is a placeholder (otherwise bodies are never read).
    any_placeholders: bool,
    /// Where the values come from.
    secrets: Secrets,
    /// Placeholder computation and recognition.
    pub(crate) placeholders: Placeholders,
}

/// What `apply` did.
pub(crate) struct Applied {
    /// Names of the credentials applied.
    pub(crate) names: Vec<String>,
    /// The request body (read and rewritten if placeholders were swapped in it).
    pub(crate) body: ProxyBody,
    /// (secret, placeholder) of applied credentials with `mask_echo`, for the response.
    pub(crate) echo: Vec<(SecretString, String)>,
}

/// Where in the request a placeholder was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    Header,
    Query,
    Path,
    /// Inside `Authorization: Basic` (base64): refused, never swapped (use `basic_user` injection).
    Basic,
    /// The request body (read whole up to a limit).
    Body,
}

impl Credentials {
    /// Set up from the configuration: the placeholder key sits beside the vault file.
    pub(crate) fn new(config: &Config) -> Result<Credentials, String> {
        let mut key = config.vault.path.clone();
        key.set_file_name("placeholder.key");
        let mut placeholders = if config.credentials.is_empty() {
            // Nothing to protect: no key file is created for a config without credentials.
            Placeholders::from_key(&[0u8; 32])
        } else {
            Placeholders::load(&key)?
        };
        let pairs: Vec<(&str, &str)> = config
            .sandboxes
            .iter()
            .flat_map(|s| config.credentials.keys().map(move |c| (s.id.as_str(), c.as_str())))
            .collect();
        placeholders.learn(pairs);
        Ok(Credentials::with(config, Secrets::new(config)?, placeholders))
    }

    /// The credentials of `config` with no key file read or made and no secret source opened: for a dry run
    /// (`cordon explain`), which only asks which credentials are bound where. Any secret asked of it is
    /// unavailable.
    pub(crate) fn inert(config: &Config) -> Result<Credentials, String> {
        let placeholders = Placeholders::from_key(&[0u8; 32]);
        Ok(Credentials::with(config, Secrets::inert(config)?, placeholders))
    }

    fn with(config: &Config, secrets: Secrets, placeholders: Placeholders) -> Credentials {
        Credentials {
            any_placeholders: config
                .credentials
                .values()
                .any(|c| matches!(c.inject, Inject::Placeholder { .. })),
            secrets,
            specs: Arc::new(config.credentials.clone()),
            placeholders,
        }
    }

    /// Count token mints in these metrics.
    pub(crate) fn set_metrics(&mut self, metrics: Arc<crate::metrics::Metrics>) {
        self.secrets.set_metrics(metrics);
    }

    /// Where secret values come from.
    pub(crate) fn secrets(&self) -> &Secrets {
        &self.secrets
    }

    /// The placeholders a sandbox may use: (credential, placeholder) for each placeholder credential its
    /// policy allows.
    pub(crate) fn placeholders_for(&self, sandbox: &str, allowed: &[String]) -> Vec<(String, String)> {
        allowed
            .iter()
            .filter(|n| {
                self.specs
                    .get(*n)
                    .is_some_and(|s| matches!(s.inject, Inject::Placeholder { .. }))
            })
            .map(|n| (n.clone(), self.placeholders.value(sandbox, n)))
            .collect()
    }

    /// The credentials of `policy` that may be applied to a request of `method` to `target` and `path`:
    /// bound to it, and only `intercepted` (never over cleartext, where nothing is ever injected and any
    /// placeholder is refused).
    pub(crate) fn usable(
        &self,
        policy: &Policy,
        target: &Target,
        method: &Method,
        path: &str,
        intercepted: bool,
    ) -> Vec<String> {
        if !intercepted {
            return Vec::new();
        }
        policy
            .credentials
            .iter()
            .filter(|name| self.bound(name, target, method, path))
            .cloned()
            .collect()
    }

    /// Whether credential `name` is bound to a request of `method` to `target` and `path`.
    pub(crate) fn bound(&self, name: &str, target: &Target, method: &Method, path: &str) -> bool {
        self.specs
            .get(name)
            .is_some_and(|s| s.binding.matches(target, method, path))
    }

    /// How credential `name` is attached, for explanations.
    pub(crate) fn how(&self, name: &str) -> Option<String> {
        Some(match &self.specs.get(name)?.inject {
            Inject::Header { name: h, .. } => format!("header {h}"),
            Inject::Basic { .. } => "Basic authorization".to_string(),
            Inject::Placeholder { .. } => "placeholder swap".to_string(),
        })
    }

    /// Check and apply credentials to a request going upstream: `usable` are the credentials the decision
    /// found bound to it ([`Credentials::usable`]). Returns the names of the credentials applied.
    pub(crate) async fn apply(
        &self,
        sandbox: &Sandbox,
        policy: &Policy,
        usable: &[String],
        parts: &mut Parts,
        body: ProxyBody,
    ) -> Result<Applied, ProxyError> {
        let allowed = policy.credentials.as_slice();
        // Nothing to apply and no placeholder that could be valid anywhere: nothing to scan either.
        if allowed.is_empty() && !self.any_placeholders {
            return Ok(Applied {
                names: Vec::new(),
                body,
                echo: Vec::new(),
            });
        }
        let usable = |name: &str| usable.iter().any(|u| u == name);
        let body_swaps_possible = allowed.iter().any(|n| {
            self.specs
                .get(n)
                .is_some_and(|s| matches!(s.inject, Inject::Placeholder { body: true, .. }))
                && usable(n)
        });
        // A declared length over the limit is refused before a byte is read (the client has not sent the body
        // yet if it waits for 100-continue, and no reset cuts off the answer).
        let declared = parts
            .headers
            .get(http::header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<usize>().ok());
        if body_swaps_possible && declared.is_some_and(|n| n > MAX_SCANNED_BODY) {
            return Err(ProxyError::PayloadTooLarge {
                limit: MAX_SCANNED_BODY,
            });
        }
        // Bodies are read (up to a limit) only where placeholders exist at all.
        let (mut whole, mut body) = (None, Some(body));
        if self.any_placeholders && !body.as_ref().is_some_and(|b| b.is_end_stream()) {
            let taken = body.take().unwrap_or_else(crate::body::empty);
            match super::body::read(taken, MAX_SCANNED_BODY).await {
                Ok(Read::Whole(data, trailers)) => whole = Some((data, trailers)),
                Ok(Read::TooLarge(rest)) if body_swaps_possible => {
                    drop(rest);
                    return Err(ProxyError::PayloadTooLarge {
                        limit: MAX_SCANNED_BODY,
                    });
                }
                Ok(Read::TooLarge(rest)) => body = Some(rest),
                Err(e) => {
                    return Err(ProxyError::BadRequest {
                        code: "body_unreadable",
                        message: format!("the request body could not be read: {e}"),
                    });
                }
            }
        }
        let mut texts = self.texts(parts);
        if let Some((data, _)) = &whole {
            texts.push((Place::Body, String::from_utf8_lossy(data).into_owned()));
        }
        // Account for every placeholder-shaped token.
        let mut swaps: Vec<(String, String)> = Vec::new();
        for (place, text) in texts {
            for token in placeholder::find(&text) {
                // The sandbox's own placeholders are computed (run-time sandboxes are not in the learned map).
                let own = self
                    .specs
                    .keys()
                    .find(|c| self.placeholders.value(&sandbox.id, c) == token);
                let credential = match (own, self.placeholders.owner(token)) {
                    (Some(credential), _) => credential.clone(),
                    (None, Some((_, credential))) => {
                        return Err(exfiltration(credential, "another sandbox's placeholder"));
                    }
                    (None, None) => return Err(exfiltration("unknown", "a placeholder cordon did not issue")),
                };
                let in_query_ok = self
                    .specs
                    .get(&credential)
                    .is_some_and(|s| matches!(s.inject, Inject::Placeholder { query: true, .. }));
                let in_body_ok = self
                    .specs
                    .get(&credential)
                    .is_some_and(|s| matches!(s.inject, Inject::Placeholder { body: true, .. }));
                let placeholder_kind = self
                    .specs
                    .get(&credential)
                    .is_some_and(|s| matches!(s.inject, Inject::Placeholder { .. }));
                let place_ok = match place {
                    Place::Header => true,
                    Place::Query => in_query_ok,
                    Place::Body => in_body_ok,
                    Place::Path | Place::Basic => false,
                };
                if !(placeholder_kind && place_ok && usable(&credential)) {
                    return Err(exfiltration(&credential, "sent where it is not bound"));
                }
                if !swaps.iter().any(|(c, _)| c == &credential) {
                    swaps.push((credential, token.to_string()));
                }
            }
        }
        let mut applied = Vec::new();
        let mut echo: Vec<(SecretString, String)> = Vec::new();
        let mut remember = |spec: &CredentialSpec, secret: &SecretString| {
            if spec.mask_echo {
                echo.push((secret.clone(), self.placeholders.value(&sandbox.id, &spec.name)));
            }
        };
        // Header credentials bound to this destination.
        for name in allowed {
            let Some(spec) = self.specs.get(name) else { continue };
            if !usable(name) {
                continue;
            }
            match &spec.inject {
                Inject::Header { name: header, template } => {
                    let secret = self.secret(spec, policy).await?;
                    let value = template.replace("{secret}", secret.expose_secret());
                    parts.headers.insert(header.clone(), sensitive(&value, name)?);
                    remember(spec, &secret);
                    applied.push(name.clone());
                }
                Inject::Basic { user } => {
                    let secret = self.secret(spec, policy).await?;
                    let pair = format!("{user}:{}", secret.expose_secret());
                    let value = format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(pair));
                    parts.headers.insert(AUTHORIZATION, sensitive(&value, name)?);
                    remember(spec, &secret);
                    applied.push(name.clone());
                }
                Inject::Placeholder { .. } => {}
            }
        }
        // Placeholders swapped for their secrets.
        for (credential, token) in swaps {
            let Some(spec) = self.specs.get(&credential) else {
                continue;
            };
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
                uri.path_and_query = Some(
                    PathAndQuery::try_from(pq).map_err(|_| unavailable(&credential, "not valid in a URI".into()))?,
                );
                parts.uri = Uri::from_parts(uri).map_err(|_| unavailable(&credential, "not valid in a URI".into()))?;
            }
            if let Some((data, _)) = whole.as_mut()
                && data.windows(token.len()).any(|w| w == token.as_bytes())
            {
                *data = Bytes::from(super::body::replace(
                    data,
                    token.as_bytes(),
                    secret.expose_secret().as_bytes(),
                ));
            }
            remember(spec, &secret);
            applied.push(credential);
        }
        let body = match (whole, body) {
            (Some((data, trailers)), _) => {
                if parts.headers.contains_key(http::header::CONTENT_LENGTH) {
                    parts
                        .headers
                        .insert(http::header::CONTENT_LENGTH, HeaderValue::from(data.len()));
                }
                super::body::whole(data, trailers)
            }
            (None, Some(b)) => b,
            (None, None) => crate::body::empty(),
        };
        Ok(Applied {
            names: applied,
            body,
            echo,
        })
    }

    /// Every text of the request a placeholder could hide in.
    fn texts(&self, parts: &Parts) -> Vec<(Place, String)> {
        let mut out: Vec<(Place, String)> = parts
            .headers
            .values()
            .map(|v| (Place::Header, String::from_utf8_lossy(v.as_bytes()).into_owned()))
            .collect();
        // Basic credentials hide the placeholder in base64: look inside them too.
        for v in parts.headers.values() {
            if let Some(decoded) = v
                .to_str()
                .ok()
                .and_then(|t| t.strip_prefix("Basic ").or_else(|| t.strip_prefix("basic ")))
                .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b.trim()).ok())
            {
                out.push((Place::Basic, String::from_utf8_lossy(&decoded).into_owned()));
            }
        }
        out.push((Place::Path, decode(parts.uri.path())));
        if let Some(q) = parts.uri.query() {
            out.push((Place::Query, decode(q)));
        }
        out
    }

    async fn secret(&self, spec: &CredentialSpec, policy: &Policy) -> Result<SecretString, ProxyError> {
        let narrowed = policy
            .credential_scope
            .get(&spec.name)
            .map(|o| (policy.name.as_str(), o));
        match self.secrets.value(spec, narrowed).await {
            Ok(v) if super::secrets::header_safe(&v) => Ok(v),
            Ok(_) => Err(unavailable(
                &spec.name,
                "the value has characters a header cannot carry".into(),
            )),
            Err(detail) => {
                tracing::warn!(credential = %spec.name, "credential unavailable: {detail}");
                Err(unavailable(&spec.name, detail))
            }
        }
    }
}

/// Percent-decoded (placeholders are plain ASCII, but a sandbox may encode them to slip past a scan).
fn decode(text: &str) -> String {
    form_urlencoded::parse(text.as_bytes())
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join("&")
        + text
}

fn sensitive(value: &str, credential: &str) -> Result<HeaderValue, ProxyError> {
    let mut v = HeaderValue::from_str(value).map_err(|_| unavailable(credential, "not a valid header value".into()))?;
    v.set_sensitive(true);
    Ok(v)
}

fn exfiltration(credential: &str, why: &str) -> ProxyError {
    ProxyError::Exfiltration {
        credential: credential.to_string(),
        why: why.to_string(),
    }
}

fn unavailable(credential: &str, detail: String) -> ProxyError {
    ProxyError::CredentialUnavailable {
        credential: credential.to_string(),
        detail,
    }
}
