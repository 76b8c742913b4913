//! Masking secrets an upstream echoes back: in response headers, and in uncompressed text bodies up to
//! 1 MiB, the secret is replaced with the sandbox's placeholder (for credentials with `mask_echo`).

use bytes::Bytes;
use http::header::{CONTENT_ENCODING, CONTENT_LENGTH, CONTENT_TYPE};
use http::{HeaderValue, Response};
use hyper::body::Incoming;
use secrecy::{ExposeSecret, SecretString};

use super::body::{MAX_SCANNED_BODY, Read, read, replace, whole};
use crate::body::ProxyBody;

/// The response with every echoed secret replaced by its placeholder.
pub(crate) async fn mask(resp: Response<Incoming>, echo: &[(SecretString, String)]) -> Response<ProxyBody> {
    let (mut parts, body) = resp.into_parts();
    for value in parts.headers.values_mut() {
        if let Ok(text) = value.to_str() {
            let mut masked = text.to_string();
            for (secret, placeholder) in echo {
                masked = masked.replace(secret.expose_secret(), placeholder);
            }
            if masked != text
                && let Ok(v) = HeaderValue::from_str(&masked)
            {
                *value = v;
            }
        }
    }
    let textual = parts
        .headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| {
            let ct = ct.to_ascii_lowercase();
            ct.starts_with("text/") || ct.contains("json") || ct.contains("xml") || ct.contains("javascript")
        });
    // Compressed bodies are passed as they are: cordon does not decompress to look.
    if !textual || parts.headers.contains_key(CONTENT_ENCODING) {
        return Response::from_parts(parts, crate::body::boxed(body));
    }
    let body = match read(crate::body::boxed(body), MAX_SCANNED_BODY).await {
        Ok(Read::Whole(data, trailers)) => {
            let mut text = data.to_vec();
            for (secret, placeholder) in echo {
                text = replace(&text, secret.expose_secret().as_bytes(), placeholder.as_bytes());
            }
            if parts.headers.contains_key(CONTENT_LENGTH) {
                parts.headers.insert(CONTENT_LENGTH, HeaderValue::from(text.len()));
            }
            whole(Bytes::from(text), trailers)
        }
        Ok(Read::TooLarge(rest)) => rest,
        Err(e) => {
            tracing::debug!("the upstream body could not be read for masking: {e}");
            crate::body::empty()
        }
    };
    Response::from_parts(parts, body)
}
