//! The provider, cordon processes holding the sign-in, and the sandbox's requests.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::rigs::client::hash;
use crate::rigs::curl::Curled;
use crate::rigs::issuers::oidc_provider;
use crate::rigs::ports::free_port;
use crate::rigs::process::{Killed, spawn_cordon};
use crate::rigs::tls::{https_upstream, test_ca};
use crate::rigs::upstreams::Upstream;
use crate::rigs::wait::{TimedChild, Within};

/// The store key every test cordon seals with.
pub(crate) const STORE_KEY: &str = "0123456789abcdef0123456789abcdef-oauth-test";

/// The provider (`oauth2-refresh.mjs`) and its test hooks.
pub(crate) struct Provider {
    _proc: Killed,
    pub(crate) port: u16,
}

impl Provider {
    /// A provider whose access tokens live `ttl` seconds.
    pub(crate) async fn start(dir: &Path, ttl: u32) -> Provider {
        let (proc, port) = oidc_provider("oauth2-refresh.mjs", &["0".to_owned(), ttl.to_string()], dir).await;
        Provider { _proc: proc, port }
    }

    fn call(&self, method: &str, path: &str) -> Value {
        let out = Command::new("curl")
            .args(["-s", "--max-time", "10", "-X", method])
            .arg(format!("http://127.0.0.1:{}{path}", self.port))
            .timed_output()
            .unwrap();
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{method} {path}: {e}: {out:?}"))
    }

    /// A new grant's first refresh token (the operator's one-time sign-in).
    pub(crate) fn sign_in(&self) -> String {
        self.call("POST", "/test/seed")["refresh_token"]
            .as_str()
            .unwrap()
            .to_owned()
    }

    /// Revoke every grant at the provider.
    pub(crate) fn revoke(&self) {
        self.call("POST", "/test/revoke");
    }

    /// Hold the next refresh's answer `ms` after the provider rotated.
    pub(crate) fn delay_next(&self, ms: u64) {
        self.call("POST", &format!("/test/delay?ms={ms}"));
    }

    /// Refreshes answered (`refresh_ok`), refused (`refresh_failed`, `errors`), and the last refresh token issued.
    pub(crate) fn stats(&self) -> Value {
        self.call("GET", "/test/stats")
    }

    /// Whether `token` is a valid access token of this provider.
    pub(crate) fn active(&self, token: &str) -> bool {
        self.call("GET", &format!("/test/active?token={token}"))["active"] == true
    }
}

/// A folder with the upstream's CA, the admin token and the store.
pub(crate) struct World {
    pub(crate) dir: tempfile::TempDir,
    pub(crate) up: Upstream,
    pub(crate) provider: Provider,
}

impl World {
    pub(crate) async fn new(ttl: u32) -> World {
        let dir = tempfile::tempdir().unwrap();
        let ca = test_ca("upstream test CA");
        let up = https_upstream("127.0.0.2", ca.server_config(&["api.held.test"])).await;
        std::fs::write(dir.path().join("upstream-ca.pem"), &ca.pem).unwrap();
        std::fs::write(dir.path().join("admin-token"), "oauth-test-admin-token-1234567890\n").unwrap();
        let provider = Provider::start(dir.path(), ttl).await;
        World { dir, up, provider }
    }

    pub(crate) fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// The configuration of a cordon named `name` keeping its store as `store` (the `control:` lines after
    /// `admin_token`).
    pub(crate) fn yaml(&self, proxy: u16, admin: u16, store: &str) -> String {
        let d = self.dir.path().display();
        let (op, u) = (self.provider.port, self.up.addr.port());
        format!(
            r#"
listen: {{ proxy: 127.0.0.1:{proxy}, admin: 127.0.0.1:{admin} }}
network:
  allow_cidrs: ["127.0.0.0/8"]
  hosts: {{ api.held.test: 127.0.0.2 }}
ca: {{ dir: {d}/cas }}
upstream: {{ extra_roots: [{d}/upstream-ca.pem] }}
vault: {{ file: {{ path: {d}/vault/cordon.vault }} }}
control:
  admin_token: {{ file: {d}/admin-token }}
  watch: false
{store}
credentials:
  held:
    source:
      oauth2_refresh:
        token_url: "http://127.0.0.1:{op}/token"
        client_id: cordon-client
        client_secret: {{ env: HELD_CLIENT_SECRET }}
    bind: {{ hosts: [api.held.test], ports: [{u}] }}
    inject: {{ placeholder: {{}} }}
sandboxes:
  - {{ id: sb1, user: alice, token_sha256: {h}, policy: web }}
policies:
  web:
    credentials: [held]
    allow:
      - {{ host: api.held.test, ports: [{u}] }}
      - {{ cidrs: ["127.0.0.1/32"], ports: [{op}], methods: [POST] }}
"#,
            h = hash("tok1"),
        )
    }

    /// The SQLite store's `control:` lines.
    pub(crate) fn sqlite_store(&self) -> String {
        format!(
            "  store: {}\n  store_key: {{ env: CORDON_STORE_KEY }}",
            self.path("cordon.db").display()
        )
    }

    /// Start a cordon named `name` with `store` lines and `env` besides the secrets.
    pub(crate) async fn cordon(&self, name: &str, store: &str, env: &[(&str, &str)]) -> Cordon {
        self.cordon_edited(name, store, env, |y| y).await
    }

    /// [`World::cordon`] with its configuration passed through `edit`.
    pub(crate) async fn cordon_edited(
        &self,
        name: &str,
        store: &str,
        env: &[(&str, &str)],
        edit: impl Fn(String) -> String,
    ) -> Cordon {
        let (proxy, admin) = (free_port(), free_port());
        let config = self.path(&format!("{name}.yaml"));
        std::fs::write(&config, edit(self.yaml(proxy, admin, store))).unwrap();
        let mut all = vec![("HELD_CLIENT_SECRET", "cordon-secret"), ("CORDON_STORE_KEY", STORE_KEY)];
        all.extend_from_slice(env);
        let child = spawn_cordon(&config, proxy, &all).await;
        let mut c = Cordon {
            child: Some(child),
            proxy,
            admin,
            config,
            ca: self.path(&format!("{name}-sb1.pem")),
        };
        c.wait_admin().await;
        let out = Command::new(env!("CARGO_BIN_EXE_cordon"))
            .args(["ca", "export", "--sandbox", "sb1", "--config"])
            .arg(&c.config)
            .envs(all.iter().copied())
            .timed_output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        std::fs::write(&c.ca, &out.stdout).unwrap();
        c.child.as_ref().unwrap();
        c
    }

    /// The Authorization headers the upstream saw, in order.
    pub(crate) fn bearers(&self) -> Vec<String> {
        self.up
            .seen()
            .iter()
            .filter_map(|s| {
                s.header("authorization")
                    .map(|v| v.trim_start_matches("Bearer ").to_owned())
            })
            .collect()
    }
}

/// One cordon process.
pub(crate) struct Cordon {
    child: Option<Child>,
    pub(crate) proxy: u16,
    pub(crate) admin: u16,
    pub(crate) config: PathBuf,
    ca: PathBuf,
}

impl Drop for Cordon {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.timed_wait();
        }
    }
}

impl Cordon {
    async fn wait_admin(&mut self) {
        for _ in 0..200 {
            if self.admin_get("/healthz").0 == 200 {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let mut child = self.child.take().unwrap();
        let _ = child.kill();
        let out = child.timed_wait_with_output().unwrap();
        panic!(
            "the admin API never answered on {}: {}",
            self.admin,
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// `GET path` on the admin API without a token (`/readyz`, `/metrics`, `/healthz`): status and body.
    pub(crate) fn admin_get(&self, path: &str) -> (u16, String) {
        let out = Command::new("curl")
            .args(["-s", "--max-time", "5", "-w", "\n%{http_code}"])
            .arg(format!("http://127.0.0.1:{}{path}", self.admin))
            .timed_output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let (body, code) = text.rsplit_once('\n').unwrap_or(("", "0"));
        (code.trim().parse().unwrap_or(0), body.to_owned())
    }

    /// `cordon credentials seed held` with the token in a file (`Some`) or on standard input (`None`: `-`).
    pub(crate) fn seed(&self, token: &str, file: Option<&Path>) -> (bool, String) {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_cordon"));
        cmd.args(["credentials", "seed", "held", "--refresh-token-file"])
            .arg(file.unwrap_or(Path::new("-")))
            .arg("--config")
            .arg(&self.config)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some(f) = file {
            std::fs::write(f, format!("{token}\n")).unwrap();
        }
        let mut child = cmd.spawn().unwrap();
        {
            use std::io::Write;
            let mut stdin = child.stdin.take().unwrap();
            if file.is_none() {
                stdin.write_all(token.as_bytes()).unwrap();
            }
        }
        let out = child.timed_wait_with_output().unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(!text.contains(token), "the token was printed back: {text}");
        (out.status.success(), text)
    }

    /// The sandbox's placeholder for its one credential, from `cordon placeholders`.
    pub(crate) fn placeholder(&self) -> String {
        let out = Command::new(env!("CARGO_BIN_EXE_cordon"))
            .args(["placeholders", "--sandbox", "sb1", "--config"])
            .arg(&self.config)
            .timed_output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        text.lines()
            .find_map(|l| {
                l.strip_prefix("CORDON_PLACEHOLDER_")
                    .and_then(|l| l.split_once('='))
                    .map(|(_, v)| v.to_owned())
            })
            .unwrap_or_else(|| panic!("no placeholder in {text:?}"))
    }

    /// The sandbox's request through this cordon, with its placeholder as the bearer token.
    pub(crate) fn get(&self, world: &World, path: &str, placeholder: &str) -> Curled {
        let mut cmd = crate::rigs::process::curl();
        cmd.args(["-s", "--max-time", "40"])
            .args(["-x", &format!("http://sb1:tok1@127.0.0.1:{}", self.proxy)])
            .arg("--cacert")
            .arg(&self.ca)
            .args(["-H", &format!("Authorization: Bearer {placeholder}")])
            .arg(format!("https://api.held.test:{}{path}", world.up.addr.port()));
        crate::rigs::curl::run(cmd)
    }

    /// The sandbox's own POST of `form` to the provider's token endpoint through this cordon (plain HTTP).
    pub(crate) fn post_token(&self, world: &World, form: &str) -> Curled {
        let mut cmd = crate::rigs::process::curl();
        cmd.args(["-s", "--max-time", "20"])
            .args(["-x", &format!("http://sb1:tok1@127.0.0.1:{}", self.proxy)])
            .args(["-u", "cordon-client:cordon-secret", "--data", form])
            .arg(format!("http://127.0.0.1:{}/token", world.provider.port));
        crate::rigs::curl::run(cmd)
    }

    /// The process, to kill or wait on.
    pub(crate) fn take(&mut self) -> Child {
        self.child.take().unwrap()
    }
}
