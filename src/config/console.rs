//! The admin listener's TLS and the console (the approval inbox in the browser), as configured.

use std::collections::BTreeMap;
use std::time::Duration;

use super::credentials::SecretRef;
use crate::principal::Roles;

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

/// `console:`, validated.
#[derive(Debug, Clone)]
pub(crate) struct Console {
    /// Where people reach the console, without a trailing slash (`https://cordon.example.com:9443`); the OIDC
    /// redirect is this plus `/console/callback`. `None`: only token sign-in (no OIDC).
    pub(crate) url: Option<String>,
    /// The certificate and key of `listen.console`; `None`: plain HTTP, only on loopback (or the console is on
    /// the admin listener, which has its own TLS).
    pub(crate) tls: Option<(SecretRef, SecretRef)>,
    /// How long a sign-in lasts.
    pub(crate) session_ttl: Duration,
    /// Sign-in through OpenID Connect.
    pub(crate) oidc: Option<Oidc>,
}

/// `console.oidc:`, validated.
#[derive(Debug, Clone)]
pub(crate) struct Oidc {
    /// The issuer URL, without a trailing slash (`https://` or, on loopback, `http://`).
    pub(crate) issuer: String,
    /// cordon's client id.
    pub(crate) client_id: String,
    /// cordon's client secret; `None`: a public client (PKCE alone).
    pub(crate) client_secret: Option<SecretRef>,
    /// The scopes asked for; `openid` is always among them.
    pub(crate) scopes: Vec<String>,
    /// The claim holding the person's groups or roles.
    pub(crate) roles_claim: String,
    /// Where a person's roles come from.
    pub(crate) roles: RoleSource,
}

/// How the roles claim's values become roles.
#[derive(Debug, Clone)]
pub(crate) enum RoleSource {
    /// Values that are role names are the roles (`admin`, `platform`, `approver`, `viewer`); others are ignored.
    Named,
    /// Each value listed gives its roles; others give none.
    Mapped(BTreeMap<String, Roles>),
}

impl RoleSource {
    /// The roles the claim's `values` give.
    pub(crate) fn roles<'a>(&self, values: impl IntoIterator<Item = &'a str>) -> Roles {
        let mut roles = Roles::default();
        for v in values {
            let given = match self {
                RoleSource::Named => crate::principal::Role::parse(v)
                    .map(|r| Roles::of([r]))
                    .unwrap_or_default(),
                RoleSource::Mapped(map) => map.get(v).copied().unwrap_or_default(),
            };
            roles = roles.union(given);
        }
        roles
    }
}

impl Console {
    /// What of it takes a restart to change, for comparing: everything but `oidc.roles`, which a reload applies
    /// to open sessions (a person's roles are found again from their roles claim at each request).
    pub(crate) fn restart_only(&self) -> String {
        let mut fixed = self.clone();
        if let Some(o) = &mut fixed.oidc {
            o.roles = RoleSource::Mapped(BTreeMap::new());
        }
        format!("{fixed:?}")
    }

    /// The secrets it reads, with where each is written.
    pub(crate) fn refs(&self) -> Vec<(&'static str, &SecretRef)> {
        let mut out = Vec::new();
        if let Some((cert, key)) = &self.tls {
            out.extend([("console.tls.cert", cert), ("console.tls.key", key)]);
        }
        if let Some(s) = self.oidc.as_ref().and_then(|o| o.client_secret.as_ref()) {
            out.push(("console.oidc.client_secret", s));
        }
        out
    }
}

impl AdminTls {
    /// The secrets it reads, with where each is written.
    pub(crate) fn refs(&self) -> Vec<(&'static str, &SecretRef)> {
        let mut out = vec![("admin.tls.cert", &self.cert), ("admin.tls.key", &self.key)];
        out.extend(self.client_ca.as_ref().map(|c| ("admin.tls.client_ca", c)));
        out
    }
}
