//! The console against other origins of its own host. A browser sends a host's cookies to every port of that
//! host, so a server on another port of 127.0.0.1 (a dev server, anything a person opens) receives whatever
//! cookies the browser holds for 127.0.0.1: the console's session cookie is therefore sent only under the
//! session's place (`/console/s/PLACE/`), which no other origin can learn. And a request that changes something
//! must say it comes from the console's own origin (`Origin` or `Sec-Fetch-Site`), exactly.

use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use fantoccini::Locator;
use http_body_util::Full;

use crate::rigs::browser::browser;
use crate::rigs::console::{ConsoleRig, console_rig, session_of, sign_in};
use crate::rigs::wait::TimedChild;

/// A raw HTTP/1.1 request to the console with `headers` (each `Name: value`): status and the whole answer.
pub(super) async fn raw(rig: &ConsoleRig, method: &str, path: &str, headers: &[String], body: &str) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\n", rig.console);
    for h in headers {
        head.push_str(h);
        head.push_str("\r\n");
    }
    if !body.is_empty() {
        head.push_str("Content-Type: application/x-www-form-urlencoded\r\n");
    }
    head.push_str(&format!(
        "Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    ));
    let mut s = tokio::net::TcpStream::connect(("127.0.0.1", rig.console))
        .await
        .unwrap();
    s.write_all(head.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), s.read_to_end(&mut out))
        .await
        .expect("the console answered within 10 s")
        .unwrap();
    let text = String::from_utf8_lossy(&out).into_owned();
    let status = text.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    (status, text)
}

/// What the hostile server saw: each request's path and `Cookie` header, and what its page reported.
#[derive(Default)]
struct Seen {
    requests: Vec<(String, String)>,
    reports: Vec<String>,
}

/// A hostile server on `127.0.0.1`, another port than the console's: it keeps every cookie the browser sends
/// it, and its page tries to read the console (its sign-in page and inbox, its event stream) from the browser,
/// reporting what it could.
async fn hostile(console: u16) -> (u16, Arc<Mutex<Seen>>) {
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Arc::new(Mutex::new(Seen::default()));
    let script = format!(
        r#"(async function () {{
  const c = "http://127.0.0.1:{console}";
  const report = (what) => fetch("/report?" + encodeURIComponent(what));
  for (const path of ["/console/login", "/console/", "/console/s/", "/console/fragments/inbox"]) {{
    try {{
      const r = await fetch(c + path, {{ credentials: "include" }});
      const t = await r.text();
      await report("read " + path + " " + t.length + (t.includes("csrf") ? " csrf" : ""));
    }} catch (e) {{ await report("blocked " + path); }}
    // The same paths on this server: the browser sends it whatever cookies it would send there.
    try {{ await fetch(path, {{ credentials: "include" }}); }} catch (e) {{}}
  }}
  await new Promise((done) => {{
    const s = new EventSource(c + "/console/events", {{ withCredentials: true }});
    s.onmessage = () => {{ report("read events").then(done); s.close(); }};
    s.onerror = () => {{ report("blocked events").then(done); s.close(); }};
  }});
  await report("done");
}})();"#
    );
    let kept = seen.clone();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let (seen, script) = (kept.clone(), script.clone());
            tokio::spawn(async move {
                let svc = hyper::service::service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                    let (seen, script) = (seen.clone(), script.clone());
                    async move {
                        let path = req.uri().path().to_owned();
                        let cookie = req
                            .headers()
                            .get_all("cookie")
                            .iter()
                            .map(|v| v.to_str().unwrap_or_default().to_owned())
                            .collect::<Vec<_>>()
                            .join("; ");
                        let mut seen = seen.lock().unwrap();
                        seen.requests.push((path.clone(), cookie));
                        if path == "/report" {
                            let what = req.uri().query().unwrap_or_default();
                            let what = percent_decode(what);
                            seen.reports.push(what);
                        }
                        let (kind, body) = match path.as_str() {
                            "/evil.js" => ("text/javascript", script),
                            "/report" => ("text/plain", String::new()),
                            _ => (
                                "text/html",
                                "<!doctype html><p>hello</p><script src=/evil.js></script>".into(),
                            ),
                        };
                        let resp = hyper::Response::builder()
                            .header("content-type", kind)
                            .body(Full::new(Bytes::from(body)))
                            .unwrap();
                        Ok::<_, Infallible>(resp)
                    }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), svc)
                    .await;
            });
        }
    });
    (port, seen)
}

fn percent_decode(text: &str) -> String {
    form_urlencoded::parse(format!("x={text}").as_bytes())
        .next()
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_server_on_another_port_never_gets_the_session_and_cross_origin_changes_are_refused() {
    let mut rig = console_rig(false).await;
    let pay = rig.pay(r#"{"amount": 12}"#);
    let id = rig.wait_pending(1).await[0]["id"].as_str().unwrap().to_owned();
    let anna = browser().await;
    let landed = sign_in(&rig, &anna, "anna").await;
    assert!(landed.contains("person:anna@example.test"), "{landed}");
    let mine = session_of(&anna).await;

    // The hostile page, opened in the approver's browser on two spellings of this host, tries everything.
    let (port, seen) = hostile(rig.console).await;
    for host in ["127.0.0.1", "localhost"] {
        anna.client.goto(&format!("http://{host}:{port}/")).await.unwrap();
        let until = std::time::Instant::now() + Duration::from_secs(20);
        while seen.lock().unwrap().reports.iter().filter(|r| *r == "done").count()
            < 1 + usize::from(host == "localhost")
        {
            assert!(std::time::Instant::now() < until, "the hostile page never finished");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        // Top-level visits of the console's own paths there (all but the session's place, which it cannot know).
        for path in ["/console/", "/console/s/", "/console/login"] {
            anna.client.goto(&format!("http://{host}:{port}{path}")).await.unwrap();
        }
    }
    let seen = std::mem::take(&mut *seen.lock().unwrap());
    let reports = seen.reports.join("\n");
    for path in ["/console/login", "/console/", "/console/s/", "/console/fragments/inbox"] {
        assert!(reports.contains(&format!("blocked {path}")), "{reports}");
    }
    assert!(reports.contains("blocked events"), "{reports}");
    assert!(
        !reports.contains("read "),
        "nothing of the console was read:\n{reports}"
    );
    // The browser does send this host's cookies to the other port (the sign-in page's form cookie got there),
    // but never the session's.
    assert!(
        seen.requests.iter().any(|(_, c)| c.contains("cordon_form=")),
        "the browser shares a host's cookies between its ports: {:?}",
        seen.requests
    );
    assert!(
        seen.requests.iter().all(|(_, c)| !c.contains("cordon_console")),
        "the session cookie reached another port: {:?}",
        seen.requests
    );
    // What the server holds, replayed from its side with every header it likes, decides nothing.
    let cookies: Vec<String> = seen
        .requests
        .iter()
        .map(|(_, c)| c.clone())
        .filter(|c| !c.is_empty())
        .collect();
    let origin = format!("Origin: {}", rig.url(""));
    for cookie in &cookies {
        let headers = [format!("Cookie: {cookie}"), origin.clone()];
        let (status, page) = raw(&rig, "GET", &mine.base, &headers, "").await;
        assert_eq!(status, 303, "no session without its cookie: {page}");
        let form = format!("csrf={}&act=allow_once", mine.csrf);
        let (status, _) = raw(&rig, "POST", &format!("{}approvals/{id}", mine.base), &headers, &form).await;
        assert_eq!(status, 401);
    }

    // The session itself, its token right, but not from the console's origin as the browser says: refused, in
    // every form (no header at all, Origin null, another port, another spelling of the host, same-site).
    let form = format!("csrf={}&act=allow_once", mine.csrf);
    let path = format!("{}approvals/{id}", mine.base);
    let cookie = format!("Cookie: {}", mine.cookie);
    let console = rig.console;
    for headers in [
        vec![],
        vec!["Origin: null".to_owned()],
        vec![format!("Origin: http://127.0.0.1:{port}")],
        vec![format!("Origin: http://localhost:{console}")],
        vec![format!("Origin: https://127.0.0.1:{console}")],
        vec!["Sec-Fetch-Site: same-site".to_owned()],
        vec!["Sec-Fetch-Site: cross-site".to_owned(), origin.clone()],
        vec!["Sec-Fetch-Site: none".to_owned(), origin.clone()],
    ] {
        let all = [vec![cookie.clone()], headers.clone()].concat();
        let (status, page) = raw(&rig, "POST", &path, &all, &form).await;
        assert_eq!(status, 403, "{headers:?}: {page}");
        assert!(page.contains("did not come from this console"), "{headers:?}: {page}");
    }
    // A GET never changes anything: not a decision, not signing out.
    let (status, _) = raw(
        &rig,
        "GET",
        &format!("{path}?{form}"),
        std::slice::from_ref(&cookie),
        "",
    )
    .await;
    assert_eq!(status, 404);
    let (status, _) = raw(
        &rig,
        "GET",
        &format!("{}logout", mine.base),
        std::slice::from_ref(&cookie),
        "",
    )
    .await;
    assert_eq!(status, 404);
    assert_eq!(rig.pending().await.len(), 1, "nothing decided the held request");
    // From the console's own origin (Origin, or Sec-Fetch-Site alone), the form is read (and this one is no
    // decision).
    for headers in [vec![origin.clone()], vec!["Sec-Fetch-Site: same-origin".to_owned()]] {
        let all = [vec![cookie.clone()], headers].concat();
        let bad = format!("csrf={}&act=maybe", mine.csrf);
        let (status, page) = raw(&rig, "POST", &path, &all, &bad).await;
        assert_eq!(status, 422, "{page}");
    }
    // Every answer says no other origin may load it.
    let (_, page) = raw(&rig, "GET", &mine.base, std::slice::from_ref(&cookie), "").await;
    assert!(
        page.to_ascii_lowercase()
            .contains("cross-origin-resource-policy: same-origin"),
        "{page}"
    );
    // Signing in with a token must come from the console's origin too.
    let (_, login) = raw(&rig, "GET", "/console/login", &[], "").await;
    let form_cookie = login
        .lines()
        .find_map(|l| l.strip_prefix("set-cookie: cordon_form="))
        .and_then(|v| v.split(';').next())
        .expect("the sign-in page sets its form cookie")
        .to_owned();
    let csrf = login
        .split("name=\"csrf\" value=\"")
        .nth(1)
        .and_then(|v| v.split('"').next())
        .unwrap()
        .to_owned();
    let token_form = format!("csrf={csrf}&token={}", rig.token("apr"));
    let with_form = format!("Cookie: cordon_form={form_cookie}");
    let (status, page) = raw(
        &rig,
        "POST",
        "/console/login/token",
        std::slice::from_ref(&with_form),
        &token_form,
    )
    .await;
    assert_eq!(status, 403, "{page}");
    let (status, page) = raw(
        &rig,
        "POST",
        "/console/login/token",
        &[with_form, origin.clone()],
        &token_form,
    )
    .await;
    assert_eq!(status, 303, "{page}");
    assert!(page.contains("set-cookie: cordon_console="), "{page}");
    assert!(page.contains("; Path=/console/s/"), "{page}");

    // Meanwhile the console itself works as ever: the approver approves in the page.
    anna.client.goto(&rig.url(&mine.base)).await.unwrap();
    let card = anna.wait_for(&format!("article[data-approval='{id}']"), 20).await;
    card.find(Locator::Css("button[value=allow_once]"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    anna.wait_text("Decided.", 10).await;
    let out = tokio::task::spawn_blocking(move || pay.timed_wait_with_output().unwrap())
        .await
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "200");
    anna.close().await;
    let records = rig.stop().await;
    let csrf_refusals = records
        .iter()
        .filter(|r| r["reason"] == "admin_csrf" && r["admin"]["principal"] == "person:anna@example.test")
        .count();
    assert_eq!(csrf_refusals, 8, "each refused form is recorded");
}
