//! cordon processes as replicas of one control plane, through the binary: sharing a SQLite store (and its
//! folder) or a PostgreSQL cluster, in front of an HTTPS upstream, with sandboxes created through the admin API
//! and curl as their client.

use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::Duration;

use cordon::cli::admin_client::{AdminClient, CreateRequest};
use secrecy::SecretString;
use serde_json::Value;

use crate::rigs::pg::Pg;
use crate::rigs::ports::free_port;
use crate::rigs::process::spawn_cordon;
use crate::rigs::proxy::config;
use crate::rigs::tls::{https_upstream, test_ca};
use crate::rigs::wait::{TimedChild, Within};

pub(crate) struct Replica {
    pub(crate) child: Child,
    pub(crate) proxy: u16,
    pub(crate) admin_port: u16,
    pub(crate) admin: AdminClient,
    pub(crate) path: std::path::PathBuf,
    pub(crate) yaml: String,
    pub(crate) token: String,
}

impl Replica {
    /// The admin token.
    pub(crate) fn admin_token(&self) -> String {
        self.token.clone()
    }

    /// The admin API's address.
    pub(crate) fn admin_addr(&self) -> std::net::SocketAddr {
        std::net::SocketAddr::from(([127, 0, 0, 1], self.admin_port))
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.timed_wait();
    }
}

/// The HTTPS upstream every replica reaches, its CA written to `dir/upstream-ca.pem` for them to trust.
pub(crate) async fn upstream(dir: &Path) -> crate::rigs::upstreams::Upstream {
    let upstream_ca = test_ca("upstream test CA");
    let up = https_upstream(
        "127.0.0.2",
        upstream_ca.server_config(&["allowed.test", "unlisted.test"]),
    )
    .await;
    std::fs::write(dir.join("upstream-ca.pem"), &upstream_ca.pem).unwrap();
    up
}

/// A cordon process on its own ports, sharing everything under `dir`.
pub(crate) async fn replica(dir: &Path, name: &str, up: u16, watch: bool) -> Replica {
    replica_with(dir, name, up, watch, "", |yaml| yaml).await
}

/// [`replica`] with `extra_top` more top-level YAML, and the whole configuration passed through `edit`.
pub(crate) async fn replica_with(
    dir: &Path,
    name: &str,
    up: u16,
    watch: bool,
    extra_top: &str,
    edit: impl Fn(String) -> String,
) -> Replica {
    let (proxy, admin) = (free_port(), free_port());
    let top = format!(
        "listen: {{ proxy: 127.0.0.1:{proxy}, admin: 127.0.0.1:{admin} }}\nca: {{ dir: {d}/cas }}\n\
         upstream: {{ extra_roots: [{d}/upstream-ca.pem] }}\nvault: {{ file: {{ path: {d}/vault.bin }} }}\n\
         control:\n  admin_token: {{ file: {d}/admin-token }}\n  signing_key: {{ file: {d}/signing-key }}\n  \
         store: {d}/cordon.db\n  watch: {watch}\n{extra_top}",
        d = dir.display()
    );
    let yaml = edit(config(up, 1, &top));
    let path = dir.join(format!("{name}.yaml"));
    std::fs::write(&path, &yaml).unwrap();
    let mut child = spawn_cordon(&path, proxy, &[]).await;
    // cordon binds its ports before it builds its state (and writes the admin token): a connection is
    // accepted by the kernel early, so only an HTTP answer says the admin API is there.
    let mut tries = 0;
    while !answers_healthz(admin).await {
        tries += 1;
        if tries == 200 {
            let _ = child.kill();
            panic!("replica {name}: the admin API never answered on port {admin}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let token = std::fs::read_to_string(dir.join("admin-token"))
        .unwrap()
        .trim()
        .to_owned();
    let admin_port = admin;
    let admin = AdminClient::new(&format!("http://127.0.0.1:{admin}"), SecretString::from(token.clone())).unwrap();
    Replica {
        token,
        child,
        proxy,
        admin_port,
        admin,
        path,
        yaml,
    }
}

/// Whether an admin API on `port` answers `GET /healthz` with 200.
async fn answers_healthz(port: u16) -> bool {
    use tokio::io::AsyncWriteExt;
    let Ok(mut s) = tokio::net::TcpStream::connect(("127.0.0.1", port)).await else {
        return false;
    };
    let ask = b"GET /healthz HTTP/1.1\r\nHost: cordon\r\nConnection: close\r\n\r\n";
    if s.write_all(ask).await.is_err() {
        return false;
    }
    let answer = tokio::time::timeout(Duration::from_secs(2), crate::rigs::client::read_response(&mut s)).await;
    matches!(answer, Ok(Some(r)) if r.status == 200)
}

/// What curl printed of a response's head (`-D -`), the last one when a proxy answered first.
pub(crate) struct Head(crate::rigs::curl::Curled);

impl Head {
    /// The status of the last response: the final one, or the proxy's answer to a CONNECT that got no further
    /// (0 when curl got none).
    pub(crate) fn status(&self) -> u16 {
        if self.0.status == 0 {
            self.0.connect
        } else {
            self.0.status
        }
    }

    /// The value of header `name` (any case) in the last response (see [`Head::status`]), or "".
    pub(crate) fn header(&self, name: &str) -> String {
        let headers = if self.0.status == 0 {
            &self.0.connect_headers
        } else {
            &self.0.headers
        };
        headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.trim().to_owned())
            .unwrap_or_default()
    }
}

/// curl through a replica as `who`, trusting `ca` if given: the head it printed.
pub(crate) fn curl_head(r: &Replica, who: (&str, &str), ca: Option<&Path>, url: &str) -> Head {
    let mut cmd = crate::rigs::process::curl();
    cmd.args(["-s", "--max-time", "10"])
        .args(["-x", &format!("http://{}:{}@127.0.0.1:{}", who.0, who.1, r.proxy)]);
    if let Some(ca) = ca {
        cmd.arg("--cacert").arg(ca);
    }
    cmd.arg(url);
    Head(crate::rigs::curl::run(cmd))
}

/// curl through a replica as `id:credential`; the HTTP status (0 when curl itself failed, e.g. on a 407).
pub(crate) fn curl_status(r: &Replica, id: &str, credential: &str, ca: &Path, url: &str) -> u16 {
    let out = crate::rigs::process::curl()
        .args(["-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "10"])
        .args(["-x", &format!("http://{id}:{credential}@127.0.0.1:{}", r.proxy)])
        .arg("--cacert")
        .arg(ca)
        .arg(url)
        .timed_output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().parse().unwrap_or(0)
}

pub(crate) async fn create(r: &Replica, dir: &Path) -> (String, String, std::path::PathBuf) {
    let req = CreateRequest {
        user: "alice".into(),
        policy: "web".into(),
        id: None,
        ttl: Some("1h".into()),
        labels: Default::default(),
        source_cidrs: Vec::new(),
    };
    let v: Value = r.admin.create(&req).await.unwrap();
    let id = v["id"].as_str().unwrap().to_string();
    let ca = dir.join(format!("{id}.pem"));
    std::fs::write(&ca, v["ca_certificate"].as_str().unwrap()).unwrap();
    (id, v["credential"].as_str().unwrap().to_string(), ca)
}

/// One replica on `pg`, with a folder of its own (no CA folder or store file shared), the admin token and
/// signing key shared through `shared`.
pub(crate) async fn pg_replica(pg: &Pg, shared: &Path, name: &str, up: u16) -> Replica {
    pg_replica_edit(pg, shared, name, up, |y| y).await
}

/// [`pg_replica`] with its configuration passed through `edit` at the end.
pub(crate) async fn pg_replica_edit(
    pg: &Pg,
    shared: &Path,
    name: &str,
    up: u16,
    edit: impl Fn(String) -> String,
) -> Replica {
    let own = shared.join(name);
    std::fs::create_dir_all(&own).unwrap();
    let d = shared.display().to_string();
    let dsn = pg.dsn();
    let own = own.display().to_string();
    replica_with(shared, name, up, true, "", move |yaml| {
        yaml.replace(
            &format!("store: {d}/cordon.db"),
            &format!(
                "store: \"{dsn}\"\n  store_password: {{ file: {d}/pg-password }}\n  store_ca_file: {d}/pg-ca.pem\n  \
                 store_key: {{ file: {d}/store-key }}"
            ),
        )
        .replace(&format!("ca: {{ dir: {d}/cas }}"), &format!("ca: {{ dir: {own}/cas }}"))
        .pipe(&edit)
    })
    .await
}

/// `GET path` on a replica's admin API: status and JSON body.
pub(crate) async fn admin_get(r: &Replica, path: &str) -> (u16, Value) {
    let token = r.admin_token();
    let (status, _, body) = crate::rigs::control::admin_request(r.admin_addr(), "GET", path, Some(&token), "").await;
    // The first JSON value of the body (what follows it, if anything, is not the answer's).
    let first = serde_json::Deserializer::from_str(&body).into_iter::<Value>().next();
    (
        status,
        first
            .and_then(Result::ok)
            .unwrap_or_else(|| panic!("{path}: not JSON: {body}")),
    )
}

/// `x.pipe(f)` is `f(x)`.
trait Pipe: Sized {
    fn pipe(self, f: &impl Fn(Self) -> Self) -> Self {
        f(self)
    }
}

impl Pipe for String {}

/// A PostgreSQL cluster, a folder, and the HTTPS upstream every replica reaches.
pub(crate) struct Setup {
    pub(crate) pg: Pg,
    pub(crate) dir: tempfile::TempDir,
    pub(crate) _up: crate::rigs::upstreams::Upstream,
    pub(crate) port: u16,
    pub(crate) url: String,
}

pub(crate) async fn setup() -> Setup {
    let pg = Pg::start();
    let dir = tempfile::tempdir().unwrap();
    let up = upstream(dir.path()).await;
    let port = up.addr.port();
    // Written once, before any replica starts (replicas started together must not read a half-written file).
    std::fs::write(dir.path().join("pg-password"), Pg::PASSWORD).unwrap();
    std::fs::write(dir.path().join("pg-ca.pem"), pg.ca_pem()).unwrap();
    std::fs::write(dir.path().join("store-key"), "0123456789abcdef0123456789abcdef-test").unwrap();
    Setup {
        pg,
        dir,
        _up: up,
        port,
        url: format!("https://allowed.test:{port}/hello"),
    }
}

/// The CA of sandbox `id` as shown by the admin API (`v`), written to a file in `dir`.
pub(crate) fn ca_of(dir: &Path, id: &str, v: &Value) -> PathBuf {
    let p = dir.join(format!("{id}-ca.pem"));
    std::fs::write(&p, v["ca_certificate"].as_str().unwrap()).unwrap();
    p
}
