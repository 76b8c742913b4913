//! What an admin call did, for its audit record: handlers attach an [`Acted`] to a successful answer (the
//! sandbox it touched, a sentence, the held request a decision covered), and the router writes the record.

use super::access::Caller;
use super::response::AdminResponse;
use crate::audit::{AdminAction, ApprovalRecord, Covered};
use crate::state::ProxyState;

/// The held request a decision covered, owned.
#[derive(Clone, Debug)]
pub(super) struct CoveredRequest {
    pub(super) method: String,
    pub(super) host: String,
    pub(super) port: u16,
    pub(super) path: String,
    pub(super) policy: String,
    pub(super) user: String,
    pub(super) approval: ApprovalRecord,
}

/// What a handler did, attached to its answer's extensions.
#[derive(Clone, Debug, Default)]
pub(super) struct Acted {
    /// The sandbox touched (else the one the path names).
    pub(super) sandbox: Option<String>,
    /// A sentence for operators.
    pub(super) detail: Option<String>,
    /// For a decision: the held request and the decision.
    pub(super) covered: Option<CoveredRequest>,
}

/// `resp`, carrying `acted` for the record.
pub(super) fn with(mut resp: AdminResponse, acted: Acted) -> AdminResponse {
    resp.extensions_mut().insert(acted);
    resp
}

/// Write the record of `action` done by `caller` when `resp` says it succeeded; `path_sandbox` is the sandbox
/// the path names, if any.
pub(super) fn record(
    state: &ProxyState,
    caller: &Caller,
    action: &str,
    path_sandbox: Option<&str>,
    resp: &mut AdminResponse,
) {
    if !resp.status().is_success() {
        return;
    }
    let acted = resp.extensions_mut().remove::<Acted>().unwrap_or_default();
    let sandbox = acted.sandbox.as_deref().or(path_sandbox);
    let covered = acted.covered.as_ref().map(|c| {
        (
            Covered {
                method: &c.method,
                host: &c.host,
                port: c.port,
                path: &c.path,
                policy: &c.policy,
                user: &c.user,
            },
            c.approval.clone(),
        )
    });
    crate::audit::admin(
        &state.audit,
        AdminAction {
            principal: Some(&caller.principal),
            client: caller.client,
            action,
            status: resp.status().as_u16(),
            refused: None,
            sandbox,
            detail: acted.detail,
            covered,
        },
    );
}
