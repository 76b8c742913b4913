#![expect(clippy::unwrap_used, reason = "tests")]

use std::io::Write;

use super::*;

fn text() -> Vec<u8> {
    (0..20_000)
        .flat_map(|i| format!("line {i} of the body\n").into_bytes())
        .collect()
}

fn compressed(coding: &str, data: &[u8]) -> Vec<u8> {
    match coding {
        "gzip" => {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            e.write_all(data).unwrap();
            e.finish().unwrap()
        }
        "deflate" => {
            let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
            e.write_all(data).unwrap();
            e.finish().unwrap()
        }
        "br" => {
            let mut out = Vec::new();
            {
                let mut e = brotli::CompressorWriter::new(&mut out, 4096, 5, 22);
                e.write_all(data).unwrap();
            }
            out
        }
        "zstd" => zstd::encode_all(data, 3).unwrap(),
        _ => unreachable!(),
    }
}

fn decode_in_pieces(coding: &str, data: &[u8], piece: usize) -> Vec<u8> {
    let mut d = Decoder::for_coding(coding).unwrap().unwrap();
    let mut out = Vec::new();
    for p in data.chunks(piece) {
        d.push(p, |bytes| out.extend_from_slice(&bytes)).unwrap();
    }
    out.extend_from_slice(&d.finish().unwrap());
    out
}

#[test]
fn every_coding_round_trips_in_any_pieces() {
    let data = text();
    for coding in ["gzip", "deflate", "br", "zstd"] {
        let c = compressed(coding, &data);
        for piece in [1, 7, 1000, c.len()] {
            assert_eq!(
                decode_in_pieces(coding, &c, piece),
                data,
                "{coding} in pieces of {piece}"
            );
        }
    }
}

#[test]
fn output_comes_out_as_input_goes_in() {
    let data = text();
    let c = compressed("gzip", &data);
    let mut d = Decoder::for_coding("GZip ").unwrap().unwrap();
    let mut seen = 0;
    d.push(&c[..c.len() / 2], |bytes| seen += bytes.len()).unwrap();
    assert!(seen > 0, "half the input already decoded to something");
}

#[test]
fn identity_is_no_decoder_and_unknown_codings_are_refused() {
    assert!(Decoder::for_coding("identity").unwrap().is_none());
    assert!(Decoder::for_coding("").unwrap().is_none());
    for bad in ["compress", "gzip, br", "exi"] {
        assert!(
            matches!(Decoder::for_coding(bad), Err(DecodeError::Unknown(_))),
            "{bad}"
        );
    }
}

#[test]
fn corrupt_bodies_are_errors() {
    let mut d = Decoder::for_coding("gzip").unwrap().unwrap();
    let result = d.push(b"this is not gzip at all, not even close", |_| {});
    assert!(result.is_err() || d.finish().is_err());
}
