#![expect(clippy::unwrap_used, reason = "tests")]

use super::*;

fn v(l: &[&str]) -> Vec<String> {
    l.iter().map(|s| s.to_string()).collect()
}

fn rules(operations: &[&str], ask: &[&str], deny: &[&str], names: &[&str]) -> GraphqlRules {
    GraphqlRules::new(v(operations), v(ask), v(deny), v(names)).unwrap()
}

use FieldVerdict::*;
use OpType::*;

#[test]
fn types_speak_for_every_field_and_nothing_named_is_refused() {
    let r = rules(&["query"], &["mutation"], &["subscription"], &[]);
    assert_eq!(r.field(Query, "issues"), Allow);
    assert_eq!(r.field(Query, "__schema"), Allow);
    assert_eq!(r.field(Mutation, "addComment"), Ask);
    assert_eq!(r.field(Subscription, "ticks"), Deny);
    let only_queries = rules(&["query"], &[], &[], &[]);
    assert_eq!(only_queries.field(Mutation, "addComment"), Unnamed);
    assert_eq!(only_queries.field(Subscription, "ticks"), Unnamed);
    assert!(Allow < Ask && Ask < Deny && Deny < Unnamed, "worst is greatest");
}

#[test]
fn deny_wins_everywhere_and_a_named_field_wins_over_its_type() {
    let r = rules(
        &["query", "mutation.addComment"],
        &["mutation"],
        &["mutation.delete*", "query.secret"],
        &[],
    );
    assert_eq!(
        r.field(Mutation, "addComment"),
        Allow,
        "the field entry beats the type's ask"
    );
    assert_eq!(r.field(Mutation, "closeIssue"), Ask);
    assert_eq!(r.field(Mutation, "deleteRepository"), Deny);
    assert_eq!(r.field(Mutation, "DeleteRepository"), Deny, "deny in any case");
    assert_eq!(r.field(Query, "secret"), Deny, "deny beats the type's allow");
    assert_eq!(r.field(Query, "SECRET"), Deny);
    // At the same level, ask beats allow; allow matches exactly.
    let both = rules(&["mutation.addComment"], &["mutation.add*"], &[], &[]);
    assert_eq!(both.field(Mutation, "addComment"), Ask);
    assert_eq!(both.field(Mutation, "AddComment"), Ask, "ask in any case");
    let exact = rules(&["mutation.addComment"], &[], &[], &[]);
    assert_eq!(exact.field(Mutation, "addcomment"), Unnamed);
    assert_eq!(exact.field(Query, "addComment"), Unnamed, "a field of another type");
}

#[test]
fn names_when_listed_narrow_and_anonymous_operations_then_fail() {
    let open = rules(&["query"], &[], &[], &[]);
    assert!(open.name(None) && open.name(Some("Anything")));
    let r = rules(&["query"], &[], &[], &["Issues", "Issue*"]);
    assert!(r.name(Some("Issues")) && r.name(Some("IssueComments")));
    assert!(!r.name(Some("issues")), "names match exactly");
    assert!(!r.name(None), "an anonymous operation has no name to list");
    assert!(!r.name(Some("Other")));
}

#[test]
fn every_wrong_entry_names_its_list_and_place() {
    for (ops, ask, deny, names, list, at, says) in [
        (
            &["query", "mutaton"][..],
            &[][..],
            &[][..],
            &[][..],
            "operations",
            1,
            "an operation type",
        ),
        (&[], &["Mutation"], &[], &[], "ask", 0, "an operation type"),
        (&[], &[], &["mutation.delete-repo"], &[], "deny", 0, "contains '-'"),
        (&[], &[], &["query.a", "mutation."], &[], "deny", 1, "1 to 128"),
        (&[], &[], &[], &["Issues", "with space"], "names", 1, "contains ' '"),
        (&["query.[ab"], &[], &[], &[], "operations", 0, "contains '['"),
        (&[], &[], &[], &[".x"], "names", 0, "contains '.'"),
    ] {
        let e = GraphqlRules::new(v(ops), v(ask), v(deny), v(names)).unwrap_err();
        assert_eq!((e.0, e.1), (list, at), "{e:?}");
        assert!(e.2.contains(says), "{e:?}");
    }
}

#[test]
fn an_own_section_only_narrows_its_base() {
    let base = rules(
        &["query", "mutation.addComment"],
        &["mutation"],
        &["mutation.delete*"],
        &[],
    );
    let ok = [
        rules(&["query"], &["mutation"], &["mutation.delete*"], &[]),
        rules(
            &["query.issues", "mutation.addComment"],
            &["mutation"],
            &["mutation.delete*", "subscription"],
            &[],
        ),
        rules(
            &[],
            &["mutation", "mutation.addComment"],
            &["mutation.delete*"],
            &["Issues"],
        ),
        rules(&[], &[], &["mutation.delete*", "mutation"], &[]),
    ];
    for own in ok {
        assert_eq!(own.within(&base), Ok(()), "{own:?}");
    }
    for (own, field) in [
        (
            rules(&["query", "mutation"], &["mutation"], &["mutation.delete*"], &[]),
            "operations",
        ),
        (
            rules(
                &["query", "mutation.closeIssue"],
                &["mutation"],
                &["mutation.delete*"],
                &[],
            ),
            "operations",
        ),
        (
            rules(&["query"], &["mutation", "subscription"], &["mutation.delete*"], &[]),
            "ask",
        ),
        (rules(&["query"], &["mutation"], &[], &[]), "deny"),
        (
            rules(&["query"], &["mutation.addComment"], &["mutation.delete*"], &[]),
            "ask",
        ),
    ] {
        assert_eq!(own.within(&base).unwrap_err().0, field, "{own:?}");
    }
    // `ask` matches fields in any case and `operations` exactly: asking for a field the base sends only as written
    // would ask for its other spellings (`mutation.ADDCOMMENT`), which the base refuses; a whole type the base
    // sends takes every spelling.
    let exact = rules(&["query", "mutation.addComment"], &[], &["mutation.delete*"], &[]);
    let e = rules(&["query"], &["mutation.addComment"], &["mutation.delete*"], &[])
        .within(&exact)
        .unwrap_err();
    assert_eq!(e.0, "ask", "{e:?}");
    assert!(e.1.contains("matches in any case"), "{e:?}");
    assert_eq!(
        rules(&[], &["query.issues", "query"], &["mutation.delete*"], &[]).within(&exact),
        Ok(())
    );
    let named = rules(&["query"], &[], &[], &["Issue*"]);
    assert_eq!(rules(&["query"], &[], &[], &["IssueList"]).within(&named), Ok(()));
    assert_eq!(rules(&["query"], &[], &[], &[]).within(&named).unwrap_err().0, "names");
    assert_eq!(
        rules(&["query"], &[], &[], &["Other"]).within(&named).unwrap_err().0,
        "names"
    );
    assert_eq!(
        rules(&["query"], &[], &[], &["*"]).within(&named).unwrap_err().0,
        "names"
    );
}
