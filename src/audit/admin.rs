//! The record of an admin action (kind `admin`): who did it (the principal, how it proved itself, from which
//! address in `client`), what it did (`admin.action`, the sandbox it touched, and for a decision the held
//! request it covered in `method`/`host`/`port`/`path` with the decision in `approval`), and how it ended
//! (`status`; a `deny` with `admin_unauthorized` or `admin_forbidden` for a call that was refused).

use std::net::SocketAddr;
use std::sync::Arc;

use super::kind::{AdminRecord, ApprovalRecord, Kind};
use super::pending::Pending;
use super::sink::Sink;
use crate::error::Side;
use crate::principal::Principal;
use crate::reason::Reason;

/// The held request an approval decision covered, as its record says it.
pub(crate) struct Covered<'a> {
    /// The request's method.
    pub(crate) method: &'a str,
    /// Its host.
    pub(crate) host: &'a str,
    /// Its port.
    pub(crate) port: u16,
    /// Its path (without the query).
    pub(crate) path: &'a str,
    /// The policy that asked.
    pub(crate) policy: &'a str,
    /// The sandbox's user.
    pub(crate) user: &'a str,
}

/// One admin action.
pub(crate) struct AdminAction<'a> {
    /// Who (`None`: the call carried no valid credential).
    pub(crate) principal: Option<&'a Principal>,
    /// From where.
    pub(crate) client: SocketAddr,
    /// What.
    pub(crate) action: &'a str,
    /// The answer's status.
    pub(crate) status: u16,
    /// `None`: done; else why it was refused.
    pub(crate) refused: Option<Reason>,
    /// The sandbox it touched.
    pub(crate) sandbox: Option<&'a str>,
    /// A sentence for operators (the generation a reload made, the preview's port, why it was refused).
    pub(crate) detail: Option<String>,
    /// For a decision: the request it covered, and the decision.
    pub(crate) covered: Option<(Covered<'a>, ApprovalRecord)>,
}

/// Write the record of `act`.
pub(crate) fn admin(sink: &Arc<dyn Sink>, act: AdminAction<'_>) {
    let mut pending = Pending::start(sink.clone(), act.client, Kind::Admin);
    if let Some(id) = act.sandbox {
        pending.sandbox_id(id);
    }
    if let Some((covered, approval)) = act.covered {
        pending.method(Some(covered.method));
        pending.host(covered.host);
        pending.port(covered.port);
        pending.path(covered.path);
        pending.policy(covered.policy);
        pending.visitor(covered.user);
        pending.approval(approval);
    }
    pending.status(act.status);
    match act.refused {
        None => {
            pending.allowed(None, None);
            pending.reason(Reason::AdminAction);
        }
        Some(reason) => pending.refused(true, Some(act.status), reason, Side::Downstream, None),
    }
    pending.admin(AdminRecord {
        action: act.action.to_owned(),
        principal: act.principal.map(|p| p.name.clone()),
        via: act.principal.map(|p| p.via),
        roles: act.principal.map(|p| p.roles).unwrap_or_default(),
        detail: act.detail,
    });
    pending.finish();
}
