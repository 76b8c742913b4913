#![expect(clippy::unwrap_used, reason = "tests")]

use super::*;

fn decode(pieces: &[&[u8]]) -> Result<Vec<u8>, String> {
    let mut d = AwsChunked::new();
    let mut out = Vec::new();
    for p in pieces {
        d.push(p, |v| out.extend(v))?;
    }
    out.extend(d.finish()?);
    Ok(out)
}

#[test]
fn unsigned_trailer_bodies_decode_to_their_data_and_trailers() {
    let body = b"5\r\nhello\r\n6\r\n world\r\n0\r\nx-amz-checksum-crc32:AAAAAA==\r\n\r\n";
    let want = b"hello worldx-amz-checksum-crc32:AAAAAA==\r\n".to_vec();
    assert_eq!(decode(&[body]).unwrap(), want);
    // Byte by byte, the same.
    let bytes: Vec<&[u8]> = body.chunks(1).collect();
    assert_eq!(decode(&bytes).unwrap(), want);
}

#[test]
fn signed_chunk_extensions_are_framing_not_data() {
    let body = b"3;chunk-signature=abcd\r\nabc\r\n0;chunk-signature=ef01\r\n\r\n";
    assert_eq!(decode(&[body]).unwrap(), b"abc");
}

#[test]
fn a_secret_split_across_chunks_is_whole_in_the_decoded_bytes() {
    let body = b"4\r\nsecr\r\n2\r\net\r\n0\r\n\r\n";
    assert_eq!(decode(&[body]).unwrap(), b"secret");
}

#[test]
fn broken_framing_is_refused() {
    assert!(decode(&[b"zz\r\nabc\r\n0\r\n\r\n"]).is_err(), "a size that is not hex");
    assert!(
        decode(&[b"2\r\nabc\r\n0\r\n\r\n"]).is_err(),
        "a chunk longer than its size"
    );
    assert!(decode(&[b"3\r\nabc\r\n"]).is_err(), "no last chunk");
    assert!(decode(&[b"0\r\n\r\nmore"]).is_err(), "bytes after the end");
    assert!(decode(&[&[b'1'; 5000][..]]).is_err(), "an endless size line");
}
