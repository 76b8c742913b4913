//! Run-time sandboxes known by source address (`source_cidrs`): VMs and containers created through the admin
//! API whose traffic reaches cordon without a credential (transparent mode, a gateway, DNS).

use std::net::IpAddr;
use std::sync::Arc;

use super::Control;
use super::store::SandboxRow;
use crate::identity::{Origin, Sandbox};
use crate::names::SandboxId;

impl Control {
    /// Whether this replica's view holds a record for `id` (any state). Memory only, no copy.
    pub(crate) fn knows(&self, id: &SandboxId) -> bool {
        self.view.read().unwrap_or_else(|p| p.into_inner()).contains_key(id)
    }

    /// Whether this replica's view holds `id` neither revoked nor expired at `now`. Memory only, no copy.
    pub(crate) fn knows_live(&self, id: &SandboxId, now: i64) -> bool {
        self.view
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(id)
            .is_some_and(|r| r.revoked.is_none() && r.expires > now)
    }

    /// The live run-time sandbox whose `source_cidrs` hold `client`, if one does. Memory only: safe on the hot path.
    pub(crate) fn by_source(&self, client: IpAddr, now: i64) -> Option<Arc<Sandbox>> {
        // An IPv4 client on a dual-stack socket shows up as ::ffff:a.b.c.d.
        let client = client.to_canonical();
        let view = self.view.read().unwrap_or_else(|p| p.into_inner());
        view.values()
            .filter(|r| r.revoked.is_none() && r.expires > now)
            .find(|r| r.source_cidrs.iter().any(|net| net.contains(&client)))
            .map(|r| Arc::new(r.incarnation()))
    }

    /// The live run-time sandbox whose `source_cidrs` meet `net`, and the range that does.
    pub(crate) fn holding(&self, net: &ipnet::IpNet, now: i64) -> Option<(String, ipnet::IpNet)> {
        let view = self.view.read().unwrap_or_else(|p| p.into_inner());
        view.values()
            .filter(|r| r.revoked.is_none() && r.expires > now)
            .find_map(|r| {
                r.source_cidrs
                    .iter()
                    .find(|theirs| theirs.contains(net) || net.contains(*theirs))
                    .map(|theirs| (r.id.to_string(), *theirs))
            })
    }
}

impl SandboxRow {
    /// The policy as audit records and approvals name it: the file's policy, or `BASE+inline` for a sandbox's own
    /// policy narrowing BASE (rule indexes then refer to its own rules).
    pub(crate) fn policy_label(&self) -> String {
        match &self.inline_policy {
            None => self.policy.clone(),
            Some(_) => format!("{}+inline", self.policy),
        }
    }

    /// The sandbox this record stands for, as requests and sessions carry it (this incarnation: its nonce).
    pub(crate) fn incarnation(&self) -> Sandbox {
        Sandbox::new(
            self.id.clone(),
            self.user.clone(),
            self.policy_label(),
            Origin::Api {
                nonce: self.nonce.clone(),
                expires: self.expires,
            },
        )
    }
}
