//! `cordon explain` judges cordon's own listeners as live traffic does (issue 53, item 13): for every kind of
//! listener a configuration opens (proxy, admin, transparent, DNS, preview, console), a request to it is
//! explained and then sent live through the proxy with curl, and both say deny for `self_address`, by IP, by a
//! name that resolves to it and by its IPv4-mapped IPv6 form, as a plain request and as a CONNECT. Wildcard
//! listeners (0.0.0.0, [::]) are reached through 127.0.0.2, ::1 and the host's own address. A listener on port 0
//! is the one thing explain cannot know (the kernel picks the port when cordon starts): explain says allow with a
//! caveat naming the listener, and live traffic refuses the port it got.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::Value;

use crate::rigs::client::hash;
use crate::rigs::ports::free_port;
use crate::rigs::process::{BIN, Killed, Log, curl, spawn_cordon};
use crate::rigs::upstreams::upstream;
use crate::rigs::wait::Within;

/// A cordon started on a configuration of the test's, with its audit log.
struct Rig {
    dir: tempfile::TempDir,
    config: PathBuf,
    proxy: u16,
    _child: Killed,
}

/// The configuration: `listen` is the inside of `listen: {...}` (the proxy on 127.0.0.1:`proxy` is added),
/// `cidrs` the CIDRs the network and the one rule open, `ports` the ports the rule allows; no ports, no rule and
/// the policy in report mode (everything allowed: what refuses is the guard alone).
fn yaml(d: &Path, proxy: u16, listen: &str, cidrs: &[String], ports: &[u16], console: u16) -> String {
    let cidrs = cidrs.iter().map(|c| format!("\"{c}\"")).collect::<Vec<_>>().join(", ");
    // The sections a preview and a console listener need.
    let previews = if listen.contains("preview:") {
        "previews: { domain: preview.localhost }\n"
    } else {
        ""
    };
    let console = if listen.contains("console:") {
        format!(
            "console:\n  url: http://127.0.0.1:{console}\n  oidc:\n    issuer: http://127.0.0.1:9\n    \
             client_id: cordon-console\n    client_secret: {{ env: EXPLAIN_OWN_SECRET }}\n    \
             roles: {{ ops: [approver] }}\n"
        )
    } else {
        String::new()
    };
    let policy = if ports.is_empty() {
        "mode: report\n    allow: []".to_owned()
    } else {
        let ports = ports.iter().map(u16::to_string).collect::<Vec<_>>().join(", ");
        format!(
            "allow:\n      - {{ cidrs: [{cidrs}], ports: [{ports}] }}\n      - {{ host: own.test, ports: [{ports}] }}"
        )
    };
    format!(
        r#"
listen: {{ proxy: 127.0.0.1:{proxy}, {listen} }}
network:
  allow_cidrs: [{cidrs}]
  hosts: {{ own.test: 127.0.0.1 }}
{previews}{console}ca: {{ dir: {d}/cas }}
audit: {{ path: {d}/audit.jsonl }}
control: {{ watch: false, admin_token: {{ file: {d}/admin-token }} }}
sandboxes:
  - {{ id: s, user: alice, token_sha256: {h}, policy: p }}
policies:
  p:
    {policy}
"#,
        d = d.display(),
        h = hash("tok-s"),
    )
}

const ENV: [(&str, &str); 1] = [("EXPLAIN_OWN_SECRET", "not-used-here")];

/// Start cordon with its proxy on 127.0.0.1:`proxy` (the rule names the port too), and follow its log.
async fn start(proxy: u16, listen: &str, cidrs: &[String], ports: &[u16], console: u16) -> (Rig, Log) {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("cordon.yaml");
    std::fs::write(&config, yaml(dir.path(), proxy, listen, cidrs, ports, console)).unwrap();
    let mut child = spawn_cordon(&config, proxy, &ENV).await;
    let log = Log::follow(&mut child);
    (
        Rig {
            dir,
            config,
            proxy,
            _child: Killed(child),
        },
        log,
    )
}

/// What one side said: allow or deny, and the reason code of the refusal (if any).
#[derive(Debug, PartialEq)]
struct Said {
    verdict: String,
    reason: Option<String>,
}

impl Rig {
    /// `cordon explain --json GET url` for sandbox `s`: what it said, and its caveats.
    fn explain(&self, url: &str) -> (Said, Vec<String>) {
        let out = Command::new(BIN)
            .args(["explain", "--json", "--sandbox", "s", "--config"])
            .arg(&self.config)
            .arg(url)
            .envs(ENV)
            .timed_output()
            .unwrap();
        let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "explain {url}: not JSON ({e}): {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            )
        });
        let reason = v["exchanges"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|e| e["reason"].as_str())
            .next_back()
            .map(str::to_owned);
        let caveats = v["caveats"]
            .as_array()
            .map(|c| c.iter().map(|c| c.as_str().unwrap().to_owned()).collect())
            .unwrap_or_default();
        (
            Said {
                verdict: v["verdict"].as_str().unwrap().to_owned(),
                reason,
            },
            caveats,
        )
    }

    /// `GET url` live through the proxy as sandbox `s`: allow when the upstream answered (any status cordon
    /// did not make itself: nothing is refused in the records), else deny with the record's reason.
    async fn live(&self, url: &str) -> Said {
        let audit = self.dir.path().join("audit.jsonl");
        let records = || -> Vec<Value> {
            let text = std::fs::read_to_string(&audit).unwrap_or_default();
            let whole = text.rfind('\n').map_or("", |end| &text[..end]);
            whole
                .lines()
                .map(|l| serde_json::from_str::<Value>(l).unwrap())
                .filter(|r| ["connect", "https", "http"].contains(&r["kind"].as_str().unwrap_or_default()))
                .collect()
        };
        let before = records().len();
        let mut c = curl();
        c.args(["-s", "--max-time", "5"])
            .args(["-x", &format!("http://s:tok-s@127.0.0.1:{}", self.proxy), "-k", url]);
        let r = crate::rigs::curl::run(c);
        let codes = format!("{} {}", r.status, r.connect);
        // The first record of this request, then a moment for a tunnel's to follow.
        for _ in 0..300 {
            if records().len() > before {
                tokio::time::sleep(Duration::from_millis(150)).await;
                let new: Vec<Value> = records().split_off(before);
                let reason = new.iter().find_map(|r| r["reason"].as_str()).map(str::to_owned);
                let denied = new.iter().any(|r| r["decision"] == "deny");
                return Said {
                    verdict: if denied { "deny" } else { "allow" }.to_owned(),
                    reason,
                };
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("no audit record for {url} (curl said {codes})");
    }

    /// Explain and live traffic agree on `url`, and say `want` (deny for `self_address`, or allow).
    async fn agree(&self, url: &str, want: &Said, failures: &mut Vec<String>) {
        let (explained, caveats) = self.explain(url);
        let live = self.live(url).await;
        if explained != live || live != *want || !caveats.is_empty() {
            failures.push(format!(
                "{url}: explain {explained:?} (caveats {caveats:?}), live {live:?}, expected {want:?}"
            ));
        }
    }
}

fn self_address() -> Said {
    Said {
        verdict: "deny".into(),
        reason: Some("self_address".into()),
    }
}

/// The URLs that reach `host:port`, plain and through CONNECT.
fn both(host: &str, port: u16) -> [String; 2] {
    [format!("http://{host}:{port}/"), format!("https://{host}:{port}/")]
}

#[tokio::test(flavor = "multi_thread")]
async fn explain_and_live_traffic_refuse_every_listener_alike() {
    let (admin, transparent, dns, preview, console) = (free_port(), free_port(), free_port(), free_port(), free_port());
    let up = upstream("127.0.0.3").await;
    let listen = format!(
        "admin: 127.0.0.1:{admin}, transparent: 127.0.0.1:{transparent}, dns: 127.0.0.1:{dns}, \
         preview: 127.0.0.1:{preview}, console: 127.0.0.1:{console}"
    );
    let proxy = free_port();
    // The rule opens every listener's port, so only the guard stands between a sandbox and them.
    let ports = [proxy, admin, transparent, dns, preview, console, up.addr.port()];
    // The mapped form of 127.0.0.0/8 too, so that the rule allows [::ffff:127.0.0.1] and the guard decides.
    let cidrs = [
        "127.0.0.0/8".to_string(),
        "::1/128".into(),
        "::ffff:127.0.0.0/104".into(),
    ];
    let (rig, _log) = start(proxy, &listen, &cidrs, &ports, console).await;
    let mut failures = Vec::new();
    for port in [rig.proxy, admin, transparent, dns, preview, console] {
        for host in ["127.0.0.1", "own.test", "[::ffff:127.0.0.1]"] {
            for url in both(host, port) {
                rig.agree(&url, &self_address(), &mut failures).await;
            }
        }
    }
    // A server that is not cordon's, on an allowed port: both allow.
    let allowed = Said {
        verdict: "allow".into(),
        reason: None,
    };
    rig.agree(
        &format!("http://127.0.0.3:{}/", up.addr.port()),
        &allowed,
        &mut failures,
    )
    .await;
    assert!(
        failures.is_empty(),
        "explain and live traffic part:\n{}",
        failures.join("\n")
    );
    assert!(up.seen().len() == 1, "the upstream saw {} requests", up.seen().len());
}

/// This machine's own IPv4 address off loopback, if it has one.
fn host_address() -> Option<String> {
    let out = Command::new("ip")
        .args(["-4", "-o", "addr", "show", "scope", "global"])
        .timed_output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let cidr = text.split_whitespace().skip_while(|w| *w != "inet").nth(1)?;
    Some(cidr.split('/').next()?.to_owned())
}

#[tokio::test(flavor = "multi_thread")]
async fn explain_and_live_traffic_refuse_wildcard_listeners_through_any_local_address() {
    let (admin, transparent, dns, console) = (free_port(), free_port(), free_port(), free_port());
    let listen = format!(
        "admin: 0.0.0.0:{admin}, transparent: \"[::]:{transparent}\", dns: \"[::]:{dns}\", \
         console: 127.0.0.1:{console}"
    );
    let mut cidrs = vec!["127.0.0.0/8".to_string(), "::1/128".to_string()];
    let host = host_address();
    match &host {
        Some(ip) => cidrs.push(format!("{ip}/32")),
        None => {
            eprintln!("this machine has no IPv4 address off loopback: the wildcard is reached through loopback only")
        }
    }
    let proxy = free_port();
    let (rig, _log) = start(proxy, &listen, &cidrs, &[admin, transparent, dns], console).await;
    let mut hosts = vec![
        "127.0.0.1".to_string(),
        "127.0.0.2".into(),
        "127.1.2.3".into(),
        "[::1]".into(),
    ];
    hosts.extend(host);
    let mut failures = Vec::new();
    for port in [admin, transparent, dns] {
        for host in &hosts {
            for url in both(host, port) {
                rig.agree(&url, &self_address(), &mut failures).await;
            }
        }
    }
    assert!(
        failures.is_empty(),
        "explain and live traffic part:\n{}",
        failures.join("\n")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_listener_on_port_0_is_a_caveat_in_explain_and_refused_live() {
    let console = free_port();
    let proxy = free_port();
    let (rig, log) = start(proxy, "admin: 127.0.0.1:0", &["127.0.0.0/8".into()], &[], console).await;
    let said = log.until("admin API on http://", 1).await;
    let port: u16 = said
        .split("admin API on http://127.0.0.1:")
        .nth(1)
        .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no admin port in the log:\n{said}"));
    for url in both("127.0.0.1", port) {
        let (explained, caveats) = rig.explain(&url);
        assert_eq!(explained.verdict, "allow", "{url}: {explained:?}");
        assert!(
            caveats.len() == 1
                && caveats[0].starts_with("listen.admin is 127.0.0.1:0: its port is chosen when cordon starts")
                && caveats[0].contains("403 self_address"),
            "{url}: {caveats:?}"
        );
        assert_eq!(rig.live(&url).await, self_address(), "{url}");
    }
    // An address no port-0 listener can be on carries no caveat.
    let (_, caveats) = rig.explain("http://127.0.0.3:8080/");
    assert!(caveats.is_empty(), "{caveats:?}");
}
