//! The audit log through the binary: runs of cordon that append to one chain, `cordon audit verify`,
//! copies to tamper with, the JSON schema every test's log must pass (docs/audit.schema.json), and a cordon
//! under load whose records are read back.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;

use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

use crate::rigs::client::{auth, hash, read_response};
use crate::rigs::control::admin_request;
use crate::rigs::ports::free_port;
use crate::rigs::process::{BIN, Signal, curl, spawn_cordon};
use crate::rigs::wait::Within;

/// Requests that each leave one record (407: no credentials), then stop with `signal`.
pub(crate) async fn run_once(config: &Path, port: u16, requests: usize, signal: Signal) {
    let child = spawn_cordon(config, port, &[]).await;
    for i in 0..requests {
        let out = curl()
            .args([
                "-s",
                "-o",
                "/dev/null",
                "-w",
                "%{http_code}",
                "-x",
                &format!("http://127.0.0.1:{port}"),
            ])
            .arg(format!("http://host-{i}.test/"))
            .timed_output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout), "407");
    }
    // A checkpoint falls due within the run (audit.checkpoint_interval is 300ms).
    tokio::time::sleep(std::time::Duration::from_millis(700)).await;
    crate::rigs::process::signal_and_wait(child, signal).await;
}

/// `cordon audit verify ARGS FILES`: exit code and stdout.
pub(crate) fn verify(args: &[&str], files: &[&Path]) -> (i32, String) {
    let out = Command::new(BIN)
        .args(["audit", "verify"])
        .args(args)
        .args(files)
        .timed_output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

/// A configuration in a new folder: the proxy on a free port, the audit log `audit.jsonl` signed with a key
/// file cordon creates on first start, checkpoints every `interval`.
pub(crate) fn signed_config(interval: &str) -> (tempfile::TempDir, u16, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display().to_string();
    let port = crate::rigs::ports::free_port();
    let config = dir.path().join("cordon.yaml");
    std::fs::write(
        &config,
        format!(
            "listen: {{ proxy: 127.0.0.1:{port} }}\nca: {{ dir: {d}/cas }}\naudit:\n  path: {d}/audit.jsonl\n  \
             signing_key: {{ file: {d}/audit-key }}\n  checkpoint_interval: {interval}\n"
        ),
    )
    .unwrap();
    (dir, port, config)
}

/// A copy of `lines` as a file `name` in `dir`.
pub(crate) fn copy(dir: &Path, name: &str, lines: &[String]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, lines.iter().map(|l| format!("{l}\n")).collect::<String>()).unwrap();
    path
}

/// Every line of the audit file at `path` is valid against docs/audit.schema.json (checked by the `jsonschema`
/// Python package, Draft 2020-12, with formats checked), and there is at least one line.
pub(crate) fn assert_schema(path: &Path) {
    let schema = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/audit.schema.json");
    let script = r#"
import json, sys, jsonschema
schema = json.load(open(sys.argv[1]))
jsonschema.Draft202012Validator.check_schema(schema)
v = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
n = 0
for i, line in enumerate(open(sys.argv[2]), 1):
    for e in v.iter_errors(json.loads(line)):
        print(f"line {i}: {e.message} at {list(e.absolute_path)}")
        sys.exit(1)
    n += 1
print(n)
"#;
    let out = Command::new("python3")
        .args(["-c", script])
        .arg(&schema)
        .arg(path)
        .timed_output()
        .unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "{} against the audit schema: {said}",
        path.display()
    );
    assert!(
        said.trim().parse::<u32>().unwrap_or(0) > 0,
        "no line in {}",
        path.display()
    );
}

pub(crate) struct Cordon {
    pub(crate) config: PathBuf,
    pub(crate) proxy: u16,
    pub(crate) admin: u16,
    pub(crate) up: u16,
    dir: PathBuf,
}

/// A configuration for one sandbox (`sb1`, token `tok1`) allowed to `allowed.test` (the upstream on
/// 127.0.0.2) with no rate to speak of, its audit file at `audit`, `audit_extra` more keys of `audit:` (flow
/// style, each followed by a comma).
pub(crate) fn setup(dir: &Path, audit: &Path, up: u16, audit_extra: &str) -> Cordon {
    let (proxy, admin) = (free_port(), free_port());
    let d = dir.display();
    let yaml = format!(
        "listen: {{ proxy: 127.0.0.1:{proxy}, admin: 127.0.0.1:{admin} }}\nca: {{ dir: {d}/cas }}\n\
         network: {{ allow_cidrs: [127.0.0.0/8], hosts: {{ allowed.test: 127.0.0.2 }} }}\n\
         control: {{ watch: false, admin_token: {{ file: {d}/admin-token }} }}\n\
         limits: {{ per_sandbox: {{ requests: {{ per_second: 100000, burst: 100000 }} }}, per_user: {{ requests: {{ per_second: 100000, burst: 100000 }} }} }}\n\
         audit: {{ {audit_extra} path: {}, signing_key: {{ file: {d}/audit-key }} }}\n\
         sandboxes: [{{ id: sb1, user: alice, token_sha256: {}, policy: web }}]\n\
         policies: {{ web: {{ allow: [{{ host: allowed.test, ports: [{up}] }}] }} }}\n",
        audit.display(),
        hash("tok1"),
    );
    let config = dir.join("cordon.yaml");
    std::fs::write(&config, yaml).unwrap();
    Cordon {
        config,
        proxy,
        admin,
        up,
        dir: dir.to_path_buf(),
    }
}

impl Cordon {
    /// One request for `path` on `conn` (opened when none): the status, or `None` when the connection failed.
    pub(crate) async fn get(&self, conn: &mut Option<TcpStream>, path: &str) -> Option<(u16, Option<String>)> {
        if conn.is_none() {
            *conn = TcpStream::connect(("127.0.0.1", self.proxy)).await.ok();
        }
        let stream = conn.as_mut()?;
        let req = format!(
            "GET http://allowed.test:{}{path} HTTP/1.1\r\nHost: allowed.test:{}\r\n{}\r\n",
            self.up,
            self.up,
            auth("sb1", "tok1")
        );
        if stream.write_all(req.as_bytes()).await.is_err() {
            *conn = None;
            return None;
        }
        let resp = read_response(stream).await;
        let Some(resp) = resp else {
            *conn = None;
            return None;
        };
        if resp.header("connection") == Some("close") {
            *conn = None;
        }
        Some((resp.status, resp.header("x-cordon-reason").map(str::to_string)))
    }

    pub(crate) async fn admin(&self, path: &str) -> (u16, String) {
        let token = std::fs::read_to_string(self.dir.join("admin-token")).unwrap();
        let at = SocketAddr::from(([127, 0, 0, 1], self.admin));
        let (status, _, body) = admin_request(at, "GET", path, Some(token.trim()), "").await;
        (status, body)
    }

    pub(crate) fn verify(&self, files: &[&Path]) -> (i32, String) {
        let out = Command::new(BIN)
            .args(["audit", "verify", "--config"])
            .arg(&self.config)
            .args(files)
            .timed_output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (out.status.code().unwrap_or(-1), text)
    }
}

/// The records in `path` (lines with a `status`), parsed.
pub(crate) fn records(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v.get("status").is_some())
        .collect()
}
