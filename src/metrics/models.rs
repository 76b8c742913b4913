//! What model API calls used, as metrics: tokens by model and kind, and cost by model. The model label is the
//! model the request named (which the rule's `models` allowed, when it lists them); past [`MOST_MODELS`]
//! distinct models, further ones are counted under `other`, so a sandbox naming made-up models cannot grow the
//! series without bound.

use std::collections::BTreeSet;
use std::sync::Mutex;
use std::sync::atomic::AtomicU64;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;

use crate::locks::Unpoisoned;

/// The most distinct models with series of their own.
pub(crate) const MOST_MODELS: usize = 100;

type Labels<const N: usize> = [(&'static str, String); N];

/// Model API metrics.
#[derive(Debug, Default)]
pub(crate) struct ModelMetrics {
    tokens: Family<Labels<2>, Counter>,
    cost: Family<Labels<1>, Counter<f64, AtomicU64>>,
    spent: Family<Labels<1>, Counter>,
    seen: Mutex<BTreeSet<String>>,
}

impl ModelMetrics {
    /// Register the series in `registry`.
    pub(crate) fn register(registry: &mut Registry) -> ModelMetrics {
        let m = ModelMetrics::default();
        registry.register(
            "cordon_model_tokens",
            "Tokens of model API calls by model and kind (input, cached_input, output), as the answers reported them or cordon estimated them",
            m.tokens.clone(),
        );
        registry.register(
            "cordon_model_cost",
            "Cost of model API calls by model, in the unit of the price table (model_prices)",
            m.cost.clone(),
        );
        registry.register(
            "cordon_model_budget_refusals",
            "Requests refused or held because a model budget was spent, by whose budget (sandbox or user)",
            m.spent.clone(),
        );
        m
    }

    /// The label for `model`: itself, or `other` once [`MOST_MODELS`] others have series.
    fn label(&self, model: &str) -> String {
        let mut seen = self.seen.lock().unpoisoned();
        if seen.contains(model) || (seen.len() < MOST_MODELS && seen.insert(model.to_owned())) {
            model.to_owned()
        } else {
            "other".to_owned()
        }
    }

    /// One exchange's usage: `input` (all input tokens), `cached` of them, `output`; `cost` in the table's unit.
    pub(crate) fn used(&self, model: &str, input: u64, cached: u64, output: u64, cost: Option<f64>) {
        let model = self.label(model);
        for (kind, n) in [("input", input), ("cached_input", cached), ("output", output)] {
            self.tokens
                .get_or_create(&[("model", model.clone()), ("kind", kind.to_owned())])
                .inc_by(n);
        }
        if let Some(cost) = cost {
            self.cost.get_or_create(&[("model", model)]).inc_by(cost);
        }
    }

    /// A request refused (or held) because `whose` budget (`sandbox`, `user`) was spent.
    pub(crate) fn spent(&self, whose: &str) {
        self.spent.get_or_create(&[("per", whose.to_owned())]).inc();
    }
}
