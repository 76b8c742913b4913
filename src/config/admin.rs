//! `admin:`: the admin listener's TLS (its certificate, and the CAs client certificates must chain to), as
//! written and validated.

use std::net::SocketAddr;

use schemars::JsonSchema;
use serde::Deserialize;

use super::credentials::{RawSecretRef, SecretRef, secret_ref};
use super::errors::Errors;

/// `admin:`
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "a mapping of keys and values")]
pub(super) struct RawAdmin {
    /// The admin listener's certificate and key, and the CAs client certificates must chain to.
    pub(crate) tls: Option<RawAdminTls>,
}

/// `admin.tls:`
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "a mapping with cert, key and optionally client_ca")]
pub(super) struct RawAdminTls {
    /// The certificate chain, PEM.
    pub(crate) cert: RawSecretRef,
    /// Its private key, PEM.
    pub(crate) key: RawSecretRef,
    /// CA certificates (PEM): calls to `/v1` must present a client certificate one of them signed.
    pub(crate) client_ca: Option<RawSecretRef>,
}

/// `admin.tls:`, validated.
#[derive(Debug, Clone)]
pub(crate) struct AdminTls {
    /// The certificate chain.
    pub(crate) cert: SecretRef,
    /// Its key.
    pub(crate) key: SecretRef,
    /// CAs a client certificate must chain to for `/v1` calls; `None`: no client certificate is asked for.
    pub(crate) client_ca: Option<SecretRef>,
}

impl AdminTls {
    /// The secrets it reads, with where each is written.
    pub(crate) fn refs(&self) -> Vec<(&'static str, &SecretRef)> {
        let mut out = vec![("admin.tls.cert", &self.cert), ("admin.tls.key", &self.key)];
        out.extend(self.client_ca.as_ref().map(|c| ("admin.tls.client_ca", c)));
        out
    }
}

/// `admin.tls` for the admin listener at `listen` (if any).
pub(super) fn admin_tls(errs: &mut Errors, raw: Option<RawAdmin>, listen: Option<SocketAddr>) -> Option<AdminTls> {
    let raw = raw?.tls?;
    if listen.is_none() {
        errs.at(
            "admin.tls",
            "is set but listen.admin is not; give the admin API an address",
        );
    }
    let cert = secret_ref(errs, "admin.tls.cert", raw.cert);
    let key = secret_ref(errs, "admin.tls.key", raw.key);
    let client_ca = match raw.client_ca {
        Some(r) => Some(secret_ref(errs, "admin.tls.client_ca", r)?),
        None => None,
    };
    Some(AdminTls {
        cert: cert?,
        key: key?,
        client_ca,
    })
}
