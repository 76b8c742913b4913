//! One configuration generation: the configuration in force and everything built from it (the declared
//! identities, the dialler and its guard, the upstream pools, the credentials), and the one way to a sandbox's
//! policy under it. The state swaps generations whole on reload; a request loads one when it starts and
//! finishes on it.

mod access;
mod held;
mod inline;

use std::net::SocketAddr;
use std::sync::Arc;

use secrecy::ExposeSecret;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::config::Config;
use crate::config::credentials::SecretRef;
use crate::control::Control;
use crate::identity::{Identities, Origin, Sandbox};
use crate::inject::apply::Credentials;
use crate::metrics::Metrics;
use crate::net::{Dialer, Guard};
use crate::policy::{AccessTerms, Policy};
use crate::principal::{Principal, Via};
use crate::upstream::pool::{self, Upstreams};

pub(crate) use access::{JudgedAccess, NotGrantable};
pub(crate) use held::held_by_runtime;

/// One configuration in force, with everything built from it.
pub struct Generation {
    /// 1 for the configuration cordon started with, then one more per successful reload.
    pub number: u64,
    /// The configuration.
    pub(crate) config: Arc<Config>,
    /// The sandboxes declared in it.
    pub(crate) identities: Identities,
    /// Resolution, address guard and dialling.
    pub(crate) dialer: Dialer,
    /// Pooled, verified connections to upstreams, per sandbox.
    pub(crate) upstreams: Upstreams,
    /// Credentials and placeholders.
    pub(crate) credentials: Credentials,
    /// Run-time sandboxes' own policies, compiled against this configuration.
    inline: inline::InlineCache,
    /// Sandboxes' policies with their live grants, compiled against this configuration.
    granted: access::GrantedCache,
    /// The admin tokens' SHA-256 and the principal each stands for.
    admin_tokens: Vec<([u8; 32], Principal)>,
}

impl Generation {
    pub(crate) async fn build(
        number: u64,
        config: Config,
        self_addrs: &[SocketAddr],
        metrics: &Arc<Metrics>,
    ) -> Result<Generation, String> {
        let mut credentials = Credentials::new(&config)?;
        credentials.set_metrics(metrics.clone());
        credentials.open_custody(&config, metrics).await?;
        // The exfiltration scan knows the stored secrets before any request has used them.
        credentials.learn_stored().await;
        let mut admin_tokens: Vec<([u8; 32], Principal)> = Vec::new();
        for t in &config.control.admin_tokens {
            generate_if_file(&t.token)?;
            let token = credentials
                .secrets()
                .stored(&t.token)
                .await
                .map_err(|e| format!("{}: {e}", t.at))?;
            let hash: [u8; 32] = Sha256::digest(token.expose_secret().as_bytes()).into();
            // SECURITY: two principals behind one token value would make the name a record carries a guess.
            if let Some((_, first)) = admin_tokens.iter().find(|(h, _)| *h == hash) {
                return Err(format!(
                    "{}: the same token as the one named {:?}; every admin token needs a value of its own",
                    t.at, first.name
                ));
            }
            admin_tokens.push((
                hash,
                Principal {
                    name: t.name.clone(),
                    roles: t.roles,
                    via: Via::Token,
                },
            ));
        }
        Generation::assemble(number, config, self_addrs, credentials, admin_tokens)
    }

    /// The generation a dry run (`cordon explain`) decides on: built from `config` as a running cordon would
    /// build it, its own addresses every listener the configuration opens (a port 0 stays 0: explain opens
    /// nothing, so it cannot know the port the kernel would choose), without a file read or made and no secret
    /// source opened.
    pub(crate) fn dry(config: Config) -> Result<Generation, String> {
        let credentials = Credentials::inert(&config)?;
        let own = config.listen.own(|_| None);
        Generation::assemble(0, config, &own, credentials, Vec::new())
    }

    fn assemble(
        number: u64,
        config: Config,
        self_addrs: &[SocketAddr],
        credentials: Credentials,
        admin_tokens: Vec<([u8; 32], Principal)>,
    ) -> Result<Generation, String> {
        let guard = Guard::new(
            config.network.allow_cidrs.clone(),
            config.network.dangerous_allow_metadata.clone(),
            self_addrs.to_vec(),
        );
        let dialer = Dialer::new(guard, config.network.hosts.clone(), config.timeouts.connect)
            .with_resolver(config.network.resolver);
        let tls = pool::client_config(&config.upstream.extra_roots)?;
        Ok(Generation {
            number,
            identities: Identities::new(&config.sandboxes),
            upstreams: Upstreams::new(
                dialer.clone(),
                tls,
                config.upstream.pool_idle,
                config.timeouts.connect + config.timeouts.tls_handshake,
            ),
            dialer,
            credentials,
            inline: inline::InlineCache::new(),
            granted: access::GrantedCache::new(),
            admin_tokens,
            config: Arc::new(config),
        })
    }

    /// The file's policy with this name. A sandbox's policy is [`Generation::policy_for`]'s: a run-time
    /// sandbox's may be its own.
    pub(crate) fn named_policy(&self, name: &str) -> Option<&Arc<Policy>> {
        self.config.policies.get(name)
    }

    /// The policy `sandbox` runs under in this generation; `None` when it has none (a run-time sandbox without
    /// `control`, in a dry run; a policy gone from the file; an inline policy that exceeds its base now).
    /// A request asks once, and its later steps use what it got (a PATCH meanwhile does not change it).
    /// Access the sandbox asked for and was granted is part of it (the granted rules after its own).
    pub fn policy_for(&self, sandbox: &Sandbox, control: Option<&Control>) -> Option<Arc<Policy>> {
        let policy = self.own_policy_for(sandbox, control)?;
        Some(match control {
            Some(control) => self.with_grants(sandbox, control, policy),
            None => policy,
        })
    }

    /// The configuration's policy that `sandbox` is of (a run-time sandbox's record names it; an own policy
    /// extends it): whose `boundary:` and `access:` hold what the sandbox may be granted.
    pub(crate) fn base_policy(&self, sandbox: &Sandbox, control: Option<&Control>) -> Option<Arc<Policy>> {
        match (&sandbox.origin, control) {
            (Origin::Config, _) => self.named_policy(&sandbox.policy).cloned(),
            (Origin::Api { .. }, Some(c)) => c.with_policy(&sandbox.id, |name, _| self.named_policy(name).cloned())?,
            (Origin::Api { .. }, None) => None,
        }
    }

    /// Whether `sandbox` may ask for access, and on what terms.
    pub(crate) fn access_terms(&self, sandbox: &Sandbox, control: Option<&Control>) -> Option<AccessTerms> {
        self.base_policy(sandbox, control).and_then(|p| p.access)
    }

    /// Judge a request of `sandbox` for the rules `allow` (JSON, a policy's `allow:` entries): what it adds to the
    /// policy the sandbox runs under now (with its live grants), held to its policy's boundary.
    pub(crate) fn judge_access(
        &self,
        sandbox: &Sandbox,
        control: &Control,
        allow: &serde_json::Value,
    ) -> Result<JudgedAccess, NotGrantable> {
        let not_offered = || NotGrantable::NotOffered(sandbox.policy.clone());
        let base = self.base_policy(sandbox, Some(control)).ok_or_else(not_offered)?;
        let now = self.policy_for(sandbox, Some(control)).ok_or_else(not_offered)?;
        access::judge(&self.config, &base, &now, allow)
    }

    /// `policy` (what `sandbox` runs under without grants) with its live grants, held to its boundary.
    fn with_grants(&self, sandbox: &Sandbox, control: &Control, policy: Arc<Policy>) -> Arc<Policy> {
        let grants = control.access.granted(sandbox, crate::control::now());
        if grants.is_empty() {
            return policy;
        }
        let base = self.base_policy(sandbox, Some(control));
        let boundary = base.as_deref().and_then(|b| b.boundary.as_deref());
        self.granted.policy(&self.config, sandbox, &grants, policy, boundary)
    }

    /// The policy `sandbox` runs under without its grants.
    fn own_policy_for(&self, sandbox: &Sandbox, control: Option<&Control>) -> Option<Arc<Policy>> {
        match (&sandbox.origin, control) {
            (Origin::Config, _) => self.named_policy(&sandbox.policy).cloned(),
            // A run-time sandbox's policy is its record's now (a PATCH changes it under open connections).
            (Origin::Api { .. }, Some(control)) => control.with_policy(&sandbox.id, |name, inline| match inline {
                None => self.named_policy(name).cloned(),
                Some(doc) => self.inline(&sandbox.id, name, doc).ok(),
            })?,
            (Origin::Api { .. }, None) => None,
        }
    }

    /// Sandbox `id`'s own policy `doc`, compiled against this generation and held to `base`; the error says why
    /// it no longer holds (logged once per generation and document).
    pub(crate) fn inline(
        &self,
        id: &crate::names::SandboxId,
        base: &str,
        doc: &Arc<str>,
    ) -> Result<Arc<Policy>, String> {
        self.inline.policy(&self.config, id, base, doc)
    }

    /// The declared sandboxes with the name and the policy each runs under: `(id, policy name, policy)`.
    pub(crate) fn declared(&self) -> impl Iterator<Item = (&crate::names::SandboxId, &str, Option<&Policy>)> {
        self.config
            .sandboxes
            .iter()
            .map(|s| (&s.id, s.policy.as_str(), self.named_policy(&s.policy).map(|p| &**p)))
    }

    /// The principal whose admin token `presented` is, if any.
    pub(crate) fn admin_principal(&self, presented: &str) -> Option<Principal> {
        self.admin_principal_hashed(&Sha256::digest(presented.as_bytes()).into())
    }

    /// The principal of the admin token whose SHA-256 is `hash` (a console session opened with a token looks
    /// its token up again at each request, so a reload that removes it or changes its roles takes effect).
    pub(crate) fn admin_principal_hashed(&self, hash: &[u8; 32]) -> Option<Principal> {
        // SECURITY: constant-time comparison of the admin tokens' hashes, every one compared (no early exit).
        let mut found: Option<&Principal> = None;
        for (h, principal) in &self.admin_tokens {
            if bool::from(hash.ct_eq(h)) {
                found = Some(principal);
            }
        }
        found.cloned()
    }
}

/// A `file:` secret cordon may create: made with a random value on first start.
pub(crate) fn generate_if_file(r: &SecretRef) -> Result<(), String> {
    if let SecretRef::File(path) = r
        && crate::secret_file::ensure_secret_file(path)?
    {
        tracing::info!("created {} with a new random secret (0600)", path.display());
    }
    Ok(())
}
