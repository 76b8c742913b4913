//! The client side of `cordon sandbox create|list|show|renew|revoke|env` and `cordon approvals`: a small JSON client
//! for cordon's admin HTTP API (`render` prints its answers).

use std::collections::BTreeMap;
use std::error::Error as _;
use std::time::Duration;

use bytes::Bytes;
use http::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE};
use http::{HeaderValue, Method, Request, StatusCode, Uri};
use http_body_util::{BodyExt, Full, Limited};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use secrecy::{ExposeSecret, SecretString};
use serde_json::Value;

/// How long one request (connect, send, read the whole answer) may take by default.
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// The largest answer body the client reads.
const MAX_BODY: usize = 16 * 1024 * 1024;

/// Where the admin API is and how to authenticate.
#[derive(Debug)]
pub struct AdminClient {
    /// `http://host:port[/prefix]` without a trailing slash.
    base: String,
    /// The `host:port` part of `base`, for error messages.
    authority: String,
    /// The bearer token sent with every request.
    token: SecretString,
    /// How long one request may take.
    timeout: Duration,
    /// The HTTP/1 client.
    client: Client<HttpConnector, Full<Bytes>>,
}

/// What can go wrong talking to the admin API.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The admin API base URL is not usable.
    #[error("bad admin API URL {url:?}: {reason}")]
    BadUrl {
        /// The URL as given.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A local input (token, sandbox id) cannot be sent.
    #[error("{0}")]
    Invalid(String),
    /// The admin API could not be reached.
    #[error("cannot reach the admin API ({reason}); is cordon running with listen.admin = {authority}?")]
    Connect {
        /// The `host:port` of the base URL.
        authority: String,
        /// The underlying error chain.
        reason: String,
    },
    /// The admin API did not answer in time.
    #[error("the admin API did not answer within {0:?}")]
    Timeout(Duration),
    /// The admin API answered with an error status.
    #[error("{message} ({code}, HTTP {}){}", .status.as_u16(), details_suffix(.details))]
    Api {
        /// The HTTP status.
        status: StatusCode,
        /// The machine-readable error code, e.g. `not_found` (`unknown` if the body had none).
        code: String,
        /// The human-readable message.
        message: String,
        /// Further details, possibly none.
        details: Vec<String>,
    },
    /// The answer could not be understood, or the connection broke mid-request.
    #[error("unexpected answer from the admin API: {0}")]
    BadResponse(String),
}

/// Formats `details` as indented lines following the message.
fn details_suffix(details: &[String]) -> String {
    details.iter().map(|d| format!("\n  {d}")).collect()
}

impl AdminClient {
    /// A client for the admin API at `base`, e.g. `http://127.0.0.1:9090` (a bare `127.0.0.1:9090`, as written in
    /// `listen.admin`, means the same). Only plain `http://` is accepted: the admin listener is local.
    /// Whitespace around the token (e.g. a token file's final newline) is ignored.
    pub fn new(base: &str, token: SecretString) -> Result<AdminClient, ClientError> {
        let bad = |reason: &str| bad_url(base, reason);
        let trimmed = base.trim();
        let prefix = if trimmed.contains("://") { "" } else { "http://" };
        let uri = Uri::try_from(format!("{prefix}{trimmed}")).map_err(|e| bad(&e.to_string()))?;
        match uri.scheme_str() {
            Some("http") => {}
            Some("https") => return Err(bad("the admin listener is plain HTTP; use http://")),
            _ => return Err(bad("only http:// URLs are supported")),
        }
        let authority = match uri.authority() {
            Some(a) if a.as_str().contains('@') => return Err(bad("credentials in the URL are not supported")),
            Some(a) if !a.host().is_empty() => a.as_str().to_owned(),
            _ => return Err(bad("no host:port")),
        };
        if uri.query().is_some() {
            return Err(bad("a query string is not allowed"));
        }
        if token.expose_secret().trim().is_empty() {
            return Err(ClientError::Invalid("the admin token is empty".to_owned()));
        }
        bearer(&token)?;
        let base = format!("http://{authority}{}", uri.path().trim_end_matches('/'));
        let mut connector = HttpConnector::new();
        connector.set_nodelay(true);
        let client = Client::builder(TokioExecutor::new()).build(connector);
        Ok(AdminClient {
            base,
            authority,
            token,
            timeout: DEFAULT_TIMEOUT,
            client,
        })
    }

    /// The same client with another per-request timeout (the default is [`DEFAULT_TIMEOUT`]).
    #[must_use]
    #[cfg(test)]
    pub(crate) fn with_timeout(mut self, timeout: Duration) -> AdminClient {
        self.timeout = timeout;
        self
    }

    /// The normalized base URL, without a trailing slash.
    #[cfg(test)]
    pub(crate) fn base(&self) -> &str {
        &self.base
    }

    /// `POST /v1/sandboxes`: create a sandbox; the answer is a Created object (with `credential` and `env`).
    pub async fn create(&self, req: &CreateRequest) -> Result<Value, ClientError> {
        let body = serde_json::to_vec(req).map_err(|e| ClientError::Invalid(format!("cannot encode request: {e}")))?;
        self.call(Method::POST, "/v1/sandboxes".to_owned(), Some(body)).await
    }

    /// `GET /v1/sandboxes`: `{"sandboxes":[View,...]}`.
    pub async fn list(&self) -> Result<Value, ClientError> {
        self.call(Method::GET, "/v1/sandboxes".to_owned(), None).await
    }

    /// `GET /v1/sandboxes/{id}`: one View.
    pub async fn show(&self, id: &str) -> Result<Value, ClientError> {
        self.call(Method::GET, sandbox_path(id, "")?, None).await
    }

    /// `POST /v1/sandboxes/{id}/renew`: extend the sandbox's life by `ttl` (the server's default if `None`).
    pub async fn renew(&self, id: &str, ttl: Option<&str>) -> Result<Value, ClientError> {
        let body = ttl.map_or_else(|| serde_json::json!({}), |ttl| serde_json::json!({ "ttl": ttl }));
        let path = sandbox_path(id, "/renew")?;
        self.call(Method::POST, path, Some(body.to_string().into_bytes())).await
    }

    /// `PATCH /v1/sandboxes/{id}`: another policy (a name, or the sandbox's own); the answer is its View with
    /// `ca_reissued` and the CA in force.
    pub async fn set_policy(&self, id: &str, policy: &Value) -> Result<Value, ClientError> {
        let body = serde_json::json!({ "policy": policy });
        self.call(
            Method::PATCH,
            sandbox_path(id, "")?,
            Some(body.to_string().into_bytes()),
        )
        .await
    }

    /// `DELETE /v1/sandboxes/{id}`: revoke the sandbox; the answer is its View with `revoked_at` set.
    pub async fn revoke(&self, id: &str) -> Result<Value, ClientError> {
        self.call(Method::DELETE, sandbox_path(id, "")?, None).await
    }

    /// `POST /v1/sandboxes/{id}/credentials`: a fresh credential for the sandbox (a Created object).
    pub async fn credentials(&self, id: &str) -> Result<Value, ClientError> {
        self.call(Method::POST, sandbox_path(id, "/credentials")?, None).await
    }

    /// `POST /v1/sandboxes/{id}/previews`: a link to `port` of the sandbox for `user` (a Preview object).
    pub(crate) async fn preview(
        &self,
        id: &str,
        port: u16,
        user: &str,
        ttl: Option<&str>,
    ) -> Result<Value, ClientError> {
        let mut body = serde_json::json!({ "port": port, "user": user });
        if let Some(ttl) = ttl {
            body["ttl"] = serde_json::json!(ttl);
        }
        let path = sandbox_path(id, "/previews")?;
        self.call(Method::POST, path, Some(body.to_string().into_bytes())).await
    }

    /// `DELETE /v1/sandboxes/{id}/previews/{preview}`: end a preview at once.
    pub(crate) async fn close_preview(&self, id: &str, preview: &str) -> Result<Value, ClientError> {
        let path = item_path(&sandbox_path(id, "/previews")?, "a preview", preview, "")?;
        self.call(Method::DELETE, path, None).await
    }

    /// `GET /v1/approvals`: `{"pending":[Approval,...]}`, oldest first.
    pub(crate) async fn approvals(&self) -> Result<Value, ClientError> {
        self.call(Method::GET, "/v1/approvals".to_owned(), None).await
    }

    /// `POST /v1/approvals/{id}`: decide a pending approval; `decision` is `allow` or `deny`, `scope` `once` or
    /// `always` (who decides is the token's principal). The answer is `{"approval": Approval, "decision": {...}}`.
    pub(crate) async fn decide(&self, id: &str, decision: &str, scope: &str) -> Result<Value, ClientError> {
        let body = serde_json::json!({ "decision": decision, "scope": scope });
        let path = item_path("/v1/approvals", "an approval", id, "")?;
        self.call(Method::POST, path, Some(body.to_string().into_bytes())).await
    }

    /// `GET /v1/grants`: `{"grants":[Grant,...]}`, oldest first.
    pub(crate) async fn grants(&self) -> Result<Value, ClientError> {
        self.call(Method::GET, "/v1/grants".to_owned(), None).await
    }

    /// `DELETE /v1/grants/{id}`: remove a standing grant; the answer is `{"removed": id}`.
    pub(crate) async fn revoke_grant(&self, id: &str) -> Result<Value, ClientError> {
        self.call(Method::DELETE, item_path("/v1/grants", "a grant", id, "")?, None)
            .await
    }

    /// `GET /v1/access`: `{"requests":[AccessRequest,...]}`, oldest first.
    pub(crate) async fn access_requests(&self) -> Result<Value, ClientError> {
        self.call(Method::GET, "/v1/access".to_owned(), None).await
    }

    /// `POST /v1/access/{id}`: grant or deny an access request; `decision` is `grant` or `deny`.
    pub(crate) async fn decide_access(&self, id: &str, decision: &str) -> Result<Value, ClientError> {
        let body = serde_json::json!({ "decision": decision });
        let path = item_path("/v1/access", "an access request", id, "")?;
        self.call(Method::POST, path, Some(body.to_string().into_bytes())).await
    }

    /// `DELETE /v1/access/{id}`: end an access grant early.
    pub(crate) async fn revoke_access(&self, id: &str) -> Result<Value, ClientError> {
        self.call(
            Method::DELETE,
            item_path("/v1/access", "an access request", id, "")?,
            None,
        )
        .await
    }

    /// Sends one request and returns the JSON object it answers, within the timeout.
    pub(crate) async fn call(&self, method: Method, path: String, body: Option<Vec<u8>>) -> Result<Value, ClientError> {
        let url = format!("{}{path}", self.base);
        let uri = Uri::try_from(url.as_str()).map_err(|e| bad_url(&url, &e.to_string()))?;
        let mut builder = Request::builder()
            .method(method)
            .uri(uri)
            .header(AUTHORIZATION, bearer(&self.token)?)
            .header(ACCEPT, "application/json");
        if body.is_some() {
            builder = builder.header(CONTENT_TYPE, "application/json");
        }
        let request = builder
            .body(Full::new(Bytes::from(body.unwrap_or_default())))
            .map_err(|e| ClientError::Invalid(format!("cannot build request: {e}")))?;
        match tokio::time::timeout(self.timeout, self.exchange(request)).await {
            Ok(result) => result,
            Err(_) => Err(ClientError::Timeout(self.timeout)),
        }
    }

    /// `POST /v1/sandboxes/{id}/rotate-ca`: a new CA for the sandbox (the answer carries `ca_certificate`).
    pub async fn rotate_ca(&self, id: &str) -> Result<Value, ClientError> {
        self.call(Method::POST, sandbox_path(id, "/rotate-ca")?, None).await
    }

    /// `GET /v1/sandboxes/{id}/ca-bundle`: the PEM bundle the sandbox's CA variables point at.
    pub async fn ca_bundle(&self, id: &str) -> Result<String, ClientError> {
        let url = format!("{}{}", self.base, sandbox_path(id, "/ca-bundle")?);
        let uri = Uri::try_from(url.as_str()).map_err(|e| bad_url(&url, &e.to_string()))?;
        let request = Request::builder()
            .method(Method::GET)
            .uri(uri)
            .header(AUTHORIZATION, bearer(&self.token)?)
            .header(ACCEPT, "application/x-pem-file")
            .body(Full::new(Bytes::new()))
            .map_err(|e| ClientError::Invalid(format!("cannot build request: {e}")))?;
        let (_, bytes) = match tokio::time::timeout(self.timeout, self.answer(request)).await {
            Ok(result) => result?,
            Err(_) => return Err(ClientError::Timeout(self.timeout)),
        };
        String::from_utf8(bytes.to_vec()).map_err(|_| ClientError::BadResponse("the bundle is not text".into()))
    }

    /// Sends `request` and reads the whole answer; an error status becomes [`ClientError::Api`].
    async fn answer(&self, request: Request<Full<Bytes>>) -> Result<(StatusCode, Bytes), ClientError> {
        let response = self
            .client
            .request(request)
            .await
            .map_err(|e| self.transport_error(&e))?;
        let status = response.status();
        let bytes = Limited::new(response.into_body(), MAX_BODY)
            .collect()
            .await
            .map_err(|e| ClientError::BadResponse(format!("cannot read the answer: {e}")))?
            .to_bytes();
        if !status.is_success() {
            return Err(api_error(status, &bytes));
        }
        Ok((status, bytes))
    }

    /// Sends `request`, reads the whole answer and maps it to a JSON object or an error.
    async fn exchange(&self, request: Request<Full<Bytes>>) -> Result<Value, ClientError> {
        let (status, bytes) = self.answer(request).await?;
        let value: Value = serde_json::from_slice(&bytes)
            .map_err(|e| ClientError::BadResponse(format!("HTTP {}, body is not JSON: {e}", status.as_u16())))?;
        if value.is_object() {
            return Ok(value);
        }
        Err(ClientError::BadResponse("the answer is not a JSON object".to_owned()))
    }

    /// Maps a failure to exchange a request, keeping the error's whole source chain.
    fn transport_error(&self, error: &hyper_util::client::legacy::Error) -> ClientError {
        let mut reason = error.to_string();
        let mut source = error.source();
        while let Some(e) = source {
            reason = format!("{reason}: {e}");
            source = e.source();
        }
        if !error.is_connect() {
            return ClientError::BadResponse(format!("the request failed: {reason}"));
        }
        let authority = self.authority.clone();
        ClientError::Connect { authority, reason }
    }
}

/// A [`ClientError::BadUrl`] for `url`.
fn bad_url(url: &str, reason: &str) -> ClientError {
    ClientError::BadUrl {
        url: url.to_owned(),
        reason: reason.to_owned(),
    }
}

/// The `Authorization` header value for `token`, marked sensitive.
fn bearer(token: &SecretString) -> Result<HeaderValue, ClientError> {
    let mut value = HeaderValue::from_str(&format!("Bearer {}", token.expose_secret().trim()))
        .map_err(|_| ClientError::Invalid("the admin token has characters not allowed in HTTP".to_owned()))?;
    value.set_sensitive(true);
    Ok(value)
}

/// Maps a non-2xx answer to [`ClientError::Api`], tolerating bodies that are not in the API's error shape.
fn api_error(status: StatusCode, body: &[u8]) -> ClientError {
    let parsed: Option<Value> = serde_json::from_slice(body).ok();
    let error = parsed.as_ref().and_then(|v| v.get("error"));
    let field = |key: &str| {
        error
            .and_then(|e| e.get(key))
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    let message = field("message").unwrap_or_else(|| {
        let text: String = String::from_utf8_lossy(body).trim().chars().take(300).collect();
        if text.is_empty() {
            status.canonical_reason().unwrap_or("error").to_owned()
        } else {
            text
        }
    });
    let details = error
        .and_then(|e| e.get("details"))
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    ClientError::Api {
        status,
        code: field("code").unwrap_or_else(|| "unknown".to_owned()),
        message,
        details,
    }
}

/// `/v1/sandboxes/{id}{suffix}` with `id` percent-encoded; refuses ids that would change the path's meaning.
fn sandbox_path(id: &str, suffix: &str) -> Result<String, ClientError> {
    item_path("/v1/sandboxes", "a sandbox", id, suffix)
}

/// `{collection}/{id}{suffix}` with `id` percent-encoded; refuses ids that would change the path's meaning.
pub(crate) fn item_path(collection: &str, what: &str, id: &str, suffix: &str) -> Result<String, ClientError> {
    if id.is_empty() || id == "." || id == ".." {
        return Err(ClientError::Invalid(format!("{id:?} is not {what} id")));
    }
    Ok(format!("{collection}/{}{suffix}", encode_segment(id)))
}

/// Percent-encode an id for use as a path segment: `[A-Za-z0-9._~-]` are kept, every other byte becomes `%XX`.
pub(crate) fn encode_segment(id: &str) -> String {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    let mut out = String::with_capacity(id.len());
    for b in id.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'~' | b'-') {
            out.push(char::from(b));
        } else {
            out.push('%');
            out.push(char::from(HEX[usize::from(b >> 4)]));
            out.push(char::from(HEX[usize::from(b & 0x0f)]));
        }
    }
    out
}

/// `cordon sandbox create` arguments body: the JSON sent to `POST /v1/sandboxes`.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct CreateRequest {
    /// The user the sandbox acts for.
    pub user: String,
    /// The policy: a name of the file's policies, or the sandbox's own (an object that `extends` one).
    pub policy: Value,
    /// A chosen sandbox id; the server makes one up if `None`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// A lifetime as a humantime string, e.g. `1h`; the server's default if `None`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ttl: Option<String>,
    /// Free-form labels.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// Source ranges that identify the sandbox without a credential (a VM or container known by address).
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub source_cidrs: Vec<String>,
}

#[cfg(test)]
#[path = "admin_client_tests.rs"]
pub(super) mod tests;
