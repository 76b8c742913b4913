#![expect(clippy::unwrap_used, reason = "tests")]

use http::header::CONTENT_TYPE;

use super::*;
use crate::leak::scan::views::Readings;

fn parts(method: &str, uri: &str) -> Parts {
    http::Request::builder()
        .method(method)
        .uri(uri)
        .body(())
        .unwrap()
        .into_parts()
        .0
}

fn github(method: &str, path: &str) -> Vec<&'static str> {
    github_calls(&parts(method, path)).iter().map(|m| m.name).collect()
}

#[test]
fn every_github_minting_call_is_found_in_every_spelling() {
    let rows = MINTING.iter().filter(|m| m.kind == MintingKind::GitHub);
    for m in rows {
        let (method, pattern) = m.rest.unwrap();
        let path = pattern.replace('*', "Octo-Org");
        let upper: String = path.to_ascii_uppercase();
        let encoded = path.replacen('/', "/%2F", 0).replace('s', "%73");
        for (method, spelt) in [
            (method.to_string(), path.clone()),
            (method.to_ascii_lowercase(), path.clone()),
            (method.to_string(), upper),
            (method.to_string(), encoded),
            (method.to_string(), format!("{path}/")),
            (method.to_string(), format!("/{path}")),
            (method.to_string(), path.replace('/', "//")),
            (method.to_string(), format!("/api/v3{path}")),
            (method.to_string(), format!("/API/V3/{path}/")),
            (method.to_string(), format!("/x/..{path}")),
            (method.to_string(), format!("/./{path}")),
        ] {
            assert!(
                github(&method, &spelt).contains(&m.name),
                "{method} {spelt}: {}",
                m.name
            );
        }
    }
}

#[test]
fn what_github_does_not_mint_is_no_minting_call() {
    for (method, path) in [
        ("GET", "/repos/o/r/keys"),
        ("DELETE", "/repos/o/r/keys/1"),
        ("GET", "/user/keys"),
        ("GET", "/app/installations/1"),
        ("POST", "/repos/o/r/issues"),
        ("POST", "/repos/o/r/keys/extra"),
        ("POST", "/repo/o/r/keys"),
        ("GET", "/orgs/o/actions/runners"),
        ("DELETE", "/applications/c/token"),
        ("POST", "/api/v4/user/keys"),
        ("POST", "/graphql"),
    ] {
        assert!(github(method, path).is_empty(), "{method} {path}");
    }
}

fn oauth2(method: &str, uri: &str, body: &str) -> Vec<&'static str> {
    let media = if body.starts_with('{') {
        "application/json"
    } else {
        "application/x-www-form-urlencoded"
    };
    let mut parts = parts(method, uri);
    parts.headers.insert(CONTENT_TYPE, media.parse().unwrap());
    let grants = crate::inject::token_request::grants(&parts, Some(&Readings::of(body.to_string().into()))).unwrap();
    oauth2_calls(&parts, &grants).iter().map(|m| m.name).collect()
}

#[test]
fn every_grant_is_found_in_a_form_a_query_and_json() {
    let rows = MINTING
        .iter()
        .filter(|m| m.kind == MintingKind::OAuth2 && m.grant.is_some());
    for m in rows {
        let grant = m.grant.unwrap().replace('*', "urn:example:grant");
        let enc: String = form_urlencoded::byte_serialize(grant.as_bytes()).collect();
        let pct: String = grant.bytes().map(|b| format!("%{b:02X}")).collect();
        for (uri, body) in [
            ("/token".to_string(), format!("grant_type={grant}")),
            ("/token".to_string(), format!("client_id=a&grant_type={enc}&scope=x")),
            ("/token".to_string(), format!("grant_type={pct}")),
            (
                "/token".to_string(),
                format!("grant_type={}", grant.to_ascii_uppercase()),
            ),
            (format!("/token?grant_type={enc}"), String::new()),
            ("/token".to_string(), format!(r#"{{"grant_type": "{grant}"}}"#)),
            (
                "/token".to_string(),
                format!(r#"{{"scope": "a", "grant\u005Ftype": "{grant}"}}"#),
            ),
        ] {
            assert!(
                oauth2("POST", &uri, &body).contains(&m.name),
                "{uri} {body}: {}",
                m.name
            );
        }
    }
    assert_eq!(oauth2("POST", "/t", "grant_type="), ["oauth2:other_grants"]);
}

#[test]
fn device_authorization_endpoints_are_known_by_their_paths() {
    for path in [
        "/device_authorization",
        "/oauth/device/code",
        "/login/device/code/",
        "/common/oauth2/v2.0/devicecode",
        "/oauth2/default/v1/device/authorize",
        "/realms/r/protocol/openid-connect/auth/device",
        "/OAuth/Device/Code",
        "/oauth/device%2Fcode",
    ] {
        assert_eq!(
            oauth2("POST", path, "client_id=a"),
            ["oauth2:device_authorization"],
            "{path}"
        );
    }
    assert!(oauth2("GET", "/oauth/device/code", "").is_empty());
    assert!(oauth2("POST", "/oauth/device/codes", "").is_empty());
}

#[test]
fn requests_without_a_grant_mint_nothing() {
    for body in [
        "",
        "client_id=a&scope=b",
        r#"{"title": "grant_type=password"}"#,
        "not json, not a form: grant_typeX=1",
    ] {
        assert!(oauth2("POST", "/v1/chat", body).is_empty(), "{body}");
    }
}
