//! A credential budget across three replicas sharing PostgreSQL, through the binary: what one replica let through
//! counts on the others after a flush, so the sandbox gets exactly the budget in all, and the counts are in the
//! store.

use std::time::Duration;

use crate::control_procs::create;
use crate::pg_replicas::{Setup, pg_replica_edit, setup};

const TOKEN: &str = "shared-budget-token-77a1";

/// curl through `r` as `id:credential`: the status.
fn status(r: &crate::control_procs::Replica, id: &str, cred: &str, ca: &std::path::Path, url: &str) -> u16 {
    crate::control_procs::curl_status(r, id, cred, ca, url)
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
