//! Step 1: who is talking.

use std::sync::Arc;

use super::exchange::Exchange;
use super::input::Claim;
use super::record;
use crate::addr::{ClientAddr, OriginalDst};
use crate::audit::Kind;
use crate::error::{ProxyError, TunnelEnd};
use crate::identity::{self, AuthFailure, Sandbox};
use crate::limits::LimitRefusal;
use crate::session::admission;
use crate::state::ProxyState;

impl Exchange {
    /// Identify the sender from this request alone (never from an earlier request on the connection), tie
    /// the client connection to the sandbox, and start counting a plain request's bytes against its budget.
    pub(super) fn identify(&mut self, claim: Claim) -> Result<Arc<Sandbox>, ProxyError> {
        let established = matches!(claim, Claim::Established(_));
        let sandbox = match claim {
            Claim::Credentials(credentials) => self.authenticate(credentials)?,
            Claim::Source => {
                let ip = self.client.ip();
                let run_time = || {
                    self.state()
                        .and_then(|s| s.control.by_source(ip, crate::control::now()))
                };
                self.generation
                    .identities
                    .by_source(ip)
                    .or_else(run_time)
                    .ok_or(ProxyError::UnknownSource(ip))?
            }
            Claim::Established(sandbox) => {
                self.audit.identity(&sandbox);
                // SECURITY: the identity was established when the tunnel opened; each request inside checks it
                // still holds (revoked, expired or removed by a reload), without waiting for the tunnel to close.
                if let Some(state) = self.state() {
                    state
                        .entitled(&self.generation, &sandbox)
                        .map_err(|why| ProxyError::Auth(why.into()))?;
                }
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
        let Some(state) = self.state().cloned() else {
            return Ok(sandbox);
        };
        if let Some(conn) = &self.conn {
            // A CONNECT's connection turns into a tunnel, which is counted as such.
            conn.attach(&state.sessions, &state.limits(), &sandbox, self.kind != Kind::Connect)
                .map_err(ProxyError::Limited)?;
        }
        Ok(sandbox)
    }

    /// A proxy credential, judged. Failed attempts count against the (source address, claimed sandbox id) and,
    /// under a higher ceiling, the source address; over `limits.auth_failures` that claim from that address
    /// gets 429 for a while (over `limits.per_source.auth_failures`, everything from it), audited once per
    /// burst.
    fn authenticate(
        &mut self,
        credentials: Result<Option<(String, String)>, AuthFailure>,
    ) -> Result<Arc<Sandbox>, ProxyError> {
        let Some(state) = self.state().cloned() else {
            return Err(ProxyError::Auth(AuthFailure::Missing));
        };
        let ip = self.client.ip();
        let limits = state.limits();
        let claim = credentials
            .as_ref()
            .ok()
            .and_then(Option::as_ref)
            .map(|(id, _)| id.as_str());
        // SECURITY: an address over its rate of failed authentications for one sandbox id is refused outright
        // for that id until its block ends (over its ceiling, for every id), whatever it sends, so tokens
        // cannot be guessed at line rate; its neighbours behind the same address keep working.
        if let Some(refusal) = admission::auth_blocked(&limits, ip, claim) {
            return Err(self.throttled(&state, refusal));
        }
        match identity::identify(&self.generation.identities, &state.control, &credentials, ip) {
            Ok(sandbox) => Ok(sandbox),
            // Clients commonly ask without credentials first and retry with them after the 407.
            Err(AuthFailure::Missing) => Err(ProxyError::Auth(AuthFailure::Missing)),
            Err(failure) => Err(match admission::auth_failed(&limits, ip, claim) {
                Ok(()) => ProxyError::Auth(failure),
                Err(refusal) => self.throttled(&state, refusal),
            }),
        }
    }

    fn throttled(&mut self, state: &ProxyState, refusal: LimitRefusal) -> ProxyError {
        state.auth_bursts.count(self.client.ip());
        self.audit.counted_elsewhere();
        ProxyError::Limited(refusal)
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
