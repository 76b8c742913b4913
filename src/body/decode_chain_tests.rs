#![expect(clippy::unwrap_used, reason = "tests")]

use std::io::Write;

use super::*;

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

fn raw_deflate(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

fn decoders(codings: &[&str]) -> Decoding {
    Decoding::new(
        codings
            .iter()
            .map(|c| Decoder::for_coding(c).unwrap().unwrap())
            .collect(),
    )
}

/// Push `data` in pieces, pumping `budget` after each and to the end; every pump's output and the largest.
fn run(mut d: Decoding, data: &[u8], piece: usize, budget: usize) -> (Vec<u8>, usize) {
    let (mut out, mut largest) = (Vec::new(), 0);
    let mut pump = |d: &mut Decoding, out: &mut Vec<u8>| {
        let mut got = 0;
        d.pump(budget, |b| {
            got += b.len();
            out.extend_from_slice(&b);
        })
        .unwrap();
        largest = largest.max(got);
    };
    for p in data.chunks(piece) {
        d.push(p);
        pump(&mut d, &mut out);
    }
    d.end();
    while d.held() {
        pump(&mut d, &mut out);
    }
    (out, largest)
}

#[test]
fn a_stack_is_undone_outermost_first_in_any_pieces() {
    let text: Vec<u8> = (0..5000).flat_map(|i| format!("line {i}\n").into_bytes()).collect();
    // deflate (raw) applied first, then gzip, then gzip again: undone gzip, gzip, deflate.
    let wire = gzip(&gzip(&raw_deflate(&text)));
    for piece in [1, 13, 4096, wire.len()] {
        let (out, _) = run(decoders(&["gzip", "gzip", "deflate"]), &wire, piece, 1 << 20);
        assert_eq!(out, text, "pieces of {piece}");
    }
}

#[test]
fn a_bomb_comes_out_a_bounded_piece_per_pump() {
    // 64 MiB of zeros gzipped twice is a few KiB on the wire.
    let zeros = vec![0u8; 64 << 20];
    let wire = gzip(&gzip(&zeros));
    assert!(wire.len() < 256 * 1024, "{}", wire.len());
    let budget = 64 * 1024;
    let (out, largest) = run(decoders(&["gzip", "gzip"]), &wire, wire.len(), budget);
    assert_eq!(out.len(), zeros.len());
    // One pump hands out the budget plus at most one step of the innermost decoder (4 KiB of gzip input).
    assert!(largest <= budget + 4200 * 1024, "one pump handed out {largest} bytes");
}

#[test]
fn an_empty_body_decodes_to_nothing_and_a_truncated_one_fails() {
    let (out, _) = run(decoders(&["gzip", "deflate"]), b"", 1, 1024);
    assert!(out.is_empty());
    let wire = gzip(b"some text that is long enough to matter");
    let mut d = decoders(&["gzip"]);
    d.push(&wire[..wire.len() - 4]);
    d.end();
    let mut failed = false;
    while d.held() && !failed {
        failed = d.pump(1024, |_| {}).is_err();
    }
    assert!(failed, "a truncated gzip is an error");
}
