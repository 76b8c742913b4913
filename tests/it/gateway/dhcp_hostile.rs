//! A VM that lies in DHCP, behind the gateway's DHCP rulesets and deploy/gateway/cordon-dhcp.conf (issue 53, item
//! 12): crafted messages (scapy, tests/clients/dhcp_message.py) from vm1 that would act on vm2's lease or address
//! or make dnsmasq answer elsewhere. Each is sent next to a control that differs only in the lie, which dnsmasq
//! must log (so the frames are sound and the log is read), while the lie must never reach it; and vm2 must keep
//! its lease and get its address again.
//!
//! The lies: a DECLINE or a RELEASE naming vm2 (by chaddr, or by client identifier with vm1's own chaddr); a
//! relayed request (giaddr set to vm2's address); a request from vm1's port naming vm2's MAC as chaddr, or from
//! another source MAC than the port's VM; an INFORM naming vm2; a BOOTREPLY, a request from a port other than
//! 68, and a hardware type or length other than Ethernet's.

use std::time::Duration;

use super::dhcp::{dnsmasq, lease, rules};
use crate::rigs::bridge::Bridge;
use crate::rigs::netns::{available, ip};

const VM2_MAC: &str = "52:54:00:00:00:03";

/// A message's fields, as dhcp_message.py takes them.
type Fields<'a> = Vec<(&'a str, &'a str)>;

/// Send DHCP messages from `vm` (tests/clients/dhcp_message.py), each with its fields, in one process.
fn send(b: &Bridge, vm: &str, messages: &[Vec<String>]) {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/clients/dhcp_message.py");
    let mut args = vec!["timeout", "60", "python3", script, "eth0"];
    for (i, fields) in messages.iter().enumerate() {
        if i > 0 {
            args.push("--");
        }
        args.extend(fields.iter().map(String::as_str));
    }
    let out = b.exec(vm, &args);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// Whether dnsmasq's log shows the message with transaction id `xid` (it logs each it handles with its xid).
fn logged(log: &std::path::Path, xid: u32) -> bool {
    std::fs::read_to_string(log).is_ok_and(|t| t.contains(&format!(" {xid} ")))
}

/// Wait (up to 5 s) until dnsmasq's log shows the message with transaction id `xid`.
fn until_logged(log: &std::path::Path, xid: u32) -> bool {
    for _ in 0..100 {
        if logged(log, xid) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

#[test]
fn a_vm_cannot_act_on_another_vms_lease_or_address_through_dhcp() {
    if !available("a_vm_cannot_act_on_another_vms_lease_or_address_through_dhcp") {
        return;
    }
    let b = Bridge::new();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("dnsmasq.log");
    let (host, vm1_ip, vm2_ip) = (b.addr(1), b.addr(2), b.addr(3));
    for vm in [&b.vm1, &b.vm2] {
        ip(&["-n", vm, "addr", "flush", "dev", "eth0"]);
    }
    rules::base(&b);
    rules::dhcp(&b);
    let _dnsmasq = dnsmasq(&b, dir.path());
    assert_eq!(lease(&b, &b.vm1, dir.path()), Some((vm1_ip.clone(), host.clone())));
    assert_eq!(lease(&b, &b.vm2, dir.path()), Some((vm2_ip.clone(), host.clone())));
    ip(&["-n", &b.vm1, "addr", "add", &format!("{vm1_ip}/24"), "dev", "eth0"]);
    let leases = || std::fs::read_to_string(dir.path().join("leases")).unwrap_or_default();
    assert!(leases().contains(&vm2_ip), "vm2 has no lease: {}", leases());

    let f = |pairs: &[(&str, &str)]| pairs.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<String>>();
    let from_nothing = [("src", "0.0.0.0"), ("dst", "255.255.255.255")];
    let from_vm1 = [
        ("src", vm1_ip.as_str()),
        ("dst", host.as_str()),
        ("ciaddr", vm1_ip.as_str()),
    ];
    // (what, the lie, its control): each a message from vm1; the control must be logged, the lie not.
    let cases: Vec<(&str, Fields, Fields)> = vec![
        (
            "a DECLINE naming vm2's MAC and address",
            vec![
                ("type", "decline"),
                ("chaddr", VM2_MAC),
                ("requested", &vm2_ip),
                ("server_id", &host),
            ],
            vec![("type", "decline"), ("requested", &vm2_ip), ("server_id", &host)],
        ),
        (
            "a RELEASE naming vm2's MAC and address",
            vec![
                ("type", "release"),
                ("chaddr", VM2_MAC),
                ("ciaddr", &vm2_ip),
                ("server_id", &host),
            ],
            vec![("type", "release"), ("ciaddr", &vm2_ip), ("server_id", &host)],
        ),
        (
            "a DISCOVER relayed through vm2's address (giaddr)",
            vec![("type", "discover"), ("giaddr", &vm2_ip)],
            vec![("type", "discover")],
        ),
        (
            "a REQUEST relayed through vm2's address (giaddr)",
            vec![
                ("type", "request"),
                ("giaddr", &vm2_ip),
                ("requested", &vm1_ip),
                ("server_id", &host),
            ],
            vec![("type", "request"), ("requested", &vm1_ip), ("server_id", &host)],
        ),
        (
            "a DISCOVER from vm1's port naming vm2's MAC (chaddr)",
            vec![("type", "discover"), ("chaddr", VM2_MAC)],
            vec![("type", "discover")],
        ),
        (
            "a REQUEST from vm1's port for vm2's address as vm2's MAC (chaddr)",
            vec![
                ("type", "request"),
                ("chaddr", VM2_MAC),
                ("requested", &vm2_ip),
                ("server_id", &host),
            ],
            vec![("type", "request"), ("requested", &vm1_ip), ("server_id", &host)],
        ),
        (
            "a DISCOVER from vm1's port from vm2's MAC (frame source and chaddr)",
            vec![("type", "discover"), ("ether_src", VM2_MAC), ("chaddr", VM2_MAC)],
            vec![("type", "discover")],
        ),
        (
            "an INFORM naming vm2's MAC",
            vec![("type", "inform"), ("chaddr", VM2_MAC)],
            vec![("type", "inform")],
        ),
        (
            "a BOOTREPLY (a VM playing server)",
            vec![("type", "discover"), ("op", "2")],
            vec![("type", "discover")],
        ),
        (
            "a request from port 67 (a VM playing relay)",
            vec![("type", "discover"), ("sport", "67")],
            vec![("type", "discover")],
        ),
        (
            "a hardware type other than Ethernet",
            vec![("type", "discover"), ("htype", "6")],
            vec![("type", "discover")],
        ),
        (
            "a hardware address length other than 6",
            vec![("type", "discover"), ("hlen", "16")],
            vec![("type", "discover")],
        ),
    ];
    // Every message goes out in one batch, each lie before its control; a last control message marks the end.
    let mut xid = 7_000_000_u32;
    let mut batch = Vec::new();
    let mut expect = Vec::new();
    for (what, lie, control) in &cases {
        // The renewing kinds come from vm1's own address, the others from no address yet.
        let own = lie[0].1 == "release" || lie[0].1 == "inform";
        let base: &[(&str, &str)] = if own { &from_vm1 } else { &from_nothing };
        for (kind, fields) in [("lie", lie), ("control", control)] {
            xid += 1;
            let x = xid.to_string();
            let mut all: Vec<(&str, &str)> = base.to_vec();
            all.retain(|(k, _)| !fields.iter().any(|(fk, _)| fk == k));
            all.extend(fields.iter().copied());
            all.push(("xid", &x));
            batch.push(f(&all));
            expect.push((format!("{what}: the {kind}"), xid, kind == "control"));
        }
    }
    // With vm1's own chaddr, a client identifier naming vm2 changes nothing: dnsmasq knows clients by chaddr
    // alone (dhcp-ignore-clid), so these are about vm1's own lease and address.
    for (what, fields) in [
        (
            "a DECLINE of vm2's address with vm2's client identifier",
            vec![
                ("type", "decline"),
                ("client_id", VM2_MAC),
                ("requested", vm2_ip.as_str()),
                ("server_id", host.as_str()),
            ],
        ),
        (
            "a RELEASE of vm2's address with vm2's client identifier",
            vec![
                ("type", "release"),
                ("client_id", VM2_MAC),
                ("ciaddr", vm2_ip.as_str()),
                ("server_id", host.as_str()),
                ("src", vm1_ip.as_str()),
                ("dst", host.as_str()),
            ],
        ),
    ] {
        xid += 1;
        let x = xid.to_string();
        let mut all = fields.clone();
        all.push(("xid", &x));
        batch.push(f(&all));
        // Heard: it must be, or the check of its effect below would prove nothing.
        expect.push((what.to_string(), xid, true));
    }
    xid += 1;
    let last = xid.to_string();
    batch.push(f(&[("type", "discover"), ("xid", &last)]));
    send(&b, &b.vm1, &batch);
    assert!(until_logged(&log, xid), "dnsmasq never logged the last message");
    let mut failures = Vec::new();
    for (what, xid, want) in expect {
        let heard = logged(&log, xid);
        if heard != want {
            failures.push(format!(
                "{what} was {}heard by dnsmasq",
                if heard { "" } else { "not " }
            ));
        }
    }
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(failures.is_empty(), "{}\ndnsmasq's log:\n{text}", failures.join("\n"));
    assert!(
        !text.contains("disabling DHCP static address"),
        "a DECLINE disabled an address:\n{text}"
    );
    // vm2's lease and reservation are untouched: the lease is still in the file, and vm2 gets its address again.
    assert!(leases().contains(&vm2_ip), "vm2's lease is gone: {}\n{text}", leases());
    assert_eq!(
        lease(&b, &b.vm2, dir.path()),
        Some((vm2_ip.clone(), host.clone())),
        "vm2 no longer gets its address:\n{text}"
    );
}
