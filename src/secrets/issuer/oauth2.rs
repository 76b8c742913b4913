//! OAuth2 client credentials (RFC 6749 §4.4): cordon authenticates as a client and receives a short-lived
//! access token, optionally narrowed by `scope`, `audience` (Auth0 and others) or `resource` (RFC 8707).

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

/// How the client authenticates to the token endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum ClientAuth {
    /// `client_secret_basic`: HTTP Basic with the form-encoded id and secret (RFC 6749 §2.3.1).
    #[default]
    Basic,
    /// `client_secret_post`: `client_id` and `client_secret` in the form body.
    Post,
}

/// An OAuth2 client-credentials token issuer.
pub(crate) struct ClientCredentials {
    /// The token endpoint (`https://`, or `http://` to a loopback address).
    pub(crate) token_url: Uri,
    /// The client id.
    pub(crate) client_id: String,
    /// The client secret.
    pub(crate) client_secret: SecretString,
    /// Space-separated scopes to ask for.
    pub(crate) scope: Option<String>,
    /// The `audience` parameter (non-standard, used by Auth0, Okta and others).
    pub(crate) audience: Option<String>,
    /// The `resource` parameter (RFC 8707 resource indicator).
    pub(crate) resource: Option<String>,
    /// How the client authenticates.
    pub(crate) auth: ClientAuth,
}

#[derive(Deserialize)]
struct OAuthTokenResponse {
    access_token: String,
    token_type: String,
    expires_in: Option<u64>,
}

/// `application/x-www-form-urlencoded` encoding of one value.
fn form_encode(value: &str) -> Result<String, IssuerError> {
    let pair = serde_urlencoded::to_string([("v", value)])
        .map_err(|e| IssuerError::Config(format!("cannot form-encode a client credential: {e}")))?;
    Ok(pair.trim_start_matches("v=").to_string())
}

impl ClientCredentials {
    /// Ask the token endpoint for a new access token.
    pub(crate) async fn fetch(&self, http: &HttpClient) -> Result<Token, IssuerError> {
        check_url(&self.token_url, "the OAuth2 token URL")?;
        let issuer = issuer_name(&self.token_url);
        let secret = self.client_secret.expose_secret();

        let mut form: Vec<(&str, &str)> = vec![("grant_type", "client_credentials")];
        for (name, value) in [
            ("scope", &self.scope),
            ("audience", &self.audience),
            ("resource", &self.resource),
        ] {
            if let Some(value) = value {
                form.push((name, value));
            }
        }
        let mut builder = Request::builder()
            .method(Method::POST)
            .uri(self.token_url.clone())
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .header(header::ACCEPT, "application/json")
            .header(header::USER_AGENT, "cordon");
        match self.auth {
            ClientAuth::Basic => {
                let pair = format!("{}:{}", form_encode(&self.client_id)?, form_encode(secret)?);
                let value = format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(pair));
                let mut value = http::HeaderValue::from_str(&value)
                    .map_err(|_| IssuerError::Config("the client credentials cannot form a header".to_string()))?;
                value.set_sensitive(true);
                builder = builder.header(header::AUTHORIZATION, value);
            }
            ClientAuth::Post => {
                form.push(("client_id", &self.client_id));
                form.push(("client_secret", secret));
            }
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

        if !status.is_success() {
            return Err(token_refusal(issuer, status, &body, |t| sanitize(t, Some(secret))));
        }

        let resp: OAuthTokenResponse = serde_json::from_slice(&body).map_err(|e| json_error(&issuer, &e))?;
        if !resp.token_type.eq_ignore_ascii_case("bearer") {
            return Err(IssuerError::InvalidResponse {
                detail: format!(
                    "token_type {:?} is not Bearer",
                    sanitize(&resp.token_type, Some(&resp.access_token))
                ),
                issuer,
            });
        }
        check_token_value(&issuer, &resp.access_token)?;
        let expires_at = expires_at(&issuer, resp.expires_in)?;
        Ok(Token {
            value: SecretString::from(resp.access_token),
            expires_at,
        })
    }
}

#[cfg(test)]
#[path = "oauth2_tests.rs"]
mod tests;
