//! Every byte a sandbox gets from a masked destination is masked or refused: the status line's reason
//! phrase, 1xx and 101 heads, header names and values, trailers, and bodies under every layout of stacked
//! codings (several `Content-Encoding` lines, lists, mixed case, `identity` entries, raw deflate, transfer
//! codings before `chunked`, bodies compressed by their media type). Through the `cordon` binary, with a
//! raw upstream that writes exactly the bytes of each case, reflecting the secret cordon injected.

use std::io::Read;

use base64::Engine;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::rigs::envelope::*;
use crate::rigs::leaky::Leaks;
use crate::rigs::secrets::{BEARER, Rig};
use crate::rigs::tls::{test_ca, tls_as};
use crate::rigs::wait::Within;

/// cordon in front of the raw upstream.
async fn rig() -> Rig {
    let ca = test_ca("envelope upstream CA");
    let up = raw_upstream(&ca).await;
    Rig::in_front_of(up, Leaks::default(), &ca).await
}

/// Panic if `bytes` hold the injected secret in any spelling, ASCII case ignored (header names arrive
/// lower-cased): raw, percent-encoded, hex, base64 (standard, URL-safe, and of `user:` + it).
fn clean(bytes: &[u8], what: &str) {
    let text = String::from_utf8_lossy(bytes).to_ascii_lowercase();
    let b64 = &base64::engine::general_purpose::STANDARD;
    let mut spellings = name_forms(BEARER).to_vec();
    spellings.extend([
        BEARER.to_string(),
        hex::encode(BEARER),
        b64.encode(BEARER),
        b64.encode(format!("user:{BEARER}")),
    ]);
    for s in spellings {
        let s = s.to_ascii_lowercase();
        let s = s.trim_start_matches("x-");
        assert!(!text.contains(s), "{what}: the secret came back as {s:?}:\n{text}");
    }
}

/// curl through cordon with `args`: (the head, as written, and the body).
fn curl(rig: &Rig, args: &[&str], path: &str) -> (String, Vec<u8>) {
    let mut c = rig.curl();
    c.args(["-i", "--suppress-connect-headers"])
        .args(args)
        .arg(rig.url("leaky.test", path));
    let out = c.timed_output().unwrap();
    let all = out.stdout;
    let split = all
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map_or(all.len(), |at| at + 4);
    let head = String::from_utf8_lossy(&all[..split]).into_owned();
    assert!(!head.is_empty(), "{path}: {}", String::from_utf8_lossy(&out.stderr));
    (head, all[split..].to_vec())
}

/// Everything a raw HTTP/1.1 client gets for `request` over an intercepted TLS connection, until cordon
/// closes it.
async fn raw(rig: &Rig, request: &str) -> Vec<u8> {
    let connect = format!("leaky.test:{}", rig.up.port());
    let proxy: std::net::SocketAddr = format!("127.0.0.1:{}", rig.port).parse().unwrap();
    let mut tls = tls_as(proxy, ("sb", "tok"), &connect, "leaky.test", &rig.ca(), b"http/1.1")
        .await
        .unwrap();
    let request = request.replace("{host}", &connect);
    tls.write_all(request.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        let read = tokio::time::timeout(std::time::Duration::from_secs(10), tls.read(&mut buf)).await;
        match read {
            Ok(Ok(n)) if n > 0 => out.extend_from_slice(&buf[..n]),
            _ => return out,
        }
    }
}

fn gunzip(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    flate2::read::MultiGzDecoder::new(data).read_to_end(&mut out).unwrap();
    out
}

#[tokio::test(flavor = "multi_thread")]
async fn the_reason_phrase_and_1xx_heads_never_carry_the_secret() {
    let rig = rig().await;
    let ph = rig.placeholder_of("bearer");
    for status in ["200", "404", "206"] {
        for proto in ["--http1.1", "--http2"] {
            let (head, body) = curl(&rig, &[proto], &format!("/reason?s={status}"));
            clean(head.as_bytes(), "status line");
            clean(&body, "body");
            assert!(head.starts_with("HTTP/"), "{head}");
            assert!(head.lines().next().unwrap().contains(status), "{head}");
            assert_eq!(
                String::from_utf8_lossy(&body).matches(&ph).count(),
                50,
                "{status} {proto}"
            );
            if proto == "--http1.1" {
                // The upstream's own phrase arrives, masked.
                assert!(
                    head.starts_with(&format!("HTTP/1.1 {status} Echo {ph} here\r\n")),
                    "{head}"
                );
            }
        }
    }
    // 100 and 103 with the secret in the phrase, a value and a name: hyper drops interim answers, so the
    // sandbox sees only the final one.
    let all = raw(
        &rig,
        "GET /informational HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n",
    )
    .await;
    clean(&all, "1xx");
    let text = String::from_utf8_lossy(&all);
    assert!(
        text.starts_with("HTTP/1.1 200 OK\r\n") && text.contains("\r\nok\n"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn header_names_holding_the_secret_are_dropped_in_heads_trailers_and_the_101() {
    let rig = rig().await;
    for proto in ["--http1.1", "--http2"] {
        let (head, body) = curl(&rig, &[proto], "/names");
        clean(head.as_bytes(), "names");
        assert!(head.to_ascii_lowercase().contains("x-plain: kept"), "{head}");
        assert_eq!(body, b"ok\n");
    }
    // Trailers over HTTP/1.1, byte for byte: the field named by the secret is dropped, the others masked.
    let all = raw(
        &rig,
        "GET /trailers HTTP/1.1\r\nHost: {host}\r\nTE: trailers\r\nConnection: close\r\n\r\n",
    )
    .await;
    clean(&all, "trailers");
    let text = String::from_utf8_lossy(&all).to_ascii_lowercase();
    // The body may come in several chunks (masking holds back a tail that could begin a form).
    let (_, chunked) = text.split_once("\r\n\r\n").unwrap();
    let mut body = String::new();
    let mut rest = chunked;
    while let Some((size, after)) = rest.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap();
        if n == 0 {
            break;
        }
        body.push_str(&after[..n]);
        rest = &after[n + 2..];
    }
    assert_eq!(body, "body\n", "{text}");
    assert!(text.contains("x-fine: cordon-ph-"), "{text}");
    // Over h2.
    let connect = format!("leaky.test:{}", rig.up.port());
    let proxy: std::net::SocketAddr = format!("127.0.0.1:{}", rig.port).parse().unwrap();
    let tls = tls_as(proxy, ("sb", "tok"), &connect, "leaky.test", &rig.ca(), b"h2")
        .await
        .unwrap();
    let (mut send, conn) =
        hyper::client::conn::http2::handshake(hyper_util::rt::TokioExecutor::new(), hyper_util::rt::TokioIo::new(tls))
            .await
            .unwrap();
    tokio::spawn(conn);
    let req = hyper::Request::builder()
        .uri(format!("https://{connect}/trailers"))
        .header("te", "trailers")
        .body(http_body_util::Empty::<bytes::Bytes>::new())
        .unwrap();
    let resp = send.send_request(req).await.unwrap();
    let collected = http_body_util::BodyExt::collect(resp.into_body()).await.unwrap();
    let trailers = collected.trailers().cloned().expect("trailers arrive over h2");
    let fields: String = trailers.iter().map(|(k, v)| format!("{k}: {v:?}\n")).collect();
    clean(fields.as_bytes(), "h2 trailers");
    assert!(
        trailers["x-fine"].to_str().unwrap().starts_with("cordon-ph-"),
        "{fields}"
    );
    // The 101 of a WebSocket handshake: reason phrase masked, the named field dropped, values masked.
    let all = raw(
        &rig,
        "GET /upgrade HTTP/1.1\r\nHost: {host}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\
         Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n",
    )
    .await;
    clean(&all, "101");
    let text = String::from_utf8_lossy(&all).to_ascii_lowercase();
    assert!(
        text.starts_with("http/1.1 101 switching cordon-ph-") && text.contains("x-echo: cordon-ph-"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn every_layout_of_stacked_codings_is_undone_and_masked() {
    let rig = rig().await;
    let ph = rig.placeholder_of("bearer");
    let layouts = [
        "ce-two-lines",
        "ce-list",
        "ce-mixed-case",
        "ce-identity",
        "ce-br-zstd",
        "ce-raw-deflate",
        "te-gzip-chunked",
        "te-two-lines",
        "te-close-delimited",
        "ce-and-te",
    ];
    for layout in layouts {
        for proto in ["--http1.1", "--http2"] {
            let (head, body) = curl(&rig, &[proto], &format!("/coded?l={layout}"));
            clean(head.as_bytes(), layout);
            clean(&body, layout);
            assert!(head.contains(" 200"), "{layout}: {head}");
            assert!(
                !head.to_ascii_lowercase().contains("content-encoding"),
                "{layout}: {head}"
            );
            assert_eq!(
                String::from_utf8_lossy(&body).matches(&ph).count(),
                50,
                "{layout} {proto}: {head}"
            );
            // A body with no secret arrives exactly as the upstream meant it.
            let (_, plain) = curl(&rig, &[proto], &format!("/coded?l=plain-{layout}"));
            assert!(plain == plain_text(), "{layout} {proto}: a plain body changed");
        }
    }
    // A body compressed by its media type arrives compressed in it, the secret masked inside.
    for (layout, decode) in [
        ("media-gzip", gunzip as fn(&[u8]) -> Vec<u8>),
        ("media-x-gzip-under-ce", gunzip),
        ("media-zstd", |b: &[u8]| zstd::decode_all(b).unwrap()),
    ] {
        let (head, body) = curl(&rig, &[], &format!("/coded?l={layout}"));
        let inside = decode(&body);
        clean(&inside, layout);
        assert_eq!(
            String::from_utf8_lossy(&inside).matches(&ph).count(),
            50,
            "{layout}: {head}"
        );
        assert!(!head.to_ascii_lowercase().contains("content-encoding"), "{head}");
        let (_, plain) = curl(&rig, &[], &format!("/coded?l=plain-{layout}"));
        assert_eq!(decode(&plain), plain_text(), "{layout}");
    }
    // What cordon cannot undo is refused, never passed.
    for layout in ["unknown", "te-after-chunked", "too-deep"] {
        let (head, body) = curl(&rig, &[], &format!("/coded?l={layout}"));
        clean(head.as_bytes(), layout);
        clean(&body, layout);
        assert!(
            head.starts_with("HTTP/2 502") || head.starts_with("HTTP/1.1 502"),
            "{layout}: {head}"
        );
        assert!(
            String::from_utf8_lossy(&body).contains("upstream_encoding") || head.contains("upstream_encoding"),
            "{layout}: {head}"
        );
    }
    // HEAD: the head masked, no body to decode, no error.
    let (head, body) = curl(&rig, &["-I"], "/coded?l=ce-two-lines");
    clean(head.as_bytes(), "HEAD");
    assert!(head.contains(" 200") && head.contains(&ph) && body.is_empty(), "{head}");
}

#[tokio::test(flavor = "multi_thread")]
async fn header_names_holding_the_secret_are_dropped_from_an_h2_upstream() {
    let rig = Rig::start().await;
    for proto in ["--http1.1", "--http2"] {
        let (head, body) = curl(&rig, &[proto], "/names");
        clean(head.as_bytes(), "names from h2");
        assert!(head.to_ascii_lowercase().contains("x-plain: kept"), "{head}");
        assert_eq!(body, b"ok\n");
    }
    let seen = rig.leaks.seen.lock().unwrap().len();
    assert_eq!(seen, 2, "both requests reached the h2 upstream");
}
