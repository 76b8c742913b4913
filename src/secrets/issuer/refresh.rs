//! The OAuth2 refresh-token grant (RFC 6749 §6): cordon trades the refresh token it keeps for a new access
//! token and, where the provider rotates them, a new refresh token. Only the exchange is here; keeping the
//! refresh token (write-ahead, one refresh at a time across replicas) is [`crate::secrets::custody`]'s.

use base64::Engine as _;
use bytes::Bytes;
use http::{Method, Request, Uri, header};
use http_body_util::Full;
use serde::Deserialize;

use super::{
    ExposeSecret, ISSUER_TIMEOUT, IssuerError, SecretString, Token, check_token_value, check_url, expires_at,
    issuer_name, json_error, sanitize, token_refusal,
};
use crate::upstream::outbound::HttpClient;

/// A refresh-token client.
pub(crate) struct RefreshClient {
    /// The token endpoint (`https://`, or `http://` to a loopback address).
    pub(crate) token_url: Uri,
    /// The client id.
    pub(crate) client_id: String,
    /// The client secret (HTTP Basic); `None` for a public client.
    pub(crate) client_secret: Option<SecretString>,
    /// Scope to ask for.
    pub(crate) scope: Option<String>,
}

/// What a refresh gave.
pub(crate) struct Refreshed {
    /// The new access token.
    pub(crate) access: Token,
    /// The new refresh token, when the provider rotated it (`None`: the old one stays valid).
    pub(crate) refresh: Option<SecretString>,
}

#[derive(Deserialize)]
struct RefreshAnswer {
    access_token: String,
    token_type: String,
    expires_in: Option<u64>,
    refresh_token: Option<String>,
}

/// Whether `e` says the refresh token is dead for good (RFC 6749 §5.2 `invalid_grant`: invalid, expired,
/// revoked, or already used), as opposed to a provider that is down or a client that is misconfigured.
pub(crate) fn is_dead_grant(e: &IssuerError) -> bool {
    matches!(e, IssuerError::Refused { code: Some(code), .. } if code == "invalid_grant")
}

impl RefreshClient {
    /// Trade `refresh_token` for a new access token (and, with rotation, a new refresh token).
    pub(crate) async fn refresh(
        &self,
        http: &HttpClient,
        refresh_token: &SecretString,
    ) -> Result<Refreshed, IssuerError> {
        check_url(&self.token_url, "the OAuth2 token URL")?;
        let issuer = issuer_name(&self.token_url);
        let old = refresh_token.expose_secret();
        let mut form: Vec<(&str, &str)> = vec![("grant_type", "refresh_token"), ("refresh_token", old)];
        if let Some(scope) = &self.scope {
            form.push(("scope", scope));
        }
        let mut builder = Request::builder()
            .method(Method::POST)
            .uri(self.token_url.clone())
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .header(header::ACCEPT, "application/json")
            .header(header::USER_AGENT, "cordon");
        let secret = self.client_secret.as_ref().map(|s| s.expose_secret());
        match secret {
            Some(secret) => {
                let enc = |v: &str| {
                    serde_urlencoded::to_string([("v", v)])
                        .map(|p| p.trim_start_matches("v=").to_string())
                        .map_err(|e| IssuerError::Config(format!("cannot form-encode a client credential: {e}")))
                };
                let pair = format!("{}:{}", enc(&self.client_id)?, enc(secret)?);
                let value = format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(pair));
                let mut value = http::HeaderValue::from_str(&value)
                    .map_err(|_| IssuerError::Config("the client credentials cannot form a header".to_string()))?;
                value.set_sensitive(true);
                builder = builder.header(header::AUTHORIZATION, value);
            }
            None => form.push(("client_id", &self.client_id)),
        }
        let body = serde_urlencoded::to_string(&form)
            .map_err(|e| IssuerError::Config(format!("cannot form-encode the token request: {e}")))?;
        let req = builder
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| IssuerError::Config(format!("cannot build the token request: {e}")))?;
        let (status, _headers, body) = http
            .send(req, ISSUER_TIMEOUT)
            .await
            .map_err(|e| IssuerError::from_http(&issuer, e))?;
        // SECURITY: the provider's words never carry the refresh token or the client secret into a log.
        let clean = |text: &str| sanitize(&sanitize(text, Some(old)), secret);
        if !status.is_success() {
            return Err(token_refusal(issuer, status, &body, clean));
        }
        let answer: RefreshAnswer = serde_json::from_slice(&body).map_err(|e| json_error(&issuer, &e))?;
        if !answer.token_type.eq_ignore_ascii_case("bearer") {
            return Err(IssuerError::InvalidResponse {
                detail: format!("token_type {:?} is not Bearer", clean(&answer.token_type)),
                issuer,
            });
        }
        check_token_value(&issuer, &answer.access_token)?;
        if let Some(r) = &answer.refresh_token {
            check_token_value(&issuer, r)?;
        }
        let expires_at = expires_at(&issuer, answer.expires_in)?;
        Ok(Refreshed {
            access: Token {
                value: SecretString::from(answer.access_token),
                expires_at,
            },
            refresh: answer.refresh_token.map(SecretString::from),
        })
    }
}

#[cfg(test)]
#[path = "refresh_tests.rs"]
mod tests;
