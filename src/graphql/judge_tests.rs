#![expect(clippy::unwrap_used, clippy::panic, reason = "tests")]

use std::collections::HashMap;
use std::sync::Mutex;

use super::*;

#[derive(Default)]
struct Memory(Mutex<HashMap<String, Arc<str>>>);

impl Documents for Memory {
    fn get(&self, hash: &str) -> Option<Arc<str>> {
        self.0.lock().unwrap().get(hash).cloned()
    }
    fn put(&self, hash: &str, document: Arc<str>) {
        self.0.lock().unwrap().insert(hash.to_owned(), document);
    }
}

fn rules() -> GraphqlRules {
    let v = |l: &[&str]| l.iter().map(|s| s.to_string()).collect();
    GraphqlRules::new(
        v(&["query", "mutation.addComment"]),
        v(&["mutation"]),
        v(&["mutation.delete*", "subscription"]),
        v(&[]),
    )
    .unwrap()
}

fn one(query: &str, name: Option<&str>) -> Params {
    Params {
        query: Some(query.into()),
        operation_name: name.map(str::to_owned),
        hash: None,
    }
}

fn judged(params: Vec<Params>, batch: bool) -> (GraphqlRecord, Judgement) {
    judge(&rules(), &Memory::default(), params, batch)
}

/// Asked of a person: the operations `what`, of a batch of `batch` requests.
fn asked(what: &[&str], batch: Option<usize>) -> Judgement {
    Judgement::Ask(Asked {
        what: what.iter().map(|w| w.to_string()).collect(),
        ids: Vec::new(),
        batch,
    })
}

#[test]
fn each_operation_is_judged_by_its_root_fields() {
    let (seen, v) = judged(vec![one("query Issues { issues { number } }", None)], false);
    assert_eq!(v, Judgement::Pass);
    assert_eq!(
        (seen.operation, seen.name.as_deref(), seen.fields.as_slice()),
        (Some("query"), Some("Issues"), &["issues".to_owned()][..])
    );
    assert_eq!(
        judged(vec![one("mutation { addComment(number: 1) { number } }", None)], false).1,
        Judgement::Pass
    );
    let (_, v) = judged(vec![one("mutation C { closeIssue(number: 1) }", None)], false);
    assert_eq!(v, asked(&["mutation C: closeIssue"], None));
    let (seen, v) = judged(vec![one("mutation Harmless { deleteRepo(name: \"r\") }", None)], false);
    let Judgement::Refused(r) = v else { panic!("{v:?}") };
    assert_eq!(r.reason, Reason::GraphqlOperationDenied);
    assert!(r.message.contains("denies mutation deleteRepo"), "{}", r.message);
    assert_eq!(
        seen.name.as_deref(),
        Some("Harmless"),
        "the record says what it called itself, and what it did"
    );
    assert_eq!(seen.fields, ["deleteRepo"]);
    let Judgement::Refused(r) = judged(vec![one("subscription { ticks }", None)], false).1 else {
        panic!()
    };
    assert_eq!(r.reason, Reason::GraphqlOperationDenied);
}

#[test]
fn a_document_is_judged_by_its_worst_operation_whichever_runs() {
    // SECURITY: operationName picks what runs; every operation is judged (a server that ran another would not
    // run an unjudged one), and the record says which ran when all went.
    let doc = "query Q { issues { number } } mutation M { deleteRepo(name: \"r\") }";
    for name in [Some("Q"), Some("M")] {
        let (seen, v) = judged(vec![one(doc, name)], false);
        assert!(matches!(v, Judgement::Refused(_)), "{name:?}: {v:?}");
        assert_eq!(seen.name.as_deref(), Some("M"));
    }
    let mixed = "query Q { issues { number } } mutation M { closeIssue(number: 1) }";
    assert_eq!(
        judged(vec![one(mixed, Some("Q"))], false).1,
        asked(&["mutation M: closeIssue"], None)
    );
    // And the worst field of one operation decides it: a query that also selects a denied field.
    let fields = "mutation { addComment(number: 1) { number } closeIssue(number: 1) deleteRepo(name: \"r\") }";
    assert!(matches!(
        judged(vec![one(fields, None)], false).1,
        Judgement::Refused(_)
    ));
    let (seen, v) = judged(
        vec![one(
            "query A { issues { number } } query B { issues { title } }",
            Some("B"),
        )],
        false,
    );
    assert_eq!((v, seen.name.as_deref()), (Judgement::Pass, Some("B")));
}

#[test]
fn operation_name_must_pick_one_operation() {
    for (doc, name, says) in [
        ("query A { a } query B { b }", None, "needs an operationName"),
        ("query A { a }", Some("B"), "not an operation"),
        ("{ a }", Some("A"), "not an operation"),
        ("{ a", None, "does not parse"),
    ] {
        let Judgement::Invalid(e) = judged(vec![one(doc, name)], false).1 else {
            panic!("{doc}")
        };
        assert!(e.contains(says), "{doc}: {e}");
    }
    assert_eq!(
        judged(vec![Params::default()], false).1,
        Judgement::Invalid("a GraphQL request without a query".into())
    );
}

#[test]
fn a_batch_goes_whole_or_not_at_all() {
    let (seen, v) = judged(
        vec![
            one("{ issues { number } }", None),
            one("mutation { deleteRepo(name: \"r\") }", None),
        ],
        true,
    );
    let Judgement::Refused(r) = v else { panic!() };
    assert_eq!(seen.batch, Some(2));
    let body: Value = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(body.as_array().unwrap().len(), 2, "one answer per request of the batch");
    assert_eq!(body[1]["errors"][0]["extensions"]["code"], "graphql_operation_denied");
    // What the agent reads of any refusal, in the protocol's error (docs/src/refused.md).
    assert_eq!(body[1]["errors"][0]["extensions"]["whose"], "policy");
    assert_eq!(body[1]["errors"][0]["extensions"]["ask"], true);
    assert_eq!(body[1]["errors"][0]["extensions"]["reason"], "graphql_operation_denied");
    let (_, v) = judged(
        vec![
            one("mutation { closeIssue(number: 1) }", None),
            one("mutation { lockIssue(number: 1) }", None),
        ],
        true,
    );
    assert_eq!(
        v,
        asked(
            &["mutation (anonymous): closeIssue", "mutation (anonymous): lockIssue"],
            Some(2)
        )
    );
    let Judgement::Invalid(e) = judged(vec![one("{ a }", None), one("{ b", None)], true).1 else {
        panic!()
    };
    assert!(e.starts_with("request 1 of the batch"), "{e}");
}

#[test]
fn names_when_listed_refuse_every_other_operation() {
    let v = |l: &[&str]| l.iter().map(|s| s.to_string()).collect();
    let named = GraphqlRules::new(v(&["query"]), v(&[]), v(&[]), v(&["Issues"])).unwrap();
    let m = Memory::default();
    assert_eq!(
        judge(&named, &m, vec![one("query Issues { issues { n } }", None)], false).1,
        Judgement::Pass
    );
    for doc in ["{ issues { n } }", "query Other { issues { n } }"] {
        let Judgement::Refused(r) = judge(&named, &m, vec![one(doc, None)], false).1 else {
            panic!("{doc}")
        };
        assert!(r.message.contains("operation name"), "{}", r.message);
    }
}

#[test]
fn a_persisted_query_is_judged_by_the_document_seen_with_its_hash() {
    let m = Memory::default();
    let doc = "mutation M { deleteRepo(name: \"r\") }";
    let hash = hex::encode(Sha256::digest(doc.as_bytes()));
    let only = |h: &str| Params {
        query: None,
        operation_name: None,
        hash: Some(h.to_owned()),
    };
    // Not seen yet: answered as servers answer a hash they do not know.
    let (seen, v) = judge(&rules(), &m, vec![only(&hash)], false);
    let Judgement::Refused(r) = v else { panic!() };
    assert_eq!(
        (r.reason, seen.persisted.as_deref()),
        (Reason::GraphqlPersistedUnknown, Some(hash.as_str()))
    );
    let body: Value = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(body["errors"][0]["message"], "PersistedQueryNotFound");
    assert_eq!(body["errors"][0]["extensions"]["code"], "PERSISTED_QUERY_NOT_FOUND");
    assert_eq!(
        body.as_object().unwrap().len(),
        1,
        "only errors: a client reads it as a GraphQL response"
    );
    // SECURITY: a document sent under another document's hash is refused, and not remembered.
    let lie = Params {
        query: Some("{ issues { number } }".into()),
        operation_name: None,
        hash: Some(hash.clone()),
    };
    let Judgement::Invalid(e) = judge(&rules(), &m, vec![lie], false).1 else {
        panic!()
    };
    assert!(e.contains("SHA-256"), "{e}");
    assert!(m.get(&hash).is_none());
    // Sent with its document: judged (and refused), and remembered; the hash alone is then judged the same.
    let with = Params {
        query: Some(doc.into()),
        operation_name: None,
        hash: Some(hash.clone()),
    };
    assert!(matches!(
        judge(&rules(), &m, vec![with], false).1,
        Judgement::Refused(Refused {
            reason: Reason::GraphqlOperationDenied,
            ..
        })
    ));
    let (seen, v) = judge(&rules(), &m, vec![only(&hash)], false);
    assert!(
        matches!(
            v,
            Judgement::Refused(Refused {
                reason: Reason::GraphqlOperationDenied,
                ..
            })
        ),
        "{v:?}"
    );
    assert_eq!(seen.persisted.as_deref(), Some(hash.as_str()));
}
