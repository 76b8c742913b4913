//! Preview URLs through the `cordon` binary: a dev server "in" a sandbox (listening on the sandbox's own
//! address), opened by a person with a signed link made with `cordon sandbox preview`, by curl and by a real
//! browser (headless Chromium from Debian); every way in without the right link or session is refused.

use std::process::{Command, Output};
use std::time::Duration;

use serde_json::Value;
use tokio::net::TcpListener;

use crate::rigs::client::hash;
use crate::rigs::ports::free_port;
use crate::rigs::previews::{chromium, dev_server, session_cookie};
use crate::rigs::process::Signal;
use crate::rigs::process::{BIN, spawn_cordon};
use crate::rigs::wait::Within;

/// A server on `ip` that takes connections and never answers; its port.
async fn mute_server(ip: &str) -> u16 {
    let listener = TcpListener::bind((ip, 0)).await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((stream, _)) = listener.accept().await {
            held.push(stream);
        }
    });
    port
}

/// A WebSocket echo server on `ip` (a dev server's hot-reload channel).
async fn ws_echo(ip: &str) -> u16 {
    use futures_util::{SinkExt, StreamExt};
    let listener = TcpListener::bind((ip, 0)).await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            tokio::spawn(async move {
                let Ok(mut ws) = tokio_tungstenite::accept_async(stream).await else {
                    return;
                };
                while let Some(Ok(msg)) = ws.next().await {
                    if msg.is_text() && ws.send(msg).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    port
}

struct Rig {
    config: std::path::PathBuf,
    proxy: u16,
    preview: u16,
    admin: u16,
    dev: u16,
    dev3: u16,
    ws: u16,
    silent: u16,
    slow: u16,
    _dir: tempfile::TempDir,
}

impl Rig {
    fn cordon(&self, args: &[&str]) -> Output {
        Command::new(BIN)
            .args(args)
            .arg("--config")
            .arg(&self.config)
            .timed_output()
            .unwrap()
    }

    /// A link to `port` of `sandbox` for `user`, as the CLI prints it (with its id, from --json).
    fn link(&self, sandbox: &str, port: u16, extra: &[&str]) -> (String, String) {
        let port = port.to_string();
        let mut args = vec![
            "sandbox", "preview", sandbox, "--port", &port, "--user", "carol", "--json",
        ];
        args.extend(extra);
        let out = self.cordon(&args);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        (
            v["url"].as_str().unwrap().to_string(),
            v["id"].as_str().unwrap().to_string(),
        )
    }

    /// `curl` to the preview listener (whatever name the URL has), with `cookie` if any: status, reason,
    /// headers and body.
    fn curl(&self, url: &str, cookie: Option<&str>) -> (u16, String, String, String) {
        let mut c = crate::rigs::process::curl();
        c.args(["-s", "--connect-to", &format!("::127.0.0.1:{}", self.preview)]);
        if let Some(cookie) = cookie {
            c.args(["-H", &format!("Cookie: {cookie}")]);
        }
        c.arg(url);
        let r = crate::rigs::curl::run(c);
        (r.status, r.reason().to_owned(), r.head(), r.text())
    }

    fn url(&self, port: u16, sandbox: &str, path: &str) -> String {
        format!("http://{port}-{sandbox}.preview.localhost:{}{path}", self.preview)
    }
}

async fn rig() -> (Rig, std::process::Child) {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let dev = dev_server("127.0.0.9", "sb1").await;
    let dev2 = dev_server("127.0.0.10", "sb2").await;
    let dev3 = dev_server("127.0.0.11", "vm1").await;
    let ws = ws_echo("127.0.0.9").await;
    // An exposed port where nothing listens (the dev server has not started, or has stopped).
    let silent = free_port();
    // And one whose dev server takes connections and never answers (still compiling its first page).
    let slow = mute_server("127.0.0.9").await;
    let (proxy, admin, preview) = (free_port(), free_port(), free_port());
    let yaml = format!(
        r#"
listen: {{ proxy: 127.0.0.1:{proxy}, admin: 127.0.0.1:{admin}, preview: 127.0.0.1:{preview} }}
previews: {{ domain: preview.localhost }}
timeouts: {{ upstream_headers: 2s }}
network: {{ allow_cidrs: ["127.0.0.0/8"] }}
ca: {{ dir: {d}/cas }}
audit: {{ path: {d}/audit.jsonl }}
control: {{ admin_token: {{ file: {d}/admin-token }} }}
sandboxes:
  - {{ id: sb1, user: alice, token_sha256: {h1}, policy: web, source_cidrs: ["127.0.0.9/32"] }}
  - {{ id: sb2, user: bob, token_sha256: {h2}, policy: web, source_cidrs: ["127.0.0.10/32"] }}
policies:
  web:
    expose: [{dev}, {dev2}, {dev3}, {ws}, {silent}, {slow}, {admin}]
    allow:
      # Even a rule naming cordon's own listeners cannot take a sandbox there.
      - {{ cidrs: ["127.0.0.1/32"], ports: [{preview}, {admin}] }}
"#,
        d = d.display(),
        h1 = hash("tok1"),
        h2 = hash("tok2"),
    );
    let config = d.join("cordon.yaml");
    std::fs::write(&config, yaml).unwrap();
    let (summary, _) = crate::rigs::process::check_summary(&config, &[]);
    assert!(
        summary.contains(&format!(
            "preview 127.0.0.1:{preview} (plain HTTP on loopback, <port>-<sandbox>.preview.localhost"
        )),
        "{summary}"
    );
    assert!(
        summary.contains(&format!("exposes {dev}, {dev2}, {dev3}, {ws}")),
        "{summary}"
    );
    let child = spawn_cordon(&config, proxy, &[]).await;
    // The CLI below reads the admin token cordon writes once it is up.
    crate::rigs::control::token(d);
    let rig = Rig {
        config,
        proxy,
        preview,
        admin,
        dev,
        dev3,
        ws,
        silent,
        slow,
        _dir: dir,
    };
    (rig, child)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_signed_link_opens_a_sandboxs_port_for_one_person_and_nothing_else_gets_in() {
    let (rig, child) = rig().await;
    let (dev, ws) = (rig.dev, rig.ws);

    // No link, no cookie: 401 with a short page.
    let (status, reason, _, body) = rig.curl(&rig.url(dev, "sb1", "/"), None);
    assert_eq!((status, reason.as_str()), (401, "preview_login"));
    assert!(body.contains("This preview needs a link"), "{body}");

    // The link sets a host-only, HttpOnly, Secure, SameSite=Lax cookie and sends the browser to a clean URL.
    let (link, pid) = rig.link("sb1", dev, &[]);
    assert!(link.starts_with(&rig.url(dev, "sb1", "/.cordon/preview?t=")), "{link}");
    let (status, _, head, _) = rig.curl(&link, None);
    assert_eq!(status, 303, "{head}");
    assert!(head.contains("\r\nlocation: /\r\n"), "{head}");
    let (cookie, line) = session_cookie(&head);
    assert!(cookie.starts_with("__Host-cordon_preview="), "{line}");
    for attribute in ["HttpOnly", "Secure", "SameSite=Lax", "Path=/", "Max-Age=3600"] {
        assert!(line.contains(attribute), "{attribute}: {line}");
    }
    assert!(!line.to_ascii_lowercase().contains("domain="), "host-only: {line}");

    // With it, the dev server's page; the dev server never sees cordon's cookie.
    let (status, _, _, body) = rig.curl(&rig.url(dev, "sb1", "/"), Some(&cookie));
    assert_eq!(
        (status, body.as_str()),
        (
            200,
            "<!doctype html><html><body><h1 id=\"app\">dev server of sb1</h1></body></html>"
        )
    );
    let (_, _, _, seen) = rig.curl(&rig.url(dev, "sb1", "/cookies"), Some(&format!("a=1; {cookie}; b=2")));
    assert_eq!(seen, "a=1; b=2");

    // The session is for this sandbox and port only.
    let (status, reason, _, _) = rig.curl(&rig.url(dev, "sb2", "/"), Some(&cookie));
    assert_eq!((status, reason.as_str()), (403, "preview_other"));
    let (status, reason, _, _) = rig.curl(&rig.url(ws, "sb1", "/"), Some(&cookie));
    assert_eq!((status, reason.as_str()), (403, "preview_other"));
    // A forged, altered or link-as-cookie session is no session.
    let token = cookie.split_once('=').unwrap().1;
    let link_token = link.split_once("?t=").unwrap().1;
    for bad in [
        format!("__Host-cordon_preview={}x", token),
        format!("__Host-cordon_preview={link_token}"),
        "__Host-cordon_preview=eyJhbGciOiJub25lIn0.e30.".to_string(),
        // The one name cordon sets is the one it reads: the same session under another name is no session.
        format!("cordon_preview={token}"),
        format!("__Secure-cordon_preview={token}"),
        format!("__host-cordon_preview={token}"),
    ] {
        let (status, reason, _, _) = rig.curl(&rig.url(dev, "sb1", "/"), Some(&bad));
        assert_eq!((status, reason.as_str()), (401, "preview_login"), "{bad}");
    }

    // Links are made only for what would open, and only live a short while.
    let port = "9999";
    let out = rig.cordon(&["sandbox", "preview", "sb1", "--port", port, "--user", "carol"]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("port_not_exposed"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (short, _) = rig.link("sb1", dev, &["--ttl", "1s"]);
    tokio::time::sleep(Duration::from_millis(2100)).await;
    let (status, reason, _, _) = rig.curl(&short, None);
    assert_eq!((status, reason.as_str()), (401, "preview_login"), "an expired link");

    // A dev server that is not there: 502, said so.
    let (quiet_link, _) = rig.link("sb1", rig.silent, &[]);
    let (_, _, head, _) = rig.curl(&quiet_link, None);
    let (quiet_cookie, _) = session_cookie(&head);
    let (status, reason, _, _) = rig.curl(&rig.url(rig.silent, "sb1", "/"), Some(&quiet_cookie));
    assert_eq!((status, reason.as_str()), (502, "preview_unreachable"));
    // One that never answers: 504, said so, once `timeouts.upstream_headers` has passed.
    let (slow_link, _) = rig.link("sb1", rig.slow, &[]);
    let (_, _, head, _) = rig.curl(&slow_link, None);
    let (slow_cookie, _) = session_cookie(&head);
    let (status, reason, _, _) = rig.curl(&rig.url(rig.slow, "sb1", "/"), Some(&slow_cookie));
    assert_eq!((status, reason.as_str()), (504, "preview_timeout"));

    // WebSockets pass (a dev server's hot reload).
    let (ws_link, _) = rig.link("sb1", ws, &[]);
    let (_, _, head, _) = rig.curl(&ws_link, None);
    let (ws_cookie, _) = session_cookie(&head);
    assert_eq!(ws_roundtrip(&rig, ws, &ws_cookie).await, "hot reload");

    // The sandbox cannot reach the preview listener (or the admin API, where links are made): cordon never
    // dials itself, even where a rule names it.
    for port in [rig.preview, rig.admin] {
        let mut c = crate::rigs::process::curl();
        c.args(["-s", "-x"])
            .arg(format!("http://sb1:tok1@127.0.0.1:{}", rig.proxy))
            .arg(format!("http://127.0.0.1:{port}/"));
        let r = crate::rigs::curl::run(c);
        assert_eq!((r.status, r.reason()), (403, "self_address"), "{r}");
    }

    // Closing the preview ends its sessions and its link at once.
    let out = rig.cordon(&["sandbox", "close-preview", "sb1", &pid]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let (status, reason, _, _) = rig.curl(&rig.url(dev, "sb1", "/"), Some(&cookie));
    assert_eq!((status, reason.as_str()), (403, "preview_revoked"));
    let (status, reason, _, _) = rig.curl(&link, None);
    assert_eq!((status, reason.as_str()), (403, "preview_revoked"));
    let out = rig.cordon(&["sandbox", "close-preview", "sb1", "pv-0000000000000000"]);
    assert!(!out.status.success(), "an unknown preview");

    // Revoking a sandbox made at run time (a VM known by its address) ends its previews at once.
    let out = rig.cordon(&[
        "sandbox",
        "create",
        "--user",
        "dave",
        "--policy",
        "web",
        "--id",
        "vm1",
        "--source-cidr",
        "127.0.0.11/32",
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let (vm_link, _) = rig.link("vm1", rig.dev3, &[]);
    let (_, _, head, _) = rig.curl(&vm_link, None);
    let (vm_cookie, _) = session_cookie(&head);
    let (status, _, _, body) = rig.curl(&rig.url(rig.dev3, "vm1", "/"), Some(&vm_cookie));
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("dev server of vm1"));
    assert!(rig.cordon(&["sandbox", "revoke", "vm1"]).status.success());
    let (status, reason, _, _) = rig.curl(&rig.url(rig.dev3, "vm1", "/"), Some(&vm_cookie));
    assert_eq!((status, reason.as_str()), (403, "preview_revoked"));

    // A sandbox registered at cordon's own address, or at the cloud's metadata address, gets no preview,
    // whatever port its policy exposes: the address the control plane holds is checked before any dial.
    for (id, cidr, port, reason) in [
        ("self1", "127.0.0.1/32", rig.admin, "self_address"),
        ("meta1", "169.254.169.254/32", rig.dev, "metadata_address"),
    ] {
        let out = rig.cordon(&[
            "sandbox",
            "create",
            "--user",
            "eve",
            "--policy",
            "web",
            "--id",
            id,
            "--source-cidr",
            cidr,
        ]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let out = rig.cordon(&["sandbox", "preview", id, "--port", &port.to_string(), "--user", "eve"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && stderr.contains(reason), "{id}: {stderr}");
    }

    // Every access is audited, with the person.
    let stopped = crate::rigs::process::signal_and_wait(child, Signal::SIGTERM).await;
    assert!(stopped.status.success());
    let audit = std::fs::read_to_string(rig.config.with_file_name("audit.jsonl")).unwrap();
    let previews: Vec<Value> = audit
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|r| r["kind"] == "preview")
        .collect();
    let served = previews
        .iter()
        .find(|r| r["status"] == 200 && r["path"] == "/")
        .expect("a record of the page served");
    assert_eq!(
        (&served["sandbox"], &served["user"], &served["decision"]),
        (&Value::from("sb1"), &Value::from("carol"), &Value::from("allow"))
    );
    assert_eq!(served["host"], format!("{dev}-sb1.preview.localhost"));
    // Written once the page was sent, with what was sent.
    assert!(served["bytes_down"].as_u64().unwrap() > 0, "{served}");
    for reason in ["preview_login", "preview_other", "preview_revoked"] {
        assert!(
            previews
                .iter()
                .any(|r| r["reason"] == reason && r["decision"] == "deny" && r["side"] == "downstream"),
            "no {reason} record"
        );
    }
    assert!(
        previews.iter().any(|r| r["reason"] == "preview_unreachable"
            && r["status"] == 502
            && r["decision"] == "allow"
            && r["side"] == "upstream"),
        "a failure, not a refusal: {previews:#?}"
    );
    assert!(
        previews.iter().any(|r| r["reason"] == "preview_timeout"
            && r["status"] == 504
            && r["decision"] == "allow"
            && r["side"] == "upstream"),
        "a slow dev server is a failure too: {previews:#?}"
    );
}

/// Send one message over a WebSocket to `port` of sb1 through the preview listener; what comes back.
async fn ws_roundtrip(rig: &Rig, port: u16, cookie: &str) -> String {
    use futures_util::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::{Message, client::IntoClientRequest};
    let stream = tokio::net::TcpStream::connect(("127.0.0.1", rig.preview))
        .await
        .unwrap();
    let mut request = format!("ws://{port}-sb1.preview.localhost:{}/hmr", rig.preview)
        .into_client_request()
        .unwrap();
    request.headers_mut().insert("cookie", cookie.parse().unwrap());
    let (mut ws, _) = tokio_tungstenite::client_async(request, stream).await.unwrap();
    ws.send(Message::text("hot reload")).await.unwrap();
    match crate::rigs::wait::within(
        "the preview's WebSocket echo",
        std::time::Duration::from_secs(20),
        ws.next(),
    )
    .await
    {
        Some(Ok(Message::Text(t))) => t.to_string(),
        other => panic!("no echo: {other:?}"),
    }
}

/// Headless Chromium, as a person would: the link opens the dev server's page; the bare URL shows the page
/// saying a link is needed.
#[tokio::test(flavor = "multi_thread")]
async fn a_browser_opens_the_link_and_sees_the_page_and_without_it_sees_why_not() {
    let (rig, child) = rig().await;
    let (link, _) = rig.link("sb1", rig.dev, &[]);
    let dom = chromium(&link);
    assert!(dom.contains("<h1 id=\"app\">dev server of sb1</h1>"), "{dom}");
    let bare = chromium(&rig.url(rig.dev, "sb1", "/"));
    assert!(bare.contains("This preview needs a link"), "{bare}");
    crate::rigs::process::signal_and_wait(child, Signal::SIGTERM).await;
}

/// Whose a failed preview is, in its record: a sandbox that a reload left without an address of its own (its one
/// `source_cidrs` address widened to a range) cannot be previewed, and that is cordon's configuration's failure
/// (`internal`), neither the person's request nor the dev server's.
#[tokio::test(flavor = "multi_thread")]
async fn a_preview_of_a_sandbox_left_without_an_address_fails_on_cordons_side() {
    let (rig, child) = crate::rigs::previews::Rig::start(&[]).await;
    let origin = rig.origin("sb1", &rig.victim);
    let cookie = rig.session(&rig.link("sb1", &rig.victim));
    let cookie = format!("Cookie: {cookie}");
    let (status, _, head) = rig.curl("GET", &format!("{origin}/"), std::slice::from_ref(&cookie));
    assert_eq!(status, 200, "{head}");

    // The same sandbox (same user: the same incarnation), now a range with no one address.
    let yaml = std::fs::read_to_string(&rig.config).unwrap();
    assert!(yaml.contains("\"127.0.0.21/32\""));
    std::fs::write(&rig.config, yaml.replace("\"127.0.0.21/32\"", "\"127.0.0.20/31\"")).unwrap();
    assert!(crate::rigs::process::signal(child.id(), Signal::SIGHUP).is_ok());
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let (status, reason, head) = rig.curl("GET", &format!("{origin}/"), std::slice::from_ref(&cookie));
        if (status, reason.as_str()) == (502, "preview_no_address") {
            break;
        }
        assert_eq!(status, 200, "before the reload took effect: {head}");
        assert!(
            std::time::Instant::now() < deadline,
            "the reload never took effect: {head}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let stopped = crate::rigs::process::signal_and_wait(child, Signal::SIGTERM).await;
    assert!(stopped.status.success());
    let records = rig.audit();
    let failed = records
        .iter()
        .find(|r| r["reason"] == "preview_no_address")
        .unwrap_or_else(|| panic!("no preview_no_address record: {records:#?}"));
    assert_eq!(
        (&failed["status"], &failed["decision"], &failed["side"]),
        (&Value::from(502), &Value::from("allow"), &Value::from("internal")),
        "{failed:#}"
    );
}
