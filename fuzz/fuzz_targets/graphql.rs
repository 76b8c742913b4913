//! GraphQL (`src/graphql/`) on arbitrary text, differentially against a second parser (`graphql-parser`):
//! - a document both parsers accept has, for cordon, the operations the reference reads: the same types, names
//!   and root fields (through fragment spreads and inline fragments, resolved in this target from the
//!   reference's syntax tree);
//! - the same document judged as a JSON POST, a GET and an `application/graphql` POST gets one verdict;
//! - under the rule `operations: [query], ask: [mutation.add*], deny: ["mutation.delete*", subscription]`, a
//!   document that passes has, for the reference, only queries, and one that passes or waits for a person has
//!   no subscription and no root field `delete*` of a mutation (any case);
//! - the text as the body of every content type cordon reads never panics the request reader.
#![no_main]

use std::collections::{HashMap, HashSet};

use cordon::fuzzing::{GraphqlOperation, graphql_judge, graphql_operations};
use graphql_parser::query::{Definition, OperationDefinition, Selection, SelectionSet, parse_query};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    for ct in ["application/json", "application/graphql", "application/x-www-form-urlencoded"] {
        let _ = graphql_judge("POST", None, Some(ct), data);
    }
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = graphql_judge("GET", Some(text), None, b"");
    let mine = graphql_operations(text);
    let theirs = mine.as_ref().ok().and_then(|_| reference(text));
    if let (Ok(mine), Some(theirs)) = (&mine, &theirs) {
        assert_eq!(mine, theirs, "cordon and graphql-parser read {text:?} differently");
    }
    let json = serde_json::json!({ "query": text }).to_string();
    let post = graphql_judge("POST", None, Some("application/json"), json.as_bytes());
    let get = graphql_judge("GET", Some(&format!("query={}", encode(text))), None, b"");
    let doc = graphql_judge("POST", None, Some("application/graphql"), data);
    assert_eq!(post, get, "POST and GET of {text:?}");
    assert_eq!(post, doc, "JSON and application/graphql of {text:?}");
    if let Some(ops) = &theirs {
        if post == "pass" {
            assert!(ops.iter().all(|(ty, ..)| *ty == "query"), "{text:?} passed: {ops:?}");
        }
        if post == "pass" || post == "ask" {
            for (ty, _, fields) in ops {
                assert_ne!(*ty, "subscription", "{text:?}");
                if *ty == "mutation" {
                    assert!(
                        !fields.iter().any(|f| f.to_ascii_lowercase().starts_with("delete")),
                        "{text:?} went with a denied field: {ops:?}"
                    );
                }
            }
        }
    }
});

/// Every byte percent-encoded: the query string a client could send.
fn encode(text: &str) -> String {
    text.bytes().map(|b| format!("%{b:02X}")).collect()
}

/// The operations of `text` as graphql-parser reads them, when it accepts it and it has no duplicate or
/// missing names (which cordon refuses and the reference does not check).
fn reference(text: &str) -> Option<Vec<GraphqlOperation>> {
    let doc = parse_query::<String>(text).ok()?;
    let mut fragments = HashMap::new();
    let mut ops = Vec::new();
    for d in &doc.definitions {
        match d {
            Definition::Fragment(f) => {
                fragments.insert(f.name.clone(), &f.selection_set);
            }
            Definition::Operation(o) => ops.push(o),
        }
    }
    let mut out = Vec::new();
    for op in ops {
        let (ty, name, set) = match op {
            OperationDefinition::SelectionSet(s) => ("query", None, s),
            OperationDefinition::Query(q) => ("query", q.name.clone(), &q.selection_set),
            OperationDefinition::Mutation(m) => ("mutation", m.name.clone(), &m.selection_set),
            OperationDefinition::Subscription(s) => ("subscription", s.name.clone(), &s.selection_set),
        };
        out.push((ty, name, root_fields(set, &fragments)?));
    }
    Some(out)
}

fn root_fields<'a>(
    set: &SelectionSet<'a, String>,
    fragments: &HashMap<String, &SelectionSet<'a, String>>,
) -> Option<Vec<String>> {
    let mut fields = HashSet::new();
    let mut spread = HashSet::new();
    let mut sets = vec![set];
    while let Some(set) = sets.pop() {
        for s in &set.items {
            match s {
                Selection::Field(f) => {
                    fields.insert(f.name.clone());
                }
                Selection::FragmentSpread(s) => {
                    let inner = fragments.get(&s.fragment_name)?;
                    if spread.insert(s.fragment_name.clone()) {
                        sets.push(inner);
                    }
                }
                Selection::InlineFragment(i) => sets.push(&i.selection_set),
            }
        }
    }
    let mut fields: Vec<String> = fields.into_iter().collect();
    fields.sort();
    Some(fields)
}
