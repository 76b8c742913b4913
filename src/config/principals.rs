//! Who may use the admin API, as configured: named bearer tokens with their roles.

use super::credentials::SecretRef;
use crate::principal::Roles;

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
