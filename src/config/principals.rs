//! Who may use the admin API: `control.admin_token` and `control.admin_tokens` (named bearer tokens with their
//! roles), as written and validated.

use schemars::JsonSchema;
use serde::Deserialize;

use super::credentials::{RawSecretRef, SecretRef, secret_ref};
use super::errors::Errors;
use super::shapes;
use crate::principal::{Role, Roles, valid_name};

/// The principal the single `control.admin_token` stands for: named `admin`, with every right.
pub(crate) const LEGACY_TOKEN_NAME: &str = "admin";

/// One entry of `control.admin_tokens` (or `control.admin_token`, as [`LEGACY_TOKEN_NAME`] with role `admin`).
#[derive(Debug, Clone)]
pub(crate) struct AdminToken {
    /// The principal's name, unique among the tokens.
    pub(crate) name: String,
    /// What it may do (never empty).
    pub(crate) roles: Roles,
    /// Where the token is.
    pub(crate) token: SecretRef,
    /// Where it was written, for errors: `control.admin_tokens[2]` or `control.admin_token`.
    pub(crate) at: String,
}

/// `control.admin_tokens[]`: a named bearer token and its roles.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "a mapping with name, roles and token")]
pub(super) struct RawAdminToken {
    /// The principal's name: what audit records and approval decisions carry.
    pub(crate) name: String,
    /// `admin`, `platform`, `approver`, `viewer`.
    #[schemars(with = "Vec<shapes::Role>")]
    pub(crate) roles: Vec<String>,
    /// Where the token is (any secret source).
    pub(crate) token: RawSecretRef,
}

/// The tokens: `admin_token` first (principal `admin`, role `admin`), then `admin_tokens` in order. Names are
/// unique; every entry has at least one known role.
pub(super) fn admin_tokens(
    errs: &mut Errors,
    legacy: Option<RawSecretRef>,
    named: Option<Vec<RawAdminToken>>,
) -> Vec<AdminToken> {
    let mut out: Vec<AdminToken> = Vec::new();
    if let Some(token) = legacy.and_then(|r| secret_ref(errs, "control.admin_token", r)) {
        out.push(AdminToken {
            name: LEGACY_TOKEN_NAME.to_owned(),
            roles: Roles::of([Role::Admin]),
            token,
            at: "control.admin_token".to_owned(),
        });
    }
    for (i, raw) in named.unwrap_or_default().into_iter().enumerate() {
        let at = format!("control.admin_tokens[{i}]");
        if !valid_name(&raw.name) {
            errs.at(
                format!("{at}.name"),
                format!(
                    "{:?} is not a token name: 1 to 64 letters, digits and `._@+-` (it is what audit records carry)",
                    raw.name
                ),
            );
        }
        // SECURITY: "cordon" is who the decisions cordon makes itself are by (an ask ended with its sandbox).
        if raw.name == crate::principal::CORDON {
            errs.at(
                format!("{at}.name"),
                "\"cordon\" is reserved: it names the decisions cordon makes itself (an ask whose sandbox went \
                 away); choose another name",
            );
        }
        // SECURITY: a principal's name is what every audit record and decision it makes carries; two tokens
        // of one name would make them indistinguishable, so the second is refused.
        if let Some(first) = out.iter().find(|t| t.name == raw.name) {
            errs.at(
                format!("{at}.name"),
                format!(
                    "{:?} is already the name of {}; each token needs a name of its own{}",
                    raw.name,
                    first.at,
                    if first.at == "control.admin_token" {
                        " (control.admin_token is the principal \"admin\")"
                    } else {
                        ""
                    }
                ),
            );
        }
        let mut roles = Roles::default();
        for (j, name) in raw.roles.iter().enumerate() {
            match Role::parse(name) {
                Ok(r) => roles = roles.union(Roles::of([r])),
                Err(why) => errs.at(format!("{at}.roles[{j}]"), why),
            }
        }
        if raw.roles.is_empty() {
            errs.at(
                format!("{at}.roles"),
                "is empty; give at least one of admin, platform, approver, viewer",
            );
        }
        if let Some(token) = secret_ref(errs, &format!("{at}.token"), raw.token) {
            out.push(AdminToken {
                name: raw.name,
                roles,
                token,
                at,
            });
        }
    }
    out
}
