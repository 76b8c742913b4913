#![expect(clippy::unwrap_used, reason = "tests")]
use super::*;

#[test]
fn rules_redirect_everything_to_cordon_and_drop_the_rest() {
    let plan = Plan::new(
        &crate::names::SandboxId::from("agent"),
        "10.200.0.0/16".parse().unwrap(),
    )
    .unwrap();
    let ports = Ports {
        proxy: 3128,
        transparent: 15001,
        dns: 15053,
    };
    let nft = nft_rules(&plan, ports);
    assert!(nft.contains(&format!("table inet {}", plan.table)));
    assert!(nft.contains("redirect to :15001"));
    assert!(nft.contains("th dport 53 redirect to :15053"));
    assert!(nft.contains(&format!("iifname \"{}\" drop", plan.host_if)));
    let ipt = iptables_rules(&plan, ports);
    assert!(
        ipt.iter()
            .any(|(_, a)| a.join(" ").contains("REDIRECT --to-ports 15001"))
    );
    assert!(
        ipt.iter()
            .any(|(p, a)| *p == "ip6tables" && a.join(" ").contains("FORWARD"))
    );
}
