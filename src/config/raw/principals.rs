//! The serde mirror of who may use the admin API: `control.admin_tokens`.

use schemars::JsonSchema;
use serde::Deserialize;

use super::RawSecretRef;
use super::shapes::Role;

/// `control.admin_tokens[]`: a named bearer token and its roles.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "a mapping with name, roles and token")]
pub(in crate::config) struct RawAdminToken {
    /// The principal's name: what audit records and approval decisions carry.
    pub(crate) name: String,
    /// `admin`, `platform`, `approver`, `viewer`.
    #[schemars(with = "Vec<Role>")]
    pub(crate) roles: Vec<String>,
    /// Where the token is (any secret source).
    pub(crate) token: RawSecretRef,
}
