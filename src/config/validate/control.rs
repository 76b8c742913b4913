//! Validation of `control:` — the admin API's token, the signing key, the store and what sandboxes are told.

use super::fields::secret_ref;
use super::fields::{Errors, duration, flag};
use crate::config::model::{ControlConfig, Listen};
use crate::config::raw::RawControl;

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
        Some(store) if super::postgres::is_dsn(&store) => {
            c.postgres = super::postgres::postgres(errs, store, raw.store_password, raw.store_ca_file, raw.store_key);
        }
        Some(store) => {
            if store.trim().is_empty() {
                errs.at(
                    "control.store",
                    "is empty; name a file, e.g. \"state/cordon.db\", or a postgres:// DSN",
                );
            }
            c.store = Some(errs.path(&store));
            super::postgres::only_with_postgres(errs, raw.store_password, raw.store_ca_file, raw.store_key);
        }
        None => super::postgres::only_with_postgres(errs, raw.store_password, raw.store_ca_file, raw.store_key),
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
