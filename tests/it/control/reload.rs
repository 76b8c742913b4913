//! Reload (API, file change) and metrics, in process; restart, a second replica and SIGHUP, with the binary.

use std::collections::HashMap;
use std::time::Duration;

use serde_json::Value;
use tokio::io::AsyncWriteExt;

use crate::rigs::client::{auth, closed_within};
use crate::rigs::control::*;
use crate::rigs::tls::tls_as;

async fn reload(rig: &ControlRig) -> (u16, Value) {
    let (status, _, body) = rig.raw("POST", "/v1/reload", Some(&rig.token), "").await;
    (status, serde_json::from_str(&body).unwrap())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_valid_reload_applies_and_an_invalid_one_is_refused_with_its_errors() {
    let rig = control_rig("").await;
    assert_eq!(connect(&rig, ("sb1", "tok1"), "unlisted.test").await.0.status, 403);
    let port = rig.up.addr.port();
    let added = rig.yaml.replace(
        "  web:\n    allow:\n",
        &format!("  web:\n    allow:\n      - host: unlisted.test\n        ports: [{port}]\n"),
    );
    rig.write(&added);
    let (status, v) = reload(&rig).await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["generation"], 2);
    assert_eq!(connect(&rig, ("sb1", "tok1"), "unlisted.test").await.0.status, 200);

    // Invalid: two errors, both reported with their paths; the running configuration stays.
    rig.write(&added.replace("ports: [", "ports: [99999, "));
    let (status, v) = reload(&rig).await;
    assert_eq!(status, 422, "{v}");
    assert_eq!(v["error"]["code"], "invalid_config");
    let details = v["error"]["details"].as_array().unwrap();
    assert!(
        details
            .iter()
            .any(|d| d.as_str().unwrap().contains("policies.web.allow[0].ports")),
        "{v}"
    );
    assert_eq!(connect(&rig, ("sb1", "tok1"), "unlisted.test").await.0.status, 200);
    assert_eq!(rig.state.current().number, 2);

    // A change that takes a restart is refused as such.
    rig.write(&added.replace("timeouts:\n", "limits: { max_connections: 7 }\ntimeouts:\n"));
    let (status, v) = reload(&rig).await;
    assert_eq!(status, 422, "{v}");
    assert!(
        v["error"]["details"][0]
            .as_str()
            .unwrap()
            .contains("limits.max_connections"),
        "{v}"
    );

    let metrics = metrics(&rig).await;
    assert_eq!(
        metrics.get("cordon_reloads_total{trigger=\"api\",outcome=\"ok\"}"),
        Some(&1.0),
        "{metrics:?}"
    );
    assert_eq!(
        metrics.get("cordon_reloads_total{trigger=\"api\",outcome=\"invalid\"}"),
        Some(&2.0)
    );
    assert_eq!(metrics.get("cordon_config_generation"), Some(&2.0));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_reload_closes_the_tunnels_of_a_removed_sandbox_and_of_a_removed_rule() {
    let rig = control_rig("").await;
    // sb1: a blind tunnel to pinned.test (tls: tunnel) and an intercepted one to allowed.test.
    let (status, mut pinned) = connect(&rig, ("sb1", "tok1"), "pinned.test").await;
    assert_eq!(status.status, 200);
    let mut intercepted = rig.tls(("sb1", "tok1")).await;
    // gw's policy is the same; its tunnel must survive a change that is not about it.
    let port = rig.up.addr.port();
    let without_rule = rig.yaml.replace(
        &format!("      - host: pinned.test\n        ports: [{port}]\n        tls: tunnel\n"),
        "",
    );
    assert_ne!(without_rule, rig.yaml);
    rig.write(&without_rule);
    assert_eq!(reload(&rig).await.0, 200);
    assert!(
        closed_within(&mut pinned, Duration::from_secs(1)).await,
        "a tunnel outlived its rule"
    );
    {
        use tokio::io::AsyncReadExt;
        let mut b = [0u8; 1];
        assert!(
            tokio::time::timeout(Duration::from_millis(300), intercepted.read(&mut b))
                .await
                .is_err(),
            "an allowed tunnel was closed"
        );
    }
    // Now remove sb1 altogether.
    let without_sb1 = without_rule.replace(
        &format!(
            "  - id: sb1\n    user: alice\n    token_sha256: {}\n    policy: web\n",
            crate::rigs::client::hash("tok1")
        ),
        "",
    );
    assert_ne!(without_sb1, without_rule);
    rig.write(&without_sb1);
    assert_eq!(reload(&rig).await.0, 200);
    assert!(
        closed_within(&mut intercepted, Duration::from_secs(1)).await,
        "the removed sandbox's tunnel stayed open"
    );
    assert_eq!(connect(&rig, ("sb1", "tok1"), "allowed.test").await.0.status, 407);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_edit_of_the_file_is_picked_up_without_asking() {
    let rig = control_rig("").await;
    assert_eq!(connect(&rig, ("sb1", "tok1"), "unlisted.test").await.0.status, 403);
    let port = rig.up.addr.port();
    rig.write(&rig.yaml.replace(
        "  web:\n    allow:\n",
        &format!("  web:\n    allow:\n      - host: unlisted.test\n        ports: [{port}]\n"),
    ));
    assert!(
        rig.until(Duration::from_secs(5), || rig.state.current().number == 2)
            .await,
        "the file change was not noticed"
    );
    assert_eq!(connect(&rig, ("sb1", "tok1"), "unlisted.test").await.0.status, 200);
    // A broken edit leaves the running configuration in place.
    rig.write("policies: [");
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(rig.state.current().number, 2);
    assert_eq!(connect(&rig, ("sb1", "tok1"), "unlisted.test").await.0.status, 200);
}

/// `/metrics`, parsed: series (name with labels sorted as exposed) -> value.
async fn metrics(rig: &ControlRig) -> HashMap<String, f64> {
    let (status, head, body) = rig.raw("GET", "/metrics", None, "").await;
    assert_eq!(status, 200);
    assert!(head.contains("application/openmetrics-text"));
    assert!(body.trim_end().ends_with("# EOF"));
    body.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| {
            let (series, value) = l.rsplit_once(' ').unwrap();
            (series.to_string(), value.parse::<f64>().unwrap())
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn metrics_count_requests_tunnels_certificates_and_sandboxes() {
    let rig = control_rig("").await;
    let created = rig.create("web", "10m").await;
    let (id, cred) = (created["id"].as_str().unwrap(), created["credential"].as_str().unwrap());
    assert_eq!(connect(&rig, ("sb1", "nope"), "allowed.test").await.0.status, 407);
    assert_eq!(connect(&rig, (id, cred), "unlisted.test").await.0.status, 403);
    let ca = rig.dir.path().join("ca.pem");
    std::fs::write(&ca, created["ca_certificate"].as_str().unwrap()).unwrap();
    let target = format!("allowed.test:{}", rig.up.addr.port());
    let _t1 = tls_as(rig.proxy, (id, cred), &target, "allowed.test", &ca, b"http/1.1")
        .await
        .unwrap();
    let _t2 = tls_as(rig.proxy, (id, cred), &target, "allowed.test", &ca, b"http/1.1")
        .await
        .unwrap();
    let m = metrics(&rig).await;
    let get = |k: &str| m.get(k).copied().unwrap_or_else(|| panic!("no {k} in {m:#?}"));
    assert_eq!(
        get("cordon_requests_total{kind=\"connect\",decision=\"deny\",outcome=\"ok\",reason=\"auth_invalid\"}"),
        1.0
    );
    assert_eq!(
        get("cordon_requests_total{kind=\"connect\",decision=\"deny\",outcome=\"ok\",reason=\"no_rule\"}"),
        1.0
    );
    assert_eq!(get("cordon_cert_cache_lookups_total{result=\"miss\"}"), 1.0);
    assert_eq!(get("cordon_cert_cache_lookups_total{result=\"hit\"}"), 1.0);
    assert_eq!(
        get(&format!("cordon_open_tunnels{{sandbox=\"{id}\",mode=\"intercept\"}}")),
        2.0
    );
    assert!(get("cordon_request_duration_seconds_count{kind=\"connect\",decision=\"deny\",outcome=\"ok\"}") >= 2.0);
    assert!(
        rig.until(Duration::from_secs(2), || rig
            .state
            .control
            .live_count(cordon::control::now())
            == 1)
            .await
    );

    // Token mints: a credential whose token endpoint refuses; the failure is counted (and the request gets 503).
    let secret = rig.dir.path().join("client-secret");
    std::fs::write(&secret, "s3cret\n").unwrap();
    let dead = format!("127.0.0.1:{}", crate::rigs::ports::free_port());
    let credential = format!(
        "credentials:\n  dead:\n    source: {{ oauth2: {{ token_url: \"http://{dead}/token\", client_id: c, \
         client_secret: {{ file: {} }} }} }}\n    bind: {{ hosts: [allowed.test], ports: [{}] }}\n    \
         inject: {{ header: Authorization, value: \"Bearer {{secret}}\" }}\n",
        secret.display(),
        rig.up.addr.port()
    );
    rig.write(
        &(rig
            .yaml
            .replace("  web:\n    allow:\n", "  web:\n    credentials: [dead]\n    allow:\n")
            + &credential),
    );
    let (status, _, body) = rig.raw("POST", "/v1/reload", Some(&rig.token), "").await;
    assert_eq!(status, 200, "{body}");
    let mut tls = rig.tls(("sb1", "tok1")).await;
    tls.write_all(format!("GET / HTTP/1.1\r\nHost: {target}\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let answer = crate::rigs::tls::read_tls_response(&mut tls).await;
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
    tokio::time::sleep(Duration::from_millis(400)).await;
    let m = metrics(&rig).await;
    assert_eq!(m.get("cordon_sandboxes"), Some(&1.0));
    assert_eq!(
        m.get("cordon_token_mints_total{credential=\"dead\",result=\"failed\"}"),
        Some(&1.0),
        "{m:#?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_request_in_flight_finishes_on_the_configuration_it_started_with() {
    let rig = control_rig("").await;
    let plain = crate::rigs::upstreams::upstream("127.0.0.3").await;
    let p = plain.addr.port();
    // Point the echo.test rule at a plain upstream with a slow path.
    let with = rig.yaml.replace(
        "      - host: echo.test\n        ports: [1]\n",
        &format!("      - host: echo.test\n        ports: [{p}]\n"),
    );
    assert_ne!(with, rig.yaml);
    rig.write(&with);
    assert_eq!(reload(&rig).await.0, 200);
    let proxy = rig.proxy;
    let slow = tokio::spawn(async move {
        let req = format!(
            "GET http://echo.test:{p}/slow HTTP/1.1\r\nHost: echo.test\r\n{}Connection: close\r\n\r\n",
            auth("sb1", "tok1")
        );
        crate::rigs::client::send(proxy, &req).await
    });
    assert!(
        rig.until(Duration::from_secs(3), || plain
            .seen()
            .iter()
            .any(|s| s.uri.ends_with("/slow")))
            .await
    );
    // The rule goes while /slow is upstream.
    rig.write(&rig.yaml.replace("      - host: echo.test\n        ports: [1]\n", ""));
    assert_eq!(reload(&rig).await.0, 200);
    let done = slow.await.unwrap();
    assert_eq!(done.status, 200, "the request in flight was cut by the reload");
    assert_eq!(done.text(), "slow hello\n");
    let req = format!(
        "GET http://echo.test:{p}/after HTTP/1.1\r\nHost: echo.test\r\n{}Connection: close\r\n\r\n",
        auth("sb1", "tok1")
    );
    assert_eq!(crate::rigs::client::send(proxy, &req).await.status, 403);
}
