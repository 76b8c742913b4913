//! `cordon check` warns about the classic mistakes, each naming what it opens: a wildcard directly under a public
//! suffix (the Public Suffix List's ICANN and private sections, one label or several), a range holding private,
//! loopback or link-local space in `network.allow_cidrs` or a rule, an allow_cidrs entry that opens nothing, and a
//! rule that can never match (metadata and local-host names, metadata addresses in either spelling, a private
//! range nothing opens). `--strict` makes them errors, `run` prints the same warnings, and every configuration
//! the project ships or documents starts without one.

use std::path::Path;

use crate::rigs::process::cordon;

/// `cordon check [--strict] --config FILE` on `yaml`: (exit code, the warnings, one per line).
fn check(yaml: &str, strict: bool) -> (i32, Vec<String>) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("cordon.yaml");
    std::fs::write(&file, yaml).unwrap();
    let file = file.display().to_string();
    let mut args = vec!["check"];
    if strict {
        args.push("--strict");
    }
    args.extend(["--config", &file]);
    let (code, _, err) = cordon(&args);
    let warnings = err
        .lines()
        .filter(|l| l.starts_with("warning: "))
        .map(|l| l.replace(&format!("{file}: "), ""))
        .collect();
    (code, warnings)
}

fn policy(rules: &str) -> String {
    format!("sandboxes: []\npolicies:\n  p:\n    allow:\n{rules}")
}

/// The one warning about `at`, which must hold every piece of `says`.
fn warned(warnings: &[String], at: &str, says: &[&str]) {
    let about: Vec<&String> = warnings
        .iter()
        .filter(|w| w.starts_with(&format!("warning: {at}: ")))
        .collect();
    assert_eq!(about.len(), 1, "one warning about {at}: {warnings:#?}");
    for s in says {
        assert!(about[0].contains(s), "{at} should say {s:?}: {}", about[0]);
    }
}

#[test]
fn a_wildcard_directly_under_a_public_suffix_is_named_with_its_section() {
    let (code, w) = check(
        &policy(
            "      - host: \"*.com\"\n      - host: \"*.co.uk\"\n      - host: \"*.github.io\"\n      \
             - host: \"*.s3.amazonaws.com\"\n      - host: \"*.example.com\"\n      - host: \"*.example.co.uk\"\n      \
             - host: \"*.internal.test\"\n",
        ),
        false,
    );
    assert_eq!(code, 0, "{w:#?}");
    warned(
        &w,
        "policies.p.allow[0].host",
        &["\"*.com\"", "public suffix", "anyone's host"],
    );
    warned(&w, "policies.p.allow[1].host", &["\"*.co.uk\"", "public suffix"]);
    warned(&w, "policies.p.allow[2].host", &["github.io", "private section"]);
    warned(&w, "policies.p.allow[3].host", &["s3.amazonaws.com", "private section"]);
    // Under a registrable domain, or a name the list does not know: no warning.
    assert_eq!(w.len(), 4, "{w:#?}");
}

#[test]
fn ranges_that_open_private_loopback_or_link_local_space_are_named() {
    let (code, w) = check(
        &format!(
            "network:\n  allow_cidrs: [\"0.0.0.0/0\", \"::/0\", \"::ffff:0.0.0.0/96\", \"10.0.0.0/8\", \"fe80::/10\", \
             \"10.1.2.0/24\", \"127.0.0.1/32\", \"8.8.8.8/32\"]\n{}",
            policy("      - host: api.example.com\n")
        ),
        false,
    );
    assert_eq!(code, 0, "{w:#?}");
    for (i, what) in [
        (0, "10.0.0.0/8 (private network)"),
        (0, "127.0.0.0/8 (loopback)"),
        (0, "169.254.0.0/16 (link-local)"),
        (1, "fc00::/7 (unique local)"),
        (1, "fe80::/10 (link-local)"),
        // The IPv4-mapped spelling of everything is everything.
        (2, "10.0.0.0/8 (private network)"),
        (3, "10.0.0.0/8 (private network)"),
        (4, "fe80::/10 (link-local)"),
    ] {
        warned(
            &w,
            &format!("network.allow_cidrs[{i}]"),
            &["opens all of", what, "metadata addresses stay refused"],
        );
    }
    // An entry that opens nothing is no exception at all.
    warned(&w, "network.allow_cidrs[7]", &["8.8.8.8/32 opens nothing", "no effect"]);
    // A narrow exception inside one range is what allow_cidrs is for.
    assert!(
        !w.iter()
            .any(|l| l.contains("allow_cidrs[5]") || l.contains("allow_cidrs[6]")),
        "{w:#?}"
    );
}

#[test]
fn a_rules_range_says_what_it_reaches_and_what_it_never_can() {
    let rules = "      - cidrs: [\"0.0.0.0/0\", \"192.168.1.0/24\", \"93.184.0.0/16\"]\n      \
                 - cidrs: [\"169.254.169.254/32\", \"::ffff:169.254.170.2/128\", \"fd00:ec2::254/128\"]\n      \
                 - cidrs: [\"::/0\"]\n";
    let (code, w) = check(&policy(rules), false);
    assert_eq!(code, 0, "{w:#?}");
    warned(
        &w,
        "policies.p.allow[0].cidrs[0]",
        &[
            "every IPv4 address",
            "whole internet",
            "10.0.0.0/8 (private network)",
            "refuses",
        ],
    );
    warned(
        &w,
        "policies.p.allow[0].cidrs[1]",
        &["can never match", "192.168.0.0/16 (private network)", "allow_cidrs"],
    );
    for j in 0..3 {
        warned(
            &w,
            &format!("policies.p.allow[1].cidrs[{j}]"),
            &["can never match", "cloud metadata address"],
        );
    }
    warned(&w, "policies.p.allow[2].cidrs[0]", &["every IPv6 address"]);
    assert!(!w.iter().any(|l| l.contains("allow[0].cidrs[2]")), "{w:#?}");

    // Opened by allow_cidrs, the private range is reachable, and the rule says so instead.
    let opened = format!("network:\n  allow_cidrs: [\"192.168.0.0/16\"]\n{}", policy(rules));
    let (_, w) = check(&opened, false);
    assert!(!w.iter().any(|l| l.contains("allow[0].cidrs[1]")), "{w:#?}");
    warned(
        &w,
        "policies.p.allow[0].cidrs[0]",
        &["192.168.0.0/16 (private network), which network.allow_cidrs opens"],
    );
    // dangerous_allow_metadata is the one way to a metadata address.
    let metadata = format!(
        "network:\n  dangerous_allow_metadata: [\"169.254.169.254\"]\n{}",
        policy("      - cidrs: [\"169.254.169.254/32\"]\n")
    );
    let (_, w) = check(&metadata, false);
    assert!(!w.iter().any(|l| l.contains("cidrs[0]")), "{w:#?}");
}

#[test]
fn a_name_the_guard_refuses_can_never_match() {
    let (code, w) = check(
        &policy(
            "      - host: metadata.google.internal\n      - host: localhost\n      - host: \"*.localhost\"\n      \
             - host: app.localhost\n      - host: kubernetes.default.svc\n",
        ),
        false,
    );
    assert_eq!(code, 0, "{w:#?}");
    for i in 0..5 {
        warned(&w, &format!("policies.p.allow[{i}].host"), &["can never match"]);
    }
}

#[test]
fn strict_makes_warnings_errors_and_run_prints_the_same_warnings() {
    let yaml = policy("      - host: \"*.com\"\n");
    let (code, w) = check(&yaml, true);
    assert_eq!(code, 1, "{w:#?}");
    let (code, _) = check(&policy("      - host: \"*.example.com\"\n"), true);
    assert_eq!(code, 0);
    // run loads the same configuration, with the same warnings (then fails on the port, which is taken).
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("cordon.yaml");
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    std::fs::write(
        &file,
        format!("listen: {{ proxy: {} }}\n{yaml}", taken.local_addr().unwrap()),
    )
    .unwrap();
    let (_, _, err) = cordon(&["run", "--config", &file.display().to_string()]);
    assert!(
        err.contains("policies.p.allow[0].host") && err.contains("public suffix"),
        "{err}"
    );
}

#[test]
fn every_configuration_the_project_ships_starts_without_a_warning() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    // The embedded configuration.
    let (code, _, err) = cordon(&["check", "--strict"]);
    assert_eq!(code, 0, "{err}");
    assert!(!err.contains("warning"), "{err}");
    // The examples, each from a copy in a folder of its own with what it names beside it.
    for example in ["local.yaml", "walkthrough.yaml"] {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(example);
        std::fs::copy(root.join("config/examples").join(example), &file).unwrap();
        std::fs::write(
            dir.path().join("upstream-ca.pem"),
            crate::rigs::tls::test_ca("lint").pem,
        )
        .unwrap();
        let (code, _, err) = cordon(&["check", "--strict", "--config", &file.display().to_string()]);
        assert!(!err.contains("warning"), "{example}: {err}");
        // The walkthrough's key is stored by its first step; what matters here is that nothing warns.
        assert!(code == 0 || err.contains("demo-api-key"), "{example}: {err}");
    }
    // The coding agent's, for `cordon jail`: its sandbox has no token (the jail makes one), and check neither
    // fails nor warns for it; its key is read from the environment, as the Local agents page says.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("agent.yaml");
    std::fs::copy(root.join("config/examples/agent.yaml"), &file).unwrap();
    let state = dir.path().join("state").display().to_string();
    let env = [
        ("ANTHROPIC_API_KEY", "sk-ant-lint"),
        ("CORDON_STATE_DIR", state.as_str()),
    ];
    let (code, out, err) =
        crate::rigs::process::cordon_env(&["check", "--strict", "--config", &file.display().to_string()], &env);
    assert_eq!(code, 0, "agent.yaml: {err}");
    assert!(!err.contains("warning") && !err.contains("WARN"), "agent.yaml: {err}");
    assert!(out.contains("by cordon jail alone"), "agent.yaml: {out}");
}
