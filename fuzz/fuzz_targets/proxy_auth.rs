//! The `Proxy-Authorization` parser (`src/identity/`) on arbitrary header values.
//!
//! Checks that reading the header and identifying the sender never panic, and that:
//! - an accepted value is `Basic` (any case), spaces, and the canonical standard base64 of `id:token`, with
//!   optional spaces or tabs around: id and token as returned, both non-empty, the id without a `:`;
//! - identification among one declared sandbox (`fuzz`, token `fuzz-token`) succeeds exactly for those
//!   credentials, and a value that does not parse is refused as malformed.
#![no_main]

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use cordon::fuzzing::{AuthFailure, FUZZ_SANDBOX, proxy_authorization, proxy_identify};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some(read) = proxy_authorization(data) else {
        assert!(proxy_identify(data).is_none());
        return;
    };
    let who = proxy_identify(data).expect("a header value for one is a header value for the other");
    match read {
        Ok(Some((id, token))) => {
            assert!(
                !id.is_empty() && !token.is_empty() && !id.contains(':'),
                "{id:?} {token:?}"
            );
            let text = std::str::from_utf8(data).expect("accepted value is UTF-8");
            let text = text.trim_matches([' ', '\t']);
            let (scheme, rest) = text.split_once(' ').expect("scheme and credentials");
            assert!(scheme.eq_ignore_ascii_case("basic"), "scheme {scheme:?} accepted");
            assert_eq!(
                rest.trim_matches([' ', '\t']),
                STANDARD.encode(format!("{id}:{token}")),
                "accepted credentials are not the canonical base64 of id:token"
            );
            if (id.as_str(), token.as_str()) == FUZZ_SANDBOX {
                assert_eq!(who, Ok(FUZZ_SANDBOX.0.to_string()));
            } else {
                assert!(who.is_err(), "{id:?}:{token:?} identified as {who:?}");
            }
        }
        Ok(None) => panic!("a Proxy-Authorization header was read as none"),
        Err(failure) => {
            assert_eq!(failure, AuthFailure::Malformed);
            assert_eq!(who, Err(AuthFailure::Malformed));
        }
    }
});
