//! What a grant can never be, and what ends one: nothing past the policy's boundary is filed, even where the policy
//! grants at once; a grant ends at its lifetime, when a person revokes it, with its sandbox's incarnation, and
//! when a reload narrows the boundary under it.

use std::time::{Duration, Instant};

use serde_json::json;

use super::{ASK_AT, ask, asking, for_get, get, listed, rig, through};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn past_the_boundary_nothing_is_filed_even_where_the_policy_grants_at_once() {
    let rig = rig(true, &asking("auto_grant: true")).await;
    let up = rig.up.addr.port();
    let cases = [
        (json!({"host": "other.test", "ports": [up]}), "allow[0].host"),
        (json!({"host": "*.pay.test", "ports": [up]}), "allow[0].host"),
        (json!({"host": "pay.test", "ports": [up, 8443]}), "allow[0].ports"),
        (
            json!({"host": "pay.test", "ports": [up], "tls": "tunnel"}),
            "allow[0].tls",
        ),
        // One rule inside, one past: nothing of it is granted.
        (
            json!([{"host": "pay.test", "ports": [up], "methods": ["GET"]}, {"host": "bank.test"}]),
            "allow[1].host",
        ),
    ];
    for (rules, at) in cases {
        let allow = if rules.is_array() {
            rules.clone()
        } else {
            json!([rules])
        };
        let (status, v) = ask(&rig, &json!({"allow": allow, "reason": "more", "lifetime": "5m"}));
        assert_eq!(status, 403, "{allow}: {v}");
        assert_eq!(v["reason"], "access_past_boundary", "{v}");
        assert_eq!(v["ask"], false, "{v}");
        let details = v["details"].to_string();
        assert!(details.contains(at), "{allow}: the answer names {at}: {details}");
        // A request that shows it, wherever one can be made (a TLS mode is a difference of what cordon sees).
        assert!(
            at.ends_with(".tls") || details.contains("for example"),
            "with a request that shows it: {details}"
        );
    }
    assert!(listed(&rig).await.is_empty(), "nothing past the boundary is filed");
    assert_eq!(get(&rig, "/status"), 403);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_grant_ends_at_its_lifetime() {
    let rig = rig(true, &asking("auto_grant: true, max_lifetime: 1h")).await;
    let (status, v) = ask(&rig, &for_get(&rig, "/status", "2s"));
    assert_eq!((status, v["state"].as_str()), (201, Some("granted")), "{v}");
    assert_eq!(v["lifetime_seconds"], 2);
    assert_eq!(get(&rig, "/status"), 200);
    let id = v["id"].as_str().unwrap().to_owned();
    let started = Instant::now();
    while get(&rig, "/status") == 200 {
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "the grant outlived its lifetime"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(started.elapsed() >= Duration::from_millis(900), "it ended early");
    let (_, mine, _) = through(&rig, "GET", &format!("{ASK_AT}/{id}"), None);
    assert_eq!(mine["state"], "expired", "{mine}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_person_ends_a_grant_early() {
    let rig = rig(true, &asking("auto_grant: true")).await;
    let (_, v) = ask(&rig, &for_get(&rig, "/status", "10m"));
    let id = v["id"].as_str().unwrap().to_owned();
    assert_eq!(get(&rig, "/status"), 200);
    let (status, v) = rig
        .api("DELETE", &format!("/v1/access/{id}"), &rig.token("ci"), "")
        .await;
    assert_eq!(status, 403, "platform may not: {v}");
    let (status, v) = rig
        .api("DELETE", &format!("/v1/access/{id}"), &rig.token("apr"), "")
        .await;
    assert_eq!((status, v["request"]["state"].as_str()), (200, Some("revoked")), "{v}");
    assert_eq!(get(&rig, "/status"), 403);
    let (status, v) = rig
        .api("DELETE", &format!("/v1/access/{id}"), &rig.token("apr"), "")
        .await;
    assert_eq!(status, 409, "{v}");
    let (status, v) = rig
        .api("DELETE", "/v1/access/ar-0000000000000000", &rig.token("apr"), "")
        .await;
    assert_eq!(status, 404, "{v}");
}

/// Write the rig's configuration with `from` replaced by `to`, and reload it.
async fn reload_with(rig: &crate::rigs::console::ConsoleRig, from: &str, to: &str) {
    let yaml = std::fs::read_to_string(&rig.config).unwrap();
    assert!(yaml.contains(from), "{from:?} not in the configuration");
    std::fs::write(&rig.config, yaml.replace(from, to)).unwrap();
    let (status, v) = rig.api("POST", "/v1/reload", &rig.token("admin"), "").await;
    assert_eq!(status, 200, "{v}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_grant_belongs_to_its_sandbox_and_ends_with_it() {
    let rig = rig(true, &asking("auto_grant: true")).await;
    let (_, v) = ask(&rig, &for_get(&rig, "/status", "10m"));
    let id = v["id"].as_str().unwrap().to_owned();
    assert_eq!(get(&rig, "/status"), 200);
    // The same id declared for another user is another sandbox: it inherits neither the grant nor the request.
    reload_with(&rig, "user: alice", "user: bob").await;
    assert_eq!(
        get(&rig, "/status"),
        403,
        "a later sandbox of the same id inherits no grant"
    );
    let (status, mine, _) = through(&rig, "GET", ASK_AT, None);
    assert_eq!(status, 200);
    assert_eq!(mine["requests"], json!([]), "{mine}");
    let (status, v, _) = through(&rig, "GET", &format!("{ASK_AT}/{id}"), None);
    assert_eq!((status, v["reason"].as_str()), (404, Some("access_unknown")), "{v}");
    // Within a second the earlier sandbox's grant is ended in the list too.
    let started = Instant::now();
    loop {
        let all = listed(&rig).await;
        if all[0]["state"] == "expired" {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(10), "{all:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_reload_that_narrows_the_boundary_ends_the_grants_past_it() {
    let rig = rig(true, &asking("auto_grant: true")).await;
    let up = rig.up.addr.port();
    let (_, v) = ask(&rig, &for_get(&rig, "/status", "10m"));
    assert_eq!(v["state"], "granted", "{v}");
    assert_eq!(get(&rig, "/status"), 200);
    let wide = format!("- {{ host: pay.test, ports: [{up}] }}");
    let narrow = format!("- {{ host: pay.test, ports: [{up}], paths: [\"/pay\", \"/mcp\"] }}");
    reload_with(&rig, &wide, &narrow).await;
    assert_eq!(get(&rig, "/status"), 403, "the grant no longer fits the boundary");
    // And what lies past the boundary now cannot be granted again.
    let (status, v) = ask(&rig, &for_get(&rig, "/status", "10m"));
    assert_eq!(
        (status, v["reason"].as_str()),
        (403, Some("access_past_boundary")),
        "{v}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn what_would_take_a_person_out_of_the_loop_is_never_granted_at_once() {
    let rig = rig(true, &asking("auto_grant: true")).await;
    let up = rig.up.addr.port();
    // POST /pay waits for a person under the policy; a rule that lets it through unasked lies inside this
    // boundary, but only a person may grant it.
    let (status, v) = ask(
        &rig,
        &json!({"allow": [{"host": "pay.test", "ports": [up], "methods": ["POST"], "paths": ["/pay"]}], "reason": "pay without asking"}),
    );
    assert_eq!((status, v["state"].as_str()), (202, Some("pending")), "{v}");
    assert!(
        v["adds"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a["kind"] == "approval no longer asked"),
        "{v}"
    );
    let (status, v) = ask(&rig, &for_get(&rig, "/status", "5m"));
    assert_eq!((status, v["state"].as_str()), (201, Some("granted")), "{v}");
    // Asked again, it is granted already: nothing is filed.
    let (status, v) = ask(&rig, &for_get(&rig, "/status", "5m"));
    assert_eq!((status, v["state"].as_str()), (200, Some("not_needed")), "{v}");
    assert_eq!(listed(&rig).await.len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn what_a_credential_of_the_policy_could_reach_is_never_granted_at_once() {
    // The policy holds a credential bound to pay.test (under /api/ alone); the boundary takes in pay.test's
    // subdomains too.
    let extra = "    credentials: [paykey]\n    boundary:\n      credentials: [paykey]\n      allow:\n        - { host: pay.test, ports: [UP_PORT] }\n        - { host: \"*.pay.test\", ports: [UP_PORT] }\n    access: { auto_grant: true }\ncredentials:\n  paykey:\n    source: { env: CONSOLE_OIDC_SECRET }\n    bind: { hosts: [pay.test], ports: [UP_PORT], paths: [\"/api/**\"] }\n    inject: { header: Authorization, value: \"Bearer {secret}\" }\n";
    let rig = rig(true, extra).await;
    let up = rig.up.addr.port();
    // Where the credential may be sent (its host and port, whatever the path): a person decides.
    let (status, v) = ask(&rig, &for_get(&rig, "/status", "5m"));
    assert_eq!((status, v["state"].as_str()), (202, Some("pending")), "{v}");
    assert_eq!(v["reaches_credentials"], true, "{v}");
    // Where it never goes: granted at once.
    let (status, v) = ask(
        &rig,
        &json!({"allow": [{"host": "static.pay.test", "ports": [up], "methods": ["GET"]}], "reason": "assets"}),
    );
    assert_eq!((status, v["state"].as_str()), (201, Some("granted")), "{v}");
    assert_eq!(v["reaches_credentials"], false, "{v}");
    // A pattern that takes in the credential's host reaches it too.
    let (status, v) = ask(
        &rig,
        &json!({"allow": [{"host": "*.pay.test", "ports": [up], "methods": ["GET"]}, {"host": "pay.test", "ports": [up], "methods": ["HEAD"]}], "reason": "all of it"}),
    );
    assert_eq!((status, v["state"].as_str()), (202, Some("pending")), "{v}");
}
