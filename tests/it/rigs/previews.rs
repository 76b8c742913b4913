//! A rig for previews as web origins: two sandboxes, each with one web app (pages, a form target, a WebSocket
//! echo on the same port, as dev servers have) that records everything it receives, behind one cordon whose
//! preview listener is plain HTTP on loopback under `preview.localhost` (Chromium resolves `*.localhost` to
//! loopback itself and keeps `Secure` cookies there).
//! Also the preview tests' dev server, session cookie and headless Chromium.

use std::convert::Infallible;
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::{Request, Response};
use serde_json::Value;
use tokio::net::TcpListener;

use crate::rigs::client::hash;
use crate::rigs::ports::free_port;
use crate::rigs::process::{BIN, spawn_cordon};
use crate::rigs::wait::Within;

/// A dev server on `ip`: `/` is a page naming `who`, `/cookies` echoes the Cookie header it got.
pub(crate) async fn dev_server(ip: &str, who: &'static str) -> u16 {
    let listener = TcpListener::bind((ip, 0)).await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            tokio::spawn(async move {
                let svc = hyper::service::service_fn(move |req: Request<Incoming>| async move {
                    let body = match req.uri().path() {
                        "/cookies" => req
                            .headers()
                            .get("cookie")
                            .map(|c| c.to_str().unwrap().to_string())
                            .unwrap_or_default(),
                        _ => {
                            format!("<!doctype html><html><body><h1 id=\"app\">dev server of {who}</h1></body></html>")
                        }
                    };
                    Ok::<_, Infallible>(Response::new(Full::new(Bytes::from(body))))
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), svc)
                    .await;
            });
        }
    });
    port
}

/// The session cookie a `Set-Cookie` line of `head` sets, and the line.
pub(crate) fn session_cookie(head: &str) -> (String, String) {
    let line = head
        .lines()
        .find_map(|l| l.strip_prefix("set-cookie: "))
        .unwrap_or_else(|| panic!("no session cookie: {head}"))
        .to_string();
    let pair = line.split(';').next().unwrap().trim().to_string();
    (pair, line)
}

/// What headless Chromium shows at `url` (the DOM once the page has loaded), in a profile of its own.
pub(crate) fn chromium(url: &str) -> String {
    let profile = tempfile::tempdir().unwrap();
    let out = Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--dump-dom",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(url)
        .timed_output()
        .expect("chromium (apt-get install chromium; .ci/run does)");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// How long `/hold` waits: it holds the load event of a page that loads it, so that Chromium's `--dump-dom`
/// (which dumps at load) waits for the page's scripts.
const HOLD: Duration = Duration::from_secs(4);

/// What an app received: `METHOD PATH origin=... cookie=...` per request, `ws MESSAGE` per WebSocket message.
pub(crate) type Seen = Arc<Mutex<Vec<String>>>;

/// One app: where it listens, its page (set once the URLs are known) and what it saw.
pub(crate) struct App {
    pub(crate) port: u16,
    pub(crate) page: Arc<Mutex<String>>,
    pub(crate) seen: Seen,
}

impl App {
    /// What it saw so far.
    pub(crate) fn seen(&self) -> Vec<String> {
        self.seen.lock().unwrap().clone()
    }
}

/// An app on `ip`: `/` is its page; `/ws` a WebSocket echo; `POST /submit` answers `posted`; `/hold` answers
/// after `HOLD`; `/toss` answers with each of `toss` as a `Set-Cookie` line; anything else `ok`.
pub(crate) async fn app(ip: &str, toss: &'static [&'static str]) -> App {
    let listener = TcpListener::bind((ip, 0)).await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let page = Arc::new(Mutex::new(String::new()));
    let seen: Seen = Arc::default();
    let (p, s) = (page.clone(), seen.clone());
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let (page, seen) = (p.clone(), s.clone());
            tokio::spawn(async move {
                let svc = hyper::service::service_fn(move |req| {
                    let (page, seen) = (page.clone(), seen.clone());
                    async move { Ok::<_, Infallible>(answer(req, &page, &seen, toss).await) }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), svc)
                    .with_upgrades()
                    .await;
            });
        }
    });
    App { port, page, seen }
}

async fn answer(
    mut req: Request<Incoming>,
    page: &Mutex<String>,
    seen: &Seen,
    toss: &'static [&'static str],
) -> Response<Full<Bytes>> {
    let header = |name: &str| {
        req.headers()
            .get(name)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
            .unwrap_or_default()
    };
    seen.lock().unwrap().push(format!(
        "{} {} origin={} cookie={}",
        req.method(),
        req.uri().path(),
        header("origin"),
        header("cookie")
    ));
    if req.headers().contains_key("upgrade") {
        let accept =
            tokio_tungstenite::tungstenite::handshake::derive_accept_key(header("sec-websocket-key").as_bytes());
        let upgrade = hyper::upgrade::on(&mut req);
        let seen = seen.clone();
        tokio::spawn(async move { echo(upgrade, seen).await });
        return Response::builder()
            .status(101)
            .header("upgrade", "websocket")
            .header("connection", "upgrade")
            .header("sec-websocket-accept", accept)
            .body(Full::default())
            .unwrap();
    }
    let mut resp = Response::builder().header("content-type", "text/html; charset=utf-8");
    let body = match req.uri().path() {
        "/" => page.lock().unwrap().clone(),
        "/submit" if req.method() == hyper::Method::POST => "posted".to_string(),
        "/hold" => {
            tokio::time::sleep(HOLD).await;
            String::new()
        }
        "/toss" => {
            for line in toss {
                resp = resp.header("set-cookie", *line);
            }
            "tossed".to_string()
        }
        _ => "ok".to_string(),
    };
    resp.body(Full::new(Bytes::from(body))).unwrap()
}

/// Echo a WebSocket's text messages, recording each.
async fn echo(upgrade: hyper::upgrade::OnUpgrade, seen: Seen) {
    use futures_util::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::protocol::Role;
    let Ok(io) = upgrade.await else { return };
    let mut ws =
        tokio_tungstenite::WebSocketStream::from_raw_socket(hyper_util::rt::TokioIo::new(io), Role::Server, None).await;
    while let Some(Ok(msg)) = ws.next().await {
        if let Ok(text) = msg.to_text() {
            seen.lock().unwrap().push(format!("ws {text}"));
        }
        if msg.is_text() && ws.send(msg).await.is_err() {
            return;
        }
    }
}

/// cordon with sandbox `sb1` (the person's, `victim`) and `sb2` (another's, `attacker`), both exposing their
/// app's port.
pub(crate) struct Rig {
    pub(crate) config: std::path::PathBuf,
    pub(crate) preview: u16,
    pub(crate) victim: App,
    pub(crate) attacker: App,
    _dir: tempfile::TempDir,
}

impl Rig {
    /// Start cordon; the attacker's app answers `/toss` with `toss`.
    pub(crate) async fn start(toss: &'static [&'static str]) -> (Rig, std::process::Child) {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let victim = app("127.0.0.21", &[]).await;
        let attacker = app("127.0.0.22", toss).await;
        let (proxy, admin, preview) = (free_port(), free_port(), free_port());
        let yaml = format!(
            r#"
listen: {{ proxy: 127.0.0.1:{proxy}, admin: 127.0.0.1:{admin}, preview: 127.0.0.1:{preview} }}
previews: {{ domain: preview.localhost }}
ca: {{ dir: {d}/cas }}
audit: {{ path: {d}/audit.jsonl }}
control: {{ admin_token: {{ file: {d}/admin-token }} }}
sandboxes:
  - {{ id: sb1, user: alice, token_sha256: {h1}, policy: web, source_cidrs: ["127.0.0.21/32"] }}
  - {{ id: sb2, user: bob, token_sha256: {h2}, policy: web, source_cidrs: ["127.0.0.22/32"] }}
policies:
  web: {{ expose: [{v}, {a}], allow: [] }}
"#,
            d = d.display(),
            h1 = hash("tok1"),
            h2 = hash("tok2"),
            v = victim.port,
            a = attacker.port,
        );
        let config = d.join("cordon.yaml");
        std::fs::write(&config, yaml).unwrap();
        let child = spawn_cordon(&config, proxy, &[]).await;
        crate::rigs::control::token(d);
        let rig = Rig {
            config,
            preview,
            victim,
            attacker,
            _dir: dir,
        };
        (rig, child)
    }

    fn cordon(&self, args: &[&str]) -> Output {
        Command::new(BIN)
            .args(args)
            .arg("--config")
            .arg(&self.config)
            .timed_output()
            .unwrap()
    }

    /// A link to `app`'s port of `sandbox` for the person, carol.
    pub(crate) fn link(&self, sandbox: &str, app: &App) -> String {
        let out = self.cordon(&[
            "sandbox",
            "preview",
            sandbox,
            "--port",
            &app.port.to_string(),
            "--user",
            "carol",
        ]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// The origin of `app`'s preview in `sandbox` (`http://host:port`, no trailing slash).
    pub(crate) fn origin(&self, sandbox: &str, app: &App) -> String {
        format!("http://{}-{sandbox}.preview.localhost:{}", app.port, self.preview)
    }

    /// `curl -X method` to `url` on the preview listener with `headers`: status, reason and the head.
    pub(crate) fn curl(&self, method: &str, url: &str, headers: &[String]) -> (u16, String, String) {
        let mut c = crate::rigs::process::curl();
        c.args(["-s", "-X", method])
            .args(["--connect-to", &format!("::127.0.0.1:{}", self.preview)]);
        for h in headers {
            c.args(["-H", h]);
        }
        if method == "POST" {
            c.args(["--data", "x=1"]);
        }
        c.arg(url);
        let r = crate::rigs::curl::run(c);
        (r.status, r.reason().trim().to_owned(), r.head())
    }

    /// Open `link` with curl: the session cookie (`name=value`).
    pub(crate) fn session(&self, link: &str) -> String {
        let (status, _, head) = self.curl("GET", link, &[]);
        assert_eq!(status, 303, "{head}");
        head.lines()
            .find_map(|l| l.strip_prefix("set-cookie: "))
            .and_then(|l| l.split(';').next())
            .unwrap_or_else(|| panic!("no session cookie: {head}"))
            .to_string()
    }

    /// The preview records of the audit log (after cordon stopped).
    pub(crate) fn audit(&self) -> Vec<Value> {
        std::fs::read_to_string(self.config.with_file_name("audit.jsonl"))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .filter(|r| r["kind"] == "preview")
            .collect()
    }
}
