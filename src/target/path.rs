//! Request paths: refused when a dot-segment, raw or percent-encoded, could make two parsers disagree on
//! which path the upstream serves.

use super::error::TargetError;

/// Validate a request path (origin-form path, no query) for policy matching.
///
/// Rejects what an upstream could read as a different path than the policy
/// matcher does: `.`/`..` segments (also percent-encoded, also hidden behind
/// `;params` or an encoded `%2F`), backslashes, NUL, malformed escapes, and a
/// `?` or `#` (which mean the caller passed more than the path). `%2F` itself
/// is allowed and stays literal (GitLab uses it in project paths).
///
/// SECURITY: a rule allowing `/public/**` must not be reachable with
/// `/public/../admin` or `/public/%2e%2e/admin`.
pub(crate) fn check_path(path: &str) -> Result<(), TargetError> {
    // `*` (OPTIONS) and relative paths have no place under a path rule.
    let rest = path.strip_prefix('/').ok_or(TargetError::RelativePath)?;
    // A query or fragment would be matched as if it were path segments.
    if rest.contains(['?', '#']) {
        return Err(TargetError::BadPath);
    }
    rest.split('/').try_for_each(check_segment)
}

/// Check one `/`-separated path segment.
fn check_segment(segment: &str) -> Result<(), TargetError> {
    let decoded = percent_decode(segment)?;
    // SECURITY: some servers treat `\` (or `%5c`) as `/`, turning `..\` into
    // a traversal, and NUL (or `%00`) truncates paths in C-based upstreams.
    if decoded.iter().any(|&b| b == b'\\' || b == 0) {
        return Err(TargetError::BadPath);
    }
    // SECURITY: upstreams that decode `%2F` before normalising see
    // `..%2fadmin` as `../admin`, and Tomcat strips `;params` so `..;x` is
    // `..`; check every piece such an upstream would see.
    for piece in decoded.split(|&b| b == b'/') {
        let name = piece.split(|&b| b == b';').next().unwrap_or(piece);
        if name == b"." || name == b".." {
            return Err(TargetError::DotSegment);
        }
    }
    Ok(())
}

/// Decode `%XX` escapes once; a `%` not followed by two hex digits is an error.
fn percent_decode(text: &str) -> Result<Vec<u8>, TargetError> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            // SECURITY: upstreams disagree on what `%2` or `%%2e` mean; refuse
            // to guess.
            let hi = bytes.get(i + 1).and_then(|&b| hex_value(b));
            let lo = bytes.get(i + 2).and_then(|&b| hex_value(b));
            match (hi, lo) {
                (Some(hi), Some(lo)) => out.push((hi << 4) | lo),
                _ => return Err(TargetError::BadEscape),
            }
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    Ok(out)
}

/// The value of one hex digit, either case.
fn hex_value(b: u8) -> Option<u8> {
    // `to_digit(16)` returns at most 15, so the narrowing cannot lose bits.
    char::from(b).to_digit(16).and_then(|d| u8::try_from(d).ok())
}
