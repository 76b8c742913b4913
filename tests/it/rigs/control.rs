//! A cordon with its admin API, in process: proxy and admin listeners, a configuration file a test may
//! edit and reload, an HTTPS upstream, and an admin client; and raw admin requests to a cordon process with the
//! admin token it made.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use cordon::cli::admin_client::{AdminClient, CreateRequest};
use cordon::config::Config;
use cordon::reload::Reloader;
use cordon::state::ProxyState;
use secrecy::SecretString;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

use crate::rigs::proxy::{Capture, config};
use crate::rigs::tls::{https_upstream, test_ca};
use crate::rigs::upstreams::Upstream;

/// A raw admin request to a cordon on `port`: (status, body as JSON or Null).
pub(crate) async fn admin(port: u16, token: &str, method: &str, path: &str, body: &str) -> (u16, Value) {
    let at = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    let (status, _, body) = admin_request(at, method, path, Some(token), body).await;
    (status, serde_json::from_str(&body).unwrap_or(Value::Null))
}

/// The admin token a cordon under `dir` made, waited for (up to 10 s): cordon listens before it writes a token it
/// generates (a connection waits in the backlog meanwhile), so the file can lag the port that said it was up.
/// The file appears whole (written aside, then renamed).
pub(crate) fn token(dir: &Path) -> String {
    for _ in 0..200 {
        if dir.join("admin-token").exists() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    std::fs::read_to_string(dir.join("admin-token"))
        .unwrap()
        .trim()
        .to_string()
}

pub(crate) struct ControlRig {
    pub proxy: SocketAddr,
    pub admin: SocketAddr,
    pub token: String,
    pub state: Arc<ProxyState>,
    pub client: AdminClient,
    pub audit: Capture,
    pub up: Upstream,
    pub dir: tempfile::TempDir,
    pub path: PathBuf,
    pub yaml: String,
    stop: CancellationToken,
}

impl Drop for ControlRig {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// The control section every rig uses, with files under `dir`.
pub(crate) fn control_yaml(dir: &std::path::Path, proxy: SocketAddr) -> String {
    format!(
        "control:\n  admin_token: {{ file: {d}/admin-token }}\n  signing_key: {{ file: {d}/signing-key }}\n  \
         store: {d}/cordon.db\n  proxy_url: http://{proxy}\n  ca_file: {d}/sandbox-ca.pem\n  max_ttl: 2h\n",
        d = dir.display()
    )
}

/// Start one; `extra_top` is more top-level YAML.
pub(crate) async fn control_rig(extra_top: &str) -> ControlRig {
    control_rig_edit(extra_top, |yaml, _| yaml).await
}

/// Start one with the configuration passed through `edit` (given the YAML and the upstream's port).
pub(crate) async fn control_rig_edit(extra_top: &str, edit: impl Fn(String, u16) -> String) -> ControlRig {
    let upstream_ca = test_ca("upstream test CA");
    let up = https_upstream(
        "127.0.0.2",
        upstream_ca.server_config(&["allowed.test", "api.allowed.test", "unlisted.test", "pinned.test"]),
    )
    .await;
    let dir = tempfile::tempdir().unwrap();
    let roots = dir.path().join("upstream-ca.pem");
    std::fs::write(&roots, &upstream_ca.pem).unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let admin_listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let (proxy, admin) = (listener.local_addr().unwrap(), admin_listener.local_addr().unwrap());
    let top = format!(
        "ca: {{ dir: {} }}\nupstream: {{ extra_roots: [{}] }}\nvault: {{ file: {{ path: {} }} }}\n{}{extra_top}",
        dir.path().join("cas").display(),
        roots.display(),
        dir.path().join("vault.bin").display(),
        control_yaml(dir.path(), proxy),
    );
    let yaml = edit(config(up.addr.port(), 1, &top), up.addr.port());
    let path = dir.path().join("cordon.yaml");
    std::fs::write(&path, &yaml).unwrap();
    let cfg = Config::load(Some(&path)).unwrap_or_else(|e| panic!("{e}"));
    let audit = Capture::default();
    let state = ProxyState::new(cfg, Arc::new(audit.clone()), vec![proxy, admin])
        .await
        .unwrap();
    let reloader = Arc::new(Reloader::new(Some(path.clone()), Some(&yaml)));
    reloader.clone().spawn_watchers(&state, true);
    let stop = CancellationToken::new();
    let s = stop.clone();
    tokio::spawn(cordon::admin::serve(
        admin_listener,
        state.clone(),
        reloader,
        async move { s.cancelled().await },
    ));
    let s = stop.clone();
    tokio::spawn(cordon::proxy::server::run(listener, state.clone(), async move {
        s.cancelled().await
    }));
    let token = std::fs::read_to_string(dir.path().join("admin-token"))
        .unwrap()
        .trim()
        .to_string();
    let client = AdminClient::new(&format!("http://{admin}"), SecretString::from(token.clone())).unwrap();
    ControlRig {
        proxy,
        admin,
        token,
        state,
        client,
        audit,
        up,
        dir,
        path,
        yaml,
        stop,
    }
}

impl ControlRig {
    /// Create a sandbox of `policy` living `ttl`.
    pub(crate) async fn create(&self, policy: &str, ttl: &str) -> Value {
        let req = CreateRequest {
            user: "alice".into(),
            policy: policy.into(),
            id: None,
            ttl: Some(ttl.into()),
            labels: [("task".to_string(), "t-1".to_string())].into(),
            source_cidrs: Vec::new(),
        };
        self.client.create(&req).await.unwrap()
    }

    /// The sandbox's CA certificate in a file (as a platform hands it to the sandbox).
    pub(crate) async fn ca_file(&self, id: &str) -> PathBuf {
        let pem = self.client.show(id).await.unwrap()["ca_certificate"]
            .as_str()
            .unwrap()
            .to_string();
        let path = self.dir.path().join(format!("{id}.pem"));
        std::fs::write(&path, pem).unwrap();
        path
    }

    /// An intercepted TLS session to allowed.test through cordon as `who`, trusting that sandbox's CA.
    pub(crate) async fn tls(&self, who: (&str, &str)) -> tokio_rustls::client::TlsStream<TcpStream> {
        let ca = self.ca_file(who.0).await;
        let target = format!("allowed.test:{}", self.up.addr.port());
        crate::rigs::tls::tls_as(self.proxy, who, &target, "allowed.test", &ca, b"http/1.1")
            .await
            .unwrap()
    }

    /// Rewrite the configuration file.
    pub(crate) fn write(&self, yaml: &str) {
        std::fs::write(&self.path, yaml).unwrap();
    }

    /// A raw admin request: (status, headers text, body).
    pub(crate) async fn raw(&self, method: &str, path: &str, token: Option<&str>, body: &str) -> (u16, String, String) {
        admin_request(self.admin, method, path, token, body).await
    }

    /// Wait until `check` holds, for up to `limit`.
    pub(crate) async fn until(&self, limit: Duration, mut check: impl FnMut() -> bool) -> bool {
        let deadline = tokio::time::Instant::now() + limit;
        while tokio::time::Instant::now() < deadline {
            if check() {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        check()
    }
}

/// CONNECT as `who` to `host` on the upstream's port: the answer's head, and the stream (open on 200).
pub(crate) async fn connect(rig: &ControlRig, who: (&str, &str), host: &str) -> (crate::rigs::client::Resp, TcpStream) {
    let mut st = TcpStream::connect(rig.proxy).await.unwrap();
    let target = format!("{host}:{}", rig.up.addr.port());
    let raw = format!(
        "CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n{}\r\n",
        crate::rigs::client::auth(who.0, who.1)
    );
    st.write_all(raw.as_bytes()).await.unwrap();
    (crate::rigs::client::read_head(&mut st).await, st)
}

/// The upstream URL for a host.
pub(crate) fn url(rig: &ControlRig, host: &str, path: &str) -> String {
    format!("https://{host}:{}{path}", rig.up.addr.port())
}

/// A raw request to the admin API at `admin`: (status, headers text, body).
pub(crate) async fn admin_request(
    admin: SocketAddr,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: &str,
) -> (u16, String, String) {
    let mut s = TcpStream::connect(admin).await.unwrap();
    let auth = token
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    let req = format!(
        "{method} {path} HTTP/1.1\r\nHost: admin\r\n{auth}Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    crate::rigs::wait::within(
        &format!("the admin API's answer to {method} {path} on {admin}"),
        std::time::Duration::from_secs(120),
        s.read_to_end(&mut out),
    )
    .await
    .unwrap();
    let text = String::from_utf8_lossy(&out).to_string();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head.split(' ').nth(1).unwrap_or("0").parse().unwrap();
    (status, head.to_string(), body.to_string())
}
