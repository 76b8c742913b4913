//! Request-smuggling shapes: refused with 400 before anything is forwarded, and audited.

use crate::rigs::client::*;
use crate::rigs::proxy::*;
use cordon::audit::Kind;

#[tokio::test]
async fn ambiguous_framing_is_400_and_never_forwarded() {
    let (up, _e, p) = rig().await;
    let target = format!("http://allowed.test:{}/", up.addr.port());
    let a = auth("sb1", "tok1");
    let cases = [
        (
            "cl_and_te",
            format!(
                "POST {target} HTTP/1.1\r\nHost: x\r\n{a}Content-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
            ),
        ),
        (
            "te_and_cl",
            format!(
                "POST {target} HTTP/1.1\r\nHost: x\r\n{a}Transfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\n0\r\n\r\n"
            ),
        ),
        (
            "dup_cl",
            format!("POST {target} HTTP/1.1\r\nHost: x\r\n{a}Content-Length: 4\r\nContent-Length: 4\r\n\r\nabcd"),
        ),
        (
            "cl_list",
            format!("POST {target} HTTP/1.1\r\nHost: x\r\n{a}Content-Length: 4, 4\r\n\r\nabcd"),
        ),
        (
            "te_obfuscated",
            format!("POST {target} HTTP/1.1\r\nHost: x\r\n{a}Transfer-Encoding: xchunked\r\n\r\n0\r\n\r\n"),
        ),
        (
            "te_list",
            format!("POST {target} HTTP/1.1\r\nHost: x\r\n{a}Transfer-Encoding: chunked, identity\r\n\r\n0\r\n\r\n"),
        ),
        (
            "obs_fold",
            format!("GET {target} HTTP/1.1\r\nHost: x\r\n{a}X-A: one\r\n two\r\n\r\n"),
        ),
        (
            "nul",
            format!("GET {target} HTTP/1.1\r\nHost: x\r\n{a}X-A: o\0ne\r\n\r\n"),
        ),
        (
            "bare_cr",
            format!("GET {target} HTTP/1.1\r\nHost: x\r\n{a}X-A: o\rne\r\n\r\n"),
        ),
    ];
    for (name, raw) in &cases {
        let resp = send(p.addr, raw).await;
        assert_eq!(resp.status, 400, "{name}: {}", resp.text());
    }
    assert_eq!(up.accepted(), 0, "nothing was forwarded");
    let recs = p.audit.wait_for(cases.len()).await;
    assert!(
        recs.iter()
            .all(|r| r.kind == Kind::Malformed && r.status == Some(400) && r.side.as_deref() == Some("downstream")),
        "{recs:#?}"
    );
}

#[tokio::test]
async fn oversized_head_is_431() {
    let (up, _e, p) = rig_with("limits:\n  max_request_header_bytes: 4KiB").await;
    let raw = format!(
        "GET http://allowed.test:{}/ HTTP/1.1\r\nHost: x\r\n{}X-Big: {}\r\n\r\n",
        up.addr.port(),
        auth("sb1", "tok1"),
        "a".repeat(8000)
    );
    assert_eq!(send(p.addr, &raw).await.status, 431);
    assert_eq!(up.accepted(), 0);
}

/// A head the configured limit allows whose target is longer than the HTTP parser reads (65534 bytes): 414 from
/// cordon, saying why (`uri_too_long`), recorded with the same status, nothing forwarded; one byte shorter is
/// judged as usual. And a head over the parser's 100 headers, within the limit: 431, recorded `head_too_large`.
#[tokio::test]
async fn overlong_target_is_414_and_too_many_headers_431_each_with_its_reason() {
    let (up, _e, p) = rig_with("limits:\n  max_request_header_bytes: 256KiB").await;
    let a = auth("sb1", "tok1");
    let prefix = format!("http://allowed.test:{}/", up.addr.port());
    let target = |len: usize| format!("{prefix}{}", "a".repeat(len - prefix.len()));
    let long = send(p.addr, &format!("GET {} HTTP/1.1\r\nHost: x\r\n{a}\r\n", target(65535))).await;
    assert_eq!(long.status, 414, "{}", long.text());
    assert_eq!(long.header("x-cordon-reason"), Some("uri_too_long"));
    let many: String = (0..110).map(|i| format!("x-{i}: 1\r\n")).collect();
    let headers = send(p.addr, &format!("GET {prefix} HTTP/1.1\r\nHost: x\r\n{a}{many}\r\n")).await;
    assert_eq!(headers.status, 431, "{}", headers.text());
    assert_eq!(
        headers.header("x-cordon-reason"),
        Some("head_too_large"),
        "{}",
        headers.text()
    );
    assert_eq!(up.accepted(), 0, "nothing was forwarded");
    let recs = p.audit.wait_for(2).await;
    let said: Vec<(Option<u16>, Option<&str>)> = recs.iter().map(|r| (r.status, r.reason.as_deref())).collect();
    assert!(said.contains(&(Some(414), Some("uri_too_long"))), "{recs:#?}");
    assert!(said.contains(&(Some(431), Some("head_too_large"))), "{recs:#?}");
    let fits = send(p.addr, &format!("GET {} HTTP/1.1\r\nHost: x\r\n{a}\r\n", target(65534))).await;
    assert_ne!(fits.status, 414, "{}", fits.text());
    // As many as the parser reads (100 in all) still pass.
    let most: String = (0..97).map(|i| format!("x-{i}: 1\r\n")).collect();
    let most_fit = send(p.addr, &format!("GET {prefix} HTTP/1.1\r\nHost: x\r\n{a}{most}\r\n")).await;
    assert_eq!(most_fit.status, 200, "{}", most_fit.text());
}
