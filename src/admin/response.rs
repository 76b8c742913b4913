//! The admin API's answers: JSON bodies, and errors as `{"error": {"code", "message"}}`.

use std::convert::Infallible;

use bytes::Bytes;
use http::header::{ALLOW, CONTENT_TYPE};
use http::{HeaderValue, Request, Response, StatusCode};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use serde_json::{Value, json};

use crate::control::ControlError;

/// An admin response.
pub(crate) type AdminResponse = Response<Full<Bytes>>;

/// The body of an admin-side answer: whole (JSON, pages), or streamed (the console's events).
pub(crate) type Body = UnsyncBoxBody<Bytes, Infallible>;

/// A whole answer as a [`Body`].
pub(crate) fn boxed(resp: AdminResponse) -> Response<Body> {
    resp.map(|b| b.map_err(|never| match never {}).boxed_unsync())
}

/// The largest JSON body the admin API reads.
const MAX_BODY: usize = 64 * 1024;

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

/// The JSON body of a request: an object, at most [`MAX_BODY`] bytes; an empty body is `{}`.
pub(super) async fn body(req: Request<Incoming>) -> Result<Value, AdminResponse> {
    let bytes = match Limited::new(req.into_body(), MAX_BODY).collect().await {
        Ok(b) => b.to_bytes(),
        Err(_) => {
            return Err(error(
                StatusCode::PAYLOAD_TOO_LARGE,
                "body_too_large",
                format!("the body is over {MAX_BODY} bytes, or was cut off"),
            ));
        }
    };
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(json!({}));
    }
    match serde_json::from_slice::<Value>(&bytes) {
        Ok(v) if v.is_object() => Ok(v),
        Ok(_) => Err(error(
            StatusCode::BAD_REQUEST,
            "bad_json",
            "the body must be a JSON object",
        )),
        Err(e) => Err(error(
            StatusCode::BAD_REQUEST,
            "bad_json",
            format!("the body is not JSON: {e}"),
        )),
    }
}

/// 405, naming the methods the endpoint takes.
pub(super) fn not_allowed(allow: &'static str) -> AdminResponse {
    let mut resp = error(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        format!("this endpoint takes {allow}"),
    );
    resp.headers_mut().insert(ALLOW, HeaderValue::from_static(allow));
    resp
}
