//! The one parser of destinations in cordon.
//!
//! CONNECT authority-form targets, absolute-form request URIs, Host header /
//! `:authority` values and TLS SNI all go through here and come out as one
//! normalised [`Target`]. Policy matching, the Host header sent upstream and
//! dialling all use that same value, so they cannot disagree about where a
//! request goes: a disagreement between the matcher and the dialler is exactly
//! what a policy bypass is made of.
//!
//! `http::uri::Authority` does the host/port split and rejects characters that
//! are not valid in an authority; std's `Ipv4Addr`/`Ipv6Addr` parse literals.
//! This module adds only what they lack: userinfo rejection, strict ports,
//! hostname label rules, case and trailing-dot normalisation, zone ids, and
//! path dot-segment checks.
//!
//! IPv4 literals are only the strict dotted-decimal form std accepts. Odd forms
//! such as `2852039166`, `0xa9fea9fe` or `012.0.0.1` are valid *names* here:
//! they go to the system resolver, and the address guard checks whatever
//! addresses resolution returns, so they need no special case in this module.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use http::uri::Authority;

mod error;
mod path;

pub use error::TargetError;
pub(crate) use path::check_path;

/// Longest hostname allowed, without the trailing dot (RFC 1035 §2.3.4).
const MAX_NAME_LEN: usize = 253;
/// Longest label allowed (RFC 1035 §2.3.4).
const MAX_LABEL_LEN: usize = 63;
/// Port an absolute-form `http://` URI implies when it names none.
const HTTP_DEFAULT_PORT: u16 = 80;

/// A normalised destination host.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum Host {
    /// A DNS name: lowercase ASCII, no trailing dot, labels of `[a-z0-9_-]`.
    Name(String),
    /// An IPv4 literal in strict dotted-decimal form.
    V4(Ipv4Addr),
    /// An IPv6 literal (written in brackets on the wire), without zone id.
    V6(Ipv6Addr),
}

impl Host {
    /// The DNS name, or `None` for an IP literal.
    pub(crate) fn as_name(&self) -> Option<&str> {
        match self {
            Host::Name(name) => Some(name),
            Host::V4(_) | Host::V6(_) => None,
        }
    }

    /// The IP address of a literal, or `None` for a DNS name.
    pub(crate) fn ip(&self) -> Option<IpAddr> {
        match self {
            Host::Name(_) => None,
            Host::V4(ip) => Some(IpAddr::V4(*ip)),
            Host::V6(ip) => Some(IpAddr::V6(*ip)),
        }
    }
}

impl fmt::Display for Host {
    /// The name, `1.2.3.4`, or `[v6]` with brackets so a port can follow.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Host::Name(name) => f.write_str(name),
            Host::V4(ip) => write!(f, "{ip}"),
            Host::V6(ip) => write!(f, "[{ip}]"),
        }
    }
}

/// A normalised destination: host plus an explicit port.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Target {
    /// Where to connect.
    pub(crate) host: Host,
    /// The TCP port, 1–65535.
    pub(crate) port: u16,
}

/// Whether a missing port is an error or takes a default.
#[derive(Debug, Clone, Copy)]
enum PortRule {
    /// CONNECT: the client must say which port it wants.
    Required,
    /// Absolute-form and Host header: the scheme implies a port.
    Default(u16),
}

impl Target {
    /// CONNECT request-target: `host:port`, port required.
    pub fn from_authority_form(s: &str) -> Result<Target, TargetError> {
        parse_authority(s.as_bytes(), PortRule::Required)
    }

    /// The request URI of a CONNECT request as hyper hands it over.
    ///
    /// `http::Uri` also parses `CONNECT http://host:443/`, so this first checks
    /// the URI really is authority-form (no scheme, no path) and then applies
    /// [`Target::from_authority_form`] to the raw authority text.
    pub(crate) fn from_connect_uri(uri: &http::Uri) -> Result<Target, TargetError> {
        if uri.scheme().is_some() || uri.path_and_query().is_some() {
            return Err(TargetError::NotAuthorityForm);
        }
        let authority = uri.authority().ok_or(TargetError::NotAuthorityForm)?;
        Target::from_authority_form(authority.as_str())
    }

    /// Absolute-form request-target (forward proxy). Only scheme `http`
    /// (case-insensitive); default port 80.
    ///
    /// The raw authority text is re-validated rather than trusting
    /// `Uri::host()`/`port_u16()`: those drop userinfo, read `+443` and `0443`
    /// as 443, and report *no port* for `:65536`, which would silently become
    /// port 80.
    pub fn from_absolute_uri(uri: &http::Uri) -> Result<Target, TargetError> {
        let scheme = uri.scheme_str().ok_or(TargetError::NotAbsolute)?;
        if !scheme.eq_ignore_ascii_case("http") {
            return Err(TargetError::BadScheme);
        }
        let authority = uri.authority().ok_or(TargetError::MissingAuthority)?;
        parse_authority(authority.as_str().as_bytes(), PortRule::Default(HTTP_DEFAULT_PORT))
    }

    /// A Host header / `:authority` / SNI value; `default_port` when absent.
    ///
    /// Takes bytes because header values may hold non-ASCII, which is
    /// rejected as [`TargetError::NonAsciiHost`].
    pub(crate) fn from_host_value(v: &[u8], default_port: u16) -> Result<Target, TargetError> {
        parse_authority(v, PortRule::Default(default_port))
    }

    /// `host` or `host:port` (port omitted when equal to `default_port`),
    /// brackets for IPv6: for the Host header.
    pub(crate) fn authority(&self, default_port: u16) -> String {
        if self.port == default_port {
            self.host.to_string()
        } else {
            self.to_string()
        }
    }
}

/// The spellings clients usually give a target in `Host` or `:authority` (`host:port`, and `host` alone on
/// the default port), so that a value can be recognised per request without parsing it.
pub(crate) struct Spellings {
    target: Target,
    default_port: u16,
    with_port: String,
    bare: Option<String>,
}

impl Spellings {
    /// The spellings of `target`, where a value without a port means `default_port`.
    pub(crate) fn of(target: &Target, default_port: u16) -> Spellings {
        Spellings {
            target: target.clone(),
            default_port,
            with_port: target.to_string(),
            bare: (target.port == default_port).then(|| target.host.to_string()),
        }
    }

    /// Whether `host` is the target's host (any port).
    pub(crate) fn has_host(&self, host: &Host) -> bool {
        self.target.host == *host
    }

    /// Whether a `Host` / `:authority` value names the target: a usual spelling byte for byte, or anything
    /// that parses to the same host and port.
    pub(crate) fn named_by(&self, value: &[u8]) -> bool {
        value == self.with_port.as_bytes()
            || self.bare.as_ref().is_some_and(|b| value == b.as_bytes())
            || Target::from_host_value(value, self.default_port).is_ok_and(|t| t == self.target)
    }
}

impl fmt::Display for Target {
    /// Always `host:port`, `[v6]:port` for IPv6: for logs and dialling.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.host, self.port)
    }
}

/// Parse `host[:port]` from raw authority bytes; the shared core of every
/// entry point, so all of them apply the same rules.
fn parse_authority(raw: &[u8], rule: PortRule) -> Result<Target, TargetError> {
    if raw.is_empty() {
        return Err(TargetError::EmptyHost);
    }
    // SECURITY: non-ASCII hosts would be IDNA-mapped (or not) differently by
    // the matcher, the resolver and the upstream: homograph and mapping
    // tricks (`ｅxample.com`) must not reach any of them.
    if !raw.is_ascii() {
        return Err(TargetError::NonAsciiHost);
    }
    // SECURITY: `allowed.com@evil.com` — matchers that read up to the `@` and
    // clients/URI parsers that read after it disagree on the host.
    if raw.contains(&b'@') {
        return Err(TargetError::Userinfo);
    }
    // ASCII was checked above, so this never fails; map it anyway rather than
    // panic.
    let s = std::str::from_utf8(raw).map_err(|_| TargetError::NonAsciiHost)?;
    // SECURITY: in `2001:db8::1:443` it is ambiguous whether 443 is the port
    // or part of the address; only the bracketed form is unambiguous.
    let unzoned = s.split('%').next().unwrap_or(s);
    if !s.starts_with('[') && unzoned.parse::<Ipv6Addr>().is_ok() {
        return Err(TargetError::UnbracketedIpv6);
    }
    let authority: Authority = s.parse().map_err(|_| TargetError::BadHost)?;
    let host_text = authority.host();
    // Without userinfo the host is a prefix of the authority; whatever follows
    // it must be nothing or `:port`.
    let rest = s.strip_prefix(host_text).ok_or(TargetError::BadHost)?;
    let port_text = match rest.strip_prefix(':') {
        Some(port) => Some(port),
        None if rest.is_empty() => None,
        // SECURITY: `Authority` accepts `[::1]x` and just ignores the `x`.
        None => return Err(TargetError::BadHost),
    };
    let host = parse_host(host_text)?;
    let port = match (port_text, rule) {
        (Some(port), _) => parse_port(port)?,
        (None, PortRule::Required) => return Err(TargetError::MissingPort),
        (None, PortRule::Default(port)) => port,
    };
    Ok(Target { host, port })
}

/// Parse the port text after the `:`.
fn parse_port(text: &str) -> Result<u16, TargetError> {
    // SECURITY: `+443`, `0443` and `65616` (= 80 mod 65536) are read as other
    // ports by other parsers (`u16::from_str` takes `+`, `port_u16` takes
    // leading zeros, some truncate); only the plain form means one port to all.
    if text.is_empty() || text.starts_with('0') || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(TargetError::BadPort);
    }
    // Digits only and no leading zero, so this fails only above 65535.
    text.parse::<u16>().map_err(|_| TargetError::BadPort)
}

/// Normalise the host part of an authority (brackets still on for IPv6).
fn parse_host(text: &str) -> Result<Host, TargetError> {
    if let Some(inner) = text.strip_prefix('[') {
        let inner = inner.strip_suffix(']').ok_or(TargetError::BadIpv6)?;
        // SECURITY: a zone id (`fe80::1%25eth0`) picks an interface, steering
        // link-local traffic in a way policy cannot see.
        if inner.contains('%') {
            return Err(TargetError::ZoneId);
        }
        return inner
            .parse::<Ipv6Addr>()
            .map(Host::V6)
            .map_err(|_| TargetError::BadIpv6);
    }
    if text.is_empty() {
        return Err(TargetError::EmptyHost);
    }
    // SECURITY: `EXAMPLE.com` and `example.com.` reach the same server as
    // `example.com`; normalising keeps a deny rule from being dodged by case
    // or a trailing dot.
    let mut name = text.to_ascii_lowercase();
    if name.ends_with('.') {
        name.pop();
    }
    if name.is_empty() {
        return Err(TargetError::EmptyHost);
    }
    if let Ok(ip) = name.parse::<Ipv4Addr>() {
        return Ok(Host::V4(ip));
    }
    if name.len() > MAX_NAME_LEN {
        return Err(TargetError::HostTooLong);
    }
    for label in name.split('.') {
        if label.is_empty() {
            return Err(TargetError::EmptyLabel);
        }
        if label.len() > MAX_LABEL_LEN {
            return Err(TargetError::LabelTooLong);
        }
        if !label
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')
        {
            return Err(TargetError::BadHost);
        }
    }
    Ok(Host::Name(name))
}

#[cfg(test)]
#[path = "mod_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "spellings_tests.rs"]
mod spellings_tests;
