//! The framing guard (`src/framing/`) on arbitrary client bytes.
//!
//! Checks that the guard never panics, and that what it hands to hyper:
//! - is the same whether the bytes arrive in one read, one byte at a time, or in pseudo-random pieces (the
//!   empty line that ends it on a refusal aside: see `request_bytes`);
//! - is the client's bytes in order, except for the `connection: close` line it adds to a CONNECT head (or
//!   an Upgrade head with a body) and the empty line it hands over when it refuses a head;
//! - is, walked with httparse alone (heads with `httparse::Request`, chunk sizes with
//!   `httparse::parse_chunk_size`, trailers with `httparse::parse_headers`), a sequence of complete request
//!   heads that httparse accepts, each without ambiguous framing, followed by the body its headers declare
//!   (cut short only where the input ends or the guard refused).
#![no_main]

use cordon::fuzzing::{Framed, framing};
use libfuzzer_sys::fuzz_target;

/// The guard's head limit in this target: small, so that too-large heads are within reach.
const MAX_HEAD: usize = 1024;
/// The line the guard adds to CONNECT heads and to Upgrade heads with a body.
const CLOSE: &[u8] = b"connection: close\r\n";

fuzz_target!(|data: &[u8]| {
    let switch = data.len() % 2 == 1;
    let whole = framing(&[data], MAX_HEAD, switch);
    let bytewise: Vec<&[u8]> = data.chunks(1).collect();
    let pieces = pseudo_random_pieces(data);
    for (split, reads) in [("one byte a read", bytewise), ("pseudo-random pieces", pieces)] {
        let other = framing(&reads, MAX_HEAD, switch);
        assert_eq!(
            request_bytes(&whole),
            request_bytes(&other),
            "one read vs {split}: {whole:?} {other:?}"
        );
    }
    check_stream(data, &whole, switch);
});

/// What hyper would read as requests: the released bytes without the empty line that ends them on a refusal.
///
/// Only these must not depend on how the bytes were split into reads. Whether, and as what, the guard refuses a
/// head that never ends may: a read that also brings blank lines, or more bytes than the head limit, makes the
/// guard parse (and refuse) the head early, where byte-by-byte reads reach the end of the input first, or the
/// head limit before a malformed byte.
fn request_bytes(framed: &Framed) -> &[u8] {
    match framed.violation {
        Some(_) => framed.released.strip_suffix(b"\r\n").unwrap_or(&framed.released),
        None => &framed.released,
    }
}

/// `data` cut at pseudo-random places chosen from its own bytes (deterministic, so a crash reproduces).
fn pseudo_random_pieces(data: &[u8]) -> Vec<&[u8]> {
    let mut state = 0x9e37_79b9_u32 ^ data.len() as u32;
    let mut pieces = Vec::new();
    let mut rest = data;
    while !rest.is_empty() {
        state = state.wrapping_mul(1_103_515_245).wrapping_add(12_345) ^ u32::from(rest[0]);
        let n = 1 + (state >> 16) as usize % 97;
        let (piece, tail) = rest.split_at(n.min(rest.len()));
        pieces.push(piece);
        rest = tail;
    }
    pieces
}

/// The values of the headers called `name`.
fn values<'b>(headers: &[httparse::Header<'b>], name: &str) -> Vec<&'b [u8]> {
    headers
        .iter()
        .filter(|h| h.name.eq_ignore_ascii_case(name))
        .map(|h| h.value)
        .collect()
}

/// Walks what the guard released with httparse and checks it against the input.
fn check_stream(input: &[u8], framed: &Framed, switch: bool) {
    let out = &framed.released;
    let mut at = 0;
    // Where the guard added `connection: close`, and whether the stream ends with its refusal line.
    let mut inserted = None;
    let mut refusal_line = false;
    'requests: while at < out.len() {
        let mut headers = [httparse::EMPTY_HEADER; 128];
        let mut req = httparse::Request::new(&mut headers);
        let len = match req.parse(&out[at..]) {
            Ok(httparse::Status::Complete(len)) => len,
            Ok(httparse::Status::Partial) if framed.violation.is_some() && &out[at..] == b"\r\n" => {
                refusal_line = true;
                break;
            }
            other => panic!("hyper would read a head httparse does not accept: {other:?} at {at}"),
        };
        let cl = values(req.headers, "content-length");
        let te = values(req.headers, "transfer-encoding");
        assert!(
            cl.is_empty() || te.is_empty(),
            "Content-Length and Transfer-Encoding reached hyper"
        );
        assert!(cl.len() <= 1, "two Content-Length lines reached hyper");
        assert!(te.len() <= 1, "two Transfer-Encoding lines reached hyper");
        assert!(
            te.iter().all(|v| v.trim_ascii().eq_ignore_ascii_case(b"chunked")),
            "a Transfer-Encoding other than chunked reached hyper"
        );
        assert!(len <= MAX_HEAD + CLOSE.len(), "a head over the limit reached hyper");
        let length = match cl.first() {
            Some(v) => {
                let v = v.trim_ascii();
                assert!(
                    !v.is_empty() && v.iter().all(u8::is_ascii_digit),
                    "Content-Length {v:?} reached hyper"
                );
                std::str::from_utf8(v).unwrap().parse::<u64>().unwrap()
            }
            None => 0,
        };
        let chunked = !te.is_empty();
        let upgrade = !values(req.headers, "upgrade").is_empty();
        let connect = req.method == Some("CONNECT");
        at += len;
        if connect || (upgrade && (chunked || length > 0)) {
            let head = &out[at - len..at];
            let end = if head.ends_with(b"\r\n\r\n") { 2 } else { 1 };
            assert!(
                head[..head.len() - end].ends_with(CLOSE),
                "a CONNECT or Upgrade head without connection: close"
            );
            inserted = Some(at - end - CLOSE.len());
            break;
        }
        if upgrade && switch {
            break;
        }
        if chunked {
            loop {
                let Ok(httparse::Status::Complete((used, size))) = httparse::parse_chunk_size(&out[at..]) else {
                    assert_eq!(
                        at,
                        out.len(),
                        "hyper would read a chunk-size line httparse refuses: {:?}",
                        &out[at..]
                    );
                    break 'requests;
                };
                at += used;
                if size == 0 {
                    let mut trailers = [httparse::EMPTY_HEADER; 128];
                    match httparse::parse_headers(&out[at..], &mut trailers) {
                        Ok(httparse::Status::Complete((used, _))) => at += used,
                        _ => {
                            assert_eq!(at, out.len(), "hyper would read trailers httparse refuses");
                            break 'requests;
                        }
                    }
                    break;
                }
                at = at
                    .saturating_add(usize::try_from(size).unwrap_or(usize::MAX))
                    .min(out.len());
                if at == out.len() {
                    break 'requests;
                }
                if out[at..] == *b"\r" {
                    break 'requests;
                }
                assert!(out[at..].starts_with(b"\r\n"), "chunk data without CRLF");
                at += 2;
            }
        } else {
            at = at
                .saturating_add(usize::try_from(length).unwrap_or(usize::MAX))
                .min(out.len());
        }
    }
    // Without the added line and the refusal line, the stream is a prefix of the input.
    let mut plain = out.clone();
    if refusal_line {
        plain.truncate(plain.len() - 2);
    }
    if let Some(i) = inserted {
        plain.drain(i..i + CLOSE.len());
    }
    assert!(
        input.starts_with(&plain),
        "hyper would read bytes the client did not send"
    );
}
