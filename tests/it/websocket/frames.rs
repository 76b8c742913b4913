//! WebSocket frames are relayed as they arrive, not as whole messages (issue 34, item 7), and the scan and the
//! masking still see a message whole: through the binary, a placeholder or a secret split over two frames at
//! every offset (raw and base64, text and binary, with a ping between the two frames and without) never
//! reaches the upstream and closes the WebSocket with 1008; the upstream's secret split the same ways reaches
//! the sandbox masked, each message intact around it; and the first frame of a message reaches the upstream
//! before the sandbox has sent the rest.

use std::time::Duration;

use futures_util::{SinkExt, StreamExt, stream};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::frame::Frame;
use tokio_tungstenite::tungstenite::protocol::frame::coding::{CloseCode, Data, OpCode};

use crate::rigs::secrets::{APIKEY, BEARER, Rig, spellings};
use crate::rigs::tls::tls_as;
use crate::rigs::websocket::{split_cases, split_frames};

type Ws = tokio_tungstenite::WebSocketStream<tokio_rustls::client::TlsStream<tokio::net::TcpStream>>;

/// A WebSocket from the sandbox through cordon to `host`'s `path`.
async fn open(rig: &Rig, ca: &std::path::Path, host: &str, path: &str) -> Ws {
    let connect = format!("{host}:{}", rig.up.port());
    let proxy: std::net::SocketAddr = format!("127.0.0.1:{}", rig.port).parse().unwrap();
    let tls = tls_as(proxy, ("sb", "tok"), &connect, host, ca, b"http/1.1")
        .await
        .unwrap();
    let (ws, resp) = tokio_tungstenite::client_async(format!("wss://{connect}{path}"), tls)
        .await
        .unwrap();
    assert_eq!(resp.status(), 101);
    ws
}

/// The next message that is not a ping or a pong, within ten seconds.
async fn next(ws: &mut Ws) -> Option<Message> {
    loop {
        let message = tokio::time::timeout(Duration::from_secs(10), ws.next())
            .await
            .expect("an answer in time")
            .and_then(Result::ok);
        if !matches!(message, Some(Message::Ping(_) | Message::Pong(_))) {
            return message;
        }
    }
}

/// How many `/ws-sink` connections the upstream has seen end.
fn sinks_ended(rig: &Rig) -> usize {
    let seen = rig.leaks.seen.lock().unwrap();
    seen.iter().filter(|s| s.method == "WEBSOCKET-ENDED").count()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_placeholder_or_secret_split_over_frames_anywhere_never_reaches_the_upstream() {
    let rig = Rig::start().await;
    let ca = rig.ca();
    let ph = rig.placeholder("apikey");
    // other.test is bound to no credential: a placeholder, or the secret of either credential, may not go there.
    let mut cases = split_cases(&ph);
    cases.extend(split_cases(APIKEY));
    let total = cases.len();
    // Opened at 40 a second, under the sandbox's connection and request rates.
    let pace = std::sync::Arc::new(tokio::sync::Mutex::new(tokio::time::interval(Duration::from_millis(
        25,
    ))));
    let closes: Vec<(String, Option<Message>)> = stream::iter(cases)
        .map(|(text, spelling, at, ping)| {
            let (rig, ca, pace) = (&rig, &ca, pace.clone());
            async move {
                pace.lock().await.tick().await;
                let mut ws = open(rig, ca, "other.test", "/ws-sink").await;
                for frame in split_frames(text, &spelling, at, ping) {
                    if ws.send(Message::Frame(frame)).await.is_err() {
                        break;
                    }
                }
                let what = format!("{spelling} cut at {at} (text {text}, ping {ping})");
                (what, next(&mut ws).await)
            }
        })
        .buffer_unordered(8)
        .collect()
        .await;
    for (what, close) in closes {
        match close {
            Some(Message::Close(Some(frame))) => assert_eq!(frame.code, CloseCode::Policy, "{what}"),
            other => panic!("{what}: not a 1008 close: {other:?}"),
        }
    }
    // A ping carrying the placeholder is refused too.
    let mut ws = open(&rig, &ca, "other.test", "/ws-sink").await;
    ws.send(Message::Ping(ph.clone().into_bytes().into())).await.unwrap();
    match next(&mut ws).await {
        Some(Message::Close(Some(frame))) => assert_eq!(frame.code, CloseCode::Policy),
        other => panic!("the ping: not a 1008 close: {other:?}"),
    }
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while sinks_ended(&rig) < total + 1 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        sinks_ended(&rig),
        total + 1,
        "every WebSocket reached the upstream and ended"
    );
    for token in [&ph, APIKEY].into_iter().flat_map(spellings) {
        assert!(!rig.leaks.saw(&token), "{token} reached the upstream");
    }
    // What came before the token did reach it: frames were relayed, not held to the end of the message.
    assert!(rig.leaks.saw("before "));
}

#[tokio::test(flavor = "multi_thread")]
async fn the_upstreams_secret_split_over_frames_anywhere_reaches_the_sandbox_masked() {
    let rig = Rig::start().await;
    let ca = rig.ca();
    let mut ws = open(&rig, &ca, "leaky.test", "/ws-split").await;
    for (text, spelling, at, ping) in split_cases(BEARER) {
        let what = format!("{spelling} cut at {at} (text {text}, ping {ping})");
        let got = match next(&mut ws).await {
            Some(Message::Text(t)) if text => t.as_bytes().to_vec(),
            Some(Message::Binary(b)) if !text => b.to_vec(),
            other => panic!("{what}: {other:?}"),
        };
        let got = String::from_utf8_lossy(&got);
        assert!(got.starts_with("before ") && got.ends_with(" after"), "{what}: {got}");
        assert!(got.contains("cordon-ph-"), "{what}: {got}");
        for spelled in spellings(BEARER) {
            assert!(!got.contains(&spelled), "{what}: {got}");
        }
    }
    assert_eq!(next(&mut ws).await, Some(Message::text("done")));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_frame_reaches_the_upstream_before_the_rest_of_its_message_is_sent() {
    let rig = Rig::start().await;
    let ca = rig.ca();
    let mut ws = open(&rig, &ca, "leaky.test", "/ws-sink").await;
    let first = Frame::message(
        b"first part of a long message".to_vec(),
        OpCode::Data(Data::Binary),
        false,
    );
    ws.send(Message::Frame(first)).await.unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !rig.leaks.saw("first part of a long message") {
        assert!(tokio::time::Instant::now() < deadline, "the first frame was held back");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let rest = Frame::message(b" and its end".to_vec(), OpCode::Data(Data::Continue), true);
    ws.send(Message::Frame(rest)).await.unwrap();
    ws.close(None).await.unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !rig.leaks.saw("first part of a long message and its end") {
        assert!(tokio::time::Instant::now() < deadline, "the end never came");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
