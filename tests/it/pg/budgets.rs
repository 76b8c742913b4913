//! Budgets across three replicas sharing PostgreSQL, through the binary: a credential budget (what one replica
//! let through counts on the others after a flush, so the sandbox gets exactly the budget in all, and the counts
//! are in the store), and a sandbox's byte budget, held within the written bound.

use std::path::Path;
use std::time::Duration;

use crate::rigs::replicas::{Replica, Setup, create, pg_replica_edit, setup};

const TOKEN: &str = "shared-budget-token-77a1";

/// curl through `r` as `id:credential`: the status.
fn status(r: &crate::rigs::replicas::Replica, id: &str, cred: &str, ca: &std::path::Path, url: &str) -> u16 {
    crate::rigs::replicas::curl_status(r, id, cred, ca, url)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_credential_budget_holds_across_replicas() {
    let Setup {
        pg,
        dir,
        _up,
        port,
        url,
    } = setup().await;
    let d = dir.path().display().to_string();
    std::fs::write(dir.path().join("up-token"), TOKEN).unwrap();
    let budget = move |yaml: String| {
        yaml.replace(
            "timeouts:\n",
            &format!(
                "credentials:\n  up-token:\n    source: {{ file: {d}/up-token }}\n    bind: {{ hosts: [allowed.test], \
                 ports: [{port}] }}\n    inject: {{ header: Authorization, value: \"Bearer {{secret}}\" }}\n    budget: \
                 {{ requests: 30, window: 1h }}\ntimeouts:\n"
            ),
        )
        .replace("  web:\n    allow:\n", "  web:\n    credentials: [up-token]\n    allow:\n")
    };
    let a = pg_replica_edit(&pg, dir.path(), "a", port, budget.clone()).await;
    let b = pg_replica_edit(&pg, dir.path(), "b", port, budget.clone()).await;
    let c = pg_replica_edit(&pg, dir.path(), "c", port, budget).await;
    let (id, cred, ca) = create(&a, dir.path()).await;

    // 20 through a.
    for _ in 0..20 {
        assert_eq!(status(&a, &id, &cred, &ca, &url), 200);
    }
    // After a flush (every second) b knows: exactly 10 more pass through it.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let through_b: Vec<u16> = (0..15).map(|_| status(&b, &id, &cred, &ca, &url)).collect();
    assert_eq!(
        (
            through_b.iter().filter(|s| **s == 200).count(),
            through_b.iter().filter(|s| **s == 429).count()
        ),
        (10, 5),
        "{through_b:?}"
    );
    // And then c refuses too.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert_eq!(status(&c, &id, &cred, &ca, &url), 429);
    // The counts live in PostgreSQL: 30 requests carried the credential (the refused ones never did).
    let total: u64 = pg
        .psql("SELECT sum(requests) FROM credential_budgets")
        .trim()
        .parse()
        .unwrap();
    assert_eq!(total, 30);
    // Another sandbox's budget is its own, on every replica.
    let (other, other_cred, other_ca) = create(&c, dir.path()).await;
    assert_eq!(status(&a, &other, &other_cred, &other_ca, &url), 200);
}

/// curl `url` through `r` as `id:credential`: (HTTP status, CONNECT status, bytes of body received).
fn fetch(r: &Replica, id: &str, credential: &str, ca: &Path, url: &str) -> (u16, u16, u64) {
    let mut c = crate::rigs::process::curl();
    c.args(["-s", "--max-time", "10"])
        .args(["-x", &format!("http://{id}:{credential}@127.0.0.1:{}", r.proxy)])
        .arg("--cacert")
        .arg(ca)
        .arg(url);
    let got = crate::rigs::curl::run(c);
    (got.status, got.connect, got.body.len() as u64)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_byte_budget_holds_across_replicas_within_the_written_bound() {
    let Setup { pg, dir, _up, port, .. } = setup().await;
    // 250 KiB a window; /big is 100 000 bytes.
    let budget = |yaml: String| {
        yaml.replace(
            "timeouts:\n",
            "limits:\n  per_sandbox:\n    download: 250KiB\n    budget_window: 1h\ntimeouts:\n",
        )
    };
    let a = pg_replica_edit(&pg, dir.path(), "a", port, budget).await;
    let b = pg_replica_edit(&pg, dir.path(), "b", port, budget).await;
    let c = pg_replica_edit(&pg, dir.path(), "c", port, budget).await;
    let (id, cred, ca) = create(&a, dir.path()).await;
    let big = format!("https://allowed.test:{port}/big");
    // 200 000 bytes through a.
    for _ in 0..2 {
        assert_eq!(fetch(&a, &id, &cred, &ca, &big), (200, 200, 100_000));
    }
    // After a flush interval (1 s) the others know: c lets through only what is left of the budget (56 000
    // bytes; the bound allows one chunk more), then cuts.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let (_, _, got) = fetch(&c, &id, &cred, &ca, &big);
    assert!(
        got < 100_000,
        "c let the whole body through a spent budget ({got} bytes)"
    );
    // And then every replica refuses the sandbox.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    for r in [&a, &b, &c] {
        let (_, connect, got) = fetch(r, &id, &cred, &ca, &big);
        assert_eq!(
            (connect, got),
            (429, 0),
            "a replica still served a sandbox over its budget"
        );
    }
    // The counts live in PostgreSQL, per window slot, under the sandbox's incarnation (`id#nonce`).
    let total: u64 = pg
        .psql(&format!(
            "SELECT sum(down_bytes) FROM budgets WHERE sandbox LIKE '{id}#%'"
        ))
        .trim()
        .parse()
        .unwrap();
    assert!((200_000..=400_000).contains(&total), "{total}");
    // Another sandbox is unaffected.
    let (other, other_cred, other_ca) = create(&b, dir.path()).await;
    assert_eq!(fetch(&c, &other, &other_cred, &other_ca, &big), (200, 200, 100_000));
}
