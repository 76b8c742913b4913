//! What the person deciding a held MCP call reads: its tool and its whole arguments, however long (the body's
//! excerpt stops at 256 characters), pretty-printed, escaped, in a box that scrolls.

use fantoccini::Locator;
use serde_json::{Value, json};

use crate::rigs::browser::browser;
use crate::rigs::console::{console_rig, sign_in};
use crate::rigs::wait::TimedChild;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_held_mcp_call_shows_its_whole_arguments_escaped() {
    let mut rig = console_rig(false).await;
    let anna = browser().await;
    sign_in(&rig, &anna, "anna").await;
    // Harmless first, then far past 256 bytes what the approver must not miss.
    let arguments = json!({
        "issue": 7,
        "body": "Thanks, looks good!",
        "padding": "x".repeat(3000),
        "nested": { "html": "<img src=x onerror=\"window.pwned=1\"><script>window.pwned=2</script>",
                    "bidi": "evil\u{202e}txt.exe", "lines": "one\ntwo" },
        "zz_tail": "ALSO-DELETE-THE-REPOSITORY",
    });
    let call = rig.mcp_call("add_comment", &arguments);
    let held = rig.wait_pending(1).await;
    let id = held[0]["id"].as_str().unwrap().to_owned();
    // The admin API has them whole too.
    let calls = &held[0]["calls"];
    assert_eq!(calls[0]["tool"], "add_comment", "{held:?}");
    let text = calls[0]["arguments"].as_str().unwrap();
    assert!(text.contains("ALSO-DELETE-THE-REPOSITORY"), "{text}");
    assert!(
        text.contains("evil\\u{202e}txt.exe") && !text.contains('\u{202e}'),
        "{text}"
    );
    let excerpt = held[0]["excerpt"].as_str().unwrap();
    assert!(
        !excerpt.contains("ALSO-DELETE"),
        "the body's excerpt alone would hide it: {excerpt}"
    );

    let card = anna.wait_for(&format!("article[data-approval='{id}']"), 20).await;
    let shown = card.text().await.unwrap();
    assert!(shown.contains("Tool call add_comment"), "{shown}");
    let pre = card.find(Locator::Css("pre.arguments")).await.unwrap();
    // The box scrolls: what is below is read by scrolling it.
    let (overflow, tall): (Value, Value) = (
        anna.client
            .execute(
                "return getComputedStyle(document.querySelector('pre.arguments')).overflowY;",
                vec![],
            )
            .await
            .unwrap(),
        anna.client
            .execute(
                "const p = document.querySelector('pre.arguments'); return p.scrollHeight > p.clientHeight;",
                vec![],
            )
            .await
            .unwrap(),
    );
    assert_eq!((overflow, tall), (Value::from("auto"), Value::from(true)));
    let whole = anna
        .client
        .execute("return document.querySelector('pre.arguments').textContent;", vec![])
        .await
        .unwrap();
    let whole = whole.as_str().unwrap();
    for part in [
        "\"issue\": 7",
        "\"zz_tail\": \"ALSO-DELETE-THE-REPOSITORY\"",
        "<script>window.pwned=2</script>",
        "evil\\u{202e}txt.exe",
        "\"lines\": \"one\\ntwo\"",
        &"x".repeat(3000),
    ] {
        assert!(whole.contains(part), "the arguments lack {part:?}:\n{whole}");
    }
    assert!(whole.lines().count() > 8, "pretty-printed, a member a line:\n{whole}");
    assert!(pre.find(Locator::Css("img, script")).await.is_err(), "markup is text");
    let pwned = anna
        .client
        .execute("return window.pwned === undefined;", vec![])
        .await
        .unwrap();
    assert_eq!(pwned, Value::from(true));

    card.find(Locator::Css("button[value=deny]"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    anna.wait_text("Decided.", 10).await;
    tokio::task::spawn_blocking(move || call.timed_wait_with_output().unwrap())
        .await
        .unwrap();
    anna.close().await;
    rig.stop().await;
}
