#![expect(clippy::unwrap_used, reason = "tests")]
#![expect(clippy::panic, reason = "tests")]

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, SystemTime};

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use super::*;
use crate::secrets::issuer::test_server::{json, serve};

/// A real authorization server (npm `oidc-provider`, started by the repository's own
/// `tests/servers/oauth2-cc.mjs`) on a port it picks itself.
struct Oidc {
    _child: Child,
    port: u16,
}

fn oidc_prefix() -> PathBuf {
    let prefix = std::env::var_os("CORDON_OIDC_PREFIX")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/root/.cache/cordon-oidc"));
    if !prefix.join("node_modules/oidc-provider/package.json").is_file() {
        panic!(
            "oidc-provider is not installed under {} (set CORDON_OIDC_PREFIX); install it with: npm install --prefix {} oidc-provider",
            prefix.display(),
            prefix.display()
        );
    }
    prefix
}

impl Oidc {
    async fn start() -> Oidc {
        let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/servers/oauth2-cc.mjs");
        let mut child = Command::new("node")
            .arg(&script)
            .arg("0")
            .env("CORDON_OIDC_PREFIX", oidc_prefix())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run node: {e}"));
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let port = tokio::time::timeout(Duration::from_secs(20), async {
            while let Ok(Some(line)) = lines.next_line().await {
                if let Some(port) = line.strip_prefix("listening ") {
                    return port.trim().parse::<u16>().ok();
                }
            }
            None
        })
        .await;
        let Ok(Some(port)) = port else {
            panic!("{} did not start: {port:?}", script.display());
        };
        // Keep draining, so a later line never meets a closed pipe.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Oidc { _child: child, port }
    }

    fn token_url(&self) -> http::Uri {
        format!("http://127.0.0.1:{}/token", self.port).parse().unwrap()
    }
}

/// A port nothing listens on (bound, then released).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn client(token_url: http::Uri, secret: &str) -> ClientCredentials {
    ClientCredentials {
        token_url,
        client_id: "sandbox-client".into(),
        client_secret: SecretString::from(secret),
        scope: None,
        audience: None,
        resource: None,
        auth: ClientAuth::Basic,
    }
}

fn http() -> HttpClient {
    HttpClient::new(&[]).unwrap()
}

fn expires_in(token: &Token) -> u64 {
    token
        .expires_at
        .unwrap()
        .duration_since(SystemTime::now())
        .unwrap()
        .as_secs()
}

#[tokio::test]
async fn real_server_issues_a_scoped_token_and_its_expiry_is_honoured() {
    let oidc = Oidc::start().await;
    let mut cc = client(oidc.token_url(), "sandbox-secret");
    cc.scope = Some("api:read".into());
    let token = cc.fetch(&http()).await.unwrap();
    assert!(token.value.expose_secret().len() >= 20);
    // oidc-provider's default ClientCredentials TTL is 600 s.
    let left = expires_in(&token);
    assert!((590..=600).contains(&left), "{left}");

    // client_secret_post too (a client registered for it), and each fetch is a new token.
    cc.auth = ClientAuth::Post;
    cc.client_id = "sandbox-post-client".into();
    let second = cc.fetch(&http()).await.unwrap();
    assert_ne!(second.value.expose_secret(), token.value.expose_secret());
}

#[tokio::test]
async fn real_server_refuses_a_wrong_secret_without_echoing_it() {
    let oidc = Oidc::start().await;
    let err = client(oidc.token_url(), "wrong-secret-1234")
        .fetch(&http())
        .await
        .unwrap_err();
    assert!(!err.is_unavailable(), "{err}");
    match &err {
        IssuerError::Refused { status, code, .. } => {
            assert_eq!(*status, 401);
            assert_eq!(code.as_deref(), Some("invalid_client"));
        }
        other => panic!("expected Refused, got {other:?}"),
    }
    let text = format!("{err} {err:?}");
    assert!(
        !text.contains("wrong-secret-1234") && !text.contains("sandbox-secret"),
        "{text}"
    );
    assert!(text.contains("invalid_client"), "{text}");
}

#[tokio::test]
async fn server_down_is_unavailable() {
    let url: http::Uri = format!("http://127.0.0.1:{}/token", free_port()).parse().unwrap();
    let err = client(url, "sandbox-secret").fetch(&http()).await.unwrap_err();
    assert!(err.is_unavailable(), "{err:?}");
    assert!(!err.to_string().contains("sandbox-secret"));
}

#[tokio::test]
async fn server_errors_are_unavailable_client_errors_refused() {
    let addr = serve(|parts: http::request::Parts, _body| async move {
        match parts.uri.path() {
            "/busy" => json(503, r#"{"error":"temporarily_unavailable"}"#),
            "/slow-down" => json(429, "{}"),
            _ => json(
                400,
                r#"{"error":"invalid_scope","error_description":"secret is sandbox-secret"}"#,
            ),
        }
    })
    .await;
    for (path, unavailable) in [("/busy", true), ("/slow-down", true), ("/bad", false)] {
        let url = format!("http://{addr}{path}").parse().unwrap();
        let err = client(url, "sandbox-secret").fetch(&http()).await.unwrap_err();
        assert_eq!(err.is_unavailable(), unavailable, "{path}: {err}");
        // SECURITY test: an issuer echoing the client secret in its description does not get it logged.
        assert!(!err.to_string().contains("sandbox-secret"), "{err}");
    }
}

#[tokio::test]
async fn basic_auth_form_encodes_the_credentials_and_the_body_carries_the_parameters() {
    let addr = serve(|parts: http::request::Parts, body: bytes::Bytes| async move {
        let auth = parts
            .headers
            .get("authorization")
            .unwrap()
            .to_str()
            .unwrap()
            .to_string();
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(auth.trim_start_matches("Basic "))
            .unwrap();
        let form: Vec<(String, String)> = serde_urlencoded::from_bytes(&body).unwrap();
        let ok = decoded == b"id%3Awith+colon:s%26cret%2F"
            && form.contains(&("grant_type".into(), "client_credentials".into()))
            && form.contains(&("audience".into(), "https://api.example".into()))
            && form.contains(&("resource".into(), "urn:r".into()))
            && !form.iter().any(|(k, _)| k == "client_secret");
        if ok {
            json(200, r#"{"access_token":"tok-1","token_type":"bearer"}"#)
        } else {
            json(400, r#"{"error":"invalid_request"}"#)
        }
    })
    .await;
    let mut cc = client(format!("http://{addr}/token").parse().unwrap(), "s&cret/");
    cc.client_id = "id:with colon".into();
    cc.audience = Some("https://api.example".into());
    cc.resource = Some("urn:r".into());
    let token = cc.fetch(&http()).await.unwrap();
    assert_eq!(token.value.expose_secret(), "tok-1");
    assert!(token.expires_at.is_none());
}

#[tokio::test]
async fn unusable_token_answers_are_refused_without_quoting_the_token() {
    let addr = serve(|parts: http::request::Parts, _body| async move {
        match parts.uri.path() {
            "/crlf" => json(
                200,
                r#"{"access_token":"tok-evil\r\nx-injected: 1","token_type":"Bearer"}"#,
            ),
            "/mac" => json(200, r#"{"access_token":"tok-mac-secret","token_type":"mac"}"#),
            _ => json(
                200,
                r#"{"access_token":"tok-shape-secret","token_type":"Bearer","expires_in":"tok-shape-secret"}"#,
            ),
        }
    })
    .await;
    for path in ["/crlf", "/mac", "/shape"] {
        let err = client(format!("http://{addr}{path}").parse().unwrap(), "s")
            .fetch(&http())
            .await
            .unwrap_err();
        assert!(matches!(err, IssuerError::InvalidResponse { .. }), "{path}: {err:?}");
        let text = format!("{err} {err:?}");
        assert!(!text.contains("tok-"), "{path}: {text}");
    }
}

#[tokio::test]
async fn a_remote_cleartext_token_url_is_refused_before_sending() {
    let err = client("http://auth.example/token".parse().unwrap(), "sandbox-secret")
        .fetch(&http())
        .await
        .unwrap_err();
    assert!(matches!(err, IssuerError::Config(_)), "{err:?}");
}
