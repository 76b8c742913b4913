#![expect(clippy::unwrap_used, reason = "tests")]

use http::HeaderValue;

use super::*;
use crate::mcp::held::Held;

fn lists() -> Lists {
    lists_held(Arc::default(), "a")
}

/// Lists whose answers hold their bytes in `held`, for the run-time sandbox `id` (its first incarnation).
fn lists_held(held: Arc<Held>, id: &str) -> Lists {
    let v = |l: &[&str]| l.iter().map(|s| s.to_string()).collect();
    Lists {
        rules: Arc::new(McpRules::new(v(&["read_file"]), v(&[]), v(&[]), Vec::new()).unwrap()),
        pinned: Arc::new(Mutex::new(Pinned::default())),
        whose: "test".into(),
        held,
        sandbox: crate::names::Incarnation::created(&id.into(), "1"),
        sessions: None,
    }
}

/// The answer as the sandbox reads it, or why it was not passed on (an event stream's error as it streams).
async fn read(headers: &HeaderMap, body: ProxyBody, lists: Lists) -> Result<String, String> {
    let body = answer(headers, body, lists).await.map_err(|e| e.0)?;
    text(body).await.map_err(|e| e.to_string())
}

fn chunked(chunks: &[&str]) -> ProxyBody {
    let frames: Vec<Result<Frame<Bytes>, BoxError>> = chunks
        .iter()
        .map(|c| Ok(Frame::data(Bytes::copy_from_slice(c.as_bytes()))))
        .collect();
    StreamBody::new(futures_util::stream::iter(frames)).boxed_unsync()
}

fn headers(ct: &str) -> HeaderMap {
    let mut h = HeaderMap::new();
    h.insert(CONTENT_TYPE, HeaderValue::from_str(ct).unwrap());
    h
}

async fn text(body: ProxyBody) -> Result<String, BoxError> {
    Ok(String::from_utf8(body.collect().await?.to_bytes().to_vec()).unwrap())
}

const LIST: &str = r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"read_file"},{"name":"delete_repo"}]}}"#;

#[tokio::test]
async fn a_json_answer_is_filtered_and_other_json_passes_byte_for_byte() {
    let out = read(
        &headers("application/json; charset=utf-8"),
        chunked(&[&LIST[..20], &LIST[20..]]),
        lists(),
    )
    .await
    .unwrap();
    assert!(out.contains("read_file") && !out.contains("delete_repo"), "{out}");
    let other = r#"{"jsonrpc":"2.0", "id":2, "result":{"content":[]}}"#;
    assert_eq!(
        read(&headers("application/json"), chunked(&[other]), lists())
            .await
            .unwrap(),
        other
    );
    // Declared JSON, and not: not passed on.
    assert!(
        read(&headers("Application/JSON"), chunked(&["{not json"]), lists())
            .await
            .is_err()
    );
    // An empty answer (a 202 to a notification) is empty still, whatever it says it is.
    for ct in ["application/json", "text/plain", "text/html"] {
        assert_eq!(read(&headers(ct), chunked(&[]), lists()).await.unwrap(), "", "{ct}");
        assert_eq!(
            read(&headers(ct), chunked(&[" \r\n"]), lists()).await.unwrap(),
            " \r\n",
            "{ct}"
        );
    }
}

/// An event stream carrying a tool list cordon must filter.
fn listing_events() -> String {
    format!("event: message\ndata: {LIST}\n\n")
}

#[tokio::test]
async fn an_answer_that_is_not_beyond_doubt_json_or_an_event_stream_is_not_passed_on() {
    // SECURITY: a client reads an event stream under many of these (the Python SDK: a Content-Type that starts
    // with text/event-stream; the TypeScript SDK: one that contains it): cordon reads them as JSON, which an event
    // stream is not, and passes nothing on.
    for ct in [
        "text/event-stream, application/json",
        "application/json, text/event-stream",
        "text/plain; profile=text/event-stream",
        "text/event-stream; profile=x",
        "text/event-stream; charset=latin1",
        "text/event-stream;;",
        "text/event-stream x",
        "text/event-streamx",
        "application/x-ndjson",
        "application/json",
        "application/jsonx",
        "text/plain",
        "text/html",
        "",
        "*/*",
    ] {
        let got = read(&headers(ct), chunked(&[&listing_events()]), lists()).await;
        assert!(got.is_err(), "{ct:?}: {got:?}");
    }
    // Two Content-Types: neither is believed.
    let mut two = headers("text/event-stream");
    two.append(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    assert!(read(&two, chunked(&[&listing_events()]), lists()).await.is_err());
    // No Content-Type at all: the same.
    assert!(
        read(&HeaderMap::new(), chunked(&[&listing_events()]), lists())
            .await
            .is_err()
    );
    // The same body under an event stream's own type, in any case and with a UTF-8 charset, is read and filtered.
    for ct in [
        "text/event-stream",
        "TEXT/Event-Stream",
        "text/event-stream; charset=utf-8",
        "text/event-stream;charset=\"UTF-8\"",
    ] {
        let out = read(&headers(ct), chunked(&[&listing_events()]), lists())
            .await
            .unwrap();
        assert!(out.contains("read_file") && !out.contains("delete_repo"), "{ct}: {out}");
    }
    // A JSON tool list under any type at all is read as JSON and filtered.
    for ct in [
        "text/plain",
        "text/event-stream, application/json",
        "",
        "application/octet-stream",
    ] {
        let out = read(&headers(ct), chunked(&[LIST]), lists()).await.unwrap();
        assert!(out.contains("read_file") && !out.contains("delete_repo"), "{ct}: {out}");
    }
    // A member written twice: a parser that keeps the first would read a list cordon never filtered.
    let twice = r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"delete_repo"}]},"result":{"tools":[]}}"#;
    assert!(
        read(&headers("application/json"), chunked(&[twice]), lists())
            .await
            .is_err()
    );
    let escaped = r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"delete_repo"}]},"r\u0065sult":{"tools":[]}}"#;
    assert!(
        read(&headers("application/json"), chunked(&[escaped]), lists())
            .await
            .is_err()
    );
    // A byte order mark, or UTF-16: not JSON as cordon reads it, so not passed on.
    assert!(
        read(
            &headers("application/json"),
            chunked(&[&format!("\u{feff}{LIST}")]),
            lists()
        )
        .await
        .is_err()
    );
}

#[tokio::test]
async fn events_are_filtered_one_by_one_however_they_are_split() {
    let stream = format!(
        "event: message\r\nid: 7\r\ndata: {LIST}\r\n\r\n: keep-alive\n\ndata: {{\"jsonrpc\":\"2.0\",\ndata: \"method\":\"ping\"}}\n\nevent: endpoint\ndata: /messages?s=1\n\nevent: Message\ndata: {LIST}\n\n"
    );
    for split in [1, 7, 50, stream.len()] {
        let chunks: Vec<String> = stream
            .as_bytes()
            .chunks(split)
            .map(|c| String::from_utf8_lossy(c).into_owned())
            .collect();
        let refs: Vec<&str> = chunks.iter().map(String::as_str).collect();
        let out = read(&headers("text/event-stream"), chunked(&refs), lists())
            .await
            .unwrap();
        assert!(
            out.contains("read_file") && !out.contains("delete_repo"),
            "{split}: {out}"
        );
        assert!(out.starts_with("event: message\nid: 7\ndata: "), "{out}");
        assert!(out.contains("event: endpoint\ndata: /messages?s=1\n\n"), "{out}");
        // Under another name too (a client might read it): filtered.
        assert!(out.contains("event: Message\ndata: {"), "{out}");
    }
    // An event that is not JSON where a message must be ends the stream.
    assert!(
        read(&headers("text/event-stream"), chunked(&["data: nope\n\n"]), lists())
            .await
            .is_err()
    );
    // A line the parser does not know ends it too, rather than be read one way here and another there.
    assert!(
        read(&headers("text/event-stream"), chunked(&["data\n\n"]), lists())
            .await
            .is_err()
    );
}

#[tokio::test]
async fn an_event_that_never_ends_is_cut() {
    let big = "x".repeat(1024 * 1024);
    let mut chunks = vec!["data: "];
    for _ in 0..9 {
        chunks.push(&big);
    }
    assert!(
        read(&headers("text/event-stream"), chunked(&chunks), lists())
            .await
            .is_err()
    );
    // A JSON answer over its bound too.
    assert!(
        read(&headers("application/json"), chunked(&chunks[1..]), lists())
            .await
            .is_err()
    );
}

#[tokio::test]
async fn unfinished_answers_hold_no_more_than_their_sandboxs_share_and_give_it_back() {
    let held: Arc<Held> = Arc::default();
    let mb = "x".repeat(1024 * 1024);
    // Three answers of one sandbox, 7 MiB each and unfinished: the third goes past the sandbox's 16 MiB.
    let mut bodies = Vec::new();
    for _ in 0..3 {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<Result<Frame<Bytes>, BoxError>>();
        tx.send(Ok(Frame::data(Bytes::from_static(b"data: ")))).unwrap();
        for _ in 0..7 {
            tx.send(Ok(Frame::data(Bytes::from(mb.clone())))).unwrap();
        }
        let frames = futures_util::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|f| (f, rx)) });
        let body = answer(
            &headers("text/event-stream"),
            StreamBody::new(frames).boxed_unsync(),
            lists_held(held.clone(), "a"),
        )
        .await
        .unwrap();
        bodies.push((tx, body));
    }
    let mut ends = Vec::new();
    for (_, body) in &mut bodies {
        ends.push(tokio::time::timeout(std::time::Duration::from_millis(500), body.frame()).await);
    }
    // The first two wait for their events to end; the third was cut.
    assert!(ends[0].is_err() && ends[1].is_err(), "{ends:?}");
    assert!(matches!(&ends[2], Ok(Some(Err(_)))), "{ends:?}");
    assert!(held.all() <= crate::mcp::held::MOST_HELD_PER_SANDBOX);
    // Another sandbox still has its own share.
    let other = read(
        &headers("text/event-stream"),
        chunked(&[&listing_events()]),
        lists_held(held.clone(), "b"),
    )
    .await;
    assert!(other.is_ok(), "{other:?}");
    drop(bodies);
    assert_eq!(held.all(), 0);
}
