//! The PostgreSQL rig holds what it promises: role `cordon` logs in over TCP with TLS its CA verifies and
//! with its password only, the session is encrypted, a restart keeps the data, clusters run side by side.

use std::process::Output;

use crate::rigs::pg::Pg;
use crate::rigs::wait::Within;

/// `psql` as role `cordon` to `conninfo` with `password`, running `sql`; never prompts.
fn as_cordon(pg: &Pg, conninfo: &str, password: &str, sql: &str) -> Output {
    pg.client()
        .args(["-X", "-w", "-A", "-t", "-d", conninfo, "-c", sql])
        .env("PGPASSWORD", password)
        .timed_output()
        .unwrap()
}

/// Its trimmed output, which it must have succeeded to give.
fn ok(out: Output) -> String {
    assert!(
        out.status.success(),
        "psql failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim_end().to_string()
}

#[test]
fn cordon_logs_in_over_tls_the_test_ca_verifies() {
    let pg = Pg::start();
    let dir = tempfile::tempdir().unwrap();
    let ca = dir.path().join("ca.pem");
    std::fs::write(&ca, pg.ca_pem()).unwrap();
    for host in ["127.0.0.1", "localhost"] {
        let conninfo = format!(
            "host={host} port={} user=cordon dbname=cordon sslmode=verify-full sslrootcert={}",
            pg.port(),
            ca.display()
        );
        assert_eq!(ok(as_cordon(&pg, &conninfo, Pg::PASSWORD, "select 1")), "1", "{host}");
    }
    assert_eq!(
        ok(as_cordon(
            &pg,
            &pg.dsn(),
            Pg::PASSWORD,
            "select current_user, current_database()"
        )),
        "cordon|cordon"
    );
    assert_eq!(ok(as_cordon(&pg, &pg.dsn_plain(), Pg::PASSWORD, "select 1")), "1");
}

#[test]
fn a_wrong_or_missing_password_is_refused() {
    let pg = Pg::start();
    let wrong = as_cordon(&pg, &pg.dsn(), "not-the-password", "select 1");
    assert!(!wrong.status.success());
    let stderr = String::from_utf8_lossy(&wrong.stderr);
    assert!(
        stderr.contains("password authentication failed for user \"cordon\""),
        "{stderr}"
    );
    let none = pg
        .client()
        .args(["-X", "-w", "-A", "-t", "-d", &pg.dsn(), "-c", "select 1"])
        .timed_output()
        .unwrap();
    assert!(!none.status.success());
    let stderr = String::from_utf8_lossy(&none.stderr);
    assert!(stderr.contains("no password supplied"), "{stderr}");
}

#[test]
fn the_session_is_encrypted_unless_asked_not_to_be() {
    let pg = Pg::start();
    let query = "select ssl, version like 'TLSv1.%' from pg_stat_ssl where pid = pg_backend_pid()";
    assert_eq!(ok(as_cordon(&pg, &pg.dsn(), Pg::PASSWORD, query)), "t|t");
    assert_eq!(ok(as_cordon(&pg, &pg.dsn_plain(), Pg::PASSWORD, query)), "f|");
    pg.psql("CREATE EXTENSION sslinfo");
    assert_eq!(ok(as_cordon(&pg, &pg.dsn(), Pg::PASSWORD, "select ssl_is_used()")), "t");
    // The scram verifier, not the password, is what the server keeps.
    assert!(
        pg.psql("select rolpassword from pg_authid where rolname = 'cordon'")
            .starts_with("SCRAM-SHA-256$")
    );
}

#[test]
fn stop_and_start_again_keep_the_data() {
    let pg = Pg::start();
    pg.psql("CREATE TABLE kept (v text);\nINSERT INTO kept VALUES ('before');");
    pg.stop();
    let down = as_cordon(&pg, &pg.dsn(), Pg::PASSWORD, "select 1");
    assert!(!down.status.success(), "the stopped server answered");
    pg.start_again();
    assert_eq!(pg.psql("SELECT v FROM kept"), "before");
    assert_eq!(ok(as_cordon(&pg, &pg.dsn(), Pg::PASSWORD, "select 1")), "1");
}

#[test]
fn clusters_run_side_by_side() {
    let clusters: Vec<Pg> = std::thread::scope(|s| {
        let started: Vec<_> = (0..3).map(|_| s.spawn(Pg::start)).collect();
        started.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for (i, pg) in clusters.iter().enumerate() {
        pg.psql(&format!("CREATE TABLE mine AS SELECT {i} AS n"));
    }
    for (i, pg) in clusters.iter().enumerate() {
        assert_eq!(pg.psql("SELECT n FROM mine"), i.to_string());
    }
    let mut ports: Vec<u16> = clusters.iter().map(Pg::port).collect();
    ports.sort_unstable();
    ports.dedup();
    assert_eq!(ports.len(), 3);
}
