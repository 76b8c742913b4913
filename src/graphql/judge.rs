//! What a rule's `graphql:` section says about the GraphQL requests of one HTTP request. Every operation of every
//! document is judged by the fields it selects at its root, and the request by its worst: a document that holds a
//! query and a mutation is judged as the mutation, whichever `operationName` picks. A persisted query's hash is
//! judged by the document cordon saw sent with it (its SHA-256 checked), and one it has not seen is answered as
//! the server would answer a hash it does not know, so that a client sends the document.

use std::sync::Arc;

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::document::{self, Operation};
use super::request::Params;
use crate::policy::graphql::{FieldVerdict, GraphqlRules};
use crate::policy::protocol::{Asked, Judgement, Refused};
use crate::reason::Reason;

/// What the audit record's `graphql` section says about a GraphQL request: the operation that decided (the refused or asked one,
/// else the one that runs), its root fields, and how many requests a batch had.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub(crate) struct GraphqlRecord {
    /// `query`, `mutation` or `subscription`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) operation: Option<&'static str>,
    /// Its name, when it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) name: Option<String>,
    /// The fields it selects at its root.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) fields: Vec<String>,
    /// An automatic persisted query's hash, when the request carried one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) persisted: Option<String>,
    /// How many requests the body had, when it was a batch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) batch: Option<usize>,
}

/// The documents of persisted queries cordon has seen sent with their hash, for one endpoint.
pub(crate) trait Documents {
    /// The document whose SHA-256 is `hash`, if seen.
    fn get(&self, hash: &str) -> Option<Arc<str>>;
    /// Remember `document`, whose SHA-256 is `hash`.
    fn put(&self, hash: &str, document: Arc<str>);
}

/// How one operation fares: its verdict (the worst of its fields) and the field that decided.
fn fare(rules: &GraphqlRules, op: &Operation) -> (FieldVerdict, Option<String>) {
    if !rules.name(op.name.as_deref()) {
        return (FieldVerdict::Unnamed, None);
    }
    op.fields
        .iter()
        .map(|f| (rules.field(op.ty, f), Some(f.clone())))
        .max_by_key(|(v, _)| *v)
        .unwrap_or((FieldVerdict::Allow, None))
}

/// Judge the requests `params` (a batch when `batch`) against `rules`; `documents` holds the persisted queries
/// seen at this endpoint, and learns those sent with their document.
pub(crate) fn judge(
    rules: &GraphqlRules,
    documents: &dyn Documents,
    params: Vec<Params>,
    batch: bool,
) -> (GraphqlRecord, Judgement) {
    let count = batch.then_some(params.len());
    let mut seen = GraphqlRecord {
        batch: count,
        ..GraphqlRecord::default()
    };
    let refuse = |reason: Reason, message: String| Judgement::Refused(refused(reason, message, count));
    let at = |i: usize, e: String| {
        if batch {
            format!("request {i} of the batch: {e}")
        } else {
            e
        }
    };
    let mut worst: Option<(FieldVerdict, Operation, Option<String>)> = None;
    let mut asked = Vec::new();
    for (i, p) in params.into_iter().enumerate() {
        let text: Arc<str> = match (p.query, &p.hash) {
            (Some(q), Some(hash)) => {
                let sum = hex::encode(Sha256::digest(q.as_bytes()));
                if &sum != hash {
                    return (
                        seen,
                        Judgement::Invalid(at(i, format!("the document's SHA-256 is {sum}, not {hash}"))),
                    );
                }
                let q: Arc<str> = q.into();
                documents.put(hash, q.clone());
                q
            }
            (Some(q), None) => q.into(),
            (None, Some(hash)) => match documents.get(hash) {
                Some(q) => q,
                None => {
                    seen.persisted = Some(hash.clone());
                    return (
                        seen,
                        refuse(
                            Reason::GraphqlPersistedUnknown,
                            at(
                                i,
                                format!("cordon has not seen the document of the persisted query {hash}; send it"),
                            ),
                        ),
                    );
                }
            },
            (None, None) => {
                return (
                    seen,
                    Judgement::Invalid(at(i, "a GraphQL request without a query".into())),
                );
            }
        };
        let ops = match document::operations(&text) {
            Ok(ops) => ops,
            Err(e) => return (seen, Judgement::Invalid(at(i, e))),
        };
        // Which operation runs: the one named, or the only one.
        let runs = match &p.operation_name {
            Some(n) => match ops.iter().position(|o| o.name.as_deref() == Some(n.as_str())) {
                Some(k) => k,
                None => {
                    return (
                        seen,
                        Judgement::Invalid(at(
                            i,
                            format!("operationName {n:?} is not an operation of the document"),
                        )),
                    );
                }
            },
            None if ops.len() == 1 => 0,
            None => {
                return (
                    seen,
                    Judgement::Invalid(at(i, "a document of several operations needs an operationName".into())),
                );
            }
        };
        if i == 0 {
            seen.operation = Some(ops[runs].ty.as_str());
            seen.name = ops[runs].name.clone();
            seen.fields = ops[runs].fields.clone();
            seen.persisted = p.hash.clone();
        }
        // SECURITY: every operation of the document is judged, not only the one operationName picks.
        for op in ops {
            let (verdict, field) = fare(rules, &op);
            if verdict == FieldVerdict::Ask {
                asked.push(describe(&op));
            }
            if worst.as_ref().is_none_or(|(w, ..)| verdict > *w) {
                worst = Some((verdict, op, field));
            }
        }
    }
    let Some((verdict, op, field)) = worst else {
        return (seen, Judgement::Invalid("no GraphQL request".into()));
    };
    if verdict >= FieldVerdict::Ask {
        seen.operation = Some(op.ty.as_str());
        seen.name = op.name.clone();
        seen.fields = op.fields.clone();
    }
    match verdict {
        FieldVerdict::Allow => (seen, Judgement::Pass),
        FieldVerdict::Ask => (
            seen,
            Judgement::Ask(Asked {
                what: asked,
                ids: Vec::new(),
                batch: count,
            }),
        ),
        FieldVerdict::Deny => {
            let field = field.unwrap_or_default();
            (
                seen,
                refuse(
                    Reason::GraphqlOperationDenied,
                    format!(
                        "the endpoint's rule denies {} {field} ({})",
                        op.ty.as_str(),
                        describe(&op)
                    ),
                ),
            )
        }
        FieldVerdict::Unnamed => {
            let message = match field {
                Some(field) => format!(
                    "the endpoint's rule does not name {} {field} ({})",
                    op.ty.as_str(),
                    describe(&op)
                ),
                None => format!(
                    "the endpoint's rule does not list the operation name of {}",
                    describe(&op)
                ),
            };
            (seen, refuse(Reason::GraphqlOperationDenied, message))
        }
    }
}

/// An operation as a person and a log read it: `mutation AddComment: addComment, closeIssue`.
fn describe(op: &Operation) -> String {
    let name = op.name.as_deref().unwrap_or("(anonymous)");
    format!("{} {name}: {}", op.ty.as_str(), op.fields.join(", "))
}

/// A refusal in GraphQL's words: a GraphQL response with one error (for a batch of `batch` requests, one per
/// request) whose `extensions.code` is cordon's reason. An unknown persisted query says what servers say
/// (`PersistedQueryNotFound`), which a client answers by sending the document.
pub(crate) fn refused(reason: Reason, message: String, batch: Option<usize>) -> Refused {
    let error = if reason == Reason::GraphqlPersistedUnknown {
        json!({"message": "PersistedQueryNotFound", "extensions": {
            "code": "PERSISTED_QUERY_NOT_FOUND", "reason": reason.code(), "detail": message}})
    } else {
        // The reason, and what the agent reads of any refusal (docs/src/refused.md).
        let mut extensions = reason.in_protocol_facts();
        extensions.insert("code".into(), reason.code().into());
        json!({"message": format!("cordon: {message}"), "extensions": extensions})
    };
    let one = json!({ "errors": [error] });
    let body = match batch {
        Some(n) => Value::Array(vec![one; n]),
        None => one,
    };
    Refused {
        reason,
        message,
        content_type: "application/json",
        body: serde_json::to_vec(&body).unwrap_or_default(),
    }
}

#[cfg(test)]
#[path = "judge_tests.rs"]
mod tests;
