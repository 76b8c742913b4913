//! Target parsing (`src/target/`) on arbitrary text: absolute-form URIs, CONNECT targets (as a URI and as
//! authority text), `Host` / `:authority` values, and request paths.
//!
//! Checks that no parser panics, and that whatever is accepted:
//! - round-trips: its printed `host:port` parses back (authority form) to the same target, and the `Host`
//!   value cordon writes for it parses back (as a `Host` value, and inside `http://.../`) to the same target;
//! - is normalised: a name is lowercase ASCII, without trailing dot, of at most 253 characters in labels of
//!   1 to 63 of `[a-z0-9_-]`, and is no IPv4 literal; the port is never 0;
//! - reads the same through every entry: a `Host` value accepted alone names the same target inside
//!   `http://<value>/`, and an authority-form target is the same target as that text read as a `Host` value;
//! - for paths: an accepted path starts with `/` and has no `?`, `#`, backslash, NUL, or `.`/`..` segment,
//!   plain or percent-encoded (decoded once), also before a `;` or between encoded slashes.
#![no_main]

use cordon::fuzzing::{
    Target, target_absolute, target_authority, target_connect, target_host, target_host_header, target_name,
    target_path,
};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(t) = target_host(data, 80) {
        accepted(&t, 80);
    }
    if let Ok(t) = target_host(data, 443) {
        accepted(&t, 443);
    }
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Some(Ok(t)) = target_absolute(text) {
        accepted(&t, 80);
    }
    if let Some(Ok(t)) = target_connect(text) {
        accepted(&t, 443);
        assert_eq!(target_authority(text), Ok(t.clone()), "CONNECT URI vs authority text");
    }
    if let Ok(t) = target_authority(text) {
        accepted(&t, 443);
        assert_eq!(target_host(data, 1), Ok(t), "authority form vs Host value");
    }
    if let Ok(t) = target_host(data, 80) {
        let uri = format!("http://{text}/");
        assert_eq!(target_absolute(&uri), Some(Ok(t)), "Host value vs {uri:?}");
    }
    if target_path(text).is_ok() {
        path_accepted(text);
    }
});

/// What every accepted target must satisfy.
fn accepted(t: &Target, default_port: u16) {
    let printed = t.to_string();
    assert_eq!(
        target_authority(&printed).as_ref(),
        Ok(t),
        "{printed:?} does not parse back"
    );
    let host = target_host_header(t, default_port);
    assert_eq!(
        target_host(host.as_bytes(), default_port).as_ref(),
        Ok(t),
        "Host {host:?} does not parse back"
    );
    if default_port == 80 {
        let uri = format!("http://{host}/");
        assert_eq!(
            target_absolute(&uri),
            Some(Ok(t.clone())),
            "{uri:?} does not parse back"
        );
    }
    assert!(!printed.ends_with(":0"), "port 0 in {printed:?}");
    if let Some(name) = target_name(t) {
        assert!(name.len() <= 253, "name longer than 253: {name:?}");
        assert!(
            name.parse::<std::net::Ipv4Addr>().is_err(),
            "IPv4 literal as a name: {name:?}"
        );
        for label in name.split('.') {
            assert!((1..=63).contains(&label.len()), "label {label:?} in {name:?}");
            assert!(
                label
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-'),
                "label {label:?} in {name:?}"
            );
        }
    }
}

/// What every accepted path must satisfy.
fn path_accepted(path: &str) {
    assert!(path.starts_with('/'), "relative path {path:?} accepted");
    assert!(!path.contains(['?', '#', '\\', '\0']), "path {path:?} accepted");
    for segment in path.split('/') {
        // Decoded once, as an upstream reads it (`%252e` is the text `%2e` there, not a dot); an upstream that
        // decodes `%2F` before normalising sees each piece between slashes, one that strips `;params` the part
        // before the `;`.
        let decoded = percent_decode(segment.as_bytes());
        for piece in decoded.split(|&b| b == b'/') {
            let bare = piece.split(|&b| b == b';').next().unwrap_or(&[]);
            assert!(
                bare != b"." && bare != b"..",
                "dot segment {segment:?} in accepted path {path:?}"
            );
        }
        assert!(
            !decoded.contains(&b'\\') && !decoded.contains(&0),
            "{segment:?} in accepted path {path:?}"
        );
    }
}

/// `%XX` decoded once (other bytes, bad escapes included, kept).
fn percent_decode(s: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len());
    let mut i = 0;
    while i < s.len() {
        if s[i] == b'%'
            && let Some(&[hi, lo]) = s.get(i + 1..i + 3)
            && hi.is_ascii_hexdigit()
            && lo.is_ascii_hexdigit()
        {
            out.push(u8::from_str_radix(std::str::from_utf8(&[hi, lo]).unwrap(), 16).unwrap());
            i += 3;
        } else {
            out.push(s[i]);
            i += 1;
        }
    }
    out
}
