//! The price table (`model_prices:`): what a million tokens of each model cost, by model name or glob, and the
//! cost of a [`Usage`] in millionths of the table's unit (integers, so sums across replicas are exact).

use globset::{GlobBuilder, GlobMatcher};

use super::usage::Usage;

/// What a million tokens of a model cost, in the table's unit (dollars, euros, credits: the table says which).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Price {
    /// Input tokens not read from the cache.
    pub(crate) input: f64,
    /// Output tokens.
    pub(crate) output: f64,
    /// Input tokens read from the cache (default: `input`).
    pub(crate) cached_input: Option<f64>,
    /// Input tokens written to the cache (default: `input`).
    pub(crate) cache_write: Option<f64>,
}

impl Price {
    /// The cost of `usage`, in millionths of the unit, rounded up.
    pub(crate) fn cost(&self, usage: &Usage) -> u64 {
        let fresh = usage
            .input
            .saturating_sub(usage.cached_input)
            .saturating_sub(usage.cache_write);
        // Per million tokens, in millionths: tokens × price.
        let micros = fresh as f64 * self.input
            + usage.cached_input as f64 * self.cached_input.unwrap_or(self.input)
            + usage.cache_write as f64 * self.cache_write.unwrap_or(self.input)
            + usage.output as f64 * self.output;
        // Prices are checked finite and not negative; the cast saturates.
        micros.ceil() as u64
    }
}

/// One entry of the table.
#[derive(Debug, Clone)]
struct PriceEntry {
    text: String,
    glob: GlobMatcher,
    price: Price,
}

/// Every model's price.
#[derive(Debug, Clone, Default)]
pub(crate) struct PriceTable {
    entries: Vec<PriceEntry>,
}

impl PartialEq for PriceTable {
    fn eq(&self, other: &Self) -> bool {
        self.entries.len() == other.entries.len()
            && self
                .entries
                .iter()
                .zip(&other.entries)
                .all(|(a, b)| a.text == b.text && a.price == b.price)
    }
}

impl PriceTable {
    /// Add the price of the models `pattern` names (a name, or a glob with `*` and `?`).
    pub(crate) fn add(&mut self, pattern: &str, price: Price) -> Result<(), String> {
        let glob = GlobBuilder::new(pattern)
            .literal_separator(false)
            .build()
            .map_err(|e| format!("{pattern:?} is not a model name or glob: {}", e.kind()))?;
        self.entries.push(PriceEntry {
            text: pattern.to_owned(),
            glob: glob.compile_matcher(),
            price,
        });
        Ok(())
    }

    /// Whether the table prices nothing.
    pub(crate) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The price of `model`: its own entry, else the longest pattern that matches it (the most specific), and the
    /// entry's text.
    pub(crate) fn of(&self, model: &str) -> Option<(&str, Price)> {
        self.entries
            .iter()
            .filter(|e| e.glob.is_match(model))
            .max_by_key(|e| (e.text == model, e.text.len()))
            .map(|e| (e.text.as_str(), e.price))
    }
}

#[cfg(test)]
#[path = "prices_tests.rs"]
mod tests;
