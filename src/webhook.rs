//! The webhook (`approval.webhook:` in the configuration): cordon POSTs events as JSON to a URL the operator
//! configured (a chat bot, a ticketing hook, ...), so that a person learns there is something to decide or to
//! look at: each new pending approval and each decision (`approval.requested`, `approval.decided`, made by
//! `approval`), a sandbox acted on for its violations (`sandbox.violation`, by `violation`), a credential budget
//! spent (`credential.budget_spent`, by the pipeline). This module knows how to deliver one event, not what it
//! says.
//!
//! Every request carries `X-Cordon-Event` (the event) and `X-Cordon-Timestamp`
//! (unix seconds). With a secret it also carries `X-Cordon-Signature: sha256=<hex>`, the HMAC-SHA256 under the
//! secret of the timestamp, a `.`, and the body exactly as received. A receiver should check it with [`verify`] (or
//! its equivalent) and refuse timestamps more than a few minutes old, so that a captured request cannot be replayed.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use http::{Request, Uri, header};
use http_body_util::Full;
use ring::hmac;
use secrecy::{ExposeSecret, SecretString};

use tokio::task::JoinHandle;

use crate::upstream::outbound::{HttpClient, HttpError};

/// The header naming the event.
pub(crate) const HEADER_EVENT: &str = "x-cordon-event";
/// The header with the unix time of sending, in seconds.
pub(crate) const HEADER_TIMESTAMP: &str = "x-cordon-timestamp";
/// The header with the signature (only with a secret).
pub(crate) const HEADER_SIGNATURE: &str = "x-cordon-signature";

/// The waits before each retry: 250 ms, 1 s, 4 s (one retry after each).
const BACKOFF: backon::ExponentialBuilder = backon::ExponentialBuilder::new()
    .with_min_delay(Duration::from_millis(250))
    .with_factor(4.0)
    .with_max_times(3);
/// The limit of each attempt.
const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(10);

/// Where and how to deliver events.
pub(crate) struct Webhook {
    url: Uri,
    secret: Option<SecretString>,
    client: HttpClient,
    /// The waits between attempts (one retry after each).
    backoff: backon::ExponentialBuilder,
    attempt_timeout: Duration,
}

impl Webhook {
    /// A webhook POSTing to `url`, signed with `secret` if any. A failed delivery is retried 3 times (after 250 ms,
    /// 1 s and 4 s), each attempt limited to 10 s. Credentials in the URL's authority are not used (nor logged).
    pub(crate) fn new(url: Uri, secret: Option<SecretString>, client: HttpClient) -> Webhook {
        Webhook {
            url,
            secret,
            client,
            backoff: BACKOFF,
            attempt_timeout: ATTEMPT_TIMEOUT,
        }
    }

    /// A webhook POSTing to `url`, signed with `secret` if any, through a client that trusts `extra_roots` beside
    /// the built-in roots.
    pub(crate) fn configured(
        url: Uri,
        secret: Option<SecretString>,
        extra_roots: &[rustls_pki_types::CertificateDer<'static>],
    ) -> Result<Webhook, String> {
        Ok(Webhook::new(url, secret, HttpClient::new(extra_roots)?))
    }

    /// The same webhook retrying `times` times, `wait` apart.
    #[cfg(test)]
    pub(crate) fn with_backoff(self, wait: Duration, times: usize) -> Webhook {
        let backoff = backon::ExponentialBuilder::new()
            .with_min_delay(wait)
            .with_factor(1.0)
            .with_max_times(times);
        Webhook { backoff, ..self }
    }

    /// POST `body` as event `event` about `subject` (an approval's or a sandbox's id, for the log). Success is a
    /// 2xx answer; transport errors and 5xx are retried, other answers are not. Failures are logged. Returns
    /// whether it was delivered.
    pub(crate) async fn event(&self, event: &str, subject: &str, body: &serde_json::Value) -> bool {
        self.post(event, subject, body).await
    }

    /// Run `call` with this webhook in the background, if there is a runtime to run it on.
    pub(crate) fn spawn<F, Fut>(self: &Arc<Self>, call: F) -> Option<JoinHandle<bool>>
    where
        F: FnOnce(Arc<Webhook>) -> Fut,
        Fut: Future<Output = bool> + Send + 'static,
    {
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => Some(runtime.spawn(call(self.clone()))),
            Err(_) => {
                tracing::warn!("webhook not called: no async runtime");
                None
            }
        }
    }

    /// Deliver `body` as event `event` about `subject` in the background ([`Webhook::event`]).
    pub(crate) fn send(self: &Arc<Self>, event: &'static str, subject: &str, body: serde_json::Value) {
        let subject = subject.to_owned();
        let _ = self.spawn(move |hook| async move { hook.event(event, &subject, &body).await });
    }

    async fn post(&self, event: &str, id: &str, body: &serde_json::Value) -> bool {
        let url = shown(&self.url);
        let body = match serde_json::to_vec(body) {
            Ok(body) => Bytes::from(body),
            Err(e) => {
                tracing::warn!(%url, event, subject = id, error = %e, "webhook: cannot encode the body");
                return false;
            }
        };
        let mut waits = backon::BackoffBuilder::build(&self.backoff);
        let mut attempt = 0;
        loop {
            attempt += 1;
            let request = match self.request(event, &body) {
                Ok(request) => request,
                Err(e) => {
                    tracing::warn!(%url, event, subject = id, error = %e, "webhook: unusable URL");
                    return false;
                }
            };
            match self.client.send(request, self.attempt_timeout).await {
                Ok((status, _, _)) if status.is_success() => return true,
                Ok((status, _, _)) if status.is_server_error() => {
                    tracing::warn!(%url, event, subject = id, status = status.as_u16(), attempt,
                        "webhook: server error");
                }
                Ok((status, _, _)) => {
                    tracing::warn!(%url, event, subject = id, status = status.as_u16(),
                        "webhook: refused, not retried");
                    return false;
                }
                Err(e) => {
                    tracing::warn!(%url, event, subject = id, error = %failure(&e), attempt,
                        "webhook: not delivered");
                }
            }
            let Some(wait) = waits.next() else {
                tracing::warn!(%url, event, subject = id, attempts = attempt, "webhook: gave up");
                return false;
            };
            tokio::time::sleep(wait).await;
        }
    }

    /// One attempt's request: timestamped (and signed) now.
    fn request(&self, event: &str, body: &Bytes) -> Result<Request<Full<Bytes>>, http::Error> {
        let timestamp = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or(Duration::ZERO)
            .as_secs()
            .to_string();
        let mut builder = Request::post(self.url.clone())
            .header(header::CONTENT_TYPE, "application/json")
            .header(header::USER_AGENT, "cordon")
            .header(HEADER_EVENT, event)
            .header(HEADER_TIMESTAMP, &timestamp);
        if let Some(secret) = &self.secret {
            builder = builder.header(
                HEADER_SIGNATURE,
                sign(secret.expose_secret().as_bytes(), &timestamp, body),
            );
        }
        builder.body(Full::new(body.clone()))
    }
}

/// The signature header value: `sha256=` and the hex HMAC-SHA256 under `secret` of `timestamp`, `.`, `body`.
fn sign(secret: &[u8], timestamp: &str, body: &[u8]) -> String {
    let key = hmac::Key::new(hmac::HMAC_SHA256, secret);
    let tag = hmac::sign(&key, &signed_message(timestamp, body));
    format!("sha256={}", hex::encode(tag.as_ref()))
}

/// Verify a signature as a receiver would: `header` is the `X-Cordon-Signature` value, `timestamp` the
/// `X-Cordon-Timestamp` value and `body` the body as received. The comparison takes constant time. (Checking that
/// the timestamp is recent is up to the receiver.)
pub fn verify(secret: &[u8], timestamp: &str, body: &[u8], header: &str) -> bool {
    let Some(tag) = header.trim().strip_prefix("sha256=").and_then(|h| hex::decode(h).ok()) else {
        return false;
    };
    let key = hmac::Key::new(hmac::HMAC_SHA256, secret);
    hmac::verify(&key, &signed_message(timestamp, body), &tag).is_ok()
}

fn signed_message(timestamp: &str, body: &[u8]) -> Vec<u8> {
    let mut message = Vec::with_capacity(timestamp.len() + 1 + body.len());
    message.extend_from_slice(timestamp.as_bytes());
    message.push(b'.');
    message.extend_from_slice(body);
    message
}

/// The URL as logged: scheme, host, port and path; no credentials, no query.
fn shown(url: &Uri) -> String {
    let host = url.host().unwrap_or("");
    let port = url.port_u16().map(|p| format!(":{p}")).unwrap_or_default();
    format!("{}://{host}{port}{}", url.scheme_str().unwrap_or("http"), url.path())
}

/// What went wrong, without the client's own rendering of the URL (which may hold credentials).
fn failure(e: &HttpError) -> String {
    match e {
        HttpError::Transport { detail, .. } => detail.clone(),
        HttpError::Timeout { timeout, .. } => format!("no answer within {timeout:?}"),
        HttpError::Body { detail, .. } => format!("the response body could not be read: {detail}"),
    }
}

#[cfg(test)]
#[path = "webhook_tests.rs"]
mod tests;
