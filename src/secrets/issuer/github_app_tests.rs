#![expect(clippy::unwrap_used, reason = "tests")]

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use jsonwebtoken::{DecodingKey, Validation};
use serde_json::json as j;

use super::*;
use crate::secrets::issuer::test_server::{json, serve};

/// An RSA key pair made now with openssl: (private PEM, public PEM). `pkcs8` picks the private key format.
fn key_pair(pkcs8: bool) -> (String, String) {
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("key.pem");
    let mut genrsa = std::process::Command::new("openssl");
    genrsa.arg("genrsa");
    if !pkcs8 {
        genrsa.arg("-traditional");
    }
    let status = genrsa
        .arg("-out")
        .arg(&key)
        .arg("2048")
        .stderr(std::process::Stdio::null())
        .status();
    assert!(status.unwrap().success(), "openssl genrsa failed");
    let public = dir.path().join("pub.pem");
    let status = std::process::Command::new("openssl")
        .args(["rsa", "-pubout", "-in"])
        .arg(&key)
        .arg("-out")
        .arg(&public)
        .stderr(std::process::Stdio::null())
        .status();
    assert!(status.unwrap().success(), "openssl rsa -pubout failed");
    (
        std::fs::read_to_string(key).unwrap(),
        std::fs::read_to_string(public).unwrap(),
    )
}

#[derive(serde::Deserialize)]
struct SeenClaims {
    iat: u64,
    exp: u64,
    iss: String,
}

fn unix_now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs()
}

/// A fake GitHub API that checks what GitHub checks (JWT signature and claims) and what cordon must send.
async fn fake_github(public_pem: String) -> std::net::SocketAddr {
    let key = Arc::new(DecodingKey::from_rsa_pem(public_pem.as_bytes()).unwrap());
    serve(move |parts: http::request::Parts, body: bytes::Bytes| {
        let key = key.clone();
        async move {
            let header = |name: &str| parts.headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or("");
            if parts.method != http::Method::POST || parts.uri.path() != "/api/v3/app/installations/4242/access_tokens"
            {
                return json(404, r#"{"message":"Not Found"}"#);
            }
            if header("accept") != "application/vnd.github+json" || header("user-agent") != "cordon" {
                return json(415, r#"{"message":"bad accept or user-agent"}"#);
            }
            let jwt = header("authorization").strip_prefix("Bearer ").unwrap_or("");
            let mut validation = Validation::new(jsonwebtoken::Algorithm::RS256);
            validation.set_required_spec_claims(&["exp", "iat", "iss"]);
            let claims = match jsonwebtoken::decode::<SeenClaims>(jwt, &key, &validation) {
                Ok(data) => data.claims,
                Err(_) => return json(401, r#"{"message":"A JSON web token could not be decoded"}"#),
            };
            let now = unix_now();
            let iat_ok = claims.iat.abs_diff(now - 60) <= 5;
            let exp_ok = claims.exp.abs_diff(now + 540) <= 5 && claims.exp - claims.iat <= 600;
            if claims.iss != "12345" || !iat_ok || !exp_ok {
                return json(
                    401,
                    r#"{"message":"'Issued at' or 'Expiration time' or issuer is wrong"}"#,
                );
            }
            let body: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
            let expected =
                j!({"repositories": ["cordon"], "permissions": {"contents": "read", "pull_requests": "write"}});
            let expected_empty = j!({});
            if body != expected && body != expected_empty {
                return json(422, r#"{"message":"unexpected narrowing"}"#);
            }
            let expires = SystemTime::now() + Duration::from_secs(3600);
            let answer = j!({
                "token": if body == expected { "ghs_narrowed" } else { "ghs_everything" },
                "expires_at": humantime::format_rfc3339_seconds(expires).to_string(),
                "permissions": {"contents": "read"},
            });
            json(201, &answer.to_string())
        }
    })
    .await
}

fn app(addr: std::net::SocketAddr, private_pem: &str) -> GitHubApp {
    GitHubApp {
        api_base: format!("http://{addr}/api/v3/").parse().unwrap(),
        app_id: "12345".into(),
        private_key_pem: SecretString::from(private_pem),
        installation_id: 4242,
    }
}

fn narrowing() -> Narrowing {
    Narrowing {
        repositories: vec!["cordon".into()],
        permissions: [("contents", "read"), ("pull_requests", "write")]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    }
}

fn http() -> HttpClient {
    HttpClient::new(&[]).unwrap()
}

#[tokio::test]
async fn mints_a_narrowed_installation_token_with_a_signed_jwt() {
    for pkcs8 in [false, true] {
        let (private, public) = key_pair(pkcs8);
        let addr = fake_github(public).await;
        let token = app(addr, &private).fetch(&http(), &narrowing()).await.unwrap();
        assert_eq!(token.value.expose_secret(), "ghs_narrowed", "pkcs8={pkcs8}");
        let left = token
            .expires_at
            .unwrap()
            .duration_since(SystemTime::now())
            .unwrap()
            .as_secs();
        assert!((3590..=3600).contains(&left), "{left}");

        // No narrowing: both fields are omitted from the body.
        let token = app(addr, &private).fetch(&http(), &Narrowing::default()).await.unwrap();
        assert_eq!(token.value.expose_secret(), "ghs_everything");
    }
}

#[test]
fn empty_narrowing_fields_are_omitted() {
    assert_eq!(serde_json::to_string(&Narrowing::default()).unwrap(), "{}");
    let only_repos = Narrowing {
        repositories: vec!["a".into()],
        ..Narrowing::default()
    };
    assert_eq!(serde_json::to_string(&only_repos).unwrap(), r#"{"repositories":["a"]}"#);
}

#[tokio::test]
async fn a_jwt_signed_with_another_key_is_refused() {
    let (_, public) = key_pair(false);
    let (other_private, _) = key_pair(false);
    let addr = fake_github(public).await;
    let err = app(addr, &other_private)
        .fetch(&http(), &narrowing())
        .await
        .unwrap_err();
    assert!(!err.is_unavailable(), "{err}");
    assert!(matches!(err, IssuerError::Refused { status: 401, .. }), "{err:?}");
    let text = format!("{err} {err:?}");
    assert!(!text.contains("eyJ"), "no JWT in errors: {text}");
}

#[tokio::test]
async fn a_bad_private_key_is_a_config_error_without_the_key() {
    let err = app(
        "127.0.0.1:1".parse().unwrap(),
        "-----BEGIN RSA PRIVATE KEY-----\nnot-a-key\n-----END RSA PRIVATE KEY-----\n",
    )
    .fetch(&http(), &narrowing())
    .await
    .unwrap_err();
    assert!(matches!(err, IssuerError::Config(_)), "{err:?}");
    assert!(!err.to_string().contains("not-a-key"));
}

#[tokio::test]
async fn github_down_or_rate_limited_is_unavailable() {
    let (private, _) = key_pair(false);
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let down = app(([127, 0, 0, 1], port).into(), &private);
    assert!(down.fetch(&http(), &narrowing()).await.unwrap_err().is_unavailable());

    let addr = serve(|_parts, _body| async {
        let mut resp = json(403, r#"{"message":"API rate limit exceeded"}"#);
        resp.headers_mut()
            .insert("x-ratelimit-remaining", http::HeaderValue::from_static("0"));
        resp
    })
    .await;
    let err = app(addr, &private).fetch(&http(), &narrowing()).await.unwrap_err();
    assert!(err.is_unavailable(), "{err:?}");
    assert!(err.to_string().contains("rate limit"), "{err}");
}
