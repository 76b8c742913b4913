//! Compressing a masked body again, for a body compressed by its media type (`application/gzip`): the
//! sandbox gets what its type says, with the secrets inside masked. Flushed at every piece, so a stream
//! still streams.

use std::io::Write;

/// One coding's encoder.
pub(crate) enum Encoder {
    /// `gzip`.
    Gzip(flate2::write::GzEncoder<Vec<u8>>),
    /// `deflate`, zlib-wrapped.
    Zlib(flate2::write::ZlibEncoder<Vec<u8>>),
    /// `zstd`.
    Zstd(zstd::stream::write::Encoder<'static, Vec<u8>>),
}

impl Encoder {
    /// The encoder for a canonical coding name ([`crate::body::codings::Codings::media`]).
    pub(crate) fn for_coding(coding: &str) -> std::io::Result<Encoder> {
        let level = flate2::Compression::default();
        Ok(match coding {
            "gzip" => Encoder::Gzip(flate2::write::GzEncoder::new(Vec::new(), level)),
            "deflate" => Encoder::Zlib(flate2::write::ZlibEncoder::new(Vec::new(), level)),
            "zstd" => Encoder::Zstd(zstd::stream::write::Encoder::new(Vec::new(), 3)?),
            other => return Err(std::io::Error::other(format!("cordon cannot compress in {other}"))),
        })
    }

    /// Compress `data`; returns what is ready (everything so far, flushed).
    pub(crate) fn push(&mut self, data: &[u8]) -> std::io::Result<Vec<u8>> {
        match self {
            Encoder::Gzip(e) => e.write_all(data).and_then(|()| e.flush())?,
            Encoder::Zlib(e) => e.write_all(data).and_then(|()| e.flush())?,
            Encoder::Zstd(e) => e.write_all(data).and_then(|()| e.flush())?,
        }
        Ok(std::mem::take(match self {
            Encoder::Gzip(e) => e.get_mut(),
            Encoder::Zlib(e) => e.get_mut(),
            Encoder::Zstd(e) => e.get_mut(),
        }))
    }

    /// The end of the body: what the encoder still holds, and the coding's trailer.
    pub(crate) fn finish(self) -> std::io::Result<Vec<u8>> {
        match self {
            Encoder::Gzip(e) => e.finish(),
            Encoder::Zlib(e) => e.finish(),
            Encoder::Zstd(e) => e.finish(),
        }
    }
}
