//! `timeouts:`, as written and validated.

use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;

use super::errors::Errors;
use super::fields::duration;
use super::shapes;

/// `timeouts:`
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "a mapping of keys and values")]
pub(super) struct RawTimeouts {
    /// Dialling the upstream.
    #[schemars(with = "Option<shapes::Duration>")]
    pub(crate) connect: Option<String>,
    /// Receiving a complete request head from the client.
    #[schemars(with = "Option<shapes::Duration>")]
    pub(crate) request_headers: Option<String>,
    /// Receiving the first request head of a connection.
    #[schemars(with = "Option<shapes::Duration>")]
    pub(crate) first_request_headers: Option<String>,
    /// Waiting for the upstream's response head.
    #[schemars(with = "Option<shapes::Duration>")]
    pub(crate) upstream_headers: Option<String>,
    /// Draining in-flight work on shutdown.
    #[schemars(with = "Option<shapes::Duration>")]
    pub(crate) drain: Option<String>,
    /// A TLS handshake, with the client or with the upstream.
    #[schemars(with = "Option<shapes::Duration>")]
    pub(crate) tls_handshake: Option<String>,
    /// A tunnel with no bytes either way.
    #[schemars(with = "Option<shapes::Duration>")]
    pub(crate) idle: Option<String>,
    /// The longest a tunnel may stay open.
    #[schemars(with = "Option<shapes::Duration>")]
    pub(crate) tunnel_max: Option<String>,
}

/// `timeouts:`
#[derive(Debug, Clone)]
pub(crate) struct Timeouts {
    /// Dialling an upstream address.
    pub(crate) connect: Duration,
    /// Receiving a whole request head from a client (slow-header clients are cut off).
    pub(crate) request_headers: Duration,
    /// Receiving the first request head of a connection, counted from the accept (at most `request_headers`).
    pub(crate) first_request_headers: Duration,
    /// Waiting for an upstream's response head.
    pub(crate) upstream_headers: Duration,
    /// How long shutdown waits for in-flight requests and tunnels.
    pub(crate) drain: Duration,
    /// A TLS handshake, with the client (after CONNECT) or with the upstream.
    pub(crate) tls_handshake: Duration,
    /// A tunnel (intercepted or not) with no bytes either way is closed after this.
    pub(crate) idle: Duration,
    /// The longest a tunnel may stay open.
    pub(crate) tunnel_max: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            connect: Duration::from_secs(10),
            request_headers: Duration::from_secs(30),
            first_request_headers: Duration::from_secs(10),
            upstream_headers: Duration::from_secs(60),
            drain: Duration::from_secs(10),
            tls_handshake: Duration::from_secs(10),
            idle: Duration::from_secs(300),
            tunnel_max: Duration::from_secs(24 * 3600),
        }
    }
}

/// `timeouts:`: each a positive duration; the first request head's no longer than any request head's.
pub(super) fn timeouts(errs: &mut Errors, raw: RawTimeouts) -> Timeouts {
    let d = Timeouts::default();
    let first_given = raw.first_request_headers.is_some();
    let mut t = Timeouts {
        connect: duration(errs, "timeouts.connect", raw.connect, d.connect),
        request_headers: duration(errs, "timeouts.request_headers", raw.request_headers, d.request_headers),
        first_request_headers: duration(
            errs,
            "timeouts.first_request_headers",
            raw.first_request_headers,
            d.first_request_headers,
        ),
        upstream_headers: duration(
            errs,
            "timeouts.upstream_headers",
            raw.upstream_headers,
            d.upstream_headers,
        ),
        drain: duration(errs, "timeouts.drain", raw.drain, d.drain),
        tls_handshake: duration(errs, "timeouts.tls_handshake", raw.tls_handshake, d.tls_handshake),
        idle: duration(errs, "timeouts.idle", raw.idle, d.idle),
        tunnel_max: duration(errs, "timeouts.tunnel_max", raw.tunnel_max, d.tunnel_max),
    };
    if t.first_request_headers > t.request_headers {
        if first_given {
            errs.at(
                "timeouts.first_request_headers",
                format!(
                    "{:?} is longer than timeouts.request_headers ({:?}); the first head's deadline is the shorter one",
                    t.first_request_headers, t.request_headers
                ),
            );
        }
        // The default gives way to a shorter request_headers.
        t.first_request_headers = t.request_headers;
    }
    t
}
