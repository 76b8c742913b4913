//! WebSocket messages and frames are bounded (issue 34, item 7): one larger than `limits.websocket_message` or
//! `limits.websocket_frame`, from the sandbox or from the upstream, closes the WebSocket on both sides with 1009
//! (message too big), is not relayed (a frame) or not relayed whole (a message, refused as soon as its frames add up
//! to more), and is recorded as a refusal; what fits goes through as before.

use std::time::Duration;

use cordon::audit::{Kind, Verdict};
use futures_util::SinkExt;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::frame::Frame;
use tokio_tungstenite::tungstenite::protocol::frame::coding::{CloseCode, Data, OpCode};

use crate::rigs::tls::*;
use crate::rigs::websocket::{next, wss_server};

const LIMITS: &str = "limits: { websocket_message: 64KiB, websocket_frame: 32KiB }\n";

/// A WebSocket through cordon's interception to the server, as sb2.
async fn open(
    rig: &TlsRig,
    server: std::net::SocketAddr,
) -> tokio_tungstenite::WebSocketStream<tokio_rustls::client::TlsStream<tokio::net::TcpStream>> {
    let ca = rig.sandbox_ca_file("sb2");
    let connect = format!("allowed.test:{}", server.port());
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
    let (socket, resp) = tokio_tungstenite::client_async(format!("wss://{connect}/ws"), tls)
        .await
        .unwrap();
    assert_eq!(resp.status(), 101);
    socket
}

#[tokio::test(flavor = "multi_thread")]
async fn a_message_or_frame_over_the_limit_closes_the_websocket_with_1009_either_way() {
    let rig = tls_rig(LIMITS).await;
    let (server, got) = wss_server(rig.upstream_ca.server_config(&["allowed.test"])).await;

    // What fits goes through, both ways.
    let mut ws = open(&rig, server).await;
    ws.send(Message::binary(vec![b'a'; 30 * 1024])).await.unwrap();
    assert_eq!(next(&mut ws).await.len(), 30 * 1024);
    ws.send(Message::text("big 30000")).await.unwrap();
    assert_eq!(next(&mut ws).await.len(), 30000);
    ws.close(None).await.unwrap();

    // From the sandbox: a message over 64 KiB (sent as one frame, over 32 KiB too), and a frame over 32 KiB.
    for size in [100 * 1024, 40 * 1024] {
        let mut ws = open(&rig, server).await;
        let before = got.load(std::sync::atomic::Ordering::SeqCst);
        ws.send(Message::binary(vec![b'a'; size])).await.unwrap();
        match next(&mut ws).await {
            Message::Close(Some(frame)) => assert_eq!(frame.code, CloseCode::Size, "{size}: {frame:?}"),
            other => panic!("{size}: not a close: {other:?}"),
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert_eq!(
            got.load(std::sync::atomic::Ordering::SeqCst),
            before,
            "{size}: relayed to the upstream"
        );
    }

    // From the sandbox: frames under 32 KiB that add up to more than 64 KiB; refused once the total passes it.
    let mut ws = open(&rig, server).await;
    let before = got.load(std::sync::atomic::Ordering::SeqCst);
    for (opcode, fin) in [(Data::Binary, false), (Data::Continue, false), (Data::Continue, true)] {
        let frame = Frame::message(vec![b'a'; 30 * 1024], OpCode::Data(opcode), fin);
        if ws.send(Message::Frame(frame)).await.is_err() {
            break;
        }
    }
    match next(&mut ws).await {
        Message::Close(Some(frame)) => assert_eq!(frame.code, CloseCode::Size, "fragments: {frame:?}"),
        other => panic!("fragments: not a close: {other:?}"),
    }
    assert_eq!(
        got.load(std::sync::atomic::Ordering::SeqCst),
        before,
        "fragments: a whole message went"
    );

    // From the upstream: a message over the limit never reaches the sandbox.
    let mut ws = open(&rig, server).await;
    ws.send(Message::text("big 200000")).await.unwrap();
    match next(&mut ws).await {
        Message::Close(Some(frame)) => assert_eq!(frame.code, CloseCode::Size, "{frame:?}"),
        other => panic!("not a close: {} bytes", other.len()),
    }

    // Each is recorded as a refusal, saying which side sent it.
    let refused = |who: &'static str| {
        move |r: &crate::rigs::proxy::Record| {
            r.kind == Kind::Https
                && r.reason.as_deref() == Some("websocket_message_too_big")
                && r.decision == Verdict::Deny
                && r.error.as_deref().is_some_and(|e| e.contains(who))
        }
    };
    assert!(
        rig.proxy.audit.wait_any(refused("the sandbox")).await.is_some(),
        "{:#?}",
        rig.proxy.audit.now()
    );
    assert!(
        rig.proxy.audit.wait_any(refused("the upstream")).await.is_some(),
        "{:#?}",
        rig.proxy.audit.now()
    );
}

#[test]
fn limits_out_of_range_or_inverted_are_refused_naming_the_field() {
    let bad = [
        ("limits: { websocket_message: 10 }\n", "limits.websocket_message"),
        ("limits: { websocket_frame: 2GiB }\n", "limits.websocket_frame"),
        ("limits: { websocket_message: lots }\n", "limits.websocket_message"),
        (
            "limits: { websocket_message: 1MiB, websocket_frame: 2MiB }\n",
            "limits.websocket_frame",
        ),
    ];
    for (top, path) in bad {
        let yaml = crate::rigs::proxy::config(1, 2, top);
        let err = cordon::config::Config::parse("t.yaml", &yaml)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains(path), "{top}: {err}");
    }
    // A smaller message size alone brings the default frame size down with it.
    let yaml = crate::rigs::proxy::config(1, 2, "limits: { websocket_message: 1MiB }\n");
    if let Err(e) = cordon::config::Config::parse("t.yaml", &yaml) {
        panic!("{e}");
    }
}
