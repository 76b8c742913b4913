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
struct Entry {
    text: String,
    glob: GlobMatcher,
    price: Price,
}

/// Every model's price.
#[derive(Debug, Clone, Default)]
pub(crate) struct PriceTable {
    entries: Vec<Entry>,
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
        self.entries.push(Entry {
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
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    fn price(input: f64, output: f64) -> Price {
        Price {
            input,
            output,
            cached_input: None,
            cache_write: None,
        }
    }

    #[test]
    fn the_most_specific_entry_prices_a_model() {
        let mut t = PriceTable::default();
        t.add("gpt-4o*", price(2.5, 10.0)).unwrap();
        t.add("gpt-4o-mini*", price(0.15, 0.6)).unwrap();
        t.add("gpt-4o-mini", price(0.1, 0.5)).unwrap();
        assert_eq!(t.of("gpt-4o-mini").map(|p| p.0), Some("gpt-4o-mini"));
        assert_eq!(t.of("gpt-4o-mini-2024-07-18").map(|p| p.0), Some("gpt-4o-mini*"));
        assert_eq!(t.of("gpt-4o-2024-08-06").map(|p| p.0), Some("gpt-4o*"));
        assert_eq!(t.of("o3"), None);
        assert!(t.add("[", price(1.0, 1.0)).is_err());
    }

    #[test]
    fn cost_is_in_millionths_and_rounded_up() {
        let p = Price {
            input: 3.0,
            output: 15.0,
            cached_input: Some(0.3),
            cache_write: Some(3.75),
        };
        let u = Usage {
            input: 1000,
            output: 100,
            cached_input: 200,
            cache_write: 100,
            estimated: false,
        };
        // 700 × 3 + 200 × 0.3 + 100 × 3.75 + 100 × 15 = 2100 + 60 + 375 + 1500
        assert_eq!(p.cost(&u), 4035);
        assert_eq!(
            price(0.15, 0.6).cost(&Usage {
                input: 1,
                ..Usage::default()
            }),
            1
        );
        assert_eq!(price(0.0, 0.0).cost(&u), 0);
    }
}
