//! The end-to-end harness: a local HTTPS site under a test CA that cordon trusts upstream, a cordon
//! process with an admin API, a run-time sandbox created through `cordon sandbox create`, and real client
//! processes started with nothing but that sandbox's environment (plus PATH and a private HOME).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::service::service_fn;

use crate::rigs::gateway::Running;
use crate::rigs::ports::free_port;
use crate::rigs::process::{BIN, spawn_cordon};
use crate::rigs::tls::{TestCa, serve_by_alpn, test_ca};
use crate::rigs::upstreams::Seen;
use crate::rigs::wait::Within;

/// What a site answers: status, headers, body.
pub(crate) type Reply = (u16, Vec<(String, String)>, Vec<u8>);
/// A site's request handler (called off the async threads, so it may run a process).
pub(crate) type Handler = Arc<dyn Fn(&Seen) -> Reply + Send + Sync>;

/// A local HTTPS site.
pub(crate) struct Site {
    /// The name cordon knows it by (`network.hosts` maps it to 127.0.0.1).
    pub name: String,
    pub addr: SocketAddr,
    /// Every request it answered.
    pub seen: Arc<Mutex<Vec<Seen>>>,
}

impl Site {
    pub(crate) fn port(&self) -> u16 {
        self.addr.port()
    }
    /// `https://name:port` + `path`.
    pub(crate) fn url(&self, path: &str) -> String {
        format!("https://{}:{}{path}", self.name, self.port())
    }
    pub(crate) fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

/// Serve `handler` over HTTPS (h2 and HTTP/1.1) for `name`, with a certificate from `ca`.
pub(crate) async fn site(ca: &TestCa, name: &str, handler: Handler) -> Site {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(ca.server_config(&[name]));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = seen.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let (acceptor, handler, record) = (acceptor.clone(), handler.clone(), record.clone());
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(stream).await else { return };
                let svc = service_fn(move |req: hyper::Request<Incoming>| {
                    let (handler, record) = (handler.clone(), record.clone());
                    async move {
                        let (parts, body) = req.into_parts();
                        let body = body.collect().await.map(|b| b.to_bytes().to_vec()).unwrap_or_default();
                        let seen = Seen {
                            method: parts.method.to_string(),
                            uri: parts.uri.path_and_query().map(|p| p.to_string()).unwrap_or_default(),
                            headers: parts
                                .headers
                                .iter()
                                .map(|(k, v)| (k.to_string(), String::from_utf8_lossy(v.as_bytes()).into_owned()))
                                .collect(),
                            body,
                        };
                        let (s, reply) = (seen.clone(), handler.clone());
                        let (status, headers, body) = tokio::task::spawn_blocking(move || reply(&s)).await.unwrap();
                        record.lock().unwrap().push(seen);
                        let mut resp = hyper::Response::builder().status(status);
                        for (k, v) in headers {
                            resp = resp.header(k, v);
                        }
                        Ok::<_, std::convert::Infallible>(resp.body(Full::new(Bytes::from(body))).unwrap())
                    }
                });
                serve_by_alpn(tls, svc).await;
            });
        }
    });
    Site {
        name: name.to_string(),
        addr,
        seen,
    }
}

/// The real token the placeholder cases' API expects (held by cordon, never by the sandbox).
pub(crate) const API_TOKEN: &str = "real-api-token";

/// A JSON API on `api.e2e.test` answering `{"ok": true, "path": ...}` only to `Bearer <API_TOKEN>`, and a case
/// whose sandbox holds the placeholder of credential `api` (injected by placeholder) bound to it.
pub(crate) async fn placeholder_api() -> (Site, Case) {
    let ca = Case::ca();
    let api = site(
        &ca,
        "api.e2e.test",
        Arc::new(|req| {
            let ok = req.header("authorization") == Some(format!("Bearer {API_TOKEN}").as_str());
            let body = serde_json::json!({ "ok": ok, "path": req.uri }).to_string();
            (
                if ok { 200 } else { 401 },
                vec![("content-type".into(), "application/json".into())],
                body.into_bytes(),
            )
        }),
    )
    .await;
    let port = api.port();
    let case = Case::start(
        ca,
        Spec::site(
            "api.e2e.test",
            port,
            "api",
            "E2E_API_TOKEN",
            API_TOKEN,
            "{ placeholder: {} }",
        ),
    )
    .await;
    assert!(
        !case.env.values().any(|v| v.contains(API_TOKEN)),
        "the sandbox holds the real token"
    );
    (api, case)
}

/// A handler serving the files under `root` (GET and HEAD), 404 otherwise, after `auth` accepts the request.
pub(crate) fn files(root: PathBuf, auth: impl Fn(&Seen) -> bool + Send + Sync + 'static) -> Handler {
    Arc::new(move |req: &Seen| {
        if !auth(req) {
            return (
                401,
                vec![("www-authenticate".into(), "Basic realm=\"e2e\"".into())],
                b"unauthorized".to_vec(),
            );
        }
        let path = req.uri.split('?').next().unwrap_or("/").trim_start_matches('/');
        let mut file = root.join(path);
        if file.is_dir() {
            file = file.join("index.html");
        }
        if path.split('/').any(|p| p == "..") {
            return (400, vec![], vec![]);
        }
        match std::fs::read(&file) {
            Ok(body) => {
                let kind = if path.ends_with(".json") || !path.contains('.') && !file.ends_with("index.html") {
                    "application/json"
                } else if file.ends_with("index.html") {
                    "text/html"
                } else {
                    "application/octet-stream"
                };
                (200, vec![("content-type".into(), kind.into())], body)
            }
            Err(_) => (404, vec![], b"not found".to_vec()),
        }
    })
}

/// One case: the upstream CA, cordon, and a run-time sandbox.
pub(crate) struct Case {
    pub dir: tempfile::TempDir,
    pub admin: String,
    pub sandbox: String,
    /// The sandbox's environment, exactly as `cordon sandbox env --format json` printed it.
    pub env: BTreeMap<String, String>,
    _cordon: Running,
}

/// What a case's cordon is configured with.
#[derive(Default)]
pub(crate) struct Spec<'a> {
    /// Rules under the policy's `allow:` (YAML list items, each starting with `- `).
    pub rules: String,
    /// The `credentials:` map (YAML, indented two spaces), and which of them the policy may use.
    pub credentials: String,
    pub policy_credentials: Vec<&'a str>,
    /// Environment of cordon's process (where `source: { env: ... }` secrets live).
    pub secrets: Vec<(&'a str, &'a str)>,
    /// Names served locally (mapped to 127.0.0.1).
    pub names: Vec<&'a str>,
    /// More of the configuration's top level (YAML, unindented), e.g. `model_prices:`.
    pub top: String,
    /// More of the policy's settings (YAML, indented four spaces), e.g. `model_budget:`.
    pub policy: String,
}

impl<'a> Spec<'a> {
    /// The common case: one site `host:port`, allowed whole, and one credential `name` bound to it, read
    /// from cordon's environment variable `env` (set to `secret`) and applied as `inject` (a YAML flow map).
    pub(crate) fn site(
        host: &'a str,
        port: u16,
        name: &'a str,
        env: &'a str,
        secret: &'a str,
        inject: &str,
    ) -> Spec<'a> {
        Spec {
            rules: format!("      - host: {host}\n        ports: [{port}]\n"),
            credentials: format!(
                "  {name}:\n    source: {{ env: {env} }}\n    bind: {{ hosts: [{host}], ports: [{port}] }}\n    inject: {inject}\n"
            ),
            policy_credentials: vec![name],
            secrets: vec![(env, secret)],
            names: vec![host],
            ..Spec::default()
        }
    }
}

impl Case {
    /// The test CA first (sites need it before cordon's config can name their ports).
    pub(crate) fn ca() -> TestCa {
        test_ca("e2e upstream CA")
    }

    /// Start cordon for the sites of `upstream_ca` and create the case's sandbox.
    pub(crate) async fn start(upstream_ca: TestCa, spec: Spec<'_>) -> Case {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().display().to_string();
        std::fs::write(dir.path().join("upstream-ca.pem"), &upstream_ca.pem).unwrap();
        let (port, admin_port) = (free_port(), free_port());
        let hosts: Vec<String> = spec.names.iter().map(|n| format!("{n}: [\"127.0.0.1\"]")).collect();
        let yaml = format!(
            "listen: {{ proxy: \"127.0.0.1:{port}\", admin: \"127.0.0.1:{admin_port}\" }}
audit: {{ path: {d}/audit.log }}
ca: {{ dir: {d}/cas }}
upstream: {{ extra_roots: [{d}/upstream-ca.pem] }}
network:
  allow_cidrs: [\"127.0.0.0/8\"]
  hosts: {{ {hosts} }}
control:
  admin_token: {{ file: {d}/admin-token }}
  admin_tokens:
    - {{ name: e2e-reviewer, roles: [approver], token: {{ file: {d}/reviewer-token }} }}
  signing_key: {{ file: {d}/signing-key }}
  store: {d}/cordon.db
  ca_file: {d}/sandbox-ca.pem
  no_proxy: []
approval: {{ timeout: 30s }}
credentials:
{credentials}
{top}
policies:
  e2e:
    credentials: [{pc}]
{policy}
    allow:
{rules}
",
            top = spec.top,
            policy = spec.policy,
            hosts = hosts.join(", "),
            credentials = if spec.credentials.is_empty() {
                "  {}".into()
            } else {
                spec.credentials.clone()
            },
            pc = spec.policy_credentials.join(", "),
            rules = spec.rules,
        );
        let config = dir.path().join("cordon.yaml");
        std::fs::write(&config, &yaml).unwrap();
        let cordon = Running(spawn_cordon(&config, port, &spec.secrets).await);
        let admin = format!("http://127.0.0.1:{admin_port}");
        for _ in 0..50 {
            if dir.path().join("admin-token").exists() {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        let created = admin_cli(
            dir.path(),
            &admin,
            &["sandbox", "create", "--user", "e2e", "--policy", "e2e"],
            "admin-token",
        );
        let created: serde_json::Value = serde_json::from_str(&created).unwrap();
        let sandbox = created["id"].as_str().unwrap().to_string();
        // The file the sandbox's CA variables name holds the bundle: its CA and the roots cordon trusts upstream,
        // so tunnelled destinations (real certificates) verify as well as intercepted ones.
        let bundle = admin_cli(dir.path(), &admin, &["sandbox", "ca-bundle", &sandbox], "admin-token");
        assert!(bundle.contains(created["ca_certificate"].as_str().unwrap().trim()));
        std::fs::write(dir.path().join("sandbox-ca.pem"), bundle).unwrap();
        // What a platform would run to start the sandbox: `cordon sandbox env`.
        let env = admin_cli(
            dir.path(),
            &admin,
            &["sandbox", "env", &sandbox, "--format", "json"],
            "admin-token",
        );
        let env: BTreeMap<String, String> = serde_json::from_str(&env).unwrap();
        Case {
            dir,
            admin,
            sandbox,
            env,
            _cordon: cordon,
        }
    }

    /// A client process with the sandbox's environment only (and PATH, and a private HOME).
    pub(crate) fn client(&self, program: &str) -> Command {
        self.client_of(&self.env, program)
    }

    /// A client process with another sandbox's environment `env` only (and PATH, and a private HOME).
    pub(crate) fn client_of(&self, env: &BTreeMap<String, String>, program: &str) -> Command {
        let home = self.dir.path().join("home");
        std::fs::create_dir_all(&home).unwrap();
        let mut c = Command::new(program);
        c.env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", &home)
            .envs(env)
            .current_dir(self.dir.path());
        c
    }

    /// Every audit record so far.
    pub(crate) fn audit(&self) -> Vec<serde_json::Value> {
        std::fs::read_to_string(self.dir.path().join("audit.log"))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    /// Wait until an audit record matches (records are written when a connection ends).
    pub(crate) async fn audited(&self, what: impl Fn(&serde_json::Value) -> bool) -> serde_json::Value {
        for _ in 0..100 {
            if let Some(r) = self.audit().into_iter().find(|r| what(r)) {
                return r;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        panic!("no such audit record in {:#?}", self.audit());
    }

    /// The approval one of the agent's calls waits for; the test fails with what the agent said if it ended first.
    pub(crate) async fn held(
        &self,
        run: tokio::task::JoinHandle<std::process::Output>,
    ) -> (serde_json::Value, tokio::task::JoinHandle<std::process::Output>) {
        for _ in 0..400 {
            if run.is_finished() {
                break;
            }
            let listed =
                serde_json::from_str::<serde_json::Value>(&self.admin(&["approvals", "list", "--json"])).unwrap();
            if let Some(first) = listed["pending"].as_array().and_then(|p| p.first()) {
                return (first.clone(), run);
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        let out = run.await.unwrap();
        panic!(
            "no approval became pending; the agent said: {}{}; audit: {:#?}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
            self.audit()
        );
    }

    /// `cordon explain` of `method url` for this case's sandbox.
    pub(crate) fn explain(&self, method: &str, url: &str) -> std::process::Output {
        std::process::Command::new(crate::rigs::process::BIN)
            .args(["explain", "--config"])
            .arg(self.path("cordon.yaml"))
            .args(["--sandbox", &self.sandbox, "--method", method, url])
            .timed_output()
            .unwrap()
    }

    /// Run the admin CLI against this case's cordon.
    pub(crate) fn admin(&self, args: &[&str]) -> String {
        admin_cli(self.dir.path(), &self.admin, args, "admin-token")
    }

    /// Run the admin CLI with the approver's token (`e2e-reviewer`) and return its stdout; it must succeed.
    pub(crate) fn reviewer(&self, args: &[&str]) -> String {
        admin_cli(self.dir.path(), &self.admin, args, "reviewer-token")
    }

    /// Run the admin CLI against this case's cordon, however it ends.
    pub(crate) fn admin_output(&self, args: &[&str]) -> std::process::Output {
        Command::new(BIN)
            .args(args)
            .args(["--admin", &self.admin, "--token-file"])
            .arg(self.dir.path().join("admin-token"))
            .timed_output()
            .unwrap()
    }

    /// The process id of the case's cordon.
    pub(crate) fn cordon_pid(&self) -> u32 {
        self._cordon.0.id()
    }

    pub(crate) fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
}

fn admin_cli(dir: &Path, admin: &str, args: &[&str], token: &str) -> String {
    let out = Command::new(BIN)
        .args(args)
        .args(["--admin", admin, "--token-file"])
        .arg(dir.join(token))
        .timed_output()
        .unwrap();
    assert!(
        out.status.success(),
        "cordon {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Output of a finished client, for assertions.
pub(crate) fn text(out: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}
