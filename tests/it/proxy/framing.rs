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
