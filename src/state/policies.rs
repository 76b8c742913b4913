//! The one way to a sandbox's policy under a generation: the file's policy it names, or its own inline policy
//! compiled against that generation, so that a reload judges every inline policy again against its new base
//! (one that now goes past it is refused: its sandbox is closed as if its policy were gone).

use std::sync::Arc;

use super::Generation;
use crate::control::Control;
use crate::identity::{Origin, Sandbox};
use crate::policy::Policy;

/// How many compiled inline policies a generation keeps (one per run-time sandbox in use).
const INLINE_CACHE: u64 = 100_000;

/// Inline policies compiled against one generation, by sandbox id.
pub(super) struct InlineCache(moka::sync::Cache<String, Arc<Compiled>>);

struct Compiled {
    doc: Arc<str>,
    base: String,
    policy: Result<Arc<Policy>, String>,
}

impl InlineCache {
    pub(super) fn new() -> InlineCache {
        InlineCache(moka::sync::Cache::new(INLINE_CACHE))
    }
}

impl Generation {
    /// The policy `sandbox` runs under in this generation; `None` when it has none (a run-time sandbox without
    /// `control`, in a dry run; a policy gone from the file; an inline policy that exceeds its base now).
    /// A request asks once, and its later steps use what it got (a PATCH meanwhile does not change it).
    pub fn policy_for(&self, sandbox: &Sandbox, control: Option<&Control>) -> Option<Arc<Policy>> {
        match (&sandbox.origin, control) {
            (Origin::Config, _) => self.named_policy(&sandbox.policy).cloned(),
            // A run-time sandbox's policy is its record's now (a PATCH changes it under open connections).
            (Origin::Api { .. }, Some(control)) => {
                let id = sandbox.id.as_str();
                control.with_policy(id, |name, inline| self.resolve_parts(id, name, inline))?
            }
            (Origin::Api { .. }, None) => None,
        }
    }

    /// The policy a record's name and own policy stand for in this generation.
    fn resolve_parts(&self, id: &str, name: &str, inline: Option<&Arc<str>>) -> Option<Arc<Policy>> {
        match inline {
            None => self.named_policy(name).cloned(),
            Some(doc) => self.inline(id, name, doc).ok(),
        }
    }

    /// Sandbox `id`'s own policy `doc`, compiled against this generation and held to `base`; the error says why
    /// it no longer holds (logged once per generation and document).
    pub(crate) fn inline(&self, id: &str, base: &str, doc: &Arc<str>) -> Result<Arc<Policy>, String> {
        // The record's document is shared with the cache entry made from it: a pointer comparison, usually.
        if let Some(hit) = self.inline.0.get(id)
            && (Arc::ptr_eq(&hit.doc, doc) || *hit.doc == **doc)
            && hit.base == base
        {
            return hit.policy.clone();
        }
        let compiled = compile(self, id, base, doc);
        if let Err(e) = &compiled {
            tracing::warn!(sandbox = %id, base, "the sandbox's own policy does not hold under this configuration, so \
                 its requests are refused: {e}");
        }
        self.inline.0.insert(
            id.to_string(),
            Arc::new(Compiled {
                doc: doc.clone(),
                base: base.to_string(),
                policy: compiled.clone(),
            }),
        );
        compiled
    }
}

fn compile(generation: &Generation, id: &str, base: &str, doc: &str) -> Result<Arc<Policy>, String> {
    let value: serde_json::Value =
        serde_json::from_str(doc).map_err(|e| format!("the stored policy is not JSON: {e}"))?;
    let parsed = crate::config::inline_policy(&generation.config, id, "policy", &value).map_err(|errors| {
        errors
            .iter()
            .map(|e| format!("{}: {}", e.path, e.message))
            .collect::<Vec<_>>()
            .join("; ")
    })?;
    if parsed.extends != base {
        return Err(format!(
            "the record's base {base:?} is not the policy's `extends` {:?}",
            parsed.extends
        ));
    }
    Ok(Arc::new(parsed.policy))
}
