//! What model API calls used, as metrics: tokens by model and kind, and cost by model. The model label is the
//! model the request named (which the rule's `models` allowed, when it lists them); past [`MOST_MODELS`]
//! distinct models, further ones are counted under `other`, so a sandbox naming made-up models cannot grow the
//! series without bound. Each sandbox's (incarnation's) spend on this replica since it started is kept too, for the
//! admin API and the console (at most [`MOST_SANDBOXES`] sandboxes; budgets are the ledger's, across replicas).

use std::collections::BTreeSet;
use std::sync::Mutex;
use std::sync::atomic::AtomicU64;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;

use crate::locks::Unpoisoned;

/// The most distinct models with series of their own.
pub(crate) const MOST_MODELS: usize = 100;

/// The most sandboxes whose spend is kept.
pub(crate) const MOST_SANDBOXES: usize = 10_000;

/// What one sandbox's model calls used on this replica.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub(crate) struct SandboxSpend {
    /// Calls whose answers ended.
    pub(crate) calls: u64,
    pub(crate) input_tokens: u64,
    pub(crate) output_tokens: u64,
    /// In millionths of the price table's unit.
    #[serde(skip)]
    pub(crate) cost_micros: u64,
}

type ModelLabels<const N: usize> = [(&'static str, String); N];

/// Model API metrics.
#[derive(Debug, Default)]
pub(crate) struct ModelMetrics {
    tokens: Family<ModelLabels<2>, Counter>,
    cost: Family<ModelLabels<1>, Counter<f64, AtomicU64>>,
    spent: Family<ModelLabels<1>, Counter>,
    seen: Mutex<BTreeSet<String>>,
    spend: Mutex<std::collections::HashMap<String, SandboxSpend>>,
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

    /// One exchange's usage, by the sandbox `incarnation`: `input` (all input tokens), `cached` of them,
    /// `output`; `cost` in millionths of the table's unit.
    pub(crate) fn used(&self, incarnation: &str, model: &str, input: u64, cached: u64, output: u64, cost: Option<u64>) {
        {
            let mut spend = self.spend.lock().unpoisoned();
            let full = spend.len() >= MOST_SANDBOXES;
            if let Some(s) = spend.get_mut(incarnation) {
                s.add(input, output, cost);
            } else if !full {
                let mut s = SandboxSpend::default();
                s.add(input, output, cost);
                spend.insert(incarnation.to_owned(), s);
            }
        }
        let cost = cost.map(|c| c as f64 / 1e6);
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

    /// What `incarnation`'s model calls used on this replica, if it made any.
    pub(crate) fn spend_of(&self, incarnation: &str) -> Option<SandboxSpend> {
        self.spend.lock().unpoisoned().get(incarnation).copied()
    }

    /// [`ModelMetrics::spend_of`] as the admin API shows it (`null`: none).
    pub(crate) fn view_of(&self, incarnation: &str) -> serde_json::Value {
        self.spend_of(incarnation).map_or(serde_json::Value::Null, |s| s.view())
    }

    /// A request refused (or held) because `whose` budget (`sandbox`, `user`) was spent.
    pub(crate) fn spent(&self, whose: &str) {
        self.spent.get_or_create(&[("per", whose.to_owned())]).inc();
    }
}

impl SandboxSpend {
    fn add(&mut self, input: u64, output: u64, cost: Option<u64>) {
        self.calls += 1;
        self.input_tokens = self.input_tokens.saturating_add(input);
        self.output_tokens = self.output_tokens.saturating_add(output);
        self.cost_micros = self.cost_micros.saturating_add(cost.unwrap_or(0));
    }

    /// As the admin API shows it: the counts, and the cost in the table's unit.
    pub(crate) fn view(&self) -> serde_json::Value {
        serde_json::json!({
            "calls": self.calls,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cost": self.cost_micros as f64 / 1e6,
        })
    }
}
