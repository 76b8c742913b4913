//! A sandbox CA left from another configuration, or broken, is refused at start, at reload and by `check`, with
//! a hint that is a command which runs: every hint these tests meet is run as printed (from another folder than
//! cordon's) and must exit 0, and after it cordon starts and the sandbox's HTTPS works.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::rigs::client::hash;
use crate::rigs::ports::free_port;
use crate::rigs::process::{BIN, await_listening};
use crate::rigs::tls::{https_upstream, test_ca};
use crate::rigs::wait::{TimedChild, Within};

/// A folder cordon runs in (relative `ca.dir: certs`, as in the quickstart), an HTTPS upstream for
/// `first.test` and `second.test`, and two configurations whose one sandbox intercepts one host each.
struct Setup {
    dir: tempfile::TempDir,
    port: u16,
    up: u16,
    _upstream: crate::rigs::upstreams::Upstream,
}

impl Setup {
    async fn new() -> Setup {
        let dir = tempfile::tempdir().unwrap();
        let upstream_ca = test_ca("hints upstream CA");
        std::fs::write(dir.path().join("upstream-ca.pem"), &upstream_ca.pem).unwrap();
        let upstream = https_upstream("127.0.0.2", upstream_ca.server_config(&["first.test", "second.test"])).await;
        let setup = Setup {
            port: free_port(),
            up: upstream.addr.port(),
            dir,
            _upstream: upstream,
        };
        for (name, host) in [("first.yaml", "first.test"), ("second.yaml", "second.test")] {
            std::fs::write(setup.dir.path().join(name), setup.yaml(host)).unwrap();
        }
        setup
    }

    fn yaml(&self, host: &str) -> String {
        format!(
            "listen: {{ proxy: 127.0.0.1:{port} }}\nca: {{ dir: certs }}\nupstream: {{ extra_roots: [upstream-ca.pem] }}\n\
             network:\n  allow_cidrs: [127.0.0.2/32]\n  hosts: {{ first.test: 127.0.0.2, second.test: 127.0.0.2 }}\n\
             sandboxes:\n  - {{ id: demo, user: u, token_sha256: {h}, policy: web }}\n\
             policies:\n  web:\n    allow:\n      - {{ host: {host}, ports: [{up}] }}\n",
            port = self.port,
            up = self.up,
            h = hash("tok"),
        )
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// `cordon ARGS` in the setup's folder: (exit code, stdout, stderr).
    fn cordon(&self, args: &[&str]) -> (i32, String, String) {
        let out = Command::new(BIN)
            .args(args)
            .current_dir(self.dir.path())
            .env_remove("CORDON_CONFIG")
            .timed_output()
            .unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    /// `cordon run --config NAME` in the setup's folder, stderr into `NAME.log`.
    fn spawn(&self, name: &str) -> Child {
        let log = std::fs::File::create(self.path(&format!("{name}.log"))).unwrap();
        Command::new(BIN)
            .args(["run", "--config", name])
            .current_dir(self.dir.path())
            .env_remove("CORDON_CONFIG")
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap()
    }

    async fn running(&self, name: &str) -> Child {
        let port = self.port;
        await_listening(self.spawn(name), &format!("127.0.0.1:{port}"), || {
            std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
        })
        .await
    }

    fn log(&self, name: &str) -> String {
        std::fs::read_to_string(self.path(&format!("{name}.log"))).unwrap_or_default()
    }

    /// GET https://HOST/ through the proxy, trusting the sandbox CA as `ca export --config CONFIG` prints it.
    fn https_status(&self, config: &str, host: &str) -> String {
        let (code, pem, err) = self.cordon(&["ca", "export", "--sandbox", "demo", "--config", config]);
        assert_eq!(code, 0, "{err}");
        let cacert = self.path("demo-ca.pem");
        std::fs::write(&cacert, pem).unwrap();
        let out = crate::rigs::process::curl()
            .args(["-o", "/dev/null", "-w", "%{http_code}"])
            .args(["-x", &format!("http://demo:tok@127.0.0.1:{}", self.port)])
            .arg("--cacert")
            .arg(&cacert)
            .arg(format!("https://{host}:{}/", self.up))
            .timed_output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

/// The commands a message gives in backquotes (`cordon …`, `cd … && cordon …`), each run as printed by `sh`
/// from `/` with the test's cordon first on PATH; every one must exit 0. Returns how many ran.
pub(crate) fn run_hints(message: &str) -> usize {
    let bin_dir = Path::new(BIN).parent().unwrap();
    let path = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap_or_default());
    let mut ran = 0;
    for (i, piece) in message.split('`').enumerate() {
        if i % 2 == 0 || !(piece.starts_with("cordon ") || piece.starts_with("cd ")) {
            continue;
        }
        let out = Command::new("sh")
            .args(["-c", piece])
            .current_dir("/")
            .env("PATH", &path)
            .env_remove("CORDON_CONFIG")
            .stdin(Stdio::null())
            .timed_output()
            .unwrap();
        assert!(
            out.status.success(),
            "the hint `{piece}` exits {:?}: {}",
            out.status.code(),
            String::from_utf8_lossy(&out.stderr)
        );
        ran += 1;
    }
    ran
}

async fn exits(mut child: Child) -> std::process::ExitStatus {
    for _ in 0..200 {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let _ = child.kill();
    panic!("cordon kept running");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_ca_made_for_another_policy_is_refused_by_check_and_run_until_the_hint_rotates_it() {
    let s = Setup::new().await;
    // The quickstart's CA, made for the first policy, is left in certs/demo.
    let (code, _, err) = s.cordon(&["ca", "export", "--sandbox", "demo", "--config", "first.yaml"]);
    assert_eq!(code, 0, "{err}");

    // check and run say so, naming the host, instead of a CONNECT 200 and a silent TLS failure.
    let (code, out, err) = s.cordon(&["check", "--config", "second.yaml"]);
    assert_eq!(code, 2, "check passed a CA that cannot sign for the policy: {out}{err}");
    assert!(err.contains("cannot sign for second.test"), "{err}");
    let status = exits(s.spawn("second.yaml")).await;
    assert!(!status.success());
    let refused = s.log("second.yaml");
    assert!(refused.contains("cannot sign for second.test"), "{refused}");
    assert!(!refused.contains("listening on"), "{refused}");

    // The hint, run as printed from elsewhere, issues the right CA; then everything passes.
    assert_eq!(run_hints(&refused), 1, "no command in: {refused}");
    let (code, _, err) = s.cordon(&["check", "--config", "second.yaml"]);
    assert_eq!(code, 0, "{err}");
    let mut child = s.running("second.yaml").await;
    assert_eq!(s.https_status("second.yaml", "second.test"), "200");
    child.kill().unwrap();
    child.timed_wait().unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_reload_to_a_policy_the_ca_does_not_cover_is_refused_until_the_hint_rotates_it() {
    let s = Setup::new().await;
    std::fs::copy(s.path("first.yaml"), s.path("live.yaml")).unwrap();
    let mut child = s.running("live.yaml").await;
    assert_eq!(s.https_status("live.yaml", "first.test"), "200");

    // The policy now intercepts another host: the reload is refused, the first configuration stays in force.
    std::fs::copy(s.path("second.yaml"), s.path("live.yaml")).unwrap();
    let mut log = String::new();
    for _ in 0..100 {
        log = s.log("live.yaml");
        if log.contains("cannot sign for second.test") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        log.contains("reload refused") && log.contains("cannot sign for second.test"),
        "{log}"
    );
    assert!(!log.contains("configuration reloaded"), "{log}");

    // The hint rotates the CA on disk; the next reload takes the configuration and the new CA with it.
    assert_eq!(run_hints(&log), 1, "{log}");
    crate::rigs::process::signal(child.id(), crate::rigs::process::Signal::SIGHUP).unwrap();
    for _ in 0..100 {
        if s.log("live.yaml").contains("configuration reloaded") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        s.log("live.yaml").contains("configuration reloaded"),
        "{}",
        s.log("live.yaml")
    );
    assert_eq!(s.https_status("live.yaml", "second.test"), "200");
    child.kill().unwrap();
    child.timed_wait().unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_broken_ca_names_a_rotation_that_runs() {
    let s = Setup::new().await;
    let sb = s.path("certs/demo");
    // Half a pair, then a key that is not the certificate's.
    for break_it in [
        Box::new(|sb: &Path| std::fs::remove_file(sb.join("ca.key")).unwrap()) as Box<dyn Fn(&Path)>,
        Box::new(|sb: &Path| {
            let other = rcgen::KeyPair::generate().unwrap();
            std::fs::write(sb.join("ca.key"), other.serialize_pem()).unwrap();
        }),
    ] {
        let (code, _, err) = s.cordon(&["ca", "export", "--sandbox", "demo", "--config", "first.yaml"]);
        assert_eq!(code, 0, "{err}");
        break_it(&sb);
        // `ca export` and `run` both refuse it, each with the command that makes a new CA.
        let (code, _, err) = s.cordon(&["ca", "export", "--sandbox", "demo", "--config", "first.yaml"]);
        assert_ne!(code, 0);
        assert!(err.contains("to make a new CA"), "{err}");
        assert!(!exits(s.spawn("first.yaml")).await.success());
        let refused = s.log("first.yaml");
        assert_eq!(run_hints(&refused), 1, "no command in: {refused}");
        let mut child = s.running("first.yaml").await;
        assert_eq!(s.https_status("first.yaml", "first.test"), "200");
        child.kill().unwrap();
        child.timed_wait().unwrap();
    }
}

#[test]
fn the_vault_hint_runs() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("c.yaml");
    std::fs::write(&config, "vault: { file: { path: v/cordon.vault } }\n").unwrap();
    let out = Command::new(BIN)
        .args(["vault", "set", "api", "--config"])
        .arg(&config)
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .timed_output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    // `printf %s "$TOKEN" | (cd … && cordon vault set api --config …)`: run with TOKEN set, it stores the value.
    let hint = err.split('`').nth(1).unwrap();
    let bin_dir = Path::new(BIN).parent().unwrap();
    let status = Command::new("sh")
        .args(["-c", hint])
        .current_dir("/")
        .env("TOKEN", "s3cret")
        .env(
            "PATH",
            format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap()),
        )
        .timed_status()
        .unwrap();
    assert!(status.success(), "`{hint}`");
    let out = Command::new(BIN)
        .args(["vault", "list", "--config"])
        .arg(&config)
        .current_dir(dir.path())
        .timed_output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "api");
}
