#![expect(clippy::unwrap_used, reason = "tests")]

use super::*;

fn seen(
    kind: &str,
    decision: &str,
    reason: Option<&str>,
    host: &str,
    port: u16,
    mp: Option<(&str, &str)>,
) -> SeenRecord {
    SeenRecord {
        sandbox: "s".into(),
        kind: kind.into(),
        decision: decision.into(),
        reason: reason.map(str::to_owned),
        host: host.into(),
        port: Some(port),
        method: mp.map(|(m, _)| m.to_owned()),
        path: mp.map(|(_, p)| p.to_owned()),
    }
}

#[test]
fn methods_with_the_same_ports_and_paths_share_a_rule_and_no_other_does() {
    let log = [
        seen(
            "https",
            "would_deny",
            Some("no_rule"),
            "api.test",
            443,
            Some(("GET", "/v1/a")),
        ),
        seen("https", "allow", None, "api.test", 443, Some(("HEAD", "/v1/a"))),
        seen(
            "https",
            "would_deny",
            Some("method_not_allowed"),
            "api.test",
            443,
            Some(("POST", "/v1/b")),
        ),
        seen(
            "connect",
            "would_deny",
            Some("no_rule"),
            "api.test",
            443,
            Some(("CONNECT", "")),
        ),
    ];
    let s = suggest(&log, "s", Paths::Exact);
    assert_eq!(s.learnt, 4);
    assert_eq!(
        s.allow,
        [
            SuggestedRule {
                host: Some("api.test".into()),
                cidrs: None,
                ports: vec![443],
                methods: Some(vec!["GET".into(), "HEAD".into()]),
                paths: Some(vec!["/v1/a".into()]),
            },
            SuggestedRule {
                host: Some("api.test".into()),
                cidrs: None,
                ports: vec![443],
                methods: Some(vec!["POST".into()]),
                paths: Some(vec!["/v1/b".into()]),
            },
        ]
    );
    // The CONNECT on 443 is covered by the rules of the requests inside it.
    assert!(s.tunnels_only.is_empty(), "{:?}", s.tunnels_only);
}

#[test]
fn refusals_no_rule_changes_are_counted_never_suggested() {
    let mut log = Vec::new();
    for reason in [
        "metadata_address",
        "private_address",
        "self_address",
        "credential_exfiltration",
        "auth_missing",
        "rate_limited",
        "bad_host",
    ] {
        log.push(seen(
            "http",
            "deny",
            Some(reason),
            "169.254.169.254",
            80,
            Some(("GET", "/")),
        ));
    }
    log.push(seen(
        "http",
        "deny",
        Some("path_not_allowed"),
        "ok.test",
        80,
        Some(("GET", "/x")),
    ));
    let s = suggest(&log, "s", Paths::Exact);
    assert_eq!(s.allow.len(), 1, "{:?}", s.allow);
    assert_eq!(s.allow[0].host.as_deref(), Some("ok.test"));
    assert_eq!(s.left_out.values().sum::<usize>(), 7, "{:?}", s.left_out);
    assert_eq!(s.left_out["metadata_address"], 1);
}

#[test]
fn other_sandboxes_and_other_kinds_are_not_learnt_from() {
    let mut other = seen("https", "allow", None, "other.test", 443, Some(("GET", "/")));
    other.sandbox = "t".into();
    let log = [
        other,
        seen("admin", "allow", None, "x.test", 443, Some(("GET", "/"))),
        seen("preview", "allow", None, "x.test", 443, Some(("GET", "/"))),
        seen("dns", "allow", None, "only-named.test", 53, None),
        seen("dns", "allow", None, "mine.test", 53, None),
        seen("http", "allow", None, "mine.test", 80, Some(("GET", "/"))),
    ];
    let s = suggest(&log, "s", Paths::Exact);
    let hosts: Vec<_> = s.allow.iter().map(|r| r.host.clone().unwrap()).collect();
    assert_eq!(hosts, ["mine.test"]);
    assert_eq!(s.dns_only, ["only-named.test"]);
}

#[test]
fn tunnels_with_nothing_inside_get_their_ports_alone_and_are_named() {
    let log = [
        seen(
            "connect",
            "deny",
            Some("no_rule"),
            "pinned.test",
            443,
            Some(("CONNECT", "")),
        ),
        seen(
            "transparent",
            "deny",
            Some("port_not_allowed"),
            "pinned.test",
            8443,
            None,
        ),
        seen("https", "allow", None, "web.test", 443, Some(("GET", "/"))),
        seen("connect", "allow", None, "web.test", 8443, Some(("CONNECT", ""))),
    ];
    let s = suggest(&log, "s", Paths::Exact);
    assert!(s.allow.contains(&SuggestedRule {
        host: Some("pinned.test".into()),
        cidrs: None,
        ports: vec![443, 8443],
        methods: None,
        paths: None,
    }));
    assert!(s.allow.contains(&SuggestedRule {
        host: Some("web.test".into()),
        cidrs: None,
        ports: vec![8443],
        methods: None,
        paths: None,
    }));
    assert_eq!(s.tunnels_only, ["pinned.test:443", "pinned.test:8443", "web.test:8443"]);
}

#[test]
fn addresses_become_cidrs_of_one_address() {
    let log = [
        seen("http", "allow", None, "203.0.113.7", 80, Some(("GET", "/"))),
        seen("http", "allow", None, "[2001:db8::7]", 80, Some(("GET", "/"))),
    ];
    let s = suggest(&log, "s", Paths::Exact);
    let cidrs: Vec<_> = s.allow.iter().map(|r| (r.host.clone(), r.cidrs.clone())).collect();
    assert_eq!(
        cidrs,
        [
            (None, Some(vec!["203.0.113.7/32".to_string()])),
            (None, Some(vec!["2001:db8::7/128".to_string()])),
        ]
    );
}

#[test]
fn paths_are_exact_with_glob_characters_escaped_unless_generalised() {
    let paths = ["/repos/a/b/issues", "/repos/a/c/pulls", "/x*y?[z]{w}", "/", "/top"];
    let log: Vec<SeenRecord> = paths
        .iter()
        .map(|p| seen("https", "allow", None, "h.test", 443, Some(("GET", p))))
        .collect();
    let globs = |mode| suggest(&log, "s", mode).allow[0].paths.clone();
    let exact = globs(Paths::Exact).unwrap();
    // Each exact glob matches its own path and nothing else the test made.
    let set = crate::policy::allowlist::compile_paths(&exact).unwrap();
    for p in paths {
        assert!(set.is_match(p), "{p} not matched by {exact:?}");
    }
    for other in ["/xay", "/x*y?z", "/repos/a/b/issues/1", "/topx"] {
        assert!(!set.is_match(other), "{other} matched by {exact:?}");
    }
    assert_eq!(
        globs(Paths::Prefix(2)).unwrap(),
        ["/", "/repos/a/**", "/top", "/x[*]y[?][[]z[]][{]w[}]"]
    );
    assert_eq!(globs(Paths::Prefix(0)).unwrap(), ["/**"]);
    assert_eq!(globs(Paths::Any), None);
}

#[test]
fn a_record_line_is_read_or_said_to_be_unreadable() {
    assert!(
        SeenRecord::read("{\"kind\":\"checkpoint\",\"seq\":3}")
            .unwrap()
            .is_none()
    );
    assert!(SeenRecord::read("not json").unwrap_err().contains("not a JSON record"));
    assert!(SeenRecord::read("[1]").unwrap_err().contains("not a JSON object"));
    let r = SeenRecord::read(
        r#"{"sandbox":"s","kind":"https","decision":"allow","host":"h.test","port":443,"method":"GET","path":"/a"}"#,
    )
    .unwrap()
    .unwrap();
    assert_eq!(
        (r.host.as_str(), r.port, r.path.as_deref()),
        ("h.test", Some(443), Some("/a"))
    );
}

#[test]
fn path_modes_parse_or_say_what_is_wrong() {
    assert_eq!(parse_paths("exact"), Ok(Paths::Exact));
    assert_eq!(parse_paths("any"), Ok(Paths::Any));
    assert_eq!(parse_paths("3"), Ok(Paths::Prefix(3)));
    assert!(parse_paths("deep").unwrap_err().contains("`exact`, `any` or a number"));
}
