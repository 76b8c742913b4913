//! `sandboxes:`: the sandboxes the file declares, as written and validated into
//! [`SandboxSpec`](crate::identity::SandboxSpec)s.

use std::collections::{BTreeMap, HashSet};

use ipnet::IpNet;
use schemars::JsonSchema;
use serde::Deserialize;

use super::errors::Errors;
use super::fields::cidr;
use super::shapes;
use crate::identity::SandboxSpec;
use crate::names::SandboxId;
use crate::policy::Policy;

/// One entry of `sandboxes:`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(
    deny_unknown_fields,
    expecting = "a sandbox: a mapping with id, user, policy (and token_sha256 or source_cidrs, unless only `cordon jail` serves it)"
)]
pub(super) struct RawSandbox {
    /// Sandbox id.
    #[schemars(with = "Option<shapes::Text>")]
    pub(crate) id: Option<String>,
    /// Owning user.
    #[schemars(with = "Option<shapes::Text>")]
    pub(crate) user: Option<String>,
    /// Hex SHA-256 of the sandbox's proxy token. Neither this nor `source_cidrs`: only `cordon jail` serves the
    /// sandbox (with a credential of its own).
    #[schemars(with = "Option<shapes::Sha256>")]
    pub(crate) token_sha256: Option<String>,
    /// Source ranges that identify this sandbox without a token.
    #[serde(default)]
    #[schemars(with = "Vec<shapes::Cidr>")]
    pub(crate) source_cidrs: Vec<String>,
    /// Name of the policy.
    pub(crate) policy: Option<String>,
}

/// `sandboxes:`: ids unique and valid, an owner, a policy among `policies`, and source ranges that overlap no
/// other sandbox's.
pub(super) fn sandboxes(
    errs: &mut Errors,
    raw: Vec<RawSandbox>,
    policies: &BTreeMap<String, Policy>,
) -> Vec<SandboxSpec> {
    let mut out: Vec<SandboxSpec> = Vec::new();
    let mut seen = HashSet::new();
    for (i, s) in raw.into_iter().enumerate() {
        let base = format!("sandboxes[{i}]");
        let id = match SandboxId::parse(&s.id.unwrap_or_default()) {
            Ok(id) => {
                if !seen.insert(id.clone()) {
                    errs.at(format!("{base}.id"), format!("{id:?} is declared twice"));
                }
                Some(id)
            }
            Err(e) => {
                errs.at(format!("{base}.id"), e.to_string());
                None
            }
        };
        let user = s.user.unwrap_or_default();
        if user.trim().is_empty() {
            errs.at(
                format!("{base}.user"),
                "is missing; name the user who owns this sandbox",
            );
        }
        let policy = s.policy.unwrap_or_default();
        if !policies.contains_key(&policy) {
            let known: Vec<&str> = policies.keys().map(String::as_str).collect();
            errs.at(
                format!("{base}.policy"),
                format!("{policy:?} is not a policy; the policies are: {}", known.join(", ")),
            );
        }
        let token_sha256 = s.token_sha256.and_then(|h| {
            let mut out = [0u8; 32];
            hex::decode_to_slice(h.trim(), &mut out)
                .map_err(|_| {
                    errs.at(
                        format!("{base}.token_sha256"),
                        "is not 64 hex digits; write the SHA-256 of the token (`cordon token hash` prints it)",
                    )
                })
                .ok()
                .map(|()| out)
        });
        let source_cidrs: Vec<IpNet> = s
            .source_cidrs
            .iter()
            .enumerate()
            .filter_map(|(j, c)| cidr(errs, &format!("{base}.source_cidrs[{j}]"), c))
            .collect();
        // Neither `token_sha256` nor `source_cidrs`: a sandbox for `cordon jail`, which makes a credential of its
        // own for it (or knows it by the jail's address); `cordon run` says at start that nothing reaches it.
        for (j, net) in source_cidrs.iter().enumerate() {
            // SECURITY: overlapping source ranges would make one client address two sandboxes.
            if let Some(other) = out
                .iter()
                .find(|o| o.source_cidrs.iter().any(|n| n.contains(net) || net.contains(n)))
            {
                errs.at(
                    format!("{base}.source_cidrs[{j}]"),
                    format!(
                        "{net} overlaps a source range of sandbox {:?}; one address must mean one sandbox",
                        other.id
                    ),
                );
            }
        }
        // A sandbox whose id is no id is left out: the errors above refuse the whole configuration.
        let Some(id) = id else { continue };
        out.push(SandboxSpec {
            id,
            user,
            token_sha256,
            source_cidrs,
            policy,
        });
    }
    out
}
