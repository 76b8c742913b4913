//! Validation of `timeouts:`, `limits:` and `approval:`.

use std::num::NonZeroU32;
use std::time::Duration;

use super::fields::secret_ref;
use super::fields::{A_COUNT, Errors, duration, whole};
use crate::config::model::{ApprovalConfig, Limits, Timeouts, WebhookSpec};
use crate::config::raw::{RawApproval, RawLimits, RawRate, RawTimeouts};
use crate::limits::Rate;

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

pub(super) fn bytes(errs: &mut Errors, path: &str, raw: Option<String>) -> Option<u64> {
    let text = raw?;
    match text.parse::<bytesize::ByteSize>() {
        Ok(size) if size.as_u64() > 0 => Some(size.as_u64()),
        Ok(_) => {
            errs.at(path, format!("{text:?} is zero; give a size such as \"1GiB\""));
            None
        }
        Err(e) => {
            errs.at(path, format!("{text:?} is not a size ({e}); write e.g. \"500MiB\""));
            None
        }
    }
}

pub(super) fn limits(errs: &mut Errors, raw: RawLimits) -> Limits {
    let mut limits = Limits::default();
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

pub(super) fn approval(errs: &mut Errors, raw: RawApproval) -> ApprovalConfig {
    let mut a = ApprovalConfig {
        timeout: duration(errs, "approval.timeout", raw.timeout, ApprovalConfig::default().timeout),
        ..ApprovalConfig::default()
    };
    if a.timeout > Duration::from_secs(24 * 3600) {
        errs.at(
            "approval.timeout",
            "is over a day; a held request keeps a connection open all that time",
        );
    }
    let per_sandbox_given = raw.max_pending_per_sandbox.is_some();
    for (path, raw, slot) in [
        ("approval.max_pending", raw.max_pending, &mut a.max_pending),
        (
            "approval.max_pending_per_sandbox",
            raw.max_pending_per_sandbox,
            &mut a.max_pending_per_sandbox,
        ),
        (
            "approval.max_pending_per_user",
            raw.max_pending_per_user,
            &mut a.max_pending_per_user,
        ),
    ] {
        if let Some(n) = whole(errs, path, raw, A_COUNT) {
            match usize::try_from(n) {
                Ok(n) if n >= 1 => *slot = n,
                _ => errs.at(path, format!("{n} must be at least 1")),
            }
        }
    }
    if !per_sandbox_given {
        // The default gives way to a smaller per-user cap.
        a.max_pending_per_sandbox = a.max_pending_per_sandbox.min(a.max_pending_per_user);
    }
    if a.max_pending_per_sandbox > a.max_pending_per_user {
        errs.at(
            "approval.max_pending_per_sandbox",
            format!(
                "{} is over approval.max_pending_per_user ({}); a sandbox's asks count towards its user's",
                a.max_pending_per_sandbox, a.max_pending_per_user
            ),
        );
    }
    if let Some(w) = raw.webhook {
        let url = match w.url.parse::<http::Uri>() {
            Ok(u) if matches!(u.scheme_str(), Some("http" | "https")) && u.authority().is_some() => Some(u),
            _ => {
                errs.at("approval.webhook.url", format!("{:?} is not an http(s) URL", w.url));
                None
            }
        };
        let secret = w.secret.and_then(|s| secret_ref(errs, "approval.webhook.secret", s));
        a.webhook = url.map(|url| WebhookSpec { url, secret });
    }
    a
}
