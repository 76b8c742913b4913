//! cordon survives what a command of its own uid does: a fork flood that leaves no process or thread to start
//! (as a jailed command without root can cause, since it runs as the same user as its cordon). Expiry and
//! revocation still close connections on time, during the flood and after it.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::rigs::client::read_connect_response;
use crate::rigs::control::admin_request;
use crate::rigs::ports::free_port;
use crate::rigs::wait::{TimedChild, Within};

const USER: &str = "cordon-flood-t";

/// The process and thread limit cordon and the flood share (per uid).
const NPROC: &str = "160:160";

/// Forks until the system refuses, holds every child for `argv[1]` seconds, then lets them all go.
const FLOOD: &str = "import os, sys, time
kids = []
while True:
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        time.sleep(float(sys.argv[1])); os._exit(0)
    kids.append(pid)
print('forked', len(kids), flush=True)
for k in kids:
    os.waitpid(k, 0)
";

fn as_user(program: &std::path::Path) -> Command {
    let exists = Command::new("id").arg(USER).timed_output().unwrap().status.success();
    if !exists {
        let ok = Command::new("useradd")
            .args(["-M", "-s", "/bin/sh", USER])
            .timed_status()
            .unwrap();
        assert!(ok.success(), "useradd {USER} (the test runs as root, as CI does)");
    }
    let mut c = Command::new("setpriv");
    c.args(["--reuid", USER, "--regid", USER, "--clear-groups", "--", "prlimit"])
        .arg(format!("--nproc={NPROC}"))
        .arg(program);
    c
}

/// The cordon under test, killed when the test ends (setpriv and prlimit exec it: one process).
struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.timed_wait();
    }
}

/// A CONNECT tunnel through cordon at `proxy` to `port`, as sandbox `id`.
async fn tunnel(proxy: u16, id: &str, credential: &str, port: u16) -> tokio::net::TcpStream {
    let mut s = tokio::net::TcpStream::connect(("127.0.0.1", proxy)).await.unwrap();
    let auth = crate::rigs::client::auth(id, credential);
    let req = format!("CONNECT 127.0.0.1:{port} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{auth}\r\n");
    s.write_all(req.as_bytes()).await.unwrap();
    assert_eq!(read_connect_response(&mut s).await, 200);
    s
}

/// Wait until `t` is closed by cordon; how long it took.
async fn closed(t: &mut tokio::net::TcpStream, within: Duration) -> Duration {
    let start = Instant::now();
    let mut buf = [0u8; 16];
    match tokio::time::timeout(within, t.read(&mut buf)).await {
        Ok(Ok(0)) | Ok(Err(_)) => start.elapsed(),
        other => panic!("the tunnel stayed open: {other:?}"),
    }
}

async fn create(admin: std::net::SocketAddr, token: &str, ttl: &str) -> (String, String) {
    let body = format!(r#"{{"user":"alice","policy":"p","ttl":"{ttl}"}}"#);
    let (status, _, text) = admin_request(admin, "POST", "/v1/sandboxes", Some(token), &body).await;
    assert_eq!(status, 201, "{text}");
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    (
        v["id"].as_str().unwrap().to_owned(),
        v["credential"].as_str().unwrap().to_owned(),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn a_fork_flood_by_cordons_own_user_leaves_expiry_and_revocation_on_time() {
    let crate::rigs::jail::UserDir { dir, bin, .. } = crate::rigs::jail::user_dir("flood");
    let d = dir.path();
    // Something to tunnel to: accepts and holds every connection.
    let echo = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let echo_port = echo.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for s in echo.incoming().flatten() {
            held.push(s);
        }
    });
    let (proxy, admin_port) = (free_port(), free_port());
    let yaml = format!(
        r#"listen: {{ proxy: "127.0.0.1:{proxy}", admin: "127.0.0.1:{admin_port}" }}
audit: {{ path: {d}/audit.jsonl }}
ca: {{ dir: {d}/cas }}
control:
  admin_token: {{ file: {d}/admin-token }}
  signing_key: {{ file: {d}/signing-key }}
  store: {d}/cordon.db
  watch: false
network: {{ allow_cidrs: ["127.0.0.0/8"] }}
policies:
  p:
    allow:
      - {{ cidrs: ["127.0.0.1/32"], ports: [{echo_port}], tls: tunnel }}
"#,
        d = d.display()
    );
    std::fs::write(d.join("cordon.yaml"), yaml).unwrap();
    std::fs::write(d.join("flood.py"), FLOOD).unwrap();
    let mut c = as_user(&bin);
    let ok = Command::new("chown").args(["-R", USER]).arg(d).timed_status().unwrap();
    assert!(ok.success());
    c.args(["run", "--config"]).arg(d.join("cordon.yaml"));
    let child = c.stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
    let child = crate::rigs::process::await_listening(child, &format!("127.0.0.1:{admin_port}"), || {
        std::net::TcpStream::connect(("127.0.0.1", admin_port)).is_ok()
    })
    .await;
    let _kill = Killed(child);
    let admin = std::net::SocketAddr::from(([127, 0, 0, 1], admin_port));
    let token = crate::rigs::control::token(d);
    let token = token.as_str();

    // A sandbox that expires in the middle of the flood, with a tunnel open.
    let (short, short_cred) = create(admin, token, "3s").await;
    let expires = Instant::now() + Duration::from_secs(3);
    let (long, long_cred) = create(admin, token, "1h").await;
    let mut expiring = tunnel(proxy, &short, &short_cred, echo_port).await;
    let mut revoked = tunnel(proxy, &long, &long_cred, echo_port).await;

    let py = d.join("flood.py");
    let mut flood = as_user(std::path::Path::new("python3"));
    flood.arg(&py).arg("6").stdout(Stdio::piped());
    let flood = flood.spawn().unwrap();
    let took = closed(&mut expiring, Duration::from_secs(10)).await;
    let late = Instant::now().saturating_duration_since(expires);
    assert!(
        late < Duration::from_secs(1),
        "the expired sandbox's tunnel closed {late:?} after its expiry (waited {took:?}), during a fork flood"
    );
    let out = flood.timed_wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("forked "), "the flood did not run: {text}");

    // After it: a revocation closes the other tunnel within a second.
    let (status, _, text) = admin_request(admin, "DELETE", &format!("/v1/sandboxes/{long}"), Some(token), "").await;
    assert!(status == 200 || status == 204, "{status} {text}");
    let took = closed(&mut revoked, Duration::from_secs(5)).await;
    assert!(
        took < Duration::from_secs(1),
        "the revoked sandbox's tunnel closed after {took:?}"
    );
    // Nothing of cordon's stopped: no background task was left dead (a restart would be counted and logged).
    let (_, _, metrics) = admin_request(admin, "GET", "/metrics", None, "").await;
    assert!(metrics.contains("cordon_sandboxes"), "{metrics}");
}
