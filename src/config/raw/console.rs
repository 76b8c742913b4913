//! The serde mirror of `admin:` (the admin listener's TLS) and `console:` (the approval inbox in the browser and
//! how people sign in to it).

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Deserialize;

use super::RawSecretRef;
use super::shapes::{Duration, HttpUrl, Role, Text};

/// `admin:`
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "a mapping of keys and values")]
pub(in crate::config) struct RawAdmin {
    /// The admin listener's certificate and key, and the CAs client certificates must chain to.
    pub(crate) tls: Option<RawAdminTls>,
}

/// `admin.tls:`
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "a mapping with cert, key and optionally client_ca")]
pub(in crate::config) struct RawAdminTls {
    /// The certificate chain, PEM.
    pub(crate) cert: RawSecretRef,
    /// Its private key, PEM.
    pub(crate) key: RawSecretRef,
    /// CA certificates (PEM): calls to `/v1` must present a client certificate one of them signed.
    pub(crate) client_ca: Option<RawSecretRef>,
}

/// A listener's certificate chain and key (`console.tls`, `previews.tls`).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "a mapping with cert and key")]
pub(in crate::config) struct RawCertKey {
    /// The certificate chain, PEM.
    pub(crate) cert: RawSecretRef,
    /// Its private key, PEM.
    pub(crate) key: RawSecretRef,
}

/// `console:`
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "a mapping of keys and values")]
pub(in crate::config) struct RawConsole {
    /// Where people reach the console (`https://cordon.example.com:9443`): the base of the OIDC redirect.
    #[schemars(with = "Option<HttpUrl>")]
    pub(crate) url: Option<String>,
    /// The certificate and key of `listen.console`.
    pub(crate) tls: Option<RawCertKey>,
    /// How long a sign-in lasts (e.g. `8h`).
    #[schemars(with = "Option<Duration>")]
    pub(crate) session_ttl: Option<String>,
    /// Sign-in through an OpenID Connect provider.
    pub(crate) oidc: Option<RawOidc>,
}

/// `console.oidc:`
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "a mapping with issuer, client_id and the rest")]
pub(in crate::config) struct RawOidc {
    /// The provider's issuer URL, as its discovery document names it.
    #[schemars(with = "HttpUrl")]
    pub(crate) issuer: String,
    /// cordon's client id at the provider.
    #[schemars(with = "Text")]
    pub(crate) client_id: String,
    /// cordon's client secret (any secret source); none for a public client (PKCE alone).
    pub(crate) client_secret: Option<RawSecretRef>,
    /// The scopes asked for (default `openid email profile`, plus `groups` when the claim is `groups`).
    pub(crate) scopes: Option<Vec<String>>,
    /// The ID token claim holding the person's groups or roles (default `groups`).
    pub(crate) roles_claim: Option<String>,
    /// The claim's values and the roles each gives; without it, values that are role names are the roles.
    #[schemars(with = "Option<BTreeMap<String, Vec<Role>>>")]
    pub(crate) roles: Option<BTreeMap<String, Vec<String>>>,
}
