//! OpenBao or HashiCorp Vault, KV version 2: `get("cordon/openai#api_key")` reads the field `api_key`
//! of the secret `cordon/openai` under the configured mount (`GET {addr}/v1/{mount}/data/cordon/openai`).
//! Authentication by a fixed token or by AppRole (the token is cached until shortly before it expires,
//! and renewed by logging in again, also once after a 403).

use std::time::{Duration, Instant};

use bytes::Bytes;
use http::header::{CONTENT_TYPE, HeaderValue};
use http::{Method, Request, StatusCode, Uri};
use http_body_util::Full;
use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;
use tokio::sync::Mutex;

use super::store::{SecretStore, VaultError};
use crate::upstream::outbound::HttpClient;

/// Every request to the server is given this long.
const TIMEOUT: Duration = Duration::from_secs(10);
/// A cached AppRole token is renewed this long (at most) before its lease ends.
const RENEW_MARGIN: Duration = Duration::from_secs(60);
const PATH_RULE: &str = "use \"path#key\", the path made of segments of A-Z a-z 0-9 . _ - separated by '/' \
     (no empty, '.' or '..' segment)";

/// How cordon authenticates to the server.
pub(crate) enum BaoAuth {
    /// A fixed token, sent as `X-Vault-Token`.
    Token(SecretString),
    /// AppRole login: `POST /v1/auth/{mount}/login`.
    AppRole {
        /// The role's id.
        role_id: String,
        /// The secret id.
        secret_id: SecretString,
        /// Where the AppRole auth method is mounted (usually "approle").
        mount: String,
    },
}

impl BaoAuth {
    /// AppRole login at the default mount `approle`.
    #[cfg(test)]
    pub(crate) fn approle(role_id: String, secret_id: SecretString) -> BaoAuth {
        BaoAuth::AppRole {
            role_id,
            secret_id,
            mount: "approle".to_owned(),
        }
    }
}

/// A cached login token.
struct CachedLogin {
    token: SecretString,
    /// When to log in again; `None` for a token without expiry.
    renew_at: Option<Instant>,
}

/// A KV version 2 secrets engine on an OpenBao or HashiCorp Vault server.
pub(crate) struct OpenBao {
    /// The server's base URL without a trailing slash.
    base: String,
    mount: String,
    auth: BaoAuth,
    /// Boxed: the client is large, and [`super::Vault`] holds an `OpenBao` inline.
    client: Box<HttpClient>,
    token: Mutex<Option<CachedLogin>>,
    #[cfg(test)]
    logins: std::sync::atomic::AtomicUsize,
}

#[derive(Deserialize)]
struct KvResponse {
    data: KvData,
}

#[derive(Deserialize)]
struct KvData {
    /// `null` for a deleted or destroyed version.
    data: Option<serde_json::Map<String, serde_json::Value>>,
}

#[derive(Deserialize)]
struct LoginResponse {
    auth: LoginAuth,
}

#[derive(Deserialize)]
struct LoginAuth {
    client_token: String,
    #[serde(default)]
    lease_duration: u64,
}

#[derive(Deserialize)]
struct ErrorsResponse {
    #[serde(default)]
    errors: Vec<String>,
}

/// Check a KV path or mount: '/'-separated segments of `[A-Za-z0-9._-]`, none empty, "." or "..".
fn check_path(path: &str) -> bool {
    !path.is_empty()
        && path.len() <= 512
        && path.split('/').all(|seg| {
            // SECURITY: ".." or "." segments would let a name escape the KV mount (e.g. to sys/ endpoints).
            !seg.is_empty()
                && seg != "."
                && seg != ".."
                && seg
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
        })
}

/// The server's own error messages, short, for the error text.
fn server_errors(body: &Bytes) -> String {
    match serde_json::from_slice::<ErrorsResponse>(body) {
        Ok(e) if !e.errors.is_empty() => {
            let joined = e.errors.join("; ");
            let short: String = joined.chars().take(200).collect();
            format!(" ({short})")
        }
        _ => String::new(),
    }
}

impl OpenBao {
    /// A KV v2 store at `addr` (e.g. `https://bao.internal:8200`), engine mounted at `mount` (e.g. "secret").
    pub(crate) fn new(addr: Uri, mount: String, auth: BaoAuth, client: HttpClient) -> OpenBao {
        let base = addr.to_string().trim_end_matches('/').to_owned();
        OpenBao {
            base,
            mount: mount.trim_matches('/').to_owned(),
            auth,
            client: Box::new(client),
            token: Mutex::new(None),
            #[cfg(test)]
            logins: std::sync::atomic::AtomicUsize::new(0),
        }
    }

    fn uri(&self, path: &str) -> Result<Uri, VaultError> {
        let url = format!("{}/v1/{path}", self.base);
        url.parse().map_err(|e| VaultError::Response {
            what: format!("OpenBao at {}", self.base),
            detail: format!("cannot build the request URL for {path}: {e}"),
        })
    }

    /// Log in with AppRole; returns the new token.
    async fn login(&self, role_id: &str, secret_id: &SecretString, mount: &str) -> Result<CachedLogin, VaultError> {
        let what = format!("OpenBao AppRole login at {}/v1/auth/{mount}/login", self.base);
        if !check_path(mount) {
            return Err(VaultError::Response {
                what,
                detail: "the AppRole mount is not a valid path".to_owned(),
            });
        }
        let body = serde_json::json!({ "role_id": role_id, "secret_id": secret_id.expose_secret() }).to_string();
        let req = Request::builder()
            .method(Method::POST)
            .uri(self.uri(&format!("auth/{mount}/login"))?)
            .header(CONTENT_TYPE, "application/json")
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| VaultError::Response {
                what: what.clone(),
                detail: e.to_string(),
            })?;
        #[cfg(test)]
        self.logins.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let (status, _, body) = self.client.send(req, TIMEOUT).await?;
        if status != StatusCode::OK {
            return Err(VaultError::Status {
                what,
                status,
                detail: server_errors(&body),
            });
        }
        let login: LoginResponse = serde_json::from_slice(&body).map_err(|e| VaultError::Response {
            what: what.clone(),
            detail: format!("unexpected answer (no auth.client_token): {e}"),
        })?;
        let lease = Duration::from_secs(login.auth.lease_duration);
        let renew_at = if lease.is_zero() {
            None
        } else {
            // Renew a fifth of the lease (at most a minute) before it ends.
            Some(Instant::now() + lease - (lease / 5).min(RENEW_MARGIN))
        };
        Ok(CachedLogin {
            token: SecretString::from(login.auth.client_token),
            renew_at,
        })
    }

    /// The token to use; `fresh` forces a new AppRole login (after a 403).
    async fn token(&self, fresh: bool) -> Result<SecretString, VaultError> {
        match &self.auth {
            BaoAuth::Token(token) => Ok(token.clone()),
            BaoAuth::AppRole {
                role_id,
                secret_id,
                mount,
            } => {
                let mut cache = self.token.lock().await;
                if !fresh
                    && let Some(cached) = cache.as_ref()
                    && cached.renew_at.is_none_or(|t| Instant::now() < t)
                {
                    return Ok(cached.token.clone());
                }
                *cache = None;
                let cached = self.login(role_id, secret_id, mount).await?;
                let token = cached.token.clone();
                *cache = Some(cached);
                Ok(token)
            }
        }
    }

    async fn read(&self, uri: &Uri, token: &SecretString) -> Result<(StatusCode, Bytes), VaultError> {
        let mut value = HeaderValue::from_str(token.expose_secret()).map_err(|_| VaultError::Response {
            what: format!("OpenBao at {}", self.base),
            detail: "the token contains characters not allowed in an HTTP header".to_owned(),
        })?;
        value.set_sensitive(true);
        let req = Request::builder()
            .method(Method::GET)
            .uri(uri.clone())
            .header("X-Vault-Token", value)
            .body(Full::new(Bytes::new()))
            .map_err(|e| VaultError::Response {
                what: format!("OpenBao at {}", self.base),
                detail: e.to_string(),
            })?;
        let (status, _, body) = self.client.send(req, TIMEOUT).await?;
        Ok((status, body))
    }
}

impl SecretStore for OpenBao {
    async fn get(&self, name: &str) -> Result<SecretString, VaultError> {
        let bad_name = || VaultError::BadName {
            name: name.to_owned(),
            rule: PATH_RULE,
        };
        let (path, key) = name.split_once('#').ok_or_else(bad_name)?;
        if !check_path(path) || key.is_empty() {
            return Err(bad_name());
        }
        if !check_path(&self.mount) {
            return Err(VaultError::Response {
                what: format!("OpenBao at {}", self.base),
                detail: format!("the KV mount {:?} is not a valid path", self.mount),
            });
        }
        let api_path = format!("{}/data/{path}", self.mount);
        let uri = self.uri(&api_path)?;
        let what = format!("OpenBao read of {api_path} at {}", self.base);
        let mut token = self.token(false).await?;
        let (mut status, mut body) = self.read(&uri, &token).await?;
        if status == StatusCode::FORBIDDEN && matches!(self.auth, BaoAuth::AppRole { .. }) {
            // The cached token may have been revoked or expired early: log in again, once.
            token = self.token(true).await?;
            (status, body) = self.read(&uri, &token).await?;
        }
        match status {
            StatusCode::OK => {}
            StatusCode::NOT_FOUND => {
                return Err(VaultError::NotFound {
                    name: path.to_owned(),
                    vault: format!("{} (mount {})", self.base, self.mount),
                });
            }
            _ => {
                return Err(VaultError::Status {
                    what,
                    status,
                    detail: server_errors(&body),
                });
            }
        }
        let parsed: KvResponse = serde_json::from_slice(&body).map_err(|e| VaultError::Response {
            what: what.clone(),
            detail: format!("not a KV version 2 answer (is {} a KV v2 mount?): {e}", self.mount),
        })?;
        match parsed.data.data.as_ref().and_then(|d| d.get(key)) {
            Some(serde_json::Value::String(s)) => Ok(SecretString::from(s.as_str())),
            Some(_) => Err(VaultError::Response {
                what,
                detail: format!("field {key:?} is not a string"),
            }),
            None => Err(VaultError::NotFound {
                name: name.to_owned(),
                vault: format!("{} (mount {})", self.base, self.mount),
            }),
        }
    }
}

#[cfg(test)]
#[path = "openbao_tests.rs"]
mod tests;
