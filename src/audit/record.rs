//! The audit record: its fields, their names in the output, and the getters it is read through.
//!
//! Field names live here and nowhere else. The fields are private to the audit: a record is filled through the
//! typed setters of [`super::Pending`] (`pending.rs`), which only the request pipeline calls (`tests/it/repo/layers.rs`
//! holds it to that), and read through the getters. A record never holds a credential, a token or a query string: paths are
//! recorded without their query, and nothing from request headers is copied in.

use serde::Serialize;

use super::kind::Hashes;
pub use super::kind::{ApprovalRecord, Kind, Verdict};

/// One audit record.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Record {
    /// RFC 3339 time the request arrived.
    pub(super) time: String,
    /// Sandbox id, once known. Text, not a `SandboxId`: an admin action's record names the path segment it was
    /// asked with, which may be no id (a refused `DELETE /v1/sandboxes/..`).
    pub(super) sandbox: Option<String>,
    /// The sandbox's incarnation (`Sandbox::incarnation`), for what is kept per incarnation (credential
    /// budgets); not written out.
    #[serde(skip)]
    pub(super) incarnation: Option<String>,
    /// The sandbox's user.
    pub(super) user: Option<String>,
    /// Client address.
    pub(super) client: String,
    /// Kind of traffic.
    pub(super) kind: Kind,
    /// Request method.
    pub(super) method: Option<String>,
    /// Normalised destination host.
    pub(super) host: Option<String>,
    /// Destination port.
    pub(super) port: Option<u16>,
    /// Request path without the query string.
    pub(super) path: Option<String>,
    /// What was decided.
    pub(super) decision: Verdict,
    /// Machine-readable reason for a refusal, a would-deny or a failure.
    pub(super) reason: Option<String>,
    /// The policy consulted.
    pub(super) policy: Option<String>,
    /// Index of the allowing rule in that policy.
    pub(super) rule: Option<usize>,
    /// The address actually dialled (for DNS: the addresses answered).
    pub(super) dialled: Option<String>,
    /// Names of the credentials applied (never their values).
    pub(super) credentials: Option<Vec<crate::names::CredentialName>>,
    /// Status returned to the client.
    pub(super) status: Option<u16>,
    /// Bytes from the client (request body or tunnel upload).
    pub(super) bytes_up: u64,
    /// Bytes to the client (response body or tunnel download).
    pub(super) bytes_down: u64,
    /// Milliseconds from arrival to the end of the exchange.
    pub(super) duration_ms: f64,
    /// Detail of a failure, for operators.
    pub(super) error: Option<String>,
    /// Whose the refusal or failure was: `downstream` (the sandbox's request), `upstream` or `internal`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) side: Option<&'static str>,
    /// The human approval the request waited for (`action: ask`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) approval: Option<ApprovalRecord>,
    /// The access request the sandbox filed or read, answered by cordon itself.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) access: Option<super::kind::AccessRecord>,
    /// How many attempts one `auth_failures` record stands for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) count: Option<u64>,
    /// Transparent mode: the address the sandbox connected to (cordon dials its own resolution instead).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) original_dst: Option<String>,
    /// Transparent mode: whether that address is not one cordon resolved (or dialled) for the host.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) original_dst_differs: Option<bool>,
    /// DNS: the record type asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) qtype: Option<String>,
    /// Preview: the names of the cookies a dev server tried to set that cordon removed (cordon's own cookie,
    /// or another domain's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) set_cookie_stripped: Option<Vec<String>>,
    /// `jail_file`: the file's SHA-256 before and after the jailed command (`null`: it did not exist).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) sha256: Option<Hashes>,
    /// `admin`: the action, the principal that did it, how it proved itself, its roles.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) admin: Option<super::kind::AdminRecord>,
    /// `jail`: what happened to the jail.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) jail: Option<super::kind::JailRecord>,
    /// `exec`: the program a jailed command started.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) exec: Option<super::kind::ExecRecord>,
    /// `file`: what a jailed command did to a file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) file: Option<super::kind::FileRecord>,
    /// A request to an endpoint whose rule judges a protocol: its section, under the protocol's name (`mcp`: the
    /// method, tool and id of the message that decided; `graphql`: the type, name and root fields of the
    /// operation that decided).
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub(super) protocol: Option<crate::policy::protocol::ProtocolRecord>,
}

impl Record {
    /// Kind of traffic.
    pub(crate) fn kind(&self) -> Kind {
        self.kind
    }

    /// What was decided.
    pub(crate) fn decision(&self) -> Verdict {
        self.decision
    }

    /// Machine-readable reason, if any.
    pub(crate) fn reason(&self) -> Option<&str> {
        self.reason.as_deref()
    }

    /// Whether the exchange failed (after being allowed) or was refused with a detail.
    pub(crate) fn sandbox(&self) -> Option<&str> {
        self.sandbox.as_deref()
    }

    pub(crate) fn incarnation(&self) -> Option<&str> {
        self.incarnation.as_deref()
    }

    pub(crate) fn user(&self) -> Option<&str> {
        self.user.as_deref()
    }

    pub(crate) fn policy(&self) -> Option<&str> {
        self.policy.as_deref()
    }

    pub(crate) fn host(&self) -> Option<&str> {
        self.host.as_deref()
    }

    pub(crate) fn port(&self) -> Option<u16> {
        self.port
    }

    pub(crate) fn credentials(&self) -> Option<&[crate::names::CredentialName]> {
        self.credentials.as_deref().filter(|c| !c.is_empty())
    }

    pub(crate) fn bytes_up(&self) -> u64 {
        self.bytes_up
    }

    pub(crate) fn bytes_down(&self) -> u64 {
        self.bytes_down
    }

    pub(crate) fn has_error(&self) -> bool {
        self.error.is_some()
    }

    /// Milliseconds from arrival to the end.
    pub(crate) fn duration_ms(&self) -> f64 {
        self.duration_ms
    }
}
