//! The rig of `credentials/token_minting.rs`: a fake GitHub API and token endpoint over TLS that records what
//! reaches it, cordon with GitHub and OAuth2 credentials (some allowed to mint), and curl and python requests as
//! the sandboxes' clients.

use std::convert::Infallible;
use std::path::PathBuf;
use std::process::{Child, Command};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{Request, Response};

use crate::rigs::client::hash;
use crate::rigs::ports::free_port;
use crate::rigs::process::{BIN, curl, spawn_cordon};
use crate::rigs::tls::{serve_by_alpn, test_ca};
use crate::rigs::wait::{TimedChild, Within};

/// The token the fake servers hand out: it must never reach a sandbox.
pub(crate) const MINTED: &str = "ghs_16C7e42F292c6912E7710c838347Ae178B4aMINTED";

/// What reached the fake servers: method, path and query, body.
pub(crate) type Seen = Arc<Mutex<Vec<(String, String, String)>>>;

pub(crate) struct Rig {
    pub(crate) dir: tempfile::TempDir,
    pub(crate) port: u16,
    pub(crate) up: u16,
    pub(crate) config: PathBuf,
    pub(crate) seen: Seen,
    pub(crate) cordon: Option<Child>,
}

impl Drop for Rig {
    fn drop(&mut self) {
        if let Some(mut c) = self.cordon.take() {
            let _ = c.kill();
            let _ = c.timed_wait();
        }
    }
}

/// A fake GitHub API and token endpoint: every call recorded; a form answer from `/login/oauth/access_token`,
/// a JSON one with tokens to anything else that is not a GET.
async fn server(seen: Seen) -> (u16, String) {
    let ca = test_ca("token minting CA");
    let tls = ca.server_config(&["api.github.com", "ghe.test", "idp.test", "127.0.0.2"]);
    let listener = tokio::net::TcpListener::bind(("127.0.0.2", 0)).await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let acceptor = tokio_rustls::TlsAcceptor::from(tls);
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let (acceptor, seen) = (acceptor.clone(), seen.clone());
            tokio::spawn(async move {
                let svc = hyper::service::service_fn(move |req: Request<hyper::body::Incoming>| {
                    let seen = seen.clone();
                    async move {
                        let (parts, body) = req.into_parts();
                        let body = body.collect().await.map(|b| b.to_bytes()).unwrap_or_default();
                        let path = parts.uri.path_and_query().map(|p| p.to_string()).unwrap_or_default();
                        seen.lock().unwrap().push((
                            parts.method.to_string(),
                            path.clone(),
                            String::from_utf8_lossy(&body).into_owned(),
                        ));
                        let (media, text) = if path.contains("/login/oauth/access_token") {
                            (
                                "application/x-www-form-urlencoded",
                                format!("access_token={MINTED}&scope=repo&token_type=bearer"),
                            )
                        } else if parts.method == http::Method::GET {
                            ("application/json", r#"{"login": "octocat"}"#.to_string())
                        } else {
                            (
                                "application/json; charset=utf-8",
                                format!(
                                    r#"{{"token": "{MINTED}", "expires_at": "2030-01-01T00:00:00Z", "access_token": "{MINTED}", "refresh_token": "{MINTED}", "id_token": "{MINTED}", "token_type": "Bearer"}}"#
                                ),
                            )
                        };
                        let resp = Response::builder()
                            .header("content-type", media)
                            .body(Full::new(Bytes::from(text)))
                            .unwrap();
                        Ok::<_, Infallible>(resp)
                    }
                });
                if let Ok(tls) = acceptor.accept(stream).await {
                    serve_by_alpn(tls, svc).await;
                }
            });
        }
    });
    (port, ca.pem)
}

pub(crate) async fn rig() -> Rig {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let seen: Seen = Arc::default();
    let (up, ca) = server(seen.clone()).await;
    std::fs::write(d.join("upstream-ca.pem"), ca).unwrap();
    let port = free_port();
    let yaml = format!(
        r#"
listen: {{ proxy: 127.0.0.1:{port} }}
network:
  allow_cidrs: ["127.0.0.0/8"]
  hosts: {{ api.github.com: 127.0.0.2, ghe.test: 127.0.0.2, idp.test: 127.0.0.2 }}
ca: {{ dir: {d}/cas }}
upstream: {{ extra_roots: [{d}/upstream-ca.pem] }}
vault: {{ file: {{ path: {d}/vault/cordon.vault }} }}
audit: {{ path: {d}/audit.jsonl }}
credentials:
  gh:
    source: {{ env: GH_TOKEN }}
    bind: {{ hosts: [api.github.com], ports: [{up}] }}
    inject: {{ header: Authorization, value: "Bearer {{secret}}" }}
  ghe:
    source: {{ env: GH_TOKEN }}
    bind: {{ hosts: [ghe.test], ports: [{up}] }}
    inject: {{ header: Authorization, value: "token {{secret}}" }}
    kind: github
  idp:
    source: {{ env: IDP_SECRET }}
    bind: {{ hosts: [idp.test], ports: [{up}] }}
    inject: {{ basic_user: client }}
  gh-mint:
    source: {{ env: GH_TOKEN }}
    bind: {{ hosts: [api.github.com], ports: [{up}] }}
    inject: {{ header: Authorization, value: "Bearer {{secret}}" }}
    allow_minting: [github:app_tokens, GitHub:Deploy_Keys, github:oauth_tokens]
  idp-mint:
    source: {{ env: IDP_SECRET }}
    bind: {{ hosts: [idp.test], ports: [{up}] }}
    inject: {{ basic_user: client }}
    allow_minting: [oauth2:token_exchange, oauth2:client_credentials]
sandboxes:
  - {{ id: plain, user: alice, token_sha256: {h1}, policy: plain }}
  - {{ id: mint, user: bob, token_sha256: {h2}, policy: mint }}
policies:
  plain:
    credentials: [gh, ghe, idp]
    allow: [{{ host: api.github.com, ports: [{up}] }}, {{ host: ghe.test, ports: [{up}] }}, {{ host: idp.test, ports: [{up}] }}]
  mint:
    credentials: [gh-mint, idp-mint]
    allow: [{{ host: api.github.com, ports: [{up}] }}, {{ host: idp.test, ports: [{up}] }}]
"#,
        d = d.display(),
        h1 = hash("tok-plain"),
        h2 = hash("tok-mint"),
    );
    let config = d.join("cordon.yaml");
    std::fs::write(&config, yaml).unwrap();
    let env = [
        ("GH_TOKEN", "ghp_cordonsRealToken0000000000000000000"),
        ("IDP_SECRET", "idp-client-secret-0d1e"),
        ("CORDON_LOG", "error"),
    ];
    let cordon = spawn_cordon(&config, port, &env).await;
    for id in ["plain", "mint"] {
        let out = Command::new(BIN)
            .args(["ca", "export", "--config"])
            .arg(&config)
            .args(["--sandbox", id])
            .timed_output()
            .unwrap();
        std::fs::write(d.join(format!("{id}-ca.pem")), out.stdout).unwrap();
    }
    Rig {
        dir,
        port,
        up,
        config,
        seen,
        cordon: Some(cordon),
    }
}

/// What a client got: the status, the `x-cordon-reason` (empty if none) and the body.
#[derive(Debug)]
pub(crate) struct Got {
    pub(crate) status: u16,
    pub(crate) reason: String,
    pub(crate) body: String,
}

impl Rig {
    pub(crate) fn proxy(&self, who: &str) -> String {
        format!("http://{who}:tok-{who}@127.0.0.1:{}", self.port)
    }

    pub(crate) fn ca(&self, who: &str) -> PathBuf {
        self.dir.path().join(format!("{who}-ca.pem"))
    }

    /// curl as `who`: `method` (sent as written) to `host` and `path` (sent as written), with `body` and
    /// `media` as its content type, over h2 if `h2`.
    pub(crate) fn curl(
        &self,
        who: &str,
        (method, host, path): (&str, &str, &str),
        body: &str,
        media: &str,
        h2: bool,
    ) -> Got {
        let mut c = curl();
        c.args(["-x", &self.proxy(who)]).arg("--cacert").arg(self.ca(who));
        c.args(["--path-as-is", "-X", method]);
        c.arg(if h2 { "--http2" } else { "--http1.1" });
        if !body.is_empty() {
            c.args(["--data-binary", body, "-H", &format!("content-type: {media}")]);
        }
        c.arg(format!("https://{host}:{}{path}", self.up));
        got(c)
    }

    /// python requests as `who`: `method` to `url_path` on `host`, with a form (`form`) or JSON body.
    pub(crate) fn python(&self, who: &str, method: &str, host: &str, path: &str, body: &str, json: bool) -> Got {
        let script = r#"
import json, sys, requests
who_proxy, ca, method, url, body, as_json = sys.argv[1:7]
kw = {"json": json.loads(body)} if as_json == "1" else {"data": body}
r = requests.request(method, url, proxies={"https": who_proxy}, verify=ca, timeout=10, **kw)
print(json.dumps({"status": r.status_code, "reason": r.headers.get("x-cordon-reason", ""), "body": r.text}))
"#;
        let out = Command::new("python3")
            .args(["-c", script, &self.proxy(who)])
            .arg(self.ca(who))
            .args([method, &format!("https://{host}:{}{path}", self.up), body])
            .arg(if json { "1" } else { "0" })
            .timed_output()
            .unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|_| panic!("python: {}", String::from_utf8_lossy(&out.stderr)));
        Got {
            status: v["status"].as_u64().unwrap() as u16,
            reason: v["reason"].as_str().unwrap().to_string(),
            body: v["body"].as_str().unwrap().to_string(),
        }
    }

    pub(crate) fn reached(&self) -> Vec<(String, String, String)> {
        self.seen.lock().unwrap().clone()
    }

    /// The audit log once `ready` holds for it (records are written after the answer), at most 10 s.
    pub(crate) fn audit_once(&self, what: &str, ready: impl Fn(&str) -> bool) -> String {
        crate::rigs::wait::file_once(&self.dir.path().join("audit.jsonl"), what, ready)
    }
}

/// The final response of curl `c` (through the proxy, whose `200 Connection established` comes first).
fn got(c: Command) -> Got {
    let r = crate::rigs::curl::run(c);
    assert!(r.status != 0, "no response: {r}");
    Got {
        status: r.status,
        reason: r.reason().to_owned(),
        body: r.text(),
    }
}

impl Rig {
    /// A token request form sent chunked (no Content-Length).
    pub(crate) fn curl_chunked_form(&self, who: &str) -> Got {
        let mut c = curl();
        c.args(["-x", &self.proxy(who)]).arg("--cacert").arg(self.ca(who));
        c.args(["--http1.1", "-H", "content-type: application/x-www-form-urlencoded"]);
        c.args([
            "-H",
            "transfer-encoding: chunked",
            "--data-binary",
            "scope=a&grant_type=password",
        ]);
        c.arg(format!("https://idp.test:{}/oauth/token", self.up));
        got(c)
    }

    /// A body of `size` bytes of `content_type` to the token endpoint (a grant at its start), with a length or,
    /// if `chunked`, chunked.
    pub(crate) fn curl_large(&self, who: &str, content_type: &str, size: usize, chunked: bool) -> Got {
        let mut body = b"grant_type=client_credentials&pad=".to_vec();
        body.resize(size, b'a');
        let file = self.dir.path().join("large.body");
        std::fs::write(&file, body).unwrap();
        let mut c = curl();
        c.args(["-x", &self.proxy(who)]).arg("--cacert").arg(self.ca(who));
        // An empty type sends none at all (curl's `-H "content-type:"`).
        c.args(["--http1.1", "-H", &format!("content-type:{content_type}")]);
        if chunked {
            c.args(["-H", "transfer-encoding: chunked"]);
        }
        c.arg("--data-binary").arg(format!("@{}", file.display()));
        c.arg(format!("https://idp.test:{}/oauth/token", self.up));
        got(c)
    }

    /// A gzip-compressed token request form, as curl sends it.
    pub(crate) fn curl_gzip_form(&self, who: &str) -> Got {
        use std::io::Write;
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(b"grant_type=client_credentials").unwrap();
        let file = self.dir.path().join("form.gz");
        std::fs::write(&file, gz.finish().unwrap()).unwrap();
        let mut c = curl();
        c.args(["-x", &self.proxy(who)]).arg("--cacert").arg(self.ca(who));
        c.args([
            "-H",
            "content-type: application/x-www-form-urlencoded",
            "-H",
            "content-encoding: gzip",
        ]);
        c.arg("--data-binary").arg(format!("@{}", file.display()));
        c.arg(format!("https://idp.test:{}/oauth/token", self.up));
        got(c)
    }
}
