//! The admin API's answers: JSON bodies, and errors as `{"error": {"code", "message"}}`.

use bytes::Bytes;
use http::header::CONTENT_TYPE;
use http::{HeaderValue, Response, StatusCode};
use http_body_util::Full;
use serde_json::{Value, json};

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
