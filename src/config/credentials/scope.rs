//! A policy's `credential_scope:`: its narrowing of the token credentials it uses (OAuth2 scope, audience and
//! resource; GitHub App repositories and permissions; an AWS session policy). As written and validated.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Deserialize;

use super::credential::CredentialSpec;
use super::source::SecretSource;
use crate::config::errors::Errors;
use crate::policy::ScopeOverride;

/// One entry of `credential_scope:`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "a mapping of keys and values")]
pub(crate) struct RawScope {
    /// OAuth2 scope.
    pub(crate) scope: Option<String>,
    /// OAuth2 audience.
    pub(crate) audience: Option<String>,
    /// OAuth2 resource.
    pub(crate) resource: Option<String>,
    /// GitHub App repositories.
    pub(crate) repositories: Option<Vec<String>>,
    /// GitHub App permissions.
    pub(crate) permissions: Option<BTreeMap<String, String>>,
    /// AWS AssumeRole session policy (an IAM policy document).
    pub(crate) session_policy: Option<serde_json::Value>,
}

/// A policy's narrowing of its token credentials: only for credentials it uses, and only the settings that
/// credential's kind has.
pub(crate) fn scopes(
    errs: &mut Errors,
    policy: &str,
    used: &[String],
    raw: BTreeMap<String, RawScope>,
    credentials: &BTreeMap<String, CredentialSpec>,
) -> BTreeMap<String, ScopeOverride> {
    let mut out = BTreeMap::new();
    for (name, s) in raw {
        let path = format!("policies.{policy}.credential_scope.{name}");
        if !used.contains(&name) {
            errs.at(&path, format!("{name:?} is not in this policy's `credentials`"));
            continue;
        }
        let oauth = s.scope.is_some() || s.audience.is_some() || s.resource.is_some();
        let github = s.repositories.is_some() || s.permissions.is_some();
        let aws = s.session_policy.is_some();
        match credentials.get(&name).map(|c| &c.source) {
            Some(SecretSource::OAuth2(_)) if github || aws => {
                errs.at(&path, "an OAuth2 credential takes `scope`, `audience` or `resource`");
            }
            Some(SecretSource::GitHubApp(_)) if oauth || aws => {
                errs.at(&path, "a GitHub App credential takes `repositories` or `permissions`");
            }
            Some(SecretSource::Aws(a)) if oauth || github || a.assume_role.is_none() => {
                errs.at(
                    &path,
                    "an AWS credential takes only `session_policy`, and only with `assume_role` (a session policy \
                     narrows an assumed role)",
                );
            }
            Some(SecretSource::Static(_)) => {
                errs.at(
                    &path,
                    "a stored secret cannot be narrowed; only OAuth2 and GitHub App tokens can",
                );
            }
            _ => {}
        }
        out.insert(
            name,
            ScopeOverride {
                scope: s.scope,
                audience: s.audience,
                resource: s.resource,
                repositories: s.repositories,
                permissions: s.permissions,
                session_policy: s
                    .session_policy
                    .and_then(|p| super::aws::session_policy(errs, &format!("{path}.session_policy"), p)),
            },
        );
    }
    out
}
