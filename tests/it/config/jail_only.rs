//! A declared sandbox with neither `token_sha256` nor `source_cidrs` (a sandbox for `cordon jail`, which makes a
//! credential of its own for it, as config/examples/agent.yaml's): `cordon run` starts, says at start and at
//! each reload that nothing reaches that sandbox through it, and nothing does: no credential, an empty token,
//! guessed tokens (its id, the SHA-256 of nothing, the hash of the empty token as a token) all get 407, and no
//! request leaves.

use crate::rigs::ports::free_port;
use crate::rigs::process::Signal;
use crate::rigs::process::{curl, signal_and_wait, spawn_cordon};
use crate::rigs::wait::Within;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sandbox_without_token_or_source_is_reached_by_no_request() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display().to_string();
    let port = free_port();
    let config = dir.path().join("cordon.yaml");
    std::fs::write(
        &config,
        format!(
            "listen: {{ proxy: 127.0.0.1:{port} }}\nca: {{ dir: {d}/cas }}\ncontrol: {{ watch: false }}\n\
             sandboxes:\n  - {{ id: agent, user: developer, policy: open }}\npolicies:\n  open:\n    allow:\n      \
             - host: example.com\n"
        ),
    )
    .unwrap();
    let state = dir.path().join("state").display().to_string();
    let child = spawn_cordon(&config, port, &[("CORDON_STATE_DIR", state.as_str())]).await;
    let empty_hash = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
    let mut tried = vec![format!("http://127.0.0.1:{port}")];
    for token in ["", "agent", "x", empty_hash, "null", "None"] {
        tried.push(format!("http://agent:{token}@127.0.0.1:{port}"));
    }
    for proxy in &tried {
        let out = curl()
            .args([
                "-o",
                "/dev/null",
                "-w",
                "%{http_code}",
                "-x",
                proxy,
                "http://example.com/",
            ])
            .timed_output()
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            "407",
            "{proxy} reached the jail's sandbox"
        );
    }
    // A reload (SIGHUP) says it again.
    crate::rigs::process::signal(child.id(), Signal::SIGHUP).unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    let out = signal_and_wait(child, Signal::SIGTERM).await;
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    let warned = stderr.matches("sandbox agent has neither token_sha256 nor source_cidrs: nothing reaches it");
    assert_eq!(warned.count(), 2, "at start and at the reload: {stderr}");
    assert!(!stdout.contains("\"decision\":\"allow\""), "{stdout}");
}
