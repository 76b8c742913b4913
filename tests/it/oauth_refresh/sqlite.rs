//! One cordon (or one at a time) keeping the sign-in in its SQLite store.

use std::time::Duration;

use super::rig::World;
use crate::rigs::process::{Signal, signal};
use crate::rigs::wait::TimedChild;

/// Access tokens of the provider live this long: cordon refreshes 60 s before expiry, so every ~3 s.
const TTL: u32 = 63;
/// Long enough for the access token in hand to be due for refreshing.
const DUE: Duration = Duration::from_millis(3300);

fn ok_bearer(world: &World, got: &crate::rigs::curl::Curled) -> String {
    assert_eq!(got.status, 200, "{got:?}");
    world.bearers().last().cloned().unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_held_sign_in_is_injected_rotated_sealed_and_survives_a_restart() {
    let w = World::new(TTL).await;
    let store = w.sqlite_store();
    let mut c = w.cordon("one", &store, &[]).await;
    let ph = c.placeholder();

    // Nothing seeded yet: refused with the reason, and nothing (not the placeholder) reaches the upstream.
    let got = c.get(&w, "/before", &ph);
    assert_eq!((got.status, got.reason()), (503, "credential_unavailable"), "{got:?}");
    assert!(w.up.seen().is_empty());
    let (status, ready) = c.admin_get("/readyz");
    assert!(
        status == 503 && ready.contains("held") && ready.contains("credentials seed held"),
        "{status} {ready}"
    );

    // An operator seeds the sign-in (from a file); the sandbox's placeholder is swapped for an access token.
    let first = w.provider.sign_in();
    let (ok, out) = c.seed(&first, Some(&w.path("rt.txt")));
    assert!(ok, "{out}");
    let at1 = ok_bearer(&w, &c.get(&w, "/one", &ph));
    assert!(
        w.provider.active(&at1),
        "the upstream got a token the provider does not know"
    );
    assert_ne!(at1, ph);
    assert_eq!(c.admin_get("/readyz").0, 200);
    // Cached while valid: no second refresh.
    assert_eq!(ok_bearer(&w, &c.get(&w, "/two", &ph)), at1);
    assert_eq!(w.provider.stats()["refresh_ok"], 1);

    // Rotation after rotation, the same placeholder; each rotated refresh token is what the next refresh uses
    // (the provider revokes the grant when a consumed one is presented: it would show in `refresh_failed`).
    let mut seen = vec![at1];
    for round in 2..=4 {
        tokio::time::sleep(DUE).await;
        assert_eq!(c.placeholder(), ph, "the placeholder changed with a rotation");
        let at = ok_bearer(&w, &c.get(&w, &format!("/round{round}"), &ph));
        assert!(!seen.contains(&at), "round {round}: a stale access token");
        assert!(w.provider.active(&at));
        seen.push(at);
        let stats = w.provider.stats();
        assert_eq!(
            (stats["refresh_ok"].as_u64(), stats["refresh_failed"].as_u64()),
            (Some(round), Some(0)),
            "{stats}"
        );
    }

    // SECURITY: the refresh tokens are sealed at rest (neither the seeded nor the newest is in the store's
    // files), and the upstream (the sandbox's side) never saw one.
    let newest = w.provider.stats()["last_refresh_token"].as_str().unwrap().to_owned();
    for file in ["cordon.db", "cordon.db-wal"] {
        let bytes = std::fs::read(w.path(file)).unwrap_or_default();
        for token in [&first, &newest, seen.last().unwrap()] {
            assert!(!contains(&bytes, token.as_bytes()), "{file} holds a token in clear");
        }
    }
    for s in w.up.seen() {
        let all = format!("{:?}", s.headers);
        assert!(
            !all.contains(&first) && !all.contains(&newest),
            "a refresh token reached the upstream"
        );
    }

    // A restart reads the sign-in from the store: nothing to seed again, and the rotation goes on.
    let out = crate::rigs::process::signal_and_wait(c.take(), Signal::SIGTERM).await;
    let log = String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout);
    for token in [&first, &newest] {
        assert!(!log.contains(token.as_str()), "a refresh token was logged");
    }
    drop(c);
    let c = w.cordon("one", &store, &[]).await;
    tokio::time::sleep(DUE).await;
    let at = ok_bearer(&w, &c.get(&w, "/after-restart", &ph));
    assert!(w.provider.active(&at) && !seen.contains(&at));
    assert_eq!(w.provider.stats()["refresh_failed"], 0);
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_revoked_grant_makes_the_credential_unavailable_until_seeded_again() {
    let w = World::new(TTL).await;
    let store = w.sqlite_store();
    let mut c = w.cordon("one", &store, &[]).await;
    let ph = c.placeholder();
    // Seeded from standard input this time.
    let (ok, out) = c.seed(&w.provider.sign_in(), None);
    assert!(ok, "{out}");
    ok_bearer(&w, &c.get(&w, "/one", &ph));

    // The user revokes cordon's access at the provider: the next refresh is refused for good (invalid_grant),
    // and that request and every later one are refused with the reason, never sent on with the placeholder nor
    // with the access token refreshed before the revocation.
    w.provider.revoke();
    tokio::time::sleep(DUE).await;
    let n = w.up.seen().len();
    for path in ["/revoked", "/again"] {
        let got = c.get(&w, path, &ph);
        assert_eq!((got.status, got.reason()), (503, "credential_unavailable"), "{got:?}");
        assert!(got.text().contains("held"), "{}", got.text());
    }
    assert_eq!(w.up.seen().len(), n, "a request went on without its credential");
    let stats = w.provider.stats();
    assert_eq!(stats["refresh_failed"], 1, "a dead sign-in is not tried again: {stats}");
    let (status, ready) = c.admin_get("/readyz");
    assert!(
        status == 503 && ready.contains("held") && ready.contains("credentials seed held"),
        "{status} {ready}"
    );
    let (_, metrics) = c.admin_get("/metrics");
    assert!(
        metrics.contains(r#"cordon_token_mints_total{credential="held",result="dead"} 1"#),
        "{metrics}"
    );

    // After a restart, /readyz names it before any request (the store says it is dead).
    let out = crate::rigs::process::signal_and_wait(c.take(), Signal::SIGTERM).await;
    assert!(out.status.code().is_some());
    drop(c);
    let c = w.cordon("one", &store, &[]).await;
    let (status, ready) = c.admin_get("/readyz");
    assert!(
        status == 503 && ready.contains("held") && ready.contains("credentials seed held"),
        "{status} {ready}"
    );
    let got = c.get(&w, "/dead", &ph);
    assert_eq!((got.status, got.reason()), (503, "credential_unavailable"), "{got:?}");
    assert_eq!(w.up.seen().len(), n);
    assert_eq!(w.provider.stats()["refresh_failed"], 1);

    // A new sign-in, seeded: the credential lives again without a restart.
    let (ok, out) = c.seed(&w.provider.sign_in(), Some(&w.path("rt2.txt")));
    assert!(ok, "{out}");
    let at = ok_bearer(&w, &c.get(&w, "/alive", &ph));
    assert!(w.provider.active(&at));
    assert_eq!(c.admin_get("/readyz").0, 200);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_process_killed_once_the_answer_is_stored_loses_nothing() {
    let w = World::new(TTL).await;
    let store = w.sqlite_store();
    // A test build's fault point: the process aborts right after the rotated token's commit.
    let mut c = w
        .cordon("one", &store, &[("CORDON_TEST_FAULT", "oauth_refresh_after_store")])
        .await;
    let ph = c.placeholder();
    let (ok, out) = c.seed(&w.provider.sign_in(), None);
    assert!(ok, "{out}");
    let got = c.get(&w, "/dies", &ph);
    assert_ne!(got.status, 200, "{got:?}");
    let out = c.take().timed_wait_with_output().unwrap();
    assert!(!out.status.success(), "cordon did not stop at the fault point");
    assert!(String::from_utf8_lossy(&out.stderr).contains("oauth_refresh_after_store"));
    drop(c);
    assert_eq!(w.provider.stats()["refresh_ok"], 1, "the provider rotated once");

    // Started again: the stored answer is the sign-in; refreshing goes on from it (presenting the consumed token
    // would have revoked the grant, and shown in refresh_failed).
    let c = w.cordon("one", &store, &[]).await;
    ok_bearer(&w, &c.get(&w, "/back", &ph));
    tokio::time::sleep(DUE).await;
    let at = ok_bearer(&w, &c.get(&w, "/later", &ph));
    assert!(w.provider.active(&at));
    let stats = w.provider.stats();
    assert_eq!(stats["refresh_failed"], 0, "{stats}");
    assert!(stats["refresh_ok"].as_u64().unwrap() >= 2, "{stats}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_process_killed_before_the_answer_reaches_it_is_reported_never_hidden() {
    let w = World::new(TTL).await;
    let store = w.sqlite_store();
    let mut c = w.cordon("one", &store, &[]).await;
    let ph = c.placeholder();
    let (ok, out) = c.seed(&w.provider.sign_in(), None);
    assert!(ok, "{out}");
    ok_bearer(&w, &c.get(&w, "/one", &ph));

    // The provider rotates and then holds its answer; cordon is killed while it waits. The new refresh token
    // existed only in that answer: no client can keep it (the one loss write-ahead cannot prevent).
    w.provider.delay_next(5000);
    tokio::time::sleep(DUE).await;
    let (proxy, ca, port) = (c.proxy, w.path("one-sb1.pem"), w.up.addr.port());
    let ph2 = ph.clone();
    let pending = std::thread::spawn(move || {
        let mut cmd = crate::rigs::process::curl();
        cmd.args(["-s", "--max-time", "20"])
            .args(["-x", &format!("http://sb1:tok1@127.0.0.1:{proxy}")])
            .arg("--cacert")
            .arg(&ca)
            .args(["-H", &format!("Authorization: Bearer {ph2}")])
            .arg(format!("https://api.held.test:{port}/mid-refresh"));
        crate::rigs::curl::run(cmd)
    });
    for _ in 0..100 {
        if w.provider.stats()["refresh_ok"] == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        w.provider.stats()["refresh_ok"],
        2,
        "the refresh never reached the provider"
    );
    let child = c.take();
    signal(child.id(), Signal::SIGKILL).unwrap();
    let _ = child.timed_wait_with_output();
    drop(c);
    assert_ne!(pending.join().unwrap().status, 200);

    // Started again, cordon waits out the dead process's lease, retries with the refresh token it holds, and the
    // provider refuses it (consumed): the credential is reported unavailable with what to do, and its requests
    // are refused, never sent on with the placeholder.
    let c = w.cordon("one", &store, &[]).await;
    let n = w.up.seen().len();
    let got = c.get(&w, "/after", &ph);
    assert_eq!((got.status, got.reason()), (503, "credential_unavailable"), "{got:?}");
    assert_eq!(w.up.seen().len(), n);
    let (status, ready) = c.admin_get("/readyz");
    assert!(
        status == 503 && ready.contains("credentials seed held"),
        "{status} {ready}"
    );
    let stats = w.provider.stats();
    assert_eq!(stats["refresh_failed"], 1, "{stats}");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_sandbox_calling_the_token_endpoint_itself_gets_no_refresh_token() {
    let w = World::new(600).await;
    let store = w.sqlite_store();
    let c = w.cordon("one", &store, &[]).await;
    let ph = c.placeholder();
    let (ok, out) = c.seed(&w.provider.sign_in(), None);
    assert!(ok, "{out}");
    ok_bearer(&w, &c.get(&w, "/one", &ph));
    let before = w.provider.stats();

    // Its placeholder offered as the refresh token, to the provider through cordon (a rule lets it reach the
    // token endpoint): refused before it leaves, the placeholder being bound elsewhere.
    let got = c.post_token(&w, &format!("grant_type=refresh_token&refresh_token={ph}"));
    assert_eq!((got.status, got.reason()), (403, "credential_exfiltration"), "{got:?}");
    // The real access token (had it leaked to the sandbox), offered there: cordon knows it, and refuses it
    // anywhere but its binding.
    let at = w.bearers().last().cloned().unwrap();
    let got = c.post_token(&w, &format!("grant_type=refresh_token&refresh_token={at}"));
    assert_eq!((got.status, got.reason()), (403, "secret_exfiltration"), "{got:?}");
    // Anything else is the provider's business: it refuses, and its answer carries no token.
    let got = c.post_token(&w, "grant_type=refresh_token&refresh_token=guess");
    assert_eq!(got.status, 400, "{got:?}");
    assert!(
        got.text().contains("invalid_grant") && !got.text().contains("access_token"),
        "{}",
        got.text()
    );
    let after = w.provider.stats();
    assert_eq!(
        after["refresh_ok"], before["refresh_ok"],
        "the sandbox refreshed: {after}"
    );
    // The held sign-in is untouched: still usable.
    assert_eq!(c.get(&w, "/two", &ph).status, 200);
}
