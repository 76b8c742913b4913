#![expect(clippy::unwrap_used, reason = "tests")]

use http::HeaderValue;

use super::*;

fn lists() -> Lists {
    let v = |l: &[&str]| l.iter().map(|s| s.to_string()).collect();
    Lists {
        rules: Arc::new(McpRules::new(v(&["read_file"]), v(&[]), v(&[]), Vec::new()).unwrap()),
        pinned: Arc::new(Mutex::new(Pinned::default())),
        whose: "test".into(),
    }
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
    let out = text(answer(
        &headers("application/json; charset=utf-8"),
        chunked(&[&LIST[..20], &LIST[20..]]),
        lists(),
    ))
    .await
    .unwrap();
    assert!(out.contains("read_file") && !out.contains("delete_repo"), "{out}");
    let other = r#"{"jsonrpc":"2.0", "id":2, "result":{"content":[]}}"#;
    assert_eq!(
        text(answer(&headers("application/json"), chunked(&[other]), lists()))
            .await
            .unwrap(),
        other
    );
    // Declared JSON, and not: the answer ends with an error rather than pass unread.
    assert!(
        text(answer(&headers("Application/JSON"), chunked(&["{not json"]), lists()))
            .await
            .is_err()
    );
    // An empty answer declared JSON (a 202 to a notification) is empty still.
    assert_eq!(
        text(answer(&headers("application/json"), chunked(&[]), lists()))
            .await
            .unwrap(),
        ""
    );
    // Neither JSON nor an event stream: untouched.
    assert_eq!(
        text(answer(&headers("text/plain"), chunked(&["hello"]), lists()))
            .await
            .unwrap(),
        "hello"
    );
}

#[tokio::test]
async fn events_are_filtered_one_by_one_however_they_are_split() {
    let stream = format!(
        "event: message\r\nid: 7\r\ndata: {LIST}\r\n\r\n: keep-alive\n\ndata: {{\"jsonrpc\":\"2.0\",\ndata: \"method\":\"ping\"}}\n\nevent: endpoint\ndata: /messages?s=1\n\n"
    );
    for split in [1, 7, 50, stream.len()] {
        let chunks: Vec<String> = stream
            .as_bytes()
            .chunks(split)
            .map(|c| String::from_utf8_lossy(c).into_owned())
            .collect();
        let refs: Vec<&str> = chunks.iter().map(String::as_str).collect();
        let out = text(answer(&headers("text/event-stream"), chunked(&refs), lists()))
            .await
            .unwrap();
        assert!(
            out.contains("read_file") && !out.contains("delete_repo"),
            "{split}: {out}"
        );
        assert!(out.starts_with("event: message\nid: 7\ndata: "), "{out}");
        assert!(out.contains("event: endpoint\ndata: /messages?s=1\n\n"), "{out}");
    }
    // An event that is not JSON where a message must be ends the stream.
    assert!(
        text(answer(
            &headers("text/event-stream"),
            chunked(&["data: nope\n\n"]),
            lists()
        ))
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
        text(answer(&headers("text/event-stream"), chunked(&chunks), lists()))
            .await
            .is_err()
    );
}
