//! VMs that take their addresses by DHCP behind the gateway (docs/src/deploying/gateway.md, "Addresses by DHCP"), on a
//! bridge in network namespaces: dnsmasq with deploy/gateway/cordon-dhcp.conf and the two DHCP rulesets
//! gives each known VM exactly the address the rulesets bind to its port and MAC, holds no packet socket (so
//! it hears only what the rules let through), and nothing else a VM without an address sends gets through:
//! not a DHCP request from a MAC its port is not bound to, not any other datagram from 0.0.0.0, and not a
//! MAC dnsmasq does not know.

use std::net::UdpSocket;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::rigs::bridge::Bridge;
use crate::rigs::netns::{available, ip};
use crate::rigs::wait::TimedChild;

const DEPLOY: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/deploy/gateway");

pub(crate) struct Killed(pub(crate) Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.timed_wait();
    }
}

/// How many packet sockets the process `pid` holds (its socket inodes found in its namespace's
/// /proc/net/packet).
fn packet_sockets(pid: u32) -> usize {
    let table = std::fs::read_to_string(format!("/proc/{pid}/net/packet")).unwrap();
    let inodes: Vec<String> = table
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().last().map(str::to_string))
        .collect();
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read_link(e.path()).ok())
        .filter_map(|l| {
            let l = l.to_string_lossy().into_owned();
            l.strip_prefix("socket:[")?.strip_suffix(']').map(str::to_string)
        })
        .filter(|inode| inodes.contains(inode))
        .count()
}

/// Ask for a lease from `vm` with busybox's udhcpc (a real client: raw DISCOVER from 0.0.0.0, as a VM's
/// is); the address it was given, if any. The lease is not applied: the test does that where it wants.
pub(super) fn lease(b: &Bridge, vm: &str, dir: &std::path::Path) -> Option<(String, String)> {
    let out_file = dir.join(format!("{vm}.lease"));
    let _ = std::fs::remove_file(&out_file);
    let script = dir.join("udhcpc.sh");
    let text = dir.join("udhcpc.sh.txt");
    std::fs::write(
        &text,
        format!(
            "#!/bin/sh\n[ \"$1\" = bound ] && echo \"$ip $router\" > {}\nexit 0\n",
            out_file.display()
        ),
    )
    .unwrap();
    crate::rigs::process::install_executable(&text, &script);
    let out = b.exec(
        vm,
        &[
            "busybox",
            "udhcpc",
            "-i",
            "eth0",
            "-f",
            "-q",
            "-n",
            "-t",
            "3",
            "-T",
            "1",
            "-A",
            "1",
            "-s",
            script.to_str().unwrap(),
        ],
    );
    let text = std::fs::read_to_string(&out_file).ok()?;
    assert!(out.status.success(), "udhcpc said bound but failed: {out:?}");
    let (addr, router) = text.trim().split_once(' ')?;
    Some((addr.to_string(), router.to_string()))
}

pub(super) fn set_mac(vm: &str, mac: &str) {
    ip(&["-n", vm, "link", "set", "eth0", "down"]);
    ip(&["-n", vm, "link", "set", "eth0", "address", mac]);
    ip(&["-n", vm, "link", "set", "eth0", "up"]);
}

/// One datagram from `vm` as a raw frame with source `src` (tests/clients/udp_frame.py).
fn frame(b: &Bridge, vm: &str, src: &str, sport: u16, dst: &str, dport: u16) {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/clients/udp_frame.py");
    let out = b.exec(
        vm,
        &[
            "python3",
            script,
            "eth0",
            src,
            &sport.to_string(),
            dst,
            &dport.to_string(),
        ],
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn vms_get_their_own_address_by_dhcp_and_nothing_else_from_no_address_gets_through() {
    if !available("vms_get_their_own_address_by_dhcp_and_nothing_else_from_no_address_gets_through") {
        return;
    }
    let b = Bridge::new();
    let dir = tempfile::tempdir().unwrap();
    let (host, vm1_ip, vm2_ip) = (b.addr(1), b.addr(2), b.addr(3));
    for vm in [&b.vm1, &b.vm2] {
        ip(&["-n", vm, "addr", "flush", "dev", "eth0"]);
    }
    rules::base(&b);

    // dnsmasq knows vm1's and vm2's MACs; it holds no packet socket (a process that does is seen as one).
    let dnsmasq = dnsmasq(&b, dir.path());
    let pid = dnsmasq.0.id();
    assert_eq!(packet_sockets(pid), 0, "dnsmasq holds a packet socket");
    let mut control = Killed(
        Command::new("ip")
            .args(["netns", "exec", &b.gw, "python3", "-c"])
            .arg("import socket,sys,time; s=socket.socket(socket.AF_PACKET, socket.SOCK_RAW); print(1, flush=True); time.sleep(30)")
            .stdout(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    // Its first line says the packet socket is open.
    crate::rigs::wait::first_line(
        &mut control.0,
        "the packet-socket control (python3 in the gateway namespace)",
        std::time::Duration::from_secs(30),
    );
    assert_eq!(
        packet_sockets(control.0.id()),
        1,
        "the packet-socket check sees nothing"
    );
    drop(control);

    // The rulesets without the DHCP files: no lease for anyone (a DISCOVER comes from 0.0.0.0).
    assert_eq!(lease(&b, &b.vm1, dir.path()), None, "a lease without the DHCP rules");

    // With them: each VM gets its own address, with the host as router.
    rules::dhcp(&b);
    // Loaded twice over (as after a reload of the base files): the same rules, not an error.
    rules::base(&b);
    rules::dhcp(&b);
    assert_eq!(lease(&b, &b.vm1, dir.path()), Some((vm1_ip.clone(), host.clone())));

    // A MAC dnsmasq does not know, on a port that may ask from it: no answer.
    set_mac(&b.vm2, "52:54:00:00:00:04");
    assert_eq!(lease(&b, &b.vm2, dir.path()), None, "an unknown MAC got a lease");
    // vm2 asking with vm1's MAC, which dnsmasq knows but vm2's port is not bound to: dropped at the bridge.
    set_mac(&b.vm2, "52:54:00:00:00:02");
    assert_eq!(lease(&b, &b.vm2, dir.path()), None, "a lease for another port's MAC");
    set_mac(&b.vm2, "52:54:00:00:00:03");
    assert_eq!(lease(&b, &b.vm2, dir.path()), Some((vm2_ip.clone(), host.clone())));

    // vm1 takes its lease and reaches the host as itself.
    ip(&["-n", &b.vm1, "addr", "add", &format!("{vm1_ip}/24"), "dev", "eth0"]);
    let listener = {
        let a = format!("{host}:15001");
        b.within(&b.gw, move || std::net::TcpListener::bind(a).unwrap())
    };
    let (seen_tx, seen_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for s in listener.incoming().flatten() {
            let _ = seen_tx.send(s.peer_addr().unwrap().ip().to_string());
        }
    });
    assert!(
        b.tcp(&b.vm1, format!("{host}:15001")),
        "vm1 does not reach the host with its lease"
    );
    assert_eq!(seen_rx.recv_timeout(Duration::from_secs(2)).unwrap(), vm1_ip);

    // Apart from DHCP, nothing from 0.0.0.0 gets in: to a port the VMs may reach (cordon's DNS port),
    // unicast or broadcast, from the DHCP client port or another. The same frame from vm1's own address is
    // heard, so the frames are sound and the listener listens.
    let udp = {
        let a = "0.0.0.0:15053".to_string();
        b.within(&b.gw, move || {
            let s = UdpSocket::bind(a).unwrap();
            s.set_broadcast(true).unwrap();
            s
        })
    };
    udp.set_read_timeout(Some(Duration::from_millis(500))).unwrap();
    frame(&b, &b.vm1, &vm1_ip, 40000, &host, 15053);
    let (_, from) = udp.recv_from(&mut [0u8; 64]).expect("the control frame was not heard");
    assert_eq!(from.ip().to_string(), vm1_ip);
    for (sport, dst) in [
        (68, host.as_str()),
        (68, "255.255.255.255"),
        (40000, host.as_str()),
        (40000, "255.255.255.255"),
    ] {
        frame(&b, &b.vm1, "0.0.0.0", sport, dst, 15053);
        assert!(
            udp.recv_from(&mut [0u8; 64]).is_err(),
            "a datagram from 0.0.0.0:{sport} to {dst}:15053 got through"
        );
    }
    drop(dnsmasq);
}

/// The rulesets the DHCP tests load, with vm1 (tap2, 52:54:00:00:00:02) and vm2 (tap3, 52:54:00:00:00:03, and
/// 52:54:00:00:00:04 on the same port) bound to their addresses.
pub(crate) mod rules {
    use crate::rigs::bridge::Bridge;

    /// cordon-gateway.nft and cordon-gateway-bridge.nft.
    pub(crate) fn base(b: &Bridge) {
        let (host, vm1_ip, vm2_ip) = (b.addr(1), b.addr(2), b.addr(3));
        let ports = format!("{{ \"tap2\" . {vm1_ip} . 52:54:00:00:00:02, \"tap3\" . {vm2_ip} . 52:54:00:00:00:03 }}");
        b.load(
            "cordon-gateway.nft",
            &[
                "VM_IF=\"br0\"".into(),
                format!("CORDON_IP={host}"),
                "PROXY_PORT=3128".into(),
                "TRANSPARENT_PORT=15001".into(),
                "DNS_PORT=15053".into(),
            ],
        );
        b.load(
            "cordon-gateway-bridge.nft",
            &["VM_PORT_IF=\"tap*\"".into(), format!("VM_PORTS={ports}")],
        );
    }

    /// The two DHCP rulesets.
    pub(crate) fn dhcp(b: &Bridge) {
        let host = b.addr(1);
        b.load(
            "cordon-gateway-dhcp.nft",
            &[
                "VM_IF=\"br0\"".into(),
                format!("CORDON_IP={host}"),
                "VM_IF_MACS={ \"br0\" . 52:54:00:00:00:02, \"br0\" . 52:54:00:00:00:03, \"br0\" . 52:54:00:00:00:04 }"
                    .into(),
                "VM_IF_CHADDRS={ \"br0\" . 0x525400000002, \"br0\" . 0x525400000003, \"br0\" . 0x525400000004 }".into(),
            ],
        );
        b.load(
            "cordon-gateway-bridge-dhcp.nft",
            &[
                "VM_PORT_IF=\"tap*\"".into(),
                "VM_MACS={ \"tap2\" . 52:54:00:00:00:02, \"tap3\" . 52:54:00:00:00:03, \"tap3\" . 52:54:00:00:00:04 }"
                    .into(),
                "VM_CHADDRS={ \"tap2\" . 0x525400000002, \"tap3\" . 0x525400000003, \"tap3\" . 0x525400000004 }".into(),
            ],
        );
    }
}

/// dnsmasq in the gateway's namespace with deploy/gateway/cordon-dhcp.conf, knowing vm1's and vm2's MACs, its
/// leases (`dir`/leases) and its log (`--log-dhcp`, `dir`/dnsmasq.log) in `dir`; once it listens on port 67.
pub(crate) fn dnsmasq(b: &Bridge, dir: &std::path::Path) -> Killed {
    let (host, vm1_ip, vm2_ip) = (b.addr(1), b.addr(2), b.addr(3));
    let net: Vec<&str> = host.rsplitn(2, '.').collect();
    // The shipped file with its lease file moved into `dir`: dnsmasq takes the file's dhcp-leasefile over the
    // command line's, and tests running at once must not share one.
    let shipped = std::fs::read_to_string(format!("{DEPLOY}/cordon-dhcp.conf")).unwrap();
    let line = "dhcp-leasefile=/var/lib/misc/cordon-dhcp.leases";
    assert!(shipped.contains(line), "cordon-dhcp.conf no longer says {line}");
    let conf = dir.join("cordon-dhcp.conf");
    let leases = format!("dhcp-leasefile={}", dir.join("leases").display());
    std::fs::write(&conf, shipped.replace(line, &leases)).unwrap();
    let child = Command::new("ip")
        .args(["netns", "exec", &b.gw, "dnsmasq", "--keep-in-foreground"])
        .arg(format!("--conf-file={}", conf.display()))
        .arg(format!("--log-facility={}", dir.join("dnsmasq.log").display()))
        .arg("--pid-file")
        .args(["--interface=br0", "--log-dhcp"])
        .arg(format!("--dhcp-range={}.0,static,255.255.255.0,1h", net[1]))
        .arg(format!("--dhcp-option=option:router,{host}"))
        .arg(format!("--dhcp-option=option:dns-server,{host}"))
        .arg(format!("--dhcp-host=52:54:00:00:00:02,{vm1_ip}"))
        .arg(format!("--dhcp-host=52:54:00:00:00:03,{vm2_ip}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let dnsmasq = Killed(child);
    // `ip netns exec` becomes dnsmasq (it execs in place); wait until it listens on port 67 (0x0043).
    let pid = dnsmasq.0.id();
    let listening = || {
        std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim() == "dnsmasq")
            && std::fs::read_to_string(format!("/proc/{pid}/net/udp")).is_ok_and(|t| t.contains(":0043 "))
    };
    for _ in 0..100 {
        if listening() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(listening(), "dnsmasq did not start");
    dnsmasq
}
