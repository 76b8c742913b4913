//! AWS for the SigV4 tests: moto in server mode (IAM authentication on), the agent script (boto3) and
//! the AWS CLI as clients, and a sandbox created at run time with the environment it was given.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::rigs::process::{BIN, Killed};
use crate::rigs::wait::Within;

/// The agent script (boto3).
pub(crate) fn agent() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients/aws_agent.py")
}

/// moto with TLS on 127.0.0.2:`port`, checking signatures after `setup` calls made without.
pub(crate) async fn moto(dir: &Path, port: u16, setup: usize) -> Killed {
    let child = Command::new("python3")
        .args(["-m", "moto.server", "-H", "127.0.0.2", "-p", &port.to_string(), "-c"])
        .arg(dir.join("moto-cert.pem"))
        .arg("-k")
        .arg(dir.join("moto-key.pem"))
        .env("INITIAL_NO_AUTH_ACTION_COUNT", setup.to_string())
        // moto.test is a name of the server, not a bucket (path-style requests).
        .env("S3_IGNORE_SUBDOMAIN_BUCKETNAME", "true")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("python3 -m moto.server (pip install 'moto[server]'; .ci/run does)");
    let killed = Killed(child);
    crate::rigs::wait::listening("moto", &format!("127.0.0.2:{port}"), Duration::from_secs(20)).await;
    killed
}

/// Run the agent script or the AWS CLI with `env` only (plus PATH and HOME).
pub(crate) fn run(program: &str, args: &[&str], env: &BTreeMap<String, String>) -> Output {
    let mut c = Command::new(program);
    c.args(args).env_clear().envs(env);
    for keep in ["PATH", "HOME", "PYTHONPATH", "PYENV_ROOT", "PYENV_VERSION"] {
        if let Ok(v) = std::env::var(keep) {
            c.env(keep, v);
        }
    }
    c.timed_output().unwrap()
}

pub(crate) fn json(out: &Output) -> Value {
    let text = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(text.trim())
        .unwrap_or_else(|e| panic!("{e}: stdout {text:?}, stderr {}", String::from_utf8_lossy(&out.stderr)))
}

/// As [`json`], but a failing agent's panic shows the last records cordon wrote, so a refusal or an
/// upstream failure names its reason and detail instead of only the client's traceback.
pub(crate) fn json_or_audit(out: &Output, audit: &Path) -> Value {
    let text = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(text.trim()).unwrap_or_else(|e| {
        let records = std::fs::read_to_string(audit).unwrap_or_default();
        let tail: Vec<&str> = records.lines().rev().take(8).collect();
        panic!(
            "{e}: stdout {text:?}, stderr {}\nlast audit records (newest first):\n{}",
            String::from_utf8_lossy(&out.stderr),
            tail.join("\n")
        )
    })
}

/// A run-time sandbox of `policy`, as `cordon sandbox create --format dotenv` prints its environment.
pub(crate) fn sandbox(config: &Path, id: &str, policy: &str) -> (BTreeMap<String, String>, String) {
    let out = Command::new(BIN)
        .args([
            "sandbox", "create", "--user", "alice", "--policy", policy, "--id", id, "--format", "dotenv",
        ])
        .arg("--config")
        .arg(config)
        .timed_output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let env = text
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.trim_matches('"').trim_matches('\'').to_string()))
        .collect();
    (env, text)
}
