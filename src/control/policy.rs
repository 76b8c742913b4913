//! The policy a run-time sandbox runs under, and changing it (`PATCH /v1/sandboxes/{id}`).

use std::sync::Arc;

use super::store::SandboxRow;
use super::{Control, ControlError, PolicyOf};
use crate::names::SandboxId;

impl Control {
    /// The policy sandbox `id` runs under as this replica knows it. Memory only, no copy of the record.
    pub(crate) fn policy_of(&self, id: &SandboxId) -> Option<PolicyOf> {
        let view = self.view.read().unwrap_or_else(|p| p.into_inner());
        view.get(id).map(|r| PolicyOf {
            name: r.policy.clone(),
            inline: r.inline_policy.clone(),
        })
    }

    /// `f` of the policy name and own policy sandbox `id` runs under as this replica knows it, without copying
    /// either (the hot path's lookup). Memory only.
    pub(crate) fn with_policy<R>(&self, id: &SandboxId, f: impl FnOnce(&str, Option<&Arc<str>>) -> R) -> Option<R> {
        let view = self.view.read().unwrap_or_else(|p| p.into_inner());
        view.get(id).map(|r| f(&r.policy, r.inline_policy.as_ref()))
    }

    /// Give a live sandbox another policy (validated by the caller). Blocking.
    pub(crate) fn set_policy(&self, id: &SandboxId, to: &PolicyOf, now: i64) -> Result<SandboxRow, ControlError> {
        let record = self.store.set_policy(id, &to.name, to.inline.as_deref(), now)?;
        self.remember(&record);
        Ok(record)
    }
}
