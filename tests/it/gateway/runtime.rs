//! A VM created at run time through the admin API and known by its address (`source_cidrs`), used through the
//! gateway's transparent listener and DNS responder in network namespaces: reached while it lives, nothing after
//! its revocation.

use crate::rigs::gateway::{World, load_rules, start_cordon};
use crate::rigs::netns::{available, resolv_conf};

#[tokio::test(flavor = "multi_thread")]
async fn a_vm_created_at_run_time_by_address_goes_through_the_transparent_listener() {
    if !available("a_vm_created_at_run_time_by_address_goes_through_the_transparent_listener") {
        return;
    }
    let w = World::new().await;
    let net = &w.net;
    let (gw, vm) = (net.gw_ip(), net.sbx_ip());
    load_rules(net);
    let listen = format!(
        "listen: {{ proxy: \"{gw}:3128\", transparent: \"{gw}:15001\", dns: \"{gw}:15053\", admin: \"{gw}:9090\" }}"
    );
    // The file declares another sandbox only (by token); the VM is made at run time.
    let config = w.config("declared", &listen, None);
    w.with_control(&config, "");
    let _cordon = start_cordon(&w, &config, &format!("{gw}:3128")).await;
    resolv_conf(&net.sbx, &gw);
    let admin = |args: &[&str]| w.admin(args);

    // Before: the VM's address is nobody's.
    let (code, _) = w.curl(&["https://api.test/"]);
    assert_ne!(code, 0, "an unknown address got through");

    let body = format!(r#"{{"user":"alice","policy":"p","source_cidrs":["{vm}/32"]}}"#);
    let made: serde_json::Value = serde_json::from_str(&admin(&[
        "-X",
        "POST",
        "-d",
        &body,
        &format!("https://{gw}:9090/v1/sandboxes"),
    ]))
    .unwrap();
    let id = made["id"].as_str().unwrap_or_else(|| panic!("{made}")).to_owned();
    let bundle = admin(&[&format!("https://{gw}:9090/v1/sandboxes/{id}/ca-bundle")]);
    assert!(bundle.contains("BEGIN CERTIFICATE"), "{bundle}");
    let ca = w.path("vm-bundle.pem");
    std::fs::write(&ca, &bundle).unwrap();

    // Known by address: DNS answers its allowed name, TLS through the transparent listener is intercepted with its
    // CA, a name its policy does not allow is refused.
    let (code, out) = w.curl(&["--cacert", ca.to_str().unwrap(), "https://api.test/hello"]);
    assert_eq!(code, 0, "{out}");
    let records = w
        .audit_until(&[&|r| r["sandbox"] == id.as_str() && r["host"] == "api.test"])
        .await;
    assert!(
        records
            .iter()
            .any(|r| r["sandbox"] == id.as_str() && r["host"] == "api.test"),
        "{records:#?}"
    );
    let (code, _) = w.curl(&["--cacert", ca.to_str().unwrap(), "https://denied.test/"]);
    assert_ne!(code, 0);

    // Revoked: nothing more from that address.
    admin(&["-X", "DELETE", &format!("https://{gw}:9090/v1/sandboxes/{id}")]);
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    let (code, out) = w.curl(&["--cacert", ca.to_str().unwrap(), "https://api.test/hello"]);
    assert_ne!(code, 0, "a revoked VM still got through: {out}");
}
