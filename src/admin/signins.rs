//! `PUT /v1/credentials/{name}/refresh-token`: seed the refresh token of an `oauth2_refresh` credential (an
//! imported sign-in, or one done again after the last was revoked). The token is sealed into the store; it is
//! never answered back, logged or recorded.

use http::StatusCode;
use secrecy::SecretString;
use serde_json::{Value, json};

use super::acted;
use super::response::{AdminResponse, error, json_response};
use crate::config::credentials::SecretSource;
use crate::state::ProxyState;

/// The longest refresh token taken, in bytes.
const MAX_TOKEN: usize = 8192;

/// Seed `name`'s refresh token from the body's `refresh_token`.
pub(super) async fn seed(state: &ProxyState, name: &str, body: &Value) -> AdminResponse {
    let generation = state.current();
    let Some(spec) = generation.config.credentials.get(name) else {
        return error(StatusCode::NOT_FOUND, "not_found", format!("no credential {name:?}"));
    };
    if !matches!(spec.source, SecretSource::OAuth2Refresh(_)) {
        return error(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid",
            format!("credential {name:?} is not an oauth2_refresh credential; only those hold a refresh token"),
        );
    }
    // SECURITY: a token that could split a header or a log line is refused (and never quoted back).
    let token = match body.get("refresh_token") {
        Some(Value::String(t)) if !t.is_empty() && t.len() <= MAX_TOKEN && t.bytes().all(|b| b.is_ascii_graphic()) => {
            SecretString::from(t.clone())
        }
        Some(Value::String(_)) => {
            return error(
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid",
                format!("refresh_token: must be 1 to {MAX_TOKEN} printable ASCII characters without spaces"),
            );
        }
        _ => {
            return error(
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid",
                "refresh_token: is required, a string (the refresh token to hold)",
            );
        }
    };
    let secrets = generation.credentials.secrets();
    let Some(custody) = secrets.custody() else {
        return error(
            StatusCode::SERVICE_UNAVAILABLE,
            "store_unavailable",
            "the store that keeps refresh tokens is not open",
        );
    };
    match custody.seed(name, &token).await {
        Ok(n) => {
            secrets.forget_token(name).await;
            secrets.supply.note::<()>(name, &Ok(()));
            tracing::info!(credential = name, generation = n, "a refresh token was seeded");
            acted::with(
                json_response(StatusCode::OK, &json!({"credential": name, "generation": n})),
                acted::Acted {
                    detail: Some(format!("credential {name}, generation {n}")),
                    ..acted::Acted::default()
                },
            )
        }
        Err(e) => error(StatusCode::SERVICE_UNAVAILABLE, "store_unavailable", e),
    }
}
