//! GitHub App installation tokens: cordon signs a short JWT as the App and exchanges it for an installation
//! token (valid about an hour) narrowed to the repositories and permissions one sandbox needs.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use http::{Method, Request, Uri, header};
use http_body_util::Full;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde::{Deserialize, Serialize};

use super::{
    ExposeSecret, ISSUER_TIMEOUT, IssuerError, SecretString, Token, check_token_value, check_url, issuer_name,
    json_error, sanitize, status_is_unavailable,
};
use crate::upstream::outbound::HttpClient;

/// The JWT's `iat` is set this far in the past, allowing for clock drift (GitHub's recommendation).
const JWT_BACKDATE: Duration = Duration::from_secs(60);
/// The JWT's lifetime from now (GitHub allows at most 10 minutes).
const JWT_LIFETIME: Duration = Duration::from_secs(9 * 60);

/// A GitHub App installation, as a token issuer.
pub(crate) struct GitHubApp {
    /// `https://api.github.com`, or an Enterprise (`https://ghe.example/api/v3`) or local URL.
    pub(crate) api_base: Uri,
    /// The App's id (or client id), the JWT's `iss`.
    pub(crate) app_id: String,
    /// The App's RSA private key, PEM (PKCS#1 `RSA PRIVATE KEY` as GitHub issues it, or PKCS#8).
    pub(crate) private_key_pem: SecretString,
    /// The installation to mint tokens for.
    pub(crate) installation_id: u64,
}

/// What one sandbox's token may reach: a subset of the installation's repositories and permissions.
/// Empty fields are omitted (the token then gets everything the installation has).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub(crate) struct Narrowing {
    /// Repository names (without owner).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) repositories: Vec<String>,
    /// Permission name to level, e.g. `"contents": "read"`.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) permissions: BTreeMap<String, String>,
}

#[derive(Serialize)]
struct AppJwtClaims<'a> {
    iat: u64,
    exp: u64,
    iss: &'a str,
}

#[derive(Deserialize)]
struct GithubTokenResponse {
    token: String,
    expires_at: Option<String>,
}

#[derive(Deserialize)]
struct GithubErrorResponse {
    message: Option<String>,
}

impl GitHubApp {
    /// The App JWT (RS256, `iat` = now - 60 s, `exp` = now + 9 min, `iss` = app id).
    pub(crate) fn jwt(&self, now: SystemTime) -> Result<SecretString, IssuerError> {
        let key = EncodingKey::from_rsa_pem(self.private_key_pem.expose_secret().as_bytes())
            .map_err(|_| IssuerError::Config("the GitHub App private key is not a valid RSA PEM key".to_string()))?;
        let now = now
            .duration_since(UNIX_EPOCH)
            .map_err(|_| IssuerError::Config("the system clock is before 1970".to_string()))?;
        let claims = AppJwtClaims {
            iat: now.saturating_sub(JWT_BACKDATE).as_secs(),
            exp: (now + JWT_LIFETIME).as_secs(),
            iss: &self.app_id,
        };
        jsonwebtoken::encode(&Header::new(Algorithm::RS256), &claims, &key)
            .map(SecretString::from)
            .map_err(|_| IssuerError::Config("cannot sign the GitHub App JWT with the private key".to_string()))
    }

    /// `{api_base}/app/installations/{id}/access_tokens`.
    fn endpoint(&self) -> Result<Uri, IssuerError> {
        let base = &self.api_base;
        let url = format!(
            "{}://{}{}/app/installations/{}/access_tokens",
            base.scheme_str().unwrap_or(""),
            base.authority().map(|a| a.as_str()).unwrap_or(""),
            base.path().trim_end_matches('/'),
            self.installation_id
        );
        url.parse()
            .map_err(|_| IssuerError::Config(format!("cannot form the GitHub token URL from {}", issuer_name(base))))
    }

    /// Mint an installation token narrowed by `narrow`.
    pub(crate) async fn fetch(&self, http: &HttpClient, narrow: &Narrowing) -> Result<Token, IssuerError> {
        check_url(&self.api_base, "the GitHub API base URL")?;
        let url = self.endpoint()?;
        let issuer = issuer_name(&url);
        let jwt = self.jwt(SystemTime::now())?;
        let mut auth = http::HeaderValue::from_str(&format!("Bearer {}", jwt.expose_secret()))
            .map_err(|_| IssuerError::Config("the GitHub App JWT cannot form a header".to_string()))?;
        auth.set_sensitive(true);
        let body = serde_json::to_vec(narrow)
            .map_err(|e| IssuerError::Config(format!("cannot encode the token narrowing: {e}")))?;
        let req = Request::builder()
            .method(Method::POST)
            .uri(url)
            .header(header::AUTHORIZATION, auth)
            .header(header::ACCEPT, "application/vnd.github+json")
            .header(header::USER_AGENT, "cordon")
            .header("x-github-api-version", "2022-11-28")
            .header(header::CONTENT_TYPE, "application/json")
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| IssuerError::Config(format!("cannot build the GitHub token request: {e}")))?;

        let (status, headers, body) = http
            .send(req, ISSUER_TIMEOUT)
            .await
            .map_err(|e| IssuerError::from_http(&issuer, e))?;

        if !status.is_success() {
            let message = serde_json::from_slice::<GithubErrorResponse>(&body)
                .ok()
                .and_then(|r| r.message)
                .map(|m| sanitize(&m, Some(jwt.expose_secret())));
            // GitHub signals its rate limit with 403 and x-ratelimit-remaining: 0 (or retry-after).
            let rate_limited = status == http::StatusCode::FORBIDDEN
                && (headers
                    .get("x-ratelimit-remaining")
                    .is_some_and(|v| v.as_bytes() == b"0")
                    || headers.contains_key(header::RETRY_AFTER));
            if status_is_unavailable(status) || rate_limited {
                return Err(IssuerError::Unavailable {
                    issuer,
                    detail: format!("HTTP {}{}", status.as_u16(), super::fmt_opt(": ", &message)),
                });
            }
            return Err(IssuerError::Refused {
                issuer,
                status: status.as_u16(),
                code: None,
                description: message,
            });
        }

        let resp: GithubTokenResponse = serde_json::from_slice(&body).map_err(|e| json_error(&issuer, &e))?;
        check_token_value(&issuer, &resp.token)?;
        let expires_at = match resp.expires_at {
            None => None,
            Some(at) => Some(crate::rfc3339::parse(&at).ok_or_else(|| IssuerError::InvalidResponse {
                detail: format!(
                    "expires_at {:?} is not an RFC 3339 time",
                    sanitize(&at, Some(&resp.token))
                ),
                issuer: issuer.clone(),
            })?),
        };
        Ok(Token {
            value: SecretString::from(resp.token),
            expires_at,
        })
    }
}

#[cfg(test)]
#[path = "github_app_tests.rs"]
mod tests;
