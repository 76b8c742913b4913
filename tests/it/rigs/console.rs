//! A cordon with the console on a listener of its own, signing people in through the repository's own OpenID
//! Connect provider (`tests/servers/oidc-login.mjs`: `anna` an approver, `victor` a viewer), with one sandbox
//! whose `POST /pay` is held for a person (and whose MCP calls of `add_comment` at `/mcp` are); and what the
//! console's tests do in a browser (sign in, read the CSRF token and the session's place a page carries).

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::Locator;
use serde_json::Value;

use crate::rigs::browser::Browser;
use crate::rigs::client::hash;
use crate::rigs::issuers::oidc_provider;
use crate::rigs::ports::free_port;
use crate::rigs::process::Signal;
use crate::rigs::process::{BIN, Killed};
use crate::rigs::wait::Within;

/// The rig.
pub(crate) struct ConsoleRig {
    pub(crate) dir: tempfile::TempDir,
    pub(crate) config: PathBuf,
    pub(crate) proxy: u16,
    pub(crate) admin: u16,
    pub(crate) console: u16,
    pub(crate) idp: u16,
    pub(crate) up: crate::rigs::upstreams::Upstream,
    pub(crate) cordon: Option<Child>,
    _idp: Option<Killed>,
}

impl Drop for ConsoleRig {
    /// A test that ends without [`ConsoleRig::stop`] (or fails on the way) leaves no cordon running.
    fn drop(&mut self) {
        if let Some(mut c) = self.cordon.take() {
            let _ = c.kill();
            let _ = crate::rigs::wait::TimedChild::timed_wait(&mut c);
        }
    }
}

impl ConsoleRig {
    /// The console's URL for `path` (e.g. `/console/`).
    pub(crate) fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.console)
    }

    /// The admin token of `name` (`admin`, `ci`, `apr`), as cordon wrote it at start.
    pub(crate) fn token(&self, name: &str) -> String {
        crate::rigs::process::written_token(&self.dir.path().join(format!("{name}-token")))
    }

    /// An admin API call with `token`: status and JSON.
    pub(crate) async fn api(&self, method: &str, path: &str, token: &str, body: &str) -> (u16, Value) {
        let at = std::net::SocketAddr::from(([127, 0, 0, 1], self.admin));
        let (status, _, text) = crate::rigs::control::admin_request(at, method, path, Some(token), body).await;
        (status, serde_json::from_str(&text).unwrap_or(Value::Null))
    }

    /// The held requests, as the admin API lists them.
    pub(crate) async fn pending(&self) -> Vec<Value> {
        let (status, v) = self.api("GET", "/v1/approvals", &self.token("admin"), "").await;
        assert_eq!(status, 200, "{v}");
        v["pending"].as_array().cloned().unwrap_or_default()
    }

    /// `POST /pay` through cordon as sandbox sb1, in the background: curl's `%{http_code}` when it ends.
    pub(crate) fn pay(&self, body: &str) -> Child {
        crate::rigs::process::curl()
            .args(["--max-time", "60", "-o", "/dev/null", "-w", "%{http_code}"])
            .args(["-x", &format!("http://sb1:tok1@127.0.0.1:{}", self.proxy)])
            .args(["-H", "content-type: application/json", "--data", body])
            .arg(format!("http://pay.test:{}/pay?invoice=42", self.up.addr.port()))
            .stdout(Stdio::piped())
            .spawn()
            .unwrap()
    }

    /// A JSON-RPC `tools/call` of `tool` with `arguments` POSTed to `/mcp` through cordon as sandbox sb1, in the
    /// background: curl's `%{http_code}` when it ends.
    pub(crate) fn mcp_call(&self, tool: &str, arguments: &Value) -> Child {
        let body = serde_json::json!({
            "jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": { "name": tool, "arguments": arguments },
        });
        crate::rigs::process::curl()
            .args(["--max-time", "60", "-o", "/dev/null", "-w", "%{http_code}"])
            .args(["-x", &format!("http://sb1:tok1@127.0.0.1:{}", self.proxy)])
            .args([
                "-H",
                "content-type: application/json",
                "-H",
                "accept: application/json, text/event-stream",
            ])
            .args(["--data", &body.to_string()])
            .arg(format!("http://pay.test:{}/mcp", self.up.addr.port()))
            .stdout(Stdio::piped())
            .spawn()
            .unwrap()
    }

    /// Write the configuration again with `roles` as `console.oidc.roles`, the `apr` token or not, and `extra`
    /// appended, and reload it through the admin API: the status and answer.
    pub(crate) async fn reload(&self, roles: &str, apr: bool, extra: &str) -> (u16, Value) {
        let mut yaml = yaml(self.dir.path(), self.ports(), roles, extra);
        if !apr {
            yaml = yaml
                .lines()
                .filter(|l| !l.contains("name: apr"))
                .map(|l| format!("{l}\n"))
                .collect();
        }
        std::fs::write(&self.config, yaml).unwrap();
        self.api("POST", "/v1/reload", &self.token("admin"), "").await
    }

    fn ports(&self) -> [u16; 5] {
        [self.proxy, self.admin, self.console, self.idp, self.up.addr.port()]
    }

    /// Wait until `n` requests are held.
    pub(crate) async fn wait_pending(&self, n: usize) -> Vec<Value> {
        let until = Instant::now() + Duration::from_secs(20);
        loop {
            let p = self.pending().await;
            if p.len() == n {
                return p;
            }
            assert!(Instant::now() < until, "{} held, not {n}", p.len());
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Stop cordon (SIGTERM) and read its audit file's records.
    pub(crate) async fn stop(&mut self) -> Vec<Value> {
        if let Some(child) = self.cordon.take() {
            let out = crate::rigs::process::signal_and_wait(child, Signal::SIGTERM).await;
            assert!(out.status.success(), "cordon ended with {}", out.status);
        }
        self.records()
    }

    /// The audit file's whole records so far: a line still being written (no newline yet) is not one.
    pub(crate) fn records(&self) -> Vec<Value> {
        let text = std::fs::read_to_string(self.dir.path().join("audit.jsonl")).unwrap_or_default();
        let whole = &text[..text.rfind('\n').map_or(0, |i| i + 1)];
        whole.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
    }

    /// The audit file's records once one of them is `what` (`found` says which), at most 10 s: cordon writes a
    /// record after it has answered, so a test that reads at once can be ahead of it.
    pub(crate) async fn records_once(&self, what: &str, found: impl Fn(&Value) -> bool) -> Vec<Value> {
        let mut records = Vec::new();
        crate::rigs::wait::until_async(what, Duration::from_secs(10), || {
            records = self.records();
            records.iter().any(&found)
        })
        .await;
        records
    }

    /// What cordon wrote on stderr so far.
    pub(crate) fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("cordon.log")).unwrap_or_default()
    }

    /// Start the provider now, on the port the configuration names.
    pub(crate) async fn start_idp(&mut self) {
        let redirect = self.url("/console/callback");
        let (idp, port) = oidc_provider("oidc-login.mjs", &[self.idp.to_string(), redirect], self.dir.path()).await;
        assert_eq!(port, self.idp);
        self._idp = Some(idp);
    }

    /// Set the provider's test mode (`normal`, `tamper`, `expired`, ...).
    pub(crate) fn idp_mode(&self, mode: &str) {
        let ok = crate::rigs::process::curl()
            .args(["-f", "-X", "POST", "--data", mode])
            .arg(format!("http://127.0.0.1:{}/__mode", self.idp))
            .timed_status()
            .unwrap();
        assert!(ok.success(), "the provider refused the mode {mode}");
    }
}

/// The roles people's groups give, as the rig starts.
pub(crate) const ROLES: &str = "{ cordon-approvers: [approver], cordon-viewers: [viewer] }";

/// The configuration, with `roles` as `console.oidc.roles` and `extra` at its end (top-level settings, or, indented
/// by four spaces, more of the policy `pay`; `UP_PORT` in it is the upstream's port).
fn yaml(d: &std::path::Path, [proxy, admin, console, idp, up]: [u16; 5], roles: &str, extra: &str) -> String {
    let d = d.display();
    format!(
        r#"listen: {{ proxy: 127.0.0.1:{proxy}, admin: 127.0.0.1:{admin}, console: 127.0.0.1:{console} }}
network: {{ allow_cidrs: ["127.0.0.0/8"], hosts: {{ pay.test: 127.0.0.2 }} }}
ca: {{ dir: {d}/cas }}
audit: {{ path: {d}/audit.jsonl }}
approval: {{ timeout: 60s }}
control:
  watch: false
  admin_token: {{ file: {d}/admin-token }}
  admin_tokens:
    - {{ name: ci, roles: [platform], token: {{ file: {d}/ci-token }} }}
    - {{ name: apr, roles: [approver], token: {{ file: {d}/apr-token }} }}
console:
  url: http://127.0.0.1:{console}
  oidc:
    issuer: http://127.0.0.1:{idp}
    client_id: cordon-console
    client_secret: {{ env: CONSOLE_OIDC_SECRET }}
    roles: {roles}
sandboxes:
  - {{ id: sb1, user: alice, token_sha256: {h1}, policy: pay }}
policies:
  pay:
    allow:
      - {{ host: pay.test, ports: [{up}], methods: [POST], paths: ["/pay"], action: ask }}
      - {{ host: pay.test, ports: [{up}], methods: [POST], paths: ["/mcp"], mcp: {{ ask: [add_comment] }} }}
{extra}
"#,
        h1 = hash("tok1"),
        extra = extra.replace("UP_PORT", &up.to_string()),
    )
}

/// The rig: the provider started unless `idp_later`, then cordon, listening.
pub(crate) async fn console_rig(idp_later: bool) -> ConsoleRig {
    console_rig_with(idp_later, "").await
}

/// The rig with `extra` top-level settings in its configuration.
pub(crate) async fn console_rig_with(idp_later: bool, extra: &str) -> ConsoleRig {
    let dir = tempfile::tempdir().unwrap();
    let up = crate::rigs::upstreams::upstream("127.0.0.2").await;
    let (proxy, admin, console, idp) = (free_port(), free_port(), free_port(), free_port());
    let config = dir.path().join("cordon.yaml");
    let ports = [proxy, admin, console, idp, up.addr.port()];
    std::fs::write(&config, yaml(dir.path(), ports, ROLES, extra)).unwrap();
    let mut rig = ConsoleRig {
        dir,
        config,
        proxy,
        admin,
        console,
        idp,
        up,
        cordon: None,
        _idp: None,
    };
    if !idp_later {
        rig.start_idp().await;
    }
    let secret = [("CONSOLE_OIDC_SECRET", "console-secret")];
    let config = rig.config.to_str().unwrap();
    let (code, out, err) = crate::rigs::process::cordon_env(&["check", "--config", config], &secret);
    assert_eq!(code, 0, "{out}{err}");
    let log = std::fs::File::create(rig.dir.path().join("cordon.log")).unwrap();
    let child = Command::new(BIN)
        .args(["run", "--config"])
        .arg(&rig.config)
        .env("CONSOLE_OIDC_SECRET", "console-secret")
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .unwrap();
    let child = crate::rigs::process::await_listening(child, &format!("127.0.0.1:{console}"), || {
        std::net::TcpStream::connect(("127.0.0.1", console)).is_ok()
            && std::net::TcpStream::connect(("127.0.0.1", admin)).is_ok()
    })
    .await;
    rig.cordon = Some(child);
    rig
}

/// Sign `login` in through the provider in `browser`, from the console's sign-in page; the page it lands on.
pub(crate) async fn sign_in(rig: &ConsoleRig, browser: &Browser, login: &str) -> String {
    browser.client.goto(&rig.url("/console/")).await.unwrap();
    browser.wait_for("#sign-in-oidc", 20).await.click().await.unwrap();
    // The provider's own sign-in page (oidc-provider's development pages), unless it remembers the person.
    let form = browser
        .client
        .wait()
        .at_most(Duration::from_secs(20))
        .for_element(Locator::Css("input[name=login], #who, #problem"))
        .await
        .unwrap();
    if form.attr("name").await.unwrap().as_deref() == Some("login") {
        form.send_keys(login).await.unwrap();
        let password = browser.client.find(Locator::Css("input[name=password]")).await.unwrap();
        password.send_keys("any password").await.unwrap();
        browser
            .client
            .find(Locator::Css("button[type=submit]"))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
    }
    browser
        .client
        .wait()
        .at_most(Duration::from_secs(20))
        .for_element(Locator::Css("#who, #problem"))
        .await
        .unwrap();
    browser.text().await
}

/// What a signed-in page says of its session: the CSRF token its forms carry, the session cookie
/// (`name=value`), and the session's place (`/console/s/PLACE/`, where its pages are).
pub(crate) struct Signed {
    pub(crate) csrf: String,
    pub(crate) cookie: String,
    pub(crate) base: String,
}

/// The session of the page `browser` shows.
pub(crate) async fn session_of(browser: &Browser) -> Signed {
    let csrf = browser
        .client
        .find(Locator::Css("form[action$='/logout'] input[name=csrf]"))
        .await
        .unwrap()
        .attr("value")
        .await
        .unwrap()
        .unwrap();
    let base = browser
        .client
        .find(Locator::Css("html"))
        .await
        .unwrap()
        .attr("data-base")
        .await
        .unwrap()
        .expect("a signed-in page names its session's place");
    assert!(base.starts_with("/console/s/") && base.ends_with('/'), "{base}");
    let cookie = browser.client.get_named_cookie("cordon_console").await.unwrap();
    assert_eq!(
        cookie.path(),
        Some(base.trim_end_matches('/')),
        "the session cookie is sent to its place alone"
    );
    let cookie = format!("cordon_console={}", cookie.value());
    Signed { csrf, cookie, base }
}
