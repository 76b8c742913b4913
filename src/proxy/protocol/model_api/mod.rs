//! Model APIs as a [`Protocol`], for a request under a rule with a `model_api:` section: a POST is a model call,
//! whose body must be one uncompressed JSON object naming its `model`; the model must be one the rule lists, priced
//! where a cost budget counts it, and the sandbox's (and its user's) model budget not spent (a spent one refuses,
//! or holds the request for a person with `on_spent: ask`). Its answer is read as it passes for the tokens the
//! provider reports ([`answer`]), which are priced, charged to the budgets, recorded (`llm:` in the audit record)
//! and counted in the metrics. Requests by other methods (a listing of models) pass, read for nothing.

mod answer;

use bytes::Bytes;
use http::header::ACCEPT_ENCODING;
use http::{Method, Request};
use serde_json::{Value, json};

use crate::approval::HeldRequest;
use crate::body::ProxyBody;
use crate::error::ProxyError;
use crate::limits::LimitRefusal;
use crate::limits::model_ledger::{Admitted, BudgetSpent, unix_now};
use crate::llm::budget::{OnSpent, units};
use crate::llm::usage::estimate;
use crate::policy::Rule;
use crate::policy::protocol::{Asked, Completion, Judgement, ProtocolRecord, Refused};
use crate::proxy::protocol::contract::{Context, Judged, Protocol};
use crate::proxy::protocol::read::coded;
use crate::reason::Reason;
use answer::Metering;

/// A model API (OpenAI-compatible or Anthropic).
pub(super) struct ModelApi;

/// Its section of the audit record.
const NAME: &str = "llm";

fn invalid(message: String) -> ProxyError {
    ProxyError::BadRequest {
        code: Reason::ModelApiInvalid,
        message,
    }
}

/// The model a call's body names, or why it names none cordon can read.
fn model_of(body: &[u8]) -> Result<(String, bool), String> {
    let value: Value = serde_json::from_slice(body)
        .map_err(|e| format!("a model call's body must be one JSON object naming its model; it is not JSON ({e})"))?;
    let Value::Object(map) = value else {
        return Err("a model call's body must be one JSON object naming its model".into());
    };
    let model = match map.get("model") {
        Some(Value::String(m)) if !m.is_empty() => m.clone(),
        Some(_) => return Err("the body's `model` must be the model's name, as text".into()),
        None => return Err("the body names no `model`".into()),
    };
    let stream = map.get("stream").and_then(Value::as_bool).unwrap_or(false);
    Ok((model, stream))
}

/// The sentence that says a spent budget.
fn spent_message(spent: &BudgetSpent) -> String {
    let whose = spent.cap.key.split_once(':').map_or("", |(w, _)| w);
    let mut limits = Vec::new();
    if let Some(t) = spent.cap.tokens {
        limits.push(format!("{} of {t} tokens", spent.used.tokens));
    }
    if let Some(c) = spent.cap.cost {
        limits.push(format!("{} of {} in cost", units(spent.used.cost), units(c)));
    }
    format!(
        "the {whose}'s model budget is spent ({} per {}); it renews in {}",
        limits.join(", "),
        humantime::format_duration(spent.cap.window),
        humantime::format_duration(spent.retry_after),
    )
}

#[async_trait::async_trait]
impl Protocol for ModelApi {
    fn name(&self) -> &'static str {
        NAME
    }

    fn explain(&self) -> &'static str {
        "reads the model each POST names (refused unless the rule lists it, or when its budget is spent) and the \
         tokens its answer reports, priced and charged to the sandbox's and user's model budgets"
    }

    fn governs(&self, rule: &Rule) -> bool {
        rule.model_api.is_some()
    }

    fn invalid(&self) -> Reason {
        Reason::ModelApiInvalid
    }

    async fn judge(&self, cx: &Context<'_>, req: &mut Request<ProxyBody>) -> Result<Judged, ProxyError> {
        let Some(rules) = cx.rule.model_api.clone() else {
            return Ok(Judged::nothing());
        };
        // Only a POST calls a model; a dry run has no body (the phase's note says what would be read).
        let (true, Some(body)) = (req.method() == Method::POST, cx.body.as_ref()) else {
            return Ok(Judged::nothing());
        };
        // SECURITY: a body cordon cannot read as the provider will is not judged, and so not sent.
        if let Some(why) = coded(req, "a model call") {
            return Err(invalid(why));
        }
        let (model, stream) = model_of(body).map_err(invalid)?;
        // SECURITY: a model the rule does not list never leaves, whatever else the body says.
        if !rules.allows(&model) {
            return Err(ProxyError::Model {
                code: Reason::ModelNotAllowed,
                message: format!(
                    "model {model:?} is not one this endpoint's rule allows (it allows: {})",
                    rules.model_texts().join(", ")
                ),
            });
        }
        let budget = cx.config.model_budgets.of(&cx.sandbox.policy).copied();
        let price = cx.config.model_prices.of(&model).map(|(_, p)| p);
        if budget.is_some_and(|b| b.limits_cost()) && price.is_none() {
            return Err(ProxyError::Model {
                code: Reason::ModelUnpriced,
                message: format!(
                    "model {model:?} has no price in model_prices, and this sandbox's model budget limits cost"
                ),
            });
        }
        let ledger = cx.memory.model_ledger.clone();
        let now = unix_now();
        let mut judgement = Judgement::Pass;
        let admitted = match budget {
            None => Admitted::default(),
            Some(b) => {
                let caps = b.caps(cx.sandbox.incarnation(), &cx.sandbox.user);
                // SECURITY: a spent budget refuses (or holds) the call before it is sent; admission is one atomic
                // check-and-count, so concurrent calls cannot all slip under it.
                match ledger.0.admit(&caps, now).await {
                    Err(e) => {
                        return Err(ProxyError::Model {
                            code: Reason::ModelBudgetUnavailable,
                            message: e.to_string(),
                        });
                    }
                    Ok(Ok(admitted)) => admitted,
                    Ok(Err(spent)) => {
                        let whose = spent.cap.key.split_once(':').map_or("sandbox", |(w, _)| w);
                        cx.memory.model_metrics.spent(whose);
                        let message = spent_message(&spent);
                        if b.on_spent == OnSpent::Refuse {
                            return Err(ProxyError::Limited(LimitRefusal {
                                reason: Reason::ModelBudgetSpent,
                                retry_after: spent.retry_after.max(std::time::Duration::from_secs(1)),
                                message,
                            }));
                        }
                        judgement = Judgement::Ask(Asked {
                            what: vec![format!("{model}: {message}")],
                            ids: Vec::new(),
                            batch: None,
                        });
                        // What a person lets through is charged like any call, to the slots it was made in.
                        Admitted {
                            slots: caps
                                .iter()
                                .map(|c| (c.key.clone(), c.slot(now), c.ends(c.slot(now))))
                                .collect(),
                        }
                    }
                }
            }
        };
        // SECURITY: the answer is read for its usage: it must come uncompressed (one that does not is estimated).
        req.headers_mut().remove(ACCEPT_ENCODING);
        let completion = Completion::default();
        let said = json!({"dialect": rules.dialect, "model": model, "stream": stream});
        let metering = Metering {
            dialect: rules.dialect,
            model,
            price,
            input_estimate: estimate(body.len() as u64),
            admitted,
            ledger,
            metrics: cx.memory.model_metrics.clone(),
            incarnation: cx.sandbox.incarnation().to_string(),
            completion: completion.clone(),
        };
        Ok(Judged {
            record: Some(ProtocolRecord::new(NAME, &said).completed_by(completion)),
            judgement,
            answer: Some(Box::new(metering)),
        })
    }

    fn refuse(&self, asked: &Asked, reason: Reason, message: String) -> Refused {
        // Not used for a person's refusal (`refuses_in_protocol` is false); said as the APIs' errors read.
        let _ = asked;
        Refused {
            reason,
            body: serde_json::to_vec(&json!({"error": {"type": reason.code(), "message": message}}))
                .unwrap_or_default(),
            message,
            content_type: "application/json",
        }
    }

    fn show(&self, asked: &Asked, _: &Bytes, held: &mut HeldRequest) {
        held.spent = Some(asked.what.clone());
    }

    fn refuses_in_protocol(&self) -> bool {
        false
    }
}
