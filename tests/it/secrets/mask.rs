//! Secrets never come back: every way an upstream can hand a credential's secret back to the sandbox, tried
//! through the `cordon` binary with real clients. Each case is one that returned the secret in clear before
//! masking covered it.

use std::io::{BufRead, BufReader};
use std::process::Stdio;

use crate::rigs::secrets::*;
use crate::rigs::tls::tls_as;
use crate::rigs::wait::{TimedChild, Within};

/// Run a curl, return (stdout as bytes, stderr).
fn run(mut c: std::process::Command) -> (Vec<u8>, String) {
    let o = c.timed_output().unwrap();
    (o.stdout, String::from_utf8_lossy(&o.stderr).into_owned())
}

/// Panic if `text` holds either secret in any spelling.
fn clean(text: &[u8], what: &str) {
    let text = String::from_utf8_lossy(text);
    for secret in [BEARER, APIKEY] {
        for s in spellings(secret) {
            assert!(!text.contains(&s), "{what}: the secret came back as {s:?}:\n{text}");
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn echoes_in_every_shape_come_back_masked() {
    let mut rig = Rig::start().await;
    let bearer_ph = rig.placeholder_of("bearer");
    let url = |p: &str| rig.url("leaky.test", p);

    // A plain echo of the request headers, and the same for a request that asked to upgrade (answered 200).
    for extra in [&[][..], &["-H", "Connection: Upgrade", "-H", "Upgrade: websocket"][..]] {
        let mut c = rig.curl();
        c.args(["-i", "--http1.1"]).args(extra).arg(url("/echo"));
        let (out, err) = run(c);
        clean(&out, "echo");
        assert!(String::from_utf8_lossy(&out).contains(&bearer_ph), "{err}");
    }
    // Non-text bodies, bodies past 1 MiB, and header values that are not UTF-8.
    for path in ["/octet", "/big", "/nonutf8"] {
        let mut c = rig.curl();
        c.args(["-i", &url(path)]);
        let (out, err) = run(c);
        assert!(!out.is_empty(), "{path}: {err}");
        clean(&out, path);
    }
    // The upstream transforming the secret: base64 of it, percent-encoded in a Location, JSON with \/, hex.
    let mut c = rig.curl();
    c.args(["-i", &url("/transforms")]);
    let (out, _) = run(c);
    let text = String::from_utf8_lossy(&out).into_owned();
    clean(&out, "transforms");
    let pct: String = form_urlencoded::byte_serialize(BEARER.as_bytes()).collect();
    assert!(
        !text.contains(&pct) && !text.contains(&BEARER.replace('/', "\\/")),
        "{text}"
    );
    assert!(text.contains("location:") && text.contains(&bearer_ph), "{text}");

    // Compressed answers: the upstream compresses whether asked or not; the sandbox gets them masked
    // (decompressed), with or without asking for compression itself.
    for coding in ["gzip", "deflate", "br", "zstd"] {
        for ask in [true, false] {
            let mut c = rig.curl();
            if ask {
                c.arg("--compressed");
            }
            c.args(["-i", &url(&format!("/compressed?c={coding}"))]);
            let (out, err) = run(c);
            let text = String::from_utf8_lossy(&out).into_owned();
            clean(&out, coding);
            assert_eq!(text.matches(&bearer_ph).count(), 50, "{coding}: {text}{err}");
            assert!(!text.to_ascii_lowercase().contains("content-encoding"), "{text}");
        }
    }
    // What reached the upstream never asked for compression or a range.
    assert!(
        rig.leaks
            .seen
            .lock()
            .unwrap()
            .iter()
            .all(|s| s.header("accept-encoding").is_none() && s.header("range").is_none())
    );
    let logs = rig.output();
    clean(logs.as_bytes(), "cordon's output");
}

#[tokio::test(flavor = "multi_thread")]
async fn stored_secrets_read_back_whole_or_by_ranges_are_masked() {
    let mut rig = Rig::start().await;
    let ph = rig.placeholder("apikey");
    let apikey_ph = ph.clone();
    // PUT a body holding the placeholder: it is swapped for the secret on the way to its own host ...
    let mut c = rig.curl();
    c.args([
        "-X",
        "PUT",
        "--data-binary",
        &format!("saved: {ph} end"),
        &rig.url("leaky.test", "/store"),
    ]);
    let (out, err) = run(c);
    assert_eq!(String::from_utf8_lossy(&out), "stored\n", "{err}");
    assert!(
        String::from_utf8_lossy(&rig.leaks.stored.lock().unwrap()).contains(APIKEY),
        "the upstream stored the real secret"
    );
    // ... and reading it back, with no placeholder sent, masks it.
    let mut c = rig.curl();
    c.arg(rig.url("leaky.test", "/store"));
    let (out, _) = run(c);
    assert_eq!(String::from_utf8_lossy(&out), format!("saved: {apikey_ph} end"));
    // Ranges that would split the secret over two answers are not sent: each read is the whole, masked.
    for range in ["0-10", "11-40"] {
        let mut c = rig.curl();
        c.args([
            "-i",
            "-H",
            &format!("Range: bytes={range}"),
            &rig.url("leaky.test", "/store"),
        ]);
        let (out, _) = run(c);
        let text = String::from_utf8_lossy(&out);
        assert!(
            text.starts_with("HTTP/2 200") || text.starts_with("HTTP/1.1 200"),
            "{text}"
        );
        clean(&out, "range");
    }
    let logs = rig.output();
    clean(logs.as_bytes(), "cordon's output");
}

#[tokio::test(flavor = "multi_thread")]
async fn trailers_are_masked_over_h2_and_http1() {
    use http_body_util::BodyExt;
    let rig = Rig::start().await;
    let ca = rig.ca();
    let connect = format!("leaky.test:{}", rig.up.port());
    let proxy: std::net::SocketAddr = format!("127.0.0.1:{}", rig.port).parse().unwrap();
    for alpn in [&b"h2"[..], b"http/1.1"] {
        let tls = tls_as(proxy, ("sb", "tok"), &connect, "leaky.test", &ca, alpn)
            .await
            .unwrap();
        let io = hyper_util::rt::TokioIo::new(tls);
        let req = hyper::Request::builder()
            .uri(format!("https://{connect}/trailers"))
            .header("te", "trailers")
            .header("host", &connect)
            .body(http_body_util::Empty::<bytes::Bytes>::new())
            .unwrap();
        let collected = if alpn == b"h2" {
            let (mut send, conn) = hyper::client::conn::http2::handshake(hyper_util::rt::TokioExecutor::new(), io)
                .await
                .unwrap();
            tokio::spawn(conn);
            send.send_request(req)
                .await
                .unwrap()
                .into_body()
                .collect()
                .await
                .unwrap()
        } else {
            let (mut send, conn) = hyper::client::conn::http1::handshake(io).await.unwrap();
            tokio::spawn(conn);
            send.send_request(req)
                .await
                .unwrap()
                .into_body()
                .collect()
                .await
                .unwrap()
        };
        let trailers = collected.trailers().cloned().expect("trailers arrive");
        let echoed = trailers["x-echo"].to_str().unwrap();
        assert!(
            !echoed.contains(BEARER) && echoed.starts_with("cordon-ph-"),
            "{alpn:?}: {echoed}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_websocket_has_its_101_and_its_frames_masked() {
    use futures_util::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::Message;
    let rig = Rig::start().await;
    let ca = rig.ca();
    let connect = format!("leaky.test:{}", rig.up.port());
    let proxy: std::net::SocketAddr = format!("127.0.0.1:{}", rig.port).parse().unwrap();
    let tls = tls_as(proxy, ("sb", "tok"), &connect, "leaky.test", &ca, b"http/1.1")
        .await
        .unwrap();
    let mut request =
        tokio_tungstenite::tungstenite::client::IntoClientRequest::into_client_request(format!("wss://{connect}/ws"))
            .unwrap();
    // An extension offered by the sandbox never reaches the upstream: compressed frames could not be masked.
    request
        .headers_mut()
        .insert("sec-websocket-extensions", "permessage-deflate".parse().unwrap());
    let (mut ws, resp) = match tokio_tungstenite::client_async(request, tls).await {
        Ok(ok) => ok,
        Err(e) => {
            let mut rig = rig;
            panic!("{e:?}\n{}", rig.output())
        }
    };
    let echoed = resp.headers()["x-echo"].to_str().unwrap().to_string();
    assert!(!echoed.contains(BEARER) && echoed.contains("cordon-ph-"), "{echoed}");
    let first = match crate::rigs::wait::within(
        "the first WebSocket message",
        std::time::Duration::from_secs(20),
        ws.next(),
    )
    .await
    {
        Some(Ok(m)) => m.into_text().unwrap().to_string(),
        other => {
            let mut rig = rig;
            panic!("{other:?}\n{}", rig.output())
        }
    };
    assert!(!first.contains(BEARER) && first.contains("cordon-ph-"), "{first}");
    assert!(first.ends_with("ext=[]"), "{first}");
    ws.send(Message::text("just words")).await.unwrap();
    assert_eq!(
        crate::rigs::wait::within("the WebSocket echo", std::time::Duration::from_secs(20), ws.next())
            .await
            .unwrap()
            .unwrap()
            .into_text()
            .unwrap()
            .as_str(),
        "just words"
    );
    // The sandbox sending a placeholder on it closes it with 1008.
    let ph = rig.placeholder("apikey");
    ws.send(Message::text(format!("exfil {ph}"))).await.unwrap();
    let closing = crate::rigs::wait::within(
        "the WebSocket close (1008)",
        std::time::Duration::from_secs(20),
        ws.next(),
    )
    .await;
    match closing {
        Some(Ok(Message::Close(Some(frame)))) => assert_eq!(u16::from(frame.code), 1008),
        other => panic!("expected a 1008 close, got {other:?}"),
    }
    assert!(!rig.leaks.saw(&ph));
}

#[tokio::test(flavor = "multi_thread")]
async fn server_sent_events_stream_through_masking_one_by_one() {
    let rig = Rig::start().await;
    let mut child = rig
        .curl()
        .args(["-N", "--max-time", "20", &rig.url("leaky.test", "/sse")])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let gate = rig.leaks.sse_gate.clone();
    let lines = tokio::task::spawn_blocking(move || {
        let mut lines = Vec::new();
        for line in BufReader::new(stdout).lines() {
            let line = line.unwrap();
            if line.starts_with("data: first") {
                // The first event reached the sandbox while the upstream still holds the second.
                gate.notify_one();
            }
            lines.push(line);
        }
        lines
    })
    .await
    .unwrap();
    child.timed_wait().unwrap();
    let data: Vec<&String> = lines.iter().filter(|l| l.starts_with("data:")).collect();
    assert_eq!(data.len(), 2, "{lines:?}");
    for l in data {
        assert!(!l.contains(BEARER) && l.contains("cordon-ph-"), "{l}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_50_mib_masked_download_keeps_memory_flat() {
    let rig = Rig::start().await;
    // Warm up (TLS, pools, the masker), then measure the peak across a 50 MiB download.
    let mut c = rig.curl();
    c.args(["-o", "/dev/null", &rig.url("leaky.test", "/download?mib=1")]);
    run(c);
    let before = rig.peak_rss_kib();
    let mut c = rig.curl();
    c.args(["--max-time", "60", &rig.url("leaky.test", "/download?mib=50")]);
    let (out, err) = run(c);
    assert!(out.len() >= 50 << 20, "{err}");
    clean(&out, "download");
    let masked = String::from_utf8_lossy(&out).matches("cordon-ph-").count();
    assert_eq!(
        masked,
        50 * 16 - 1,
        "every secret straddling a chunk boundary was masked"
    );
    let after = rig.peak_rss_kib();
    // The peak is read from /proc; on a loaded machine the first reading may come later than the second's
    // baseline, so the growth is never taken below zero.
    let grew = after.saturating_sub(before);
    assert!(grew < 24 * 1024, "peak RSS grew by {grew} KiB over a 50 MiB download");
}

#[tokio::test(flavor = "multi_thread")]
async fn json_escapes_of_an_echoed_secret_come_back_masked_and_still_json() {
    use crate::rigs::encodings::{JSON_FAMILIES, json_doc, json_escaped};
    let rig = Rig::start().await;
    let ph = rig.placeholder_of("bearer");
    let want = json_doc(&ph);
    for family in JSON_FAMILIES {
        let sent = json_escaped(family, BEARER);
        for coding in ["", "gzip", "br", "zstd"] {
            for sse in [false, true] {
                let mut query = format!("e={family}");
                if !coding.is_empty() {
                    query.push_str(&format!("&c={coding}"));
                }
                if sse {
                    query.push_str("&sse=1");
                }
                let mut c = rig.curl();
                c.args(["-sS", "--fail", "-N", &rig.url("leaky.test", &format!("/json?{query}"))]);
                let (out, err) = run(c);
                let text = String::from_utf8_lossy(&out).into_owned();
                let what = format!("{query} (the upstream sent {sent:?})");
                clean(&out, &what);
                assert!(!text.contains(&sent), "{what}: {text}{err}");
                // The document is the one sent with the placeholder where the secret was, and still JSON.
                let docs: Vec<&str> = if sse {
                    text.lines().filter_map(|l| l.strip_prefix("data: ")).collect()
                } else {
                    vec![text.as_str()]
                };
                assert_eq!(docs.len(), if sse { 2 } else { 1 }, "{what}: {text}{err}");
                for doc in docs {
                    assert_eq!(doc, want, "{what}");
                    let v: serde_json::Value = serde_json::from_str(doc).unwrap();
                    assert_eq!(v["echo"], ph.as_str(), "{what}");
                }
            }
        }
    }
}
