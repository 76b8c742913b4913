//! Preview URLs as configured: the domain they live under, the preview listener's certificate, the key links
//! and cookies are signed with, and how long each lives.

use std::time::Duration;

use super::credentials::SecretRef;

/// `previews:`, validated.
#[derive(Debug, Clone)]
pub(crate) struct Previews {
    /// The domain: a preview is `<port>-<sandbox>.<domain>`. Lower case, no trailing dot.
    pub(crate) domain: String,
    /// The listener's certificate chain and key; `None`: plain HTTP (only on a loopback address).
    pub(crate) tls: Option<(SecretRef, SecretRef)>,
    /// The signing key's source; `None`: a random key made at start.
    pub(crate) key: Option<SecretRef>,
    /// The longest life of a link (and its default).
    pub(crate) link_ttl: Duration,
    /// How long an opened link gives access.
    pub(crate) session_ttl: Duration,
}
