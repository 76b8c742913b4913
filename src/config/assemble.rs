//! The whole file: its serde mirror (`RawConfig`, a section per key), the validated `Config`, and the one pass
//! from the first to the second, section by section in a fixed order (so errors and warnings come in the same
//! order every time), collecting every problem with the path of the offending value.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Deserialize;

use super::admin::RawAdmin;
use super::approval::{ApprovalConfig, RawApproval};
use super::audit::{AuditChain, AuditConfig, RawAudit};
use super::ca::{CaConfig, RawCa};
use super::console::RawConsole;
use super::control::{ControlConfig, RawControl};
use super::credentials::{RawCredential, RawScope, RawVault};
use super::errors::{ConfigErrors, Errors};
use super::fields::{duration, flag};
use super::jail::{RawJail, RawJailLimits};
use super::limits::{LimitsConfig, RawLimits};
use super::listen::{Listen, RawListen};
use super::log::{LogFormat, RawLog};
use super::network::{Network, RawNetwork};
use super::policies::RawPolicy;
use super::previews::RawPreviews;
use super::sandboxes::RawSandbox;
use super::timeouts::{RawTimeouts, Timeouts};
use super::upstream::{RawUpstream, UpstreamConfig};
use super::violations::{CredentialBudgets, OnViolation};
use super::{
    admin, approval, audit, ca, console, control, credentials, jail, limits, lint, listen, log, network, policies,
    previews, sandboxes, timeouts, upstream, violations,
};
use crate::identity::SandboxSpec;
use crate::policy::Policy;

/// The whole file.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(
    deny_unknown_fields,
    expecting = "a mapping of settings (listen:, policies:, sandboxes:...)"
)]
pub(super) struct RawConfig {
    /// Where cordon listens.
    #[serde(default)]
    pub(crate) listen: RawListen,
    /// Where audit records go.
    #[serde(default)]
    pub(crate) audit: RawAudit,
    /// Address guard settings.
    #[serde(default)]
    pub(crate) network: RawNetwork,
    /// Timeouts.
    #[serde(default)]
    pub(crate) timeouts: RawTimeouts,
    /// Caps.
    #[serde(default)]
    pub(crate) limits: RawLimits,
    /// Per-sandbox certificate authorities.
    #[serde(default)]
    pub(crate) ca: RawCa,
    /// cordon's own connections to upstreams.
    #[serde(default)]
    pub(crate) upstream: RawUpstream,
    /// Where secrets come from.
    #[serde(default)]
    pub(crate) vault: RawVault,
    /// Named credentials.
    #[serde(default)]
    pub(crate) credentials: BTreeMap<String, RawCredential>,
    /// The sandboxes cordon knows.
    #[serde(default)]
    pub(crate) sandboxes: Vec<RawSandbox>,
    /// Named policies.
    #[serde(default)]
    pub(crate) policies: BTreeMap<String, RawPolicy>,
    /// The control plane: admin API, run-time sandboxes, reload.
    #[serde(default)]
    pub(crate) control: RawControl,
    /// Human approval of `action: ask` rules.
    #[serde(default)]
    pub(crate) approval: RawApproval,
    /// Operational logs.
    #[serde(default)]
    pub(crate) log: RawLog,
    /// Preview URLs into sandboxes.
    pub(crate) previews: Option<RawPreviews>,
    /// The admin listener's TLS.
    pub(crate) admin: Option<RawAdmin>,
    /// The approval inbox in the browser, and how people sign in to it.
    pub(crate) console: Option<RawConsole>,
    /// What bounds every jail, and how a jail is stopped.
    pub(crate) jail: Option<RawJail>,
    /// What a million tokens of each model cost (names or globs), for model budgets and the records.
    #[serde(default)]
    pub(crate) model_prices: BTreeMap<String, super::model_api::RawPrice>,
}

/// A validated configuration.
#[derive(Debug, Clone)]
pub struct Config {
    /// Where it came from, for messages.
    pub(crate) source: String,
    /// What its relative paths were read against (every path below is already resolved against it).
    pub(crate) base: super::paths::Base,
    /// Listener addresses.
    pub(crate) listen: Listen,
    /// Audit sink.
    pub(crate) audit: AuditConfig,
    /// The audit log's chain: checkpoint interval and signing key.
    pub(crate) audit_chain: AuditChain,
    /// Preview URLs into sandboxes, with `listen.preview`.
    pub(crate) previews: Option<super::previews::PreviewsConfig>,
    /// The admin listener's TLS (`None`: plain HTTP, whose `/v1` is served only on loopback).
    pub(crate) admin_tls: Option<super::admin::AdminTls>,
    /// The approval inbox in the browser, on `listen.console` or the admin listener.
    pub(crate) console: Option<super::console::ConsoleConfig>,
    /// What bounds a jail, and whether its activity is recorded.
    pub(crate) jail: super::jail::JailConfig,
    /// Each policy's `on_violation`, by policy name.
    pub(crate) on_violation: BTreeMap<String, super::violations::OnViolation>,
    /// Credential usage budgets.
    pub(crate) credential_budgets: super::violations::CredentialBudgets,
    /// What a million tokens of each model cost.
    pub(crate) model_prices: std::sync::Arc<crate::llm::prices::PriceTable>,
    /// Each policy's model budget.
    pub(crate) model_budgets: crate::llm::budget::ModelBudgets,
    /// Address guard and name overrides.
    pub(crate) network: Network,
    /// Timeouts.
    pub(crate) timeouts: Timeouts,
    /// Caps.
    pub(crate) limits: LimitsConfig,
    /// Per-sandbox certificate authorities.
    pub ca: CaConfig,
    /// cordon's connections to upstreams.
    pub(crate) upstream: UpstreamConfig,
    /// The file vault.
    pub(crate) vault: crate::config::credentials::FileVaultSpec,
    /// An OpenBao / HashiCorp Vault server, if configured.
    pub(crate) openbao: Option<crate::config::credentials::OpenBaoSpec>,
    /// How long a secret read from the file vault or OpenBao is kept (`vault.cache_ttl`; zero: read every time).
    pub(crate) secret_cache: std::time::Duration,
    /// Credentials by name.
    pub(crate) credentials: BTreeMap<crate::names::CredentialName, crate::config::credentials::CredentialSpec>,
    /// Sandboxes declared in the file.
    pub(crate) sandboxes: Vec<SandboxSpec>,
    /// Policies by name, each shared with the requests decided under it.
    pub policies: BTreeMap<String, std::sync::Arc<Policy>>,
    /// The control plane.
    pub(crate) control: ControlConfig,
    /// Human approval.
    pub(crate) approval: ApprovalConfig,
    /// Operational logs' format.
    pub(crate) log_format: LogFormat,
    /// What was accepted but is probably not meant (`FILE: PATH: message`): printed by `cordon check`, logged at
    /// start and reload.
    pub(crate) warnings: Vec<String>,
}

impl Config {
    /// The audit log's file, when audit records go to one.
    pub(crate) fn audit_file(&self) -> Option<&std::path::Path> {
        match &self.audit {
            AuditConfig::File(p) => Some(p),
            AuditConfig::Stdout => None,
        }
    }
}

/// Validate the file `source` (its relative paths read against `base`): every section in turn, then what ties
/// them together (the credentials and budgets policies name, the sandboxes' policies), then the lints.
pub(super) fn validate(source: &str, base: super::paths::Base, mut raw: RawConfig) -> Result<Config, ConfigErrors> {
    let mut errs = Errors {
        file: source.to_string(),
        list: Vec::new(),
        warnings: Vec::new(),
        base,
    };
    let listen = listen::listen(&mut errs, std::mem::take(&mut raw.listen));
    let previews = previews::previews(&mut errs, raw.previews.take(), listen.preview);
    let admin_tls = admin::admin_tls(&mut errs, raw.admin.take(), listen.admin);
    let console = console::console(&mut errs, raw.console.take(), listen.console, listen.admin);
    console::certs_and_sign_in(&mut errs, admin_tls.as_ref(), console.as_ref(), listen.console);
    listen::check(&mut errs, &listen, admin_tls.is_some(), console.is_some());
    let per_user_jails = raw.limits.per_user.as_mut().and_then(|u| u.jails.take());
    let activity = flag(&mut errs, "audit.activity", raw.audit.activity.take());
    let policy_jails: Vec<(String, RawJailLimits)> = raw
        .policies
        .iter_mut()
        .filter_map(|(name, p)| Some((name.clone(), p.jail.take()?)))
        .collect();
    let jail = jail::jail(&mut errs, raw.jail.take(), policy_jails, per_user_jails, activity);
    let control = control::control(&mut errs, std::mem::take(&mut raw.control), &listen);
    let approval = approval::approval(&mut errs, std::mem::take(&mut raw.approval));
    let (audit, audit_chain) = audit::audit(&mut errs, std::mem::take(&mut raw.audit));
    let network = network::network(&mut errs, raw.network);
    let timeouts = timeouts::timeouts(&mut errs, std::mem::take(&mut raw.timeouts));
    let limits = limits::limits(&mut errs, std::mem::take(&mut raw.limits));
    let on_violation: BTreeMap<String, OnViolation> = raw
        .policies
        .iter_mut()
        .filter_map(|(name, p)| {
            let raw = p.on_violation.take()?;
            violations::on_violation(&mut errs, &format!("policies.{name}"), raw).map(|o| (name.clone(), o))
        })
        .collect();
    let model_prices = super::model_api::prices(&mut errs, std::mem::take(&mut raw.model_prices));
    let raw_model_budgets = raw
        .policies
        .iter_mut()
        .filter_map(|(name, p)| Some((name.clone(), p.model_budget.take()?)))
        .collect();
    let model_budgets = super::model_api::budgets(&mut errs, raw_model_budgets, &model_prices);
    let mut credential_budgets = CredentialBudgets::default();
    for (name, c) in raw.credentials.iter_mut() {
        if let Some(b) = c.budget.take() {
            let at = format!("credentials.{name}.budget");
            if let Some(b) = violations::budget(&mut errs, &at, b) {
                credential_budgets.credentials.insert(name.clone(), b);
            }
        }
    }
    for (policy, p) in raw.policies.iter_mut() {
        for (name, b) in std::mem::take(&mut p.credential_budget) {
            let at = format!("policies.{policy}.credential_budget.{name}");
            if !p.credentials.contains(&name) {
                errs.at(&at, format!("{name:?} is not one of this policy's credentials"));
            } else if let Some(b) = violations::budget(&mut errs, &at, b) {
                credential_budgets.policies.insert((policy.clone(), name), b);
            }
        }
    }
    let exposed: BTreeMap<String, Vec<u16>> = raw
        .policies
        .iter_mut()
        .map(|(name, p)| (name.clone(), previews::expose(&mut errs, name, p.expose.take())))
        .collect();
    let mut policy_credentials: BTreeMap<String, (Vec<String>, BTreeMap<String, RawScope>)> = raw
        .policies
        .iter_mut()
        .map(|(name, p)| {
            (
                name.clone(),
                (
                    std::mem::take(&mut p.credentials),
                    std::mem::take(&mut p.credential_scope),
                ),
            )
        })
        .collect();
    let ca = ca::ca(&mut errs, raw.ca);
    let upstream = upstream::upstream(&mut errs, raw.upstream);
    let openbao = credentials::openbao(&mut errs, raw.vault.openbao.take());
    let secret_cache = duration(
        &mut errs,
        "vault.cache_ttl",
        raw.vault.cache_ttl.take(),
        std::time::Duration::from_secs(300),
    );
    let vault = credentials::vault(&mut errs, raw.vault);
    let creds = credentials::credentials(&mut errs, raw.credentials);
    credentials::refresh_needs_store(
        &mut errs,
        &creds,
        control.store.is_some() || control.postgres.is_some(),
        control.store_key().is_some(),
    );
    let raw_boundaries: BTreeMap<String, super::policies::RawBoundary> = raw
        .policies
        .iter_mut()
        .filter_map(|(name, p)| Some((name.clone(), p.boundary.take()?)))
        .collect();
    let raw_access: BTreeMap<String, super::policies::RawAccess> = raw
        .policies
        .iter_mut()
        .filter_map(|(name, p)| Some((name.clone(), p.access.take()?)))
        .collect();
    let mut policies = policies::policies(&mut errs, raw.policies);
    for (name, p) in policies.iter_mut() {
        p.expose = exposed.get(name).cloned().unwrap_or_default();
        if let Some((list, scopes)) = policy_credentials.remove(name) {
            credentials::check_policy_credentials(&mut errs, name, &list, &creds);
            p.credential_scope = credentials::scopes(&mut errs, name, &list, scopes, &creds);
            p.credentials = list.into_iter().map(crate::names::CredentialName::from).collect();
        }
    }
    super::boundary::boundaries(&mut errs, raw_boundaries, &mut policies, &creds);
    super::access::access(&mut errs, raw_access, &mut policies, control.postgres.is_some());
    lint::network(&mut errs, &network);
    lint::policies(&mut errs, &policies, &network);
    let sandboxes = sandboxes::sandboxes(&mut errs, raw.sandboxes, &policies);
    let log_format = log::log_format(&mut errs, raw.log);
    if errs.list.is_empty() {
        Ok(Config {
            source: source.to_string(),
            base: errs.base,
            listen,
            audit,
            audit_chain,
            on_violation,
            credential_budgets,
            model_prices: std::sync::Arc::new(model_prices),
            model_budgets,
            network,
            timeouts,
            limits,
            ca,
            upstream,
            vault,
            openbao,
            secret_cache,
            credentials: creds.into_iter().map(|(k, v)| (k.into(), v)).collect(),
            sandboxes,
            policies: policies
                .into_iter()
                .map(|(name, p)| (name, std::sync::Arc::new(p)))
                .collect(),
            control,
            approval,
            log_format,
            previews,
            admin_tls,
            console,
            jail,
            warnings: errs.warnings,
        })
    } else {
        Err(ConfigErrors(errs.list))
    }
}
