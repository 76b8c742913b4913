//! What a start would refuse, found before anything starts: the one list `cordon check` prints and `cordon
//! run` refuses to start on. Each rule is its owner's own check, the same function the owner runs when it
//! opens what it guards, so the two can never disagree: the CA folder ([`crate::tls::ca::CaStore`]) and the
//! declared sandboxes' CAs ([`crate::tls::cas::SandboxCas::covering`]), the
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
    found
}

/// A declared sandbox whose CA in `ca.dir` cannot sign for what its policy intercepts now (a CA made for an
/// earlier configuration): the same check a start and a reload make, with the command that fixes it. CAs kept
/// in PostgreSQL are checked at start, which connects to the database; this does not.
fn uncovering_cas(config: &Config) -> Vec<String> {
    if config.control.postgres.is_some() {
        return Vec::new();
    }
    let cas = crate::tls::cas::SandboxCas::new(config.ca.dir.clone(), config.rotate_command());
    config
        .sandboxes
        .iter()
        .filter_map(|spec| {
            cas.covering(&spec.id, &spec.policy, config.policies.get(&spec.policy).map(|p| &**p))
                .err()
        })
        .collect()
}
