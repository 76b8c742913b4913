#![expect(clippy::unwrap_used, reason = "tests")]

use super::*;

fn rules(tools: &[&str], ask: &[&str], deny: &[&str]) -> McpRules {
    let v = |l: &[&str]| l.iter().map(|s| s.to_string()).collect();
    McpRules::new(v(tools), v(ask), v(deny), Vec::new()).unwrap()
}

#[test]
fn deny_then_ask_then_tools_and_nothing_else() {
    let r = rules(&["*"], &["send_*"], &["delete_*"]);
    assert_eq!(r.tool("read_file"), ToolVerdict::Allow);
    assert_eq!(r.tool("send_email"), ToolVerdict::Ask);
    assert_eq!(r.tool("delete_repo"), ToolVerdict::Deny);
    // deny and ask in any case; a tool named nowhere is refused.
    assert_eq!(r.tool("DELETE_repo"), ToolVerdict::Deny);
    assert_eq!(r.tool("Send_Email"), ToolVerdict::Ask);
    let narrow = rules(&["read_file"], &[], &[]);
    assert_eq!(narrow.tool("read_file"), ToolVerdict::Allow);
    assert_eq!(narrow.tool("Read_file"), ToolVerdict::Unnamed);
    assert_eq!(narrow.tool("read_file2"), ToolVerdict::Unnamed);
    assert!(!ToolVerdict::Unnamed.listed() && !ToolVerdict::Deny.listed() && ToolVerdict::Ask.listed());
}

#[test]
fn names_no_glob_matches_but_a_folding_server_reads_as_denied_are_refused() {
    // Each of these folds or normalizes (NFKC, Unicode case folding, ignoring invisible characters) to a name the
    // rule denies, or one a permissive `tools: ["*"]` would let through unchecked.
    let r = rules(&["*"], &["send_*"], &["kill_*", "delete_*"]);
    for name in [
        "\u{212a}ill_all",     // KELVIN SIGN: lowercases to k
        "delete_repo\u{17f}",  // LONG S: case-folds to s
        "\u{17f}end_email",    // ... past `ask` too
        "\u{ff44}elete_repo",  // FULLWIDTH d: NFKC to d
        "delete_repo\u{200b}", // ZERO WIDTH SPACE
        "de\u{ad}lete_repo",   // SOFT HYPHEN
        "kill_\u{131}t",       // DOTLESS i
        "K\u{0130}LL_ALL",     // DOTTED capital I: lowercases to i + combining dot
        "delete\u{2010}repo",  // HYPHEN, not '-'
        "kill_all\u{301}",     // a combining mark
        "delete_repo ",
        "delete_repo\n",
        "delete_repo\0",
        "",
        &"a".repeat(129),
        "read_*",
        "read_?",
    ] {
        assert_eq!(r.tool(name), ToolVerdict::Malformed, "{name:?}");
        assert!(!r.tool(name).listed(), "{name:?}");
    }
    assert_eq!(r.tool("read/file.v2-x_y"), ToolVerdict::Allow);
    assert!(!ToolVerdict::Malformed.listed());
}

#[test]
fn lifecycle_passes_and_other_methods_only_when_named() {
    let r = rules(&["a"], &[], &[]);
    for m in LIFECYCLE {
        assert!(r.method(m), "{m}");
    }
    assert!(!r.method("resources/read"));
    assert!(!r.method("Tools/List"));
    let named = McpRules::new(
        vec![],
        vec![],
        vec![],
        vec!["resources/read".into(), "tools/*".into(), "*".into()],
    )
    .unwrap();
    assert!(named.method("resources/read"));
    // No other spelling of tools/call passes as a method, nor a name MCP does not write.
    for m in [
        "Tools/Call",
        "TOOLS/CALL",
        "tools/cal\u{13f}",
        "tools/\u{ff43}all",
        "resources/read\u{200b}",
    ] {
        assert!(!named.method(m), "{m:?}");
    }
}

#[test]
fn bad_names_are_refused_naming_the_entry() {
    let e = McpRules::new(vec!["ok".into(), "bad name".into()], vec![], vec![], vec![]).unwrap_err();
    assert_eq!((e.0, e.1), ("tools", 1));
    assert!(e.2.contains("' '"), "{}", e.2);
    let e = McpRules::new(vec![], vec![], vec![String::new()], vec![]).unwrap_err();
    assert_eq!((e.0, e.1), ("deny", 0));
    let e = McpRules::new(vec![], vec![], vec![], vec!["tools/call".into()]).unwrap_err();
    assert_eq!(e.0, "methods");
    let e = McpRules::new(vec!["x".repeat(129)], vec![], vec![], vec![]).unwrap_err();
    assert!(e.2.contains("128"));
}

#[test]
fn an_own_section_only_narrows_its_base() {
    let base = rules(&["read_*", "list_issues"], &["send_email"], &["delete_*"]);
    // Narrower: a literal the base's glob matches, the same deny, the base's ask kept.
    assert!(
        rules(&["read_file"], &["send_email"], &["delete_*"])
            .within(&base)
            .is_ok()
    );
    assert!(rules(&[], &[], &["delete_*", "send_email"]).within(&base).is_ok());
    // Asking for what the base lets through at once is narrower only where the base takes every case of it:
    // `ask` matches in any case and `tools` exactly, so `ask: [read_file]` over `tools: [read_*]` would ask for
    // READ_FILE, which the base refuses.
    let err = rules(&[], &["read_file", "send_email"], &["delete_*"])
        .within(&base)
        .unwrap_err();
    assert_eq!(err.0, "ask");
    assert!(err.1.contains("matches in any case"), "{}", err.1);
    let any = rules(&["*"], &["send_email"], &["delete_*"]);
    assert!(
        rules(&[], &["read_file", "send_email"], &["delete_*"])
            .within(&any)
            .is_ok()
    );
    // A name without letters has one case.
    let digits = rules(&["run_42", "42"], &["send_email"], &["delete_*"]);
    assert!(rules(&[], &["42", "send_email"], &["delete_*"]).within(&digits).is_ok());
    assert_eq!(
        rules(&[], &["run_42", "send_email"], &["delete_*"])
            .within(&digits)
            .unwrap_err()
            .0,
        "ask"
    );
    // Wider: a glob the base does not have, a tool the base does not name, a deny or an ask dropped.
    assert_eq!(
        rules(&["*"], &["send_email"], &["delete_*"])
            .within(&base)
            .unwrap_err()
            .0,
        "tools"
    );
    assert_eq!(
        rules(&["write_file"], &["send_email"], &["delete_*"])
            .within(&base)
            .unwrap_err()
            .0,
        "tools"
    );
    assert_eq!(rules(&[], &["send_email"], &[]).within(&base).unwrap_err().0, "deny");
    assert_eq!(rules(&[], &[], &["delete_*"]).within(&base).unwrap_err().0, "ask");
    assert_eq!(
        rules(&[], &["drop_db", "send_email"], &["delete_*"])
            .within(&base)
            .unwrap_err()
            .0,
        "ask"
    );
}
