//! The serde mirror of `policies:` (and of a sandbox's own policy as the admin API receives it): each policy's
//! rules (with their `mcp:` and `graphql:` sections), its credential narrowing and `on_violation`.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Deserialize;

use super::shapes::{Cidr, Duration, PolicyMode, Port, RuleAction, TlsMode, ViolationAction};
use super::{RawBudget, RawJailLimits, Whole};

/// One entry of `policies:`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "a policy: a mapping with allow, credentials...")]
pub(in crate::config) struct RawPolicy {
    /// `enforce` (default) or `report`.
    #[schemars(with = "Option<PolicyMode>")]
    pub(crate) mode: Option<String>,
    /// Ordered allow rules.
    #[serde(default)]
    pub(crate) allow: Vec<RawRule>,
    /// Credentials sandboxes of this policy may use.
    #[serde(default)]
    pub(crate) credentials: Vec<String>,
    /// Per-credential narrowing for this policy's sandboxes (OAuth2 scope/audience/resource, GitHub App
    /// repositories/permissions).
    #[serde(default)]
    pub(crate) credential_scope: BTreeMap<String, RawScope>,
    /// What happens to a sandbox that keeps being refused for probing.
    pub(crate) on_violation: Option<RawOnViolation>,
    /// Credential budgets for this policy's sandboxes, replacing the credentials' own.
    #[serde(default)]
    pub(crate) credential_budget: BTreeMap<String, RawBudget>,
    /// Ports of its sandboxes that preview URLs may open.
    #[schemars(with = "Option<Vec<Port>>")]
    pub(crate) expose: Option<Vec<Whole>>,
    /// What a jail for a sandbox of this policy may spend (over `jail:`).
    pub(crate) jail: Option<RawJailLimits>,
}

/// `policies.NAME.on_violation:`
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "a mapping of keys and values")]
pub(in crate::config) struct RawOnViolation {
    /// The window the thresholds count in.
    #[schemars(with = "Option<Duration>")]
    pub(crate) window: Option<String>,
    /// Placeholders or secrets sent off their binding.
    pub(crate) exfiltration: Option<Whole>,
    /// Metadata names or addresses.
    pub(crate) metadata: Option<Whole>,
    /// Private and special ranges, cordon itself.
    pub(crate) private: Option<Whole>,
    /// Any other refusal by the policy.
    pub(crate) denied: Option<Whole>,
    /// `revoke` or `hold`.
    #[schemars(with = "Option<ViolationAction>")]
    pub(crate) action: Option<String>,
}

/// One entry of `credential_scope:`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "a mapping of keys and values")]
pub(in crate::config) struct RawScope {
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

/// One allow rule.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(
    deny_unknown_fields,
    expecting = "a rule: a mapping with host (or cidrs), and ports, methods, paths..."
)]
pub(in crate::config) struct RawRule {
    /// Exact host or `*.suffix`.
    pub(crate) host: Option<String>,
    /// CIDRs for IP-literal destinations.
    #[schemars(with = "Option<Vec<Cidr>>")]
    pub(crate) cidrs: Option<Vec<String>>,
    /// Allowed ports.
    #[schemars(with = "Option<Vec<Port>>")]
    pub(crate) ports: Option<Vec<Whole>>,
    /// Allowed methods.
    pub(crate) methods: Option<Vec<String>>,
    /// Allowed path globs.
    pub(crate) paths: Option<Vec<String>>,
    /// `intercept` (default) or `tunnel`.
    #[schemars(with = "Option<TlsMode>")]
    pub(crate) tls: Option<String>,
    /// `allow` (default) or `ask` (hold for a human's approval).
    #[schemars(with = "Option<RuleAction>")]
    pub(crate) action: Option<String>,
    /// For an MCP endpoint: the tools its sandboxes may call, ask for, never call; further methods.
    pub(crate) mcp: Option<RawMcp>,
    /// For a GraphQL endpoint: the operations its sandboxes may send, ask for, never send; the names they may use.
    pub(crate) graphql: Option<RawGraphql>,
}

/// A rule's `mcp:` section.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(
    deny_unknown_fields,
    expecting = "an mcp section: a mapping with tools, ask, deny and methods (lists of names or globs)"
)]
pub(in crate::config) struct RawMcp {
    /// Tools called at once.
    #[serde(default)]
    pub(crate) tools: Vec<String>,
    /// Tools held for a person.
    #[serde(default)]
    pub(crate) ask: Vec<String>,
    /// Tools refused.
    #[serde(default)]
    pub(crate) deny: Vec<String>,
    /// JSON-RPC methods beyond the lifecycle and tools/call.
    #[serde(default)]
    pub(crate) methods: Vec<String>,
}

/// A rule's `graphql:` section.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(
    deny_unknown_fields,
    expecting = "a graphql section: a mapping with operations, ask, deny (operation types or type.field) and names"
)]
pub(in crate::config) struct RawGraphql {
    /// Operation types or type.field entries sent at once.
    #[serde(default)]
    pub(crate) operations: Vec<String>,
    /// Held for a person.
    #[serde(default)]
    pub(crate) ask: Vec<String>,
    /// Refused.
    #[serde(default)]
    pub(crate) deny: Vec<String>,
    /// When given, the only operation names that may be sent.
    #[serde(default)]
    pub(crate) names: Vec<String>,
}

/// A sandbox's own policy as the admin API receives it (`POST /v1/sandboxes`, `PATCH /v1/sandboxes/{id}`): the
/// named policy it narrows, and rules written exactly as under `policies:`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a policy: a mapping with extends, allow...")]
pub(in crate::config) struct RawInline {
    /// The policy of the file it narrows (its ceiling).
    pub(crate) extends: String,
    /// `enforce` (default) or `report` (only where the base reports).
    pub(crate) mode: Option<String>,
    /// Ordered allow rules.
    #[serde(default)]
    pub(crate) allow: Vec<RawRule>,
    /// Credentials it may use; absent: the base's.
    pub(crate) credentials: Option<Vec<String>>,
    /// Refused with a message when present at all (even `null`): the base's narrowing applies.
    #[serde(default, deserialize_with = "present")]
    pub(crate) credential_scope: bool,
}

/// True for a member that is there, whatever its value (`null` included).
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    serde::de::IgnoredAny::deserialize(d).map(|_| true)
}
