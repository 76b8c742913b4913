//! Two replicas sharing the sign-in through PostgreSQL.

use std::time::Duration;

use super::rig::World;
use crate::rigs::pg::Pg;
use crate::rigs::wait::TimedChild;

const TTL: u32 = 63;
const DUE: Duration = Duration::from_millis(3300);

/// The `control:` lines of a replica on `pg`.
fn pg_store(w: &World, pg: &Pg) -> String {
    std::fs::write(w.path("pg-password"), Pg::PASSWORD).unwrap();
    std::fs::write(w.path("pg-ca.pem"), pg.ca_pem()).unwrap();
    format!(
        "  store: \"{}\"\n  store_password: {{ file: {} }}\n  store_ca_file: {}\n  store_key: {{ env: CORDON_STORE_KEY }}",
        pg.dsn(),
        w.path("pg-password").display(),
        w.path("pg-ca.pem").display()
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn two_replicas_refreshing_at_once_reach_the_provider_once_per_rotation() {
    let pg = Pg::start();
    let w = World::new(TTL).await;
    let store = pg_store(&w, &pg);
    let a = w.cordon("a", &store, &[]).await;
    let b = w.cordon("b", &store, &[]).await;
    let ph = a.placeholder();
    assert_eq!(b.placeholder(), ph, "replicas hand out the same placeholder");
    let first = w.provider.sign_in();
    let (ok, out) = a.seed(&first, None);
    assert!(ok, "{out}");

    // Each round: the token in hand is due on both replicas, and eight requests (four through each) ask at once.
    let rounds = 4;
    for round in 1..=rounds {
        if round > 1 {
            tokio::time::sleep(DUE).await;
        }
        std::thread::scope(|s| {
            let asks: Vec<_> = (0..8)
                .map(|i| {
                    let (r, w, ph) = (if i % 2 == 0 { &a } else { &b }, &w, &ph);
                    s.spawn(move || r.get(w, &format!("/r{round}/{i}"), ph))
                })
                .collect();
            for ask in asks {
                let got = ask.join().unwrap();
                assert_eq!(got.status, 200, "round {round}: {got:?}");
            }
        });
        let stats = w.provider.stats();
        // SECURITY: one refresh per rotation across replicas; a second one with the same (consumed) token would
        // have revoked the grant at the provider and shown in refresh_failed.
        assert_eq!(
            (stats["refresh_ok"].as_u64(), stats["refresh_failed"].as_u64()),
            (Some(round), Some(0)),
            "round {round}: {stats}"
        );
    }
    // Every token the upstream saw was one the provider issued; the newest is valid.
    let bearers = w.bearers();
    assert!(bearers.iter().all(|t| t != &ph && t != &first));
    assert!(w.provider.active(bearers.last().unwrap()));
    // Sealed at rest in PostgreSQL: neither refresh token is in the table in clear.
    let newest = w.provider.stats()["last_refresh_token"].as_str().unwrap().to_owned();
    for token in [&first, &newest] {
        let found = pg.psql(&format!(
            "SELECT count(*) FROM oauth_refresh WHERE position('{token}'::bytea in token) > 0"
        ));
        assert_eq!(found.trim(), "0", "a refresh token in clear in the database");
    }
    assert_eq!(
        pg.psql("SELECT generation FROM oauth_refresh WHERE credential = 'held'")
            .trim(),
        (rounds + 1).to_string()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_replica_killed_after_the_answer_leaves_the_sign_in_to_the_other() {
    let pg = Pg::start();
    let w = World::new(TTL).await;
    let store = pg_store(&w, &pg);
    let mut a = w
        .cordon("a", &store, &[("CORDON_TEST_FAULT", "oauth_refresh_after_store")])
        .await;
    let b = w.cordon("b", &store, &[]).await;
    let ph = a.placeholder();
    let (ok, out) = b.seed(&w.provider.sign_in(), None);
    assert!(ok, "{out}");

    // Replica a refreshes, and dies right after storing the provider's answer.
    let got = a.get(&w, "/a", &ph);
    assert_ne!(got.status, 200, "{got:?}");
    let out = a.take().timed_wait_with_output().unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("oauth_refresh_after_store"));
    drop(a);
    assert_eq!(w.provider.stats()["refresh_ok"], 1);

    // Replica b goes on from what a stored: the access token a got, then rotations of its own.
    let got = b.get(&w, "/b", &ph);
    assert_eq!(got.status, 200, "{got:?}");
    tokio::time::sleep(DUE).await;
    let got = b.get(&w, "/b-later", &ph);
    assert_eq!(got.status, 200, "{got:?}");
    let stats = w.provider.stats();
    assert_eq!(stats["refresh_failed"], 0, "{stats}");
    assert!(stats["refresh_ok"].as_u64().unwrap() >= 2, "{stats}");
    assert!(w.provider.active(w.bearers().last().unwrap()));
}
