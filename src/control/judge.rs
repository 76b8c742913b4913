//! Judging a run-time sandbox's credential on the hot path: the signature, then the store's record (renewals,
//! revocations, and the policy it runs under now), all from memory.

use std::sync::Arc;

use super::store::SandboxRow;
use super::{Control, now};
use crate::identity::{AuthFailure, Closed, Origin, Sandbox};
use crate::names::SandboxId;

impl Control {
    /// The sandbox a signed credential names, if the credential is good now. Memory only: safe on the hot path.
    /// Its policy is the record's (a PATCH changes it without re-issuing credentials), not the credential's.
    pub fn verify(&self, id: &str, credential: &str, now: i64) -> Result<Arc<Sandbox>, AuthFailure> {
        let claims = self.signer.verify(credential).ok_or(AuthFailure::Invalid)?;
        // SECURITY: a credential is good only for the id it was issued to.
        if claims.sub != id {
            return Err(AuthFailure::Invalid);
        }
        let sandbox = Sandbox::new(
            SandboxId::parse(&claims.sub).map_err(|_| AuthFailure::Invalid)?,
            claims.usr,
            claims.pol,
            Origin::Api {
                nonce: claims.nonce,
                expires: claims.exp,
            },
        );
        let policy = self
            .judged(&sandbox, now, SandboxRow::policy_label)
            .map_err(AuthFailure::from)?;
        Ok(Arc::new(sandbox.with_policy(policy)))
    }

    /// Whether `credential` carries a good signature for sandbox `id` (nothing else is checked). Memory only.
    pub(crate) fn signed_for(&self, id: &SandboxId, credential: &str) -> bool {
        self.signer.verify(credential).is_some_and(|c| c.sub == id.as_str())
    }

    /// Whether a run-time sandbox may still use cordon (declared ones always may, as far as this is concerned).
    pub(crate) fn check(&self, sandbox: &Sandbox, now: i64) -> Result<(), Closed> {
        match &sandbox.origin {
            Origin::Config => Ok(()),
            Origin::Api { .. } => self.judged(sandbox, now, |_| ()),
        }
    }

    /// `what` of the record of this incarnation of a run-time sandbox, if it may still use cordon. The record is
    /// judged where it lies in the view, not copied (every request of a run-time sandbox passes here).
    fn judged<T>(&self, sandbox: &Sandbox, now: i64, what: impl Fn(&SandboxRow) -> T) -> Result<T, Closed> {
        let Origin::Api { nonce, .. } = &sandbox.origin else {
            return Err(Closed::Removed);
        };
        let judge = |r: &SandboxRow| {
            // The store's record decides: it knows renewals and revocations.
            if &r.nonce != nonce || r.revoked.is_some() {
                Err(Closed::Revoked)
            } else if r.expires <= now {
                Err(Closed::Expired)
            } else {
                Ok(what(r))
            }
        };
        let seen = self
            .view
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(sandbox.id.as_str())
            .map(&judge);
        if let Some(judged) = seen {
            return judged;
        }
        // Not in this replica's view: created on another replica a moment ago, or unknown to the store.
        // Shared: what this replica has not heard of does not exist for it (it learns before asking).
        if self.is_shared() {
            return Err(Closed::Removed);
        }
        // One read of the store tells which.
        match self.store.get(&sandbox.id) {
            Ok(Some(r)) => {
                self.remember(&r);
                judge(&r)
            }
            // SECURITY: a credential whose sandbox the store does not know is refused, however well it is signed:
            // the store holds the revocations, and one that lost them must not let revoked credentials back in.
            Ok(None) => Err(Closed::Removed),
            Err(e) => {
                tracing::warn!(sandbox = %sandbox.id, "cannot read the sandbox store: {e}; refused");
                Err(Closed::Removed)
            }
        }
    }
}

impl crate::identity::RunTime for Control {
    fn verify(&self, id: &str, credential: &str) -> Result<Arc<Sandbox>, AuthFailure> {
        Control::verify(self, id, credential, now())
    }
    fn by_source(&self, client: std::net::IpAddr) -> Option<Arc<Sandbox>> {
        Control::by_source(self, client, now())
    }
}
