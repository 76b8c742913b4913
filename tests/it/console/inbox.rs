//! The inbox as people use it: an approver signs in, a request held by a sandbox appears without a reload, one
//! click approves it, the sandbox's request completes, and the record names the approver's verified identity; a
//! viewer sees it without buttons and gets a 403 when posting anyway; forms from other pages (another site, or
//! another origin of this host) decide nothing.

use std::convert::Infallible;
use std::time::Duration;

use bytes::Bytes;
use fantoccini::Locator;
use http_body_util::Full;
use serde_json::Value;

use super::screenshot_path;
use crate::rigs::browser::browser;
use crate::rigs::console::{ConsoleRig, console_rig, session_of, sign_in};
use crate::rigs::wait::{TimedChild, Within};

/// A raw HTTP/1.1 POST of a form to the console: status and body.
pub(crate) async fn post_form(
    rig: &ConsoleRig,
    path: &str,
    cookie: &str,
    origin: Option<&str>,
    form: &str,
) -> (u16, String) {
    let origin = origin.map(|o| format!("Origin: {o}\r\n")).unwrap_or_default();
    let req = format!(
        "POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nCookie: {cookie}\r\n{origin}Content-Type: \
         application/x-www-form-urlencoded\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{form}",
        rig.console,
        form.len()
    );
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(("127.0.0.1", rig.console))
        .await
        .unwrap();
    s.write_all(req.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    crate::rigs::wait::within(
        &format!("the console's answer on 127.0.0.1:{}", rig.console),
        std::time::Duration::from_secs(30),
        s.read_to_end(&mut out),
    )
    .await
    .unwrap();
    let text = String::from_utf8_lossy(&out).into_owned();
    let status = text.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    (status, text)
}

/// A page on `ip` that posts a form to `action` as soon as it loads (its script is its own file: the page has a CSP
/// of its own too).
async fn forger(ip: &str, action: String) -> u16 {
    let listener = tokio::net::TcpListener::bind((ip, 0)).await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let action = action.clone();
            tokio::spawn(async move {
                let svc = hyper::service::service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                    let action = action.clone();
                    async move {
                        let (kind, body) = if req.uri().path() == "/go.js" {
                            ("text/javascript", "document.getElementById('f').submit();".to_owned())
                        } else {
                            (
                                "text/html",
                                format!(
                                    "<!doctype html><form id=f method=post action=\"{action}\">\
                                     <input name=act value=allow_always><input name=confirm value=yes>\
                                     <input name=csrf value=guessed></form><script src=/go.js></script>"
                                ),
                            )
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
    port
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_approver_sees_a_held_request_live_approves_it_and_the_record_names_them() {
    let mut rig = console_rig(false).await;
    let anna = browser().await;
    let landed = sign_in(&rig, &anna, "anna").await;
    assert!(landed.contains("anna@example.test"), "{landed}");
    assert!(landed.contains("Nothing is waiting"), "{landed}");
    // The page's script is connected to the event stream; mark the page so a reload would show.
    anna.client
        .wait()
        .at_most(Duration::from_secs(10))
        .for_element(Locator::Css("html[data-live=on]"))
        .await
        .unwrap();
    anna.client
        .execute("window.cordonMark = 'same page';", vec![])
        .await
        .unwrap();
    let resources = |b: &crate::rigs::browser::Browser| {
        let client = b.client.clone();
        async move {
            client
                .execute("return performance.getEntriesByType('resource').length;", vec![])
                .await
                .unwrap()
                .as_u64()
                .unwrap()
        }
    };
    let before = resources(&anna).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(
        resources(&anna).await,
        before,
        "an idle page fetches nothing: it waits on its event stream"
    );

    let pay = rig.pay(r#"{"amount": 1200, "to": "acme"}"#);
    let held = rig.wait_pending(1).await;
    let id = held[0]["id"].as_str().unwrap().to_owned();
    let card = anna.wait_for(&format!("article[data-approval='{id}']"), 20).await;
    let shown = card.text().await.unwrap();
    for part in [
        "POST",
        "/pay?invoice=42",
        "sb1",
        "alice",
        "pay",
        "content-type",
        "application/json",
        "\"amount\": 1200",
    ] {
        assert!(shown.contains(part), "the card lacks {part:?}:\n{shown}");
    }
    assert!(!shown.contains("tok1"), "the proxy credential is never shown:\n{shown}");
    let mark = anna.client.execute("return window.cordonMark;", vec![]).await.unwrap();
    assert_eq!(mark, Value::from("same page"), "the request appeared without a reload");
    std::fs::write(screenshot_path(&rig, "console-inbox.png"), anna.screenshot().await).unwrap();

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
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "200",
        "the sandbox's request went on"
    );
    let decisions = anna.wait_text("allow once", 10).await;
    assert!(decisions.contains("anna@example.test"), "{decisions}");

    // Deny, one click: the sandbox's request is refused.
    let pay = rig.pay(r#"{"amount": 9999, "to": "mallory"}"#);
    let second = rig.wait_pending(1).await[0]["id"].as_str().unwrap().to_owned();
    let card = anna.wait_for(&format!("article[data-approval='{second}']"), 20).await;
    card.find(Locator::Css("button[value=deny]"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    anna.wait_text("Decided.", 10).await;
    let out = tokio::task::spawn_blocking(move || pay.timed_wait_with_output().unwrap())
        .await
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "403");

    // Always asks to confirm, saying what it lets through; confirmed, the request goes on and the next one like
    // it passes without asking.
    let pay = rig.pay(r#"{"amount": 7}"#);
    let third = rig.wait_pending(1).await[0]["id"].as_str().unwrap().to_owned();
    let card = anna.wait_for(&format!("article[data-approval='{third}']"), 20).await;
    card.find(Locator::Css("button[value=allow_always]"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    let confirm = anna.wait_text("Allow always?", 10).await;
    assert!(confirm.contains("whatever its query and body"), "{confirm}");
    assert_eq!(
        rig.pending().await.len(),
        1,
        "nothing is decided before the confirmation"
    );
    anna.wait_for("#confirm-always", 10).await.click().await.unwrap();
    anna.wait_text("Decided.", 10).await;
    let out = tokio::task::spawn_blocking(move || pay.timed_wait_with_output().unwrap())
        .await
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "200");
    let again = rig.pay(r#"{"amount": 8}"#);
    let out = tokio::task::spawn_blocking(move || again.timed_wait_with_output().unwrap())
        .await
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "200",
        "the standing grant lets it through"
    );
    let decisions = anna.wait_text("allow always", 10).await;
    assert!(decisions.contains("deny once"), "{decisions}");

    // The sandboxes page: the sandbox with its latest refusal, and no revoke button for an approver.
    let refused = crate::rigs::process::curl()
        .args(["-o", "/dev/null", "-w", "%{http_code}"])
        .args(["-x", &format!("http://sb1:tok1@127.0.0.1:{}", rig.proxy)])
        .arg(format!("http://pay.test:{}/admin/users", rig.up.addr.port()))
        .timed_output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&refused.stdout), "403");
    let mine = session_of(&anna).await;
    anna.client
        .goto(&rig.url(&format!("{}sandboxes", mine.base)))
        .await
        .unwrap();
    anna.wait_for("tr[data-sandbox='sb1']", 10).await;
    let refusals = anna
        .wait_for("table.refusals[data-sandbox='sb1']", 10)
        .await
        .text()
        .await
        .unwrap();
    assert!(
        refusals.contains("GET pay.test") && refusals.contains("/admin/users"),
        "{refusals}"
    );
    assert!(anna.client.find(Locator::Css("form[action$='/revoke']")).await.is_err());

    // The approver's token cannot create sandboxes, through the binary's admin API.
    let (status, said) = rig
        .api(
            "POST",
            "/v1/sandboxes",
            &rig.token("apr"),
            r#"{"user": "bob", "policy": "pay"}"#,
        )
        .await;
    assert_eq!(status, 403, "{said}");
    assert!(
        said["error"]["message"]
            .as_str()
            .unwrap()
            .contains("needs the role admin or platform")
    );
    anna.close().await;

    let records = rig.stop().await;
    let signed_in = records
        .iter()
        .find(|r| r["kind"] == "admin" && r["admin"]["action"] == "sign_in" && r["decision"] == "allow")
        .expect("a sign-in record");
    assert_eq!(signed_in["admin"]["principal"], "person:anna@example.test");
    assert_eq!(signed_in["admin"]["via"], "oidc");
    assert!(signed_in["admin"]["detail"].as_str().unwrap().contains("\"anna\""));
    let decided = records
        .iter()
        .find(|r| r["admin"]["action"] == "approval_decided")
        .expect("a decision record");
    assert_eq!(decided["decision"], "allow");
    assert_eq!(decided["admin"]["principal"], "person:anna@example.test");
    assert_eq!(decided["admin"]["via"], "oidc");
    assert_eq!(decided["admin"]["roles"], serde_json::json!(["approver"]));
    assert_eq!(decided["approval"]["by"], "person:anna@example.test");
    assert_eq!(decided["approval"]["id"], id.as_str());
    assert_eq!(decided["path"], "/pay");
    let decisions: Vec<(&str, &str, &str)> = records
        .iter()
        .filter(|r| r["admin"]["action"] == "approval_decided")
        .map(|r| {
            let a = &r["approval"];
            (
                a["outcome"].as_str().unwrap(),
                a["scope"].as_str().unwrap(),
                a["by"].as_str().unwrap(),
            )
        })
        .collect();
    let anna = "person:anna@example.test";
    assert_eq!(
        decisions,
        [
            ("allow", "once", anna),
            ("deny", "once", anna),
            ("allow", "always", anna)
        ]
    );
    let granted = records
        .iter()
        .filter(|r| r["kind"] == "http" && r["approval"]["outcome"] == "granted")
        .count();
    assert_eq!(granted, 1, "the fourth request passed on the standing grant");
    let request = records
        .iter()
        .find(|r| r["kind"] == "http" && r["path"] == "/pay")
        .expect("the request's record");
    assert_eq!(request["approval"]["by"], "person:anna@example.test");
    assert_eq!(request["decision"], "allow");
    crate::rigs::audit::assert_schema(&rig.dir.path().join("audit.jsonl"));
    let (code, _, said) = crate::rigs::process::cordon(&[
        "audit",
        "verify",
        "--no-signatures",
        rig.dir.path().join("audit.jsonl").to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{said}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_viewer_sees_but_cannot_decide_and_forged_forms_decide_nothing() {
    let mut rig = console_rig(false).await;
    let pay = rig.pay(r#"{"amount": 5}"#);
    let held = rig.wait_pending(1).await;
    let id = held[0]["id"].as_str().unwrap().to_owned();

    let victor = browser().await;
    let landed = sign_in(&rig, &victor, "victor").await;
    assert!(landed.contains("victor@example.test"), "{landed}");
    let card = victor.wait_for(&format!("article[data-approval='{id}']"), 10).await;
    assert!(
        card.find(Locator::Css("form.decide")).await.is_err(),
        "a viewer gets no buttons"
    );
    assert!(card.text().await.unwrap().contains("You may look but not decide"));
    // Posting anyway, with the viewer's own session and CSRF token, from the console's origin: 403 naming the role.
    let v = session_of(&victor).await;
    let origin = rig.url("");
    let (status, page) = post_form(
        &rig,
        &format!("{}approvals/{id}", v.base),
        &v.cookie,
        Some(&origin),
        &format!("csrf={}&act=allow_once", v.csrf),
    )
    .await;
    assert_eq!(status, 403, "{page}");
    assert!(
        page.contains("approval_decided needs the role admin or approver"),
        "{page}"
    );
    victor.close().await;

    let anna = browser().await;
    sign_in(&rig, &anna, "anna").await;
    let mine = session_of(&anna).await;
    // The forms are given the session's place (as if it had leaked), which no other origin can read.
    let action = rig.url(&format!("{}approvals/{id}", mine.base));
    // Another site (127.0.0.3): the Strict session cookie is not sent, so the post has no session at all.
    let elsewhere = forger("127.0.0.3", action.clone()).await;
    anna.client
        .goto(&format!("http://127.0.0.3:{elsewhere}/"))
        .await
        .unwrap();
    anna.wait_text("Signed out", 10).await;
    // Another origin of the same site (127.0.0.1, another port): the cookie is sent, the token is not the session's.
    let same_site = forger("127.0.0.1", action).await;
    anna.client
        .goto(&format!("http://127.0.0.1:{same_site}/"))
        .await
        .unwrap();
    anna.wait_text("did not come from this console", 10).await;
    // The approver's own session, a right token, but the Origin of another page: refused too.
    anna.client.goto(&rig.url(&mine.base)).await.unwrap();
    anna.wait_for("#who", 10).await;
    let (status, page) = post_form(
        &rig,
        &format!("{}approvals/{id}", mine.base),
        &mine.cookie,
        Some("http://127.0.0.3:9"),
        &format!("csrf={}&act=allow_once", mine.csrf),
    )
    .await;
    assert_eq!(status, 403, "{page}");
    assert_eq!(rig.pending().await.len(), 1, "nothing decided the held request");
    anna.close().await;

    // Deny it properly through the admin API, so the sandbox's request ends.
    let (status, said) = rig
        .api(
            "POST",
            &format!("/v1/approvals/{id}"),
            &rig.token("apr"),
            r#"{"decision": "deny"}"#,
        )
        .await;
    assert_eq!(status, 200, "{said}");
    let out = tokio::task::spawn_blocking(move || pay.timed_wait_with_output().unwrap())
        .await
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "403");

    let records = rig.stop().await;
    let refused: Vec<(&str, &str, &str)> = records
        .iter()
        .filter(|r| r["kind"] == "admin" && r["decision"] == "deny")
        .map(|r| {
            (
                r["admin"]["action"].as_str().unwrap(),
                r["reason"].as_str().unwrap(),
                r["admin"]["principal"].as_str().unwrap_or("-"),
            )
        })
        .collect();
    assert_eq!(
        refused,
        [
            ("approval_decided", "admin_forbidden", "person:victor@example.test"),
            ("approval_decided", "admin_unauthorized", "-"),
            ("approval_decided", "admin_csrf", "person:anna@example.test"),
            ("approval_decided", "admin_csrf", "person:anna@example.test"),
        ],
        "{records:#?}"
    );
    let decided: Vec<&Value> = records
        .iter()
        .filter(|r| r["admin"]["action"] == "approval_decided" && r["decision"] == "allow")
        .collect();
    assert_eq!(decided.len(), 1, "only the admin API's deny decided it");
    assert_eq!(decided[0]["approval"]["outcome"], "deny");
    assert_eq!(decided[0]["admin"]["principal"], "apr");
}
