//! `cordon jail -- CMD`, run inside a test namespace standing in for the host (so the host's own network
//! is never touched): the command reaches the allowed upstream by the proxy in its env and transparently,
//! reaches nothing else, and nothing the jail made is left afterwards — also after the jail is killed.

use std::time::Duration;

use cordon::jail::Plan;

use crate::rigs::gateway::World;
use crate::rigs::jail::{host_leftovers, jail, leftovers};
use crate::rigs::netns::available;
use crate::rigs::process::BIN;
use crate::rigs::wait::{TimedChild, Within};

#[tokio::test(flavor = "multi_thread")]
async fn a_jailed_command_reaches_only_cordon_and_the_jail_leaves_nothing() {
    if !available("a_jailed_command_reaches_only_cordon_and_the_jail_leaves_nothing") {
        return;
    }
    let w = World::new().await;
    let id = format!("jailed{}", w.net.n);
    let plan = Plan::new(
        &cordon::names::SandboxId::parse(&id).unwrap(),
        cordon::jail::plan::DEFAULT_SUBNET.parse().unwrap(),
    )
    .unwrap();
    let config = w.config(&id, "", None);
    reaches_only_cordon(&w, &config, &id, &[]);
    err_has_rules(&w, &config, &id, &[], "rules by nftables");
    assert!(leftovers(&w, &plan).is_empty(), "{:?}", leftovers(&w, &plan));

    // The same with iptables.
    let (code, out, err) = jail(
        &w,
        &config,
        &id,
        &["--firewall", "iptables"],
        &["curl", "-sS", "-m", "5", "--noproxy", "*", "https://api.test/hello"],
    );
    assert_eq!((code, out.trim()), (0, "hello from upstream"), "{err}");
    assert!(err.contains("rules by iptables"), "{err}");
    assert!(leftovers(&w, &plan).is_empty(), "{:?}", leftovers(&w, &plan));

    // Killed outright: the next run for the sandbox finds and removes what it left, then works.
    let crash = |w: &World| {
        // The jail's stderr goes to a file, to be shown if what it left is not what the test expects.
        let log = tempfile::NamedTempFile::new().unwrap();
        let mut child = w
            .cordon_in_gateway()
            .args(["jail", "--sandbox", &id, "--config"])
            .arg(&config)
            .args(["--user", "65534:65534", "--", "sleep", "30"])
            .stderr(log.reopen().unwrap())
            .spawn()
            .unwrap();
        let mut seen = Vec::new();
        for _ in 0..100 {
            seen = leftovers(w, &plan);
            if seen.len() >= 3 {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        child.kill().unwrap();
        child.timed_wait().unwrap();
        let after = leftovers(w, &plan);
        assert!(
            after.len() >= 3,
            "after the kill: {after:?}\nbefore it: {seen:?}\nlinks: {}\njail's stderr: {}",
            w.net.exec_ok(&w.net.gw, &["ip", "link"]),
            std::fs::read_to_string(log.path()).unwrap_or_default()
        );
    };
    crash(&w);
    assert!(
        !host_leftovers(&plan, &id).is_empty(),
        "a killed jail leaves its private home mounted and its cgroup"
    );
    let (code, _, err) = jail(&w, &config, &id, &[], &["true"]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("removing what an earlier jail left"), "{err}");
    assert!(err.contains("mount ") && err.contains("cgroup "), "{err}");
    assert!(leftovers(&w, &plan).is_empty(), "{:?}", leftovers(&w, &plan));
    assert!(
        host_leftovers(&plan, &id).is_empty(),
        "{:?}",
        host_leftovers(&plan, &id)
    );
    // Or `--cleanup`.
    crash(&w);
    let (code, out, err) = jail(&w, &config, &id, &["--cleanup"], &[]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("removed"), "{out}");
    assert!(leftovers(&w, &plan).is_empty(), "{:?}", leftovers(&w, &plan));
    assert!(
        host_leftovers(&plan, &id).is_empty(),
        "{:?}",
        host_leftovers(&plan, &id)
    );

    // And the audit has the records of it all.
    let records = w.audit();
    assert!(
        records
            .iter()
            .any(|r| r["kind"] == "connect" && r["sandbox"] == id.as_str() && r["host"] == "denied.test")
    );
    assert!(
        records
            .iter()
            .any(|r| r["kind"] == "transparent" && r["host"] == "api.test" && r["decision"] == "allow")
    );
    assert!(
        records
            .iter()
            .any(|r| r["kind"] == "transparent" && r["reason"] == "no_sni")
    );
}

/// The network cases of the escape suite, under the isolation `isolation` names (`--isolation gvisor`, or
/// nothing for the namespace jail): the command reaches the allowed upstream through the proxy in its env (with
/// the sandbox's CA) and transparently (by a name only cordon's DNS answers), and nothing else: another host by
/// name, the upstream by address, UDP, ICMP (as root); its user and exit code are its own.
pub(super) fn reaches_only_cordon(w: &World, config: &std::path::Path, id: &str, isolation: &[&str]) {
    let inet = w.net.inet_ip();

    // Through the proxy in its env (HTTPS_PROXY, and the sandbox CA in SSL_CERT_FILE/CURL_CA_BUNDLE).
    let (code, out, err) = jail(
        w,
        config,
        id,
        isolation,
        &["curl", "-sS", "-m", "5", "https://api.test/hello"],
    );
    assert_eq!((code, out.trim()), (0, "hello from upstream"), "{err}");
    // Ignoring the proxy: DNS and the connection are taken by cordon all the same.
    let (code, out, err) = jail(
        w,
        config,
        id,
        isolation,
        &["curl", "-sS", "-m", "5", "--noproxy", "*", "https://api.test/hello"],
    );
    assert_eq!((code, out.trim()), (0, "hello from upstream"), "{err}");
    // Refused: another host by name, the upstream by address, UDP anywhere.
    let (code, _, _) = jail(
        w,
        config,
        id,
        isolation,
        &["curl", "-sS", "-m", "5", "https://denied.test/"],
    );
    assert_ne!(code, 0);
    let before = w.api.accepted();
    let direct = format!("https://{inet}/hello");
    let (code, _, _) = jail(
        w,
        config,
        id,
        isolation,
        &["curl", "-sS", "-m", "5", "-k", "--noproxy", "*", &direct],
    );
    assert_ne!(code, 0);
    assert_eq!(w.api.accepted(), before, "the jail reached the upstream directly");
    let sink = w.net.udp(&w.net.inet, &format!("{inet}:9999"));
    sink.set_read_timeout(Some(Duration::from_millis(500))).unwrap();
    let udp = format!("echo x > /dev/udp/{inet}/9999");
    jail(w, config, id, isolation, &["bash", "-c", &udp]);
    assert!(sink.recv_from(&mut [0u8; 8]).is_err(), "UDP left the jail");
    // ICMP, as root in the jail (who may open a raw socket there, under gVisor): no echo request reaches the
    // upstream's host, counted there.
    let tally = "add table inet jail_icmp; flush table inet jail_icmp; \
                 add chain inet jail_icmp c { type filter hook input priority 0; }; \
                 add rule inet jail_icmp c icmp type echo-request counter";
    w.net.exec_ok(&w.net.inet, &["nft", tally]);
    let root = [isolation, &["--allow-root"]].concat();
    let (code, out, err) = jail(w, config, id, &root, &["ping", "-c", "1", "-W", "2", &inet]);
    assert_ne!(code, 0, "{out}{err}");
    let counted = w
        .net
        .exec_ok(&w.net.inet, &["nft", "list", "table", "inet", "jail_icmp"]);
    assert!(counted.contains("packets 0 "), "a ping left the jail: {counted}");
    // The same ping from the host's side is counted, so the count is a sound one.
    w.net.exec_ok(&w.net.gw, &["ping", "-c", "1", "-W", "2", &inet]);
    let counted = w
        .net
        .exec_ok(&w.net.inet, &["nft", "list", "table", "inet", "jail_icmp"]);
    assert!(counted.contains("packets 1 "), "{counted}");
    // The command's user and exit code.
    let user = [isolation, &["--user", "65534:65534"]].concat();
    let (code, out, err) = jail(w, config, id, &user, &["sh", "-c", "id -u; exit 7"]);
    assert_eq!((code, out.trim()), (7, "65534"), "{err}");
}

/// A jail of `true` succeeds, and its start-up message (stderr) holds `what`.
pub(super) fn err_has_rules(w: &World, config: &std::path::Path, id: &str, isolation: &[&str], what: &str) {
    let (code, _, err) = jail(w, config, id, isolation, &["true"]);
    assert!(code == 0 && err.contains(what), "{code}: {err}");
}

#[test]
fn the_jail_refuses_without_a_command_or_an_unknown_sandbox() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("c.yaml");
    std::fs::write(
        &config,
        format!(
            "sandboxes:\n  - {{ id: a, user: u, policy: p, token_sha256: \"{}\" }}\npolicies:\n  p: {{ allow: [] }}\n",
            crate::rigs::client::hash("t")
        ),
    )
    .unwrap();
    let out = std::process::Command::new(BIN)
        .args(["jail", "--config"])
        .arg(&config)
        .output_within();
    assert_eq!(out.status.code(), Some(125));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no command given"));
    let out = std::process::Command::new(BIN)
        .args(["jail", "--sandbox", "nope", "--config"])
        .arg(&config)
        .args(["--", "true"])
        .output_within();
    assert!(String::from_utf8_lossy(&out.stderr).contains("declares no such sandbox"));
    let out = std::process::Command::new(BIN)
        .args(["jail", "--subnet", "10.0.0.0/30", "--config"])
        .arg(&config)
        .args(["--", "true"])
        .output_within();
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("too small"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
