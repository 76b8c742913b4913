#![expect(clippy::unwrap_used, reason = "tests")]
use super::*;
use http::HeaderValue;

/// No run-time sandboxes.
struct NoRunTime;

impl RunTime for NoRunTime {
    fn verify(&self, _: &str, _: &str) -> Result<Arc<Sandbox>, AuthFailure> {
        Err(AuthFailure::Invalid)
    }
    fn by_source(&self, _: IpAddr) -> Option<Arc<Sandbox>> {
        None
    }
}

fn id(i: &Identities, h: &HeaderMap, ip: IpAddr) -> Result<Arc<Sandbox>, AuthFailure> {
    identify(i, &NoRunTime, &credentials(h), ip)
}

fn ids() -> Identities {
    Identities::new(&[
        SandboxSpec {
            id: "a".into(),
            user: "alice".into(),
            token_sha256: hex::decode(hash_token("secret-a")).unwrap().try_into().ok(),
            source_cidrs: vec![],
            policy: "p".into(),
        },
        SandboxSpec {
            id: "gw".into(),
            user: "bob".into(),
            token_sha256: None,
            source_cidrs: vec!["10.9.0.0/24".parse().unwrap()],
            policy: "p".into(),
        },
    ])
}

fn basic(s: &str) -> HeaderMap {
    let mut h = HeaderMap::new();
    let v = format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(s));
    h.insert(PROXY_AUTHORIZATION, HeaderValue::from_str(&v).unwrap());
    h
}

const LOCAL: IpAddr = IpAddr::V4(std::net::Ipv4Addr::LOCALHOST);

#[test]
fn good_token_identifies() {
    assert_eq!(id(&ids(), &basic("a:secret-a"), LOCAL).unwrap().user, "alice");
}

#[test]
fn failures() {
    let i = ids();
    assert_eq!(id(&i, &HeaderMap::new(), LOCAL), Err(AuthFailure::Missing));
    assert_eq!(id(&i, &basic("a:wrong"), LOCAL), Err(AuthFailure::Invalid));
    assert_eq!(id(&i, &basic("nobody:secret-a"), LOCAL), Err(AuthFailure::Invalid));
    assert_eq!(id(&i, &basic("a"), LOCAL), Err(AuthFailure::Malformed));
    assert_eq!(id(&i, &basic("a:"), LOCAL), Err(AuthFailure::Malformed));
    // A sandbox with no token cannot be claimed by id.
    assert_eq!(id(&i, &basic("gw:anything"), LOCAL), Err(AuthFailure::Invalid));
    let mut h = HeaderMap::new();
    h.insert(PROXY_AUTHORIZATION, HeaderValue::from_static("Bearer abc"));
    assert_eq!(id(&i, &h, LOCAL), Err(AuthFailure::Malformed));
    h.insert(PROXY_AUTHORIZATION, HeaderValue::from_static("Basic !!!"));
    assert_eq!(id(&i, &h, LOCAL), Err(AuthFailure::Malformed));
}

#[test]
fn two_credentials_are_refused() {
    let mut h = basic("a:secret-a");
    h.append(PROXY_AUTHORIZATION, h.get(PROXY_AUTHORIZATION).unwrap().clone());
    assert_eq!(id(&ids(), &h, LOCAL), Err(AuthFailure::Malformed));
}

#[test]
fn source_address_identifies_without_a_token() {
    let i = ids();
    let gw: IpAddr = "10.9.0.7".parse().unwrap();
    assert_eq!(id(&i, &HeaderMap::new(), gw).unwrap().id, "gw");
    let mapped: IpAddr = "::ffff:10.9.0.7".parse().unwrap();
    assert_eq!(id(&i, &HeaderMap::new(), mapped).unwrap().id, "gw");
    // Wrong explicit credentials are not rescued by the source address.
    assert_eq!(id(&i, &basic("a:wrong"), gw), Err(AuthFailure::Invalid));
}

#[test]
fn ids_that_would_name_a_folder_above_or_a_file_of_cordon_are_not_ids() {
    for bad in [
        "",
        ".",
        "..",
        "...",
        ".lock",
        ".x",
        "a/b",
        "a:b",
        "a b",
        &"x".repeat(65),
    ] {
        assert!(!crate::names::valid_sandbox_id(bad), "{bad:?}");
    }
    for good in ["a", "a..", "sb-1.x_y", &"x".repeat(64)] {
        assert!(crate::names::valid_sandbox_id(good), "{good:?}");
    }
}

#[test]
fn scheme_is_case_insensitive() {
    let mut h = HeaderMap::new();
    let v = format!(
        "bAsIc {}",
        base64::engine::general_purpose::STANDARD.encode("a:secret-a")
    );
    h.insert(PROXY_AUTHORIZATION, HeaderValue::from_str(&v).unwrap());
    assert!(id(&ids(), &h, LOCAL).is_ok());
}

/// Found by the `proxy_auth` fuzz target (`fuzz/`): a no-break space (U+00A0, allowed in a header value as
/// obs-text) before the scheme was trimmed like HTTP whitespace, so `\u{a0}Basic ...` was accepted.
#[test]
fn only_http_whitespace_surrounds_the_credentials() {
    let b64 = base64::engine::general_purpose::STANDARD.encode("a:secret-a");
    for ok in [format!(" Basic {b64}\t"), format!("Basic  \t{b64}")] {
        assert_eq!(
            parse_basic(ok.as_bytes()),
            Some(("a".into(), "secret-a".into())),
            "{ok:?}"
        );
    }
    for bad in [
        format!("\u{a0}Basic {b64}"),
        format!("Basic {b64}\u{a0}"),
        format!("Basic \u{3000}{b64}"),
    ] {
        assert_eq!(parse_basic(bad.as_bytes()), None, "{bad:?}");
    }
}

#[test]
fn an_incarnation_is_the_id_with_its_nonce_or_its_user() {
    let sandbox = |user: &str, origin: Origin| Sandbox::new("x".into(), user.to_string(), "p".to_string(), origin);
    let api = |nonce: &str| Origin::Api {
        nonce: nonce.to_string(),
        expires: 0,
    };
    assert_eq!(sandbox("u1", api("n1")).incarnation(), "x#n1");
    assert_eq!(sandbox("u1", Origin::Config).incarnation(), "x@u1");
    // The same id created again (another nonce) or declared for another user is another incarnation; its
    // renewal (another expiry) or another policy is the same one.
    let all = [
        sandbox("u1", api("n1")).incarnation().to_string(),
        sandbox("u1", api("n2")).incarnation().to_string(),
        sandbox("u1", Origin::Config).incarnation().to_string(),
        sandbox("u2", Origin::Config).incarnation().to_string(),
    ];
    let distinct: std::collections::HashSet<&String> = all.iter().collect();
    assert_eq!(distinct.len(), all.len());
    let renewed = Sandbox::new(
        "x".into(),
        "u1".to_string(),
        "other".to_string(),
        Origin::Api {
            nonce: "n1".to_string(),
            expires: 99,
        },
    );
    assert_eq!(renewed.incarnation(), "x#n1");
}
