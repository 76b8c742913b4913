//! Token issuers: short-lived, narrowly scoped tokens that cordon fetches from an issuer (an OAuth2
//! authorization server, GitHub, AWS STS) and attaches at the proxy, so that no long-lived secret lives in a
//! sandbox.

pub(crate) mod cache;
pub(crate) mod github_app;
pub(crate) mod oauth2;
pub(crate) mod refresh;
pub(crate) mod sts;

use std::fmt;
use std::time::{Duration, SystemTime};

use http::{StatusCode, Uri};

use crate::upstream::outbound::HttpError;

pub(crate) use secrecy::{ExposeSecret, SecretString};

/// How long cordon waits for an issuer's answer.
pub(crate) const ISSUER_TIMEOUT: Duration = Duration::from_secs(10);

/// Issuer-provided text (an error code or description) kept in errors is cut to this many characters.
const MAX_ISSUER_TEXT: usize = 200;

/// A token and when it stops being valid.
pub(crate) struct Token {
    /// The token itself (attached as `Authorization: Bearer <value>`).
    pub(crate) value: SecretString,
    /// When the issuer said it expires; `None` if it did not say.
    pub(crate) expires_at: Option<SystemTime>,
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Token")
            .field("value", &"[redacted]")
            .field("expires_at", &self.expires_at)
            .finish()
    }
}

/// Why a token could not be had. Never contains a secret, a token, a client secret or a JWT; an issuer's
/// error code and description may be included (sanitised and cut short).
#[derive(Debug, Clone, thiserror::Error)]
pub(crate) enum IssuerError {
    /// The issuer could not be reached, timed out, or answered that it is overloaded or failing (5xx, 429).
    #[error("token issuer {issuer} is unavailable: {detail}")]
    Unavailable {
        /// Where (scheme, host, port and path; never a query).
        issuer: String,
        /// What happened.
        detail: String,
    },
    /// The issuer answered and said no (e.g. OAuth2 `invalid_client`, GitHub 401/404).
    #[error(
        "token issuer {issuer} refused (HTTP {status}){}{}",
        fmt_opt(": ", code),
        fmt_opt(": ", description)
    )]
    Refused {
        /// Where.
        issuer: String,
        /// The HTTP status.
        status: u16,
        /// The issuer's error code (OAuth2 `error`), sanitised.
        code: Option<String>,
        /// The issuer's explanation (OAuth2 `error_description`, GitHub `message`), sanitised.
        description: Option<String>,
    },
    /// The issuer answered success but the answer is not a usable token.
    #[error("token issuer {issuer} sent an unusable answer: {detail}")]
    InvalidResponse {
        /// Where.
        issuer: String,
        /// What is wrong (never the body itself).
        detail: String,
    },
    /// The issuer is misconfigured (bad URL, unreadable private key).
    #[error("token issuer misconfigured: {0}")]
    Config(String),
    /// A sign-in cordon holds (`oauth2_refresh`) cannot be used now: not seeded, dead, or its store failed.
    #[error("{0}")]
    SignIn(String),
}

fn fmt_opt(prefix: &str, s: &Option<String>) -> String {
    s.as_ref().map(|s| format!("{prefix}{s}")).unwrap_or_default()
}

impl IssuerError {
    /// True when the issuer is down or timed out (cordon answers 503), false when it refused or the
    /// configuration or answer is wrong.
    #[cfg(test)]
    pub(crate) fn is_unavailable(&self) -> bool {
        matches!(self, IssuerError::Unavailable { .. })
    }

    /// Map a transport failure talking to `issuer`.
    pub(crate) fn from_http(issuer: &str, e: HttpError) -> IssuerError {
        IssuerError::Unavailable {
            issuer: issuer.to_string(),
            detail: e.to_string(),
        }
    }
}

/// Where a request goes, for error messages: scheme, authority and path; never a query.
pub(crate) fn issuer_name(uri: &Uri) -> String {
    format!(
        "{}://{}{}",
        uri.scheme_str().unwrap_or("http"),
        uri.authority().map(|a| a.as_str()).unwrap_or(""),
        uri.path()
    )
}

/// Refuse URLs that would send a credential in the clear: `https`, or `http` to a loopback host only.
// SECURITY: a client secret or signed JWT sent over cleartext HTTP to a non-loopback host can be sniffed.
pub(crate) fn check_url(uri: &Uri, what: &str) -> Result<(), IssuerError> {
    let host = uri.host().unwrap_or("");
    match uri.scheme_str() {
        Some("https") if !host.is_empty() => Ok(()),
        Some("http") if matches!(host, "127.0.0.1" | "localhost" | "[::1]" | "::1") => Ok(()),
        _ => Err(IssuerError::Config(format!(
            "{what} must be an https:// URL (http:// only to a loopback address), got {}",
            issuer_name(uri)
        ))),
    }
}

/// Issuer-provided text made safe for a log line: printable ASCII only, cut short, and with `secret`
/// (when given) removed.
// SECURITY: an issuer echoing the client secret, or injecting control characters into cordon's logs.
pub(crate) fn sanitize(text: &str, secret: Option<&str>) -> String {
    let mut text = text.to_string();
    if let Some(secret) = secret.filter(|s| !s.is_empty()) {
        text = text.replace(secret, "[redacted]");
    }
    let mut out: String = text
        .chars()
        .map(|c| if c == ' ' || c.is_ascii_graphic() { c } else { '?' })
        .take(MAX_ISSUER_TEXT)
        .collect();
    if text.chars().count() > MAX_ISSUER_TEXT {
        out.push_str("...");
    }
    out
}

/// Check a token value from an issuer before it is ever put in a header.
// SECURITY: header injection — a token containing CR/LF or other control characters would split headers.
pub(crate) fn check_token_value(issuer: &str, value: &str) -> Result<(), IssuerError> {
    if value.is_empty() || !value.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(IssuerError::InvalidResponse {
            issuer: issuer.to_string(),
            detail: "the token is empty or contains characters not allowed in a header".to_string(),
        });
    }
    Ok(())
}

/// Describe a JSON decoding failure without quoting the body (which may contain the token).
// SECURITY: serde_json's messages quote unexpected values, which may be the token itself.
pub(crate) fn json_error(issuer: &str, e: &serde_json::Error) -> IssuerError {
    IssuerError::InvalidResponse {
        issuer: issuer.to_string(),
        detail: format!(
            "not the expected JSON ({:?} error at line {} column {})",
            e.classify(),
            e.line(),
            e.column()
        ),
    }
}

/// An OAuth token endpoint's error answer (RFC 6749 §5.2).
#[derive(serde::Deserialize)]
struct OAuthRefusal {
    error: Option<String>,
    error_description: Option<String>,
}

/// What a token endpoint's answer of `status` (not a success) and `body` comes to: unavailable for a status that
/// means "try again later", else refused, with the provider's `error` and description made safe by `clean`.
pub(crate) fn token_refusal(
    issuer: String,
    status: StatusCode,
    body: &[u8],
    clean: impl Fn(&str) -> String,
) -> IssuerError {
    let parsed: Option<OAuthRefusal> = serde_json::from_slice(body).ok();
    let (code, description) = match parsed {
        Some(r) => (r.error.map(|c| clean(&c)), r.error_description.map(|d| clean(&d))),
        None => (None, None),
    };
    if status_is_unavailable(status) {
        return IssuerError::Unavailable {
            issuer,
            detail: format!("HTTP {}{}", status.as_u16(), fmt_opt(": ", &code)),
        };
    }
    IssuerError::Refused {
        issuer,
        status: status.as_u16(),
        code,
        description,
    }
}

/// When a token that `expires_in` seconds (if the answer says) expires.
pub(crate) fn expires_at(issuer: &str, expires_in: Option<u64>) -> Result<Option<SystemTime>, IssuerError> {
    let Some(secs) = expires_in else {
        return Ok(None);
    };
    SystemTime::now()
        .checked_add(Duration::from_secs(secs))
        .map(Some)
        .ok_or_else(|| IssuerError::InvalidResponse {
            issuer: issuer.to_string(),
            detail: format!("expires_in {secs} is out of range"),
        })
}

/// True for statuses meaning "try again later" rather than "no".
pub(crate) fn status_is_unavailable(status: StatusCode) -> bool {
    status.is_server_error() || status == StatusCode::TOO_MANY_REQUESTS || status == StatusCode::REQUEST_TIMEOUT
}

#[cfg(test)]
#[path = "mod_tests.rs"]
mod tests;

#[cfg(test)]
pub(crate) mod test_server {
    //! A one-handler HTTP/1 server on 127.0.0.1 for tests.
    use std::convert::Infallible;
    use std::future::Future;
    use std::net::SocketAddr;
    use std::sync::Arc;

    use bytes::Bytes;
    use http::{Request, Response};
    use http_body_util::{BodyExt, Full};
    use hyper::body::Incoming;
    use hyper_util::rt::TokioIo;
    use tokio::net::TcpListener;

    /// Serve `handler` (given the request head and the whole body) on a fresh loopback port; stops with the runtime.
    pub(crate) async fn serve<H, Fut>(handler: H) -> SocketAddr
    where
        H: Fn(http::request::Parts, Bytes) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Response<Full<Bytes>>> + Send + 'static,
    {
        let listener = match TcpListener::bind("127.0.0.1:0").await {
            Ok(l) => l,
            Err(e) => return fail(e),
        };
        let addr = match listener.local_addr() {
            Ok(a) => a,
            Err(e) => return fail(e),
        };
        let handler = Arc::new(handler);
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let handler = handler.clone();
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |req: Request<Incoming>| {
                        let handler = handler.clone();
                        async move {
                            let (parts, body) = req.into_parts();
                            let body = body.collect().await.map(|b| b.to_bytes()).unwrap_or_default();
                            Ok::<_, Infallible>(handler(parts, body).await)
                        }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        addr
    }

    /// A JSON response.
    pub(crate) fn json(status: u16, body: &str) -> Response<Full<Bytes>> {
        let mut resp = Response::new(Full::new(Bytes::from(body.to_string())));
        *resp.status_mut() = http::StatusCode::from_u16(status).unwrap_or(http::StatusCode::INTERNAL_SERVER_ERROR);
        resp.headers_mut().insert(
            http::header::CONTENT_TYPE,
            http::HeaderValue::from_static("application/json"),
        );
        resp
    }

    #[expect(clippy::panic, reason = "tests")]
    fn fail(e: std::io::Error) -> SocketAddr {
        panic!("test server: {e}")
    }
}
