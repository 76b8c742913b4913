//! Preview names: `<port>-<sandbox>.<domain>`, one DNS label before the domain.

use crate::names::SandboxId;

/// The port and sandbox a `Host` (with or without a port) names under `domain`, if it is a preview's name.
pub(crate) fn parse(host: &str, domain: &str) -> Option<(u16, SandboxId)> {
    let host = host.trim_end_matches('.');
    // Without a port: `name:port`, not an IPv6 literal (no preview has one).
    let name = match host.rsplit_once(':') {
        Some((name, port)) if port.bytes().all(|b| b.is_ascii_digit()) => name,
        _ => host,
    };
    let name = name.to_ascii_lowercase();
    let label = name.strip_suffix(domain)?.strip_suffix('.')?;
    if label.contains('.') {
        return None;
    }
    let (port, sandbox) = label.split_once('-')?;
    if port.is_empty() || port.len() > 5 || !port.bytes().all(|b| b.is_ascii_digit()) || port.starts_with('0') {
        return None;
    }
    let port: u16 = port.parse().ok().filter(|p| *p > 0)?;
    let sandbox = SandboxId::parse(sandbox).ok()?;
    is_label(&sandbox).then_some((port, sandbox))
}

/// Whether a sandbox id can stand in a preview's name: a DNS label (lower-case letters, digits, `-`; not at the
/// ends), so that the name a browser lower-cases is still the sandbox's id.
pub(crate) fn is_label(id: &SandboxId) -> bool {
    let id = id.as_str();
    !id.is_empty()
        && id.len() <= 56
        && id
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !id.starts_with('-')
        && !id.ends_with('-')
}

#[cfg(test)]
#[path = "host_tests.rs"]
mod tests;
