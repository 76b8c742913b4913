#![expect(clippy::unwrap_used, reason = "tests")]

use super::*;

fn op(ty: OpType, name: Option<&str>, fields: &[&str]) -> Operation {
    Operation {
        ty,
        name: name.map(str::to_owned),
        fields: fields.iter().map(|f| f.to_string()).collect(),
    }
}

#[test]
fn operations_are_their_type_name_and_root_fields() {
    assert_eq!(
        operations("{ issues { number } }").unwrap(),
        vec![op(OpType::Query, None, &["issues"])]
    );
    let doc = r#"
        # a comment
        query Issues($n: Int) { issues(first: $n) { title } viewer: me { login } }
        mutation AddComment { addComment(number: 1, body: "mutation { deleteRepo }") { number } }
        subscription Ticks { ticks(count: 3) }
    "#;
    assert_eq!(
        operations(doc).unwrap(),
        vec![
            op(OpType::Query, Some("Issues"), &["issues", "me"]),
            op(OpType::Mutation, Some("AddComment"), &["addComment"]),
            op(OpType::Subscription, Some("Ticks"), &["ticks"]),
        ]
    );
}

#[test]
fn root_fields_are_found_through_every_kind_of_fragment() {
    // SECURITY: a field reached through a fragment spread, an inline fragment (typed or not), nested fragments,
    // a fragment spread twice or in a cycle, and an alias, is the field it names.
    let doc = r#"
        mutation M { ...A ... on Mutation { closeIssue(number: 1) } ... { ...B } x: addComment(number: 1, body: "") { number } }
        fragment A on Mutation { ...B ...A }
        fragment B on Mutation { deleteRepo(name: "r") ...C }
        fragment C on Mutation { __typename }
    "#;
    let ops = operations(doc).unwrap();
    let mut fields = ops[0].fields.clone();
    fields.sort();
    assert_eq!(fields, ["__typename", "addComment", "closeIssue", "deleteRepo"]);
    // A chain of 10,000 fragments is a work list, not a stack overflow.
    let mut long = String::from("mutation { ...F0 }\n");
    for i in 0..10_000 {
        long.push_str(&format!("fragment F{i} on Mutation {{ ...F{} }}\n", i + 1));
    }
    long.push_str("fragment F10000 on Mutation { deleteRepo(name: \"r\") }\n");
    assert_eq!(operations(&long).unwrap()[0].fields, ["deleteRepo"]);
}

#[test]
fn what_a_server_would_not_execute_is_refused() {
    for (doc, says) in [
        ("", "does not parse"),
        ("{ a", "does not parse"),
        ("query { a } }", "does not parse"),
        ("mutation { a(x: ) }", "does not parse"),
        ("{ a } { b }", "anonymous"),
        ("query A { a } { b }", "anonymous"),
        ("{ b } query A { a }", "anonymous"),
        ("query A { a } mutation A { b }", "two operations are named \"A\""),
        ("type Query { a: Int }", "type system"),
        ("query { a } extend type Query { b: Int }", "type system"),
        ("query { ...Missing }", "not defined"),
        (
            "query { a } fragment F on Q { a } fragment F on Q { b }",
            "two fragments",
        ),
        ("fragment F on Q { a }", "no operation"),
    ] {
        let e = operations(doc).unwrap_err();
        assert!(e.contains(says), "{doc:?}: {e}");
    }
}

#[test]
fn documents_are_bounded() {
    let deep = format!("{{{}}}", "a {".repeat(200) + &"}".repeat(200));
    assert!(
        operations(&deep).unwrap_err().contains("does not parse"),
        "nesting past the limit"
    );
    let wide = format!(
        "{{ {} }}",
        (0..1100).map(|i| format!("f{i}")).collect::<Vec<_>>().join(" ")
    );
    assert!(operations(&wide).unwrap_err().contains("root fields"));
    let tokens = format!("{{ a {} }}", "b ".repeat(300_000));
    assert!(operations(&tokens).unwrap_err().contains("does not parse"));
}

#[test]
fn deep_values_and_directives_do_not_overflow_the_stack() {
    for (open, close) in [("[", "]"), ("{a:", "}")] {
        let doc = format!("{{ a(x: {}1{}) }}", open.repeat(100_000), close.repeat(100_000));
        assert!(operations(&doc).is_err(), "{open}");
    }
}

#[test]
fn many_operations_and_fields_are_checked_in_one_pass() {
    // Twenty thousand operations (within the token limit) and a thousand root fields each: names and fields
    // are told apart by sets, not by scanning what came before.
    let many: String = (0..20_000).map(|i| format!("query Q{i}{{a}}")).collect();
    assert_eq!(operations(&many).unwrap().len(), 20_000);
    let dup = format!("{many}query Q19999 {{ b }}");
    assert!(
        operations(&dup)
            .unwrap_err()
            .contains("two operations are named \"Q19999\"")
    );
    let wide = format!(
        "{{ {} }}",
        (0..1024).map(|i| format!("f{i} f{i}")).collect::<Vec<_>>().join(" ")
    );
    assert_eq!(operations(&wide).unwrap()[0].fields.len(), 1024);
}
