//! `upstream:`: cordon's own connections to upstreams (extra roots, pooling), as written and validated.

use std::path::PathBuf;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;

use super::errors::Errors;
use super::fields::duration;
use super::shapes;

/// `upstream:`
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "a mapping of keys and values")]
pub(super) struct RawUpstream {
    /// PEM files of CAs trusted besides the built-in roots.
    #[serde(default)]
    pub(crate) extra_roots: Vec<String>,
    /// How long an idle pooled upstream connection is kept.
    #[schemars(with = "Option<shapes::Duration>")]
    pub(crate) pool_idle: Option<String>,
}

/// `upstream:`
#[derive(Debug, Clone)]
pub(crate) struct UpstreamConfig {
    /// The files named in `extra_roots`.
    pub(crate) extra_root_files: Vec<PathBuf>,
    /// The certificates they hold, trusted besides the built-in roots.
    pub(crate) extra_roots: Vec<rustls_pki_types::CertificateDer<'static>>,
    /// How long an idle pooled connection is kept.
    pub(crate) pool_idle: Duration,
}

impl Default for UpstreamConfig {
    fn default() -> Self {
        UpstreamConfig {
            extra_root_files: Vec::new(),
            extra_roots: Vec::new(),
            pool_idle: Duration::from_secs(90),
        }
    }
}

/// `upstream:`: the pool's idle time and the extra roots (each file read now, and holding a certificate).
pub(super) fn upstream(errs: &mut Errors, raw: RawUpstream) -> UpstreamConfig {
    let mut up = UpstreamConfig::default();
    up.pool_idle = duration(errs, "upstream.pool_idle", raw.pool_idle, up.pool_idle);
    for (i, file) in raw.extra_roots.iter().enumerate() {
        let path = format!("upstream.extra_roots[{i}]");
        let resolved = errs.path(file);
        match crate::tls::pem::read_pem_certs(&resolved) {
            Ok(certs) if certs.is_empty() => errs.at(path, format!("{file}: holds no PEM certificate")),
            Ok(certs) => {
                up.extra_root_files.push(resolved);
                up.extra_roots.extend(certs);
            }
            Err(e) => errs.at(path, format!("{file}: {e}")),
        }
    }
    up
}
