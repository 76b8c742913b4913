//! Replicas sharing a real PostgreSQL (`control.store: postgres://…`), through the binary: three cordon processes
//! with no shared folder agree on sandboxes, CAs and revocations; a revocation on one closes a live tunnel on
//! another within a second; PostgreSQL down: known sandboxes keep working, writes get 503, `/readyz` says so, and
//! everything converges when it is back; a replica killed with SIGKILL costs the others nothing.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::control_procs::{Replica, create, curl_status, replica_with, upstream};
use crate::pg_rig::Pg;

/// One replica on `pg`, with a folder of its own (no CA folder or store file shared), the admin token and
/// signing key shared through `shared`.
pub(crate) async fn pg_replica(pg: &Pg, shared: &Path, name: &str, up: u16) -> Replica {
    pg_replica_edit(pg, shared, name, up, |y| y).await
}

/// [`pg_replica`] with its configuration passed through `edit` at the end.
pub(crate) async fn pg_replica_edit(
    pg: &Pg,
    shared: &Path,
    name: &str,
    up: u16,
    edit: impl Fn(String) -> String,
) -> Replica {
    let own = shared.join(name);
    std::fs::create_dir_all(&own).unwrap();
    let d = shared.display().to_string();
    let dsn = pg.dsn();
    let own = own.display().to_string();
    replica_with(shared, name, up, true, "", move |yaml| {
        yaml.replace(
            &format!("store: {d}/cordon.db"),
            &format!(
                "store: \"{dsn}\"\n  store_password: {{ file: {d}/pg-password }}\n  store_ca_file: {d}/pg-ca.pem\n  \
                 store_key: {{ file: {d}/store-key }}"
            ),
        )
        .replace(&format!("ca: {{ dir: {d}/cas }}"), &format!("ca: {{ dir: {own}/cas }}"))
        .pipe(&edit)
    })
    .await
}

/// `GET path` on a replica's admin API: status and JSON body.
pub(crate) async fn admin_get(r: &Replica, path: &str) -> (u16, Value) {
    let token = r.admin_token();
    let (status, _, body) = crate::control_rig::admin_request(r.admin_addr(), "GET", path, Some(&token), "").await;
    // The first JSON value of the body (what follows it, if anything, is not the answer's).
    let first = serde_json::Deserializer::from_str(&body).into_iter::<Value>().next();
    (
        status,
        first
            .and_then(Result::ok)
            .unwrap_or_else(|| panic!("{path}: not JSON: {body}")),
    )
}

/// Open a CONNECT tunnel through `r` as `id:credential` to `127.0.0.2:port`; the stream after the 200.
async fn tunnel(r: &Replica, id: &str, credential: &str, port: u16) -> tokio::net::TcpStream {
    let mut s = tokio::net::TcpStream::connect(("127.0.0.1", r.proxy)).await.unwrap();
    let auth = crate::rig::auth(id, credential);
    let req = format!("CONNECT allowed.test:{port} HTTP/1.1\r\nHost: allowed.test:{port}\r\n{auth}\r\n");
    s.write_all(req.as_bytes()).await.unwrap();
    assert_eq!(crate::rig::read_connect_response(&mut s).await, 200);
    s
}

/// `x.pipe(f)` is `f(x)`.
trait Pipe: Sized {
    fn pipe(self, f: &impl Fn(Self) -> Self) -> Self {
        f(self)
    }
}
impl Pipe for String {}

/// A PostgreSQL cluster, a folder, and the HTTPS upstream every replica reaches.
pub(crate) struct Setup {
    pub(crate) pg: Pg,
    pub(crate) dir: tempfile::TempDir,
    pub(crate) _up: crate::rig::Upstream,
    pub(crate) port: u16,
    pub(crate) url: String,
}

pub(crate) async fn setup() -> Setup {
    let pg = Pg::start();
    let dir = tempfile::tempdir().unwrap();
    let up = upstream(dir.path()).await;
    let port = up.addr.port();
    // Written once, before any replica starts (replicas started together must not read a half-written file).
    std::fs::write(dir.path().join("pg-password"), Pg::PASSWORD).unwrap();
    std::fs::write(dir.path().join("pg-ca.pem"), pg.ca_pem()).unwrap();
    std::fs::write(dir.path().join("store-key"), "0123456789abcdef0123456789abcdef-test").unwrap();
    Setup {
        pg,
        dir,
        _up: up,
        port,
        url: format!("https://allowed.test:{port}/hello"),
    }
}

fn ca_of(dir: &Path, id: &str, v: &Value) -> PathBuf {
    let p = dir.join(format!("{id}-ca.pem"));
    std::fs::write(&p, v["ca_certificate"].as_str().unwrap()).unwrap();
    p
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
    for r in [&a, &b, &c] {
        assert_eq!(curl_status(r, &id, &cred, &ca, &url), 0, "a revoked credential passed");
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
        crate::control_rig::admin_request(a.admin_addr(), "POST", "/v1/sandboxes", Some(&token), body).await;
    assert_eq!(status, 503, "{text}");
    assert!(
        text.contains("store_unavailable") && text.contains("try again"),
        "{text}"
    );
    let (status, _, text) = crate::control_rig::admin_request(
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
        let (_, _, metrics) = crate::control_rig::admin_request(a.admin_addr(), "GET", "/metrics", None, "").await;
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
            crate::control_rig::admin_request(a.admin_addr(), "POST", "/v1/sandboxes", Some(&token), body).await;
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
        "1,2,3,4"
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
                let out = crate::cli::curl()
                    .args(["-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "10"])
                    .args(["-x", &format!("http://{id}:{cred}@127.0.0.1:{b_proxy}")])
                    .arg("--cacert")
                    .arg(&ca)
                    .arg(&url)
                    .output()
                    .unwrap();
                codes.push(String::from_utf8_lossy(&out.stdout).trim().to_owned());
            }
            codes
        })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    c.child.kill().unwrap();
    c.child.wait().unwrap();
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
    let _ = std::process::Command::new("kill")
        .args(["-TERM", &b.child.id().to_string()])
        .status();
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
    let (status, _, text) = crate::control_rig::admin_request(
        a.admin_addr(),
        "POST",
        &format!("/v1/approvals/{id}"),
        Some(&token),
        r#"{"decision":"deny","scope":"always","by":"ops"}"#,
    )
    .await;
    assert_eq!(status, 422, "{text}");
    // Allowed through a: b releases the request within a second.
    let (status, _, text) = crate::control_rig::admin_request(
        a.admin_addr(),
        "POST",
        &format!("/v1/approvals/{id}"),
        Some(&token),
        r#"{"decision":"allow","scope":"always","by":"ops"}"#,
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
    let (status, _, _) = crate::control_rig::admin_request(
        b.admin_addr(),
        "POST",
        &format!("/v1/approvals/{id}"),
        Some(&token),
        r#"{"decision":"allow","by":"ops"}"#,
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
    let (status, _, text) = crate::control_rig::admin_request(
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
    let (status, _, text) = crate::control_rig::admin_request(
        a.admin_addr(),
        "POST",
        &format!("/v1/approvals/{id}"),
        Some(&token),
        r#"{"decision":"deny","by":"ops"}"#,
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
        let out = crate::cli::curl()
            .args(["-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "30"])
            .args(["-x", &format!("http://sb1:tok1@127.0.0.1:{proxy}")])
            .arg("--cacert")
            .arg(&ca)
            .arg(format!("https://unlisted.test:{port}/api/deploy"))
            .output()
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

/// curl `url` through `r` as `id:credential`: (HTTP status, CONNECT status, bytes of body received).
fn fetch(r: &Replica, id: &str, credential: &str, ca: &Path, url: &str) -> (u16, u16, u64) {
    let out = crate::cli::curl()
        .args([
            "-s",
            "-o",
            "/dev/null",
            "-w",
            "%{http_code} %{http_connect} %{size_download}",
        ])
        .args(["--max-time", "10"])
        .args(["-x", &format!("http://{id}:{credential}@127.0.0.1:{}", r.proxy)])
        .arg("--cacert")
        .arg(ca)
        .arg(url)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut parts = text.split_whitespace().map(|p| p.parse::<u64>().unwrap_or(0));
    let mut next = || parts.next().unwrap_or(0);
    (next() as u16, next() as u16, next())
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
    let export = std::process::Command::new(crate::cli::BIN)
        .args(["ca", "export", "--config"])
        .arg(&a.path)
        .args(["--sandbox", "sb1"])
        .output()
        .unwrap();
    assert!(export.status.success(), "{}", String::from_utf8_lossy(&export.stderr));
    assert_eq!(
        String::from_utf8_lossy(&export.stdout),
        std::fs::read_to_string(&old).unwrap()
    );
    // Rotated from the command line: both replicas sign with the new CA at once, and not with the old one.
    let rotate = std::process::Command::new(crate::cli::BIN)
        .args(["ca", "rotate", "--config"])
        .arg(&a.path)
        .args(["--sandbox", "sb1"])
        .output()
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
