//! The address guard on live traffic: resolution results are judged, the judged address is dialled.

use crate::rigs::client::*;
use crate::rigs::proxy::*;
use crate::rigs::upstreams::*;
use cordon::net::{DialError, Dialer, Guard};
use cordon::target::Target;
use std::collections::HashMap;
use std::time::Duration;

fn sb1(line: &str) -> String {
    format!("{line}\r\nHost: x\r\n{}Connection: close\r\n\r\n", auth("sb1", "tok1"))
}

fn sb2(line: &str) -> String {
    format!("{line}\r\nHost: x\r\n{}Connection: close\r\n\r\n", auth("sb2", "tok2"))
}

#[tokio::test]
async fn allowed_names_that_resolve_to_refused_addresses_are_403() {
    let (up, _e, p) = rig().await;
    let port = up.addr.port();
    for (line, code) in [
        // A rule allows meta.test, but it resolves to the metadata address.
        (format!("GET http://meta.test:{port}/ HTTP/1.1"), "metadata_address"),
        // SECURITY: a name with one good and one refused address is refused whole (DNS rebinding).
        (format!("GET http://mixed.test:{port}/ HTTP/1.1"), "special_range"),
        // A rule and a hosts override cannot open a metadata name.
        (
            format!("GET http://metadata.google.internal:{port}/ HTTP/1.1"),
            "metadata_name",
        ),
    ] {
        let resp = send(p.addr, &sb1(&line)).await;
        assert_eq!(resp.status, 403, "{line}: {}", resp.text());
        assert_eq!(resp.header("x-cordon-reason"), Some(code), "{line}");
    }
    assert_eq!(up.accepted(), 0);
}

#[tokio::test]
async fn literal_and_encoded_metadata_addresses_are_refused_even_in_report_mode() {
    let (_up, _e, p) = rig().await;
    // sb2's policy is report-mode (allows anything): only the guard stands in the way.
    for target in [
        "http://169.254.169.254/latest/meta-data/",
        "http://2852039166/",
        "http://0xa9fea9fe/",
        "http://0251.0376.0251.0376/",
        "http://[::ffff:169.254.169.254]/",
        "http://[fd00:ec2::254]/",
        "http://metadata/",
        "http://localhost/",
        "http://foo.localhost/",
    ] {
        let resp = send(p.addr, &sb2(&format!("GET {target} HTTP/1.1"))).await;
        assert_eq!(resp.status, 403, "{target}: {}", resp.text());
        let code = resp.header("x-cordon-reason").unwrap_or_default().to_string();
        assert!(
            ["metadata_address", "metadata_name", "special_range"].contains(&code.as_str()),
            "{target}: {code}"
        );
    }
}

#[tokio::test]
async fn cordon_never_dials_itself() {
    let (_up, _e, p) = rig().await;
    // 127.0.0.0/8 is allowed by network.allow_cidrs, and the report-mode policy allows anything.
    let line = format!("CONNECT 127.0.0.1:{} HTTP/1.1", p.addr.port());
    let resp = send(p.addr, &sb2(&line)).await;
    assert_eq!(resp.status, 403);
    assert_eq!(resp.header("x-cordon-reason"), Some("self_address"));
    let line = format!("GET http://127.0.0.1:{}/ HTTP/1.1", p.addr.port());
    let resp = send(p.addr, &sb2(&line)).await;
    assert_eq!(resp.header("x-cordon-reason"), Some("self_address"));
}

#[tokio::test]
async fn private_ranges_are_refused_without_an_exception() {
    // No allow_cidrs: loopback itself is refused.
    let up = upstream("127.0.0.2").await;
    let yaml = format!(
        "sandboxes:\n  - {{id: s, user: u, token_sha256: {}, policy: p}}\npolicies:\n  p:\n    mode: report\n",
        hash("t")
    );
    let p = proxy(&yaml).await;
    for target in ["127.0.0.2", "10.0.0.1", "192.168.1.1", "[::1]", "100.64.0.1", "0.0.0.0"] {
        let raw = format!(
            "GET http://{target}:{}/ HTTP/1.1\r\nHost: x\r\n{}Connection: close\r\n\r\n",
            up.addr.port(),
            auth("s", "t")
        );
        let resp = send(p.addr, &raw).await;
        assert_eq!(resp.status, 403, "{target}");
        assert_eq!(resp.header("x-cordon-reason"), Some("special_range"), "{target}");
    }
    assert_eq!(up.accepted(), 0);
}

/// The system resolver (getaddrinfo) turns these strings into private and metadata addresses; the
/// guard judges what resolution returned, not the string.
#[tokio::test]
async fn system_resolver_encodings_are_judged_after_resolution() {
    let dialer = Dialer::new(
        Guard::new(vec![], vec![], vec![]),
        HashMap::new(),
        Duration::from_secs(1),
    );
    for (name, code) in [
        ("2852039166", "metadata_address"),
        ("0xa9fea9fe", "metadata_address"),
        ("0251.0376.0251.0376", "metadata_address"),
        ("012.0.0.1", "special_range"),
        ("0x7f.1", "special_range"),
    ] {
        let target = Target::from_authority_form(&format!("{name}:80")).unwrap();
        match dialer.resolve(&target).await {
            Err(DialError::Refused(r)) => assert_eq!(r.code(), code, "{name}: {r}"),
            other => panic!("{name}: expected a refusal, got {other:?}"),
        }
    }
}
