//! What the admin side says of this replica: `/healthz`, `/readyz` (with why not), `/metrics`, and
//! `GET /v1/replicas`.

use bytes::Bytes;
use http::header::CONTENT_TYPE;
use http::{HeaderValue, Response, StatusCode};
use http_body_util::Full;
use serde_json::json;

use super::response::{AdminResponse, error, json_response};
use crate::state::ProxyState;

/// `GET /readyz`: 200 when this replica can serve, else 503 with every reason it cannot.
pub(super) fn ready(state: &ProxyState) -> AdminResponse {
    let mut problems = Vec::new();
    let generation = state.current();
    let dir = &generation.config.ca.dir;
    if let Err(e) = std::fs::create_dir_all(dir) {
        problems.push(format!("the CA folder {} is not usable: {e}", dir.display()));
    }
    if let Err(e) = state.control.refresh() {
        problems.push(format!("the sandbox store is not readable: {e}"));
    }
    if state.hard_stop.is_cancelled() {
        problems.push("shutting down: the drain deadline passed".to_string());
    } else if state.draining.is_cancelled() {
        problems.push("draining: cordon is stopping, no new connections are taken".to_string());
    }
    // SECURITY: a credential cordon could not supply the last time it tried (its issuer or vault down) makes the
    // replica unready, naming it: every request that needs it would fail here.
    let failing = generation.credentials.secrets().supply.failing();
    for (name, f) in &failing {
        problems.push(format!("credential {name} cannot be supplied now: {}", f.error));
    }
    let credentials: serde_json::Map<String, serde_json::Value> = failing
        .iter()
        .map(|(name, f)| {
            let since = f.since.duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
            (
                name.clone(),
                json!({"state": "failing", "error": f.error, "since": since}),
            )
        })
        .collect();
    let audit = state.audit.health().map(crate::audit::Health::state);
    if let Some(a) = audit.as_ref().filter(|a| a.state != "up") {
        let why = a.error.as_deref().unwrap_or("unknown");
        problems.push(format!("audit records cannot be written ({why}): requests are refused"));
    }
    // A PostgreSQL store that is down leaves the replica ready: known sandboxes keep working (writes get 503),
    // and taking every replica out of service at once would stop them all. It is reported, not failed.
    let store = state.shared().map(|s| s.state());
    if problems.is_empty() {
        json_response(
            StatusCode::OK,
            &json!({"ready": true, "generation": generation.number, "store": store, "audit": audit, "credentials": credentials}),
        )
    } else {
        json_response(
            StatusCode::SERVICE_UNAVAILABLE,
            &json!({"ready": false, "problems": problems, "store": store, "audit": audit, "credentials": credentials}),
        )
    }
}

/// `GET /v1/replicas`: the replicas sharing the PostgreSQL store, from its registry (this one alone otherwise).
pub(super) async fn replicas(state: &ProxyState) -> AdminResponse {
    let Some(shared) = state.shared() else {
        return json_response(
            StatusCode::OK,
            &json!({"shared": false, "live": 1, "replicas": [{"id": "local", "self": true, "live": true}]}),
        );
    };
    match shared.registry.list().await {
        Ok(list) => {
            let live = list.iter().filter(|r| r.live).count();
            json_response(StatusCode::OK, &json!({"shared": true, "live": live, "replicas": list}))
        }
        Err(e) => error(StatusCode::SERVICE_UNAVAILABLE, "store_unavailable", e.to_string()),
    }
}

/// `GET /metrics`: the Prometheus exposition.
pub(super) fn metrics(state: &ProxyState) -> AdminResponse {
    if let Some(audit) = state.audit.health().map(crate::audit::Health::state) {
        state.metrics.audit.set_output(audit.state == "up", audit.dropped);
    }
    let mut resp = Response::new(Full::new(Bytes::from(state.metrics.encode())));
    resp.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(crate::metrics::CONTENT_TYPE));
    resp
}
