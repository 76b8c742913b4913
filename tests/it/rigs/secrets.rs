//! A `cordon` process in front of the leaky upstream, with two `mask_echo` credentials bound to it, one
//! injected as a header and one swapped for a placeholder; and the spellings of a secret the tests look for.

use std::io::Write;
use std::net::SocketAddr;

use base64::Engine;

use crate::rigs::client::hash;
use crate::rigs::leaky::{Leaks, leaky};
use crate::rigs::process::Signal;
use crate::rigs::tls::{TestCa, test_ca};
use crate::rigs::wait::{TimedChild, Within};

/// The header credential's secret: `/`, `+` and `=` make its JSON, percent and base64 forms differ from it.
pub(crate) const BEARER: &str = "sk-live/Ab+Cd=Ef_0123456789xyz";

/// The placeholder credential's secret.
pub(crate) const APIKEY: &str = "ak-9f8e7d6c5b4a/3210-sandbox-key";

/// A running `cordon` in front of the leaky upstream.
pub(crate) struct Rig {
    pub port: u16,
    pub up: SocketAddr,
    pub leaks: Leaks,
    pub dir: tempfile::TempDir,
    pub config: tempfile::NamedTempFile,
    pub child: Option<std::process::Child>,
}

impl Rig {
    pub(crate) async fn start() -> Rig {
        let upstream_ca = test_ca("secrets upstream CA");
        let (up, leaks) = leaky(&upstream_ca).await;
        Rig::in_front_of(up, leaks, &upstream_ca).await
    }

    /// The same `cordon` in front of another upstream for `leaky.test` (on 127.0.0.5, its certificate
    /// signed by `upstream_ca`).
    pub(crate) async fn in_front_of(up: SocketAddr, leaks: Leaks, upstream_ca: &TestCa) -> Rig {
        let dir = tempfile::tempdir().unwrap();
        let roots = dir.path().join("upstream-ca.pem");
        std::fs::write(&roots, &upstream_ca.pem).unwrap();
        let port = crate::rigs::ports::free_port();
        let p = up.port();
        let yaml = format!(
            r#"
listen: {{ proxy: 127.0.0.1:{port} }}
network:
  allow_cidrs: ["127.0.0.0/8"]
  hosts: {{ leaky.test: 127.0.0.5, other.test: 127.0.0.5 }}
ca: {{ dir: {cas} }}
upstream: {{ extra_roots: [{roots}] }}
vault: {{ file: {{ path: {vault} }} }}
credentials:
  bearer:
    source: {{ env: S_BEARER }}
    bind: {{ hosts: [leaky.test], ports: [{p}] }}
    inject: {{ header: Authorization, value: "Bearer {{secret}}" }}
    mask_echo: true
  apikey:
    source: {{ env: S_APIKEY }}
    bind: {{ hosts: [leaky.test], ports: [{p}] }}
    inject: {{ placeholder: {{ query: true, body: true }} }}
    mask_echo: true
sandboxes:
  - {{ id: sb, user: u, token_sha256: {h}, policy: p }}
policies:
  p:
    credentials: [bearer, apikey]
    allow:
      - {{ host: leaky.test, ports: [{p}] }}
      - {{ host: other.test, ports: [{p}] }}
"#,
            cas = dir.path().join("cas").display(),
            roots = roots.display(),
            vault = dir.path().join("vault/cordon.vault").display(),
            h = hash("tok"),
        );
        let mut config = tempfile::Builder::new().suffix(".yaml").tempfile().unwrap();
        config.write_all(yaml.as_bytes()).unwrap();
        let env = [("S_BEARER", BEARER), ("S_APIKEY", APIKEY)];
        let child = crate::rigs::process::spawn_cordon(config.path(), port, &env).await;
        Rig {
            port,
            up,
            leaks,
            dir,
            config,
            child: Some(child),
        }
    }

    pub(crate) fn proxy(&self) -> String {
        format!("http://sb:tok@127.0.0.1:{}", self.port)
    }

    pub(crate) fn url(&self, host: &str, path: &str) -> String {
        format!("https://{host}:{}{path}", self.up.port())
    }

    /// The sandbox's CA, as `cordon ca export` writes it.
    pub(crate) fn ca(&self) -> std::path::PathBuf {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_cordon"))
            .args(["ca", "export", "--sandbox", "sb", "--config"])
            .arg(self.config.path())
            .timed_output()
            .unwrap();
        let path = self.dir.path().join("sb-ca.pem");
        std::fs::write(&path, &out.stdout).unwrap();
        path
    }

    /// The placeholder of any credential for the sandbox, computed as cordon does (the key beside the vault,
    /// over the sandbox's incarnation `sb@u`): what a header credential's secret is masked with.
    pub(crate) fn placeholder_of(&self, credential: &str) -> String {
        let key = self.dir.path().join("vault/placeholder.key");
        cordon::placeholder::Placeholders::load(&key).unwrap().value(
            &cordon::names::Incarnation::declared(&cordon::names::SandboxId::parse("sb").unwrap(), "u"),
            &credential.into(),
        )
    }

    /// The placeholder of a placeholder credential, as `cordon placeholders` prints it.
    pub(crate) fn placeholder(&self, credential: &str) -> String {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_cordon"))
            .args(["placeholders", "--sandbox", "sb", "--config"])
            .arg(self.config.path())
            .timed_output()
            .unwrap();
        let var = format!("CORDON_PLACEHOLDER_{}=", credential.to_uppercase());
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .find_map(|l| l.strip_prefix(&var).map(str::to_string))
            .unwrap_or_else(|| panic!("no placeholder for {credential}"))
    }

    /// curl through cordon, trusting the sandbox's CA.
    pub(crate) fn curl(&self) -> std::process::Command {
        let mut c = crate::rigs::process::curl();
        c.arg("-x").arg(self.proxy()).arg("--cacert").arg(self.ca());
        c
    }

    /// Stop cordon; everything it wrote (audit lines and logs).
    pub(crate) fn output(&mut self) -> String {
        let child = self.child.take().unwrap();
        let _ = crate::rigs::process::signal(child.id(), Signal::SIGTERM);
        let out = child.timed_wait_with_output().unwrap();
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    }

    /// The cordon process's peak resident memory, in KiB.
    pub(crate) fn peak_rss_kib(&self) -> u64 {
        let pid = self.child.as_ref().unwrap().id();
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap()
    }
}

impl Drop for Rig {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.timed_wait();
        }
    }
}

/// Every way the secrets can be written, for searching output: raw, base64 of it and of `user:` + it.
pub(crate) fn spellings(secret: &str) -> Vec<String> {
    let e = |s: String| base64::engine::general_purpose::STANDARD.encode(s);
    vec![
        secret.to_string(),
        e(secret.to_string()),
        e(format!("user:{secret}")),
        hex::encode(secret),
    ]
}
