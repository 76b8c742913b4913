//! Run-time sandboxes' own (inline) policies, compiled against one generation's configuration and held to
//! their base, so that a reload judges every inline policy again against its new base (one that now goes past
//! it is refused: its sandbox is closed as if its policy were gone).

use std::sync::Arc;

use crate::config::Config;
use crate::names::SandboxId;
use crate::policy::Policy;

/// How many compiled inline policies a generation keeps (one per run-time sandbox in use).
const INLINE_CACHE: u64 = 100_000;

/// Inline policies compiled against one generation, by sandbox id.
pub(super) struct InlineCache(moka::sync::Cache<SandboxId, Arc<Compiled>>);

struct Compiled {
    doc: Arc<str>,
    base: String,
    policy: Result<Arc<Policy>, String>,
}

impl InlineCache {
    pub(super) fn new() -> InlineCache {
        InlineCache(moka::sync::Cache::new(INLINE_CACHE))
    }

    /// Sandbox `id`'s own policy `doc`, compiled against `config` and held to `base`; the error says why it no
    /// longer holds (logged once per generation and document).
    pub(super) fn policy(
        &self,
        config: &Config,
        id: &SandboxId,
        base: &str,
        doc: &Arc<str>,
    ) -> Result<Arc<Policy>, String> {
        // The record's document is shared with the cache entry made from it: a pointer comparison, usually.
        if let Some(hit) = self.0.get(id)
            && (Arc::ptr_eq(&hit.doc, doc) || *hit.doc == **doc)
            && hit.base == base
        {
            return hit.policy.clone();
        }
        let compiled = compile(config, id, base, doc);
        if let Err(e) = &compiled {
            tracing::warn!(sandbox = %id, base, "the sandbox's own policy does not hold under this configuration, so \
                 its requests are refused: {e}");
        }
        self.0.insert(
            id.clone(),
            Arc::new(Compiled {
                doc: doc.clone(),
                base: base.to_string(),
                policy: compiled.clone(),
            }),
        );
        compiled
    }
}

fn compile(config: &Config, id: &SandboxId, base: &str, doc: &str) -> Result<Arc<Policy>, String> {
    let value: serde_json::Value =
        serde_json::from_str(doc).map_err(|e| format!("the stored policy is not JSON: {e}"))?;
    let parsed = crate::config::inline_policy(config, id.as_str(), "policy", &value).map_err(|errors| {
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
