//! An approval across replicas sharing PostgreSQL, through the binary: a request held on one replica is listed
//! on another and released by the decision made there (gone from every list once decided); the standing grant
//! it made applies on a third at once, and its removal makes every replica ask again.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::rigs::replicas::{Replica, Setup, admin_get, ca_of, pg_replica_edit, setup};
use crate::rigs::wait::Within;

#[tokio::test(flavor = "multi_thread")]
async fn a_request_held_on_one_replica_is_released_by_an_approval_made_on_another() {
    let Setup { pg, dir, _up, port, .. } = setup().await;
    let ask = move |yaml: String| {
        yaml.replace(
            "  web:\n    allow:\n",
            &format!(
                "  web:\n    allow:\n      - host: unlisted.test\n        ports: [{port}]\n        paths: [\"/api/**\"]\n        action: ask\n"
            ),
        )
    };
    let a = pg_replica_edit(&pg, dir.path(), "a", port, ask).await;
    let b = pg_replica_edit(&pg, dir.path(), "b", port, ask).await;
    let c = pg_replica_edit(&pg, dir.path(), "c", port, ask).await;
    let (_, shown) = admin_get(&a, "/v1/sandboxes/sb1").await;
    let ca = ca_of(dir.path(), "sb1", &shown);
    // Held on b.
    let held = held_request(b.proxy, ca.clone(), port);
    // Listed on a, which does not hold it.
    let id = pending_on(&a).await;
    // A decision that is not acceptable is refused on a before anything is written.
    let token = a.admin_token();
    let (status, _, text) = crate::rigs::control::admin_request(
        a.admin_addr(),
        "POST",
        &format!("/v1/approvals/{id}"),
        Some(&token),
        r#"{"decision":"deny","scope":"always"}"#,
    )
    .await;
    assert_eq!(status, 422, "{text}");
    // Allowed through a: b releases the request within a second.
    let (status, _, text) = crate::rigs::control::admin_request(
        a.admin_addr(),
        "POST",
        &format!("/v1/approvals/{id}"),
        Some(&token),
        r#"{"decision":"allow","scope":"always"}"#,
    )
    .await;
    assert_eq!(status, 200, "{text}");
    let decided = Instant::now();
    let (code, done) = tokio::task::spawn_blocking(move || held.join().unwrap()).await.unwrap();
    assert_eq!(code, "200");
    let took = done.saturating_duration_since(decided);
    assert!(
        took < Duration::from_secs(1),
        "b released the request {took:?} after the decision on a"
    );
    // Decided: gone from every replica's list, and a second decision finds nothing.
    let deadline = Instant::now() + Duration::from_secs(3);
    loop {
        let (_, list) = admin_get(&b, "/v1/approvals").await;
        if list["pending"].as_array().is_some_and(Vec::is_empty) {
            break;
        }
        assert!(Instant::now() < deadline, "a decided ask stayed listed: {list}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (status, _, _) = crate::rigs::control::admin_request(
        b.admin_addr(),
        "POST",
        &format!("/v1/approvals/{id}"),
        Some(&token),
        r#"{"decision":"allow"}"#,
    )
    .await;
    assert_eq!(status, 404);

    // The standing grant the decision made (on b, which held the request) applies on c at once.
    let deadline = Instant::now() + Duration::from_secs(2);
    let grant = loop {
        let (_, grants) = admin_get(&c, "/v1/grants").await;
        if let Some(id) = grants["grants"][0]["id"].as_str() {
            break id.to_owned();
        }
        let rows = pg.psql("SELECT id, sandbox FROM grants");
        assert!(Instant::now() < deadline, "no grant on c: {grants}; stored: {rows:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let through_c = held_request(c.proxy, ca.clone(), port);
    let (code, _) = tokio::task::spawn_blocking(move || through_c.join().unwrap())
        .await
        .unwrap();
    assert_eq!(code, "200", "the grant made on b did not apply on c");
    // Removed through a: asked again everywhere (here on b; denied through a).
    let (status, _, text) = crate::rigs::control::admin_request(
        a.admin_addr(),
        "DELETE",
        &format!("/v1/grants/{grant}"),
        Some(&token),
        "",
    )
    .await;
    assert_eq!(status, 200, "{text}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let again = held_request(b.proxy, ca.clone(), port);
    let id = pending_on(&a).await;
    let (status, _, text) = crate::rigs::control::admin_request(
        a.admin_addr(),
        "POST",
        &format!("/v1/approvals/{id}"),
        Some(&token),
        r#"{"decision":"deny"}"#,
    )
    .await;
    assert_eq!(status, 200, "{text}");
    let (code, _) = tokio::task::spawn_blocking(move || again.join().unwrap())
        .await
        .unwrap();
    assert_eq!(code, "403", "a removed grant still let the request through");
}

/// `POST https://unlisted.test/api/deploy` as sb1 through the proxy on `proxy`, in a thread: (status, when done).
fn held_request(proxy: u16, ca: PathBuf, port: u16) -> std::thread::JoinHandle<(String, Instant)> {
    std::thread::spawn(move || {
        let out = crate::rigs::process::curl()
            .args(["-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "30"])
            .args(["-x", &format!("http://sb1:tok1@127.0.0.1:{proxy}")])
            .arg("--cacert")
            .arg(&ca)
            .arg(format!("https://unlisted.test:{port}/api/deploy"))
            .timed_output()
            .unwrap();
        (String::from_utf8_lossy(&out.stdout).trim().to_owned(), Instant::now())
    })
}

/// The id of the first pending approval listed on `r`, waiting up to 10 s for one.
async fn pending_on(r: &Replica) -> String {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (status, list) = admin_get(r, "/v1/approvals").await;
        assert_eq!(status, 200, "{list}");
        if let Some(p) = list["pending"].as_array().and_then(|l| l.first()) {
            assert_eq!(p["sandbox"], "sb1", "{p}");
            assert_eq!(p["path"], "/api/deploy", "{p}");
            return p["id"].as_str().unwrap().to_owned();
        }
        assert!(Instant::now() < deadline, "no pending approval showed on the replica");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
