//! `limits:`: connection caps, request-head and WebSocket sizes, and the rates, caps and byte budgets per
//! sandbox, per user and per source address, as written and validated.

use std::num::NonZeroU32;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;

use super::errors::Errors;
use super::fields::{A_COUNT, bytes, duration, whole};
use super::scalars::Whole;
use super::shapes;
use crate::limits::Rate;

/// `limits:`
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "a mapping of keys and values")]
pub(super) struct RawLimits {
    /// Open client connections at once.
    pub(crate) max_connections: Option<Whole>,
    /// Request line plus headers.
    #[schemars(with = "Option<shapes::Size>")]
    pub(crate) max_request_header_bytes: Option<String>,
    /// Per-sandbox rates, caps and byte budgets.
    pub(crate) per_sandbox: Option<RawSandboxLimits>,
    /// Per-user rates and caps.
    pub(crate) per_user: Option<RawUserLimits>,
    /// Failed proxy authentications per (source address, claimed sandbox id).
    pub(crate) auth_failures: Option<RawRate>,
    /// Per source address, before a sandbox is known.
    pub(crate) per_source: Option<RawSourceLimits>,
    /// The largest WebSocket message relayed, either way.
    #[schemars(with = "Option<shapes::Size>")]
    pub(crate) websocket_message: Option<String>,
    /// The largest WebSocket frame relayed, either way.
    #[schemars(with = "Option<shapes::Size>")]
    pub(crate) websocket_frame: Option<String>,
}

/// `limits.per_sandbox:`
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "a mapping of keys and values")]
pub(super) struct RawSandboxLimits {
    /// Requests (and CONNECTs) per second.
    pub(crate) requests: Option<RawRate>,
    /// Requests per second to one host.
    pub(crate) per_host: Option<RawRate>,
    /// New connections and tunnels per second.
    pub(crate) connections: Option<RawRate>,
    /// Open connections plus tunnels.
    pub(crate) max_open: Option<Whole>,
    /// Upload bytes per `budget_window`.
    #[schemars(with = "Option<shapes::Size>")]
    pub(crate) upload: Option<String>,
    /// Download bytes per `budget_window`.
    #[schemars(with = "Option<shapes::Size>")]
    pub(crate) download: Option<String>,
    /// The byte budgets' window.
    #[schemars(with = "Option<shapes::Duration>")]
    pub(crate) budget_window: Option<String>,
}

/// `limits.per_user:`
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "a mapping of keys and values")]
pub(super) struct RawUserLimits {
    /// Requests per second over all the user's sandboxes.
    pub(crate) requests: Option<RawRate>,
    /// Open connections plus tunnels over all the user's sandboxes.
    pub(crate) max_open: Option<Whole>,
    /// Jails the user may run at once on this host.
    pub(crate) jails: Option<Whole>,
}

/// `limits.per_source:`
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "a mapping of keys and values")]
pub(super) struct RawSourceLimits {
    /// Connections from one address that have not authenticated yet.
    pub(crate) unauthenticated: Option<Whole>,
    /// Failed proxy authentications from one address, whatever sandbox they name.
    pub(crate) auth_failures: Option<RawRate>,
}

/// A rate: `{ per_second: 50, burst: 100 }`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "a rate such as { per_second: 50, burst: 100 }")]
pub(super) struct RawRate {
    /// Sustained rate.
    pub(crate) per_second: Whole,
    /// At once (default: `per_second`).
    pub(crate) burst: Option<Whole>,
}

/// `limits:`
#[derive(Debug, Clone)]
pub(crate) struct LimitsConfig {
    /// Client connections open at once; more are refused with 503.
    pub(crate) max_connections: usize,
    /// Request line plus headers; larger heads get 431.
    pub(crate) max_request_header_bytes: usize,
    /// Connections from one source address that have not authenticated yet; more are refused.
    pub(crate) unauthenticated_per_source: usize,
    /// Rates, caps and byte budgets per sandbox, per user and per source address.
    pub(crate) rates: crate::limits::LimitSpec,
    /// The largest WebSocket message relayed either way; a larger one closes the WebSocket with 1009.
    pub(crate) websocket_message: usize,
    /// The largest WebSocket frame relayed either way; a larger one closes the WebSocket with 1009.
    pub(crate) websocket_frame: usize,
}

impl Default for LimitsConfig {
    fn default() -> Self {
        LimitsConfig {
            max_connections: 4096,
            max_request_header_bytes: 64 * 1024,
            unauthenticated_per_source: 256,
            rates: default_rates(),
            websocket_message: 16 * 1024 * 1024,
            websocket_frame: 16 * 1024 * 1024,
        }
    }
}

/// The rates and caps in force when the file sets none: generous for one agent, a bound for a runaway one.
/// Byte budgets are off unless configured.
pub fn default_rates() -> crate::limits::LimitSpec {
    use crate::limits::Rate;
    use std::num::NonZeroU32;
    let rate = |per_second: u32, burst: u32| {
        NonZeroU32::new(per_second)
            .zip(NonZeroU32::new(burst))
            .map(|(per_second, burst)| Rate { per_second, burst })
    };
    crate::limits::LimitSpec {
        sandbox_requests: rate(100, 200),
        user_requests: rate(500, 1000),
        host_requests: None,
        sandbox_connections: rate(50, 100),
        sandbox_open: Some(512),
        user_open: Some(2048),
        budget_window: Duration::from_secs(3600),
        sandbox_upload: None,
        sandbox_download: None,
        auth_failures: rate(5, 20),
        source_auth_failures: rate(50, 200),
    }
}

fn count(errs: &mut Errors, path: &str, n: i64, what: &str) -> Option<u32> {
    match u32::try_from(n) {
        Ok(n) if n >= 1 => Some(n),
        _ => {
            errs.at(path, format!("{n} must be at least 1 {what}"));
            None
        }
    }
}

/// A rate, or `None` (unlimited) when absent.
fn rate(errs: &mut Errors, path: &str, raw: Option<RawRate>, default: Option<Rate>) -> Option<Rate> {
    let Some(raw) = raw else { return default };
    let at = format!("{path}.per_second");
    let per_second = whole(errs, &at, Some(raw.per_second), A_COUNT).and_then(|n| count(errs, &at, n, "per second"));
    let at = format!("{path}.burst");
    let burst = match raw.burst {
        None => per_second,
        b => whole(errs, &at, b, A_COUNT).and_then(|n| count(errs, &at, n, "(requests at once)")),
    };
    let (per_second, burst) = (per_second?, burst?);
    Some(Rate {
        per_second: NonZeroU32::new(per_second)?,
        burst: NonZeroU32::new(burst)?,
    })
}

/// `limits:`: caps, sizes, and the rates, caps and budgets per sandbox, user and source address.
pub(super) fn limits(errs: &mut Errors, raw: RawLimits) -> LimitsConfig {
    let mut limits = LimitsConfig::default();
    if let Some(n) = whole(errs, "limits.max_connections", raw.max_connections, A_COUNT) {
        match usize::try_from(n) {
            Ok(n) if n >= 1 => limits.max_connections = n,
            _ => errs.at("limits.max_connections", format!("{n} must be at least 1")),
        }
    }
    if let Some(text) = raw.max_request_header_bytes {
        match text.parse::<bytesize::ByteSize>() {
            Ok(size) if (1024..=1024 * 1024).contains(&size.as_u64()) => {
                limits.max_request_header_bytes = usize::try_from(size.as_u64()).unwrap_or(64 * 1024);
            }
            Ok(_) => errs.at(
                "limits.max_request_header_bytes",
                format!("{text:?} is out of range; choose between \"1KiB\" and \"1MiB\""),
            ),
            Err(e) => errs.at(
                "limits.max_request_header_bytes",
                format!("{text:?} is not a size ({e}); write e.g. \"64KiB\""),
            ),
        }
    }
    let ws = |errs: &mut Errors, path: &str, raw: Option<String>, default: usize| -> usize {
        let Some(text) = raw else { return default };
        match text.parse::<bytesize::ByteSize>() {
            Ok(size) if (1024..=1024 * 1024 * 1024).contains(&size.as_u64()) => {
                usize::try_from(size.as_u64()).unwrap_or(default)
            }
            Ok(_) => {
                errs.at(
                    path,
                    format!("{text:?} is out of range; choose between \"1KiB\" and \"1GiB\""),
                );
                default
            }
            Err(e) => {
                errs.at(path, format!("{text:?} is not a size ({e}); write e.g. \"16MiB\""));
                default
            }
        }
    };
    let frame_given = raw.websocket_frame.is_some();
    limits.websocket_message = ws(
        errs,
        "limits.websocket_message",
        raw.websocket_message,
        limits.websocket_message,
    );
    limits.websocket_frame = ws(
        errs,
        "limits.websocket_frame",
        raw.websocket_frame,
        limits.websocket_frame,
    );
    if limits.websocket_frame > limits.websocket_message {
        if frame_given {
            errs.at(
                "limits.websocket_frame",
                format!(
                    "{} is larger than limits.websocket_message ({}); a frame is part of a message",
                    bytesize::ByteSize::b(limits.websocket_frame as u64),
                    bytesize::ByteSize::b(limits.websocket_message as u64)
                ),
            );
        } else {
            // The default frame size gives way to a smaller message size.
            limits.websocket_frame = limits.websocket_message;
        }
    }
    let r = &mut limits.rates;
    if let Some(s) = raw.per_sandbox {
        r.sandbox_requests = rate(errs, "limits.per_sandbox.requests", s.requests, r.sandbox_requests);
        r.host_requests = rate(errs, "limits.per_sandbox.per_host", s.per_host, r.host_requests);
        r.sandbox_connections = rate(
            errs,
            "limits.per_sandbox.connections",
            s.connections,
            r.sandbox_connections,
        );
        if let Some(n) = whole(errs, "limits.per_sandbox.max_open", s.max_open, A_COUNT) {
            r.sandbox_open = count(errs, "limits.per_sandbox.max_open", n, "open connection or tunnel");
        }
        r.sandbox_upload = bytes(errs, "limits.per_sandbox.upload", s.upload);
        r.sandbox_download = bytes(errs, "limits.per_sandbox.download", s.download);
        r.budget_window = duration(
            errs,
            "limits.per_sandbox.budget_window",
            s.budget_window,
            r.budget_window,
        );
    }
    if let Some(u) = raw.per_user {
        r.user_requests = rate(errs, "limits.per_user.requests", u.requests, r.user_requests);
        if let Some(n) = whole(errs, "limits.per_user.max_open", u.max_open, A_COUNT) {
            r.user_open = count(errs, "limits.per_user.max_open", n, "open connection or tunnel");
        }
    }
    r.auth_failures = rate(errs, "limits.auth_failures", raw.auth_failures, r.auth_failures);
    if let Some(p) = raw.per_source {
        if let Some(n) = whole(errs, "limits.per_source.unauthenticated", p.unauthenticated, A_COUNT) {
            match usize::try_from(n) {
                Ok(n) if n >= 1 => limits.unauthenticated_per_source = n,
                _ => errs.at("limits.per_source.unauthenticated", format!("{n} must be at least 1")),
            }
        }
        r.source_auth_failures = rate(
            errs,
            "limits.per_source.auth_failures",
            p.auth_failures,
            r.source_auth_failures,
        );
    }
    limits
}
