//! A sandbox's policy in the admin API: the name of one of the file's policies, or the sandbox's own (an object
//! that `extends` one of them and may only narrow it).

use std::sync::Arc;

use http::StatusCode;
use serde_json::{Value, json};

use super::response::{AdminResponse, error, json_response};
use crate::control::PolicyOf;
use crate::generation::Generation;
use crate::policy::Policy;

/// The policy a request body asks for, validated against the configuration in force.
pub(super) struct AskedPolicy {
    /// As the record will hold it.
    pub(super) of: PolicyOf,
    /// Compiled (a copy of the file's, or the sandbox's own).
    pub(super) policy: Arc<Policy>,
    /// What was accepted but is probably not meant.
    pub(super) warnings: Vec<String>,
}

/// Read `policy` from `body` for sandbox `id` (for names in messages only). A 422 names every problem with its
/// JSON path; `exceeds_base` when the values are valid but go past the base.
#[expect(
    clippy::result_large_err,
    reason = "the error is the answer itself, built once per failed call"
)]
pub(super) fn asked(generation: &Generation, id: &str, body: &Value) -> Result<AskedPolicy, AdminResponse> {
    let invalid = |message: String| {
        error(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid",
            format!("policy: {message}"),
        )
    };
    match body.get("policy") {
        None | Some(Value::Null) => Err(invalid("is required".into())),
        Some(Value::String(name)) => match generation.named_policy(name) {
            Some(p) => Ok(AskedPolicy {
                of: PolicyOf {
                    name: name.clone(),
                    inline: None,
                },
                policy: p.clone(),
                warnings: Vec::new(),
            }),
            None => Err(invalid(format!(
                "there is no policy {name:?}; the policies are: {}",
                generation
                    .config
                    .policies
                    .keys()
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(", ")
            ))),
        },
        Some(doc @ Value::Object(_)) => inline(generation, id, doc),
        Some(_) => Err(invalid(
            "must be the name of a policy, or an object that `extends` one (e.g. {\"extends\": \"web\", \"allow\": \
             [{\"host\": \"github.com\"}]})"
                .into(),
        )),
    }
}

/// A sandbox's own policy `doc`, validated and held to its base.
#[expect(
    clippy::result_large_err,
    reason = "the error is the answer itself, built once per failed call"
)]
fn inline(generation: &Generation, id: &str, doc: &Value) -> Result<AskedPolicy, AdminResponse> {
    match crate::config::inline_policy(&generation.config, id, "policy", doc) {
        Ok(inline) => Ok(AskedPolicy {
            of: PolicyOf {
                name: inline.extends,
                inline: Some(Arc::from(doc.to_string())),
            },
            policy: Arc::new(inline.policy),
            warnings: inline.warnings,
        }),
        Err(errors) => {
            let exceeds = errors.iter().any(|e| e.exceeds);
            let details: Vec<Value> = errors
                .iter()
                .map(|e| json!({"path": e.path, "message": e.message}))
                .collect();
            let message = errors
                .iter()
                .map(|e| format!("{}: {}", e.path, e.message))
                .collect::<Vec<_>>()
                .join("; ");
            let code = if exceeds { "exceeds_base" } else { "invalid" };
            Err(json_response(
                StatusCode::UNPROCESSABLE_ENTITY,
                &json!({"error": {"code": code, "message": message, "details": details}}),
            ))
        }
    }
}

/// The policy part of a sandbox's view: `policy` (the file's policy, or the base of its own) and `inline_policy`.
pub(super) fn view(of_name: &str, inline: Option<&str>) -> (Value, Value) {
    let inline = inline
        .and_then(|doc| serde_json::from_str::<Value>(doc).ok())
        .unwrap_or(Value::Null);
    (json!(of_name), inline)
}
