//! The tokens an answer of a model API reports, in each dialect, from a whole JSON answer or event by event from a
//! stream ([`StreamTally`]); and estimates where the provider said nothing.
//!
//! Counts are normalised: `input` is every input token, cached or not (OpenAI's `prompt_tokens`, and Anthropic's
//! `input_tokens` plus both of its cache counts), of which `cached_input` were read from the provider's cache and
//! `cache_write` written to it (Anthropic's `cache_creation_input_tokens`).

use serde::Serialize;
use serde_json::Value;

use crate::policy::model_api::Dialect;

/// What one exchange used.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub(crate) struct Usage {
    /// Every input token (cached ones included).
    #[serde(rename = "input_tokens")]
    pub(crate) input: u64,
    /// Output tokens (reasoning included).
    #[serde(rename = "output_tokens")]
    pub(crate) output: u64,
    /// Input tokens read from the provider's cache.
    #[serde(rename = "cached_input_tokens", skip_serializing_if = "is_zero")]
    pub(crate) cached_input: u64,
    /// Input tokens written to the provider's cache.
    #[serde(rename = "cache_write_tokens", skip_serializing_if = "is_zero")]
    pub(crate) cache_write: u64,
    /// Whether the provider did not report it whole, and some of it is cordon's estimate.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub(crate) estimated: bool,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Usage {
    /// Input and output tokens together: what a token budget counts.
    pub(crate) fn tokens(&self) -> u64 {
        self.input.saturating_add(self.output)
    }
}

/// A count at `path` under `value`, if it is a whole number.
fn count(value: &Value, path: &[&str]) -> Option<u64> {
    path.iter().try_fold(value, |v, key| v.get(key))?.as_u64()
}

/// The usage object of a dialect's answer (or of one of its events), if it has one.
pub(crate) fn of_usage(dialect: Dialect, usage: &Value) -> Option<Usage> {
    if !usage.is_object() {
        return None;
    }
    match dialect {
        Dialect::Openai => {
            // Chat completions and embeddings say prompt/completion; the responses API says input/output.
            let input = count(usage, &["prompt_tokens"]).or_else(|| count(usage, &["input_tokens"]))?;
            let output = count(usage, &["completion_tokens"])
                .or_else(|| count(usage, &["output_tokens"]))
                .unwrap_or(0);
            let cached = count(usage, &["prompt_tokens_details", "cached_tokens"])
                .or_else(|| count(usage, &["input_tokens_details", "cached_tokens"]))
                .unwrap_or(0);
            Some(Usage {
                input,
                output,
                cached_input: cached.min(input),
                ..Usage::default()
            })
        }
        Dialect::Anthropic => {
            let fresh = count(usage, &["input_tokens"]);
            let output = count(usage, &["output_tokens"]);
            if fresh.is_none() && output.is_none() {
                return None;
            }
            let read = count(usage, &["cache_read_input_tokens"]).unwrap_or(0);
            let write = count(usage, &["cache_creation_input_tokens"]).unwrap_or(0);
            Some(Usage {
                input: fresh.unwrap_or(0).saturating_add(read).saturating_add(write),
                output: output.unwrap_or(0),
                cached_input: read,
                cache_write: write,
                estimated: false,
            })
        }
    }
}

/// The usage a whole JSON answer reports (`usage` at its top: chat completions, embeddings, responses, messages).
pub(crate) fn of_answer(dialect: Dialect, answer: &Value) -> Option<Usage> {
    of_usage(dialect, answer.get("usage")?)
}

/// Tokens estimated from `bytes` of text: one per four bytes, rounded up (the usual rule of thumb, and more than
/// most tokenizers give for JSON: the safe side for a budget).
pub(crate) fn estimate(bytes: u64) -> u64 {
    bytes.div_ceil(4)
}

/// What the events of one streamed answer said so far.
#[derive(Debug, Clone)]
pub(crate) struct StreamTally {
    dialect: Dialect,
    /// The whole usage, once an event reported it (OpenAI's last chunk, `response.completed`).
    whole: Option<Usage>,
    /// Anthropic: the input counts of `message_start`.
    started: Option<Usage>,
    /// Anthropic: the latest (cumulative) `output_tokens` of `message_delta`.
    output_so_far: Option<u64>,
    /// Events that delivered output (text, tool arguments, reasoning).
    deltas: u64,
}

impl StreamTally {
    /// Nothing said yet.
    pub(crate) fn new(dialect: Dialect) -> StreamTally {
        StreamTally {
            dialect,
            whole: None,
            started: None,
            output_so_far: None,
            deltas: 0,
        }
    }

    /// Take in one event's data (its `event:` name is in the data's `type` for both dialects; OpenAI's chat chunks
    /// have none).
    pub(crate) fn event(&mut self, data: &str) {
        if data.trim() == "[DONE]" {
            return;
        }
        let Ok(value) = serde_json::from_str::<Value>(data) else {
            return;
        };
        let kind = value.get("type").and_then(Value::as_str).unwrap_or("");
        match self.dialect {
            Dialect::Openai => {
                if let Some(u) = value.get("usage").and_then(|u| of_usage(Dialect::Openai, u)) {
                    // A chat completion's last chunk.
                    self.whole = Some(u);
                } else if let Some(u) = value
                    .get("response")
                    .and_then(|r| r.get("usage"))
                    .and_then(|u| of_usage(Dialect::Openai, u))
                {
                    // `response.completed` (or `.incomplete`, `.failed`): the response with its usage.
                    self.whole = Some(u);
                } else if kind.ends_with(".delta") || has_delta(&value) {
                    self.deltas += 1;
                }
            }
            Dialect::Anthropic => match kind {
                "message_start" => {
                    self.started = value
                        .get("message")
                        .and_then(|m| m.get("usage"))
                        .and_then(|u| of_usage(Dialect::Anthropic, u));
                }
                "message_delta" => {
                    if let Some(usage) = value.get("usage") {
                        if let Some(out) = count(usage, &["output_tokens"]) {
                            self.output_so_far = Some(out);
                        }
                        // Newer answers repeat the input counts here; the later word wins.
                        if count(usage, &["input_tokens"]).is_some()
                            && let Some(u) = of_usage(Dialect::Anthropic, usage)
                        {
                            self.started = Some(Usage { output: 0, ..u });
                        }
                    }
                }
                "message_stop" => {
                    if let Some(started) = self.started {
                        self.whole = Some(Usage {
                            output: self.output_so_far.unwrap_or(started.output).max(started.output),
                            ..started
                        });
                    }
                }
                "content_block_delta" => self.deltas += 1,
                _ => {}
            },
        }
    }

    /// What the stream used: as the provider reported it, or (cut short, or never reported) what was delivered,
    /// with `input_estimate` for input tokens no event gave.
    pub(crate) fn finish(&self, input_estimate: u64) -> Usage {
        if let Some(whole) = self.whole {
            return whole;
        }
        let started = self.started.unwrap_or(Usage {
            input: input_estimate,
            ..Usage::default()
        });
        let output = self.output_so_far.unwrap_or(0).max(self.deltas).max(started.output);
        Usage {
            output,
            estimated: true,
            ..started
        }
    }
}

/// Whether an OpenAI chat chunk delivered output: content, a refusal, reasoning or tool call arguments.
fn has_delta(chunk: &Value) -> bool {
    chunk.get("choices").and_then(Value::as_array).is_some_and(|choices| {
        choices.iter().any(|c| {
            c.get("delta").is_some_and(|d| {
                ["content", "refusal", "reasoning_content", "tool_calls"]
                    .iter()
                    .any(|k| d.get(k).is_some_and(|v| !v.is_null() && v != ""))
            })
        })
    })
}

#[cfg(test)]
#[path = "usage_tests.rs"]
mod tests;
