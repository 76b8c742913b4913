#![expect(clippy::unwrap_used, clippy::panic, reason = "tests")]

use futures_util::StreamExt;
use tokio::io::AsyncWriteExt;
use tokio_tungstenite::tungstenite::protocol::Role;
use tokio_tungstenite::tungstenite::protocol::frame::Frame;
use tokio_tungstenite::tungstenite::{Message, Utf8Bytes};

use super::*;

const LIMITS: FrameLimits = FrameLimits {
    frame: 1 << 20,
    message: 2 << 20,
};

/// A frame as tungstenite writes it, masked with `mask` if given.
fn wire(opcode: OpCode, fin: bool, payload: &[u8], mask: Option<[u8; 4]>) -> Vec<u8> {
    let header = FrameHeader {
        is_final: fin,
        opcode,
        mask,
        ..FrameHeader::default()
    };
    let mut out = Vec::new();
    Frame::from_payload(header, Bytes::copy_from_slice(payload))
        .format(&mut out)
        .unwrap();
    out
}

/// Everything a reader gives from `bytes`, written to it `step` bytes at a time.
async fn read_all(bytes: Vec<u8>, step: usize, from_client: bool, limits: FrameLimits) -> (Vec<Piece>, Option<Fault>) {
    let (mut tx, rx) = tokio::io::duplex(1 << 16);
    let writer = tokio::spawn(async move {
        for chunk in bytes.chunks(step) {
            if tx.write_all(chunk).await.is_err() {
                return;
            }
        }
    });
    let mut reader = FrameReader::new(rx, from_client, limits);
    let mut pieces = Vec::new();
    let fault = loop {
        match reader.next().await {
            Ok(Some(piece)) => pieces.push(piece),
            Ok(None) => break None,
            Err(fault) => break Some(fault),
        }
    };
    writer.await.unwrap();
    (pieces, fault)
}

#[tokio::test]
async fn a_fragmented_message_with_a_ping_between_comes_in_order_unmasked_however_the_bytes_arrive() {
    let key = Some([0x37, 0xfa, 0x21, 0x3d]);
    let mut bytes = wire(OpCode::Data(Data::Text), false, b"hello, ", key);
    bytes.extend(wire(OpCode::Control(Control::Ping), true, b"are you there", key));
    bytes.extend(wire(OpCode::Data(Data::Continue), false, b"", key));
    bytes.extend(wire(OpCode::Data(Data::Continue), true, b"world", key));
    bytes.extend(wire(OpCode::Data(Data::Binary), true, &[0, 1, 2, 255], key));
    for step in [1, 2, 3, 5, 7, 64, bytes.len()] {
        let (pieces, fault) = read_all(bytes.clone(), step, true, LIMITS).await;
        assert!(fault.is_none(), "{step}: {fault:?}");
        let mut text = Vec::new();
        let mut binary = Vec::new();
        let mut events = Vec::new();
        for piece in pieces {
            match piece {
                Piece::Data { start, bytes, last } => {
                    if start.is_some() {
                        events.push(format!("start {start:?}"));
                    }
                    if text.ends_with(b"world") || start == Some(MessageKind::Binary) || !binary.is_empty() {
                        binary.extend_from_slice(&bytes);
                    } else {
                        text.extend_from_slice(&bytes);
                    }
                    if last {
                        events.push("last".into());
                    }
                }
                Piece::Control { op, payload } => {
                    assert_eq!(&payload[..], b"are you there");
                    events.push(format!("{op:?}"));
                }
            }
        }
        assert_eq!(text, b"hello, world", "{step}");
        assert_eq!(binary, [0, 1, 2, 255], "{step}");
        assert_eq!(
            events,
            ["start Some(Text)", "Ping", "last", "start Some(Binary)", "last"],
            "{step}"
        );
    }
}

#[tokio::test]
async fn a_large_frame_comes_in_pieces_of_at_most_a_piece() {
    let payload: Vec<u8> = (0..(5 * PIECE + 17)).map(|i| (i % 251) as u8).collect();
    let bytes = wire(OpCode::Data(Data::Binary), true, &payload, Some([1, 2, 3, 4]));
    let (pieces, fault) = read_all(bytes, 4096, true, LIMITS).await;
    assert!(fault.is_none());
    let mut got = Vec::new();
    for piece in &pieces {
        let Piece::Data { bytes, .. } = piece else {
            panic!("{piece:?}")
        };
        assert!(bytes.len() <= PIECE);
        got.extend_from_slice(bytes);
    }
    assert_eq!(pieces.len(), 6);
    assert_eq!(got, payload);
}

#[tokio::test]
async fn a_frame_or_message_over_the_limit_is_refused_from_its_header() {
    let limits = FrameLimits {
        frame: 100,
        message: 250,
    };
    // The header alone: the payload never comes, and the refusal does not wait for it.
    let mut header = Vec::new();
    FrameHeader {
        opcode: OpCode::Data(Data::Binary),
        mask: Some([9, 9, 9, 9]),
        ..FrameHeader::default()
    }
    .format(101, &mut header)
    .unwrap();
    let (pieces, fault) = read_all(header, 1, true, limits).await;
    assert!(pieces.is_empty());
    assert!(matches!(fault, Some(Fault::TooBig(_))), "{fault:?}");
    // Three frames of 100: the third passes the message's limit.
    let mut bytes = wire(OpCode::Data(Data::Text), false, &[b'a'; 100], Some([1, 1, 1, 1]));
    bytes.extend(wire(
        OpCode::Data(Data::Continue),
        false,
        &[b'a'; 100],
        Some([1, 1, 1, 1]),
    ));
    bytes.extend(wire(
        OpCode::Data(Data::Continue),
        true,
        &[b'a'; 100],
        Some([1, 1, 1, 1]),
    ));
    let (pieces, fault) = read_all(bytes, 1000, true, limits).await;
    assert_eq!(pieces.len(), 2);
    assert!(matches!(fault, Some(Fault::TooBig(_))), "{fault:?}");
}

#[tokio::test]
async fn frames_against_the_protocol_are_refused() {
    let key = Some([5, 6, 7, 8]);
    let text = |fin| wire(OpCode::Data(Data::Text), fin, b"x", key);
    let cases: Vec<(&str, Vec<u8>, bool)> = vec![
        (
            "unmasked from a client",
            wire(OpCode::Data(Data::Text), true, b"x", None),
            true,
        ),
        ("masked from a server", text(true), false),
        (
            "continuation alone",
            wire(OpCode::Data(Data::Continue), true, b"x", key),
            true,
        ),
        ("new message inside one", [text(false), text(true)].concat(), true),
        (
            "fragmented ping",
            wire(OpCode::Control(Control::Ping), false, b"x", key),
            true,
        ),
        (
            "long ping",
            wire(OpCode::Control(Control::Ping), true, &[b'p'; 126], key),
            true,
        ),
        (
            "reserved bit",
            {
                let mut b = text(true);
                b[0] |= 0x40;
                b
            },
            true,
        ),
        (
            "reserved opcode",
            {
                let mut b = text(true);
                b[0] = (b[0] & 0xf0) | 0x3;
                b
            },
            true,
        ),
    ];
    for (what, bytes, from_client) in cases {
        let (_, fault) = read_all(bytes, 1, from_client, LIMITS).await;
        assert!(
            matches!(fault, Some(Fault::Protocol(CloseCode::Protocol, _))),
            "{what}: {fault:?}"
        );
    }
    // Ending inside a frame is not a clean end.
    let mut cut = text(true);
    cut.pop();
    let (_, fault) = read_all(cut, 1, true, LIMITS).await;
    assert!(matches!(fault, Some(Fault::Broken)), "{fault:?}");
}

#[tokio::test]
async fn what_the_writer_sends_a_real_websocket_reads_masked_or_not() {
    for (masked, role) in [(true, Role::Server), (false, Role::Client)] {
        let (a, b) = tokio::io::duplex(1 << 20);
        let mut writer = FrameWriter::new(a, masked);
        let big = vec![b'z'; 3 * PIECE + 5];
        writer
            .send(OpCode::Data(Data::Text), false, "caf".as_bytes())
            .await
            .unwrap();
        writer.send(OpCode::Control(Control::Ping), true, b"p").await.unwrap();
        // A character split over two frames: the message is text as a whole.
        writer
            .send(OpCode::Data(Data::Continue), false, &"é".as_bytes()[..1])
            .await
            .unwrap();
        writer
            .send(OpCode::Data(Data::Continue), true, &"é".as_bytes()[1..])
            .await
            .unwrap();
        writer.send(OpCode::Data(Data::Binary), true, &big).await.unwrap();
        writer.close(CloseCode::Normal, &"ü".repeat(100)).await.unwrap();
        // The end of what it sends; what the reader answers (a pong, a close) is left unread.
        writer.io.shutdown().await.unwrap();
        let mut ws = tokio_tungstenite::WebSocketStream::from_raw_socket(b, role, None).await;
        let mut got = Vec::new();
        while let Some(m) = ws.next().await {
            match m {
                Ok(m) => got.push(m),
                Err(e) => panic!("{masked}: {e} after {got:?}"),
            }
        }
        assert_eq!(got[0], Message::Ping(b"p".to_vec().into()), "{masked}");
        assert_eq!(got[1], Message::Text(Utf8Bytes::from_static("café")), "{masked}");
        assert_eq!(got[2], Message::Binary(big.into()), "{masked}");
        let Message::Close(Some(close)) = &got[3] else {
            panic!("{:?}", got[3])
        };
        assert_eq!(close.code, CloseCode::Normal);
        // Cut to fit a control frame, where a character ends.
        assert_eq!(close.reason.as_str(), "ü".repeat(61));
    }
}

#[test]
fn masking_at_any_offset_and_length_is_the_xor_of_the_key_from_there() {
    let key = [0x6d, 0xb6, 0xb2, 0x80];
    let data: Vec<u8> = (0..40u8).collect();
    for at in 0..8 {
        for len in 0..data.len() {
            let mut masked = data[..len].to_vec();
            apply_mask(&mut masked, key, at);
            let expected: Vec<u8> = data[..len]
                .iter()
                .enumerate()
                .map(|(i, b)| b ^ key[(at + i) % 4])
                .collect();
            assert_eq!(masked, expected, "at {at}, {len} bytes");
        }
    }
}
