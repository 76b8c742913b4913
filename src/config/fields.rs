//! The readers every section's validation shares: whole numbers, switches, addresses, durations, sizes,
//! ranges, ports, methods, path globs and URLs, each naming the offending value's path when it is wrong.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use ipnet::IpNet;

use super::errors::Errors;
use super::scalars::{Flag, Whole};
use crate::policy::allowlist::{compile_paths, parse_method_checked, parse_port};

/// What belongs in a port field.
pub(super) const A_PORT: &str = "a port number (1-65535)";

/// What belongs in a field of a count (connections, requests, files...).
pub(super) const A_COUNT: &str = "a whole number";

/// A whole-number field: `None` when absent, or when something else was written there, which is reported as
/// not being `what` (e.g. [`A_COUNT`], "a port number").
pub(super) fn whole(errs: &mut Errors, path: &str, raw: Option<Whole>, what: &str) -> Option<i64> {
    match raw? {
        Whole::Given(n) => Some(n),
        Whole::Wrong(written) => {
            errs.at(path, format!("expected {what}, not {written}"));
            None
        }
    }
}

/// A `true`/`false` field: `None` when absent, or when something else was written there (reported).
pub(super) fn flag(errs: &mut Errors, path: &str, raw: Option<Flag>) -> Option<bool> {
    match raw? {
        Flag::Given(b) => Some(b),
        Flag::Wrong(written) => {
            errs.at(path, format!("expected true or false, not {written}"));
            None
        }
    }
}

/// An address and port (`default` when absent).
pub(super) fn socket_addr(errs: &mut Errors, path: &str, raw: Option<&str>, default: &str) -> SocketAddr {
    let text = raw.unwrap_or(default);
    text.parse().unwrap_or_else(|_| {
        errs.at(
            path,
            format!("{text:?} is not an address and port; write e.g. \"127.0.0.1:3128\" or \"[::1]:3128\""),
        );
        SocketAddr::from(([127, 0, 0, 1], 0))
    })
}

/// A positive duration (`default` when absent or wrong).
pub(super) fn duration(errs: &mut Errors, path: &str, raw: Option<String>, default: Duration) -> Duration {
    let Some(text) = raw else { return default };
    match humantime::parse_duration(&text) {
        Ok(d) if !d.is_zero() => d,
        Ok(_) => {
            errs.at(
                path,
                format!("{text:?} is zero; give a positive duration such as \"30s\""),
            );
            default
        }
        Err(e) => {
            errs.at(
                path,
                format!("{text:?} is not a duration ({e}); write e.g. \"500ms\", \"30s\", \"5m\""),
            );
            default
        }
    }
}

/// A positive size in bytes (`None` when absent or wrong).
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

/// A CIDR with no bits below its prefix, or one address.
pub(super) fn cidr(errs: &mut Errors, path: &str, text: &str) -> Option<IpNet> {
    if let Ok(ip) = text.parse::<IpAddr>() {
        return Some(IpNet::from(ip));
    }
    match text.parse::<IpNet>() {
        Ok(net) if net.trunc() != net => {
            errs.at(
                path,
                format!(
                    "{text:?} has bits set below its prefix; did you mean \"{}\"?",
                    net.trunc()
                ),
            );
            None
        }
        Ok(net) => Some(net),
        Err(_) => {
            errs.at(
                path,
                format!("{text:?} is not a CIDR; write e.g. \"10.1.0.0/16\" or \"fd00::/8\""),
            );
            None
        }
    }
}

/// An IP address.
pub(super) fn ip(errs: &mut Errors, path: &str, text: &str) -> Option<IpAddr> {
    text.parse()
        .map_err(|_| errs.at(path, format!("{text:?} is not an IP address")))
        .ok()
}

/// `ports:` of a rule or a binding: `default` when absent; an empty list is an error (it would match nothing).
pub(super) fn ports(errs: &mut Errors, base: &str, raw: Option<Vec<Whole>>, default: &[u16]) -> Vec<u16> {
    let Some(list) = raw else { return default.to_vec() };
    if list.is_empty() {
        errs.at(
            format!("{base}.ports"),
            format!("is empty; leave it out for {default:?} or list ports"),
        );
    }
    list.into_iter()
        .enumerate()
        .filter_map(|(i, p)| {
            let at = format!("{base}.ports[{i}]");
            let p = whole(errs, &at, Some(p), A_PORT)?;
            parse_port(p).map_err(|e| errs.at(at, e)).ok()
        })
        .collect()
}

/// `methods:` of a rule or a binding: `None` (any) when absent; an empty list is an error.
pub(super) fn methods(errs: &mut Errors, base: &str, raw: Option<Vec<String>>) -> Option<Vec<http::Method>> {
    let list = raw?;
    if list.is_empty() {
        errs.at(format!("{base}.methods"), "is empty; leave it out to allow any method");
    }
    Some(
        list.iter()
            .enumerate()
            .filter_map(|(i, m)| {
                let at = format!("{base}.methods[{i}]");
                match parse_method_checked(m) {
                    Ok((method, warning)) => {
                        if let Some(w) = warning {
                            errs.warn(at, w);
                        }
                        Some(method)
                    }
                    Err(e) => {
                        errs.at(at, e);
                        None
                    }
                }
            })
            .collect(),
    )
}

/// `paths:` of a rule or a binding: `None` (any) when absent; an empty list is an error.
pub(super) fn paths(errs: &mut Errors, base: &str, raw: Option<&[String]>) -> Option<globset::GlobSet> {
    let list = raw?;
    if list.is_empty() {
        errs.at(format!("{base}.paths"), "is empty; leave it out to allow any path");
        return None;
    }
    compile_paths(list)
        .map_err(|(i, e)| errs.at(format!("{base}.paths[{i}]"), e))
        .ok()
}

/// An http(s) URL with a host.
pub(super) fn url(errs: &mut Errors, path: &str, text: &str) -> Option<http::Uri> {
    match text.parse::<http::Uri>() {
        Ok(u) if matches!(u.scheme_str(), Some("http" | "https")) && u.authority().is_some() => Some(u),
        _ => {
            errs.at(path, format!("{text:?} is not an http(s) URL"));
            None
        }
    }
}

/// Whether `host` is `localhost` or a loopback address (bracketed or not).
pub(super) fn is_loopback(host: &str) -> bool {
    host == "localhost"
        || host
            .trim_matches(['[', ']'])
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}
