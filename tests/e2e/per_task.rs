//! A platform's script for one agent task, through the binary and its CLI: a sandbox created with its own
//! policy (narrower than the operator's base), used by curl and pip, then narrowed with `cordon sandbox
//! set-policy`: its tunnel to a destination no longer allowed closes, its CA is re-issued (the old one no longer
//! verifies), and what it no longer names is refused.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use tokio::io::AsyncWriteExt;

use super::harness::{Case, Spec, site, text};
use super::pip::{SECRET, pip_install_as, private_index};
use crate::rigs::wait::Within;

fn repo() -> super::harness::Handler {
    Arc::new(|req: &crate::rigs::upstreams::Seen| -> super::harness::Reply {
        (200, vec![], format!("repo {}", req.uri).into_bytes())
    })
}

#[tokio::test(flavor = "multi_thread")]
async fn a_per_task_policy_is_created_used_by_curl_and_pip_and_narrowed_live() {
    let ca = Case::ca();
    let git = site(&ca, "git.e2e.test", repo()).await;
    let index = private_index(&ca, "pypi.e2e.test").await;
    let pinned = site(&ca, "pinned.e2e.test", repo()).await;
    let (g, p, t) = (git.port(), index.site.port(), pinned.port());
    // The operator's base policy: the whole forge, the index (with its token injected), a pinned service.
    let spec = Spec {
        rules: format!(
            "      - host: git.e2e.test\n        ports: [{g}]\n      - host: pypi.e2e.test\n        ports: [{p}]\n      \
             - host: pinned.e2e.test\n        ports: [{t}]\n        tls: tunnel\n"
        ),
        credentials: format!(
            "  pypi:\n    source: {{ env: E2E_PYPI_TOKEN }}\n    bind: {{ hosts: [pypi.e2e.test], ports: [{p}] }}\n    \
             inject: {{ basic_user: __token__ }}\n"
        ),
        policy_credentials: vec!["pypi"],
        secrets: vec![("E2E_PYPI_TOKEN", SECRET)],
        names: vec!["git.e2e.test", "pypi.e2e.test", "pinned.e2e.test"],
        ..Spec::default()
    };
    let case = Case::start(ca, spec).await;

    // The platform's task policy: read one repository, install from the index, reach the pinned service.
    let task = case.path("task-42.yaml");
    std::fs::write(
        &task,
        format!(
            "# task 42: read acme/web, install its dependencies\nextends: e2e\nallow:\n  - host: git.e2e.test\n    \
             ports: [{g}]\n    methods: [GET]\n    paths: [\"/acme/web/**\"]\n  - host: pypi.e2e.test\n    ports: [{p}]\n  \
             - host: pinned.e2e.test\n    ports: [{t}]\n    tls: tunnel\n"
        ),
    )
    .unwrap();
    let created: serde_json::Value = serde_json::from_str(&case.admin(&[
        "sandbox",
        "create",
        "--user",
        "alice",
        "--id",
        "task-42",
        "--policy-file",
        task.to_str().unwrap(),
    ]))
    .unwrap();
    assert_eq!(created["policy"], "e2e");
    assert_eq!(created["inline_policy"]["allow"][0]["paths"][0], "/acme/web/**");
    let old_ca = created["ca_certificate"].as_str().unwrap().to_string();
    // What a platform hands the sandbox: its environment and its CA bundle.
    let mut env: BTreeMap<String, String> =
        serde_json::from_str(&case.admin(&["sandbox", "env", "task-42", "--format", "json"])).unwrap();
    // Its own CA file (the case's sandbox keeps the one `control.ca_file` names).
    let ca_file = env["SSL_CERT_FILE"].clone();
    for v in env.values_mut().filter(|v| **v == ca_file) {
        *v = case.path("task-42-ca.pem").display().to_string();
    }
    let bundle = case.admin(&["sandbox", "ca-bundle", "task-42"]);
    assert!(bundle.contains(old_ca.trim()));
    std::fs::write(&env["SSL_CERT_FILE"], &bundle).unwrap();
    let curl = |args: &[&str]| {
        case.client_of(&env, "curl")
            .args(["-sS", "-w", " %{http_code}"])
            .args(args)
            .timed_output()
            .unwrap()
    };

    // curl: its repository, nothing else of the forge, and only reads.
    let out = curl(&[&git.url("/acme/web/info/refs")]);
    assert_eq!(text(&out), "repo /acme/web/info/refs 200", "{}", text(&out));
    let out = curl(&[&git.url("/acme/other/info/refs")]);
    assert!(text(&out).ends_with(" 403"), "{}", text(&out));
    let out = curl(&["-X", "POST", &git.url("/acme/web/git-receive-pack")]);
    assert!(text(&out).ends_with(" 403"), "{}", text(&out));
    // pip: the index, with the token cordon injects; the sandbox never has it.
    let out = pip_install_as(
        case.client_of(&env, "python3"),
        &index.site.url("/simple/"),
        &case.path("site"),
        0,
    );
    assert!(out.status.success(), "pip install failed: {}", text(&out));
    assert!(
        index
            .site
            .seen()
            .iter()
            .all(|s| s.header("authorization") == Some(index.basic.as_str()))
    );
    assert!(!env.values().any(|v| v.contains(SECRET)));

    // A long-lived tunnel to the pinned service (no interception: its own certificate).
    let proxy = env["HTTPS_PROXY"].trim_start_matches("http://").to_string();
    let (userinfo, addr) = proxy.split_once('@').unwrap();
    let mut tunnel = tokio::net::TcpStream::connect(addr.trim_end_matches('/'))
        .await
        .unwrap();
    let auth = base64::engine::general_purpose::STANDARD.encode(userinfo);
    let target = format!("pinned.e2e.test:{t}");
    tunnel
        .write_all(
            format!("CONNECT {target} HTTP/1.1\r\nHost: {target}\r\nProxy-Authorization: Basic {auth}\r\n\r\n")
                .as_bytes(),
        )
        .await
        .unwrap();
    assert_eq!(crate::rigs::client::read_head(&mut tunnel).await.status, 200);

    // A policy that goes past the base is refused, naming what exceeds it; nothing changes.
    let wide = case.path("wide.yaml");
    std::fs::write(
        &wide,
        format!("extends: e2e\nallow:\n  - host: git.e2e.test\n    ports: [{g}, 8443]\n"),
    )
    .unwrap();
    let out = case.admin_output(&[
        "sandbox",
        "set-policy",
        "task-42",
        "--policy-file",
        wide.to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    let said = text(&out);
    assert!(
        said.contains("policy.allow[0].ports") && said.contains("8443"),
        "{said}"
    );

    // Narrowed live: only the repository now.
    let narrow = case.path("narrow.yaml");
    std::fs::write(
        &narrow,
        format!("extends: e2e\nallow:\n  - host: git.e2e.test\n    ports: [{g}]\n    methods: [GET]\n    paths: [\"/acme/web/**\"]\n"),
    )
    .unwrap();
    let changed: serde_json::Value = serde_json::from_str(&case.admin(&[
        "sandbox",
        "set-policy",
        "task-42",
        "--policy-file",
        narrow.to_str().unwrap(),
    ]))
    .unwrap();
    assert_eq!(changed["ca_reissued"], true, "{changed}");
    let new_ca = changed["ca_certificate"].as_str().unwrap().to_string();
    assert_ne!(new_ca, old_ca);
    assert!(
        crate::rigs::client::closed_within(&mut tunnel, Duration::from_secs(2)).await,
        "the tunnel to a destination no longer allowed stayed open"
    );
    // The old CA no longer verifies what cordon presents (curl exits 60); the new bundle does.
    let out = curl(&[&git.url("/acme/web/info/refs")]);
    assert_eq!(out.status.code(), Some(60), "{}", text(&out));
    std::fs::write(&env["SSL_CERT_FILE"], case.admin(&["sandbox", "ca-bundle", "task-42"])).unwrap();
    let out = curl(&[&git.url("/acme/web/info/refs")]);
    assert_eq!(text(&out), "repo /acme/web/info/refs 200", "{}", text(&out));
    // The index is no longer named: pip is refused at the tunnel.
    let out = pip_install_as(
        case.client_of(&env, "python3"),
        &index.site.url("/simple/"),
        &case.path("site2"),
        0,
    );
    assert!(!out.status.success(), "pip should fail: {}", text(&out));
    let record = case
        .audited(|r| r["sandbox"] == "task-42" && r["host"] == "pypi.e2e.test" && r["decision"] == "deny")
        .await;
    assert_eq!(record["policy"], "e2e+inline");
    // Every line (connect, https with credentials, denials) is what docs/audit.schema.json says.
    crate::rigs::audit::assert_schema(&case.path("audit.log"));
    // The sandbox the case made with the base policy itself is untouched by any of this.
    let out = case
        .client("curl")
        .args(["-sS", &git.url("/acme/other/x")])
        .timed_output()
        .unwrap();
    assert_eq!(text(&out), "repo /acme/other/x");
}
