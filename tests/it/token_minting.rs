//! Injected GitHub and OAuth2 credentials do not mint credentials the sandbox keeps: through the `cordon`
//! binary, with curl (HTTP/1.1 and h2) and python requests as the sandbox's clients, against a fake GitHub API
//! and a fake token endpoint over real TLS that record what reached them. Every minting call, however it is
//! spelt, is refused 403 `credential_minting` and never reaches the server; named in `allow_minting`, it goes
//! through and the tokens of its answer come back masked; calls that mint nothing still work.

use std::convert::Infallible;
use std::path::PathBuf;
use std::process::{Child, Command};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{Request, Response};

use crate::cli::{BIN, curl, spawn_cordon};
use crate::ports::free_port;
use crate::rig::hash;
use crate::tls_rig::{serve_by_alpn, test_ca};

/// The token the fake servers hand out: it must never reach a sandbox.
const MINTED: &str = "ghs_16C7e42F292c6912E7710c838347Ae178B4aMINTED";

/// What reached the fake servers: method, path and query, body.
type Seen = Arc<Mutex<Vec<(String, String, String)>>>;

struct Rig {
    dir: tempfile::TempDir,
    port: u16,
    up: u16,
    config: PathBuf,
    seen: Seen,
    cordon: Option<Child>,
}

impl Drop for Rig {
    fn drop(&mut self) {
        if let Some(mut c) = self.cordon.take() {
            let _ = c.kill();
            let _ = c.wait();
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

async fn rig() -> Rig {
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
            .output()
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
struct Got {
    status: u16,
    reason: String,
    body: String,
}

impl Rig {
    fn proxy(&self, who: &str) -> String {
        format!("http://{who}:tok-{who}@127.0.0.1:{}", self.port)
    }

    fn ca(&self, who: &str) -> PathBuf {
        self.dir.path().join(format!("{who}-ca.pem"))
    }

    /// curl as `who`: `method` (sent as written) to `host` and `path` (sent as written), with `body` and
    /// `media` as its content type, over h2 if `h2`.
    fn curl(&self, who: &str, (method, host, path): (&str, &str, &str), body: &str, media: &str, h2: bool) -> Got {
        let mut c = curl();
        c.args(["-x", &self.proxy(who)]).arg("--cacert").arg(self.ca(who));
        c.args(["--path-as-is", "-i", "-X", method]);
        c.arg(if h2 { "--http2" } else { "--http1.1" });
        if !body.is_empty() {
            c.args(["--data-binary", body, "-H", &format!("content-type: {media}")]);
        }
        c.arg(format!("https://{host}:{}{path}", self.up));
        let out = c.output().unwrap();
        parse(
            &String::from_utf8_lossy(&out.stdout),
            &String::from_utf8_lossy(&out.stderr),
        )
    }

    /// python requests as `who`: `method` to `url_path` on `host`, with a form (`form`) or JSON body.
    fn python(&self, who: &str, method: &str, host: &str, path: &str, body: &str, json: bool) -> Got {
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
            .output()
            .unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|_| panic!("python: {}", String::from_utf8_lossy(&out.stderr)));
        Got {
            status: v["status"].as_u64().unwrap() as u16,
            reason: v["reason"].as_str().unwrap().to_string(),
            body: v["body"].as_str().unwrap().to_string(),
        }
    }

    fn reached(&self) -> Vec<(String, String, String)> {
        self.seen.lock().unwrap().clone()
    }

    fn audit(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("audit.jsonl")).unwrap_or_default()
    }
}

/// The last response of curl's `-i` output (a proxy's `200 Connection established` comes first).
fn parse(out: &str, err: &str) -> Got {
    let start = out.rfind("HTTP/").unwrap_or_else(|| panic!("no response: {out} {err}"));
    let text = &out[start..];
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((text, ""));
    let status = head.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    let reason = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.trim()
                .eq_ignore_ascii_case("x-cordon-reason")
                .then(|| v.trim().to_string())
        })
        .unwrap_or_default();
    Got {
        status,
        reason,
        body: body.to_string(),
    }
}

/// Every GitHub minting call of cordon's table, with concrete owners, repositories and ids.
const GITHUB_CALLS: &[(&str, &str)] = &[
    ("POST", "/app/installations/42/access_tokens"),
    ("POST", "/applications/Iv1.abc/token"),
    ("PATCH", "/applications/Iv1.abc/token"),
    ("POST", "/applications/Iv1.abc/token/scoped"),
    ("POST", "/login/oauth/access_token"),
    ("POST", "/login/device/code"),
    ("POST", "/app-manifests/code123/conversions"),
    ("POST", "/authorizations"),
    ("PUT", "/authorizations/clients/Iv1.abc"),
    ("PUT", "/authorizations/clients/Iv1.abc/fingerprint"),
    ("POST", "/admin/users/octocat/authorizations"),
    ("POST", "/repos/octo-org/hello/keys"),
    ("POST", "/user/keys"),
    ("POST", "/user/gpg_keys"),
    ("POST", "/user/ssh_signing_keys"),
    ("POST", "/repos/octo-org/hello/actions/runners/registration-token"),
    ("POST", "/repos/octo-org/hello/actions/runners/remove-token"),
    ("POST", "/repos/octo-org/hello/actions/runners/generate-jitconfig"),
    ("POST", "/orgs/octo-org/actions/runners/registration-token"),
    ("POST", "/orgs/octo-org/actions/runners/remove-token"),
    ("POST", "/orgs/octo-org/actions/runners/generate-jitconfig"),
    ("POST", "/enterprises/octo/actions/runners/registration-token"),
    ("POST", "/enterprises/octo/actions/runners/remove-token"),
    ("POST", "/enterprises/octo/actions/runners/generate-jitconfig"),
    ("POST", "/user/codespaces"),
    ("POST", "/repos/octo-org/hello/codespaces"),
    ("POST", "/repos/octo-org/hello/pulls/7/codespaces"),
    ("POST", "/orgs/octo-org/personal-access-token-requests"),
    ("POST", "/orgs/octo-org/personal-access-token-requests/9"),
];

/// The spellings of `path` a server may route as `path`.
fn spellings(path: &str) -> Vec<String> {
    let encoded = path
        .replacen("/repos/octo-org", "/repos/%6fcto-org", 1)
        .replace("keys", "k%65ys");
    vec![
        path.to_string(),
        path.to_ascii_uppercase(),
        encoded,
        format!("{path}/"),
        path.replacen('/', "//", 1),
    ]
}

#[tokio::test(flavor = "multi_thread")]
async fn github_minting_calls_are_refused_however_they_are_spelt() {
    let r = rig().await;
    let mut refusals = 0;
    for (method, path) in GITHUB_CALLS {
        for spelt in spellings(path) {
            for (host, prefix) in [("api.github.com", ""), ("ghe.test", "/api/v3")] {
                let full = format!("{prefix}{spelt}");
                for (m, h2) in [(method.to_string(), false), (method.to_ascii_lowercase(), true)] {
                    let got = r.curl("plain", (&m, host, &full), "{}", "application/json", h2);
                    assert_eq!(
                        (got.status, got.reason.as_str()),
                        (403, "credential_minting"),
                        "{m} {host}{full}: {got:?}"
                    );
                    refusals += 1;
                }
            }
        }
        // Dot segments are refused before any credential is looked at.
        let got = r.curl(
            "plain",
            (method, "api.github.com", &format!("/x/..{path}")),
            "{}",
            "application/json",
            false,
        );
        assert_eq!((got.status, got.reason.as_str()), (400, "dot_segment"), "{got:?}");
        let got = r.python("plain", method, "api.github.com", path, r#"{"title": "x"}"#, true);
        assert_eq!(
            (got.status, got.reason.as_str()),
            (403, "credential_minting"),
            "python {method} {path}: {got:?}"
        );
        refusals += 1;
    }
    assert!(
        r.reached().is_empty(),
        "a refused call reached GitHub: {:?}",
        r.reached()
    );
    // What mints nothing still works, with the credential applied.
    for (method, path) in [
        ("GET", "/user"),
        ("GET", "/repos/octo-org/hello/keys"),
        ("POST", "/repos/octo-org/hello/issues"),
    ] {
        let got = r.curl(
            "plain",
            (method, "api.github.com", path),
            "{\"title\": \"t\"}",
            "application/json",
            false,
        );
        assert_eq!(got.status, 200, "{method} {path}: {got:?}");
    }
    assert_eq!(r.reached().len(), 3);
    // Each refusal is audited with its reason, the call and the credential.
    let audit = r.audit();
    let minting: Vec<&str> = audit.lines().filter(|l| l.contains("credential_minting")).collect();
    assert!(minting.len() >= refusals, "{} audited of {refusals}", minting.len());
    for needle in [
        "github:deploy_keys through credential gh",
        "github:runner_tokens through credential ghe",
    ] {
        assert!(minting.iter().any(|l| l.contains(needle)), "{needle}");
    }
}

/// Every grant of cordon's table, as a client sends it.
const GRANTS: &[&str] = &[
    "client_credentials",
    "refresh_token",
    "password",
    "authorization_code",
    "urn:ietf:params:oauth:grant-type:token-exchange",
    "urn:ietf:params:oauth:grant-type:jwt-bearer",
    "urn:ietf:params:oauth:grant-type:saml2-bearer",
    "urn:ietf:params:oauth:grant-type:device_code",
    "urn:openid:params:grant-type:ciba",
    "urn:example:custom",
];

#[tokio::test(flavor = "multi_thread")]
async fn oauth2_token_requests_through_a_bound_host_are_refused_in_every_form() {
    let r = rig().await;
    let form = "application/x-www-form-urlencoded";
    for grant in GRANTS {
        let enc: String = form_urlencoded::byte_serialize(grant.as_bytes()).collect();
        let pct: String = grant.bytes().map(|b| format!("%{b:02X}")).collect();
        for (body, media) in [
            (format!("grant_type={enc}&scope=all"), form),
            (format!("scope=all&%67rant_type={pct}"), form),
            (format!("GRANT_TYPE={enc}"), form),
            (format!("grant_type=none&grant_type={enc}"), form),
            (format!("grant_type={enc}"), "text/plain"),
            (format!(r#"{{"grant_type": "{grant}"}}"#), "application/json"),
            (
                format!(r#"{{"scope": "a", "Grant_Type": "{grant}", "grant_type": "x"}}"#),
                "application/json",
            ),
        ] {
            for (host, path) in [("idp.test", "/oauth/token"), ("api.github.com", "/anything")] {
                for h2 in [false, true] {
                    let got = r.curl("plain", ("POST", host, path), &body, media, h2);
                    assert_eq!(
                        (got.status, got.reason.as_str()),
                        (403, "credential_minting"),
                        "{host} {body} {media}: {got:?}"
                    );
                }
            }
        }
        let got = r.curl(
            "plain",
            ("POST", "idp.test", &format!("/token?grant_type={enc}")),
            "",
            form,
            false,
        );
        assert_eq!(got.reason, "credential_minting", "{grant} in the query: {got:?}");
        let got = r.python(
            "plain",
            "POST",
            "idp.test",
            "/token",
            &format!("grant_type={enc}"),
            false,
        );
        assert_eq!(got.reason, "credential_minting", "python form {grant}: {got:?}");
        let got = r.python(
            "plain",
            "POST",
            "idp.test",
            "/token",
            &format!(r#"{{"grant_type": "{grant}"}}"#),
            true,
        );
        assert_eq!(got.reason, "credential_minting", "python json {grant}: {got:?}");
    }
    // Device authorization requests, known by their paths.
    for path in [
        "/oauth/device/code",
        "/device_authorization",
        "/oauth2/v2.0/devicecode",
        "/OAuth/Device/Code/",
    ] {
        let got = r.curl("plain", ("POST", "idp.test", path), "client_id=a&scope=b", form, false);
        assert_eq!(got.reason, "credential_minting", "{path}: {got:?}");
    }
    // A form sent chunked is read whole before it goes.
    let got = r.curl_chunked_form("plain");
    assert_eq!(got.reason, "credential_minting", "chunked: {got:?}");
    // A form cordon cannot read (compressed) is refused, not guessed at.
    let got = r.curl_gzip_form("plain");
    assert_eq!(
        (got.status, got.reason.as_str()),
        (400, "minting_body_unreadable"),
        "{got:?}"
    );
    assert!(
        r.reached().is_empty(),
        "a refused request reached the server: {:?}",
        r.reached()
    );
    // Requests with no grant still work.
    let got = r.curl(
        "plain",
        ("POST", "idp.test", "/v1/things"),
        "name=a&scope=b",
        form,
        false,
    );
    assert_eq!(got.status, 200, "{got:?}");
    let got = r.python(
        "plain",
        "POST",
        "idp.test",
        "/v1/things",
        r#"{"name": "grant_type"}"#,
        true,
    );
    assert_eq!(got.status, 200, "{got:?}");
    assert!(r.audit().contains("oauth2:token_exchange through credential idp"));
}

impl Rig {
    /// A token request form sent chunked (no Content-Length).
    fn curl_chunked_form(&self, who: &str) -> Got {
        let mut c = curl();
        c.args(["-x", &self.proxy(who)]).arg("--cacert").arg(self.ca(who));
        c.args([
            "-i",
            "--http1.1",
            "-H",
            "content-type: application/x-www-form-urlencoded",
        ]);
        c.args([
            "-H",
            "transfer-encoding: chunked",
            "--data-binary",
            "scope=a&grant_type=password",
        ]);
        c.arg(format!("https://idp.test:{}/oauth/token", self.up));
        let out = c.output().unwrap();
        parse(
            &String::from_utf8_lossy(&out.stdout),
            &String::from_utf8_lossy(&out.stderr),
        )
    }

    /// A gzip-compressed token request form, as curl sends it.
    fn curl_gzip_form(&self, who: &str) -> Got {
        use std::io::Write;
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(b"grant_type=client_credentials").unwrap();
        let file = self.dir.path().join("form.gz");
        std::fs::write(&file, gz.finish().unwrap()).unwrap();
        let mut c = curl();
        c.args(["-x", &self.proxy(who)]).arg("--cacert").arg(self.ca(who));
        c.args([
            "-i",
            "-H",
            "content-type: application/x-www-form-urlencoded",
            "-H",
            "content-encoding: gzip",
        ]);
        c.arg("--data-binary").arg(format!("@{}", file.display()));
        c.arg(format!("https://idp.test:{}/oauth/token", self.up));
        let out = c.output().unwrap();
        parse(
            &String::from_utf8_lossy(&out.stdout),
            &String::from_utf8_lossy(&out.stderr),
        )
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_allowed_mint_goes_through_and_its_tokens_come_back_masked() {
    let r = rig().await;
    let (summary, errors) = crate::cli::check_summary(&r.config);
    for needle in [
        "GitHub API, may mint github:app_tokens, github:deploy_keys, github:oauth_tokens",
        "may mint oauth2:token_exchange, oauth2:client_credentials",
    ] {
        assert!(summary.contains(needle), "{needle}: {summary}{errors}");
    }
    let form = "application/x-www-form-urlencoded";
    let mut answers = String::new();
    for (method, path) in [
        ("POST", "/app/installations/42/access_tokens"),
        ("POST", "/API/V3/repos/Octo-Org/hello/keys/"),
        ("PATCH", "/applications/Iv1.abc/token"),
    ] {
        for h2 in [false, true] {
            let got = r.curl("mint", (method, "api.github.com", path), "{}", "application/json", h2);
            assert_eq!(got.status, 200, "{method} {path}: {got:?}");
            let v: serde_json::Value = serde_json::from_str(&got.body).unwrap_or_else(|_| panic!("{got:?}"));
            for field in ["token", "access_token", "refresh_token", "id_token"] {
                assert_eq!(v[field], "masked-by-cordon", "{path} {field}: {got:?}");
            }
            assert_eq!(v["expires_at"], "2030-01-01T00:00:00Z", "the document keeps its shape");
            answers.push_str(&got.body);
        }
    }
    // GitHub's OAuth web flow answers a form: its token is masked too.
    let got = r.python(
        "mint",
        "POST",
        "api.github.com",
        "/login/oauth/access_token",
        "code=abc",
        false,
    );
    assert_eq!(
        got.body, "access_token=masked-by-cordon&scope=repo&token_type=bearer",
        "{got:?}"
    );
    answers.push_str(&got.body);
    for (body, json) in [
        (
            "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Atoken-exchange&subject_token=x",
            false,
        ),
        (r#"{"grant_type": "client_credentials"}"#, true),
    ] {
        let got = r.python("mint", "POST", "idp.test", "/oauth/token", body, json);
        assert_eq!(got.status, 200, "{body}: {got:?}");
        assert!(got.body.contains(r#""access_token": "masked-by-cordon""#), "{got:?}");
        answers.push_str(&got.body);
    }
    assert!(
        !answers.contains(MINTED),
        "a minted token reached the sandbox: {answers}"
    );
    assert_eq!(r.reached().len(), 9, "{:?}", r.reached());
    // What the credential does not name is still refused.
    for (host, path, body) in [
        ("api.github.com", "/user/keys", "{}"),
        ("api.github.com", "/orgs/o/actions/runners/registration-token", "{}"),
        ("idp.test", "/oauth/token", "grant_type=refresh_token&refresh_token=r"),
    ] {
        let got = r.curl("mint", ("POST", host, path), body, form, false);
        assert_eq!(got.reason, "credential_minting", "{path}: {got:?}");
    }
    // A call that mints nothing is not masked: its answer is the server's.
    let got = r.curl("mint", ("GET", "api.github.com", "/user"), "", form, false);
    assert_eq!(got.body, r#"{"login": "octocat"}"#, "{got:?}");
}
