//! A rule's `model_api:` section: the endpoint is a model API of a known dialect (OpenAI-compatible or Anthropic),
//! so cordon reads the model each request names and the tokens each answer reports; `models` lists the models its
//! sandboxes may name (globs; every model when left out). Decided purely, like the rest of a policy; reading the
//! messages and their usage is `crate::llm`'s.
//!
//! Model names match exactly, in their case, as the providers look them up: `gpt-4o-mini` is not `GPT-4o-mini`.

use super::globs::{Alphabet, Names};

/// The wire format of a model API: how its requests name the model and how its answers report usage.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Dialect {
    /// OpenAI's API and the many that copy it: chat completions, responses, embeddings (`usage` with
    /// `prompt_tokens`/`completion_tokens` or `input_tokens`/`output_tokens`).
    Openai,
    /// Anthropic's messages API (`usage` with `input_tokens`, `output_tokens` and the cache's counts).
    Anthropic,
}

impl Dialect {
    /// Its name as a configuration writes it.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Dialect::Openai => "openai",
            Dialect::Anthropic => "anthropic",
        }
    }

    /// The dialect a configuration names, if it is one.
    pub(crate) fn parse(text: &str) -> Option<Dialect> {
        match text {
            "openai" => Some(Dialect::Openai),
            "anthropic" => Some(Dialect::Anthropic),
            _ => None,
        }
    }
}

/// What model names are made of: letters, digits and the punctuation providers use (`gpt-4o-mini`,
/// `claude-sonnet-4-5-20250929`, `meta-llama/Llama-3.1-8B`, `anthropic.claude-v2:1`, `model@2024`).
const MODEL_NAME: Alphabet = Alphabet {
    punctuation: "_-.:/@",
    says: "letters, digits, '_', '-', '.', ':', '/' and '@'",
};

/// A rule's `model_api:` section.
#[derive(Debug, Clone)]
pub struct ModelApiRules {
    /// The wire format.
    pub(crate) dialect: Dialect,
    /// The models its sandboxes may name; `None`: any.
    pub(crate) models: Option<Names>,
}

impl ModelApiRules {
    /// The section of `dialect` with `models` (globs) if given. The error names the entry and what is wrong.
    pub(crate) fn new(dialect: Dialect, models: Option<Vec<String>>) -> Result<ModelApiRules, (usize, String)> {
        let models = match models {
            None => None,
            Some(list) if list.is_empty() => {
                return Err((
                    0,
                    "is empty, which would refuse every model; name at least one, or leave `models` out to allow any"
                        .into(),
                ));
            }
            Some(list) => Some(Names::new(list, false, "a model name", &MODEL_NAME)?),
        };
        Ok(ModelApiRules { dialect, models })
    }

    /// Whether a request may name `model`.
    pub(crate) fn allows(&self, model: &str) -> bool {
        self.models.as_ref().is_none_or(|m| m.matches(model))
    }

    /// The models as written (empty: any).
    pub(crate) fn model_texts(&self) -> &[String] {
        self.models.as_ref().map_or(&[], |m| &m.texts)
    }

    /// What the section says, for a rule's fingerprint.
    pub(crate) fn said(&self) -> String {
        format!("{} {:?}", self.dialect.as_str(), self.models.as_ref().map(|m| &m.texts))
    }

    /// Whether every model `self` allows, `base` allows too (conservatively: `base` allows any, or each of
    /// `self`'s entries is inside `base`'s list) and both speak the same dialect. What is not, if anything.
    pub(crate) fn within(&self, base: &ModelApiRules) -> Result<(), (&'static str, String)> {
        if self.dialect != base.dialect {
            return Err((
                "dialect",
                format!(
                    "speaks {} where the boundary's rule speaks {}",
                    self.dialect.as_str(),
                    base.dialect.as_str()
                ),
            ));
        }
        match (&self.models, &base.models) {
            (_, None) => Ok(()),
            (None, Some(_)) => Err(("models", "allows any model where the boundary's rule lists them".into())),
            (Some(own), Some(b)) => match own.within(b) {
                None => Ok(()),
                Some(i) => Err((
                    "models",
                    format!("allows model {:?}, which the boundary's rule does not", own.texts[i]),
                )),
            },
        }
    }
}

#[cfg(test)]
#[path = "model_api_tests.rs"]
mod tests;
