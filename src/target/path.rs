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
    // SECURITY: upstreams disagree on what `%2` or `%%2e` mean; refuse to guess (the crate's decoder keeps
    // such a `%` as it is, which is one of the guesses).
    let escapes_whole = bytes.iter().enumerate().filter(|(_, b)| **b == b'%').all(|(i, _)| {
        bytes
            .get(i + 1..i + 3)
            .is_some_and(|d| d.iter().all(u8::is_ascii_hexdigit))
    });
    if !escapes_whole {
        return Err(TargetError::BadEscape);
    }
    Ok(percent_encoding::percent_decode(bytes).collect())
}
