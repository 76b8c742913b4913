//! Preview URLs over HTTPS through the `cordon` binary, as in production: the configured certificate, and the
//! session in a `__Host-` cookie.

use std::process::Command;

use crate::rigs::client::hash;
use crate::rigs::ports::free_port;
use crate::rigs::previews::{dev_server, session_cookie};
use crate::rigs::process::Signal;
use crate::rigs::process::{BIN, spawn_cordon};
use crate::rigs::wait::Within;

/// In production the preview listener speaks HTTPS with the configured certificate (here a wildcard one from a
/// test CA): the link opens over TLS, the cookie comes back over TLS.
#[tokio::test(flavor = "multi_thread")]
async fn over_https_with_the_configured_certificate() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let dev = dev_server("127.0.0.13", "tls").await;
    let ca = crate::rigs::tls::test_ca("preview test CA");
    let (cert, key) = ca.pem_pair(&["*.preview.test"]);
    std::fs::write(d.join("preview.crt"), cert).unwrap();
    std::fs::write(d.join("preview.key"), key).unwrap();
    std::fs::write(d.join("ca.pem"), &ca.pem).unwrap();
    let (proxy, admin, preview) = (free_port(), free_port(), free_port());
    let yaml = format!(
        r#"
listen: {{ proxy: 127.0.0.1:{proxy}, admin: 127.0.0.1:{admin}, preview: 127.0.0.1:{preview} }}
previews:
  domain: preview.test
  tls: {{ cert: {{ file: {d}/preview.crt }}, key: {{ file: {d}/preview.key }} }}
ca: {{ dir: {d}/cas }}
control: {{ admin_token: {{ file: {d}/admin-token }} }}
sandboxes:
  - {{ id: sbt, user: alice, token_sha256: {h}, policy: web, source_cidrs: ["127.0.0.13/32"] }}
policies:
  web: {{ expose: [{dev}], allow: [] }}
"#,
        d = d.display(),
        h = hash("tok"),
    );
    let config = d.join("cordon.yaml");
    std::fs::write(&config, yaml).unwrap();
    let child = spawn_cordon(&config, proxy, &[]).await;
    // The CLI below reads the admin token cordon writes once it is up.
    crate::rigs::control::token(d);
    let out = Command::new(BIN)
        .args([
            "sandbox",
            "preview",
            "sbt",
            "--port",
            &dev.to_string(),
            "--user",
            "carol",
            "--config",
        ])
        .arg(&config)
        .timed_output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let link = String::from_utf8_lossy(&out.stdout).trim().to_string();
    assert!(
        link.starts_with(&format!("https://{dev}-sbt.preview.test:{preview}/.cordon/preview?t=")),
        "{link}"
    );
    let curl = |url: &str, cookie: Option<&str>| -> String {
        let mut c = crate::rigs::process::curl();
        c.args(["-s", "--cacert"])
            .arg(d.join("ca.pem"))
            .args(["--connect-to", &format!("::127.0.0.1:{preview}")]);
        if let Some(cookie) = cookie {
            c.args(["-H", &format!("Cookie: {cookie}")]);
        }
        c.arg(url);
        let r = crate::rigs::curl::run(c);
        format!("{}\r\n{}", r.head(), r.text())
    };
    let head = curl(&link, None);
    assert!(head.starts_with("HTTP/1.1 303"), "{head}");
    let (cookie, _) = session_cookie(&head);
    assert!(cookie.starts_with("__Host-cordon_preview="), "{head}");
    let page = curl(&format!("https://{dev}-sbt.preview.test:{preview}/"), Some(&cookie));
    assert!(page.contains("dev server of tls"), "{page}");
    crate::rigs::process::signal_and_wait(child, Signal::SIGTERM).await;
}
