//! Replicas sharing a real PostgreSQL (`control.store: postgres://…`), through the binary: three cordon processes
//! with no shared folder agree on sandboxes, CAs and revocations; a revocation on one closes a live tunnel on
//! another within a second; PostgreSQL down: known sandboxes keep working, writes get 503, `/readyz` says so, and
//! everything converges when it is back; a replica killed with SIGKILL costs the others nothing.

use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::rigs::process::Signal;
use crate::rigs::replicas::{Replica, Setup, admin_get, ca_of, create, curl_status, pg_replica, setup};
use crate::rigs::wait::{TimedChild, Within};

/// Open a CONNECT tunnel through `r` as `id:credential` to `127.0.0.2:port`; the stream after the 200.
async fn tunnel(r: &Replica, id: &str, credential: &str, port: u16) -> tokio::net::TcpStream {
    let mut s = tokio::net::TcpStream::connect(("127.0.0.1", r.proxy)).await.unwrap();
    let auth = crate::rigs::client::auth(id, credential);
    let req = format!("CONNECT allowed.test:{port} HTTP/1.1\r\nHost: allowed.test:{port}\r\n{auth}\r\n");
    s.write_all(req.as_bytes()).await.unwrap();
    assert_eq!(crate::rigs::client::read_connect_response(&mut s).await, 200);
    s
}

#[tokio::test(flavor = "multi_thread")]
async fn three_replicas_share_sandboxes_cas_and_revocations() {
    let Setup {
        pg,
        dir,
        _up,
        port,
        url,
    } = setup().await;
    let a = pg_replica(&pg, dir.path(), "a", port).await;
    let b = pg_replica(&pg, dir.path(), "b", port).await;
    let c = pg_replica(&pg, dir.path(), "c", port).await;

    // The registry knows all three.
    let (status, replicas) = admin_get(&b, "/v1/replicas").await;
    assert_eq!(status, 200, "{replicas}");
    assert_eq!(replicas["live"], 3, "{replicas}");
    assert_eq!(
        replicas["replicas"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["self"] == true)
            .count(),
        1
    );

    // Created on a, used at once on b and c: the record and the CA come from PostgreSQL.
    let (id, cred, ca) = create(&a, dir.path()).await;
    for r in [&b, &c, &a] {
        assert_eq!(curl_status(r, &id, &cred, &ca, &url), 200);
    }
    // Every replica lists it and serves the same CA.
    for r in [&a, &b, &c] {
        let (status, shown) = admin_get(r, &format!("/v1/sandboxes/{id}")).await;
        assert_eq!(status, 200, "{shown}");
        assert_eq!(
            shown["ca_certificate"].as_str().unwrap(),
            std::fs::read_to_string(&ca).unwrap()
        );
    }
    // The CA key is sealed in the database: no PEM private key in any row.
    let keys = pg.psql("SELECT count(*) FROM cas WHERE position('PRIVATE KEY'::bytea in key_sealed) > 0");
    assert_eq!(keys.trim(), "0");
    assert!(pg.psql("SELECT count(*) FROM cas").trim().parse::<u32>().unwrap() >= 2);

    // A live tunnel on b; revoked on c: b closes it within a second.
    let mut t = tunnel(&b, &id, &cred, port).await;
    c.admin.revoke(&id).await.unwrap();
    let revoked = Instant::now();
    let mut buf = [0u8; 64];
    let closed = tokio::time::timeout(Duration::from_secs(3), t.read(&mut buf)).await;
    assert!(
        matches!(closed, Ok(Ok(0)) | Ok(Err(_))),
        "the tunnel on b stayed open: {closed:?}"
    );
    let took = revoked.elapsed();
    assert!(
        took < Duration::from_secs(1),
        "b closed the tunnel {took:?} after the revocation on c"
    );
    // Refused at the CONNECT (curl reports no status: 0), or, on a replica that let the CONNECT through just before
    // the revocation reached it, refused inside it with 407: either way nothing passes.
    for r in [&a, &b, &c] {
        let status = curl_status(r, &id, &cred, &ca, &url);
        assert!(matches!(status, 0 | 407), "a revoked credential got {status}");
    }
    drop((a, b, c));
}

#[tokio::test(flavor = "multi_thread")]
async fn postgres_down_known_sandboxes_work_writes_503_and_it_converges() {
    let Setup {
        pg,
        dir,
        _up,
        port,
        url,
    } = setup().await;
    let a = pg_replica(&pg, dir.path(), "a", port).await;
    let b = pg_replica(&pg, dir.path(), "b", port).await;
    let (id, cred, ca) = create(&a, dir.path()).await;
    let (gone, gone_cred, gone_ca) = create(&a, dir.path()).await;
    assert_eq!(curl_status(&b, &id, &cred, &ca, &url), 200);
    b.admin.revoke(&gone).await.unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;

    pg.stop();
    // Known sandboxes keep working on both; the revocation known before the outage still holds.
    for r in [&a, &b] {
        assert_eq!(curl_status(r, &id, &cred, &ca, &url), 200);
        assert_eq!(curl_status(r, &gone, &gone_cred, &gone_ca, &url), 0);
    }
    // Writes get 503 with a reason; /readyz stays ready and reports the store down.
    let token = a.admin_token();
    let body = r#"{"user":"alice","policy":"web"}"#;
    let (status, _, text) =
        crate::rigs::control::admin_request(a.admin_addr(), "POST", "/v1/sandboxes", Some(&token), body).await;
    assert_eq!(status, 503, "{text}");
    assert!(
        text.contains("store_unavailable") && text.contains("try again"),
        "{text}"
    );
    let (status, _, text) = crate::rigs::control::admin_request(
        b.admin_addr(),
        "DELETE",
        &format!("/v1/sandboxes/{id}"),
        Some(&token),
        "",
    )
    .await;
    assert_eq!(status, 503, "{text}");
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (status, ready) = admin_get(&a, "/readyz").await;
        assert_eq!(status, 200, "{ready}");
        if ready["store"]["state"] == "down" {
            assert!(ready["store"]["error"].is_string(), "{ready}");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "/readyz never reported the store down: {ready}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    // The metric an alert would watch says so too.
    let deadline = Instant::now() + Duration::from_secs(3);
    loop {
        let (_, _, metrics) = crate::rigs::control::admin_request(a.admin_addr(), "GET", "/metrics", None, "").await;
        if metrics.contains("cordon_store_up 0") {
            break;
        }
        assert!(Instant::now() < deadline, "cordon_store_up never went to 0");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    // Back: cordon reconnects by itself, writes work again, and a write on one reaches the other.
    pg.start_again();
    let deadline = Instant::now() + Duration::from_secs(15);
    let (id2, cred2, ca2) = loop {
        let (status, _, text) =
            crate::rigs::control::admin_request(a.admin_addr(), "POST", "/v1/sandboxes", Some(&token), body).await;
        if status == 201 {
            let v: Value = serde_json::from_str(&text).unwrap();
            let id2 = v["id"].as_str().unwrap().to_owned();
            let ca2 = ca_of(dir.path(), &id2, &v);
            break (id2, v["credential"].as_str().unwrap().to_owned(), ca2);
        }
        assert!(Instant::now() < deadline, "writes never came back: {status} {text}");
        tokio::time::sleep(Duration::from_millis(300)).await;
    };
    assert_eq!(curl_status(&b, &id2, &cred2, &ca2, &url), 200);
    b.admin.revoke(&id).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(2);
    while curl_status(&a, &id, &cred, &ca, &url) == 200 {
        assert!(
            Instant::now() < deadline,
            "a never heard of the revocation made on b after the outage"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (_, ready) = admin_get(&a, "/readyz").await;
    assert_eq!(ready["store"]["state"], "up", "{ready}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_replica_killed_under_traffic_costs_the_others_nothing_and_leaves_the_registry() {
    let Setup {
        pg,
        dir,
        _up,
        port,
        url,
    } = setup().await;
    // Three replicas started at once: they run the migration together, and exactly once.
    let (a, b, c) = tokio::join!(
        pg_replica(&pg, dir.path(), "a", port),
        pg_replica(&pg, dir.path(), "b", port),
        pg_replica(&pg, dir.path(), "c", port),
    );
    // (All three started: none failed on a table another had just created.)
    assert_eq!(
        pg.psql("SELECT string_agg(version::text, ',' ORDER BY version) FROM cordon_schema")
            .trim(),
        "1,2,3,4,5,6"
    );
    let (id, cred, ca) = create(&a, dir.path()).await;
    // b learns of the sandbox on its first request (one bounded read of the store, tested on its own in
    // three_replicas_share_sandboxes_cas_and_revocations); that read is not what the kill below is about.
    assert_eq!(curl_status(&b, &id, &cred, &ca, &url), 200);
    let mut c = c;
    let traffic = {
        let (b_proxy, id, cred, ca, url) = (b.proxy, id.clone(), cred.clone(), ca.clone(), url.clone());
        std::thread::spawn(move || {
            let mut codes = Vec::new();
            for _ in 0..30 {
                let out = crate::rigs::process::curl()
                    .args(["-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "10"])
                    .args(["-x", &format!("http://{id}:{cred}@127.0.0.1:{b_proxy}")])
                    .arg("--cacert")
                    .arg(&ca)
                    .arg(&url)
                    .timed_output()
                    .unwrap();
                codes.push(String::from_utf8_lossy(&out.stdout).trim().to_owned());
            }
            codes
        })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    c.child.kill().unwrap();
    c.child.timed_wait().unwrap();
    let codes = tokio::task::spawn_blocking(move || traffic.join().unwrap())
        .await
        .unwrap();
    assert!(codes.iter().all(|c| c == "200"), "{codes:?}");
    // The others still agree on everything; c's heartbeat goes stale and it is no longer live.
    let (id2, cred2, ca2) = create(&b, dir.path()).await;
    assert_eq!(curl_status(&a, &id2, &cred2, &ca2, &url), 200);
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (_, replicas) = admin_get(&a, "/v1/replicas").await;
        if replicas["live"] == 2 {
            break;
        }
        assert!(Instant::now() < deadline, "the killed replica stayed live: {replicas}");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    // A clean stop leaves the registry at once.
    let _ = crate::rigs::process::signal(b.child.id(), Signal::SIGTERM);
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let (_, replicas) = admin_get(&a, "/v1/replicas").await;
        if replicas["replicas"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["id"].as_str() != Some(""))
            && replicas["live"] == 1
        {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the stopped replica stayed registered: {replicas}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    drop((a, b));
}

#[tokio::test(flavor = "multi_thread")]
async fn made_up_or_misused_credentials_never_reach_the_database() {
    let Setup {
        pg,
        dir,
        _up,
        port,
        url,
    } = setup().await;
    // Every statement is logged with its parameters.
    pg.psql("ALTER SYSTEM SET log_statement = 'all'; SELECT pg_reload_conf();");
    let a = pg_replica(&pg, dir.path(), "a", port).await;
    let b = pg_replica(&pg, dir.path(), "b", port).await;
    let (id, cred, ca) = create(&a, dir.path()).await;
    // An id nobody created with a made-up credential, and a real credential presented for another id.
    for _ in 0..10 {
        assert_eq!(
            curl_status(&b, "sb-madeup0001", "eyJhbGciOiJIUzI1NiJ9.e30.bad", &ca, &url),
            0
        );
        assert_eq!(curl_status(&b, "sb-borrowed01", &cred, &ca, &url), 0);
    }
    assert_eq!(curl_status(&b, &id, &cred, &ca, &url), 200);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let log = pg.log();
    // The log shows parameters (the real sandbox's id is there, from its creation), and never the others.
    assert!(log.contains(&id), "the server log does not show parameters");
    assert!(!log.contains("sb-madeup0001") && !log.contains("sb-borrowed01"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_ca_rotated_with_the_cli_is_used_by_every_replica_at_once() {
    let Setup {
        pg,
        dir,
        _up,
        port,
        url,
    } = setup().await;
    let a = pg_replica(&pg, dir.path(), "a", port).await;
    let b = pg_replica(&pg, dir.path(), "b", port).await;
    let (_, shown) = admin_get(&a, "/v1/sandboxes/sb1").await;
    let old = ca_of(dir.path(), "sb1-old", &shown);
    assert_eq!(curl_status(&b, "sb1", "tok1", &old, &url), 200);
    // `cordon ca export` reads the CA from PostgreSQL (the same one the replicas serve).
    let export = std::process::Command::new(crate::rigs::process::BIN)
        .args(["ca", "export", "--config"])
        .arg(&a.path)
        .args(["--sandbox", "sb1"])
        .timed_output()
        .unwrap();
    assert!(export.status.success(), "{}", String::from_utf8_lossy(&export.stderr));
    assert_eq!(
        String::from_utf8_lossy(&export.stdout),
        std::fs::read_to_string(&old).unwrap()
    );
    // Rotated from the command line: both replicas sign with the new CA at once, and not with the old one.
    let rotate = std::process::Command::new(crate::rigs::process::BIN)
        .args(["ca", "rotate", "--config"])
        .arg(&a.path)
        .args(["--sandbox", "sb1"])
        .timed_output()
        .unwrap();
    assert!(rotate.status.success(), "{}", String::from_utf8_lossy(&rotate.stderr));
    let new = dir.path().join("sb1-new.pem");
    std::fs::write(&new, &rotate.stdout).unwrap();
    assert_ne!(std::fs::read(&new).unwrap(), std::fs::read(&old).unwrap());
    let deadline = Instant::now() + Duration::from_secs(2);
    for r in [&b, &a] {
        while curl_status(r, "sb1", "tok1", &new, &url) != 200 {
            assert!(
                Instant::now() < deadline,
                "a replica still signs with the rotated-out CA"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert_eq!(
            curl_status(r, "sb1", "tok1", &old, &url),
            0,
            "the old CA still verifies"
        );
    }
}
