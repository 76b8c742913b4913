//! The admin listener and the console's settings: `/v1` over HTTPS with `admin.tls`, client certificates asked
//! of platforms with `admin.tls.client_ca` (probes and the console need none), a plain listener off loopback
//! that serves probes and metrics only, and every wrong setting refused by `cordon check` and `cordon run` alike,
//! naming its key.

use std::process::{Command, Stdio};

use serde_json::Value;

use crate::rigs::ports::free_port;
use crate::rigs::process::Signal;
use crate::rigs::process::{BIN, cordon_env, curl};
use crate::rigs::tls::test_ca;
use crate::rigs::wait::TimedChild;

/// A configuration in `dir` with `listen`, `top` (more top-level settings) and a policy.
fn config(dir: &std::path::Path, listen: &str, top: &str) -> String {
    let path = dir.join("cordon.yaml");
    let yaml = format!(
        "listen: {{ proxy: 127.0.0.1:{}, {listen} }}\nca: {{ dir: {d}/cas }}\naudit: {{ path: {d}/audit.jsonl }}\n\
         control:\n  watch: false\n  admin_token: {{ file: {d}/admin-token }}\n{top}\npolicies:\n  default:\n    allow: []\n",
        free_port(),
        d = dir.display()
    );
    std::fs::write(&path, yaml).unwrap();
    path.to_str().unwrap().to_owned()
}

fn start(config: &str, admin: u16) -> crate::rigs::process::Killed {
    let child = crate::rigs::process::Killed(
        Command::new(BIN)
            .args(["run", "--config", config])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    for _ in 0..200 {
        if std::net::TcpStream::connect(("127.0.0.1", admin)).is_ok() {
            return child;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    panic!("cordon never listened on {admin}");
}

/// curl `url` with `args`: (HTTP status, body); status 0 when no HTTP answer came.
fn get(args: &[&str], url: &str) -> (u16, String) {
    let mut c = curl();
    c.args(args).arg(url);
    let r = crate::rigs::curl::run(c);
    (r.status, r.text())
}

/// Stop cordon as an operator would (SIGTERM), so its audit file is whole.
fn stop(mut cordon: crate::rigs::process::Killed) {
    crate::rigs::process::signal(cordon.0.id(), Signal::SIGTERM).unwrap();
    assert!(cordon.0.timed_wait().unwrap().success());
}

fn records(dir: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(dir.join("audit.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn admin_tls_serves_v1_over_https_and_asks_platforms_for_client_certificates() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let server_ca = test_ca("cordon admin CA");
    let (cert, key) = server_ca.pem_pair(&["admin.test"]);
    let platforms = test_ca("platform clients");
    let (client_cert, client_key) = platforms.pem_pair(&["ci.platform.test"]);
    let stranger = test_ca("someone else");
    let (other_cert, other_key) = stranger.pem_pair(&["ci.platform.test"]);
    for (name, text) in [
        ("admin.crt", &cert),
        ("admin.key", &key),
        ("server-ca.pem", &server_ca.pem),
        ("platform-ca.pem", &platforms.pem),
        ("client.crt", &client_cert),
        ("client.key", &client_key),
        ("other.crt", &other_cert),
        ("other.key", &other_key),
    ] {
        std::fs::write(d.join(name), text).unwrap();
    }
    let admin = free_port();
    let dd = d.display();
    let c = config(
        d,
        &format!("admin: 127.0.0.1:{admin}"),
        &format!(
            "admin:\n  tls:\n    cert: {{ file: {dd}/admin.crt }}\n    key: {{ file: {dd}/admin.key }}\n    \
             client_ca: {{ file: {dd}/platform-ca.pem }}\nconsole: {{}}"
        ),
    );
    let (summary, err) = crate::rigs::process::check_summary(std::path::Path::new(&c), &[]);
    assert!(
        summary.contains(&format!(
            "admin 127.0.0.1:{admin} (HTTPS, /v1 callers need a client certificate)"
        )),
        "{summary}{err}"
    );
    assert!(
        summary.contains(&format!("console 127.0.0.1:{admin} under /console/")),
        "{summary}"
    );
    let cordon = start(&c, admin);
    let token = crate::rigs::process::written_token(&d.join("admin-token"));
    let base = format!("https://admin.test:{admin}");
    let resolve = format!("admin.test:{admin}:127.0.0.1");
    let ca = d.join("server-ca.pem").display().to_string();
    let auth = format!("Authorization: Bearer {token}");
    let tls = ["--resolve", &resolve, "--cacert", &ca];
    let (client, client_key) = (d.join("client.crt"), d.join("client.key"));
    let (client, client_key) = (client.to_str().unwrap(), client_key.to_str().unwrap());
    let with_cert = [tls.as_slice(), &["--cert", client, "--key", client_key]].concat();
    // Probes need no certificate; /v1 does, besides its token.
    assert_eq!(get(&tls, &format!("{base}/healthz")).0, 200);
    let (status, body) = get(
        &[tls.as_slice(), &["-H", &auth]].concat(),
        &format!("{base}/v1/sandboxes"),
    );
    assert_eq!(status, 401, "{body}");
    assert!(body.contains("client_certificate_required"), "{body}");
    let (status, body) = get(
        &[with_cert.as_slice(), &["-H", &auth]].concat(),
        &format!("{base}/v1/sandboxes"),
    );
    assert_eq!(status, 200, "{body}");
    // A certificate from another CA fails the handshake itself.
    let (other, other_key) = (d.join("other.crt"), d.join("other.key"));
    let (status, _) = get(
        &[
            tls.as_slice(),
            &[
                "--cert",
                other.to_str().unwrap(),
                "--key",
                other_key.to_str().unwrap(),
                "-H",
                &auth,
            ],
        ]
        .concat(),
        &format!("{base}/v1/sandboxes"),
    );
    assert_eq!(
        status, 0,
        "a certificate the client CAs did not sign is refused in the handshake"
    );
    // The certificate without the token is not enough either.
    assert_eq!(get(&with_cert, &format!("{base}/v1/sandboxes")).0, 401);
    // Plain HTTP to the TLS listener gets no HTTP answer.
    assert_eq!(get(&[], &format!("http://127.0.0.1:{admin}/healthz")).0, 0);
    // The console, on the admin listener, over HTTPS: its cookies are __Host- and Secure, and it needs no
    // client certificate (people in browsers have none).
    let mut c = curl();
    c.args(tls).arg(format!("{base}/console/login"));
    let head = crate::rigs::curl::run(c).head().to_ascii_lowercase();
    assert!(head.starts_with("http/1.1 200"), "{head}");
    assert!(head.contains("set-cookie: __host-cordon_form="), "{head}");
    assert!(
        head.contains("; secure") && head.contains("samesite=strict") && head.contains("httponly"),
        "{head}"
    );
    assert!(
        head.contains("content-security-policy: default-src 'none'; script-src 'self'"),
        "{head}"
    );
    stop(cordon);
    let all = records(d);
    let refused: Vec<&Value> = all
        .iter()
        .filter(|r| r["kind"] == "admin" && r["reason"] == "admin_unauthorized")
        .collect();
    assert!(
        refused.iter().any(|r| r["admin"]["detail"]
            .as_str()
            .unwrap_or_default()
            .contains("client certificate")),
        "{refused:#?}"
    );
}

#[test]
fn a_plain_admin_listener_off_loopback_serves_probes_and_metrics_only() {
    let dir = tempfile::tempdir().unwrap();
    let admin = free_port();
    let c = config(dir.path(), &format!("admin: 0.0.0.0:{admin}"), "console: {}");
    let (code, out, err) = cordon_env(&["check", "--config", &c], &[]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains(&format!(
            "admin 0.0.0.0:{admin} (plain HTTP off loopback: /healthz, /readyz and /metrics only; /v1 needs admin.tls)"
        )),
        "{out}"
    );
    assert!(
        err.contains("listen.admin: 0.0.0.0:") && err.contains("answer 403 admin_needs_tls"),
        "check warns: {err}"
    );
    let cordon = start(&c, admin);
    let token = crate::rigs::process::written_token(&dir.path().join("admin-token"));
    let base = format!("http://127.0.0.1:{admin}");
    assert_eq!(get(&[], &format!("{base}/healthz")).0, 200);
    assert_eq!(get(&[], &format!("{base}/metrics")).0, 200);
    let (status, body) = get(
        &["-H", &format!("Authorization: Bearer {token}")],
        &format!("{base}/v1/sandboxes"),
    );
    assert_eq!(status, 403, "{body}");
    assert!(
        body.contains("admin_needs_tls") && body.contains("set admin.tls"),
        "{body}"
    );
    assert_eq!(get(&[], &format!("{base}/console/login")).0, 403);
    stop(cordon);
    let needs: Vec<Value> = records(dir.path())
        .into_iter()
        .filter(|r| r["reason"] == "admin_needs_tls")
        .collect();
    assert_eq!(needs.len(), 2, "{needs:#?}");
}

#[test]
fn wrong_console_and_tls_settings_are_refused_by_check_and_run_naming_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let dd = d.display();
    let ca = test_ca("cordon admin CA");
    let (cert, key) = ca.pem_pair(&["admin.test"]);
    let (_, other_key) = ca.pem_pair(&["other.test"]);
    std::fs::write(d.join("admin.crt"), &cert).unwrap();
    std::fs::write(d.join("admin.key"), &key).unwrap();
    std::fs::write(d.join("other.key"), &other_key).unwrap();
    std::fs::write(d.join("garbage.pem"), "not a certificate\n").unwrap();
    std::fs::write(d.join("ca.pem"), &ca.pem).unwrap();
    let oidc = |extra: &str| {
        format!(
            "console:\n  url: http://127.0.0.1:9443\n  oidc:\n    issuer: http://127.0.0.1:9\n    client_id: cordon\n{extra}"
        )
    };
    let admin = "admin: 127.0.0.1:0";
    let cases: Vec<(String, String, &str)> = vec![
        (
            admin.into(),
            oidc("    roles: { cordon-approvers: [aprover] }\n"),
            "console.oidc.roles.cordon-approvers[0]: \"aprover\" is not a role; the roles are admin, platform, approver, viewer",
        ),
        (
            admin.into(),
            oidc("    roles: { cordon-approvers: [] }\n"),
            "console.oidc.roles.cordon-approvers: is empty",
        ),
        (
            admin.into(),
            "console:\n  oidc: { issuer: \"https://login.example.com\", client_id: cordon }\n".into(),
            "console.url: is required with console.oidc",
        ),
        (
            admin.into(),
            "console:\n  url: https://cordon.example.com\n  oidc: { issuer: \"http://login.example.com\", client_id: cordon }\n"
                .into(),
            "console.oidc.issuer: \"http://login.example.com\" must be an https:// URL (http:// only on a loopback address)",
        ),
        (
            admin.into(),
            oidc("    scopes: [email]\n"),
            "console.oidc.scopes: must include openid",
        ),
        (
            admin.into(),
            oidc("    client_secret: { env: CORDON_TEST_NO_SUCH_SECRET }\n"),
            "console.oidc.client_secret.env:",
        ),
        (
            admin.into(),
            "console: { sesion_ttl: 1h }\n".into(),
            "unknown field `sesion_ttl`",
        ),
        (
            "console: 0.0.0.0:0".into(),
            "console: {}\n".into(),
            "console.tls: is missing and listen.console (0.0.0.0:0) is not a loopback address",
        ),
        (
            "console: 127.0.0.1:0".into(),
            String::new(),
            "listen.console: is set but `console` is not",
        ),
        (
            admin.into(),
            format!("console:\n  tls: {{ cert: {{ file: {dd}/admin.crt }}, key: {{ file: {dd}/admin.key }} }}\n"),
            "console.tls: is set but listen.console is not",
        ),
        (
            admin.into(),
            format!("admin:\n  tls: {{ cert: {{ file: {dd}/garbage.pem }}, key: {{ file: {dd}/admin.key }} }}\n"),
            "admin.tls.cert: holds no certificate",
        ),
        (
            admin.into(),
            format!("admin:\n  tls: {{ cert: {{ file: {dd}/admin.crt }}, key: {{ file: {dd}/other.key }} }}\n"),
            "admin.tls: the certificate and key do not go together",
        ),
        (
            admin.into(),
            format!(
                "admin:\n  tls: {{ cert: {{ file: {dd}/admin.crt }}, key: {{ file: {dd}/admin.key }}, client_ca: {{ file: {dd}/garbage.pem }} }}\n"
            ),
            "admin.tls.client_ca: holds no certificate",
        ),
        (
            admin.into(),
            format!("admin:\n  tls: {{ cert: {{ file: {dd}/missing.crt }}, key: {{ file: {dd}/admin.key }} }}\n"),
            "admin.tls.cert.file:",
        ),
        (
            "admin: 127.0.0.1:1, console: 127.0.0.1:2".into(),
            format!(
                "admin:\n  tls: {{ cert: {{ file: {dd}/admin.crt }}, key: {{ file: {dd}/admin.key }}, client_ca: {{ file: {dd}/ca.pem }} }}\nconsole: {{}}\n"
            ),
            "console.oidc: is missing, and with admin.tls.client_ca an admin token needs a client certificate",
        ),
        (
            admin.into(),
            "  admin_tokens:\n    - { name: cordon, roles: [viewer], token: { env: CORDON_TEST_TOKEN } }\n".into(),
            "control.admin_tokens[0].name: \"cordon\" is reserved",
        ),
        (
            "proxy2: 1".into(),
            String::new(),
            "unknown field `proxy2`",
        ),
    ];
    for (listen, top, said) in cases {
        let listen = if listen == "proxy2: 1" {
            "admin: 127.0.0.1:0, proxy2: 1".to_owned()
        } else {
            listen
        };
        let c = config(d, &listen, &top);
        let (code, out, err) = cordon_env(&["check", "--config", &c], &[]);
        assert_eq!(code, 2, "check must refuse:\n{listen}\n{top}\n{out}{err}");
        assert!(err.contains(said), "check on\n{top}\nsaid: {err}");
        let (code, _, run_err) = cordon_env(&["run", "--config", &c], &[]);
        assert_eq!(code, 2, "run must refuse:\n{top}\n{run_err}");
        assert!(run_err.contains(said), "run on\n{top}\nsaid: {run_err}");
    }
}
