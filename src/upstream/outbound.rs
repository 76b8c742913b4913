//! cordon's own small HTTP client for vaults and token issuers (not sandbox traffic: these requests are
//! cordon's, to services the operator configured, so they do not go through the sandbox address guard).
//! TLS is always verified against the built-in roots plus the operator's extra roots.

use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, Request, StatusCode};
use http_body_util::{BodyExt, Full, Limited};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use rustls_pki_types::CertificateDer;

/// Responses larger than this are refused (a token or a secret is small).
const MAX_BODY: usize = 1024 * 1024;

/// Why a request to a vault or issuer failed. Messages never contain request bodies or secrets.
#[derive(Debug, thiserror::Error)]
pub(crate) enum HttpError {
    /// Connecting or sending failed.
    #[error("{url}: {detail}")]
    Transport {
        /// Where (scheme, host, port and path; never a query).
        url: String,
        /// What happened.
        detail: String,
    },
    /// No answer in time.
    #[error("{url}: no answer within {timeout:?}")]
    Timeout {
        /// Where.
        url: String,
        /// The limit.
        timeout: Duration,
    },
    /// The response body was larger than 1 MiB or unreadable.
    #[error("{url}: the response body could not be read: {detail}")]
    Body {
        /// Where.
        url: String,
        /// What happened.
        detail: String,
    },
}

/// A verified HTTP(S) client for cordon's own requests.
#[derive(Clone)]
pub(crate) struct HttpClient {
    client: Client<HttpsConnector<HttpConnector>, Full<Bytes>>,
}

impl HttpClient {
    /// A client trusting the built-in roots and `extra_roots`.
    pub(crate) fn new(extra_roots: &[CertificateDer<'static>]) -> Result<HttpClient, String> {
        let tls = crate::upstream::pool::client_config(extra_roots)?;
        let https = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_or_http()
            .enable_http1()
            .build();
        Ok(HttpClient {
            client: Client::builder(TokioExecutor::new()).build(https),
        })
    }

    /// Send `req` and read the whole response (at most 1 MiB) within `timeout`.
    pub(crate) async fn send(
        &self,
        req: Request<Full<Bytes>>,
        timeout: Duration,
    ) -> Result<(StatusCode, HeaderMap, Bytes), HttpError> {
        let uri = req.uri();
        let url = format!(
            "{}://{}{}",
            uri.scheme_str().unwrap_or("http"),
            uri.authority().map(|a| a.as_str()).unwrap_or(""),
            uri.path()
        );
        let exchange = async {
            let resp = self.client.request(req).await.map_err(|e| HttpError::Transport {
                url: url.clone(),
                detail: error_chain(&e),
            })?;
            let (parts, body) = resp.into_parts();
            let body = Limited::new(body, MAX_BODY)
                .collect()
                .await
                .map_err(|e| HttpError::Body {
                    url: url.clone(),
                    detail: e.to_string(),
                })?
                .to_bytes();
            Ok((parts.status, parts.headers, body))
        };
        match tokio::time::timeout(timeout, exchange).await {
            Ok(r) => r,
            Err(_) => Err(HttpError::Timeout { url, timeout }),
        }
    }
}

fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}
