//! Validation of who may use the admin API: `control.admin_token` and `control.admin_tokens`.

use super::fields::{Errors, secret_ref};
use crate::config::principals::{AdminToken, LEGACY_TOKEN_NAME};
use crate::config::raw::{RawAdminToken, RawSecretRef};
use crate::principal::{Role, Roles, valid_name};

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
