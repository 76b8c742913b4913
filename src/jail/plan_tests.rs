#![expect(clippy::unwrap_used, reason = "tests")]
use super::*;

#[test]
fn names_are_stable_short_and_per_sandbox() {
    let net: Ipv4Net = DEFAULT_SUBNET.parse().unwrap();
    let a = Plan::new(&crate::names::SandboxId::from("agent-1"), net).unwrap();
    assert_eq!(a, Plan::new(&crate::names::SandboxId::from("agent-1"), net).unwrap());
    let b = Plan::new(&crate::names::SandboxId::from("agent-2"), net).unwrap();
    assert_ne!(a.tag, b.tag);
    assert!(a.host_if.len() <= 15 && a.jail_if.len() <= 15);
    assert!(a.chain().len() <= 28);
    assert!(net.contains(&a.host_ip) && net.contains(&a.jail_ip));
    assert_eq!(u32::from(a.host_ip) % 4, 1);
    assert_eq!(u32::from(a.jail_ip), u32::from(a.host_ip) + 1);
}

#[test]
fn a_subnet_too_small_is_refused() {
    assert!(Plan::new(&crate::names::SandboxId::from("x"), "10.0.0.0/30".parse().unwrap()).is_err());
    let p = Plan::new(&crate::names::SandboxId::from("x"), "10.9.9.0/29".parse().unwrap()).unwrap();
    assert!(p.host_ip.octets()[3] == 1 || p.host_ip.octets()[3] == 5);
}
