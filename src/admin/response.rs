//! The admin API's answers: JSON bodies, and errors as `{"error": {"code", "message"}}`.

use bytes::Bytes;
use http::header::CONTENT_TYPE;
use http::{HeaderValue, Response, StatusCode};
use http_body_util::Full;
use serde_json::{Value, json};

use crate::control::ControlError;

/// An admin response.
pub(crate) type AdminResponse = Response<Full<Bytes>>;

/// A JSON answer.
pub(crate) fn json_response(status: StatusCode, body: &Value) -> AdminResponse {
    let text = serde_json::to_vec_pretty(body).unwrap_or_default();
    let mut resp = Response::new(Full::new(Bytes::from(text)));
    *resp.status_mut() = status;
    resp.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    resp
}

/// A JSON error: `{"error": {"code", "message"}}`.
pub(crate) fn error(status: StatusCode, code: &str, message: impl Into<String>) -> AdminResponse {
    json_response(status, &json!({"error": {"code": code, "message": message.into()}}))
}

/// A PEM answer (`application/x-pem-file`).
pub(crate) fn pem_response(text: String) -> AdminResponse {
    let mut resp = Response::new(Full::new(Bytes::from(text)));
    resp.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/x-pem-file"));
    resp
}

/// The answer to a failed control-plane call: its status, code and message (and, for a renewal that would
/// shorten, both expiries).
pub(crate) fn failed(e: ControlError) -> AdminResponse {
    let (status, code) = match &e {
        ControlError::Invalid { .. } => (StatusCode::UNPROCESSABLE_ENTITY, "invalid"),
        ControlError::Exists(_) => (StatusCode::CONFLICT, "exists"),
        ControlError::Overlap { .. } => (StatusCode::CONFLICT, "overlap"),
        ControlError::Declared(_) => (StatusCode::CONFLICT, "declared_in_config"),
        ControlError::NotFound(_) => (StatusCode::NOT_FOUND, "not_found"),
        ControlError::Store(_) => (StatusCode::INTERNAL_SERVER_ERROR, "store_failed"),
        ControlError::Ca(_) => (StatusCode::INTERNAL_SERVER_ERROR, "ca_unavailable"),
        ControlError::Unavailable(_) => (StatusCode::SERVICE_UNAVAILABLE, "store_unavailable"),
        ControlError::Shorter { expires, asked, .. } => {
            let at = crate::rfc3339::unix_seconds;
            let body = json!({"error": {
                "code": "renewal_shorter",
                "message": e.to_string(),
                "expires_at": at(*expires),
                "asked_expires_at": at(*asked),
            }});
            return json_response(StatusCode::CONFLICT, &body);
        }
    };
    if status == StatusCode::SERVICE_UNAVAILABLE {
        tracing::warn!("admin API: {e}");
    }
    if status == StatusCode::INTERNAL_SERVER_ERROR {
        tracing::error!("admin API: {e}");
    }
    error(status, code, e.to_string())
}
