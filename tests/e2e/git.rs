//! git over smart HTTP: `git http-backend` run as CGI behind a local HTTPS site that requires
//! `Authorization: Basic base64(x-access-token:TOKEN)`, which cordon injects (git holds nothing). Clone and
//! fetch pass a read rule; a push is held by an `action: ask` rule until the test allows it, and a second
//! push the test denies fails with cordon's 403; another repository's paths are refused by the path rules,
//! and a host the policy does not name is refused at CONNECT.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;

use super::harness::{Case, Handler, Reply, Spec, site, text};
use crate::rigs::upstreams::Seen;
use crate::rigs::wait::{TimedChild, Within};

const TOKEN: &str = "real-git-token-e2e";

fn basic() -> String {
    format!("Basic {}", STANDARD.encode(format!("x-access-token:{TOKEN}")))
}

/// git on the server's side (the test's own repositories on disk; no network, not the sandbox's env).
fn server_git(cwd: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", cwd)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .args(["-c", "user.name=server", "-c", "user.email=server@e2e.test"])
        .args(args)
        .current_dir(cwd)
        .timed_output()
        .unwrap();
    assert!(out.status.success(), "server git {}: {}", args.join(" "), text(&out));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A client command to completion, off the async threads.
async fn run(mut c: Command) -> Output {
    tokio::task::spawn_blocking(move || c.stdin(Stdio::null()).timed_output().unwrap())
        .await
        .unwrap()
}

/// `git http-backend` as a CGI program serving the repositories under `root`, after the Basic credential.
fn http_backend(root: PathBuf) -> Handler {
    Arc::new(move |req: &Seen| {
        if req.header("authorization") != Some(basic().as_str()) {
            return (
                401,
                vec![("www-authenticate".into(), "Basic realm=\"git\"".into())],
                b"unauthorized".to_vec(),
            );
        }
        let (path, query) = req.uri.split_once('?').unwrap_or((&req.uri, ""));
        let mut cgi = Command::new("git");
        cgi.arg("http-backend")
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("HOME", &root)
            .env("GIT_PROJECT_ROOT", &root)
            .env("GIT_HTTP_EXPORT_ALL", "1")
            .env("GATEWAY_INTERFACE", "CGI/1.1")
            .env("REQUEST_METHOD", &req.method)
            .env("PATH_INFO", path)
            .env("QUERY_STRING", query)
            .env("CONTENT_TYPE", req.header("content-type").unwrap_or(""))
            .env("CONTENT_LENGTH", req.body.len().to_string())
            .env("REMOTE_USER", "x-access-token")
            .env("REMOTE_ADDR", "127.0.0.1");
        // Content-Encoding (gzip'd requests) and Git-Protocol (v2) reach the backend as HTTP_* variables.
        for (name, value) in &req.headers {
            if name != "authorization" {
                cgi.env(format!("HTTP_{}", name.to_uppercase().replace('-', "_")), value);
            }
        }
        let mut child = cgi
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let body = req.body.clone();
        let writer = std::thread::spawn(move || {
            let _ = stdin.write_all(&body);
        });
        let out = child.timed_wait_with_output().unwrap();
        writer.join().unwrap();
        cgi_reply(&out.stdout)
    })
}

/// A CGI program's output as a reply: headers (with `Status:`) up to the blank line, then the body.
fn cgi_reply(out: &[u8]) -> Reply {
    let (head, body) = match out.windows(4).position(|w| w == b"\r\n\r\n") {
        Some(i) => (&out[..i], &out[i + 4..]),
        None => match out.windows(2).position(|w| w == b"\n\n") {
            Some(i) => (&out[..i], &out[i + 2..]),
            None => return (502, vec![], b"bad CGI output".to_vec()),
        },
    };
    let mut status = 200;
    let mut headers = Vec::new();
    for line in String::from_utf8_lossy(head).lines() {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let (name, value) = (name.trim().to_ascii_lowercase(), value.trim().to_string());
        if name == "status" {
            status = value.split(' ').next().and_then(|s| s.parse().ok()).unwrap_or(500);
        } else {
            headers.push((name, value));
        }
    }
    (status, headers, body.to_vec())
}

/// Wait for the one approval cordon holds (`cordon approvals list --json`).
async fn pending(case: &Case) -> serde_json::Value {
    for _ in 0..200 {
        let listed: serde_json::Value = serde_json::from_str(&case.admin(&["approvals", "list", "--json"])).unwrap();
        if let Some(first) = listed["pending"].as_array().and_then(|p| p.first()) {
            return first.clone();
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("no approval became pending");
}

/// The server's repositories in a new folder: a working repository with one commit (`README`: `first`), and its
/// bare clone `srv/repo.git`, which is served; the folder, the working one and the served root.
pub(crate) fn repositories() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let server = tempfile::tempdir().unwrap();
    let (work, root) = (server.path().join("work"), server.path().join("srv"));
    std::fs::create_dir_all(&root).unwrap();
    server_git(server.path(), &["init", "-q", "-b", "main", "work"]);
    std::fs::write(work.join("README"), "first\n").unwrap();
    server_git(&work, &["add", "README"]);
    server_git(&work, &["commit", "-q", "-m", "first commit"]);
    server_git(server.path(), &["clone", "-q", "--bare", "work", "srv/repo.git"]);
    server_git(&work, &["remote", "add", "origin", "../srv/repo.git"]);
    (server, work, root)
}

/// An HTTPS git server at `name` (a certificate from `ca`) serving `root`, with its Basic credential; and the
/// token (user `x-access-token`) it wants.
pub(crate) async fn git_site(
    ca: &crate::rigs::tls::TestCa,
    name: &str,
    root: PathBuf,
) -> (super::harness::Site, &'static str) {
    (site(ca, name, http_backend(root)).await, TOKEN)
}

#[tokio::test(flavor = "multi_thread")]
async fn git_clone_fetch_and_a_push_held_for_approval() {
    let (_server, work, root) = repositories();
    let ca = Case::ca();
    let git = site(&ca, "git.e2e.test", http_backend(root.clone())).await;
    let port = git.port();
    let case = Case::start(
        ca,
        Spec {
            rules: format!(
                "      - host: git.e2e.test
        ports: [{port}]
        methods: [GET]
        paths: [\"/repo.git/**\"]
      - host: git.e2e.test
        ports: [{port}]
        methods: [POST]
        paths: [\"/repo.git/git-upload-pack\"]
      - host: git.e2e.test
        ports: [{port}]
        methods: [POST]
        paths: [\"/repo.git/git-receive-pack\"]
        action: ask
"
            ),
            ..Spec::site(
                "git.e2e.test",
                port,
                "git",
                "E2E_GIT_TOKEN",
                TOKEN,
                "{ basic_user: x-access-token }",
            )
        },
    )
    .await;
    let clone = case.path("clone");
    let in_clone = |args: &[&str]| {
        let mut c = case.client("git");
        c.arg("-C")
            .arg(&clone)
            .args(["-c", "user.name=agent", "-c", "user.email=agent@e2e.test"])
            .args(args);
        c
    };

    // Clone: git gets the repository through cordon, which adds the token.
    let out = run({
        let mut c = case.client("git");
        c.args(["clone", &git.url("/repo.git"), "clone"]);
        c
    })
    .await;
    assert!(out.status.success(), "git clone: {}", text(&out));
    let log = text(&run(in_clone(&["log", "--format=%s"])).await);
    assert_eq!(log.trim(), "first commit", "the clone's log: {log}");

    // Fetch: a commit made on the server arrives.
    std::fs::write(work.join("README"), "second\n").unwrap();
    server_git(&work, &["commit", "-q", "-am", "second commit"]);
    server_git(&work, &["push", "-q", "origin", "main"]);
    let out = run(in_clone(&["fetch"])).await;
    assert!(out.status.success(), "git fetch: {}", text(&out));
    let log = text(&run(in_clone(&["log", "--format=%s", "origin/main"])).await);
    assert!(log.starts_with("second commit\n"), "after the fetch: {log}");

    // Push: held until a human allows it, then it lands on the server.
    let out = run(in_clone(&["merge", "-q", "--ff-only", "origin/main"])).await;
    assert!(out.status.success(), "git merge: {}", text(&out));
    std::fs::write(clone.join("AGENT"), "from the sandbox\n").unwrap();
    let out = run(in_clone(&["add", "AGENT"])).await;
    assert!(out.status.success(), "{}", text(&out));
    let out = run(in_clone(&["commit", "-q", "-m", "agent commit"])).await;
    assert!(out.status.success(), "{}", text(&out));
    let push = tokio::task::spawn_blocking({
        let mut c = in_clone(&["push", "origin", "main"]);
        move || c.stdin(Stdio::null()).timed_output().unwrap()
    });
    let held = pending(&case).await;
    assert_eq!(held["sandbox"], case.sandbox.as_str(), "{held}");
    assert_eq!(held["method"], "POST", "{held}");
    assert_eq!(held["host"], "git.e2e.test", "{held}");
    assert_eq!(held["path"], "/repo.git/git-receive-pack", "{held}");
    assert!(!push.is_finished(), "git push did not wait for the approval");
    let id = held["id"].as_str().unwrap();
    case.reviewer(&["approvals", "allow", id]);
    let out = push.await.unwrap();
    assert!(out.status.success(), "git push (allowed): {}", text(&out));
    let log = server_git(&root, &["--git-dir", "repo.git", "log", "--format=%s", "main"]);
    assert!(
        log.starts_with("agent commit\n"),
        "the server's log after the push: {log}"
    );
    case.audited(|r| {
        r["path"] == "/repo.git/git-receive-pack"
            && r["approval"]["outcome"] == "allow"
            && r["approval"]["by"] == "e2e-reviewer"
            && r["credentials"][0] == "git"
    })
    .await;

    // A second push the human denies: git fails and shows the 403.
    std::fs::write(clone.join("AGENT"), "again\n").unwrap();
    let out = run(in_clone(&["commit", "-q", "-am", "denied commit"])).await;
    assert!(out.status.success(), "{}", text(&out));
    let push = tokio::task::spawn_blocking({
        let mut c = in_clone(&["push", "origin", "main"]);
        move || c.stdin(Stdio::null()).timed_output().unwrap()
    });
    let held = pending(&case).await;
    assert_eq!(held["path"], "/repo.git/git-receive-pack", "{held}");
    let id = held["id"].as_str().unwrap();
    case.reviewer(&["approvals", "deny", id]);
    let out = push.await.unwrap();
    let got = text(&out);
    assert!(!out.status.success(), "git push (denied) succeeded: {got}");
    // git shows the status only (not cordon's body), then its own guesses at what went wrong.
    assert!(
        got.contains("error: RPC failed; HTTP 403") && got.contains("The requested URL returned error: 403"),
        "git push (denied) shows: {got}"
    );
    let log = server_git(&root, &["--git-dir", "repo.git", "log", "--format=%s", "main"]);
    assert!(
        log.starts_with("agent commit\n"),
        "the denied commit reached the server: {log}"
    );
    case.audited(|r| {
        r["reason"] == "approval_denied" && r["approval"]["outcome"] == "deny" && r["credentials"].is_null()
    })
    .await;

    // Another repository on the same host: no rule names its paths, so cordon refuses it inside the tunnel
    // (for this GET, git shows cordon's body as a `remote:` line).
    let out = run({
        let mut c = case.client("git");
        c.args(["ls-remote", &git.url("/other.git")]);
        c
    })
    .await;
    let got = text(&out);
    assert!(!out.status.success(), "git ls-remote of another repository: {got}");
    assert!(
        got.contains("remote: cordon: denied: this path is not allowed")
            && got.contains("The requested URL returned error: 403"),
        "git ls-remote of another repository shows: {got}"
    );
    case.audited(|r| r["path"] == "/other.git/info/refs" && r["reason"] == "path_not_allowed")
        .await;

    // The server got the real token on every request; the sandbox never had it.
    let seen = git.seen();
    let pushes = seen.iter().filter(|s| s.uri == "/repo.git/git-receive-pack").count();
    assert_eq!(pushes, 1, "only the allowed push reached the server: {seen:?}");
    assert!(!seen.iter().any(|s| s.uri.starts_with("/other.git")), "{seen:?}");
    assert!(seen.len() >= 6, "{seen:?}");
    assert!(seen.iter().all(|s| s.header("authorization") == Some(basic().as_str())));
    assert!(
        !case
            .env
            .values()
            .any(|v| v.contains(TOKEN) || v.contains(&STANDARD.encode(format!("x-access-token:{TOKEN}"))))
    );

    // A host the policy does not name: refused at CONNECT, and git says so.
    let out = run({
        let mut c = case.client("git");
        c.args(["clone", "https://denied.e2e.test/x.git", "denied"]);
        c
    })
    .await;
    let got = text(&out);
    assert!(!out.status.success(), "git clone of a denied host: {got}");
    assert!(
        got.contains("CONNECT tunnel failed, response 403"),
        "git clone of a denied host shows: {got}"
    );
    case.audited(|r| {
        r["host"] == "denied.e2e.test" && r["decision"] == "deny" && r["sandbox"] == case.sandbox.as_str()
    })
    .await;
}
