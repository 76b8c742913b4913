//! A real VM behind the gateway (docs/src/deploying/gateway.md): QEMU on a tap in the bridge of the gateway's
//! namespace, where tests/it/gateway/ has a namespace. dnsmasq with deploy/gateway/cordon-dhcp.conf and the
//! gateway's four rulesets are loaded as deployed; cordon runs in transparent mode with a credential to inject.
//! The VM takes its lease, reaches the allowed host (the upstream sees the real credential, the VM never had
//! it), is refused elsewhere, reaches neither the other VM on the bridge (a namespace there) nor the gateway
//! host's own service; and it tries to escape: another VM's address, another VM's MAC (and a lease for it),
//! IPv6 (and a router advertisement of its own), fragments (pings, and UDP and a TCP SYN split by hand:
//! tests/clients/fragments.c). The audit names its sandbox.

use std::net::TcpListener;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use crate::gateway::dhcp::{dnsmasq, rules};
use crate::rigs::bridge::Bridge;
use crate::rigs::netns::ip;
use crate::rigs::process::{BIN, await_listening};
use crate::rigs::qemu::{boot, said};
use crate::rigs::tls::{https_upstream_on, test_ca};
use crate::rigs::wait::Within;

/// The credential cordon injects for the VM; the VM is never given it.
const SECRET: &str = "real-secret-9c41e7";

/// The internet behind the gateway: a namespace with the upstream, deleted when dropped.
struct Inet(String);

impl Drop for Inet {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.0]).timed_output();
    }
}

/// A listener in `ns` at `addr` whose accepted connections are counted.
fn counted(b: &Bridge, ns: &str, addr: String) -> Arc<AtomicUsize> {
    let listener = b.within(ns, move || TcpListener::bind(addr).unwrap());
    let count = Arc::new(AtomicUsize::new(0));
    let c = count.clone();
    std::thread::spawn(move || {
        for _ in listener.incoming() {
            c.fetch_add(1, Ordering::SeqCst);
        }
    });
    count
}

/// What the VM runs: `r NAME COMMAND...` prints `@@NAME EXIT-CODE OUTPUT` on the console.
fn script(vm1: &str, host: &str, vm2: &str, inet: &str, host6: &str, vm2_6: &str) -> String {
    format!(
        r#"r() {{ k=$1; shift; o=$("$@" 2>&1); c=$?; echo "@@$k $c $(echo $o | tr '\n' ' ')"; }}
lease() {{ udhcpc -i eth0 -f -q -n -t 4 -T 1 -A 1 -s /dhcp.sh 2>&1 | grep @@; }}
ip link set eth0 up
TAG=lease lease
r allowed curl -sS -m 10 --cacert /ca.pem https://api.test/hello
r denied_dns curl -sS -m 10 --cacert /ca.pem https://denied.test/
r denied_ip curl -sS -m 10 --cacert /ca.pem --resolve denied.test:443:{inet} https://denied.test/
r direct curl -sS -m 5 -k https://{inet}/hello
r vm2_tcp nc -w 2 {vm2} 7000
r vm2_ping ping -c 1 -W 2 {vm2}
r host_service curl -sS -m 5 http://{host}:2222/
r ipv6_host ping -6 -c 1 -W 2 {host6}%eth0
r ipv6_vm2 ping -6 -c 1 -W 2 {vm2_6}%eth0
r router_advert /router_advert eth0
r fragments_host ping -c 1 -W 2 -s 4000 {host}
r fragments_vm2 ping -c 1 -W 2 -s 4000 {vm2}
r fragments_udp_tcp_vm2 /fragments {vm1} {vm2} 7000
r fragments_udp_tcp_host /fragments {vm1} {host} 2222
ip addr add {vm2}/32 dev eth0
r spoof_ip curl -sS -m 5 --interface {vm2} --cacert /ca.pem https://api.test/spoof-ip
ip addr del {vm2}/32 dev eth0
ip link set eth0 down
ip link set eth0 address 52:54:00:00:00:03
ip link set eth0 up
r spoof_mac curl -sS -m 5 --cacert /ca.pem https://api.test/spoof-mac
ip addr flush dev eth0
TAG=lease_other lease
echo @@done
"#
    )
}

/// The IPv6 link-local address of `dev` in `ns`, once it has one (without its prefix length).
fn link_local(b: &Bridge, ns: &str, dev: &str) -> String {
    let mut found = String::new();
    crate::rigs::wait::until(
        &format!("a link-local address on {dev} in {ns}"),
        Duration::from_secs(10),
        || {
            let out = b.exec(ns, &["ip", "-6", "-o", "addr", "show", "dev", dev, "scope", "link"]);
            let text = String::from_utf8_lossy(&out.stdout).into_owned();
            let addr = text
                .split_whitespace()
                .skip_while(|w| *w != "inet6")
                .nth(1)
                .map(str::to_string);
            found = addr.unwrap_or_default();
            !found.is_empty() && !text.contains("tentative")
        },
    );
    found.split('/').next().unwrap().to_string()
}

/// tests/clients/NAME.c, compiled static into `dir/NAME` (the VM has no libraries of its own but curl's and
/// busybox's): the program's bytes.
fn static_client(dir: &std::path::Path, name: &str) -> Vec<u8> {
    let src = format!("{}/tests/clients/{name}.c", env!("CARGO_MANIFEST_DIR"));
    let out = Command::new("gcc")
        .args(["-static", "-O2", "-o"])
        .arg(dir.join(name))
        .arg(src)
        .timed_output()
        .unwrap();
    assert!(out.status.success(), "gcc: {}", String::from_utf8_lossy(&out.stderr));
    std::fs::read(dir.join(name)).unwrap()
}

/// In `ns`: a count of every IP packet `from` sends, taken before the kernel reassembles fragments, and of the
/// UDP datagrams and TCP SYNs to port `port` its sockets would be handed (reassembled, after every filter chain
/// of the gateway's rulesets, which run at priority 0).
fn tally(b: &Bridge, ns: &str, from: &str, port: u16) {
    let rules = format!(
        "table inet tally {{
  chain raw {{
    type filter hook prerouting priority -450;
    ip saddr {from} counter comment \"sent\"
  }}
  chain delivered {{
    type filter hook input priority 10;
    udp dport {port} counter comment \"udp\"
    tcp dport {port} tcp flags syn counter comment \"syn\"
  }}
}}
"
    );
    let path = std::env::temp_dir().join(format!("tally-{ns}.nft"));
    std::fs::write(&path, rules).unwrap();
    let out = b.exec(ns, &["nft", "-f", path.to_str().unwrap()]);
    assert!(out.status.success(), "{out:?}");
}

/// The packets of the counter `name` of [`tally`] in `ns`.
fn tallied(b: &Bridge, ns: &str, name: &str) -> u64 {
    let out = String::from_utf8_lossy(&b.exec(ns, &["nft", "list", "table", "inet", "tally"]).stdout).into_owned();
    let line = out
        .lines()
        .find(|l| l.contains(&format!("comment \"{name}\"")))
        .unwrap_or_else(|| panic!("no counter {name} in {ns}: {out}"));
    let packets = line.split_whitespace().skip_while(|w| *w != "packets").nth(1);
    packets.and_then(|p| p.parse().ok()).unwrap_or_else(|| panic!("{line}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn a_real_vm_takes_its_lease_and_reaches_only_its_policy_through_cordon() {
    let test = "a_real_vm_takes_its_lease_and_reaches_only_its_policy_through_cordon";
    if !crate::rigs::qemu::available(test) {
        return;
    }
    let b = Bridge::new();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display().to_string();
    let (host, vm1_ip, vm2_ip) = (b.addr(1), b.addr(2), b.addr(3));
    let n = host.split('.').nth(2).unwrap().to_string();
    // vm1 is the real VM: its port is a tap QEMU opens, in place of the namespace's veth.
    ip(&["-n", &b.gw, "link", "del", "tap2"]);
    ip(&["-n", &b.gw, "tuntap", "add", "dev", "tap2", "mode", "tap"]);
    ip(&["-n", &b.gw, "link", "set", "tap2", "master", "br0"]);
    ip(&["-n", &b.gw, "link", "set", "tap2", "up"]);
    // The internet behind the gateway, which routes (only the rules and cordon stand in the way).
    let inet = Inet(format!("{}-inet", &b.gw[..b.gw.len() - 3]));
    let _ = Command::new("ip").args(["netns", "del", &inet.0]).timed_output();
    ip(&["netns", "add", &inet.0]);
    ip(&[
        "-n", &b.gw, "link", "add", "up0", "type", "veth", "peer", "name", "up1", "netns", &inet.0,
    ]);
    let inet_ip = format!("198.18.{n}.2");
    ip(&["-n", &b.gw, "addr", "add", &format!("198.18.{n}.1/30"), "dev", "up0"]);
    ip(&["-n", &b.gw, "link", "set", "up0", "up"]);
    ip(&["-n", &inet.0, "addr", "add", &format!("{inet_ip}/30"), "dev", "up1"]);
    ip(&["-n", &inet.0, "link", "set", "up1", "up"]);
    ip(&["-n", &inet.0, "link", "set", "lo", "up"]);
    ip(&[
        "-n",
        &inet.0,
        "route",
        "add",
        "default",
        "via",
        &format!("198.18.{n}.1"),
    ]);
    let _ = b.exec(&b.gw, &["sysctl", "-qw", "net.ipv4.ip_forward=1"]);
    let upstream_ca = test_ca("real VM upstream CA");
    std::fs::write(dir.path().join("upstream-ca.pem"), &upstream_ca.pem).unwrap();
    let api = {
        let a = format!("{inet_ip}:443");
        let l = b.within(&inet.0, move || TcpListener::bind(a).unwrap());
        l.set_nonblocking(true).unwrap();
        https_upstream_on(
            tokio::net::TcpListener::from_std(l).unwrap(),
            upstream_ca.server_config(&["api.test", "denied.test"]),
        )
    };
    let vm2_tcp = counted(&b, &b.vm2, format!("{vm2_ip}:7000"));
    let host_service = counted(&b, &b.gw, format!("{host}:2222"));

    // The gateway as deployed: the rulesets, dnsmasq, and cordon with the VM's sandbox known by its address.
    rules::base(&b);
    rules::dhcp(&b);
    let _dnsmasq = dnsmasq(&b, dir.path());
    let config = dir.path().join("cordon.yaml");
    std::fs::write(
        &config,
        format!(
            "listen: {{ proxy: \"{host}:3128\", transparent: \"{host}:15001\", dns: \"{host}:15053\" }}
audit: {{ path: {d}/audit.log }}
ca: {{ dir: {d}/cas }}
upstream: {{ extra_roots: [{d}/upstream-ca.pem] }}
network:
  allow_cidrs: [\"{inet_ip}/32\"]
  hosts: {{ api.test: [\"{inet_ip}\"], denied.test: [\"{inet_ip}\"] }}
credentials:
  token:
    source: {{ env: CRED_TOKEN }}
    bind: {{ hosts: [api.test], ports: [443] }}
    inject: {{ header: Authorization, value: \"Bearer {{secret}}\" }}
sandboxes:
  - {{ id: vm1, user: alice, policy: p, source_cidrs: [\"{vm1_ip}/32\"] }}
policies:
  p:
    credentials: [token]
    allow:
      - host: api.test
        ports: [443]
"
        ),
    )
    .unwrap();
    let ca = Command::new(BIN)
        .args(["ca", "export", "--sandbox", "vm1", "--config"])
        .arg(&config)
        .timed_output()
        .unwrap();
    assert!(ca.status.success(), "{}", String::from_utf8_lossy(&ca.stderr));
    let child = Command::new("ip")
        .args(["netns", "exec", &b.gw, BIN, "run", "--config"])
        .arg(&config)
        .env("CRED_TOKEN", SECRET)
        .current_dir(dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let proxy = format!("{host}:3128");
    let ready = || b.tcp(&b.gw, proxy.clone());
    let _cordon = crate::rigs::gateway::Running(await_listening(child, &proxy, ready).await);

    // The VM: no address of its own, no credential, the sandbox's CA; it runs the script and powers off.
    let dhcp = "#!/bin/sh\n[ \"$1\" = bound ] || exit 0\nip addr add $ip/$mask dev $interface\n\
                ip route add default via $router\nset -- $dns\necho \"nameserver $1\" > /etc/resolv.conf\n\
                echo \"@@$TAG $ip $router\"\n";
    let (host6, vm2_6) = (link_local(&b, &b.gw, "br0"), link_local(&b, &b.vm2, "eth0"));
    let run = script(&vm1_ip, &host, &vm2_ip, &inet_ip, &host6, &vm2_6);
    let ra = static_client(dir.path(), "router_advert");
    let fragments = static_client(dir.path(), "fragments");
    // Whatever of the VM's reaches the other VM is counted there before reassembly; what reaches the host's
    // port 2222 is counted as the host's sockets would be handed it.
    tally(&b, &b.vm2, &vm1_ip, 7000);
    tally(&b, &b.gw, &vm1_ip, 2222);
    let (gw, ca_pem) = (b.gw.clone(), ca.stdout.clone());
    let console = tokio::task::spawn_blocking(move || {
        boot(
            &gw,
            "tap2",
            "52:54:00:00:00:02",
            &run,
            &[
                ("dhcp.sh", dhcp.as_bytes()),
                ("ca.pem", &ca_pem),
                ("router_advert", &ra),
                ("fragments", &fragments),
            ],
            Duration::from_secs(150),
        )
    })
    .await
    .unwrap();
    let at = |k: &str| said(&console, k).unwrap_or_else(|| panic!("no @@{k} in the console: {console}"));
    let ok = |k: &str| at(k).split_whitespace().next() == Some("0");

    // Its lease is the one the rulesets bind to its port and MAC, with the gateway as router.
    assert_eq!(at("lease"), format!("{vm1_ip} {host}"), "{console}");
    // The allowed host, by name through cordon's DNS, intercepted with the sandbox's CA; the credential
    // injected on the way: the upstream sees it, the VM does not.
    assert!(
        ok("allowed") && at("allowed").contains("hello from upstream"),
        "{console}"
    );
    let seen = api.seen();
    let hello = seen
        .iter()
        .find(|s| s.uri.ends_with("/hello"))
        .unwrap_or_else(|| panic!("the upstream saw no /hello: {seen:?}"));
    assert_eq!(hello.header("authorization"), Some(format!("Bearer {SECRET}").as_str()));
    assert!(!console.contains(SECRET), "the VM saw the credential: {console}");
    // Refused elsewhere: a name cordon does not answer, the same host at the allowed address, no SNI.
    for k in ["denied_dns", "denied_ip", "direct"] {
        assert!(!ok(k), "{k}: {console}");
    }
    // Not the other VM on the bridge, nor the gateway host's own service (the connection lands on cordon).
    assert!(!ok("vm2_tcp") && !ok("vm2_ping"), "{console}");
    assert_eq!(vm2_tcp.load(Ordering::SeqCst), 0, "the VM reached the other VM");
    assert_eq!(
        host_service.load(Ordering::SeqCst),
        0,
        "the VM reached the host's service"
    );
    // Escapes: IPv6 (all-nodes on the link), fragmented packets, another VM's address, another VM's MAC, a
    // lease for that MAC.
    for k in [
        "ipv6_host",
        "ipv6_vm2",
        "fragments_host",
        "fragments_vm2",
        "spoof_ip",
        "spoof_mac",
    ] {
        assert!(!ok(k), "{k}: {console}");
    }
    // Its router advertisement left the VM and reached no one: neither the gateway nor the other VM took the
    // prefix it offered. The same advertisement from the gateway's side is taken, so it is a sound one.
    assert!(ok("router_advert"), "{console}");
    let prefixed =
        |ns: &str| String::from_utf8_lossy(&b.exec(ns, &["ip", "-6", "addr"]).stdout).contains("2001:db8:bad:");
    assert!(
        !prefixed(&b.gw) && !prefixed(&b.vm2),
        "the VM's router advertisement was taken"
    );
    let sent = b.exec(&b.gw, &[dir.path().join("router_advert").to_str().unwrap(), "br0"]);
    assert!(sent.status.success(), "{sent:?}");
    crate::rigs::wait::until(
        "the other VM to take the gateway's advertisement",
        Duration::from_secs(10),
        || prefixed(&b.vm2),
    );
    // Fragmented UDP and TCP (a SYN whose header is split) left the VM and reached neither the other VM, which
    // saw no packet of the VM's at all, nor the host's port. The same fragments from the gateway's side reach
    // the other VM whole, so they are sound ones.
    assert!(ok("fragments_udp_tcp_vm2") && ok("fragments_udp_tcp_host"), "{console}");
    assert_eq!(tallied(&b, &b.vm2, "sent"), 0, "the VM's packets reached the other VM");
    for n in ["udp", "syn"] {
        assert_eq!(tallied(&b, &b.gw, n), 0, "the VM's {n} reached the host's port");
    }
    let sent = b.exec(
        &b.gw,
        &[dir.path().join("fragments").to_str().unwrap(), &host, &vm2_ip, "7000"],
    );
    assert!(sent.status.success(), "{sent:?}");
    assert_eq!(
        (tallied(&b, &b.vm2, "udp"), tallied(&b, &b.vm2, "syn")),
        (1, 1),
        "the gateway's fragments, reassembled in the other VM"
    );
    assert_eq!(
        said(&console, "lease_other"),
        None,
        "a lease for another VM's MAC: {console}"
    );
    assert!(console.contains("@@done"), "{console}");
    let uris: Vec<String> = api.seen().iter().map(|s| s.uri.clone()).collect();
    assert!(
        uris.len() == 1 && uris[0].ends_with("/hello"),
        "only the allowed request reached the upstream: {uris:?}"
    );

    // The audit names the VM's sandbox for its request.
    let log = dir.path().join("audit.log");
    let is_allowed =
        |r: &serde_json::Value| r["kind"] == "transparent" && r["host"] == "api.test" && r["decision"] == "allow";
    crate::rigs::wait::until(
        "the audit record of the allowed request",
        Duration::from_secs(10),
        || crate::rigs::audit::records(&log).iter().any(is_allowed),
    );
    let records = crate::rigs::audit::records(&log);
    let allowed = records
        .iter()
        .find(|r| is_allowed(r))
        .unwrap_or_else(|| panic!("{records:#?}"));
    assert_eq!(allowed["sandbox"], "vm1");
    assert!(allowed["client"].as_str().unwrap().starts_with(&vm1_ip));
    // Nothing it sent as another VM reached cordon.
    assert!(
        !records.iter().any(|r| r["client"]
            .as_str()
            .is_some_and(|c| c.starts_with(&format!("{vm2_ip}:")))),
        "{records:#?}"
    );
}
