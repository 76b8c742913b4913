#![expect(clippy::unwrap_used, reason = "tests")]

use std::convert::Infallible;
use std::sync::{Arc, Mutex};

use super::inspect::decimal;
use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::service::service_fn;
use hyper::{Method, Request, Response};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

use super::*;

const MAX_HEAD: usize = 4096;
/// Size of the `/big` response: more than loopback socket buffers hold.
const BIG: usize = 16 << 20;

fn render(v: &FramingViolation) -> Vec<u8> {
    let status = match v {
        FramingViolation::HeadTooLarge => "431 Request Header Fields Too Large",
        FramingViolation::UriTooLong => "414 URI Too Long",
        _ => "400 Bad Request",
    };
    let body = format!("refused: {}\n", v.code());
    format!(
        "HTTP/1.1 {status}\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// A request as the service saw it.
#[derive(Debug, Clone)]
struct Seen {
    method: String,
    uri: String,
    headers: Vec<(String, String)>,
    body: Result<Vec<u8>, String>,
    trailers: Vec<(String, String)>,
}

type Calls = Arc<Mutex<Vec<Seen>>>;

fn pairs(map: &hyper::HeaderMap) -> Vec<(String, String)> {
    map.iter()
        .map(|(k, v)| (k.to_string(), String::from_utf8_lossy(v.as_bytes()).into_owned()))
        .collect()
}

/// Echoes everything on an upgraded connection.
fn echo_upgrade(req: &mut Request<Incoming>) {
    let on = hyper::upgrade::on(req);
    tokio::spawn(async move {
        let io = TokioIo::new(on.await.unwrap());
        let (mut r, mut w) = tokio::io::split(io);
        let _ = tokio::io::copy(&mut r, &mut w).await;
        let _ = w.shutdown().await;
    });
}

async fn handle(
    mut req: Request<Incoming>,
    calls: Calls,
    delay: Duration,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let mut seen = Seen {
        method: req.method().to_string(),
        uri: req.uri().to_string(),
        headers: pairs(req.headers()),
        body: Ok(Vec::new()),
        trailers: Vec::new(),
    };
    let response = |status: u16, body: &str| {
        Response::builder()
            .status(status)
            .body(Full::new(Bytes::from(body.to_owned())))
            .unwrap()
    };
    let upgrade = req.headers().get("upgrade").cloned();
    if req.method() == Method::CONNECT {
        let denied = seen.uri.starts_with("denied");
        if !denied {
            echo_upgrade(&mut req);
        }
        calls.lock().unwrap().push(seen);
        return Ok(response(if denied { 403 } else { 200 }, ""));
    }
    if upgrade.as_ref().is_some_and(|u| u == "echo") {
        echo_upgrade(&mut req);
        calls.lock().unwrap().push(seen);
        let mut res = response(101, "");
        res.headers_mut().insert("upgrade", "echo".parse().unwrap());
        res.headers_mut().insert("connection", "upgrade".parse().unwrap());
        return Ok(res);
    }
    match req.into_body().collect().await {
        Ok(collected) => {
            seen.trailers = collected.trailers().map(pairs).unwrap_or_default();
            seen.body = Ok(collected.to_bytes().to_vec());
        }
        Err(e) => seen.body = Err(e.to_string()),
    }
    tokio::time::sleep(delay).await;
    if seen.uri == "/big" {
        calls.lock().unwrap().push(seen);
        return Ok(response(200, &"b".repeat(BIG)));
    }
    let len = seen.body.as_ref().map_or(0, Vec::len);
    let text = format!("{} {} {len}", seen.method, seen.uri);
    let status = if seen.body.is_ok() { 200 } else { 500 };
    calls.lock().unwrap().push(seen);
    Ok(response(status, &text))
}

/// Serves one connection with hyper through a guard.
fn serve<IO>(io: IO, delay: Duration) -> (Calls, FramingReport, JoinHandle<()>)
where
    IO: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let calls = Calls::default();
    let (guard, report) = FramingGuard::new(io, MAX_HEAD, render);
    let log = calls.clone();
    let task = tokio::spawn(async move {
        let svc = service_fn(move |req| handle(req, log.clone(), delay));
        // Configured like cordon's connection handler.
        let _ = hyper::server::conn::http1::Builder::new()
            .timer(TokioTimer::new())
            .header_read_timeout(Duration::from_secs(5))
            .serve_connection(TokioIo::new(guard), svc)
            .with_upgrades()
            .await;
    });
    (calls, report, task)
}

async fn read_all<R: AsyncRead + Unpin>(r: &mut R) -> Vec<u8> {
    let mut out = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), r.read_to_end(&mut out))
        .await
        .unwrap()
        .unwrap();
    out
}

/// Splits content-length framed responses; returns (status, body) pairs and the rest.
fn responses(mut bytes: &[u8]) -> (Vec<(u16, Vec<u8>)>, Vec<u8>) {
    let mut out = Vec::new();
    loop {
        let mut headers = [httparse::EMPTY_HEADER; 32];
        let mut res = httparse::Response::new(&mut headers);
        let Ok(httparse::Status::Complete(len)) = res.parse(bytes) else {
            return (out, bytes.to_vec());
        };
        let code = res.code.unwrap();
        let cl = res
            .headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case("content-length"))
            .map_or(0, |h| std::str::from_utf8(h.value).unwrap().parse().unwrap());
        out.push((code, bytes[len..len + cl].to_vec()));
        bytes = &bytes[len + cl..];
    }
}

/// Sends `input` on a fresh connection, reads until EOF.
async fn exchange(input: &[u8]) -> (Vec<u8>, Calls, FramingReport) {
    let (mut client, server) = tokio::io::duplex(1 << 16);
    let (calls, report, _task) = serve(server, Duration::ZERO);
    client.write_all(input).await.unwrap();
    (read_all(&mut client).await, calls, report)
}

/// Asserts that `input` is refused with `code` without calling the service.
async fn assert_refused(input: &[u8], code: &str) {
    let (out, calls, report) = exchange(input).await;
    let v = report.violation();
    assert_eq!(v.as_ref().map(FramingViolation::code), Some(code), "{input:?}");
    assert_eq!(out, render(&v.unwrap()), "{input:?}");
    assert!(calls.lock().unwrap().is_empty(), "{input:?}");
}

fn post_with(headers: &str, body: &str) -> Vec<u8> {
    format!("POST /p HTTP/1.1\r\nHost: h\r\n{headers}\r\n{body}").into_bytes()
}

#[tokio::test]
async fn cl_and_te_refused_in_both_orders() {
    let body = "5\r\nhello\r\n0\r\n\r\n";
    for headers in [
        "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n",
        "Transfer-Encoding: chunked\r\nContent-Length: 5\r\n",
        "transfer-encoding: chunked\r\ncontent-length: 0\r\n",
    ] {
        assert_refused(&post_with(headers, body), "cl_and_te").await;
    }
}

#[tokio::test]
async fn duplicate_content_length_refused_even_if_identical() {
    let input = post_with("Content-Length: 5\r\nContent-Length: 5\r\n", "hello");
    assert_refused(&input, "duplicate_content_length").await;
    let input = post_with("Content-Length: 5\r\ncontent-length: 6\r\n", "hello!");
    assert_refused(&input, "duplicate_content_length").await;
}

#[tokio::test]
async fn invalid_content_length_refused() {
    for value in ["5, 5", "+5", "-5", "", " ", "0x5", "5a", "5 5", "99999999999999999999"] {
        let input = post_with(&format!("Content-Length: {value}\r\n"), "hello");
        assert_refused(&input, "invalid_content_length").await;
    }
}

#[tokio::test]
async fn obfuscated_transfer_encoding_refused() {
    for headers in [
        "Transfer-Encoding: xchunked\r\n",
        "Transfer-Encoding: chunked, identity\r\n",
        "Transfer-Encoding: identity, chunked\r\n",
        "Transfer-Encoding: gzip, chunked\r\n",
        "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n",
        "Transfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n",
        "Transfer-Encoding: \"chunked\"\r\n",
    ] {
        let input = post_with(headers, "5\r\nhello\r\n0\r\n\r\n");
        assert_refused(&input, "te_not_chunked").await;
    }
    for headers in [
        "Transfer-Encoding:\r\n chunked\r\n",
        "Transfer-Encoding:\r\n\tchunked\r\n",
        "Transfer-Encoding: gzip\r\n chunked\r\n",
        "Transfer-Encoding : chunked\r\n",
        "Transfer-Encoding\t: chunked\r\n",
        "Transfer-Encoding: chunked\r\n \r\n",
    ] {
        let input = post_with(headers, "5\r\nhello\r\n0\r\n\r\n");
        assert_refused(&input, "malformed_head").await;
    }
}

#[tokio::test]
async fn transfer_encoding_with_surrounding_whitespace_is_accepted() {
    let headers = "Transfer-Encoding: \t Chunked \t\r\nConnection: close\r\n";
    let input = post_with(headers, "5\r\nhello\r\n0\r\n\r\n");
    let (out, calls, report) = exchange(&input).await;
    assert_eq!(report.violation(), None);
    assert_eq!(responses(&out).0, [(200, b"POST /p 5".to_vec())]);
    assert_eq!(calls.lock().unwrap()[0].body, Ok(b"hello".to_vec()));
}

#[tokio::test]
async fn transfer_encoding_in_http10_refused() {
    let input = b"POST /p HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n";
    assert_refused(input, "te_in_http10").await;
}

#[tokio::test]
async fn malformed_heads_refused() {
    for input in [
        &b"GET / HTTP/1.1\r\nHost: h\r\nX-A: a\r\n b\r\n\r\n"[..],
        b"GET / HTTP/1.1\r\nHost: h\r\nX-A: a\0b\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: h\r\nX-A: a\rb\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost : h\r\n\r\n",
        b"GET / HTTP/1.1\r\n Host: h\r\n\r\n",
        b"GET /  HTTP/1.1\r\nHost: h\r\n\r\n",
        b"GET / HTTP/1.1 \r\nHost: h\r\n\r\n",
        b"GET / HTTP/2.0\r\nHost: h\r\n\r\n",
        b"G\0T / HTTP/1.1\r\nHost: h\r\n\r\n",
    ] {
        assert_refused(input, "malformed_head").await;
    }
}

#[tokio::test]
async fn oversized_head_gets_431() {
    let big = format!("GET / HTTP/1.1\r\nX-Big: {}\r\n\r\n", "a".repeat(MAX_HEAD));
    assert_refused(big.as_bytes(), "head_too_large").await;
    // A head that never ends is refused as soon as it passes the limit.
    let endless = format!("GET / HTTP/1.1\r\nX-Big: {}", "a".repeat(2 * MAX_HEAD));
    assert_refused(endless.as_bytes(), "head_too_large").await;
    let mut many = String::from("GET / HTTP/1.1\r\n");
    for i in 0..=MAX_HEADERS {
        many.push_str(&format!("x{i}: 1\r\n"));
    }
    many.push_str("\r\n");
    assert!(many.len() < MAX_HEAD);
    assert_refused(many.as_bytes(), "head_too_large").await;
}

/// Fixed body, chunked body with extensions and trailers, then a GET that
/// closes the connection (so that the client need not half-close).
const PIPELINE: &[u8] = b"POST /fixed HTTP/1.1\r\nHost: h\r\nContent-Length: 11\r\n\r\nhello world\
POST /chunked HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n\
6;ext=1\r\nchunk1\r\nA\r\n0123456789\r\n0\r\nX-Sum: abc\r\nX-Other: d\r\n\r\n\
GET /last HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n";

fn assert_pipeline_served(out: &[u8], calls: &Calls, report: &FramingReport) {
    assert_eq!(report.violation(), None);
    let (got, rest) = responses(out);
    let expected = [
        (200, b"POST /fixed 11".to_vec()),
        (200, b"POST /chunked 16".to_vec()),
        (200, b"GET /last 0".to_vec()),
    ];
    assert_eq!(got, expected);
    assert!(rest.is_empty());
    let calls = calls.lock().unwrap();
    assert_eq!(calls.len(), 3);
    assert_eq!(calls[0].body, Ok(b"hello world".to_vec()));
    assert_eq!(calls[1].body, Ok(b"chunk10123456789".to_vec()));
    let trailers = [("x-sum".into(), "abc".into()), ("x-other".into(), "d".into())];
    assert_eq!(calls[1].trailers, trailers);
    assert_eq!(calls[2].uri, "/last");
    assert_eq!(calls[2].body, Ok(Vec::new()));
}

/// Sends `PIPELINE` in writes of `step` bytes while reading the responses.
async fn pipeline_in_steps(step: usize) {
    let (client, server) = tokio::io::duplex(1 << 16);
    let (calls, report, _task) = serve(server, Duration::ZERO);
    let (mut rd, mut wr) = tokio::io::split(client);
    let writer = tokio::spawn(async move {
        for part in PIPELINE.chunks(step) {
            wr.write_all(part).await.unwrap();
            tokio::task::yield_now().await;
        }
        wr
    });
    let out = read_all(&mut rd).await;
    drop(writer.await.unwrap());
    assert_pipeline_served(&out, &calls, &report);
}

#[tokio::test]
async fn pipelined_requests_pass_in_one_write() {
    let (out, calls, report) = exchange(PIPELINE).await;
    assert_pipeline_served(&out, &calls, &report);
}

#[tokio::test]
async fn pipelined_requests_pass_one_byte_at_a_time() {
    pipeline_in_steps(1).await;
}

#[tokio::test]
async fn pipelined_requests_pass_at_awkward_splits() {
    for step in [2, 3, 5, 7, 11, 13, 17, 29, 64] {
        pipeline_in_steps(step).await;
    }
}

#[tokio::test]
async fn keep_alive_requests_in_separate_writes() {
    let (mut client, server) = tokio::io::duplex(1 << 16);
    let (calls, report, _task) = serve(server, Duration::ZERO);
    let text = String::from_utf8_lossy(PIPELINE).into_owned();
    let mut starts: Vec<usize> = ["POST /fixed", "POST /chunked", "GET /last"]
        .iter()
        .map(|p| text.find(p).unwrap())
        .collect();
    starts.push(PIPELINE.len());
    let mut out = Vec::new();
    for (i, pair) in starts.windows(2).enumerate() {
        client.write_all(&PIPELINE[pair[0]..pair[1]]).await.unwrap();
        // Wait for this request's response before sending the next one.
        while responses(&out).0.len() <= i {
            let mut buf = [0; 1024];
            let n = client.read(&mut buf).await.unwrap();
            assert!(n > 0);
            out.extend_from_slice(&buf[..n]);
        }
    }
    out.extend(read_all(&mut client).await);
    assert_pipeline_served(&out, &calls, &report);
}

#[tokio::test]
async fn leading_empty_lines_before_a_request_are_ignored_like_hyper() {
    let (out, calls, report) = exchange(b"\r\n\r\nGET /x HTTP/1.1\r\nConnection: close\r\n\r\n").await;
    assert_eq!(report.violation(), None);
    assert_eq!(responses(&out).0, [(200, b"GET /x 0".to_vec())]);
    assert_eq!(calls.lock().unwrap().len(), 1);
}

const GOOD: &[u8] = b"POST /good HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nabc";
const BAD: &[u8] = b"POST /bad HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n";

fn assert_good_then_refused(out: &[u8], calls: &Calls, report: &FramingReport) {
    let v = report.violation().unwrap();
    assert_eq!(v, FramingViolation::ContentLengthWithTransferEncoding);
    let (got, rest) = responses(out);
    assert_eq!(got[0], (200, b"POST /good 3".to_vec()));
    assert!(out.ends_with(&render(&v)));
    assert_eq!(got.len(), 2);
    assert!(rest.is_empty());
    let calls = calls.lock().unwrap();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].uri, "/good");
}

#[tokio::test]
async fn bad_request_pipelined_after_good_one_in_one_write() {
    let (out, calls, report) = exchange(&[GOOD, BAD].concat()).await;
    assert_good_then_refused(&out, &calls, &report);
}

#[tokio::test]
async fn bad_request_pipelined_after_slow_good_one() {
    // The service answers slowly, so hyper polls the socket mid-message; the
    // refusal must not abort the connection before the first response.
    for late in [false, true] {
        let (mut client, server) = tokio::io::duplex(1 << 16);
        let (calls, report, _task) = serve(server, Duration::from_millis(100));
        client.write_all(GOOD).await.unwrap();
        if late {
            tokio::time::sleep(Duration::from_millis(30)).await;
        }
        client.write_all(BAD).await.unwrap();
        let out = read_all(&mut client).await;
        assert_good_then_refused(&out, &calls, &report);
    }
}

#[tokio::test]
async fn bad_request_after_good_chunked_request_with_trailers() {
    let good = b"POST /good HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\nX-T: 1\r\n\r\n";
    let (out, calls, report) = exchange(&[&good[..], BAD].concat()).await;
    assert_good_then_refused(&out, &calls, &report);
    assert_eq!(calls.lock().unwrap()[0].trailers, [("x-t".into(), "1".into())]);
}

#[tokio::test]
async fn malformed_chunks_refused() {
    for body in [
        &b"zz\r\nhello\r\n0\r\n\r\n"[..],
        b" 5\r\nhello\r\n0\r\n\r\n",
        b"\r\nhello\r\n0\r\n\r\n",
        b";x\r\nhello\r\n0\r\n\r\n",
        b"5\nhello\r\n0\r\n\r\n",
        b"5;a\nb\r\nhello\r\n0\r\n\r\n",
        b"5 6\r\nhello\r\n0\r\n\r\n",
        b"5\r\nhelloXX\r\n0\r\n\r\n",
        b"5\r\nhello\n0\r\n\r\n",
        b"5\r\nhello\r\n0\r\nX-A: a\n\r\n",
        b"5\r\nhello\r\n0\r\nX-A: a\rb\r\n\r\n",
        b"5\r\nhello\r\n0\r\nX-A: a\r\n b\r\n\r\n",
        b"5\r\nhello\r\n0\r\nX-A a\r\n\r\n",
        b"5\r\nhello\r\n0\r\n\n",
        b"10000000000000000\r\n",
    ] {
        let input = [b"POST /c HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", body].concat();
        let (out, calls, report) = exchange(&input).await;
        assert_eq!(report.violation(), Some(FramingViolation::MalformedChunk), "{body:?}");
        assert!(out.ends_with(&render(&FramingViolation::MalformedChunk)), "{body:?}");
        // The head was valid, so the service ran, but saw a failed body.
        let calls = calls.lock().unwrap();
        assert!(calls.iter().all(|c| c.body.is_err()), "{body:?}");
    }
    let long_line = format!("5;{}\r\nhello\r\n0\r\n\r\n", "e".repeat(MAX_CHUNK_LINE));
    let input = [
        b"POST /c HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n",
        long_line.as_bytes(),
    ];
    let (_, _, report) = exchange(&input.concat()).await;
    assert_eq!(report.violation(), Some(FramingViolation::MalformedChunk));
    // Trailer sections are bounded by the head limit, even when sent in one piece.
    let trailers = format!("0\r\nX-Big: {}\r\n\r\n", "t".repeat(MAX_HEAD));
    let input = [
        b"POST /c HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n",
        trailers.as_bytes(),
    ];
    let (_, _, report) = exchange(&input.concat()).await;
    assert_eq!(report.violation(), Some(FramingViolation::MalformedChunk));
}

#[tokio::test]
async fn connect_tunnel_passes_bytes_untouched() {
    // Tunnel bytes that would be refused as a head, sent with the CONNECT and after it.
    let tunnel_a = [BAD, b"\0\x16\x03\x01 binary \r\n\r\n"].concat();
    let tunnel_b = b"GET / HTTP/1.1\r\nHost: a\r\n b\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\n";
    let (mut client, server) = tokio::io::duplex(1 << 16);
    let (calls, report, _task) = serve(server, Duration::ZERO);
    let connect = b"CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n";
    client.write_all(&[&connect[..], &tunnel_a].concat()).await.unwrap();
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        head.push(client.read_u8().await.unwrap());
    }
    assert!(head.starts_with(b"HTTP/1.1 200 OK\r\n"));
    let mut echoed = vec![0; tunnel_a.len()];
    client.read_exact(&mut echoed).await.unwrap();
    assert_eq!(echoed, tunnel_a);
    client.write_all(tunnel_b).await.unwrap();
    client.shutdown().await.unwrap();
    assert_eq!(read_all(&mut client).await, tunnel_b);
    assert_eq!(report.violation(), None);
    let calls = calls.lock().unwrap();
    assert_eq!(calls.len(), 1);
    assert!(calls[0].headers.contains(&("connection".into(), "close".into())));
}

#[tokio::test]
async fn refused_connect_does_not_let_a_smuggled_request_through() {
    let input = [
        &b"CONNECT denied.example:443 HTTP/1.1\r\nHost: denied.example:443\r\n\r\n"[..],
        BAD,
        b"GET /smuggled HTTP/1.1\r\nHost: h\r\n\r\n",
    ]
    .concat();
    let (out, calls, report) = exchange(&input).await;
    assert_eq!(responses(&out), (vec![(403, Vec::new())], Vec::new()));
    assert_eq!(report.violation(), None);
    let calls = calls.lock().unwrap();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].method, "CONNECT");
}

#[tokio::test]
async fn connect_with_keep_alive_still_gets_connection_close() {
    let input = [
        &b"CONNECT denied.example:443 HTTP/1.0\r\nConnection: keep-alive\n\n"[..],
        b"GET /smuggled HTTP/1.1\r\nHost: h\r\n\r\n",
    ]
    .concat();
    let (out, calls, _) = exchange(&input).await;
    assert_eq!(responses(&out).0, [(403, Vec::new())]);
    assert_eq!(calls.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn upgrade_passes_through_after_101_and_refused_upgrade_closes() {
    let (mut client, server) = tokio::io::duplex(1 << 16);
    let (_calls, report, _task) = serve(server, Duration::ZERO);
    let req = b"GET /ws HTTP/1.1\r\nHost: h\r\nConnection: upgrade\r\nUpgrade: echo\r\n\r\n";
    client.write_all(req).await.unwrap();
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        head.push(client.read_u8().await.unwrap());
    }
    assert!(head.starts_with(b"HTTP/1.1 101"));
    client.write_all(BAD).await.unwrap();
    client.shutdown().await.unwrap();
    assert_eq!(read_all(&mut client).await, BAD);
    assert_eq!(report.violation(), None);

    // After an Upgrade that was not switched, what follows is checked like any request: a well-framed
    // one is served (and policed by cordon on its own), ambiguous framing is refused.
    let input = [
        &b"GET /no HTTP/1.1\r\nHost: h\r\nUpgrade: nope\r\n\r\n"[..],
        b"GET /next HTTP/1.1\r\nHost: h\r\n\r\n",
    ]
    .concat();
    let (out, calls, _) = exchange(&input).await;
    assert_eq!(
        responses(&out).0,
        [(200, b"GET /no 0".to_vec()), (200, b"GET /next 0".to_vec())]
    );
    assert_eq!(calls.lock().unwrap().len(), 2);
    let input = [&b"GET /no HTTP/1.1\r\nHost: h\r\nUpgrade: nope\r\n\r\n"[..], BAD].concat();
    let (_out, calls, report) = exchange(&input).await;
    assert_eq!(calls.lock().unwrap().len(), 1);
    assert!(
        report.violation().is_some(),
        "bytes after a refused upgrade are still checked"
    );
}

#[tokio::test]
async fn rejection_survives_unread_client_data_over_tcp() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move {
        let (sock, _) = listener.accept().await.unwrap();
        let (calls, report, task) = serve(sock, Duration::ZERO);
        task.await.unwrap();
        (calls, report)
    });
    let client = TcpStream::connect(addr).await.unwrap();
    let (mut rd, mut wr) = client.into_split();
    let writer = tokio::spawn(async move {
        let head = format!("GET / HTTP/1.1\r\nX-Big: {}", "a".repeat(2 * MAX_HEAD));
        let _ = wr.write_all(head.as_bytes()).await;
        // Keep sending after the refusal; the guard must drain, not reset.
        let _ = wr.write_all(&vec![b'a'; 512 * 1024]).await;
        let _ = wr.shutdown().await;
    });
    let out = read_all(&mut rd).await;
    assert_eq!(out, render(&FramingViolation::HeadTooLarge));
    writer.await.unwrap();
    let (calls, report) = server.await.unwrap();
    assert_eq!(report.violation(), Some(FramingViolation::HeadTooLarge));
    assert!(calls.lock().unwrap().is_empty());
}

#[tokio::test]
async fn rejection_queued_behind_a_slowly_read_response_is_not_reset_away() {
    // The refusal is still in the server's send buffer when hyper is done;
    // closing the socket with unread client bytes would reset the connection
    // and discard it, so the guard must drain before hyper drops the socket.
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move {
        let (sock, _) = listener.accept().await.unwrap();
        let (_calls, report, task) = serve(sock, Duration::ZERO);
        task.await.unwrap();
        report
    });
    let client = TcpStream::connect(addr).await.unwrap();
    let (mut rd, mut wr) = client.into_split();
    let writer = tokio::spawn(async move {
        let _ = wr.write_all(&[&b"GET /big HTTP/1.1\r\n\r\n"[..], BAD].concat()).await;
        let _ = wr.write_all(&vec![b'j'; 256 * 1024]).await;
        let _ = wr.shutdown().await;
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let out = read_all(&mut rd).await;
    writer.await.unwrap();
    let (got, rest) = responses(&out);
    assert_eq!(
        got.iter().map(|r| (r.0, r.1.len())).collect::<Vec<_>>(),
        [(200, BIG), (400, "refused: cl_and_te\n".len())]
    );
    assert!(rest.is_empty());
    let report = server.await.unwrap();
    assert!(out.ends_with(&render(&report.violation().unwrap())));
}

#[tokio::test]
async fn guard_dropped_without_shutdown_still_sends_rejection() {
    let (mut client, server) = tokio::io::duplex(1 << 16);
    let (mut guard, report) = FramingGuard::new(server, MAX_HEAD, render);
    client.write_all(BAD).await.unwrap();
    let mut seen = Vec::new();
    guard.read_to_end(&mut seen).await.unwrap();
    assert_eq!(seen, b"\r\n");
    drop(guard);
    let v = report.violation().unwrap();
    assert_eq!(read_all(&mut client).await, render(&v));
}

#[tokio::test]
async fn large_body_streams_through_a_bounded_buffer() {
    let (mut client, server) = tokio::io::duplex(1 << 16);
    let (mut guard, report) = FramingGuard::new(server, MAX_HEAD, render);
    let body: Vec<u8> = (0..1 << 20).map(|i: u32| i.to_le_bytes()[0] ^ 0x5a).collect();
    let head = format!("PUT /big HTTP/1.1\r\nContent-Length: {}\r\n\r\n", body.len());
    let input = [head.as_bytes(), &body].concat();
    let writer = tokio::spawn(async move {
        client.write_all(&input).await.unwrap();
        client
    });
    let mut seen = vec![0; head.len() + body.len()];
    guard.read_exact(&mut seen).await.unwrap();
    assert_eq!(&seen[head.len()..], body);
    assert_eq!(guard.buffer_len(), MIN_BUF);
    drop(writer.await.unwrap());
    assert_eq!(guard.read(&mut [0; 16]).await.unwrap(), 0);
    assert_eq!(report.violation(), None);
}

#[tokio::test]
async fn hyper_writes_pass_straight_through() {
    let (mut client, server) = tokio::io::duplex(1 << 16);
    let (mut guard, _report) = FramingGuard::new(server, MAX_HEAD, render);
    guard.write_all(b"raw bytes").await.unwrap();
    guard.flush().await.unwrap();
    guard.shutdown().await.unwrap();
    assert_eq!(read_all(&mut client).await, b"raw bytes");
    assert!(!guard.io.is_write_vectored() || guard.is_write_vectored());
}

#[test]
fn report_and_guard_are_shareable() {
    fn shared<T: Clone + Send + Sync + 'static>() {}
    fn connection<T: Send + Unpin>() {}
    shared::<FramingReport>();
    connection::<FramingGuard<TcpStream>>();
}

#[test]
fn codes_are_stable() {
    let codes = [
        (FramingViolation::ContentLengthWithTransferEncoding, "cl_and_te"),
        (FramingViolation::DuplicateContentLength, "duplicate_content_length"),
        (FramingViolation::InvalidContentLength, "invalid_content_length"),
        (FramingViolation::TransferEncodingNotChunked, "te_not_chunked"),
        (FramingViolation::TransferEncodingInHttp10, "te_in_http10"),
        (FramingViolation::MalformedHead(String::new()), "malformed_head"),
        (FramingViolation::MalformedChunk, "malformed_chunk"),
        (FramingViolation::HeadTooLarge, "head_too_large"),
        (FramingViolation::UriTooLong, "uri_too_long"),
    ];
    for (v, code) in codes {
        assert_eq!(v.code(), code);
        assert!(!v.to_string().is_empty());
    }
}

#[test]
fn chunk_size_lines() {
    assert_eq!(chunk_size(b"5\r\n"), Ok(5));
    assert_eq!(chunk_size(b"a;x=\"1\"\r\n"), Ok(10));
    assert_eq!(chunk_size(b"0 \t;x\r\n"), Ok(0));
    assert_eq!(chunk_size(b"FFFFFFFFFFFFFFFF\r\n"), Ok(u64::MAX));
    for bad in [&b"\r\n"[..], b" 5\r\n", b"5\n", b"g\r\n", b"5 5\r\n", b"5\r\r\n"] {
        assert_eq!(chunk_size(bad), Err(FramingViolation::MalformedChunk), "{bad:?}");
    }
}

#[test]
fn content_length_values() {
    assert_eq!(decimal(b"0"), Some(0));
    assert_eq!(decimal(b" 42\t"), Some(42));
    assert_eq!(decimal(b"18446744073709551615"), Some(u64::MAX));
    for bad in [&b""[..], b"18446744073709551616", b"+1", b"1,1", b"1 1", b"\xd9\xa1"] {
        assert_eq!(decimal(bad), None, "{bad:?}");
    }
}

#[test]
fn head_end_hint_finds_every_terminator() {
    assert!(head_end_hint(b"GET / HTTP/1.1\r\n\r\n", 0));
    assert!(head_end_hint(b"GET / HTTP/1.1\n\n", 0));
    assert!(head_end_hint(b"GET / HTTP/1.1\r\n\r\n", 16));
    assert!(head_end_hint(b"GET / HTTP/1.1\n\r\n", 15));
    assert!(!head_end_hint(b"GET / HTTP/1.1\r\nHost: a\r\n", 0));
    assert!(!head_end_hint(b"GET / HTTP/1.1\r\n\r\n", 19));
}

#[tokio::test]
async fn a_tunnel_gives_its_read_buffer_back_once_it_has_handed_out_what_it_held() {
    let (mut client, server) = tokio::io::duplex(1 << 16);
    let (mut guard, report) = FramingGuard::new(server, MAX_HEAD, render);
    // The head and the first tunnel bytes in one write: the guard holds the tunnel bytes after the head.
    client
        .write_all(b"CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n\x16\x03\x01held")
        .await
        .unwrap();
    let mut head = vec![0; 256];
    let n = guard.read(&mut head).await.unwrap();
    assert!(head[..n].starts_with(b"CONNECT example.com:443"));
    let mut held = [0u8; 7];
    guard.read_exact(&mut held).await.unwrap();
    assert_eq!(&held, b"\x16\x03\x01held");
    assert_eq!(guard.buffer_len(), MIN_BUF, "nothing read past what was held yet");
    client.write_all(b"more").await.unwrap();
    let mut more = [0u8; 4];
    guard.read_exact(&mut more).await.unwrap();
    assert_eq!(&more, b"more");
    assert_eq!(guard.buffer_len(), 0, "an idle tunnel keeps no read buffer");
    assert_eq!(report.violation(), None);
}
