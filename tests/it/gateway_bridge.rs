//! VMs on a shared bridge behind the gateway (docs/gateway.md), in network namespaces: with the inet ruleset
//! alone, frames between two VMs are switched and never seen by it (br_netfilter off), and a VM can take
//! another VM's address, the identity cordon knows it by; with deploy/gateway/cordon-gateway-bridge.nft
//! loaded too, neither works.

use std::net::{SocketAddr, TcpListener, UdpSocket};
use std::process::Command;
use std::time::Duration;

use crate::netns::{available, ip};

/// A gateway namespace with a bridge and two VM namespaces on it (tap2 with 52:54:00:00:00:02 and tap3 with
/// 52:54:00:00:00:03, static addresses `addr(2)` and `addr(3)`; the host is `addr(1)` on br0).
pub(crate) struct Bridge {
    pub(crate) gw: String,
    pub(crate) vm1: String,
    pub(crate) vm2: String,
    n: u32,
}

impl Drop for Bridge {
    fn drop(&mut self) {
        for ns in [&self.gw, &self.vm1, &self.vm2] {
            let _ = Command::new("ip").args(["netns", "del", ns]).output();
        }
    }
}

impl Bridge {
    pub(crate) fn new() -> Bridge {
        // Apart from other bridges of this process (tests run at once) and of other processes.
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let k = NEXT.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let n = (std::process::id() + k * 37) % 200 + 20;
        let p = format!("cb{}-{k}", std::process::id() % 100_000);
        let b = Bridge {
            gw: format!("{p}-gw"),
            vm1: format!("{p}-vm1"),
            vm2: format!("{p}-vm2"),
            n,
        };
        for ns in [&b.gw, &b.vm1, &b.vm2] {
            let _ = Command::new("ip").args(["netns", "del", ns]).output();
            ip(&["netns", "add", ns]);
            ip(&["-n", ns, "link", "set", "lo", "up"]);
        }
        ip(&["-n", &b.gw, "link", "add", "br0", "type", "bridge"]);
        ip(&["-n", &b.gw, "addr", "add", &format!("{}/24", b.addr(1)), "dev", "br0"]);
        ip(&["-n", &b.gw, "link", "set", "br0", "up"]);
        for (i, vm) in [(2u8, &b.vm1), (3u8, &b.vm2)] {
            let port = format!("tap{i}");
            ip(&[
                "-n", &b.gw, "link", "add", &port, "type", "veth", "peer", "name", "eth0", "netns", vm,
            ]);
            ip(&["-n", &b.gw, "link", "set", &port, "master", "br0"]);
            ip(&["-n", &b.gw, "link", "set", &port, "up"]);
            ip(&[
                "-n",
                vm,
                "link",
                "set",
                "eth0",
                "address",
                &format!("52:54:00:00:00:0{i}"),
            ]);
            ip(&["-n", vm, "addr", "add", &format!("{}/24", b.addr(i)), "dev", "eth0"]);
            ip(&["-n", vm, "link", "set", "eth0", "up"]);
        }
        // Whatever the host's default, the bridge does not hand frames to the inet tables here.
        let _ = b.exec(&b.gw, &["sysctl", "-qw", "net.bridge.bridge-nf-call-iptables=0"]);
        b
    }

    pub(crate) fn addr(&self, i: u8) -> String {
        format!("10.209.{}.{i}", self.n)
    }

    pub(crate) fn exec(&self, ns: &str, args: &[&str]) -> std::process::Output {
        Command::new("ip")
            .args(["netns", "exec", ns])
            .args(args)
            .output()
            .unwrap()
    }

    pub(crate) fn load(&self, file: &str, defines: &[String]) {
        let mut args: Vec<String> = vec!["nft".into()];
        for d in defines {
            args.extend(["-D".into(), d.clone()]);
        }
        args.extend([
            "-f".into(),
            format!("{}/deploy/gateway/{file}", env!("CARGO_MANIFEST_DIR")),
        ]);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = self.exec(&self.gw, &args);
        assert!(out.status.success(), "{file}: {}", String::from_utf8_lossy(&out.stderr));
    }

    /// Run `f` with the calling thread in `ns`.
    pub(crate) fn within<T: Send + 'static>(&self, ns: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
        let path = format!("/run/netns/{ns}");
        std::thread::spawn(move || {
            let file = std::fs::File::open(path).unwrap();
            nix::sched::setns(file, nix::sched::CloneFlags::CLONE_NEWNET).unwrap();
            f()
        })
        .join()
        .unwrap()
    }

    pub(crate) fn tcp(&self, from: &str, to: String) -> bool {
        self.within(from, move || {
            let to: SocketAddr = to.parse().unwrap();
            std::net::TcpStream::connect_timeout(&to, Duration::from_millis(500)).is_ok()
        })
    }

    fn ping(&self, from: &str, to: &str) -> bool {
        self.exec(from, &["ping", "-c", "1", "-W", "1", to]).status.success()
    }
}

#[test]
fn vms_on_a_bridge_reach_neither_each_other_nor_each_others_identity() {
    if !available("vms_on_a_bridge_reach_neither_each_other_nor_each_others_identity") {
        return;
    }
    let b = Bridge::new();
    let (vm1_ip, vm2_ip, host_ip) = (b.addr(2), b.addr(3), b.addr(1));
    // vm2 serves TCP and UDP; the host serves what stands in for cordon's listener, and says who it saw.
    let vm2_tcp = format!("{vm2_ip}:7000");
    let listener = {
        let a = vm2_tcp.clone();
        b.within(&b.vm2, move || TcpListener::bind(a).unwrap())
    };
    std::thread::spawn(move || for _ in listener.incoming() {});
    let udp = {
        let a = format!("{vm2_ip}:7001");
        b.within(&b.vm2, move || UdpSocket::bind(a).unwrap())
    };
    udp.set_read_timeout(Some(Duration::from_millis(500))).unwrap();
    let host = {
        let a = format!("{host_ip}:15001");
        b.within(&b.gw, move || TcpListener::bind(a).unwrap())
    };
    let (seen_tx, seen_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for s in host.incoming().flatten() {
            let _ = seen_tx.send(s.peer_addr().unwrap().ip().to_string());
        }
    });
    let udp_to_vm2 = |b: &Bridge| {
        let to = format!("{vm2_ip}:7001");
        b.within(&b.vm1, move || {
            let s = UdpSocket::bind("0.0.0.0:0").unwrap();
            s.send_to(b"x", to).unwrap();
        });
    };
    let spoof = |b: &Bridge, on: bool| {
        let (del, add) = if on { (&vm1_ip, &vm2_ip) } else { (&vm2_ip, &vm1_ip) };
        ip(&["-n", &b.vm1, "addr", "del", &format!("{del}/24"), "dev", "eth0"]);
        ip(&["-n", &b.vm1, "addr", "add", &format!("{add}/24"), "dev", "eth0"]);
    };

    // The inet ruleset alone (VM_IF the bridge): the VMs still reach each other, and vm1 can be vm2.
    b.load(
        "cordon-gateway.nft",
        &[
            "VM_IF=\"br0\"".into(),
            format!("CORDON_IP={host_ip}"),
            "PROXY_PORT=3128".into(),
            "TRANSPARENT_PORT=15001".into(),
            "DNS_PORT=15053".into(),
        ],
    );
    assert!(b.tcp(&b.vm1, vm2_tcp.clone()), "the test's bridge does not switch");
    assert!(b.ping(&b.vm1, &vm2_ip));
    udp_to_vm2(&b);
    assert!(udp.recv_from(&mut [0u8; 8]).is_ok());
    spoof(&b, true);
    let _ = b.exec(&b.gw, &["ip", "neigh", "flush", "all"]);
    assert!(b.tcp(&b.vm1, format!("{host_ip}:15001")));
    assert_eq!(
        seen_rx.recv_timeout(Duration::from_secs(2)).unwrap(),
        vm2_ip,
        "the spoof did not work"
    );
    spoof(&b, false);

    // With the bridge table: nothing between the VMs, and each port speaks only as its own VM.
    b.load(
        "cordon-gateway-bridge.nft",
        &[
            "VM_PORT_IF=\"tap*\"".into(),
            format!("VM_PORTS={{ \"tap2\" . {vm1_ip} . 52:54:00:00:00:02, \"tap3\" . {vm2_ip} . 52:54:00:00:00:03 }}"),
        ],
    );
    let _ = b.exec(&b.gw, &["ip", "neigh", "flush", "all"]);
    assert!(
        b.tcp(&b.vm1, format!("{host_ip}:15001")),
        "vm1 no longer reaches the host"
    );
    assert_eq!(seen_rx.recv_timeout(Duration::from_secs(2)).unwrap(), vm1_ip);
    assert!(!b.tcp(&b.vm1, vm2_tcp.clone()), "VM to VM TCP on the bridge");
    assert!(!b.ping(&b.vm1, &vm2_ip), "VM to VM ICMP on the bridge");
    udp_to_vm2(&b);
    assert!(udp.recv_from(&mut [0u8; 8]).is_err(), "VM to VM UDP on the bridge");
    spoof(&b, true);
    let _ = b.exec(&b.gw, &["ip", "neigh", "flush", "all"]);
    assert!(
        !b.tcp(&b.vm1, format!("{host_ip}:15001")),
        "vm1 reached the host as vm2"
    );
    assert!(seen_rx.try_recv().is_err());
}
