//! The sandboxes' CAs as the running proxy uses them: each loaded from `ca.dir` (created on first need) for
//! the names its policy allows, then kept in memory until a reload may have changed those names; or, with a
//! PostgreSQL store, held in memory from the database ([`SharedCas`]), made when a sandbox is created.

use std::path::PathBuf;
use std::sync::Arc;

use crate::names::SandboxId;
use crate::policy::{HostPattern, Mode, Policy, TlsMode};
use crate::tls::ca::error::CaError;
use crate::tls::ca::sandbox_ca::SandboxCa;
use crate::tls::ca::shared::SharedCas;
use crate::tls::ca::store::{CaStore, RotateCommand};
use crate::tls::scope::Scope;

/// The CAs of every sandbox, loaded on first need.
pub(crate) struct SandboxCas {
    /// The CA folder.
    pub(crate) store: CaStore,
    loaded: moka::sync::Cache<SandboxId, Arc<SandboxCa>>,
    /// The CAs kept in PostgreSQL, when the store is there (then `ca.dir` is not used).
    shared: Option<SharedCas>,
}

impl SandboxCas {
    /// CAs kept in `dir`; `rotate` names the command that makes a sandbox a new CA, for hints.
    pub(crate) fn new(dir: PathBuf, rotate: RotateCommand) -> SandboxCas {
        SandboxCas {
            store: CaStore::new(dir).with_rotate_command(rotate),
            loaded: moka::sync::Cache::new(100_000),
            shared: None,
        }
    }

    /// CAs kept in PostgreSQL.
    pub(crate) fn shared(dir: PathBuf, rotate: RotateCommand, shared: SharedCas) -> SandboxCas {
        SandboxCas {
            shared: Some(shared),
            ..SandboxCas::new(dir, rotate)
        }
    }

    /// The PostgreSQL CA store, if that is where CAs are.
    pub(crate) fn in_db(&self) -> Option<&SharedCas> {
        self.shared.as_ref()
    }

    /// The CA of sandbox `id` whose policy is `policy` (none: unconstrained).
    pub(crate) fn get(&self, id: &SandboxId, policy: Option<&Policy>) -> Result<Arc<SandboxCa>, Arc<CaError>> {
        if let Some(shared) = &self.shared {
            // Memory only: a CA is made with its sandbox and announced; one not held yet is not invented here.
            return shared.get(id).ok_or_else(|| {
                Arc::new(CaError::Store(format!(
                    "this replica holds no CA for sandbox {id:?} yet (made when the sandbox is created or first used)"
                )))
            });
        }
        self.loaded.try_get_with(id.clone(), || {
            let wanted = policy.map(scope_for).unwrap_or(Scope::Unconstrained);
            let ca = self.store.load_or_create(id, &wanted)?;
            let missing = ca.scope().uncovered(&wanted);
            if !missing.is_empty() {
                tracing::warn!(
                    sandbox = %id,
                    "the CA on disk cannot sign for {} which the policy now allows; TLS to them is refused until \
                     `{}` issues a new CA",
                    missing.join(", "),
                    self.store.rotate_command(id)
                );
            }
            Ok(ca)
        })
    }

    /// Whether the CA sandbox `id` has now still signs for every name its policy (`policy_name`, `policy`)
    /// intercepts: `Err` saying which names it misses and the exact command that issues one that does. A
    /// sandbox with no CA yet passes (it is made for the policy on first need). Reads the store, not what
    /// is loaded, so a CA rotated meanwhile by `cordon ca rotate` is what is judged.
    pub(crate) fn covering(&self, id: &SandboxId, policy_name: &str, policy: Option<&Policy>) -> Result<(), String> {
        let ca = match &self.shared {
            Some(shared) => shared.get(id),
            None => self.store.load(id).map_err(|e| e.to_string())?,
        };
        let Some(ca) = ca else { return Ok(()) };
        let wanted = policy.map(scope_for).unwrap_or(Scope::Unconstrained);
        let missing = ca.scope().uncovered(&wanted);
        if missing.is_empty() {
            return Ok(());
        }
        Err(format!(
            "sandbox {id:?}: its CA was made for other names than policy {policy_name:?} intercepts now and cannot \
             sign for {}: every TLS connection to them would fail after the CONNECT; run `{}` to issue a CA for \
             what the policy allows now, give the sandbox the new certificate, then start cordon (or reload it)",
            missing.join(", "),
            self.store.rotate_command(id)
        ))
    }

    /// Make (or load) the CA of sandbox `id` before its record is stored, for `policy` (the one it is being
    /// created with: its record is not stored yet). Blocking: call it from a blocking thread.
    pub(crate) fn prepare(&self, id: &SandboxId, policy: &Policy) -> Result<(), String> {
        let Some(shared) = &self.shared else {
            return self.get(id, Some(policy)).map(|_| ()).map_err(|e| e.to_string());
        };
        let scope = scope_for(policy);
        let handle = tokio::runtime::Handle::try_current().map_err(|e| e.to_string())?;
        handle
            .block_on(shared.ensure(id, &scope))
            .map(|_| ())
            .map_err(|e| e.to_string())
    }

    /// Make the CA of every declared sandbox (`(id, policy name, policy)`; replicas racing agree on one, in
    /// PostgreSQL), and refuse one that cannot sign for what its policy intercepts now, saying the command that
    /// fixes it: at start and before a reload takes effect, so that no declared sandbox meets a CONNECT answered
    /// 200 and then a TLS handshake with no certificate.
    pub(crate) async fn ensure_declared<'a>(
        &self,
        declared: impl Iterator<Item = (&'a SandboxId, &'a str, Option<&'a Policy>)>,
    ) -> Result<(), String> {
        let mut errors = Vec::new();
        for (id, policy_name, policy) in declared {
            if let Some(shared) = &self.shared {
                let scope = policy.map(scope_for).unwrap_or(Scope::Unconstrained);
                shared
                    .ensure(id, &scope)
                    .await
                    .map_err(|e| format!("sandboxes: the CA of {id:?}: {e}"))?;
            }
            if let Err(e) = self.covering(id, policy_name, policy) {
                errors.push(e);
            }
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors.join("\n"))
        }
    }

    /// Replace the CA of sandbox `id` with a new one for what `policy` allows now (the old key is not kept). With
    /// PostgreSQL the new CA is announced, so every replica uses it at once. Blocking on the file store: call it
    /// from a blocking thread.
    pub(crate) async fn rotate(&self, id: &SandboxId, policy: Option<&Policy>) -> Result<Arc<SandboxCa>, CaError> {
        let scope = policy.map(scope_for).unwrap_or(Scope::Unconstrained);
        let ca = match &self.shared {
            Some(shared) => shared.rotate(id, &scope).await?,
            None => self.store.rotate(id, &scope)?,
        };
        self.loaded.invalidate(id);
        Ok(ca)
    }

    /// Forget the loaded CAs: name constraints are judged again against the policies when each is next needed.
    pub(crate) fn reload(&self) {
        self.loaded.invalidate_all();
    }
}

/// The names a sandbox's CA may sign for, from its policy: the hosts of its intercepted rules (`*.x` as the
/// subtree `x`) and the ranges of its CIDR rules. A report-mode policy may allow anything, so its CA is
/// unconstrained. A name a certificate cannot carry (e.g. with `_`) also leaves the CA unconstrained.
pub fn scope_for(policy: &Policy) -> Scope {
    if policy.mode == Mode::Report {
        return Scope::Unconstrained;
    }
    let mut dns = Vec::new();
    let mut ips = Vec::new();
    for rule in policy.rules.iter().filter(|r| r.tls == TlsMode::Intercept) {
        match &rule.host {
            Some(HostPattern::Exact(name)) | Some(HostPattern::Subdomains(name)) => dns.push(name.clone()),
            None => ips.extend(rule.cidrs.iter().copied()),
        }
    }
    let scope = Scope::Names { dns, ips };
    match scope.normalized() {
        Ok(s) => s,
        Err(e) => {
            tracing::warn!(policy = %policy.name, "the CA cannot be name-constrained ({e}); it will be unconstrained");
            Scope::Unconstrained
        }
    }
}
