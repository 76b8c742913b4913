//! Open sessions and their event streams over time: a reload that lowers a person's roles (or removes a token)
//! applies to their open pages and streams at once, and one person's many streams leave the others theirs.

use std::time::{Duration, Instant};

use fantoccini::Locator;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::origins::raw;
use crate::rigs::browser::browser;
use crate::rigs::console::{ConsoleRig, ROLES, console_rig, session_of, sign_in};
use crate::rigs::wait::TimedChild;

/// An event stream opened with `cookie` at `base`: the connection and the answer's head so far.
async fn stream(rig: &ConsoleRig, base: &str, cookie: &str) -> (tokio::net::TcpStream, String) {
    let mut s = tokio::net::TcpStream::connect(("127.0.0.1", rig.console))
        .await
        .unwrap();
    let req = format!(
        "GET {base}events HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nCookie: {cookie}\r\nAccept: text/event-stream\r\n\r\n",
        rig.console
    );
    s.write_all(req.as_bytes()).await.unwrap();
    let head = read_until(&mut s, "\r\n\r\n", 10).await;
    (s, head)
}

/// Read from `s` until what was read holds `wanted` (or it ends), within `secs` seconds.
async fn read_until(s: &mut tokio::net::TcpStream, wanted: &str, secs: u64) -> String {
    let until = Instant::now() + Duration::from_secs(secs);
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while !String::from_utf8_lossy(&got).contains(wanted) {
        let left = until.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, s.read(&mut buf)).await {
            Ok(Ok(0)) | Err(_) => break,
            Ok(Ok(n)) => got.extend_from_slice(&buf[..n]),
            Ok(Err(e)) => panic!("the stream failed: {e}"),
        }
    }
    String::from_utf8_lossy(&got).into_owned()
}

/// A token's session, signed in through the sign-in form: its cookie and place.
async fn token_session(rig: &ConsoleRig, token: &str) -> (String, String) {
    let (_, login) = raw(rig, "GET", "/console/login", &[], "").await;
    let form = login
        .lines()
        .find_map(|l| l.strip_prefix("set-cookie: cordon_form="))
        .and_then(|v| v.split(';').next())
        .unwrap()
        .to_owned();
    let csrf = login
        .split("name=\"csrf\" value=\"")
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap();
    let headers = [
        format!("Cookie: cordon_form={form}"),
        format!("Origin: {}", rig.url("")),
    ];
    let (status, signed) = raw(
        rig,
        "POST",
        "/console/login/token",
        &headers,
        &format!("csrf={csrf}&token={token}"),
    )
    .await;
    assert_eq!(status, 303, "{signed}");
    let cookie = signed
        .lines()
        .find_map(|l| l.strip_prefix("set-cookie: "))
        .filter(|c| c.starts_with("cordon_console="))
        .and_then(|v| v.split(';').next())
        .unwrap()
        .to_owned();
    let base = signed
        .lines()
        .find_map(|l| l.strip_prefix("location: "))
        .unwrap()
        .trim()
        .to_owned();
    (cookie, base)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_reload_that_lowers_roles_applies_to_open_sessions_and_their_streams() {
    let mut rig = console_rig(false).await;
    let pay = rig.pay(r#"{"amount": 3}"#);
    let id = rig.wait_pending(1).await[0]["id"].as_str().unwrap().to_owned();
    let anna = browser().await;
    sign_in(&rig, &anna, "anna").await;
    let card = format!("article[data-approval='{id}']");
    anna.wait_for(&format!("{card} form.decide"), 20).await;
    anna.wait_for("html[data-live=on]", 10).await;
    anna.client
        .execute("window.cordonMark = 'same page';", vec![])
        .await
        .unwrap();
    let mine = session_of(&anna).await;
    let (apr, apr_base) = token_session(&rig, &rig.token("apr")).await;
    let (mut apr_stream, head) = stream(&rig, &apr_base, &apr).await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");

    // Anna's group now gives only viewer: her open page loses its buttons by itself, and a form posted anyway
    // is refused for the role it needs.
    let lowered = "{ cordon-approvers: [viewer], cordon-viewers: [viewer] }";
    let (status, said) = rig.reload(lowered, true, "").await;
    assert_eq!(status, 200, "{said}");
    anna.wait_text("You may look but not decide", 10).await;
    assert!(
        anna.client
            .find(Locator::Css(&format!("{card} form.decide")))
            .await
            .is_err()
    );
    let mark = anna.client.execute("return window.cordonMark;", vec![]).await.unwrap();
    assert_eq!(mark, Value::from("same page"), "the page followed without a reload");
    let headers = [format!("Cookie: {}", mine.cookie), format!("Origin: {}", rig.url(""))];
    let form = format!("csrf={}&act=allow_once", mine.csrf);
    let (status, page) = raw(&rig, "POST", &format!("{}approvals/{id}", mine.base), &headers, &form).await;
    assert_eq!(status, 403, "{page}");
    assert!(page.contains("needs the role admin or approver"), "{page}");
    assert!(page.contains("(viewer,"), "the page says the roles in force: {page}");

    // What takes a restart is refused, and nothing of the reload applies.
    let (status, said) = rig.reload(&format!("{ROLES}\n  session_ttl: 1h"), true, "").await;
    assert_ne!(status, 200, "{said}");
    assert!(said.to_string().contains("takes a restart"), "{said}");

    // Her group gives nothing now, and the apr token is gone: both sessions end, their streams say so at once.
    let (status, said) = rig.reload("{ cordon-viewers: [viewer] }", false, "").await;
    assert_eq!(status, 200, "{said}");
    let said = read_until(&mut apr_stream, "event: signed-out", 10).await;
    assert!(said.contains("event: signed-out"), "{said}");
    anna.wait_for("#token", 10).await;
    assert!(
        anna.client
            .current_url()
            .await
            .unwrap()
            .path()
            .ends_with("/console/login")
    );
    for (cookie, base) in [(&apr, &apr_base), (&mine.cookie, &mine.base)] {
        let (status, _) = raw(&rig, "GET", base, &[format!("Cookie: {cookie}")], "").await;
        assert_eq!(status, 303, "the session is over");
    }
    anna.close().await;
    rig.reload(ROLES, true, "").await;
    let (status, _) = rig
        .api(
            "POST",
            &format!("/v1/approvals/{id}"),
            &rig.token("admin"),
            r#"{"decision": "deny"}"#,
        )
        .await;
    assert_eq!(status, 200);
    tokio::task::spawn_blocking(move || pay.timed_wait_with_output().unwrap())
        .await
        .unwrap();
    let records = rig.stop().await;
    let refused = records
        .iter()
        .find(|r| r["reason"] == "admin_forbidden")
        .expect("the refused decision's record");
    assert_eq!(refused["admin"]["principal"], "person:anna@example.test");
    assert_eq!(refused["admin"]["roles"], serde_json::json!(["viewer"]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_persons_many_streams_leave_the_others_theirs() {
    let mut rig = console_rig(false).await;
    let victor = browser().await;
    sign_in(&rig, &victor, "victor").await;
    victor.wait_for("html[data-live=on]", 10).await;
    let v = session_of(&victor).await;
    // His page holds one stream; he may hold four in all, and the rest are refused, saying why.
    let mut open = Vec::new();
    let mut refused = 0;
    for _ in 0..40 {
        let (s, head) = stream(&rig, &v.base, &v.cookie).await;
        if head.starts_with("HTTP/1.1 200") {
            open.push(s);
        } else {
            assert!(head.starts_with("HTTP/1.1 429"), "{head}");
            refused += 1;
        }
    }
    assert_eq!((open.len(), refused), (3, 37));
    let (_, said) = raw(
        &rig,
        "GET",
        &format!("{}events", v.base),
        &[format!("Cookie: {}", v.cookie)],
        "",
    )
    .await;
    assert!(said.contains("4 console pages with live lists open already"), "{said}");

    // Another person's page is live all the same: a held request appears on it without a reload.
    let anna = browser().await;
    sign_in(&rig, &anna, "anna").await;
    anna.wait_for("html[data-live=on]", 10).await;
    anna.client
        .execute("window.cordonMark = 'same page';", vec![])
        .await
        .unwrap();
    let pay = rig.pay(r#"{"amount": 4}"#);
    let id = rig.wait_pending(1).await[0]["id"].as_str().unwrap().to_owned();
    anna.wait_for(&format!("article[data-approval='{id}'] form.decide"), 20)
        .await;
    let mark = anna.client.execute("return window.cordonMark;", vec![]).await.unwrap();
    assert_eq!(mark, Value::from("same page"));

    // A stream he closes is his again.
    drop(open.pop());
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        let (s, head) = stream(&rig, &v.base, &v.cookie).await;
        if head.starts_with("HTTP/1.1 200") {
            open.push(s);
            break;
        }
        assert!(
            Instant::now() < until,
            "the closed stream's place never came back: {head}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    victor.close().await;
    anna.close().await;
    let (status, _) = rig
        .api(
            "POST",
            &format!("/v1/approvals/{id}"),
            &rig.token("admin"),
            r#"{"decision": "deny"}"#,
        )
        .await;
    assert_eq!(status, 200);
    tokio::task::spawn_blocking(move || pay.timed_wait_with_output().unwrap())
        .await
        .unwrap();
    drop(open);
    rig.stop().await;
}
