//! `admin.tls.client_ca` holds for admin tokens in the console as on `/v1`: signing in with a token, and every
//! request of a token's session (pages, lists, the event stream, forms), needs a verified client certificate on
//! the admin listener; on `listen.console`, which asks for none, token sign-in is refused (people sign in with
//! the identity provider there, and need no certificate).

use std::process::{Command, Stdio};

use serde_json::Value;

use crate::rigs::ports::free_port;
use crate::rigs::process::Signal;
use crate::rigs::process::{BIN, Killed, curl, written_token};
use crate::rigs::tls::test_ca;
use crate::rigs::wait::TimedChild;

/// curl with `args`: status and the answer's head and body.
fn call(args: &[&str]) -> (u16, String) {
    let mut c = curl();
    c.arg("-s").args(args);
    let r = crate::rigs::curl::run(c);
    (r.status, format!("{}\r\n{}", r.head(), r.text()))
}

fn start(config: &std::path::Path, port: u16) -> Killed {
    let child = Killed(
        Command::new(BIN)
            .args(["run", "--config"])
            .arg(config)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    for _ in 0..200 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return child;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    panic!("cordon never listened on {port}");
}

/// Stop cordon as an operator would (SIGTERM), so its audit file is whole.
fn stop(mut cordon: Killed) {
    crate::rigs::process::signal(cordon.0.id(), Signal::SIGTERM).unwrap();
    assert!(cordon.0.timed_wait().unwrap().success());
}

/// The sign-in page's CSRF value.
fn csrf_of(page: &str) -> String {
    page.split("name=\"csrf\" value=\"")
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap()
        .to_owned()
}

#[test]
fn admin_tokens_need_their_client_certificate_in_the_console_too() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let server_ca = test_ca("cordon admin CA");
    let (cert, key) = server_ca.pem_pair(&["admin.test"]);
    let platforms = test_ca("platform clients");
    let (client_cert, client_key) = platforms.pem_pair(&["ci.platform.test"]);
    for (name, text) in [
        ("admin.crt", &cert),
        ("admin.key", &key),
        ("server-ca.pem", &server_ca.pem),
        ("platform-ca.pem", &platforms.pem),
        ("client.crt", &client_cert),
        ("client.key", &client_key),
    ] {
        std::fs::write(d.join(name), text).unwrap();
    }
    let (admin, console) = (free_port(), free_port());
    let dd = d.display();
    let yaml = format!(
        "listen: {{ proxy: 127.0.0.1:{}, admin: 127.0.0.1:{admin} }}\nca: {{ dir: {dd}/cas }}\naudit: {{ path: {dd}/audit.jsonl }}\n\
         control:\n  watch: false\n  admin_token: {{ file: {dd}/admin-token }}\n\
         admin:\n  tls: {{ cert: {{ file: {dd}/admin.crt }}, key: {{ file: {dd}/admin.key }}, client_ca: {{ file: {dd}/platform-ca.pem }} }}\n\
         console: {{}}\npolicies:\n  default:\n    allow: []\n",
        free_port()
    );
    let config = d.join("cordon.yaml");
    std::fs::write(&config, &yaml).unwrap();
    let (summary, err) = crate::rigs::process::check_summary(&config, &[]);
    assert!(
        summary.contains("(the admin listener's; sign in with an admin token with its client certificate;"),
        "{summary}{err}"
    );
    let cordon = start(&config, admin);
    let token = written_token(&d.join("admin-token"));
    let base = format!("https://admin.test:{admin}");
    let resolve = format!("admin.test:{admin}:127.0.0.1");
    let ca = d.join("server-ca.pem").display().to_string();
    let jar = d.join("jar").display().to_string();
    let origin = format!("Origin: {base}");
    let tls = ["--resolve", &resolve, "--cacert", &ca, "-b", &jar, "-c", &jar];
    let (c, k) = (d.join("client.crt"), d.join("client.key"));
    let with_cert = [
        tls.as_slice(),
        &["--cert", c.to_str().unwrap(), "--key", k.to_str().unwrap()],
    ]
    .concat();

    // The sign-in page needs no certificate (people sign in there); a token does.
    let (status, page) = call(&[tls.as_slice(), &[&format!("{base}/console/login")]].concat());
    assert_eq!(status, 200, "{page}");
    let form = format!("csrf={}&token={token}", csrf_of(&page));
    let post = ["-H", &origin, "--data", &form];
    let (status, page) = call(&[tls.as_slice(), &post, &[&format!("{base}/console/login/token")]].concat());
    assert_eq!(status, 401, "{page}");
    assert!(
        page.contains("admin tokens need a client certificate here as on /v1"),
        "{page}"
    );
    assert!(
        !page.to_ascii_lowercase().contains("cordon_console="),
        "no session: {page}"
    );
    // With the certificate: signed in, at the session's own place.
    let (_, page) = call(&[tls.as_slice(), &[&format!("{base}/console/login")]].concat());
    let form = format!("csrf={}&token={token}", csrf_of(&page));
    let post = ["-H", &origin, "--data", &form];
    let (status, page) = call(&[with_cert.as_slice(), &post, &[&format!("{base}/console/login/token")]].concat());
    assert_eq!(status, 303, "{page}");
    let lower = page.to_ascii_lowercase();
    assert!(lower.contains("set-cookie: __secure-cordon_console="), "{page}");
    assert!(
        lower.contains("; path=/console/s/") && lower.contains("; secure"),
        "{page}"
    );
    let place = page
        .lines()
        .find_map(|l| l.strip_prefix("location: "))
        .unwrap()
        .trim()
        .to_owned();
    let at = |p: &str| format!("{base}{place}{p}");
    let (status, inbox) = call(&[with_cert.as_slice(), &[&at("")]].concat());
    assert_eq!(status, 200, "{inbox}");
    let csrf = inbox
        .split("name=\"csrf\" value=\"")
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap()
        .to_owned();
    // The same session over a connection without the certificate: nothing, whatever is asked.
    for path in ["", "sandboxes", "fragments/inbox", "events"] {
        let (status, page) = call(&[tls.as_slice(), &["--max-time", "5", &at(path)]].concat());
        assert_eq!(status, 401, "{path}: {page}");
        assert!(page.contains("Certificate required"), "{path}: {page}");
    }
    let form = format!("csrf={csrf}");
    let (status, _) = call(&[tls.as_slice(), &["-H", &origin, "--data", &form, &at("logout")]].concat());
    assert_eq!(status, 401);
    let (status, _) = call(&[with_cert.as_slice(), &["-H", &origin, "--data", &form, &at("logout")]].concat());
    assert_eq!(status, 303, "signed out with the certificate");
    stop(cordon);

    // On listen.console (no client certificates there), with a provider for people: no token signs in.
    let yaml = yaml.replace(
        &format!("admin: 127.0.0.1:{admin} }}"),
        &format!("admin: 127.0.0.1:{admin}, console: 127.0.0.1:{console} }}"),
    );
    let yaml = yaml.replace(
        "console: {}\n",
        &format!(
            "console:\n  url: http://127.0.0.1:{console}\n  oidc: {{ issuer: \"http://127.0.0.1:{}\", client_id: cordon }}\n",
            free_port()
        ),
    );
    std::fs::write(&config, &yaml).unwrap();
    let (summary, err) = crate::rigs::process::check_summary(&config, &[]);
    assert!(
        summary.contains("(roles from the claim groups); no token here (admin.tls.client_ca);"),
        "{summary}{err}"
    );
    let cordon = start(&config, console);
    let url = format!("http://127.0.0.1:{console}");
    let plain = ["-b", &jar, "-c", &jar];
    let (_, page) = call(&[plain.as_slice(), &[&format!("{url}/console/login")]].concat());
    let form = format!("csrf={}&token={token}", csrf_of(&page));
    let origin = format!("Origin: {url}");
    let post = ["-H", &origin, "--data", &form];
    let (status, page) = call(&[plain.as_slice(), &post, &[&format!("{url}/console/login/token")]].concat());
    assert_eq!(status, 401, "{page}");
    assert!(page.contains("sign in with the identity provider"), "{page}");
    stop(cordon);

    let records: Vec<Value> = std::fs::read_to_string(d.join("audit.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let sign_ins: Vec<(&str, bool)> = records
        .iter()
        .filter(|r| r["admin"]["action"] == "sign_in")
        .map(|r| {
            let detail = r["admin"]["detail"].as_str().unwrap_or_default();
            (r["decision"].as_str().unwrap(), detail.contains("client certificate"))
        })
        .collect();
    assert_eq!(sign_ins, [("deny", true), ("allow", false), ("deny", true)]);
    let refused_session = records
        .iter()
        .filter(|r| r["reason"] == "admin_unauthorized" && r["admin"]["principal"] == "admin")
        .count();
    assert_eq!(
        refused_session, 5,
        "each request of the session without a certificate is recorded"
    );
}
