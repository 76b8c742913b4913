//! Previews are web origins of their own, through the binary and headless Chromium: a page of one sandbox's
//! preview cannot use the person's session on another's (WebSocket, form and fetch POSTs: refused before the
//! dev server, 403 `preview_cross_origin`), a dev server cannot set cordon's cookie or cookies for the parent
//! domain (stripped, audited), and a preview's own page still uses its WebSocket and posts.

use serde_json::Value;

use crate::rigs::previews::{Rig, chromium};
use crate::rigs::process::Signal;

/// The person has preview B (`b_link`) open in a frame; then the page of preview A opens a WebSocket to B,
/// submits a form to B and POSTs to B with `fetch`, writing what it could into the page.
fn attack_page(b: &str, b_link: &str) -> String {
    let ws = b.replacen("http://", "ws://", 1);
    format!(
        r#"<!doctype html><html><body><p id="ws">ws: pending</p><p id="fetch">fetch: pending</p>
<iframe name="sink"></iframe>
<form id="f" method="POST" action="{b}/submit" target="sink"><input name="x" value="csrf-form"></form>
<script>
const set = (id, t) => {{ document.getElementById(id).textContent = t; }};
const open = document.createElement('iframe');
open.onload = () => {{
  const ws = new WebSocket('{ws}/ws');
  ws.onopen = () => {{ set('ws', 'ws: open'); ws.send('hijacked'); }};
  ws.onmessage = (e) => set('ws', 'ws: echo ' + e.data);
  ws.onerror = () => set('ws', 'ws: refused');
  fetch('{b}/submit', {{ method: 'POST', mode: 'no-cors', credentials: 'include', body: 'x=csrf-fetch' }})
    .then(() => set('fetch', 'fetch: sent'), () => set('fetch', 'fetch: failed'));
  document.getElementById('f').submit();
}};
open.src = '{b_link}';
document.body.appendChild(open);
</script>
<img src="/hold"></body></html>"#
    )
}

/// The person has preview B open in a frame; then the page of preview A has its dev server toss cookies
/// (`/toss`), tosses some from script, and opens B again.
fn toss_page(b: &str, b_link: &str) -> String {
    format!(
        r#"<!doctype html><html><body><p id="step">start</p>
<script>
const open = document.createElement('iframe');
open.onload = () => fetch('/toss').then(() => {{
  document.cookie = 'cordon_preview=evil-js; Domain=preview.localhost; Path=/';
  document.cookie = '__Host-cordon_preview=evil-js; Domain=preview.localhost; Path=/; Secure';
  const after = document.createElement('iframe');
  after.onload = () => {{ document.getElementById('step').textContent = 'done'; }};
  after.src = '{b}/after';
  document.body.appendChild(after);
}});
open.src = '{b_link}';
document.body.appendChild(open);
</script>
<img src="/hold"></body></html>"#
    )
}

/// A dev server's own page: its WebSocket, a form POST and a fetch POST, all to itself.
const OWN_PAGE: &str = r#"<!doctype html><html><body><p id="ws">ws: pending</p><p id="post">post: pending</p>
<iframe name="sink"></iframe>
<form id="f" method="POST" action="/submit" target="sink"><input name="x" value="own-form"></form>
<script>
const set = (id, t) => { document.getElementById(id).textContent = t; };
const ws = new WebSocket('ws://' + location.host + '/ws');
ws.onopen = () => ws.send('own page');
ws.onmessage = (e) => set('ws', 'ws: echo ' + e.data);
ws.onerror = () => set('ws', 'ws: refused');
fetch('/submit', { method: 'POST', body: 'x=own-fetch' }).then((r) => r.text()).then((t) => set('post', 'post: ' + t));
document.getElementById('f').submit();
</script>
<img src="/hold"></body></html>"#;

/// A WebSocket handshake to `origin` (a preview's) with `headers`: the echo of one message, or the refusal's
/// status and reason.
async fn ws(rig: &Rig, origin: &str, headers: &[(&'static str, String)]) -> Result<String, (u16, String)> {
    use futures_util::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::{Error, Message, client::IntoClientRequest};
    let stream = tokio::net::TcpStream::connect(("127.0.0.1", rig.preview))
        .await
        .unwrap();
    let mut request = format!("{}/ws", origin.replacen("http://", "ws://", 1))
        .into_client_request()
        .unwrap();
    for (name, value) in headers {
        request.headers_mut().insert(*name, value.parse().unwrap());
    }
    match tokio_tungstenite::client_async(request, stream).await {
        Ok((mut ws, _)) => {
            ws.send(Message::text("through curl's cousin")).await.unwrap();
            match crate::rigs::wait::within(
                "the preview's WebSocket echo",
                std::time::Duration::from_secs(20),
                ws.next(),
            )
            .await
            {
                Some(Ok(Message::Text(t))) => Ok(t.to_string()),
                other => panic!("no echo: {other:?}"),
            }
        }
        Err(Error::Http(resp)) => Err((
            resp.status().as_u16(),
            resp.headers()
                .get("x-cordon-reason")
                .map(|v| v.to_str().unwrap().to_string())
                .unwrap_or_default(),
        )),
        Err(e) => panic!("{e}"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_page_of_another_preview_cannot_use_the_persons_session_for_a_websocket_or_a_post() {
    let (rig, child) = Rig::start(&[]).await;
    let b = rig.origin("sb1", &rig.victim);
    let a = rig.origin("sb2", &rig.attacker);
    *rig.victim.page.lock().unwrap() = "<!doctype html><p>the person's app</p>".into();
    *rig.attacker.page.lock().unwrap() = attack_page(&b, &rig.link("sb1", &rig.victim));

    // In Chromium: the person opens preview A while preview B is open with their session.
    let dom = chromium(&rig.link("sb2", &rig.attacker));
    assert!(dom.contains("ws: refused") && dom.contains("fetch: sent"), "{dom}");
    let seen = rig.victim.seen();
    assert!(
        seen.iter().any(|s| s.starts_with("GET / ")),
        "the person's own visit to B got through: {seen:?}"
    );
    assert!(
        !seen
            .iter()
            .any(|s| s.contains("/ws") || s.contains("/submit") || s.starts_with("ws ")),
        "nothing of A's page reached B's dev server: {seen:?}"
    );

    // The family, with the person's valid session on B: another preview, the parent domain, `null`, another
    // scheme or port of B's own host, B's host with a trailing dot, case variants of another preview.
    let cookie = rig.session(&rig.link("sb1", &rig.victim));
    let host = b.strip_prefix("http://").unwrap();
    let (name, _) = host.rsplit_once(':').unwrap();
    let foreign = [
        a.clone(),
        a.to_uppercase(),
        format!("http://preview.localhost:{}", rig.preview),
        "null".to_string(),
        format!("https://{host}"),
        format!("http://{name}"),
        format!("http://{name}:{}", rig.preview + 1),
        format!("http://{name}.:{}", rig.preview),
        format!("http://x.{host}"),
        "http://localhost".to_string(),
    ];
    let before = rig.victim.seen().len();
    for origin in &foreign {
        for method in ["POST", "PUT", "DELETE", "PATCH", "GET"] {
            let (status, reason, head) = rig.curl(
                method,
                &format!("{b}/submit"),
                &[format!("Cookie: {cookie}"), format!("Origin: {origin}")],
            );
            assert_eq!(
                (status, reason.as_str()),
                (403, "preview_cross_origin"),
                "{method} {origin}: {head}"
            );
        }
        let refused = ws(&rig, &b, &[("cookie", cookie.clone()), ("origin", origin.clone())]).await;
        assert_eq!(refused, Err((403, "preview_cross_origin".into())), "{origin}");
    }
    // Without `Origin`, a browser's `Sec-Fetch-Site` still says the request comes from elsewhere.
    for site in ["same-site", "cross-site"] {
        let fetch_site = format!("Sec-Fetch-Site: {site}");
        let (status, reason, _) = rig.curl(
            "POST",
            &format!("{b}/submit"),
            &[format!("Cookie: {cookie}"), fetch_site],
        );
        assert_eq!((status, reason.as_str()), (403, "preview_cross_origin"), "{site}");
        let refused = ws(&rig, &b, &[("cookie", cookie.clone()), ("sec-fetch-site", site.into())]).await;
        assert_eq!(refused, Err((403, "preview_cross_origin".into())), "{site}");
    }
    assert_eq!(
        rig.victim.seen().len(),
        before,
        "the dev server saw none of them: {:?}",
        rig.victim.seen()
    );

    // B's own origin (in any case) passes, and so do clients that send no Origin at all (curl, scripts).
    for origin in [Some(b.clone()), Some(b.to_uppercase()), None] {
        let mut headers = vec![format!("Cookie: {cookie}")];
        headers.extend(origin.iter().map(|o| format!("Origin: {o}")));
        let (status, _, head) = rig.curl("POST", &format!("{b}/submit"), &headers);
        assert_eq!(status, 200, "{origin:?}: {head}");
        let mut headers = vec![("cookie", cookie.clone())];
        headers.extend(origin.iter().map(|o| ("origin", o.clone())));
        assert_eq!(
            ws(&rig, &b, &headers).await,
            Ok("through curl's cousin".into()),
            "{origin:?}"
        );
    }

    // Each refusal is audited, with the person and the sandbox whose session was used.
    crate::rigs::process::signal_and_wait(child, Signal::SIGTERM).await;
    let refused: Vec<Value> = rig
        .audit()
        .into_iter()
        .filter(|r| r["reason"] == "preview_cross_origin")
        .collect();
    assert!(refused.len() >= foreign.len() * 6 + 4, "{refused:#?}");
    for r in &refused {
        assert_eq!(
            (&r["sandbox"], &r["user"], &r["decision"], &r["status"]),
            (
                &Value::from("sb1"),
                &Value::from("carol"),
                &Value::from("deny"),
                &Value::from(403)
            ),
            "{r}"
        );
    }
}

/// What the attacker's dev server tries to set: cordon's cookie in every spelling, and cookies for the parent
/// domain (which would reach every preview); only its own host-only cookie is its to set.
const TOSS: &[&str] = &[
    "cordon_preview=evil; Domain=preview.localhost; Path=/",
    "__Host-cordon_preview=evil; Secure; Path=/",
    "__Secure-cordon_preview=evil; Secure; Domain=preview.localhost; Path=/",
    "CORDON_PREVIEW=evil; Domain=.preview.localhost; Path=/",
    "=cordon_preview=evil; Domain=preview.localhost; Path=/",
    "sid=evil; Domain=PREVIEW.localhost; Path=/",
    "app=kept; Path=/",
];

#[tokio::test(flavor = "multi_thread")]
async fn a_dev_server_cannot_set_cordons_cookie_or_cookies_for_other_previews() {
    let (rig, child) = Rig::start(TOSS).await;
    let b = rig.origin("sb1", &rig.victim);
    let a = rig.origin("sb2", &rig.attacker);
    *rig.victim.page.lock().unwrap() = "<!doctype html><p>the person's app</p>".into();
    *rig.attacker.page.lock().unwrap() = toss_page(&b, &rig.link("sb1", &rig.victim));

    // In Chromium: after A's dev server and A's page tried to toss cookies, B still opens with the session,
    // and B's dev server gets none of them.
    let dom = chromium(&rig.link("sb2", &rig.attacker));
    assert!(dom.contains("done"), "{dom}");
    let seen = rig.victim.seen();
    let after = seen
        .iter()
        .find(|s| s.starts_with("GET /after "))
        .unwrap_or_else(|| panic!("B's session still works after A's cookies: {seen:?}"));
    assert!(!after.contains("evil"), "{after}");

    // On the wire: of A's Set-Cookie lines, only its host-only cookie is left.
    let cookie = rig.session(&rig.link("sb2", &rig.attacker));
    let (status, _, head) = rig.curl("GET", &format!("{a}/toss"), &[format!("Cookie: {cookie}")]);
    assert_eq!(status, 200, "{head}");
    let set: Vec<&str> = head.lines().filter_map(|l| l.strip_prefix("set-cookie: ")).collect();
    assert_eq!(set, ["app=kept; Path=/"], "{head}");

    // The session lives in `__Host-cordon_preview` only: the same token under another name is refused.
    let b_cookie = rig.session(&rig.link("sb1", &rig.victim));
    let token = b_cookie.strip_prefix("__Host-cordon_preview=").unwrap();
    let (status, reason, _) = rig.curl("GET", &format!("{b}/"), &[format!("Cookie: cordon_preview={token}")]);
    assert_eq!((status, reason.as_str()), (401, "preview_login"));
    let tossed = format!("Cookie: cordon_preview=evil; {b_cookie}; cordon_preview=evil2");
    assert_eq!(rig.curl("GET", &format!("{b}/"), &[tossed]).0, 200);

    // What was stripped is audited, by name.
    crate::rigs::process::signal_and_wait(child, Signal::SIGTERM).await;
    let stripped: Vec<Value> = rig
        .audit()
        .into_iter()
        .filter(|r| r["path"] == "/toss" && r["sandbox"] == "sb2")
        .collect();
    assert!(stripped.len() >= 2, "Chromium's and curl's: {stripped:#?}");
    for r in &stripped {
        assert_eq!(
            r["set_cookie_stripped"],
            serde_json::json!([
                "cordon_preview",
                "__Host-cordon_preview",
                "__Secure-cordon_preview",
                "CORDON_PREVIEW",
                "cordon_preview",
                "sid"
            ]),
            "{r}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_previews_own_page_still_uses_its_websocket_and_posts() {
    let (rig, child) = Rig::start(&[]).await;
    let b = rig.origin("sb1", &rig.victim);
    *rig.victim.page.lock().unwrap() = OWN_PAGE.into();
    let dom = chromium(&rig.link("sb1", &rig.victim));
    assert!(dom.contains("ws: echo own page"), "{dom}");
    assert!(dom.contains("post: posted"), "{dom}");
    let seen = rig.victim.seen();
    let posts = seen
        .iter()
        .filter(|s| s.starts_with(&format!("POST /submit origin={b} ")))
        .count();
    assert_eq!(posts, 2, "the form and the fetch: {seen:?}");
    assert!(seen.iter().any(|s| s == "ws own page"), "{seen:?}");
    crate::rigs::process::signal_and_wait(child, Signal::SIGTERM).await;
}
