//! `control:`: the admin API's tokens, the signing key, the sandbox store (a SQLite file or PostgreSQL) and what
//! sandboxes are told, as written and validated.

use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;

use super::credentials::{RawSecretRef, secret_ref};
use super::errors::Errors;
use super::fields::{duration, flag, is_loopback};
use super::listen::Listen;
use super::principals::RawAdminToken;
use super::scalars::Flag;
use super::shapes;

/// `control:`
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "a mapping of keys and values")]
pub(super) struct RawControl {
    /// The admin API's bearer token (principal `admin`, role `admin`).
    pub(crate) admin_token: Option<RawSecretRef>,
    /// Named admin tokens with their roles.
    pub(crate) admin_tokens: Option<Vec<RawAdminToken>>,
    /// The key that signs run-time sandboxes' proxy credentials.
    pub(crate) signing_key: Option<RawSecretRef>,
    /// The sandbox store: a SQLite file, or a `postgres://` DSN.
    pub(crate) store: Option<String>,
    /// The PostgreSQL password (a secret reference), for a `postgres://` store.
    pub(crate) store_password: Option<RawSecretRef>,
    /// PEM roots that sign the PostgreSQL server's certificate.
    pub(crate) store_ca_file: Option<String>,
    /// The key that encrypts the CAs' keys kept in PostgreSQL (a secret reference).
    pub(crate) store_key: Option<RawSecretRef>,
    /// Lifetime of a run-time sandbox when the request names none.
    #[schemars(with = "Option<shapes::Duration>")]
    pub(crate) default_ttl: Option<String>,
    /// The longest lifetime a request may ask for.
    #[schemars(with = "Option<shapes::Duration>")]
    pub(crate) max_ttl: Option<String>,
    /// The proxy URL sandboxes are told to use.
    #[schemars(with = "Option<shapes::HttpUrl>")]
    pub(crate) proxy_url: Option<String>,
    /// `NO_PROXY` entries handed to sandboxes.
    pub(crate) no_proxy: Option<Vec<String>>,
    /// Where a sandbox finds its CA certificate (the path in its own file system).
    pub(crate) ca_file: Option<String>,
    /// Reload when the configuration file changes.
    pub(crate) watch: Option<Flag>,
}

/// `control:` — the admin API, run-time sandboxes and reload.
#[derive(Debug, Clone)]
pub(crate) struct ControlConfig {
    /// The admin API's tokens: `admin_token` (as principal `admin`) and `admin_tokens`.
    pub(crate) admin_tokens: Vec<crate::config::principals::AdminToken>,
    /// The key that signs run-time sandboxes' proxy credentials; shared by replicas. `None`: a random key
    /// per process (credentials die with it).
    pub(crate) signing_key: Option<crate::config::credentials::SecretRef>,
    /// The SQLite sandbox store. `None` (and no `postgres`): in memory (run-time sandboxes die with the process).
    pub(crate) store: Option<PathBuf>,
    /// The PostgreSQL store shared by replicas on many hosts, instead of `store`.
    pub(crate) postgres: Option<PostgresConfig>,
    /// `store_key` with a SQLite `store`: it seals the refresh tokens cordon keeps there (`oauth2_refresh`).
    pub(crate) sqlite_key: Option<crate::config::credentials::SecretRef>,
    /// Lifetime of a run-time sandbox when the request names none.
    pub(crate) default_ttl: Duration,
    /// The longest lifetime a request may ask for.
    pub(crate) max_ttl: Duration,
    /// The proxy URL handed to sandboxes (`None`: `http://` + `listen.proxy`).
    pub(crate) proxy_url: Option<String>,
    /// `NO_PROXY` entries handed to sandboxes.
    pub(crate) no_proxy: Vec<String>,
    /// Where a sandbox finds its CA certificate, in its own file system.
    pub(crate) ca_file: String,
    /// Reload when the configuration file changes.
    pub(crate) watch: bool,
}

impl Default for ControlConfig {
    fn default() -> Self {
        ControlConfig {
            admin_tokens: Vec::new(),
            signing_key: None,
            store: None,
            postgres: None,
            sqlite_key: None,
            default_ttl: Duration::from_secs(3600),
            max_ttl: Duration::from_secs(7 * 24 * 3600),
            proxy_url: None,
            no_proxy: vec!["localhost".into(), "127.0.0.1".into(), "::1".into()],
            ca_file: "/etc/cordon/ca.pem".into(),
            watch: true,
        }
    }
}

/// `control.store: postgres://…` and what goes with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PostgresConfig {
    /// The DSN as written (it carries no password).
    pub(crate) dsn: String,
    /// The password, from a secret source.
    pub(crate) password: Option<crate::config::credentials::SecretRef>,
    /// Extra roots for the server's certificate (besides the built-in web roots), from `store_ca_file`.
    pub(crate) roots: Vec<rustls_pki_types::CertificateDer<'static>>,
    /// Encrypts the sandboxes' CA keys at rest in the database.
    pub(crate) key: crate::config::credentials::SecretRef,
}

impl ControlConfig {
    /// The secrets it reads: the admin tokens, the signing key, and the PostgreSQL store's.
    pub(crate) fn refs(&self) -> impl Iterator<Item = &crate::config::credentials::SecretRef> {
        let tokens = self.admin_tokens.iter().map(|t| &t.token);
        tokens
            .chain(self.signing_key.iter())
            .chain(self.postgres.iter().flat_map(PostgresConfig::refs))
            .chain(self.sqlite_key.iter())
    }

    /// The key that seals what the store keeps secret (CA keys in PostgreSQL, refresh tokens in either store).
    pub(crate) fn store_key(&self) -> Option<&crate::config::credentials::SecretRef> {
        self.postgres.as_ref().map(|p| &p.key).or(self.sqlite_key.as_ref())
    }
}

impl PostgresConfig {
    /// The secrets it reads: the password, if any, and the store key.
    pub(crate) fn refs(&self) -> impl Iterator<Item = &crate::config::credentials::SecretRef> {
        self.password.iter().chain([&self.key])
    }
}

/// `control:` for the listeners in `listen`: tokens (required with `listen.admin`), the signing key and its
/// store, lifetimes, and what sandboxes are told.
pub(super) fn control(errs: &mut Errors, raw: RawControl, listen: &Listen) -> ControlConfig {
    let mut c = ControlConfig {
        admin_tokens: super::principals::admin_tokens(errs, raw.admin_token, raw.admin_tokens),
        ..ControlConfig::default()
    };
    if listen.admin.is_some() && c.admin_tokens.is_empty() {
        errs.at(
            "control.admin_token",
            "is required when `listen.admin` is set (or `control.admin_tokens`): the admin API never runs \
             unauthenticated; write e.g. `admin_token: { file: state/admin-token }` (created on first start if missing)",
        );
    }
    c.signing_key = raw.signing_key.and_then(|r| secret_ref(errs, "control.signing_key", r));
    let store_given = raw.store.is_some();
    match raw.store {
        Some(store) if is_dsn(&store) => {
            c.postgres = postgres(errs, store, raw.store_password, raw.store_ca_file, raw.store_key);
        }
        Some(store) => {
            if store.trim().is_empty() {
                errs.at(
                    "control.store",
                    "is empty; name a file, e.g. \"state/cordon.db\", or a postgres:// DSN",
                );
            }
            c.store = Some(errs.path(&store));
            c.sqlite_key = raw.store_key.and_then(|r| secret_ref(errs, "control.store_key", r));
            only_with_postgres(errs, raw.store_password, raw.store_ca_file, None);
        }
        None => only_with_postgres(errs, raw.store_password, raw.store_ca_file, raw.store_key),
    }
    if c.signing_key.is_some() && !store_given {
        // SECURITY: revocations live only in the store; a key that outlives the process with a store that does
        // not would make every revoked credential verify again after a restart.
        errs.at(
            "control.signing_key",
            "is set but control.store is not: revocations are kept in the store, so after a restart a revoked \
             credential signed with this key would be accepted again. Set `control.store` (e.g. \
             \"state/cordon.db\", the same file for every replica sharing the key), or remove `signing_key` so the \
             key dies with the process",
        );
    }
    c.default_ttl = duration(errs, "control.default_ttl", raw.default_ttl, c.default_ttl);
    c.max_ttl = duration(errs, "control.max_ttl", raw.max_ttl, c.max_ttl);
    if c.default_ttl > c.max_ttl {
        errs.at(
            "control.default_ttl",
            format!(
                "{} is longer than control.max_ttl ({})",
                humantime::format_duration(c.default_ttl),
                humantime::format_duration(c.max_ttl)
            ),
        );
    }
    if let Some(url) = raw.proxy_url {
        match proxy_url(&url) {
            Ok(u) => c.proxy_url = Some(u),
            Err(why) => errs.at("control.proxy_url", format!("{url:?} {why}")),
        }
    }
    if let Some(list) = raw.no_proxy {
        for (i, entry) in list.iter().enumerate() {
            if entry.is_empty() || entry.contains([',', ' ', '\n', '\r', '\t']) {
                errs.at(
                    format!("control.no_proxy[{i}]"),
                    format!("{entry:?} is not a host, domain or address (no commas or spaces)"),
                );
            }
        }
        c.no_proxy = list;
    }
    if let Some(path) = raw.ca_file {
        if !path.starts_with('/') {
            errs.at(
                "control.ca_file",
                format!(
                    "{path:?} is not an absolute path; it is where a sandbox finds its CA, e.g. /etc/cordon/ca.pem"
                ),
            );
        }
        c.ca_file = path;
    }
    if let Some(w) = flag(errs, "control.watch", raw.watch) {
        c.watch = w;
    }
    c
}

/// `http://host:port`, no credentials, no path: what sandboxes put into HTTP_PROXY (with their own credential).
fn proxy_url(text: &str) -> Result<String, &'static str> {
    let uri: http::Uri = text.parse().map_err(|_| "is not a URL")?;
    if uri.scheme_str() != Some("http") {
        return Err("must start with http:// (the proxy speaks plain HTTP to sandboxes; TLS runs inside CONNECT)");
    }
    let Some(authority) = uri.authority() else {
        return Err("names no host");
    };
    if authority.as_str().contains('@') {
        return Err("must not carry credentials; each sandbox gets its own");
    }
    if !matches!(uri.path(), "" | "/") || uri.query().is_some() {
        return Err("must not have a path");
    }
    Ok(format!("http://{authority}"))
}

/// Whether `control.store` names a PostgreSQL server rather than a SQLite file.
pub(super) fn is_dsn(store: &str) -> bool {
    store.starts_with("postgres://") || store.starts_with("postgresql://")
}

/// The PostgreSQL store: a DSN without a password, TLS unless the server is on loopback, and the key that
/// encrypts the CAs' keys in the database.
pub(super) fn postgres(
    errs: &mut Errors,
    dsn: String,
    password: Option<RawSecretRef>,
    ca_file: Option<String>,
    key: Option<RawSecretRef>,
) -> Option<PostgresConfig> {
    let before = errs.list.len();
    match tokio_postgres::Config::from_str(&dsn) {
        Err(e) => errs.at("control.store", format!("is not a PostgreSQL connection URL: {e}")),
        Ok(parsed) => check_dsn(errs, &parsed),
    }
    let password = password.and_then(|r| secret_ref(errs, "control.store_password", r));
    let mut roots = Vec::new();
    if let Some(file) = ca_file {
        match crate::tls::pem::read_pem_certs(&errs.path(&file)) {
            Ok(certs) if certs.is_empty() => errs.at("control.store_ca_file", format!("{file:?} holds no certificate")),
            Ok(certs) => roots = certs,
            Err(e) => errs.at("control.store_ca_file", e),
        }
    }
    let key = match key {
        Some(r) => secret_ref(errs, "control.store_key", r),
        None => {
            errs.at(
                "control.store_key",
                "is required with a postgres:// store: it encrypts the sandboxes' CA keys kept in the database; \
                 write e.g. `store_key: { env: CORDON_STORE_KEY }` (at least 32 characters, the same on every replica)",
            );
            None
        }
    };
    if errs.list.len() > before {
        return None;
    }
    Some(PostgresConfig {
        dsn,
        password,
        roots,
        key: key?,
    })
}

/// No password in the DSN; at least one host; TLS required off loopback.
fn check_dsn(errs: &mut Errors, parsed: &tokio_postgres::Config) {
    if parsed.get_password().is_some() {
        // SECURITY: a password written into the configuration file would be readable by whoever reads the file.
        errs.at(
            "control.store",
            "carries a password; remove it from the URL and set `control.store_password` (e.g. `{ env: PGPASSWORD }`)",
        );
    }
    let hosts = parsed.get_hosts();
    if hosts.is_empty() {
        errs.at(
            "control.store",
            "names no host; write e.g. postgres://cordon@db.internal:5432/cordon",
        );
    }
    let off_loopback = hosts.iter().any(|h| match h {
        tokio_postgres::config::Host::Tcp(name) => !is_loopback(name),
        _ => false,
    });
    if off_loopback && parsed.get_ssl_mode() != tokio_postgres::config::SslMode::Require {
        // SECURITY: sandbox records, revocations and sealed CA keys never cross a network in clear text.
        errs.at(
            "control.store",
            "reaches a server off this host without `sslmode=require`; add `?sslmode=require` (the server's \
             certificate is verified against the built-in roots and `control.store_ca_file`)",
        );
    }
}

/// The store's companions make sense only with a PostgreSQL store.
pub(super) fn only_with_postgres(
    errs: &mut Errors,
    password: Option<RawSecretRef>,
    ca_file: Option<String>,
    key: Option<RawSecretRef>,
) {
    for (set, field) in [
        (password.is_some(), "control.store_password"),
        (ca_file.is_some(), "control.store_ca_file"),
        (key.is_some(), "control.store_key"),
    ] {
        if set {
            errs.at(
                field,
                "is set but control.store is not a postgres:// URL; remove it or point the store at PostgreSQL \
                 (`store_key` goes with any `control.store`)",
            );
        }
    }
}
