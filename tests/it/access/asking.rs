//! An agent (Python, `requests`) meets the wall and asks its way through: refused, it reads where to ask from the
//! refusal, files a request for what it needs, and goes on once a person grants it in the console (headless
//! Chromium) or, inside the boundary with no credential reached, once the policy grants it at once.

use std::time::Duration;

use fantoccini::Locator;

use super::{agent, asking, for_get, get, listed, rig, through};
use crate::rigs::browser::browser;
use crate::rigs::console::sign_in;
use crate::rigs::wait::{TimedChild, line_where};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_agent_refused_asks_and_goes_on_once_a_person_grants_it_in_the_console() {
    let rig = rig(false, &asking("auto_grant: false")).await;
    let up = rig.up.addr.port();
    // The refusal the agent meets says where to ask, in its body and in a header.
    let (status, refusal, ctype) = through(&rig, "GET", &format!("http://pay.test:{up}/status"), None);
    assert_eq!(
        (status, ctype.as_str()),
        (403, "application/vnd.cordon.refusal+json"),
        "{refusal}"
    );
    assert_eq!(refusal["ask"], true, "{refusal}");
    assert_eq!(refusal["ask_at"], super::ASK_AT, "{refusal}");

    let anna = browser().await;
    sign_in(&rig, &anna, "anna").await;
    let mut asker = agent(&rig, "/status");
    let filed = line_where(
        &mut asker,
        "the agent filing its request",
        Duration::from_secs(60),
        |l| l.starts_with("FILED ") || !l.starts_with("AFTER"),
    );
    let parts: Vec<&str> = filed.split_whitespace().collect();
    assert_eq!(parts.first(), Some(&"FILED"), "the agent did not file: {filed}");
    let (id, state) = (parts[1].to_owned(), parts[2]);
    assert_eq!(state, "pending", "nothing is granted without a person here: {filed}");
    assert!(id.starts_with("ar-"), "{id}");

    // The person reads what it would add, with a request that shows it, and grants it.
    anna.client.refresh().await.unwrap();
    let card = anna.wait_for(&format!("article[data-access='{id}']"), 20).await;
    let shown = card.text().await.unwrap();
    assert!(
        shown.contains("the task needs GET"),
        "the sandbox's reason is shown: {shown}"
    );
    assert!(
        shown.contains(&format!("GET https://pay.test:{up}/status")) || shown.contains("/status"),
        "{shown}"
    );
    assert!(shown.contains("reaches none"), "{shown}");
    assert!(
        !shown.contains("approval no longer asked"),
        "only what the request adds is shown: {shown}"
    );
    card.find(Locator::Css("button.allow"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    anna.wait_for("#notice", 20).await;

    let out = asker.wait_in(Duration::from_secs(60)).unwrap();
    assert!(out.success(), "the agent did not go on after the grant: {out:?}");
    assert_eq!(get(&rig, "/status"), 200);
    assert_eq!(
        get(&rig, "/other"),
        403,
        "a grant opens what was asked for, nothing else"
    );

    let all = listed(&rig).await;
    let granted = all.iter().find(|r| r["id"] == id.as_str()).expect("listed");
    assert_eq!(granted["state"], "granted", "{granted}");
    assert!(granted["decided_by"].as_str().unwrap().contains("anna"), "{granted}");
    let records = rig
        .records_once("the filing audited, and the decision", |r| {
            r["kind"] == "admin" && r["admin"]["action"] == "access_decided"
        })
        .await;
    assert!(
        records
            .iter()
            .any(|r| r["access"]["id"] == id.as_str() && r["access"]["outcome"] == "filed"),
        "the filing is audited"
    );
    assert!(
        records.iter().any(|r| r["kind"] == "admin"
            && r["admin"]["action"] == "access_decided"
            && r["admin"]["principal"].as_str().is_some_and(|p| p.contains("anna"))),
        "the decision is audited with who took it"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn inside_the_boundary_with_no_credential_reached_it_is_granted_at_once() {
    let rig = rig(true, &asking("auto_grant: true")).await;
    let mut asker = agent(&rig, "/status");
    let filed = line_where(
        &mut asker,
        "the agent filing its request",
        Duration::from_secs(60),
        |l| l.starts_with("FILED "),
    );
    assert!(filed.ends_with(" granted"), "{filed}");
    assert!(asker.wait_in(Duration::from_secs(60)).unwrap().success());
    let all = listed(&rig).await;
    assert_eq!(all.len(), 1, "{all:?}");
    assert_eq!(
        all[0]["decided_by"], "cordon",
        "an automatic grant is cordon's: {all:?}"
    );
    assert_eq!(all[0]["reaches_credentials"], false);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn only_an_approver_decides_and_a_decided_request_stays_decided() {
    let rig = rig(true, &asking("auto_grant: false")).await;
    let (status, filed) = super::ask(&rig, &for_get(&rig, "/status", "10m"));
    assert_eq!(status, 202, "{filed}");
    let id = filed["id"].as_str().unwrap().to_owned();
    let path = format!("/v1/access/{id}");
    // The platform role may not decide.
    let (status, v) = rig
        .api("POST", &path, &rig.token("ci"), r#"{"decision":"grant"}"#)
        .await;
    assert_eq!(status, 403, "{v}");
    assert_eq!(get(&rig, "/status"), 403);
    // Who decides is the caller, never a field of the body.
    let (status, v) = rig
        .api(
            "POST",
            &path,
            &rig.token("apr"),
            r#"{"decision":"grant","by":"someone-else"}"#,
        )
        .await;
    assert_eq!(status, 422, "{v}");
    let (status, v) = rig
        .api("POST", &path, &rig.token("apr"), r#"{"decision":"deny"}"#)
        .await;
    assert_eq!((status, v["request"]["state"].as_str()), (200, Some("denied")), "{v}");
    assert_eq!(v["request"]["decided_by"], "apr");
    let (status, v) = rig
        .api("POST", &path, &rig.token("apr"), r#"{"decision":"grant"}"#)
        .await;
    assert_eq!(status, 409, "a denied request is not granted later: {v}");
    assert_eq!(get(&rig, "/status"), 403);
    // The sandbox reads its request's end.
    let (status, mine, _) = through(&rig, "GET", &format!("{}/{id}", super::ASK_AT), None);
    assert_eq!((status, mine["state"].as_str()), (200, Some("denied")), "{mine}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_viewer_sees_what_a_sandbox_asks_for_but_cannot_grant_it() {
    use crate::console::inbox::post_form;
    use crate::rigs::console::session_of;
    let rig = rig(false, &asking("auto_grant: false")).await;
    let (status, filed) = super::ask(&rig, &for_get(&rig, "/status", "10m"));
    assert_eq!(status, 202, "{filed}");
    let id = filed["id"].as_str().unwrap().to_owned();
    let victor = browser().await;
    sign_in(&rig, &victor, "victor").await;
    let card = victor.wait_for(&format!("article[data-access='{id}']"), 20).await;
    assert!(
        card.find(Locator::Css("form.decide")).await.is_err(),
        "a viewer gets no buttons"
    );
    // Posting anyway, with the viewer's own session and CSRF token, from the console's origin: 403 naming the role.
    let v = session_of(&victor).await;
    let (status, page) = post_form(
        &rig,
        &format!("{}access/{id}", v.base),
        &v.cookie,
        Some(&rig.url("")),
        &format!("csrf={}&act=grant", v.csrf),
    )
    .await;
    assert_eq!(status, 403, "{page}");
    assert!(
        page.contains("access_decided needs the role admin or approver"),
        "{page}"
    );
    // Without its CSRF token, nobody's form counts.
    let (status, _) = post_form(
        &rig,
        &format!("{}access/{id}", v.base),
        &v.cookie,
        Some(&rig.url("")),
        "act=grant",
    )
    .await;
    assert_eq!(status, 403);
    assert_eq!(listed(&rig).await[0]["state"], "pending");
    assert_eq!(get(&rig, "/status"), 403);
    victor.close().await;
}
