//! Pure inspection of request heads, chunk-size lines and trailer sections (with `httparse`), so the
//! guard in `mod.rs` only moves bytes and keeps state.

use super::{FramingViolation, MAX_HEADERS};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum BodyFraming {
    None,
    Fixed(u64),
    Chunked,
}

/// The longest request target hyper reads (its `MAX_URI_LEN`).
pub(crate) const MAX_TARGET: usize = (u16::MAX - 1) as usize;

/// A validated request head.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Head {
    pub(super) len: usize,
    pub(super) body: BodyFraming,
    /// `CONNECT`: the bytes after it are tunnel data if hyper upgrades.
    pub(super) tunnel: bool,
    /// An `Upgrade` request: the bytes after it are another protocol if the answer is 101.
    pub(super) upgrade: bool,
}

/// Whether `buf` may hold a complete head: an LF followed by an empty line,
/// ending at or after `scanned` (terminators before it were already seen).
pub(super) fn head_end_hint(buf: &[u8], scanned: usize) -> bool {
    let from = scanned.saturating_sub(2);
    buf.iter()
        .enumerate()
        .skip(from)
        .any(|(i, &b)| b == b'\n' && (buf.get(i + 1) == Some(&b'\n') || buf.get(i + 1..i + 3) == Some(b"\r\n")))
}

pub(super) fn find_lf(buf: &[u8], from: usize) -> Option<usize> {
    buf.get(from..)?.iter().position(|&b| b == b'\n').map(|i| i + from)
}

/// Parses and checks the head at the start of `buf`; `Ok(None)`: incomplete.
pub(super) fn inspect_head(buf: &[u8], max_head: usize) -> Result<Option<Head>, FramingViolation> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut headers);
    let len = match req.parse(buf) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(httparse::Error::TooManyHeaders) => return Err(FramingViolation::HeadTooLarge),
        // SECURITY: obs-fold, CR/NUL in values, space before colon: let nothing
        // malformed reach a parser that might read it differently.
        Err(e) => return Err(FramingViolation::MalformedHead(e.to_string())),
    };
    if len > max_head {
        return Err(FramingViolation::HeadTooLarge);
    }
    // hyper answers a longer target 414 on its own, with no reason; refuse it here, where the answer says why.
    if req.path.map_or(0, str::len) > MAX_TARGET {
        return Err(FramingViolation::UriTooLong);
    }
    let (mut cl_lines, mut cl) = (0_usize, None);
    let (mut te_lines, mut te_chunked) = (0_usize, false);
    let mut upgrade = false;
    for h in req.headers.iter() {
        if h.name.eq_ignore_ascii_case("content-length") {
            cl_lines += 1;
            cl = decimal(h.value);
        } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
            te_lines += 1;
            te_chunked = trim_ows(h.value).eq_ignore_ascii_case(b"chunked");
        } else if h.name.eq_ignore_ascii_case("upgrade") {
            upgrade = true;
        }
    }
    // SECURITY: CL.TE / TE.CL smuggling; hyper would silently drop Content-Length.
    if cl_lines > 0 && te_lines > 0 {
        return Err(FramingViolation::ContentLengthWithTransferEncoding);
    }
    // SECURITY: duplicate Content-Length, which hyper merges when identical.
    if cl_lines > 1 {
        return Err(FramingViolation::DuplicateContentLength);
    }
    // SECURITY: Content-Length values that parsers read differently (`+5`, `5, 5`).
    if cl_lines == 1 && cl.is_none() {
        return Err(FramingViolation::InvalidContentLength);
    }
    // SECURITY: TE in HTTP/1.0, which HTTP/1.0 intermediaries frame by connection close.
    if te_lines > 0 && req.version == Some(0) {
        return Err(FramingViolation::TransferEncodingInHttp10);
    }
    // SECURITY: TE obfuscation (`xchunked`, `chunked, identity`, duplicate lines).
    if te_lines > 1 || (te_lines == 1 && !te_chunked) {
        return Err(FramingViolation::TransferEncodingNotChunked);
    }
    let body = match (te_lines, cl) {
        (1, _) => BodyFraming::Chunked,
        (_, Some(n)) => BodyFraming::Fixed(n),
        _ => BodyFraming::None,
    };
    let tunnel = req.method == Some("CONNECT");
    Ok(Some(Head {
        len,
        body,
        tunnel,
        upgrade,
    }))
}

pub(super) fn trim_ows(mut v: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = v {
        v = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = v {
        v = rest;
    }
    v
}

/// A `Content-Length` value: one or more decimal digits, surrounding OWS allowed.
pub(super) fn decimal(value: &[u8]) -> Option<u64> {
    let digits = trim_ows(value);
    if digits.is_empty() {
        return None;
    }
    digits.iter().try_fold(0_u64, |acc, &b| {
        let digit = b.is_ascii_digit().then(|| u64::from(b - b'0'))?;
        acc.checked_mul(10)?.checked_add(digit)
    })
}

/// The size from one complete chunk-size line (`line` ends with its LF).
pub(super) fn chunk_size(line: &[u8]) -> Result<u64, FramingViolation> {
    // SECURITY: chunk-size lines that httparse accepts but hyper reads
    // differently (empty size, leading whitespace, bare LF line ending).
    if !line.first().is_some_and(u8::is_ascii_hexdigit) || !line.ends_with(b"\r\n") {
        return Err(FramingViolation::MalformedChunk);
    }
    match httparse::parse_chunk_size(line) {
        Ok(httparse::Status::Complete((used, size))) if used == line.len() => Ok(size),
        _ => Err(FramingViolation::MalformedChunk),
    }
}

/// Checks a complete trailer section (ending with its empty line) with httparse.
pub(super) fn validate_trailers(section: &[u8]) -> Result<(), FramingViolation> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    match httparse::parse_headers(section, &mut headers) {
        Ok(httparse::Status::Complete((used, _))) if used == section.len() => Ok(()),
        _ => Err(FramingViolation::MalformedChunk),
    }
}
