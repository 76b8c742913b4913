//! Transparent mode with IPv6 REDIRECT (the original destination read back with IP6T_SO_ORIGINAL_DST) and with
//! IPv4 TPROXY (the socket's own address), in the namespaces of the gateway world (`rigs/gateway.rs`).

use crate::rigs::gateway::{World, start_cordon};
use crate::rigs::netns::{Net, available};

/// The sandbox link gets IPv6 too (fd00:cx::/64), for the IPv6 and TPROXY cases.
fn sandbox_ipv6(net: &Net) -> (String, String) {
    let (gw6, sbx6) = (format!("fd00:{}::1", net.n), format!("fd00:{}::2", net.n));
    let sbx_if = format!("{}sb", &net.sbx_if()[..net.sbx_if().len() - 2]);
    net.exec_ok(
        &net.gw,
        &[
            "ip",
            "-6",
            "addr",
            "add",
            &format!("{gw6}/64"),
            "dev",
            &net.sbx_if(),
            "nodad",
        ],
    );
    net.exec_ok(
        &net.sbx,
        &[
            "ip",
            "-6",
            "addr",
            "add",
            &format!("{sbx6}/64"),
            "dev",
            &sbx_if,
            "nodad",
        ],
    );
    net.exec_ok(&net.sbx, &["ip", "-6", "route", "add", "default", "via", &gw6]);
    net.exec_ok(&net.gw, &["sysctl", "-qw", "net.ipv6.conf.all.forwarding=1"]);
    // The link is ready once the sandbox has the gateway as a neighbour: a first connection sent before
    // then can time out in neighbour discovery (turning forwarding on resets it).
    let ready = (0..20).any(|_| {
        net.exec(&net.sbx, &["ping", "-6", "-c", "1", "-W", "1", &gw6])
            .status
            .success()
    });
    assert!(ready, "the sandbox never reached the gateway over IPv6 ({gw6})");
    (gw6, sbx6)
}

#[tokio::test(flavor = "multi_thread")]
async fn ipv6_redirects_and_tproxy_give_the_original_destination() {
    if !available("ipv6_redirects_and_tproxy_give_the_original_destination") {
        return;
    }
    let w = World::new().await;
    let net = &w.net;
    let (inet, gw) = (net.inet_ip(), net.gw_ip());
    let (gw6, sbx6) = sandbox_ipv6(net);
    let sbx_if = net.sbx_if();
    // IPv6 REDIRECT (read back with IP6T_SO_ORIGINAL_DST) and IPv4 TPROXY (the socket's own address).
    let rules = format!(
        "table inet t {{
  chain nat {{ type nat hook prerouting priority dstnat; iifname \"{sbx_if}\" meta nfproto ipv6 tcp dport 443 redirect to :15001; }}
  chain mangle {{ type filter hook prerouting priority mangle; iifname \"{sbx_if}\" meta nfproto ipv4 tcp dport 443 tproxy ip to :15002 meta mark set 1 accept; }}
}}"
    );
    let file = w.path("t.nft");
    std::fs::write(&file, rules).unwrap();
    net.exec_ok(&net.gw, &["nft", "-f", file.to_str().unwrap()]);
    net.exec_ok(&net.gw, &["ip", "rule", "add", "fwmark", "1", "lookup", "100"]);
    net.exec_ok(
        &net.gw,
        &["ip", "route", "add", "local", "0.0.0.0/0", "dev", "lo", "table", "100"],
    );

    let sources = format!("{}/32\", \"{sbx6}/128", net.sbx_ip());
    let six = format!("listen: {{ proxy: \"{gw}:3128\", transparent: \"[::]:15001\" }}");
    let config = w.config("vm6", &six, Some(&sources));
    let ca = w.sandbox_ca(&config, "vm6");
    let ca = ca.to_str().unwrap();
    let cordon6 = start_cordon(&w, &config, &format!("{gw}:3128")).await;
    // The sandbox aims at an IPv6 address of its choosing; cordon dials api.test's own (IPv4) address.
    let resolve = "api.test:443:[fd00:99::7]";
    net.exec_ok(&net.sbx, &["ip", "-6", "route", "add", "fd00:99::/64", "via", &gw6]);
    let (code, body) = w.curl(&["--cacert", ca, "--resolve", resolve, "https://api.test/six"]);
    assert_eq!((code, body.trim()), (0, "hello from upstream"));
    // The record is written when the connection closes, after curl has its answer: wait for it before
    // the kill, or it can be lost with the process.
    w.audit_until(&[&|r| r["kind"] == "transparent" && r["original_dst"] == "[fd00:99::7]:443"])
        .await;
    drop(cordon6);

    let tproxy =
        format!("listen: {{ proxy: \"{gw}:3129\", transparent: \"0.0.0.0:15002\", transparent_tproxy: true }}");
    let config = w.config("vm6", &tproxy, Some(&sources));
    let _tproxied = start_cordon(&w, &config, &format!("{gw}:3129")).await;
    let before = w.api.accepted();
    let resolve = format!("api.test:443:{inet}");
    let (code, body) = w.curl(&["--cacert", ca, "--resolve", &resolve, "https://api.test/tproxy"]);
    assert_eq!((code, body.trim()), (0, "hello from upstream"));
    assert_eq!(
        w.api.accepted(),
        before + 1,
        "exactly cordon's own connection reached the upstream"
    );

    let records = w
        .audit_until(&[
            &|r| r["kind"] == "transparent" && r["original_dst"] == "[fd00:99::7]:443",
            &|r| r["kind"] == "transparent" && r["original_dst"] == format!("{inet}:443"),
        ])
        .await;
    let t: Vec<_> = records.iter().filter(|r| r["kind"] == "transparent").collect();
    assert!(
        t.iter().any(|r| r["original_dst"] == "[fd00:99::7]:443"
            && r["original_dst_differs"] == true
            && r["decision"] == "allow"),
        "{t:#?}"
    );
    assert!(
        t.iter()
            .any(|r| r["original_dst"] == format!("{inet}:443") && r["original_dst_differs"] == false),
        "{t:#?}"
    );
}
