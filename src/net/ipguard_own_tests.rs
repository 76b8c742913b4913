#![expect(clippy::expect_used, reason = "tests")]

use std::net::SocketAddr;

use super::super::{Guard, GuardRefusal};

fn sa(s: &str) -> SocketAddr {
    s.parse().expect(s)
}

#[test]
fn a_sandboxs_address_may_be_private_but_never_metadata_or_cordon_itself() {
    let g = Guard::new(Vec::new(), Vec::new(), vec![sa("127.0.0.1:9090"), sa("0.0.0.0:3128")]);
    // Private, loopback and link-local addresses are what sandboxes have: no special-range refusal.
    for ok in [
        "10.0.0.7:5173",
        "127.0.0.9:3000",
        "[fd00::7]:8080",
        "169.254.10.1:80",
        "127.0.0.1:9091",
    ] {
        assert_eq!(g.check_sandbox_addr(sa(ok)), Ok(()), "{ok}");
    }
    // Metadata, in every form that reaches it, even with an operator's dangerous opt-in for dialling.
    let opted = Guard::new(Vec::new(), vec!["169.254.169.254".parse().expect("ip")], Vec::new());
    for bad in [
        "169.254.169.254:80",
        "[::ffff:169.254.169.254]:80",
        "[2002:a9fe:a9fe::1]:80",
        "[64:ff9b::a9fe:a9fe]:80",
        "[fd00:ec2::254]:80",
    ] {
        for guard in [&g, &opted] {
            let refused = guard.check_sandbox_addr(sa(bad)).expect_err(bad);
            assert_eq!(refused.code(), "metadata_address", "{bad}");
        }
    }
    // cordon's own listeners, also through a wildcard listener or the unspecified address.
    for own in [
        "127.0.0.1:9090",
        "127.0.0.5:3128",
        "0.0.0.0:9090",
        "[::ffff:127.0.0.1]:9090",
    ] {
        assert_eq!(
            g.check_sandbox_addr(sa(own)),
            Err(GuardRefusal::SelfAddress { addr: sa(own) }),
            "{own}"
        );
    }
}
