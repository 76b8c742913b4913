//! What a new configuration may not declare while run-time sandboxes hold it: their ids and their source
//! ranges (a declared sandbox under a live run-time one's id, or over its addresses, would take its traffic).

use crate::config::Config;
use crate::control::Control;

/// The errors, one per sandbox id and source range of `config` that a live run-time sandbox of `control`
/// holds at `now` (unix seconds), each naming the field it is about.
pub(crate) fn held_by_runtime(config: &Config, control: &Control, now: i64) -> Vec<String> {
    let mut errors = Vec::new();
    for (i, s) in config.sandboxes.iter().enumerate() {
        if control
            .get(&s.id)
            .is_some_and(|r| r.revoked.is_none() && r.expires > now)
        {
            errors.push(format!(
                "sandboxes[{i}].id: {:?} is also a sandbox created at run time; revoke it first or choose another id",
                s.id
            ));
        }
        for (j, net) in s.source_cidrs.iter().enumerate() {
            if let Some((other, theirs)) = control.holding(net, now) {
                errors.push(format!(
                    "sandboxes[{i}].source_cidrs[{j}]: {net} overlaps {theirs} of {other:?}, a sandbox created at \
                     run time; revoke it first or choose another range"
                ));
            }
        }
    }
    errors
}
