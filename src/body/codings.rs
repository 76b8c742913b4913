//! The codings a response body went through on its way from the upstream, read from every header that
//! names one, in any layout: each `Content-Encoding` line and each entry of a list on one line (`gzip, gzip`,
//! `deflate,GZIP`, `identity` entries), the transfer codings an HTTP/1.1 upstream listed before `chunked`
//! (`Transfer-Encoding: gzip, chunked`: hyper undoes only the chunking), and a body that is compressed by
//! its media type (`application/gzip`). Masking undoes them all, last applied first, before it looks.

use http::HeaderMap;
use http::header::{CONTENT_ENCODING, CONTENT_TYPE, TRANSFER_ENCODING};

use crate::body::decode::{DecodeError, Decoder};

/// The most codings one body may be stacked in: a deeper stack multiplies how far a small body expands
/// (each gzip up to about 1000 times) and nothing sends one.
pub(crate) const MAX_STACK: usize = 4;

/// A response body's codings, in the order they were applied (the media type's first, the transfer
/// codings last).
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Codings {
    /// Every coding to undo, in the order applied, each as a canonical name.
    pub(crate) applied: Vec<&'static str>,
    /// The coding the media type itself is compressed in (`application/gzip`): after masking, the body is
    /// compressed in it again, so the sandbox gets the type it was told.
    pub(crate) media: Option<&'static str>,
}

impl Codings {
    /// The codings `headers` declare. An unknown coding, a transfer coding after `chunked`, or a stack
    /// deeper than [`MAX_STACK`] is an error naming the header and the coding.
    pub(crate) fn of(headers: &HeaderMap) -> Result<Codings, DecodeError> {
        let mut applied = Vec::new();
        let media = media_coding(headers);
        applied.extend(media);
        for coding in listed(headers, CONTENT_ENCODING.as_str())? {
            applied.push(canonical(&coding, "Content-Encoding")?);
        }
        let transfer = listed(headers, TRANSFER_ENCODING.as_str())?;
        for (i, coding) in transfer.iter().enumerate() {
            if coding == "chunked" {
                if i + 1 != transfer.len() {
                    return Err(DecodeError::Stack(format!(
                        "Transfer-Encoding lists {:?} after chunked",
                        transfer[i + 1..].join(", ")
                    )));
                }
                // hyper has undone the chunking.
                continue;
            }
            applied.push(canonical(coding, "Transfer-Encoding")?);
        }
        if applied.len() > MAX_STACK {
            return Err(DecodeError::Stack(format!(
                "{} codings stacked ({}); at most {MAX_STACK} are read",
                applied.len(),
                applied.join(", ")
            )));
        }
        Ok(Codings { applied, media })
    }

    /// Whether the body is sent as it arrived.
    pub(crate) fn is_empty(&self) -> bool {
        self.applied.is_empty()
    }

    /// The decoders, in the order the bytes go through them (the last coding applied first).
    pub(crate) fn decoders(&self) -> Result<Vec<Decoder>, DecodeError> {
        self.applied
            .iter()
            .rev()
            .filter_map(|coding| Decoder::for_coding(coding).transpose())
            .collect()
    }
}

/// Every entry of every `name` header, trimmed and lower-cased, `identity` and empty entries left out.
fn listed(headers: &HeaderMap, name: &str) -> Result<Vec<String>, DecodeError> {
    let mut out = Vec::new();
    for value in headers.get_all(name) {
        let text = value.to_str().map_err(|_| {
            DecodeError::Stack(format!(
                "a {name} header is not text: {:?}",
                String::from_utf8_lossy(value.as_bytes())
            ))
        })?;
        out.extend(
            text.split(',')
                .map(|c| c.trim().to_ascii_lowercase())
                .filter(|c| !c.is_empty() && c != "identity"),
        );
    }
    Ok(out)
}

/// The canonical name of a coding cordon can undo; an unknown one is an error naming `header`.
fn canonical(coding: &str, header: &str) -> Result<&'static str, DecodeError> {
    Ok(match coding {
        "gzip" | "x-gzip" => "gzip",
        "deflate" => "deflate",
        "br" => "br",
        "zstd" => "zstd",
        _ => return Err(DecodeError::Unknown(format!("{coding} (in {header})"))),
    })
}

/// The coding a body is compressed in by its media type alone, with no `Content-Encoding`: `gzip` for
/// `application/gzip` and `application/x-gzip`, `deflate` for `application/zlib`, `zstd` for
/// `application/zstd`.
fn media_coding(headers: &HeaderMap) -> Option<&'static str> {
    let value = headers.get(CONTENT_TYPE)?.to_str().ok()?;
    let essence = value.split(';').next()?.trim().to_ascii_lowercase();
    match essence.as_str() {
        "application/gzip" | "application/x-gzip" => Some("gzip"),
        "application/zlib" => Some("deflate"),
        "application/zstd" => Some("zstd"),
        _ => None,
    }
}

#[cfg(test)]
#[path = "codings_tests.rs"]
mod tests;
