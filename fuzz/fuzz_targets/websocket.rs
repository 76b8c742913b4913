//! The WebSocket relay (`src/proxy/tunnel/websocket_frames.rs`, `src/proxy/tunnel/websocket_message.rs`) on arbitrary bytes
//! from a peer (the first input byte picks client or server, and small limits so that they are within reach).
//!
//! Checks that the reader and the message splitter never panic, and that:
//! - what they make of the bytes is the same whether they arrive in one read, one byte at a time, or in
//!   pseudo-random pieces (the reader is cancel-safe and keeps what it has read);
//! - no data piece is larger than the reader's piece size, no control payload over 125 bytes, no message over
//!   the message limit;
//! - what the relay writes parses with tungstenite as frames of the same messages: the first frame Text or
//!   Binary, the rest Continuation, FIN on the last only, the payloads together the message's bytes, each text
//!   frame whole UTF-8 (cut where a character ends); written unmasked, as to a client.
#![no_main]

use std::io::Cursor;

use cordon::fuzzing::{Relayed, websocket};
use libfuzzer_sys::fuzz_target;
use tungstenite::protocol::frame::FrameHeader;
use tungstenite::protocol::frame::coding::{Data, OpCode};

/// The reader's largest piece (`PIECE` in websocket_frames.rs).
const PIECE: usize = 64 * 1024;
const FRAME_LIMIT: u64 = 4096;
const MESSAGE_LIMIT: u64 = 16 * 1024;

fuzz_target!(|data: &[u8]| {
    let Some((&first, data)) = data.split_first() else { return };
    let from_client = first & 1 == 1;
    let whole = websocket(&[data], from_client, FRAME_LIMIT, MESSAGE_LIMIT);
    let bytewise: Vec<&[u8]> = data.chunks(1).collect();
    for (split, reads) in [("one byte a read", bytewise), ("pseudo-random pieces", pieces(data))] {
        let other = websocket(&reads, from_client, FRAME_LIMIT, MESSAGE_LIMIT);
        assert_eq!(whole, other, "one read vs {split}");
    }
    check(&whole);
});

fn check(r: &Relayed) {
    assert!(r.largest_piece <= PIECE, "a piece of {} bytes", r.largest_piece);
    assert!(r.controls.iter().all(|(_, p)| p.len() <= 125), "a control payload over 125 bytes");
    for (_, payload, _) in &r.messages {
        assert!(payload.len() as u64 <= MESSAGE_LIMIT, "a message over the limit");
    }
    // The written frames, parsed back.
    let mut at = 0;
    let mut frames = Vec::new();
    while at < r.written.len() {
        let mut cursor = Cursor::new(&r.written[at..]);
        let (header, length) = FrameHeader::parse(&mut cursor)
            .expect("the relay wrote a frame tungstenite refuses")
            .expect("the relay wrote half a frame header");
        assert!(header.mask.is_none(), "a masked frame written to a client");
        assert!(!(header.rsv1 || header.rsv2 || header.rsv3), "reserved bits written");
        let start = at + cursor.position() as usize;
        let end = start + length as usize;
        assert!(end <= r.written.len(), "the relay wrote half a frame");
        frames.push((header.opcode, header.is_final, r.written[start..end].to_vec()));
        at = end;
    }
    // Frames to messages: each message as the reader gave it, the last perhaps cut where reading stopped.
    let mut frames = frames.into_iter().peekable();
    for (text, payload, ended) in &r.messages {
        let mut joined = Vec::new();
        let mut first = true;
        let mut fin = false;
        while let Some((op, f, p)) = frames.next_if(|_| !fin) {
            let want = match (first, text) {
                (false, _) => OpCode::Data(Data::Continue),
                (true, true) => OpCode::Data(Data::Text),
                (true, false) => OpCode::Data(Data::Binary),
            };
            assert_eq!(op, want, "frame opcode");
            if *text {
                assert!(std::str::from_utf8(&p).is_ok(), "a text frame that is not whole UTF-8");
            }
            joined.extend_from_slice(&p);
            first = false;
            fin = f;
        }
        if *ended && fin {
            assert_eq!(&joined, payload, "the relayed message differs from the one read");
        } else {
            assert!(payload.starts_with(&joined), "the relay wrote bytes the peer did not send");
            assert!(!fin, "a message ended that the peer did not end");
        }
        if *ended && !fin {
            assert!(r.stopped == Some("not_text"), "an ended message was not relayed whole: {:?}", r.stopped);
        }
    }
    assert!(frames.next().is_none(), "frames written for no message");
}

/// `data` cut at pseudo-random places chosen from its own bytes (deterministic, so a crash reproduces).
fn pieces(data: &[u8]) -> Vec<&[u8]> {
    let mut state = 0x9e37_79b9_u32 ^ data.len() as u32;
    let mut out = Vec::new();
    let mut rest = data;
    while !rest.is_empty() {
        state = state.wrapping_mul(1_103_515_245).wrapping_add(12_345) ^ u32::from(rest[0]);
        let n = 1 + (state >> 16) as usize % 97;
        let (piece, tail) = rest.split_at(n.min(rest.len()));
        out.push(piece);
        rest = tail;
    }
    out
}
