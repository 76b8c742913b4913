//! Model APIs in the configuration: a rule's `model_api:` section (its dialect and the models its sandboxes may
//! name), the price table (`model_prices:`), and a policy's `model_budget:` (tokens and cost per window, per
//! sandbox and per user, and what a spent budget does). As written and validated, each error at its path.

use std::collections::BTreeMap;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;

use super::errors::Errors;
use super::fields::{A_COUNT, duration, whole};
use super::scalars::Whole;
use super::shapes;
use crate::llm::budget::{ModelBudget, ModelBudgets, OnSpent, Spend};
use crate::llm::prices::{Price, PriceTable};
use crate::policy::model_api::{Dialect, ModelApiRules};

/// A rule's `model_api:` section.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(
    deny_unknown_fields,
    expecting = "a model_api section: a mapping with dialect and models"
)]
pub(super) struct RawModelApi {
    /// `openai` (OpenAI and compatible APIs: chat completions, responses, embeddings) or `anthropic` (messages).
    #[schemars(with = "shapes::Dialect")]
    pub(crate) dialect: Option<String>,
    /// The models its sandboxes may name (names or globs, matched exactly); every model when left out.
    pub(crate) models: Option<Vec<String>>,
}

/// A number in a price (`0.15`, `3`).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(untagged)]
pub(super) enum Amount {
    /// A number.
    Number(f64),
    /// Anything else, reported.
    #[schemars(skip)]
    Wrong(serde_json::Value),
}

/// One entry of `model_prices:`: what a million tokens cost.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(
    deny_unknown_fields,
    expecting = "a price: a mapping with input, output, cached_input, cache_write"
)]
pub(super) struct RawPrice {
    /// Input tokens (per million).
    pub(crate) input: Option<Amount>,
    /// Output tokens (per million).
    pub(crate) output: Option<Amount>,
    /// Input tokens read from the provider's cache (per million; default: `input`).
    pub(crate) cached_input: Option<Amount>,
    /// Input tokens written to the provider's cache (per million; default: `input`).
    pub(crate) cache_write: Option<Amount>,
}

/// `policies.NAME.model_budget:`
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(
    deny_unknown_fields,
    expecting = "a model budget: a mapping with sandbox, user, on_spent"
)]
pub(super) struct RawModelBudget {
    /// Each sandbox's budget.
    pub(crate) sandbox: Option<RawSpend>,
    /// Each user's budget, over all of their sandboxes.
    pub(crate) user: Option<RawSpend>,
    /// `refuse` (default: 429 `model_budget_spent`) or `ask` (held for a person).
    #[schemars(with = "Option<shapes::OnSpent>")]
    pub(crate) on_spent: Option<String>,
}

/// Tokens and cost per window.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "a spend: a mapping with tokens, cost, per")]
pub(super) struct RawSpend {
    /// Input and output tokens per window.
    pub(crate) tokens: Option<Whole>,
    /// Cost per window, in the price table's unit (`2.50`).
    pub(crate) cost: Option<Amount>,
    /// The window, e.g. `1h`, `1d` (default 1d).
    #[schemars(with = "Option<shapes::Duration>")]
    pub(crate) per: Option<String>,
}

/// A rule's `model_api:` at `at` (`tunnel` when the rule does not intercept).
pub(super) fn rule_section(errs: &mut Errors, at: &str, raw: RawModelApi, tunnel: bool) -> Option<ModelApiRules> {
    if tunnel {
        errs.at(
            at,
            "`model_api` needs to read each request and answer, which a `tls: tunnel` rule does not; use `tls: intercept`",
        );
        return None;
    }
    let dialect = match raw.dialect.as_deref() {
        None => {
            errs.at(format!("{at}.dialect"), "is missing; write openai or anthropic");
            return None;
        }
        Some(text) => match Dialect::parse(text) {
            Some(d) => d,
            None => {
                errs.at(
                    format!("{at}.dialect"),
                    format!("{text:?} is not a dialect cordon reads; write openai (and compatible APIs) or anthropic"),
                );
                return None;
            }
        },
    };
    ModelApiRules::new(dialect, raw.models)
        .map_err(|(i, e)| errs.at(format!("{at}.models[{i}]"), e))
        .ok()
}

/// A price or cost at `path`: a finite number, not negative.
fn amount(errs: &mut Errors, path: &str, raw: Option<Amount>) -> Option<f64> {
    match raw? {
        Amount::Number(n) if n.is_finite() && n >= 0.0 => Some(n),
        Amount::Number(n) => {
            errs.at(path, format!("{n} is not a price; give a number that is not negative"));
            None
        }
        Amount::Wrong(v) => {
            errs.at(path, format!("expected a number such as 0.15, not {v}"));
            None
        }
    }
}

/// `model_prices:`, each entry at its path.
pub(super) fn prices(errs: &mut Errors, raw: BTreeMap<String, RawPrice>) -> PriceTable {
    let mut table = PriceTable::default();
    for (model, p) in raw {
        let at = format!("model_prices.{model}");
        let (input, output) = (
            amount(errs, &format!("{at}.input"), p.input),
            amount(errs, &format!("{at}.output"), p.output),
        );
        let cached_input = amount(errs, &format!("{at}.cached_input"), p.cached_input);
        let cache_write = amount(errs, &format!("{at}.cache_write"), p.cache_write);
        let (Some(input), Some(output)) = (input, output) else {
            errs.at(&at, "needs both input and output (per million tokens)");
            continue;
        };
        let price = Price {
            input,
            output,
            cached_input,
            cache_write,
        };
        if let Err(e) = table.add(&model, price) {
            errs.at(&at, e);
        }
    }
    table
}

/// One `sandbox:` or `user:` spend at `at`.
fn spend(errs: &mut Errors, at: &str, raw: RawSpend) -> Option<Spend> {
    let tokens = whole(errs, &format!("{at}.tokens"), raw.tokens.clone(), A_COUNT).and_then(|n| {
        u64::try_from(n).ok().filter(|n| *n >= 1).or_else(|| {
            errs.at(format!("{at}.tokens"), format!("{n} must be at least 1"));
            None
        })
    });
    let cost = amount(errs, &format!("{at}.cost"), raw.cost).and_then(|c| {
        let micros = (c * 1e6).round();
        (micros >= 1.0).then_some(micros as u64).or_else(|| {
            errs.at(format!("{at}.cost"), format!("{c} must be more than 0"));
            None
        })
    });
    let window = duration(errs, &format!("{at}.per"), raw.per, Duration::from_secs(86_400));
    if window.subsec_nanos() != 0 || window < Duration::from_secs(1) {
        errs.at(format!("{at}.per"), "must be whole seconds, at least 1s");
    }
    if raw.tokens.is_none() && cost.is_none() {
        errs.at(at, "limits nothing; give tokens, cost or both");
        return None;
    }
    Some(Spend { tokens, cost, window })
}

/// `policies.NAME.model_budget` for each policy that has one; `prices` to tell a cost budget it prices nothing.
pub(super) fn budgets(errs: &mut Errors, raw: BTreeMap<String, RawModelBudget>, prices: &PriceTable) -> ModelBudgets {
    let mut budgets = ModelBudgets::default();
    for (policy, b) in raw {
        let at = format!("policies.{policy}.model_budget");
        let on_spent = match b.on_spent.as_deref() {
            None | Some("refuse") => OnSpent::Refuse,
            Some("ask") => OnSpent::Ask,
            Some(other) => {
                errs.at(
                    format!("{at}.on_spent"),
                    format!("{other:?} is not what a spent budget can do; write refuse or ask"),
                );
                OnSpent::Refuse
            }
        };
        let sandbox = b.sandbox.and_then(|s| spend(errs, &format!("{at}.sandbox"), s));
        let user = b.user.and_then(|s| spend(errs, &format!("{at}.user"), s));
        if sandbox.is_none() && user.is_none() {
            errs.at(&at, "limits nothing; give a sandbox budget, a user budget or both");
            continue;
        }
        let budget = ModelBudget {
            sandbox,
            user,
            on_spent,
        };
        if budget.limits_cost() && prices.is_empty() {
            errs.at(
                &at,
                "limits cost, but `model_prices:` prices no model; add the prices of the models it may use",
            );
        }
        budgets.policies.insert(policy, budget);
    }
    budgets
}

#[cfg(test)]
#[path = "model_api_tests.rs"]
mod tests;
