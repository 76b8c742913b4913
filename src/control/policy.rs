//! The policy a run-time sandbox runs under, and changing it (`PATCH /v1/sandboxes/{id}`).

use super::store::Record;
use super::{Control, ControlError, PolicyOf};

impl Control {
    /// The policy sandbox `id` runs under as this replica knows it. Memory only, no copy of the record.
    pub(crate) fn policy_of(&self, id: &str) -> Option<PolicyOf> {
        let view = self.view.read().unwrap_or_else(|p| p.into_inner());
        view.get(id).map(|r| PolicyOf {
            name: r.policy.clone(),
            inline: r.inline_policy.clone(),
        })
    }

    /// Give a live sandbox another policy (validated by the caller). Blocking.
    pub(crate) fn set_policy(&self, id: &str, to: &PolicyOf, now: i64) -> Result<Record, ControlError> {
        let record = self.store.set_policy(id, &to.name, to.inline.as_deref(), now)?;
        self.remember(&record);
        Ok(record)
    }
}
