//! Signing people in through OpenID Connect: the authorization code flow with PKCE against one configured
//! provider, and the verified ID token turned into a [`Principal`] with the roles its claim gives.
//!
//! The provider is found through its discovery document (`/.well-known/openid-configuration`), fetched in the
//! background at start and again until it answers, so a provider that is down at start delays sign-in only:
//! the admin API's tokens work meanwhile. Its signing keys (JWKS) are fetched with it and again when an ID
//! token names a key they do not hold (at most once every [`KEYS_REFETCH`]).
//!
//! An ID token is accepted only if its signature verifies with one of the provider's public keys under an
//! asymmetric algorithm the provider announces, it names the provider as `iss`, cordon's client as `aud` (and
//! `azp` when there are several), it has not expired, and it carries the nonce of the sign-in it answers; the
//! code exchange carries the PKCE verifier of that same sign-in. Everything else is refused with a reason
//! ([`SignInError`]) that the console shows and the audit record keeps.

mod discovery;
mod error;
mod idtoken;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use arc_swap::ArcSwapOption;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use bytes::Bytes;
use http::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE};
use http::{Method, Request};
use http_body_util::Full;
use secrecy::{ExposeSecret, SecretString};
use sha2::{Digest, Sha256};

use crate::config::console::{Oidc, RoleSource};
use crate::locks::Unpoisoned;
use crate::principal::Principal;
use crate::upstream::outbound::HttpClient;
use discovery::Discovered;
pub(crate) use error::SignInError;
pub(crate) use idtoken::Person;

/// How long a request to the provider may take.
const TIMEOUT: Duration = Duration::from_secs(10);
/// The least time between two fetches of the provider's keys for an unknown `kid`.
const KEYS_REFETCH: Duration = Duration::from_secs(30);

/// One sign-in under way, kept by the console between sending the browser to the provider and its return.
#[derive(Debug, Clone)]
pub(crate) struct Flow {
    /// The `state` sent, which the provider sends back.
    pub(crate) state: String,
    /// The `nonce` the ID token must carry.
    pub(crate) nonce: String,
    /// The PKCE verifier whose S256 challenge was sent.
    pub(crate) verifier: SecretString,
}

/// The configured provider.
pub(crate) struct Provider {
    config: Oidc,
    client_secret: Option<SecretString>,
    redirect_uri: String,
    http: HttpClient,
    found: ArcSwapOption<Discovered>,
    /// When the keys were last fetched for an unknown `kid`.
    refetched: Mutex<Option<Instant>>,
}

impl Provider {
    /// The provider of `config`, for a console reached at `redirect_uri`'s origin; nothing is fetched yet.
    pub(crate) fn new(
        config: Oidc,
        client_secret: Option<SecretString>,
        redirect_uri: String,
        http: HttpClient,
    ) -> Provider {
        Provider {
            config,
            client_secret,
            redirect_uri,
            http,
            found: ArcSwapOption::empty(),
            refetched: Mutex::new(None),
        }
    }

    /// The issuer, as configured.
    pub(crate) fn issuer(&self) -> &str {
        &self.config.issuer
    }

    /// Whether the discovery document and keys are in hand.
    pub(crate) fn ready(&self) -> bool {
        self.found.load().is_some()
    }

    /// Fetch the discovery document and keys until they come, warning at each failure with a growing pause
    /// (1 s doubling to 60 s). Returns once they are in hand.
    pub(crate) async fn discover(&self) {
        let mut pause = Duration::from_secs(1);
        loop {
            match discovery::fetch(&self.http, &self.config.issuer, TIMEOUT).await {
                Ok(found) => {
                    tracing::info!(issuer = %self.config.issuer, "console: the identity provider answered; sign-in is open");
                    self.found.store(Some(Arc::new(found)));
                    return;
                }
                Err(e) => {
                    tracing::warn!(
                        issuer = %self.config.issuer,
                        retry_in = %humantime::format_duration(pause),
                        "console: the identity provider does not answer ({e}); sign-in waits for it, admin tokens work meanwhile"
                    );
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(Duration::from_secs(60));
                }
            }
        }
    }

    /// Start a sign-in: the provider's authorization URL to send the browser to, and the flow to keep.
    pub(crate) fn begin(&self) -> Result<(String, Flow), SignInError> {
        let found = self
            .found
            .load_full()
            .ok_or_else(|| SignInError::NotReady(self.config.issuer.clone()))?;
        let random = |n| crate::secret_file::random_hex(n).map_err(SignInError::Internal);
        let flow = Flow {
            state: random(32)?,
            nonce: random(32)?,
            verifier: SecretString::from(random(32)?),
        };
        let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(flow.verifier.expose_secret().as_bytes()));
        let mut url = found.authorization_endpoint.clone();
        url.query_pairs_mut()
            .append_pair("response_type", "code")
            .append_pair("client_id", &self.config.client_id)
            .append_pair("redirect_uri", &self.redirect_uri)
            .append_pair("scope", &self.config.scopes.join(" "))
            .append_pair("state", &flow.state)
            .append_pair("nonce", &flow.nonce)
            .append_pair("code_challenge", &challenge)
            .append_pair("code_challenge_method", "S256");
        Ok((url.to_string(), flow))
    }

    /// Finish a sign-in: exchange `code` (with the flow's PKCE verifier) and verify the ID token that comes back;
    /// the person's roles are what `roles` (the `console.oidc.roles` in force: a reload may change it) gives.
    pub(crate) async fn finish(&self, flow: &Flow, code: &str, roles: &RoleSource) -> Result<Person, SignInError> {
        let found = self
            .found
            .load_full()
            .ok_or_else(|| SignInError::NotReady(self.config.issuer.clone()))?;
        let id_token = self.exchange(&found, flow, code).await?;
        let keys = match idtoken::key_id(&id_token) {
            Some(kid)
                if !found
                    .keys
                    .keys
                    .iter()
                    .any(|k| k.common.key_id.as_deref() == Some(kid.as_str())) =>
            {
                self.refetch_keys(&found).await.unwrap_or_else(|| found.clone())
            }
            _ => found.clone(),
        };
        let verifier = idtoken::Verifier {
            issuer: &keys.issuer,
            client_id: &self.config.client_id,
            algorithms: &keys.algorithms,
            keys: &keys.keys,
        };
        let claims = verifier.verify(&id_token, &flow.nonce)?;
        idtoken::person(&claims, &self.config.roles_claim, roles)
    }

    /// The keys fetched again, when the last such fetch is long enough ago; the new document is kept.
    async fn refetch_keys(&self, found: &Arc<Discovered>) -> Option<Arc<Discovered>> {
        {
            let mut last = self.refetched.lock().unpoisoned();
            if last.is_some_and(|t| t.elapsed() < KEYS_REFETCH) {
                return None;
            }
            *last = Some(Instant::now());
        }
        match discovery::keys(&self.http, &found.jwks_uri, TIMEOUT).await {
            Ok(keys) => {
                let fresh = Arc::new(Discovered {
                    keys,
                    ..(**found).clone()
                });
                self.found.store(Some(fresh.clone()));
                Some(fresh)
            }
            Err(e) => {
                tracing::warn!(issuer = %self.config.issuer, "console: the identity provider's keys could not be fetched again: {e}");
                None
            }
        }
    }

    /// POST the code to the token endpoint; the ID token of the answer.
    async fn exchange(&self, found: &Discovered, flow: &Flow, code: &str) -> Result<String, SignInError> {
        let body = {
            let mut form = form_urlencoded::Serializer::new(String::new());
            form.append_pair("grant_type", "authorization_code")
                .append_pair("code", code)
                .append_pair("redirect_uri", &self.redirect_uri)
                .append_pair("code_verifier", flow.verifier.expose_secret());
            if self.client_secret.is_none() {
                form.append_pair("client_id", &self.config.client_id);
            }
            form.finish()
        };
        let mut req = Request::builder()
            .method(Method::POST)
            .uri(found.token_endpoint.as_str())
            .header(CONTENT_TYPE, "application/x-www-form-urlencoded")
            .header(ACCEPT, "application/json");
        // RFC 6749 2.3.1: the id and secret are form-encoded before they are joined for Basic.
        if let Some(secret) = &self.client_secret {
            let enc = |s: &str| form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
            let pair = format!("{}:{}", enc(&self.config.client_id), enc(secret.expose_secret()));
            let basic = base64::engine::general_purpose::STANDARD.encode(pair);
            req = req.header(AUTHORIZATION, format!("Basic {basic}"));
        }
        let req = req
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| SignInError::Internal(format!("the token request could not be built: {e}")))?;
        let (status, _, body) = self
            .http
            .send(req, TIMEOUT)
            .await
            .map_err(|e| SignInError::Provider(e.to_string()))?;
        let answer: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
        if !status.is_success() {
            let said = |k: &str| answer.get(k).and_then(serde_json::Value::as_str).unwrap_or_default();
            return Err(SignInError::Provider(format!(
                "the token endpoint answered {status}: {} {}",
                said("error"),
                said("error_description")
            )));
        }
        answer
            .get("id_token")
            .and_then(serde_json::Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| SignInError::Provider("the token endpoint's answer holds no id_token".into()))
    }
}

/// The principal a verified sign-in stands for.
impl Person {
    /// As the admin API and records see it.
    pub(crate) fn principal(&self) -> Principal {
        Principal {
            name: self.name.clone(),
            roles: self.roles,
            via: crate::principal::Via::Oidc,
        }
    }
}
