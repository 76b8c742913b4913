//! The container recipe (docs/src/deploying/containers.md) in network namespaces: a container on an internal network (no
//! forwarding, no NAT: Docker's `--internal`, Podman's `--internal`) whose only peer is cordon on the network's
//! gateway address, started with nothing but the environment the admin API hands out. It reaches what its policy
//! allows through cordon, is refused the rest, and cannot reach anything directly.

use crate::rigs::gateway::{World, start_cordon};
use crate::rigs::netns::available;
use crate::rigs::wait::Within;

#[tokio::test(flavor = "multi_thread")]
async fn a_container_on_an_internal_network_gets_out_only_through_cordon() {
    if !available("a_container_on_an_internal_network_gets_out_only_through_cordon") {
        return;
    }
    let w = World::new().await;
    let net = &w.net;
    let (gw, inet) = (net.gw_ip(), net.inet_ip());
    // The internal network: the host end does not forward, so the only thing a container reaches is the host's
    // own address, where cordon listens.
    net.exec_ok(&net.gw, &["sysctl", "-qw", "net.ipv4.ip_forward=0"]);
    assert!(
        !net.connectable(&net.sbx, &format!("{inet}:443")),
        "the internal network routes out"
    );

    let listen = format!("listen: {{ proxy: \"{gw}:3128\", admin: \"{gw}:9090\" }}");
    let config = w.config("unused", &listen, None);
    let ca_file = w.path("container-ca.pem");
    let extra = format!(
        "  proxy_url: http://{gw}:3128\n  ca_file: {}\n  no_proxy: []\n",
        ca_file.display()
    );
    w.with_control(&config, &extra);
    let _cordon = start_cordon(&w, &config, &format!("{gw}:3128")).await;
    let admin = |args: &[&str]| w.admin(args);
    // What a platform does per container: create a sandbox, write its bundle where its env says, start the
    // container with that env.
    let made: serde_json::Value = serde_json::from_str(&admin(&[
        "-X",
        "POST",
        "-d",
        r#"{"user":"alice","policy":"p"}"#,
        &format!("https://{gw}:9090/v1/sandboxes"),
    ]))
    .unwrap();
    let id = made["id"].as_str().unwrap_or_else(|| panic!("{made}")).to_owned();
    std::fs::write(
        w.path("container-ca.pem"),
        admin(&[&format!("https://{gw}:9090/v1/sandboxes/{id}/ca-bundle")]),
    )
    .unwrap();
    let env: Vec<(String, String)> = made["env"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_owned()))
        .collect();
    let container_curl = |url: &str, extra: &[&str]| {
        let mut c = net.command(&net.sbx, "curl");
        c.env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .args(["-sS", "-m", "5", "-o", "/dev/null", "-w", "%{http_code}"])
            .args(extra)
            .arg(url);
        let out = c.timed_output().unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    };
    // Allowed: through cordon, intercepted with the sandbox's CA from the bundle its variables name.
    assert_eq!(container_curl("https://api.test/hello", &[]), (0, "200".into()));
    // Refused by policy: cordon answers 403 to the CONNECT.
    let (code, status) = container_curl("https://denied.test/", &[]);
    assert_ne!(code, 0);
    assert_eq!(status, "000");
    // Around the proxy: no route out of the internal network.
    let (code, _) = container_curl(&format!("https://{inet}/"), &["--noproxy", "*", "-k"]);
    assert_ne!(code, 0, "the container reached the upstream directly");
    let records = w
        .audit_until(&[&|r| r["host"] == "denied.test" && r["decision"] == "deny"])
        .await;
    assert!(
        records
            .iter()
            .any(|r| r["host"] == "denied.test" && r["decision"] == "deny" && r["sandbox"] == id.as_str())
    );
}
