//! VMs on a shared bridge behind the gateway (docs/src/deploying/gateway.md), in network namespaces: with the inet ruleset
//! alone, frames between two VMs are switched and never seen by it (br_netfilter off), and a VM can take
//! another VM's address, the identity cordon knows it by; with deploy/gateway/cordon-gateway-bridge.nft
//! loaded too, neither works.

use std::net::{TcpListener, UdpSocket};
use std::time::Duration;

use crate::rigs::bridge::Bridge;
use crate::rigs::netns::{available, ip};

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
