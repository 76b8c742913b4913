//! The gateway world (docs/src/deploying/gateway.md) in network namespaces: cordon in a "gateway" namespace with
//! deploy/gateway/cordon-gateway.nft loaded for the link to a "sandbox" namespace standing in for a VM,
//! upstreams in an "internet" one; and cordon started there, killed when dropped.

use std::path::PathBuf;
use std::process::{Child, Stdio};
use std::time::Duration;

use crate::rigs::netns::Net;
use crate::rigs::process::{BIN, await_listening};
use crate::rigs::tls::{https_upstream_on, test_ca};
use crate::rigs::upstreams::{Upstream, upstream_on};
use crate::rigs::wait::{TimedChild, Within};

/// The namespaces, the upstreams in them, and a folder for cordon's files.
pub(crate) struct World {
    pub net: Net,
    pub api: Upstream,
    pub plain: Upstream,
    pub metadata: Upstream,
    pub dir: tempfile::TempDir,
}

impl World {
    pub(crate) async fn new() -> World {
        let net = Net::new();
        let upstream_ca = test_ca("netns upstream CA");
        let inet = net.inet_ip();
        let tls = upstream_ca.server_config(&["api.test", "denied.test"]);
        let api = https_upstream_on(net.listen(&net.inet, &format!("{inet}:443")), tls);
        let plain = upstream_on(net.listen(&net.inet, &format!("{inet}:80")));
        let metadata = upstream_on(net.listen(&net.meta, "169.254.169.254:80"));
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("upstream-ca.pem"), &upstream_ca.pem).unwrap();
        World {
            net,
            api,
            plain,
            metadata,
            dir,
        }
    }

    pub(crate) fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// `cordon` in the gateway's namespace, started in an empty folder of the test's own (as a person runs a
    /// jail from their project): the test process's folder (the repository, where other tests' cordons leave
    /// `vault/placeholder.key` from the default configuration) is the root jail's writable folder otherwise.
    pub(crate) fn cordon_in_gateway(&self) -> std::process::Command {
        let work = self.path("work");
        std::fs::create_dir_all(&work).unwrap();
        let mut c = self.net.enter(&self.net.gw, BIN);
        c.current_dir(work);
        c
    }

    /// A config for sandbox `id` (known by `source`, if given), allowing api.test on 80 and 443.
    pub(crate) fn config(&self, id: &str, listen: &str, source: Option<&str>) -> PathBuf {
        let d = self.dir.path().display();
        let inet = self.net.inet_ip();
        let identity = match source {
            Some(s) => format!("source_cidrs: [\"{s}\"]"),
            None => format!("token_sha256: \"{}\"", crate::rigs::client::hash("unused-token")),
        };
        let yaml = format!(
            "{listen}
audit: {{ path: {d}/audit.log }}
ca: {{ dir: {d}/cas }}
upstream: {{ extra_roots: [{d}/upstream-ca.pem] }}
timeouts: {{ tls_handshake: 2s }}
network:
  allow_cidrs: [\"{inet}/32\"]
  hosts: {{ api.test: [\"{inet}\"], denied.test: [\"{inet}\"] }}
sandboxes:
  - id: {id}
    user: alice
    policy: p
    {identity}
policies:
  p:
    allow:
      - host: api.test
        ports: [80, 443]
"
        );
        let path = self.path("cordon.yaml");
        std::fs::write(&path, yaml).unwrap();
        path
    }

    /// Give the configuration at `config` a control plane (admin token, signing key, store) and `extra` more
    /// lines of `control:`.
    /// The admin API on the gateway's address serves /v1 over HTTPS only: a certificate for that address, signed
    /// by a CA of the test's own (`admin-ca.pem`, which [`World::admin`] trusts).
    pub(crate) fn with_control(&self, config: &std::path::Path, extra: &str) {
        let d = self.dir.path().display();
        let ca = test_ca("gateway admin CA");
        let (cert, key) = ca.pem_pair(&[&self.net.gw_ip()]);
        std::fs::write(self.path("admin-ca.pem"), &ca.pem).unwrap();
        std::fs::write(self.path("admin.crt"), cert).unwrap();
        std::fs::write(self.path("admin.key"), key).unwrap();
        let mut yaml = std::fs::read_to_string(config).unwrap();
        yaml.push_str(&format!(
            "admin:\n  tls: {{ cert: {{ file: {d}/admin.crt }}, key: {{ file: {d}/admin.key }} }}\n\
             control:\n  admin_token: {{ file: {d}/admin-token }}\n  signing_key: {{ file: {d}/signing-key }}\n  \
             store: {d}/state/cordon.db\n{extra}"
        ));
        std::fs::write(config, yaml).unwrap();
    }

    /// curl to the admin API (https:// on the gateway's address) from the gateway's namespace, with the admin
    /// token, trusting the admin listener's CA.
    pub(crate) fn admin(&self, args: &[&str]) -> String {
        let token = crate::rigs::control::token(self.dir.path());
        let auth = format!("Authorization: Bearer {token}");
        let ca = self.path("admin-ca.pem").display().to_string();
        let mut full = vec!["curl", "-sS", "-m", "5", "--cacert", &ca, "-H", &auth];
        full.extend_from_slice(args);
        String::from_utf8_lossy(&self.net.exec(&self.net.gw, &full).stdout).into_owned()
    }

    /// `cordon ca export`: the sandbox's CA file, for the sandbox's clients to trust.
    pub(crate) fn sandbox_ca(&self, config: &std::path::Path, id: &str) -> PathBuf {
        let out = std::process::Command::new(BIN)
            .args(["ca", "export", "--sandbox", id, "--config"])
            .arg(config)
            .timed_output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let path = self.path(&format!("{id}-ca.pem"));
        std::fs::write(&path, out.stdout).unwrap();
        path
    }

    /// Every audit record written so far.
    pub(crate) fn audit(&self) -> Vec<serde_json::Value> {
        std::fs::read_to_string(self.path("audit.log"))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    /// The audit records once `all` of the conditions hold of them (a record is written when its
    /// connection ends, a moment after the client has seen the answer), or after 10 s, for the assertions
    /// that follow to report what is missing.
    pub(crate) async fn audit_until(&self, all: &[&dyn Fn(&serde_json::Value) -> bool]) -> Vec<serde_json::Value> {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        loop {
            let records = self.audit();
            if all.iter().all(|want| records.iter().any(want)) || std::time::Instant::now() > deadline {
                return records;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// `curl` in the sandbox namespace, its output and exit code.
    pub(crate) fn curl(&self, args: &[&str]) -> (i32, String) {
        let mut full = vec!["curl", "-sS", "-m", "5"];
        full.extend_from_slice(args);
        let out = self.net.exec(&self.net.sbx, &full);
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (out.status.code().unwrap_or(-1), text)
    }
}

/// Load the gateway ruleset from deploy/ for the link to the sandbox namespace.
pub(crate) fn load_rules(net: &Net) {
    let rules = concat!(env!("CARGO_MANIFEST_DIR"), "/deploy/gateway/cordon-gateway.nft");
    let vm_if = format!("VM_IF=\"{}\"", net.sbx_if());
    let ip = format!("CORDON_IP={}", net.gw_ip());
    net.exec_ok(
        &net.gw,
        &[
            "nft",
            "-D",
            &vm_if,
            "-D",
            &ip,
            "-D",
            "PROXY_PORT=3128",
            "-D",
            "TRANSPARENT_PORT=15001",
            "-D",
            "DNS_PORT=15053",
            "-f",
            rules,
        ],
    );
}

/// A cordon process, killed when dropped (also when an assertion fails first).
pub(crate) struct Running(pub Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.timed_wait();
    }
}

pub(crate) async fn start_cordon(w: &World, config: &std::path::Path, proxy: &str) -> Running {
    let child = w
        .net
        .command(&w.net.gw, BIN)
        .args(["run", "--config"])
        .arg(config)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    Running(await_listening(child, proxy, || w.net.connectable(&w.net.gw, proxy)).await)
}
