//! What a start would refuse, found before anything starts: the one list `cordon check` prints and `cordon
//! run` refuses to start on. Each rule is its owner's own check, the same function the owner runs when it
//! opens what it guards, so the two can never disagree: the CA folder ([`crate::tls::ca::CaStore`]) and the
//! declared sandboxes' CAs ([`crate::tls::ca::SandboxCas::covering`]), the
//! audit file ([`crate::audit::file`]), the sandbox store's folder ([`crate::control`]), and every secret
//! the configuration reads from a local source ([`crate::secrets::preflight`]). Nothing is created or
//! written, and nothing goes over the network.

use crate::config::{AuditConfig, Config};

/// Every reason `config` cannot start, one line each, naming what to fix; empty when none.
pub(crate) fn problems(config: &Config) -> Vec<String> {
    let mut found = Vec::new();
    // SECURITY: a CA folder another user owns or can write holds CAs cordon did not make.
    if let Err(e) = crate::tls::ca::CaStore::new(config.ca.dir.clone()).check_folders() {
        found.push(e.to_string());
    }
    if let AuditConfig::File(path) = &config.audit
        && let Err(e) = crate::audit::file::check_openable(path)
    {
        found.push(e);
    }
    if let Some(store) = &config.control.store
        && let Err(e) = crate::control::store_file::check_folder(store)
    {
        found.push(e);
    }
    found.extend(crate::secrets::preflight::missing(config));
    found.extend(crate::secrets::preflight::shared_admin_tokens(config));
    found.extend(uncovering_cas(config));
    found.extend(listener_tls(config));
    found
}

/// The certificates and keys of the listeners people and platforms reach (`admin.tls`, `console.tls`,
/// `previews.tls`), read from files and variables and put together as a start puts them: a chain that is not
/// PEM, a key that does not go with it, a client CA bundle that holds no CA. Those in a vault or OpenBao are
/// checked at start.
fn listener_tls(config: &crate::config::Config) -> Vec<String> {
    use crate::config::credentials::SecretRef;
    use secrecy::ExposeSecret;
    let local = |r: &SecretRef| -> Option<Result<Vec<u8>, String>> {
        let read = match r {
            SecretRef::File(path) => crate::secrets::file_secret(path),
            SecretRef::Env(var) => crate::secrets::env_secret(var),
            SecretRef::Vault(_) | SecretRef::OpenBao(_) => return None,
        };
        Some(read.map(|s| s.expose_secret().as_bytes().to_vec()))
    };
    let mut sets: Vec<(&str, &SecretRef, &SecretRef, Option<&SecretRef>)> = Vec::new();
    if let Some(t) = &config.admin_tls {
        sets.push(("admin.tls", &t.cert, &t.key, t.client_ca.as_ref()));
    }
    if let Some((cert, key)) = config.console.as_ref().and_then(|c| c.tls.as_ref()) {
        sets.push(("console.tls", cert, key, None));
    }
    if let Some((cert, key)) = config.previews.as_ref().and_then(|p| p.tls.as_ref()) {
        sets.push(("previews.tls", cert, key, None));
    }
    let mut found = Vec::new();
    for (at, cert, key, ca) in sets {
        // A secret that is missing is said by the secrets' own check.
        let (Some(Ok(cert)), Some(Ok(key))) = (local(cert), local(key)) else {
            continue;
        };
        let ca = match ca.map(local) {
            Some(Some(Ok(ca))) => Some(ca),
            Some(_) => continue,
            None => None,
        };
        if let Err(e) = crate::tls::listener::acceptor(at, &cert, &key, ca.as_deref(), &[]) {
            found.push(e);
        }
    }
    found
}

/// A declared sandbox whose CA in `ca.dir` cannot sign for what its policy intercepts now (a CA made for an
/// earlier configuration): the same check a start and a reload make, with the command that fixes it. CAs kept
/// in PostgreSQL are checked at start, which connects to the database; this does not.
fn uncovering_cas(config: &Config) -> Vec<String> {
    if config.control.postgres.is_some() {
        return Vec::new();
    }
    let cas = crate::tls::ca::SandboxCas::new(config.ca.dir.clone(), config.rotate_command());
    config
        .sandboxes
        .iter()
        .filter_map(|spec| {
            cas.covering(&spec.id, &spec.policy, config.policies.get(&spec.policy).map(|p| &**p))
                .err()
        })
        .collect()
}
