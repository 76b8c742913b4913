//! A sandbox's own policy changed on one replica holds on the others at once, through the binary: with replicas
//! sharing a SQLite file, and with replicas sharing PostgreSQL (no folder in common). The replica that did not
//! take the PATCH closes the tunnel the new policy no longer allows and decides by the new policy.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;

use crate::rigs::client::closed_within;
use crate::rigs::replicas::{Replica, curl_status, pg_replica, replica, upstream};

/// A CONNECT to `host` on port `port` through `r` as `who`: the status, and the stream.
async fn connect(r: &Replica, who: (&str, &str), host: &str, port: u16) -> (u16, tokio::net::TcpStream) {
    let mut s = tokio::net::TcpStream::connect(("127.0.0.1", r.proxy)).await.unwrap();
    let auth = crate::rigs::client::auth(who.0, who.1);
    let req = format!("CONNECT {host}:{port} HTTP/1.1\r\nHost: {host}:{port}\r\n{auth}\r\n");
    s.write_all(req.as_bytes()).await.unwrap();
    (crate::rigs::client::read_connect_response(&mut s).await, s)
}

/// Created on `a` with its own policy (allowed.test, and the pinned tunnel); a tunnel to pinned.test open on `b`;
/// narrowed on `a`: `b` closes that tunnel and refuses a new one, and still serves what is left.
async fn narrowed_on_one_holds_on_the_other(a: &Replica, b: &Replica, dir: &std::path::Path, port: u16) -> String {
    let own = json!({"extends": "web", "allow": [
        {"host": "allowed.test", "ports": [port]},
        {"host": "pinned.test", "ports": [port], "tls": "tunnel"},
    ]});
    let req = cordon::cli::admin_client::CreateRequest {
        user: "alice".into(),
        policy: own,
        ttl: Some("1h".into()),
        ..Default::default()
    };
    let created: Value = a.admin.create(&req).await.unwrap();
    let id = created["id"].as_str().unwrap().to_string();
    let cred = created["credential"].as_str().unwrap().to_string();
    let ca = dir.join(format!("{id}.pem"));
    std::fs::write(&ca, created["ca_certificate"].as_str().unwrap()).unwrap();
    let who = (id.as_str(), cred.as_str());
    let url = format!("https://allowed.test:{port}/hello");
    let deadline = Instant::now() + Duration::from_secs(3);
    while curl_status(b, &id, &cred, &ca, &url) != 200 {
        assert!(Instant::now() < deadline, "b never served the new sandbox");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (status, mut pinned) = connect(b, who, "pinned.test", port).await;
    assert_eq!(status, 200);

    let narrow = json!({"extends": "web", "allow": [{"host": "allowed.test", "ports": [port]}]});
    let changed = a.admin.set_policy(&id, &narrow).await.unwrap();
    // The intercepted names are the same: the CA stays, so clients keep trusting it.
    assert_eq!(changed["ca_reissued"], false, "{changed}");
    let patched = Instant::now();
    assert!(
        closed_within(&mut pinned, Duration::from_secs(3)).await,
        "b kept a tunnel the new policy does not allow"
    );
    let took = patched.elapsed();
    assert_eq!(connect(b, who, "pinned.test", port).await.0, 403);
    assert_eq!(curl_status(b, &id, &cred, &ca, &url), 200);
    let (_, shown) = crate::rigs::replicas::admin_get(b, &format!("/v1/sandboxes/{id}")).await;
    assert_eq!(shown["inline_policy"], narrow);
    eprintln!("b closed the tunnel {took:?} after the PATCH on a");
    id
}

#[tokio::test(flavor = "multi_thread")]
async fn a_policy_changed_on_one_sqlite_replica_holds_on_the_other() {
    let dir = tempfile::tempdir().unwrap();
    let up = upstream(dir.path()).await;
    let port = up.addr.port();
    let a = replica(dir.path(), "a", port, true).await;
    let b = replica(dir.path(), "b", port, true).await;
    let id = narrowed_on_one_holds_on_the_other(&a, &b, dir.path(), port).await;
    // `cordon explain` decides with the sandbox's own policy, as the running cordon does.
    let config = a.path.to_str().unwrap();
    let (code, out, err) = crate::rigs::process::cordon(&[
        "explain",
        "--config",
        config,
        "--sandbox",
        &id,
        &format!("https://allowed.test:{port}/hello"),
    ]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("(inline, extends web)"), "{out}");
    let (code, out, _) = crate::rigs::process::cordon(&[
        "explain",
        "--config",
        config,
        "--sandbox",
        &id,
        &format!("https://pinned.test:{port}/"),
    ]);
    assert_eq!(
        code, 1,
        "explained as allowed (the base allows it; the sandbox's own policy does not): {out}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_policy_changed_on_one_postgres_replica_holds_on_the_other() {
    let crate::rigs::replicas::Setup { pg, dir, _up, port, .. } = crate::rigs::replicas::setup().await;
    let a = pg_replica(&pg, dir.path(), "a", port).await;
    let b = pg_replica(&pg, dir.path(), "b", port).await;
    narrowed_on_one_holds_on_the_other(&a, &b, dir.path(), port).await;
}
