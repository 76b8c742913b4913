#![expect(clippy::unwrap_used, reason = "tests")]

use std::sync::Arc;

use secrecy::SecretString;

use super::*;
use crate::leak::mask::masker::Masker;
use crate::leak::scan::detect::Detector;
use crate::leak::scan::stream::streamed_refuses;

const PH: &str = "cordon-ph-0123456789abcdef0123456789abcdef";
const SECRET: &str = "sk-real-7c1f09aa34b2";

fn scanning(kind: MessageKind) -> WebSocketMessage {
    let detector = Arc::new(Detector::new(&[("openai".to_string(), SecretString::from(SECRET))]).unwrap());
    WebSocketMessage::new(
        kind,
        MessageFilter::Scan(ScanStream::new(detector, streamed_refuses(&[]))),
    )
}

fn masking(kind: MessageKind) -> WebSocketMessage {
    let masker = Arc::new(Masker::new(&[(SecretString::from(SECRET), PH.to_string())]).unwrap());
    WebSocketMessage::new(kind, MessageFilter::Mask(masker.stream()))
}

/// The message `text` pushed in pieces cut at `cuts`: the frames it gave, or why it stopped (with the frames
/// given before).
fn run(mut m: WebSocketMessage, text: &[u8], cuts: &[usize]) -> (Vec<Out>, Option<Stopped>) {
    let mut bounds = vec![0];
    bounds.extend(cuts.iter().copied().filter(|c| *c > 0 && *c < text.len()));
    bounds.push(text.len());
    let mut out = Vec::new();
    for (i, w) in bounds.windows(2).enumerate() {
        let last = i + 2 == bounds.len();
        if let Err(stopped) = m.push(Bytes::copy_from_slice(&text[w[0]..w[1]]), last, &mut out) {
            return (out, Some(stopped));
        }
    }
    (out, None)
}

fn joined(frames: &[Out]) -> Vec<u8> {
    frames.iter().flat_map(|(_, _, b)| b.to_vec()).collect()
}

fn contains(hay: &[u8], needle: &str) -> bool {
    hay.windows(needle.len()).any(|w| w == needle.as_bytes())
}

#[test]
fn a_placeholder_or_secret_split_anywhere_over_pieces_is_refused_before_it_all_leaves() {
    for kind in [MessageKind::Text, MessageKind::Binary] {
        for token in [PH, SECRET] {
            let text = format!("{}{token} and after", "lead ".repeat(50));
            let at = text.find(token).unwrap();
            for offset in 0..=token.len() {
                for cuts in [
                    vec![at + offset],
                    vec![at + offset, at + offset + 1],
                    (0..text.len()).collect(),
                ] {
                    let (frames, stopped) = run(scanning(kind), text.as_bytes(), &cuts);
                    assert!(
                        matches!(stopped, Some(Stopped::Refused(_))),
                        "{kind:?} {token} at {offset} ({} cuts)",
                        cuts.len()
                    );
                    assert!(
                        !contains(&joined(&frames), token),
                        "{kind:?} {token} at {offset}: it left"
                    );
                }
            }
        }
    }
}

#[test]
fn a_clean_message_goes_whole_and_its_first_frame_says_its_kind() {
    let text = "nothing to see ".repeat(100);
    for (kind, opcode) in [(MessageKind::Text, Data::Text), (MessageKind::Binary, Data::Binary)] {
        let (frames, stopped) = run(scanning(kind), text.as_bytes(), &[7, 300, 900]);
        assert!(stopped.is_none());
        assert_eq!(joined(&frames), text.as_bytes());
        assert_eq!(frames[0].0, OpCode::Data(opcode));
        assert!(frames[1..].iter().all(|f| f.0 == OpCode::Data(Data::Continue)));
        assert!(frames.iter().rev().skip(1).all(|f| !f.1) && frames.last().unwrap().1);
    }
    // An empty message is one empty final frame.
    let (frames, _) = run(masking(MessageKind::Text), b"", &[]);
    assert_eq!(frames, [(OpCode::Data(Data::Text), true, Bytes::new())]);
}

#[test]
fn a_secret_split_anywhere_over_pieces_is_masked_and_each_frame_of_text_is_text() {
    for kind in [MessageKind::Text, MessageKind::Binary] {
        let text = format!("é→{SECRET}ü, then ✓ {SECRET}");
        let expected = text.replace(SECRET, PH);
        for a in 0..text.len() {
            for b in [a + 1, a + 3, a + SECRET.len()] {
                let (frames, stopped) = run(masking(kind), text.as_bytes(), &[a, b]);
                assert!(stopped.is_none(), "{kind:?} cut at {a}, {b}");
                assert_eq!(joined(&frames), expected.as_bytes(), "{kind:?} cut at {a}, {b}");
                if kind == MessageKind::Text {
                    for (_, _, bytes) in &frames {
                        assert!(std::str::from_utf8(bytes).is_ok(), "cut at {a}, {b}: {bytes:?}");
                    }
                }
            }
        }
    }
}

#[test]
fn text_that_is_not_utf8_stops_the_message_even_when_it_is_cut_short() {
    for text in [&b"ok \xff then"[..], b"ends inside \xe2\x82"] {
        for cut in 0..text.len() {
            let (_, stopped) = run(masking(MessageKind::Text), text, &[cut]);
            assert!(matches!(stopped, Some(Stopped::NotText)), "{text:?} cut at {cut}");
        }
    }
    // Binary is not text.
    let (frames, stopped) = run(masking(MessageKind::Binary), b"\xff\xfe", &[1]);
    assert!(stopped.is_none());
    assert_eq!(joined(&frames), b"\xff\xfe");
}
