#![expect(clippy::unwrap_used, reason = "tests")]

use secrecy::SecretString;

use super::*;

const PH: &str = "cordon-ph-0123456789abcdef0123456789abcdef";

fn stream() -> ScanStream {
    let detector = Detector::new(&[("openai".to_string(), SecretString::from("sk-real-7c1f09aa34b2"))]).unwrap();
    ScanStream::new(Arc::new(detector), streamed_refuses(&[]))
}

#[test]
fn of_a_chunk_only_the_tail_that_could_begin_a_finding_is_held() {
    let mut s = stream();
    let mut out = Vec::new();
    // Clean bytes that end as a placeholder begins: all but the last window may go now.
    let mut chunk = vec![b'x'; 10_000];
    chunk.extend_from_slice(b"cordon-p");
    s.push(Bytes::from(chunk.clone()), &mut out).unwrap();
    let sent: usize = out.iter().map(Bytes::len).sum();
    assert!(sent > 0 && sent + s.detector.window() >= chunk.len(), "sent {sent}");
    assert!(!out.concat().ends_with(b"cordon-p"));
    // The rest of the placeholder is refused, and nothing of it went.
    assert!(s.push(Bytes::from_static(&PH.as_bytes()[8..]), &mut out).is_err());
    assert!(!out.concat().windows(8).any(|w| w == b"cordon-p"));
}

#[test]
fn what_ends_where_nothing_can_begin_goes_at_once_and_the_end_lets_everything_go() {
    let mut s = stream();
    let mut out = Vec::new();
    s.push(Bytes::from_static(b"plain words. "), &mut out).unwrap();
    assert_eq!(out.concat(), b"plain words. ");
    s.push(Bytes::from_static(b"then cordon-"), &mut out).unwrap();
    s.finish(&mut out);
    assert_eq!(out.concat(), b"plain words. then cordon-");
}

#[test]
fn a_read_chunk_longer_than_what_it_carries_is_held_whole_without_arithmetic_on_its_length() {
    // An aws-chunked upload's first read: a size line with a signature, then a few data bytes that could begin
    // a placeholder. The raw chunk is longer than every byte scanned so far (a debug build once panicked here,
    // subtracting the raw length from the scanned count, and took the upload with it).
    let mut s = stream();
    let mut out = Vec::new();
    let raw = Bytes::from_static(
        b"7;chunk-signature=0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\r\ncordon-",
    );
    s.push_read(raw.clone(), b"cordon-", &mut out).unwrap();
    assert!(out.is_empty(), "a chunk that may begin a placeholder is held whole");
    s.push_read(Bytes::from_static(b"\r\n5\r\nwords\r\n"), b"words", &mut out)
        .unwrap();
    s.finish(&mut out);
    assert_eq!(out.first(), Some(&raw), "the held chunk goes whole, untouched");
}
