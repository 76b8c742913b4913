//! The admin API: its own listener (never the proxy's), bearer-token authentication, JSON in and out.
//! Health, readiness and metrics are open (probes and scrapers carry no token); everything under `/v1`
//! needs the token, and is served only over TLS or on loopback ([`listener`]). The console, the approval inbox
//! in the browser, is [`console`]. The OpenAPI description is `docs/openapi.yaml`.

mod access;
mod acted;
mod approvals;
mod console;
mod health;
mod listener;
mod patch;
mod policy;
mod previews;
mod requests;
mod response;
mod router;
mod sandboxes;
mod signins;
mod sources;
mod surface;

pub use listener::{acceptor, serve as serve_listener};
pub use router::Admin;
pub use surface::Surface;

use std::future::Future;
use std::sync::Arc;

use tokio::net::TcpListener;

use crate::reload::Reloader;
use crate::state::ProxyState;

/// Every route: method and path pattern (`{id}` is a sandbox id). `docs/openapi.yaml` describes exactly these,
/// which a test checks.
pub const ROUTES: &[(&str, &str)] = &[
    ("GET", "/healthz"),
    ("GET", "/readyz"),
    ("GET", "/metrics"),
    ("GET", "/v1/sandboxes"),
    ("POST", "/v1/sandboxes"),
    ("GET", "/v1/sandboxes/{id}"),
    ("PATCH", "/v1/sandboxes/{id}"),
    ("DELETE", "/v1/sandboxes/{id}"),
    ("POST", "/v1/sandboxes/{id}/renew"),
    ("POST", "/v1/sandboxes/{id}/credentials"),
    ("GET", "/v1/sandboxes/{id}/ca-bundle"),
    ("POST", "/v1/sandboxes/{id}/rotate-ca"),
    ("DELETE", "/v1/sandboxes/{id}/hold"),
    ("POST", "/v1/sandboxes/{id}/previews"),
    ("DELETE", "/v1/sandboxes/{id}/previews/{preview}"),
    ("POST", "/v1/reload"),
    ("PUT", "/v1/credentials/{name}/refresh-token"),
    ("GET", "/v1/approvals"),
    ("POST", "/v1/approvals/{id}"),
    ("GET", "/v1/grants"),
    ("DELETE", "/v1/grants/{id}"),
    ("GET", "/v1/access"),
    ("POST", "/v1/access/{id}"),
    ("DELETE", "/v1/access/{id}"),
    ("GET", "/v1/replicas"),
];

/// Serve the admin API on `listener` (plain HTTP, no console) until `shutdown` completes.
pub async fn serve(
    listener: TcpListener,
    state: Arc<ProxyState>,
    reloader: Arc<Reloader>,
    shutdown: impl Future<Output = ()>,
) {
    let admin = Arc::new(Admin::without_console(state, reloader));
    let api = listener.local_addr().is_ok_and(|a| a.ip().is_loopback());
    let surface = Surface::Admin {
        api,
        console: false,
        client_certs: false,
    };
    listener::serve(listener, None, surface, admin, shutdown).await;
}
