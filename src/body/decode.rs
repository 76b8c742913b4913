//! Content codings undone as the bytes arrive (gzip, deflate, br, zstd), so that what is masked or scanned
//! is what the receiver will read, not its compressed bytes. Push-based: each chunk in, whatever it
//! decompressed to out, with no buffering of the whole body.

use std::io::Write;

/// How much compressed input is fed at once: bounds what one step can expand to (a bomb grows in pieces).
const STEP: usize = 4 * 1024;

/// One content coding's decoder.
pub(crate) enum Decoder {
    /// `gzip`, `x-gzip`.
    Gzip(flate2::write::MultiGzDecoder<Vec<u8>>),
    /// `deflate`: zlib-wrapped as RFC 9110 says, or raw DEFLATE as some servers send it (told apart by the
    /// zlib header, as browsers do); the first bytes are held until they show which.
    Deflate(Vec<u8>),
    /// `deflate` with the zlib wrapper.
    Zlib(flate2::write::ZlibDecoder<Vec<u8>>),
    /// `deflate` without it.
    RawDeflate(flate2::write::DeflateDecoder<Vec<u8>>),
    /// `br`.
    Brotli(Box<brotli::DecompressorWriter<Vec<u8>>>),
    /// `zstd`.
    Zstd(zstd::stream::write::Decoder<'static, Vec<u8>>),
    /// `aws-chunked` (AWS SDKs' streaming uploads): framing, not compression.
    AwsChunked(crate::body::aws_chunked::AwsChunked),
}

/// Why a body could not be decoded.
#[derive(Debug, thiserror::Error)]
pub(crate) enum DecodeError {
    /// A coding cordon does not know (so it cannot see what the body says).
    #[error("content coding {0:?} is not one cordon can read (gzip, deflate, br, zstd, aws-chunked)")]
    Unknown(String),
    /// The codings a response declares cannot be undone in order (see [`crate::body::codings`]).
    #[error("{0}")]
    Stack(String),
    /// The bytes are not what the coding says.
    #[error("the {coding} body is corrupt: {source}")]
    Corrupt {
        /// The coding.
        coding: &'static str,
        /// What the decoder said.
        source: std::io::Error,
    },
}

impl Decoder {
    /// The decoder for one coding (a `Content-Encoding` value naming one); `Ok(None)` for `identity` or no
    /// coding. A list (`gzip, br`) is refused here: a response's stack of codings is read by
    /// [`crate::body::codings::Codings`].
    pub(crate) fn for_coding(value: &str) -> Result<Option<Decoder>, DecodeError> {
        let coding = value.trim().to_ascii_lowercase();
        Ok(Some(match coding.as_str() {
            "" | "identity" => return Ok(None),
            "gzip" | "x-gzip" => Decoder::Gzip(flate2::write::MultiGzDecoder::new(Vec::new())),
            "deflate" => Decoder::Deflate(Vec::new()),
            "br" => Decoder::Brotli(Box::new(brotli::DecompressorWriter::new(Vec::new(), STEP))),
            "zstd" => Decoder::Zstd(
                zstd::stream::write::Decoder::new(Vec::new())
                    .map_err(|source| DecodeError::Corrupt { coding: "zstd", source })?,
            ),
            "aws-chunked" => Decoder::AwsChunked(crate::body::aws_chunked::AwsChunked::new()),
            _ => return Err(DecodeError::Unknown(coding)),
        }))
    }

    fn name(&self) -> &'static str {
        match self {
            Decoder::Gzip(_) => "gzip",
            Decoder::Deflate(_) | Decoder::Zlib(_) | Decoder::RawDeflate(_) => "deflate",
            Decoder::Brotli(_) => "br",
            Decoder::Zstd(_) => "zstd",
            Decoder::AwsChunked(_) => "aws-chunked",
        }
    }

    /// Feed compressed bytes; returns what they decompressed to so far, in pieces.
    pub(crate) fn push(&mut self, compressed: &[u8], mut out: impl FnMut(Vec<u8>)) -> Result<(), DecodeError> {
        if let Decoder::AwsChunked(d) = self {
            return d.push(compressed, out).map_err(framing);
        }
        if let Decoder::Deflate(head) = self {
            head.extend_from_slice(compressed);
            if head.len() < 2 {
                return Ok(());
            }
            let head = std::mem::take(head);
            *self = if zlib_header(&head) {
                Decoder::Zlib(flate2::write::ZlibDecoder::new(Vec::new()))
            } else {
                Decoder::RawDeflate(flate2::write::DeflateDecoder::new(Vec::new()))
            };
            return self.push(&head, out);
        }
        for step in compressed.chunks(STEP) {
            let written = match self {
                Decoder::Gzip(d) => d.write_all(step).and_then(|()| d.flush()),
                Decoder::Zlib(d) => d.write_all(step).and_then(|()| d.flush()),
                Decoder::RawDeflate(d) => d.write_all(step).and_then(|()| d.flush()),
                Decoder::Brotli(d) => d.write_all(step).and_then(|()| d.flush()),
                Decoder::Zstd(d) => d.write_all(step).and_then(|()| d.flush()),
                Decoder::AwsChunked(_) | Decoder::Deflate(_) => Ok(()),
            };
            written.map_err(|source| DecodeError::Corrupt {
                coding: self.name(),
                source,
            })?;
            let decoded = self.buffer().map(std::mem::take).unwrap_or_default();
            if !decoded.is_empty() {
                out(decoded);
            }
        }
        Ok(())
    }

    /// The end of the body: whatever the decoder still held.
    pub(crate) fn finish(self) -> Result<Vec<u8>, DecodeError> {
        let name = self.name();
        let corrupt = |source| DecodeError::Corrupt { coding: name, source };
        match self {
            Decoder::Gzip(d) => d.finish().map_err(corrupt),
            Decoder::Deflate(head) if head.is_empty() => Ok(Vec::new()),
            Decoder::Deflate(_) => Err(corrupt(std::io::Error::other("truncated"))),
            Decoder::Zlib(d) => d.finish().map_err(corrupt),
            Decoder::RawDeflate(d) => d.finish().map_err(corrupt),
            Decoder::Brotli(d) => d.into_inner().map_err(|_| corrupt(std::io::Error::other("truncated"))),
            Decoder::Zstd(mut d) => d.flush().map(|()| d.into_inner()).map_err(corrupt),
            Decoder::AwsChunked(d) => d.finish().map_err(framing),
        }
    }

    /// What a decompressor wrote so far (`aws-chunked` hands its bytes on as it reads them).
    fn buffer(&mut self) -> Option<&mut Vec<u8>> {
        Some(match self {
            Decoder::Gzip(d) => d.get_mut(),
            Decoder::Zlib(d) => d.get_mut(),
            Decoder::RawDeflate(d) => d.get_mut(),
            Decoder::Brotli(d) => d.get_mut(),
            Decoder::Zstd(d) => d.get_mut(),
            Decoder::AwsChunked(_) | Decoder::Deflate(_) => return None,
        })
    }
}

/// Whether two bytes open a zlib stream (RFC 1950: method 8, a window of at most 32 KiB, a header that is a
/// multiple of 31); raw DEFLATE rarely does, and if it does the body fails to decode (refused, not passed).
fn zlib_header(head: &[u8]) -> bool {
    match head {
        [cmf, flg, ..] => cmf & 0x0f == 8 && cmf >> 4 <= 7 && (u16::from(*cmf) << 8 | u16::from(*flg)) % 31 == 0,
        _ => false,
    }
}

/// An `aws-chunked` framing error as a decoding error.
fn framing(detail: String) -> DecodeError {
    DecodeError::Corrupt {
        coding: "aws-chunked",
        source: std::io::Error::other(detail),
    }
}

#[cfg(test)]
#[path = "decode_tests.rs"]
mod tests;
