//! What a start would refuse, found before anything starts: the one list `cordon check` prints and `cordon
//! run` refuses to start on. Each rule is its owner's own check, the same function the owner runs when it
//! opens what it guards, so the two can never disagree: the CA folder ([`crate::tls::ca::CaStore`]), the
//! audit file ([`crate::audit::file`]), the sandbox store's folder ([`crate::control`]), and every secret
//! the configuration reads from a local source ([`crate::credentials::preflight`]). Nothing is created or
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
    found.extend(crate::credentials::preflight::missing(config));
    found
}
