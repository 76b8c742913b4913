//! TLS interception with per-sandbox CAs: real TLS on both sides, curl and a rustls client.

use crate::rigs::client::*;
use crate::rigs::tls::*;
use crate::rigs::upstreams::*;
use crate::rigs::wait::Within;
use cordon::audit::Kind;
use std::sync::Arc;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

fn out(o: &std::process::Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// CONNECT as `sb1`, then a rustls handshake for `sni` trusting `ca_file`, offering HTTP/1.1.
async fn tls_through(
    proxy: std::net::SocketAddr,
    connect: &str,
    sni: &str,
    ca_file: &std::path::Path,
) -> std::io::Result<tokio_rustls::client::TlsStream<TcpStream>> {
    tls_as(proxy, ("sb1", "tok1"), connect, sni, ca_file, b"http/1.1").await
}

#[tokio::test(flavor = "multi_thread")]
async fn curl_http1_and_http2_through_interception() {
    let rig = tls_rig("").await;
    let ca = rig.sandbox_ca_file("sb1");
    let o = rig
        .curl("sb1", "tok1", &ca)
        .args(["--http1.1", &rig.url("allowed.test", "/hello")])
        .timed_output()
        .unwrap();
    assert_eq!(out(&o).0, "hello from upstream\n", "{}", out(&o).1);
    let o = rig
        .curl("sb1", "tok1", &ca)
        .args([
            "--http2",
            "-w",
            " %{http_version}",
            &rig.url("allowed.test", "/version"),
        ])
        .timed_output()
        .unwrap();
    // The sandbox spoke h2 to cordon; cordon chose h2 with the upstream on its own.
    assert_eq!(out(&o).0, "HTTP/2.0 2", "{}", out(&o).1);
    let recs = rig.proxy.audit.wait_for(4).await;
    let inner: Vec<_> = recs.iter().filter(|r| r.kind == Kind::Https).collect();
    assert_eq!(inner.len(), 2, "{recs:#?}");
    assert!(
        inner
            .iter()
            .all(|r| r.sandbox.as_deref() == Some("sb1") && r.status == Some(200))
    );
    assert_eq!(inner[0].path.as_deref(), Some("/hello"));
    assert!(inner[0].dialled.as_deref().unwrap_or("").starts_with("127.0.0.2:"));
    let seen = rig.up.seen();
    assert!(seen.iter().all(|s| s.header("proxy-authorization").is_none()));
}

#[tokio::test(flavor = "multi_thread")]
async fn method_and_path_rules_apply_inside_tls() {
    let rig = tls_rig("").await;
    let ca = rig.sandbox_ca_file("sb1");
    let code = |args: &[&str]| {
        let o = rig
            .curl("sb1", "tok1", &ca)
            .args(["-o", "/dev/null", "-w", "%{http_code}"])
            .args(args)
            .timed_output()
            .unwrap();
        out(&o).0
    };
    assert_eq!(code(&[&rig.url("api.allowed.test", "/v1/items")]), "200");
    assert_eq!(code(&["-X", "POST", &rig.url("api.allowed.test", "/v1/items")]), "403");
    assert_eq!(code(&[&rig.url("api.allowed.test", "/v2/items")]), "403");
    assert_eq!(
        code(&["--path-as-is", &rig.url("api.allowed.test", "/v1/../admin")]),
        "400"
    );
    let seen = rig.up.seen();
    assert_eq!(seen.len(), 1, "only the allowed request reached the upstream");
}

#[tokio::test(flavor = "multi_thread")]
async fn another_sandboxs_ca_is_not_trusted() {
    let rig = tls_rig("").await;
    let other = rig.sandbox_ca_file("sb2");
    let o = rig
        .curl("sb1", "tok1", &other)
        .arg(rig.url("allowed.test", "/"))
        .timed_output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(60),
        "curl must reject sb1's leaf when trusting only sb2's CA: {:?}",
        out(&o)
    );
    assert!(rig.up.seen().is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn sni_must_match_the_connect_host() {
    let rig = tls_rig("").await;
    let ca = rig.sandbox_ca_file("sb1");
    let connect = format!("allowed.test:{}", rig.up.addr.port());
    assert!(
        tls_through(rig.proxy.addr, &connect, "api.allowed.test", &ca)
            .await
            .is_err()
    );
    let recs = rig.proxy.audit.wait_for(1).await;
    assert_eq!(recs[0].reason.as_deref(), Some("sni_mismatch"), "{recs:#?}");
    assert_eq!(
        recs[0].decision,
        cordon::audit::Verdict::Deny,
        "a refused handshake is a denial"
    );
    assert!(rig.up.seen().is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn inner_host_must_match_the_connect_host_on_every_request() {
    let rig = tls_rig("").await;
    let ca = rig.sandbox_ca_file("sb1");
    let port = rig.up.addr.port();
    let connect = format!("allowed.test:{port}");
    // First request misdirected.
    let mut tls = tls_through(rig.proxy.addr, &connect, "allowed.test", &ca)
        .await
        .unwrap();
    tls.write_all(format!("GET / HTTP/1.1\r\nHost: unlisted.test:{port}\r\n\r\n").as_bytes())
        .await
        .unwrap();
    assert!(read_tls_response(&mut tls).await.starts_with("HTTP/1.1 421"));
    // A good request, then a misdirected one on the same keep-alive connection.
    let mut tls = tls_through(rig.proxy.addr, &connect, "allowed.test", &ca)
        .await
        .unwrap();
    tls.write_all(format!("GET / HTTP/1.1\r\nHost: allowed.test:{port}\r\n\r\n").as_bytes())
        .await
        .unwrap();
    assert!(read_tls_response(&mut tls).await.starts_with("HTTP/1.1 200"));
    tls.write_all(format!("GET / HTTP/1.1\r\nHost: allowed.test:{}\r\n\r\n", port + 1).as_bytes())
        .await
        .unwrap();
    assert!(read_tls_response(&mut tls).await.starts_with("HTTP/1.1 421"));
    // An absolute-form request for another host inside the tunnel.
    tls.write_all(
        format!("GET https://unlisted.test:{port}/ HTTP/1.1\r\nHost: allowed.test:{port}\r\n\r\n").as_bytes(),
    )
    .await
    .unwrap();
    assert!(read_tls_response(&mut tls).await.starts_with("HTTP/1.1 421"));
    assert_eq!(rig.up.seen().len(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn untrusted_upstream_certificate_is_502_and_nothing_is_sent() {
    let rig = tls_rig("").await;
    let rogue_ca = test_ca("rogue CA");
    let rogue = https_upstream("127.0.0.4", rogue_ca.server_config(&["untrusted.test"])).await;
    let ca = rig.sandbox_ca_file("sb2");
    let url = format!("https://untrusted.test:{}/secret", rogue.addr.port());
    let o = rig
        .curl("sb2", "tok2", &ca)
        .args(["-w", " %{http_code}", &url])
        .timed_output()
        .unwrap();
    let (body, err) = out(&o);
    let recs = rig.proxy.audit.wait_for(2).await;
    assert!(
        body.contains("upstream certificate was not trusted") && body.ends_with("502"),
        "{body} {err} {recs:#?}"
    );
    assert!(
        rogue.seen().is_empty(),
        "no request reached an upstream whose certificate failed"
    );
    let recs = rig.proxy.audit.wait_for(2).await;
    assert!(
        recs.iter()
            .any(|r| r.reason.as_deref() == Some("upstream_cert_untrusted")),
        "{recs:#?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn tunnel_rule_passes_the_real_certificate_through() {
    let rig = tls_rig("").await;
    let upstream_ca = rig.ca_dir.path().join("upstream-ca.pem");
    // The client verifies the upstream's own certificate: cordon does not intercept `tls: tunnel` rules.
    let o = rig
        .curl("sb1", "tok1", &upstream_ca)
        .arg(rig.url("pinned.test", "/pinned"))
        .timed_output()
        .unwrap();
    assert_eq!(out(&o).0, "hello from upstream\n", "{}", out(&o).1);
    let recs = rig.proxy.audit.wait_for(1).await;
    assert_eq!(recs[0].kind, Kind::Connect);
    assert!(recs[0].bytes_up > 0 && recs[0].bytes_down > 0);
    assert!(recs.iter().all(|r| r.kind != Kind::Https));
}

#[tokio::test(flavor = "multi_thread")]
async fn tunnel_rule_checks_the_sni() {
    let rig = tls_rig("").await;
    let upstream_ca = rig.ca_dir.path().join("upstream-ca.pem");
    let connect = format!("pinned.test:{}", rig.up.addr.port());
    assert!(
        tls_through(rig.proxy.addr, &connect, "allowed.test", &upstream_ca)
            .await
            .is_err()
    );
    let recs = rig.proxy.audit.wait_for(1).await;
    assert_eq!(recs[0].reason.as_deref(), Some("sni_mismatch"));
    assert_eq!(recs[0].decision, cordon::audit::Verdict::Deny);
    assert!(rig.up.seen().is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn plain_bytes_after_an_intercepted_connect_are_closed() {
    let rig = tls_rig("").await;
    let mut s = TcpStream::connect(rig.proxy.addr).await.unwrap();
    let connect = format!("allowed.test:{}", rig.up.addr.port());
    let raw = format!(
        "CONNECT {connect} HTTP/1.1\r\nHost: {connect}\r\n{}\r\n",
        auth("sb1", "tok1")
    );
    s.write_all(raw.as_bytes()).await.unwrap();
    assert_eq!(read_connect_response(&mut s).await, 200);
    s.write_all(b"GET / HTTP/1.1\r\nHost: allowed.test\r\n\r\n")
        .await
        .unwrap();
    assert!(closed(&mut s).await);
    let recs = rig.proxy.audit.wait_for(1).await;
    assert_eq!(recs[0].reason.as_deref(), Some("not_tls"));
    assert_eq!(recs[0].decision, cordon::audit::Verdict::Deny);
    assert!(rig.up.seen().is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn python_requests_through_interception() {
    let rig = tls_rig("").await;
    let ca = rig.sandbox_ca_file("sb1");
    let proxy = format!("http://sb1:tok1@{}", rig.proxy.addr);
    let script = "import requests,sys; r=requests.get(sys.argv[1], timeout=10); print(r.status_code, r.text.strip())";
    let o = std::process::Command::new("python3")
        .args(["-c", script, &rig.url("allowed.test", "/py")])
        .env("HTTPS_PROXY", &proxy)
        .env("REQUESTS_CA_BUNDLE", &ca)
        .env_remove("NO_PROXY")
        .env_remove("no_proxy")
        .timed_output()
        .unwrap();
    let (stdout, stderr) = out(&o);
    if stderr.contains("No module named 'requests'") {
        panic!("python requests is not installed: `pip install requests` (.ci/run does)");
    }
    assert_eq!(stdout.trim(), "200 hello from upstream", "{stderr}");
}

#[tokio::test(flavor = "multi_thread")]
async fn websocket_through_interception() {
    use futures_util::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::Message;
    let rig = tls_rig("").await;
    let ws = wss_echo("127.0.0.2", test_ca_config(&rig)).await;
    let ca = rig.sandbox_ca_file("sb2");
    let connect = format!("allowed.test:{}", ws.port());
    let tls = tls_as(
        rig.proxy.addr,
        ("sb2", "tok2"),
        &connect,
        "allowed.test",
        &ca,
        b"http/1.1",
    )
    .await
    .unwrap();
    let handshake = tokio_tungstenite::client_async(format!("wss://{connect}/ws"), tls).await;
    let recs = rig.proxy.audit.now();
    let (mut socket, resp) = handshake.unwrap_or_else(|e| panic!("{e:?} {recs:#?}"));
    assert_eq!(resp.status(), 101);
    socket.send(Message::text("ping through cordon")).await.unwrap();
    let echoed = tokio::time::timeout(std::time::Duration::from_secs(5), socket.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(echoed, Message::text("ping through cordon"));
    // A WebSocket's record is written when it closes, with what moved both ways.
    socket.close(None).await.unwrap();
    let rec = rig
        .proxy
        .audit
        .wait_any(|r| r.kind == Kind::Https && r.status == Some(101))
        .await
        .unwrap_or_else(|| panic!("{:#?}", rig.proxy.audit.now()));
    assert!(rec.bytes_up >= 19 && rec.bytes_down >= 19, "{rec:#?}");
}

fn test_ca_config(rig: &TlsRig) -> Arc<rustls::ServerConfig> {
    rig.upstream_ca.server_config(&["allowed.test"])
}

#[tokio::test(flavor = "multi_thread")]
async fn bodies_stream_without_buffering() {
    let rig = tls_rig("").await;
    let ca = rig.sandbox_ca_file("sb1");
    let connect = format!("allowed.test:{}", rig.up.addr.port());
    let mut tls = tls_through(rig.proxy.addr, &connect, "allowed.test", &ca)
        .await
        .unwrap();
    tls.write_all(format!("GET /stream HTTP/1.1\r\nHost: {connect}\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let mut got = String::new();
    // The upstream sends its last chunk only after the test has seen the first: a proxy that waited for
    // the whole body would time out here.
    while !got.contains("first\n") {
        got.push_str(&read_tls_response(&mut tls).await);
    }
    assert!(!got.contains("last"));
    STREAM_GATE.notify_one();
    while !got.contains("last\n") {
        got.push_str(&read_tls_response(&mut tls).await);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn trailers_pass_over_h2() {
    use http_body_util::{BodyExt, Empty};
    let rig = tls_rig("").await;
    let ca = rig.sandbox_ca_file("sb1");
    let connect = format!("allowed.test:{}", rig.up.addr.port());
    let tls = tls_as(rig.proxy.addr, ("sb1", "tok1"), &connect, "allowed.test", &ca, b"h2")
        .await
        .unwrap();
    assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"h2"[..]));
    let (mut send, conn) =
        hyper::client::conn::http2::handshake(hyper_util::rt::TokioExecutor::new(), hyper_util::rt::TokioIo::new(tls))
            .await
            .unwrap();
    tokio::spawn(conn);
    let req = http::Request::get(format!("https://{connect}/trailers"))
        .header("te", "trailers")
        .body(Empty::<bytes::Bytes>::new())
        .unwrap();
    let resp = send.send_request(req).await.unwrap();
    assert_eq!(resp.status(), 200);
    let collected = resp.into_body().collect().await.unwrap();
    let trailers = collected.trailers().cloned().expect("trailers arrived");
    assert_eq!(trailers.get("x-checksum").unwrap(), "abc123");
    assert_eq!(collected.to_bytes(), "with trailers\n");
}

#[tokio::test(flavor = "multi_thread")]
async fn upgrade_to_h2c_is_stripped() {
    let rig = tls_rig("").await;
    let ca = rig.sandbox_ca_file("sb1");
    let connect = format!("allowed.test:{}", rig.up.addr.port());
    let mut tls = tls_through(rig.proxy.addr, &connect, "allowed.test", &ca)
        .await
        .unwrap();
    let req = format!(
        "GET / HTTP/1.1\r\nHost: {connect}\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\n"
    );
    tls.write_all(req.as_bytes()).await.unwrap();
    assert!(read_tls_response(&mut tls).await.starts_with("HTTP/1.1 200"));
    let seen = rig.up.seen();
    assert!(
        seen[0].header("upgrade").is_none() && seen[0].header("http2-settings").is_none(),
        "{seen:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn no_connect_or_smuggling_inside_the_tunnel() {
    let rig = tls_rig("").await;
    let ca = rig.sandbox_ca_file("sb1");
    let connect = format!("allowed.test:{}", rig.up.addr.port());
    let mut tls = tls_through(rig.proxy.addr, &connect, "allowed.test", &ca)
        .await
        .unwrap();
    tls.write_all(format!("CONNECT {connect} HTTP/1.1\r\nHost: {connect}\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let resp = read_tls_response(&mut tls).await;
    assert!(
        resp.starts_with("HTTP/1.1 400") && resp.contains("connect_in_tunnel"),
        "{resp}"
    );
    let mut tls = tls_through(rig.proxy.addr, &connect, "allowed.test", &ca)
        .await
        .unwrap();
    let smuggle = format!(
        "POST / HTTP/1.1\r\nHost: {connect}\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
    );
    tls.write_all(smuggle.as_bytes()).await.unwrap();
    assert!(read_tls_response(&mut tls).await.starts_with("HTTP/1.1 400"));
    assert!(rig.up.seen().is_empty());
    drop(tls);
    let mut found = false;
    for _ in 0..100 {
        let recs = rig.proxy.audit.now();
        if recs
            .iter()
            .any(|r| r.kind == Kind::Malformed && r.reason.as_deref() == Some("cl_and_te"))
        {
            found = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(
        found,
        "the refused inner request is audited: {:#?}",
        rig.proxy.audit.now()
    );
}
