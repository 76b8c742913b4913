//! Validation of a `control.store: postgres://…` store and the keys that go with it.

use std::str::FromStr;

use super::fields::Errors;
use super::fields::secret_ref;
use crate::config::model::PostgresConfig;
use crate::config::raw::RawSecretRef;

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

pub(super) fn is_loopback(host: &str) -> bool {
    host == "localhost"
        || host
            .trim_matches(['[', ']'])
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
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
                "is set but control.store is not a postgres:// URL; remove it or point the store at PostgreSQL",
            );
        }
    }
}
