//! The serde mirror of `previews:`: preview URLs into sandboxes.

use schemars::JsonSchema;
use serde::Deserialize;

use super::shapes::Duration;
use super::{RawCertKey, RawSecretRef};

/// `previews:`
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "a mapping of keys and values")]
pub(in crate::config) struct RawPreviews {
    /// The domain under which `<port>-<sandbox>.<domain>` names each preview.
    pub(crate) domain: Option<String>,
    /// The certificate (PEM chain) and key of the preview listener; without it, plain HTTP on loopback only.
    pub(crate) tls: Option<RawCertKey>,
    /// The key links and cookies are signed with (default: random at each start).
    pub(crate) key: Option<RawSecretRef>,
    /// The longest a link may live, and its default (e.g. `5m`).
    #[schemars(with = "Option<Duration>")]
    pub(crate) link_ttl: Option<String>,
    /// How long opening a link gives access (the cookie's life, e.g. `1h`).
    #[schemars(with = "Option<Duration>")]
    pub(crate) session_ttl: Option<String>,
}
