//! One entry of `credentials:`: where its secret comes from, where it may go, how it is applied, what it may mint
//! (`allow_minting:`, names from the table in `minting.rs`) and what it is for (`kind:`). As written and
//! validated; and the check that every credential a policy names exists.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Deserialize;

use super::binding::{Binding, RawBinding, binding};
use super::inject::{Inject, RawInject, inject};
use super::minting::{MintingKind, named, names};
use super::secret::SecretRef;
use super::source::{RawSource, SecretSource, source};
use crate::config::errors::Errors;
use crate::config::fields::flag;
use crate::config::scalars::Flag;
use crate::config::shapes;
use crate::config::violations::RawBudget;

/// One entry of `credentials:`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(
    deny_unknown_fields,
    expecting = "a credential: a mapping with source, bind and inject"
)]
pub(crate) struct RawCredential {
    /// Where the secret comes from.
    pub(crate) source: Option<RawSource>,
    /// Where it may be sent.
    pub(crate) bind: Option<RawBinding>,
    /// How it is applied.
    pub(crate) inject: Option<RawInject>,
    /// If the upstream echoes the secret back (response headers, text bodies up to 1 MiB), replace it with
    /// the sandbox's placeholder.
    #[serde(default)]
    pub(crate) mask_echo: Flag,
    /// How much each sandbox (or user) may use it per window.
    pub(crate) budget: Option<RawBudget>,
    /// The minting calls (new keys, tokens, passwords) this credential may make, e.g. `sts:AssumeRole`.
    #[serde(default)]
    pub(crate) allow_minting: Vec<String>,
    /// What the credential is for, where cordon cannot tell from its source or hosts: `github` (a GitHub
    /// Enterprise API host), whose minting calls are refused.
    #[schemars(with = "Option<shapes::CredentialKind>")]
    pub(crate) kind: Option<String>,
}

/// One configured credential.
#[derive(Debug, Clone)]
pub(crate) struct CredentialSpec {
    /// Its name (what audit records and errors say; never the value).
    pub(crate) name: String,
    /// Where the secret comes from.
    pub(crate) source: SecretSource,
    /// Where it may be sent.
    pub(crate) binding: Binding,
    /// How it is applied.
    pub(crate) inject: Inject,
    /// Replace the secret with the sandbox's placeholder where the upstream echoes it back.
    pub(crate) mask_echo: bool,
    /// The minting calls it may make (names from [`super::minting::MINTING`]); every other is refused.
    pub(crate) allow_minting: Vec<&'static str>,
    /// A credential on the GitHub API (a `github_app` source, a host `github.com` or under it, or `kind:
    /// github`): GitHub's minting calls are refused through it.
    pub(crate) github: bool,
}

impl CredentialSpec {
    /// The secrets it reads, each with the key it is written under (`source`, `source.oauth2.client_secret`...).
    pub(crate) fn secret_refs(&self) -> Vec<(&'static str, &SecretRef)> {
        match &self.source {
            SecretSource::Static(r) => vec![("source", r)],
            SecretSource::OAuth2(o) => vec![("source.oauth2.client_secret", &o.client_secret)],
            SecretSource::OAuth2Refresh(o) => o
                .client_secret
                .iter()
                .map(|r| ("source.oauth2_refresh.client_secret", r))
                .collect(),
            SecretSource::GitHubApp(g) => vec![("source.github_app.private_key", &g.private_key)],
            SecretSource::Aws(a) => [
                ("source.aws.access_key_id", &a.access_key_id),
                ("source.aws.secret_access_key", &a.secret_access_key),
            ]
            .into_iter()
            .chain(a.session_token.as_ref().map(|t| ("source.aws.session_token", t)))
            .collect(),
        }
    }
}

/// An `oauth2_refresh` credential keeps its refresh token in the store, sealed under `control.store_key`: both
/// must be configured (`check` refuses what `run` would).
pub(crate) fn refresh_needs_store(errs: &mut Errors, creds: &BTreeMap<String, CredentialSpec>, store: bool, key: bool) {
    for name in creds
        .values()
        .filter(|c| matches!(c.source, SecretSource::OAuth2Refresh(_)))
        .map(|c| &c.name)
    {
        let at = format!("credentials.{name}.source.oauth2_refresh");
        if !store {
            errs.at(
                &at,
                "needs `control.store` (a SQLite file, or postgres:// for replicas): cordon keeps the rotating \
                 refresh token there, so that a restart or a crash never loses it",
            );
        } else if !key {
            errs.at(
                &at,
                "needs `control.store_key`: the refresh token is sealed at rest under it; write e.g. \
                 `store_key: { env: CORDON_STORE_KEY }` (at least 32 characters, the same on every replica)",
            );
        }
    }
}

/// `credentials:`: each entry whole (source, binding, injection, echo masking, kind, minting calls), or not at all.
pub(crate) fn credentials(errs: &mut Errors, raw: BTreeMap<String, RawCredential>) -> BTreeMap<String, CredentialSpec> {
    let mut out = BTreeMap::new();
    for (name, c) in raw {
        let base = format!("credentials.{name}");
        let before = errs.list.len();
        let source = match c.source {
            None => {
                errs.at(
                    &base,
                    "has no `source`; write e.g. `source: { vault: openai-api-key }` or `source: { env: OPENAI_KEY }`",
                );
                None
            }
            Some(s) => source(errs, &format!("{base}.source"), s),
        };
        let hosts: Vec<String> = c.bind.as_ref().map(|b| b.hosts.clone()).unwrap_or_default();
        let binding = match c.bind {
            None => {
                errs.at(
                    &base,
                    "has no `bind`; say where it may be sent, e.g. `bind: { hosts: [api.openai.com] }`",
                );
                None
            }
            Some(b) => binding(errs, &format!("{base}.bind"), b),
        };
        let is_aws = matches!(source, Some(SecretSource::Aws(_)));
        let inject = match c.inject {
            // AWS keys are only ever applied by signing: that is what an absent `inject` means for them.
            None if is_aws => Some(Inject::AwsSigV4 {
                region: None,
                service: None,
            }),
            raw => inject(errs, &format!("{base}.inject"), raw.unwrap_or_default()),
        };
        let mask_echo = flag(errs, &format!("{base}.mask_echo"), Some(c.mask_echo)).unwrap_or(false);
        if is_aws && mask_echo {
            errs.at(
                format!("{base}.mask_echo"),
                "an AWS secret never leaves cordon (only signatures made with it do), so there is nothing to mask; \
                 and masking removes the Range headers S3 clients sign. Remove `mask_echo`",
            );
        }
        match (&inject, is_aws) {
            (Some(Inject::AwsSigV4 { .. }), false) if source.is_some() => errs.at(
                format!("{base}.inject.aws_sigv4"),
                "signs with AWS keys: it needs `source: { aws: {access_key_id, secret_access_key} }`",
            ),
            (Some(i), true) if !matches!(i, Inject::AwsSigV4 { .. }) => errs.at(
                format!("{base}.inject"),
                "AWS keys are applied by signing the request (`aws_sigv4: {}`), never as a header or placeholder",
            ),
            _ => {}
        }
        let github = github(
            errs,
            &format!("{base}.kind"),
            c.kind.as_deref(),
            source.as_ref(),
            &hosts,
        );
        let allow_minting = source
            .as_ref()
            .map(|s| allow(errs, &format!("{base}.allow_minting"), s, github, c.allow_minting))
            .unwrap_or_default();
        if let (Some(source), Some(binding), Some(inject)) = (source, binding, inject)
            && errs.list.len() == before
        {
            out.insert(
                name.clone(),
                CredentialSpec {
                    name,
                    source,
                    binding,
                    inject,
                    mask_echo,
                    allow_minting,
                    github,
                },
            );
        }
    }
    out
}

/// Every credential a policy names must exist.
pub(crate) fn check_policy_credentials(
    errs: &mut Errors,
    policy: &str,
    names: &[String],
    credentials: &BTreeMap<String, CredentialSpec>,
) {
    for (i, n) in names.iter().enumerate() {
        if !credentials.contains_key(n) {
            let known: Vec<&str> = credentials.keys().map(String::as_str).collect();
            errs.at(
                format!("policies.{policy}.credentials[{i}]"),
                format!("{n:?} is not a credential; the credentials are: {}", known.join(", ")),
            );
        }
    }
}

/// The kinds of minting call a credential from `source` can make: AWS keys sign AWS calls; every other
/// credential is injected as it is, and can carry an OAuth2 token request; a GitHub one, GitHub's calls too.
fn kinds(source: &SecretSource, github: bool) -> &'static [MintingKind] {
    match source {
        SecretSource::Aws(_) => &[MintingKind::Aws],
        _ if github => &[MintingKind::GitHub, MintingKind::OAuth2],
        _ => &[MintingKind::OAuth2],
    }
}

/// Whether a credential is a GitHub one: its source is a GitHub App, a host it is bound to is `github.com` or
/// under it, or its `kind` (at `path`) says `github`, the only kind there is to say.
fn github(errs: &mut Errors, path: &str, kind: Option<&str>, source: Option<&SecretSource>, hosts: &[String]) -> bool {
    let named = match kind.map(str::trim) {
        None => false,
        Some(k) if k.eq_ignore_ascii_case("github") => true,
        Some(k) => {
            errs.at(
                path,
                format!("{k:?} is not a kind cordon knows; the one there is: github (a GitHub Enterprise API host)"),
            );
            false
        }
    };
    let github_host = |h: &String| {
        let h = h.trim().trim_end_matches('.').to_ascii_lowercase();
        h == "github.com" || h.ends_with(".github.com")
    };
    named || matches!(source, Some(SecretSource::GitHubApp(_))) || hosts.iter().any(github_host)
}

/// The entries of `raw` at `path`, as the table names them; unknown names and names of another kind are errors.
fn allow(errs: &mut Errors, path: &str, source: &SecretSource, github: bool, raw: Vec<String>) -> Vec<&'static str> {
    let kinds = kinds(source, github);
    let mut out = Vec::new();
    for (i, entry) in raw.iter().enumerate() {
        let at = format!("{path}[{i}]");
        match named(entry.trim()) {
            Some(m) if kinds.contains(&m.kind) => {
                if !out.contains(&m.name) {
                    out.push(m.name);
                }
            }
            Some(m) => {
                let hint = match m.kind {
                    MintingKind::GitHub => " (bind it to a GitHub host, or say `kind: github`)",
                    MintingKind::Aws => " (`source.aws`)",
                    MintingKind::OAuth2 => " (AWS keys sign requests; they carry no OAuth2 token request)",
                };
                errs.at(
                    at,
                    format!(
                        "{entry:?} is a minting call of {} credentials; this credential is not one{hint}",
                        m.kind.name()
                    ),
                );
            }
            None => {
                let known: Vec<&str> = kinds.iter().flat_map(|k| names(*k)).collect();
                errs.at(
                    at,
                    format!(
                        "{entry:?} is not a minting call cordon refuses; for this credential: {}",
                        known.join(", ")
                    ),
                );
            }
        }
    }
    out
}
