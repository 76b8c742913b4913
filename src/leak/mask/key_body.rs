//! The answer to a request signed with AWS keys (or to a GitHub or OAuth2 minting call), on its way to the
//! sandbox: its body through [`KeyMask`] (decompressed first when the upstream compressed it), so that no key
//! material or token reaches the sandbox.

use std::collections::VecDeque;

use bytes::Bytes;
use http::HeaderMap;
use http::header::{CONTENT_ENCODING, CONTENT_LENGTH, CONTENT_TYPE};
use http_body::Body as _;
use http_body::Frame;
use http_body_util::BodyExt;

use crate::body::decode::Decoder;
use crate::body::{BoxError, Filter, Filtered, ProxyBody};
use crate::leak::mask::key_mask::{Fields, KeyMask, available};

/// Content types that carry no key material in fields (media), or that masking would corrupt (AWS event
/// streams: binary frames with checksums, e.g. Bedrock's streamed answers).
const PASSED: [&str; 4] = ["image/", "audio/", "video/", "application/vnd.amazon.eventstream"];

/// Masking key material as a body [`Filter`].
struct Keys {
    decoder: Option<Decoder>,
    mask: KeyMask,
}

fn push(mask: &mut KeyMask, data: &[u8], out: &mut VecDeque<Frame<Bytes>>) {
    let masked = mask.push(data);
    if !masked.is_empty() {
        out.push_back(Frame::data(Bytes::from(masked)));
    }
}

impl Filter for Keys {
    fn data(&mut self, data: Bytes, out: &mut VecDeque<Frame<Bytes>>) -> Result<(), BoxError> {
        match &mut self.decoder {
            Some(decoder) => {
                let mask = &mut self.mask;
                decoder.push(&data, |decoded| push(mask, &decoded, out))?;
            }
            None => push(&mut self.mask, &data, out),
        }
        Ok(())
    }

    fn end(&mut self, out: &mut VecDeque<Frame<Bytes>>) -> Result<(), BoxError> {
        if let Some(decoder) = self.decoder.take() {
            let rest = decoder.finish()?;
            push(&mut self.mask, &rest, out);
        }
        let rest = self.mask.finish();
        if !rest.is_empty() {
            out.push_back(Frame::data(Bytes::from(rest)));
        }
        Ok(())
    }
}

/// The body of an answer with `headers` to a request signed with AWS keys, its key material masked; the
/// headers lose their coding and length (the body is decoded and may change length). An answer in a coding
/// cordon cannot read is an error: it cannot be masked, so it is not passed on.
pub(crate) fn mask_aws_keys(headers: &mut HeaderMap, body: ProxyBody) -> Result<ProxyBody, String> {
    mask_fields(headers, body, Fields::Aws)
}

/// The body of an answer with `headers` to a GitHub or OAuth2 minting call cordon let through, its tokens
/// masked ([`Fields::Tokens`]), as [`mask_aws_keys`] masks AWS keys.
pub(crate) fn mask_tokens(headers: &mut HeaderMap, body: ProxyBody) -> Result<ProxyBody, String> {
    mask_fields(headers, body, Fields::Tokens)
}

fn mask_fields(headers: &mut HeaderMap, body: ProxyBody, fields: Fields) -> Result<ProxyBody, String> {
    let media = headers
        .get(CONTENT_TYPE)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).trim().to_ascii_lowercase())
        .unwrap_or_default();
    // An empty body (a HEAD's answer) keeps its headers: its Content-Length is the object's.
    if body.is_end_stream() || PASSED.iter().any(|p| media.starts_with(p)) || !available(fields) {
        return Ok(body);
    }
    let decoder = match headers.get(CONTENT_ENCODING) {
        None => None,
        Some(coding) => Decoder::for_coding(&String::from_utf8_lossy(coding.as_bytes())).map_err(|e| e.to_string())?,
    };
    headers.remove(CONTENT_ENCODING);
    headers.remove(CONTENT_LENGTH);
    Ok(Filtered::with(
        body,
        Keys {
            decoder,
            mask: KeyMask::of(fields),
        },
    )
    .boxed_unsync())
}
