//! The records of what never became a request: bytes refused below HTTP, and transparent connections
//! refused before they named a host.

use crate::addr::{ClientAddr, OriginalDst};
use crate::audit::{self, Kind};
use crate::error::{self, Side, TunnelEnd};
use crate::framing::FramingReport;
use crate::identity::Sandbox;
use crate::state::ProxyState;

/// One record for a request that never reached the service: refused by the framing guard below hyper,
/// or unparseable to hyper itself (which then answered 400). For the outer connection and for the
/// HTTP/1.1 inside an interception alike.
pub(crate) fn malformed(
    state: &ProxyState,
    client: ClientAddr,
    report: &FramingReport,
    result: &Result<(), hyper::Error>,
) {
    let malformed = match (report.violation(), result) {
        (Some(v), _) => Some((error::framing_status(&v), v.reason(), v.to_string())),
        (None, Err(e)) if e.is_parse() => Some((
            error::hyper_parse_status(e),
            error::hyper_parse_reason(e),
            e.to_string(),
        )),
        _ => None,
    };
    if let Some((status, code, detail)) = malformed {
        let mut pending = audit::Pending::start(state.audit.clone(), client.0, Kind::Malformed);
        pending.refused(true, Some(status.as_u16()), code, Side::Downstream, Some(detail));
        pending.finish();
    }
}

/// A transparent connection ended before it became a tunnel or a request: an address no sandbox claims, a
/// protocol cordon cannot police, a ClientHello without a usable server name.
pub(crate) fn refuse_connection(
    state: &ProxyState,
    client: ClientAddr,
    original: OriginalDst,
    sandbox: Option<&Sandbox>,
    end: &TunnelEnd,
) {
    let mut pending = audit::Pending::start(state.audit.clone(), client.0, Kind::Transparent);
    pending.original_dst(original.0);
    if let Some(sandbox) = sandbox {
        pending.identity(sandbox);
    }
    pending.ended(end);
    pending.finish();
}
