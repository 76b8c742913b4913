//! Masking what surrounds a response body on its way to a sandbox: the status line's reason phrase, header
//! names and values, and trailers. Values and the reason phrase are masked like body text; a header whose
//! *name* holds a form of a secret (ASCII case ignored: names arrive lower-cased) is dropped, since a name
//! cannot sensibly carry a placeholder.

use http::response::Parts;
use http::{HeaderMap, HeaderName};
use hyper::ext::ReasonPhrase;

use crate::leak::mask::masker::Masker;

/// Mask a response head: its reason phrase (which hyper keeps, and writes back to an HTTP/1.1 sandbox, only
/// when it is not the canonical one) and its headers.
pub(crate) fn mask_head(masker: &Masker, parts: &mut Parts) {
    if let Some(reason) = parts.extensions.get::<ReasonPhrase>()
        && let Some(masked) = masker.mask(reason.as_bytes())
    {
        // SECURITY: the upstream's own reason phrase is written to the sandbox as it came.
        match ReasonPhrase::try_from(masked) {
            Ok(masked) => {
                parts.extensions.insert(masked);
            }
            Err(_) => {
                parts.extensions.remove::<ReasonPhrase>();
            }
        }
    }
    mask_fields(masker, &mut parts.headers);
}

/// Mask header fields (a head's or trailers): a field whose name holds a secret is dropped, every value is
/// masked.
pub(crate) fn mask_fields(masker: &Masker, headers: &mut HeaderMap) {
    let leaking: Vec<HeaderName> = headers
        .keys()
        .filter(|name| masker.holds(name.as_str().as_bytes()))
        .cloned()
        .collect();
    if !leaking.is_empty() {
        tracing::warn!(
            fields = leaking.len(),
            "dropped response header fields whose names hold a secret"
        );
    }
    for name in leaking {
        // SECURITY: a header name cannot be masked with a placeholder in place: the field is dropped.
        headers.remove(name);
    }
    masker.mask_headers(headers);
}

#[cfg(test)]
#[path = "envelope_tests.rs"]
mod tests;
