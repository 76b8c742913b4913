//! `/readyz` says what cordon cannot do, through the binary: a credential whose token issuer is down makes it
//! 503 naming the credential until the issuer answers again; a drain after SIGTERM makes it 503 from its first
//! moment, while `/healthz` stays 200; the files cordon makes on first start exist before any port opens.

use std::net::SocketAddr;
use std::process::Command;
use std::time::{Duration, Instant};

use tokio::io::AsyncWriteExt;

use crate::rigs::client::hash;
use crate::rigs::control::admin_request;
use crate::rigs::ports::free_port;
use crate::rigs::process::Signal;
use crate::rigs::process::curl;
use crate::rigs::tls::{https_upstream, test_ca};
use crate::rigs::wait::{TimedChild, Within};

async fn ready(admin: SocketAddr) -> (u16, serde_json::Value) {
    let (status, _, body) = admin_request(admin, "GET", "/readyz", None, "").await;
    (status, serde_json::from_str(&body).unwrap())
}

#[tokio::test(flavor = "multi_thread")]
async fn readyz_names_a_credential_that_cannot_be_supplied_and_says_draining_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let upstream_ca = test_ca("readiness upstream CA");
    let up = https_upstream("127.0.0.2", upstream_ca.server_config(&["api.test"])).await;
    let u = up.addr.port();
    std::fs::write(d.join("upstream-ca.pem"), &upstream_ca.pem).unwrap();
    let (proxy, admin_port, issuer_port) = (free_port(), free_port(), free_port());
    let target = tokio::net::TcpListener::bind("127.0.0.3:0").await.unwrap();
    let tport = target.local_addr().unwrap().port();
    let yaml = format!(
        r#"
listen: {{ proxy: "127.0.0.1:{proxy}", admin: "127.0.0.1:{admin_port}" }}
audit: {{ path: {d}/audit.jsonl }}
ca: {{ dir: {d}/cas }}
timeouts: {{ drain: 5s }}
control: {{ admin_token: {{ file: {d}/admin-token }} }}
upstream: {{ extra_roots: [{d}/upstream-ca.pem] }}
network:
  allow_cidrs: ["127.0.0.0/8"]
  hosts: {{ api.test: 127.0.0.2, hold.test: 127.0.0.3 }}
credentials:
  api:
    source:
      oauth2: {{ token_url: "http://127.0.0.1:{issuer_port}/token", client_id: c, client_secret: {{ env: READY_SECRET }} }}
    bind: {{ hosts: [api.test], ports: [{u}] }}
    inject: {{ header: Authorization, value: "Bearer {{secret}}" }}
sandboxes:
  - {{ id: sb, user: alice, token_sha256: {h}, policy: p }}
policies:
  p:
    credentials: [api]
    allow:
      - {{ host: api.test, ports: [{u}] }}
      - {{ host: hold.test, ports: [{tport}], tls: tunnel }}
"#,
        d = d.display(),
        h = hash("tok"),
    );
    let config = d.join("cordon.yaml");
    std::fs::write(&config, yaml).unwrap();
    let mut child = crate::rigs::process::spawn_cordon(&config, proxy, &[("READY_SECRET", "s3cret")]).await;
    let admin = SocketAddr::from(([127, 0, 0, 1], admin_port));
    let ca = d.join("sb.pem");
    let out = Command::new(crate::rigs::process::BIN)
        .args(["ca", "export", "--sandbox", "sb", "--config"])
        .arg(&config)
        .timed_output()
        .unwrap();
    std::fs::write(&ca, &out.stdout).unwrap();
    let get = || {
        let out = curl()
            .args(["-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "10"])
            .args(["-x", &format!("http://sb:tok@127.0.0.1:{proxy}")])
            .arg("--cacert")
            .arg(&ca)
            .arg(format!("https://api.test:{u}/"))
            .timed_output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    let (status, body) = ready(admin).await;
    assert_eq!(status, 200, "{body}");

    // The issuer is down: the request fails, and /readyz says which credential and why.
    assert_ne!(get(), "200");
    let (status, body) = ready(admin).await;
    assert_eq!(status, 503, "{body}");
    let problems = body["problems"].to_string();
    assert!(problems.contains("credential api cannot be supplied now"), "{body}");
    assert_eq!(body["credentials"]["api"]["state"], "failing", "{body}");
    assert!(!body.to_string().contains("s3cret"), "{body}");

    // Back: the next request gets its token, and the replica is ready again.
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", issuer_port)).await.unwrap();
    let _issuer = crate::rigs::issuers::issuer_on(listener, 3600);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let status = get();
        if status == "200" {
            break;
        }
        let audit = std::fs::read_to_string(d.join("audit.jsonl")).unwrap_or_default();
        assert!(
            Instant::now() < deadline,
            "the issuer is back, the request still gets {status}:\n{audit}"
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    let (status, body) = ready(admin).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["credentials"], serde_json::json!({}), "{body}");

    // A tunnel held open keeps the drain going; /readyz is 503 from its first moment, /healthz stays 200.
    let _held = tokio::spawn(async move {
        let mut kept = Vec::new();
        while let Ok((s, _)) = target.accept().await {
            kept.push(s);
        }
    });
    let mut t = tokio::net::TcpStream::connect(("127.0.0.1", proxy)).await.unwrap();
    let req = format!(
        "CONNECT hold.test:{tport} HTTP/1.1\r\nHost: hold.test:{tport}\r\n{}\r\n",
        crate::rigs::client::auth("sb", "tok")
    );
    t.write_all(req.as_bytes()).await.unwrap();
    assert_eq!(crate::rigs::client::read_connect_response(&mut t).await, 200);
    let pid = child.id();
    assert!(crate::rigs::process::signal(pid, Signal::SIGTERM).is_ok());
    let deadline = Instant::now() + Duration::from_secs(3);
    loop {
        let (status, body) = ready(admin).await;
        if status == 503 {
            assert!(body["problems"].to_string().contains("draining"), "{body}");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "/readyz stayed {status} during the drain: {body}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (status, _, _) = admin_request(admin, "GET", "/healthz", None, "").await;
    assert_eq!(status, 200);
    drop(t);
    let _ = child.kill();
    let _ = child.timed_wait();
}

/// Whoever waits for cordon's port finds the files cordon makes on first start: every `file:` admin token and
/// the control and audit signing keys exist the moment any port opens, even while a slow secret source holds
/// up the rest of the start (an OpenBao that takes the connection and never answers keeps cordon two seconds in
/// learning its stored secrets, after the ports are open).
#[tokio::test(flavor = "multi_thread")]
async fn the_files_made_on_first_start_exist_the_moment_a_port_opens() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // The kernel completes connections to it; nothing ever reads them.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let bao = silent.local_addr().unwrap().port();
    let (proxy, admin_port) = (free_port(), free_port());
    let yaml = format!(
        r#"
listen: {{ proxy: "127.0.0.1:{proxy}", admin: "127.0.0.1:{admin_port}" }}
audit: {{ path: {d}/audit.jsonl, signing_key: {{ file: {d}/audit-key }} }}
ca: {{ dir: {d}/cas }}
control:
  admin_token: {{ file: {d}/admin-token }}
  admin_tokens: [{{ name: ci, roles: [platform], token: {{ file: {d}/ci-token }} }}]
  signing_key: {{ file: {d}/signing-key }}
  store: {d}/cordon.db
vault: {{ openbao: {{ addr: "http://127.0.0.1:{bao}", token_env: SLOW_BAO_TOKEN }} }}
credentials:
  slow:
    source: {{ openbao: "cordon/slow#key" }}
    bind: {{ hosts: [a.test] }}
    inject: {{ header: X-Key }}
"#,
        d = d.display(),
    );
    let config = d.join("cordon.yaml");
    std::fs::write(&config, yaml).unwrap();
    let mut child = Command::new(crate::rigs::process::BIN)
        .args(["run", "--config"])
        .arg(&config)
        .env("SLOW_BAO_TOKEN", "t")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            let out = child.timed_wait_with_output().unwrap();
            panic!("cordon exited ({status}): {}", String::from_utf8_lossy(&out.stderr));
        }
        let open = |port: u16| std::net::TcpStream::connect(("127.0.0.1", port)).is_ok();
        if open(proxy) || open(admin_port) {
            break;
        }
        assert!(Instant::now() < deadline, "cordon never opened a port");
        std::thread::sleep(Duration::from_millis(5));
    }
    let missing: Vec<&str> = ["admin-token", "ci-token", "signing-key", "audit-key"]
        .into_iter()
        .filter(|f| std::fs::metadata(d.join(f)).map(|m| m.len() == 0).unwrap_or(true))
        .collect();
    let _ = child.kill();
    let _ = child.timed_wait();
    assert!(
        missing.is_empty(),
        "a port was open before these files were made: {missing:?}"
    );
    drop(silent);
}
