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
    /// `deflate` (RFC 9110: zlib-wrapped).
    Deflate(flate2::write::ZlibDecoder<Vec<u8>>),
    /// `br`.
    Brotli(Box<brotli::DecompressorWriter<Vec<u8>>>),
    /// `zstd`.
    Zstd(zstd::stream::write::Decoder<'static, Vec<u8>>),
    /// `aws-chunked` (AWS SDKs' streaming uploads): framing, not compression.
    AwsChunked(super::aws_chunked::AwsChunked),
}

/// Why a body could not be decoded.
#[derive(Debug, thiserror::Error)]
pub(crate) enum DecodeError {
    /// A coding cordon does not know (so it cannot see what the body says).
    #[error("content coding {0:?} is not one cordon can read (gzip, deflate, br, zstd, aws-chunked)")]
    Unknown(String),
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
    /// The decoder for a `Content-Encoding` value; `Ok(None)` for `identity` or no coding. Several codings
    /// (`gzip, br`) are refused: nothing sends them, and undoing them in order is not worth the risk.
    pub(crate) fn for_coding(value: &str) -> Result<Option<Decoder>, DecodeError> {
        let coding = value.trim().to_ascii_lowercase();
        Ok(Some(match coding.as_str() {
            "" | "identity" => return Ok(None),
            "gzip" | "x-gzip" => Decoder::Gzip(flate2::write::MultiGzDecoder::new(Vec::new())),
            "deflate" => Decoder::Deflate(flate2::write::ZlibDecoder::new(Vec::new())),
            "br" => Decoder::Brotli(Box::new(brotli::DecompressorWriter::new(Vec::new(), STEP))),
            "zstd" => Decoder::Zstd(
                zstd::stream::write::Decoder::new(Vec::new())
                    .map_err(|source| DecodeError::Corrupt { coding: "zstd", source })?,
            ),
            "aws-chunked" => Decoder::AwsChunked(super::aws_chunked::AwsChunked::new()),
            _ => return Err(DecodeError::Unknown(coding)),
        }))
    }

    fn name(&self) -> &'static str {
        match self {
            Decoder::Gzip(_) => "gzip",
            Decoder::Deflate(_) => "deflate",
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
        for step in compressed.chunks(STEP) {
            let written = match self {
                Decoder::Gzip(d) => d.write_all(step).and_then(|()| d.flush()),
                Decoder::Deflate(d) => d.write_all(step).and_then(|()| d.flush()),
                Decoder::Brotli(d) => d.write_all(step).and_then(|()| d.flush()),
                Decoder::Zstd(d) => d.write_all(step).and_then(|()| d.flush()),
                Decoder::AwsChunked(_) => Ok(()),
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
            Decoder::Deflate(d) => d.finish().map_err(corrupt),
            Decoder::Brotli(d) => d.into_inner().map_err(|_| corrupt(std::io::Error::other("truncated"))),
            Decoder::Zstd(mut d) => d.flush().map(|()| d.into_inner()).map_err(corrupt),
            Decoder::AwsChunked(d) => d.finish().map_err(framing),
        }
    }

    /// What a decompressor wrote so far (`aws-chunked` hands its bytes on as it reads them).
    fn buffer(&mut self) -> Option<&mut Vec<u8>> {
        Some(match self {
            Decoder::Gzip(d) => d.get_mut(),
            Decoder::Deflate(d) => d.get_mut(),
            Decoder::Brotli(d) => d.get_mut(),
            Decoder::Zstd(d) => d.get_mut(),
            Decoder::AwsChunked(_) => return None,
        })
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
