//! Step 1: who is talking.

use std::sync::Arc;

use super::exchange::Exchange;
use super::input::Claim;
use super::record;
use crate::addr::{ClientAddr, OriginalDst};
use crate::error::{ProxyError, TunnelEnd};
use crate::identity::{AuthFailure, Sandbox};
use crate::state::ProxyState;

impl Exchange {
    /// Identify the sender from this request alone (never from an earlier request on the connection), tie
    /// the client connection to the sandbox, and start counting a plain request's bytes against its budget.
    pub(super) fn identify(&mut self, claim: Claim) -> Result<Arc<Sandbox>, ProxyError> {
        let established = matches!(claim, Claim::Established(_));
        let sandbox = match claim {
            Claim::Credentials(credentials) => {
                self.fx
                    .authenticate(&self.generation, self.client, credentials, &mut self.audit)?
            }
            Claim::Source => {
                let ip = self.client.ip();
                self.generation
                    .identities
                    .by_source(ip)
                    .or_else(|| self.fx.by_source(ip))
                    .ok_or(ProxyError::UnknownSource(ip))?
            }
            Claim::Established(sandbox) => {
                self.audit.identity(&sandbox);
                // SECURITY: the identity was established when the tunnel opened; each request inside checks it
                // still holds (revoked, expired or removed by a reload), without waiting for the tunnel to close.
                self.fx.entitled(&self.generation, &sandbox)?;
                sandbox
            }
            Claim::Named(id) => self
                .generation
                .identities
                .get(&id)
                .ok_or(ProxyError::Auth(AuthFailure::Invalid))?,
        };
        if !established {
            self.audit.identity(&sandbox);
        }
        self.fx.attach(self.conn.as_ref(), &sandbox, self.kind)?;
        Ok(sandbox)
    }
}

/// The sandbox whose source range holds `client`, for a transparent connection before anything is read
/// from it. SECURITY: a transparent connection carries no credential; an address no sandbox claims gets
/// nothing but its audit record.
pub(crate) fn by_source(state: &Arc<ProxyState>, client: ClientAddr, original: OriginalDst) -> Option<Arc<Sandbox>> {
    let sandbox = state
        .current()
        .identities
        .by_source(client.ip())
        .or_else(|| state.control.by_source(client.ip(), crate::control::now()));
    if sandbox.is_none() {
        record::refuse_connection(state, client, original, None, &TunnelEnd::UnknownSource(client.ip()));
    }
    sandbox
}
