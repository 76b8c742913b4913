#![expect(clippy::unwrap_used, reason = "tests")]
#![expect(clippy::panic, reason = "tests")]

use std::time::Duration;

use super::super::tests::{ask, incarnation};
use super::super::*;

const MINUTE: Duration = Duration::from_secs(60);

/// HeldRequest `first`, allow it with `reach` once it is pending; the grant's id.
async fn granted(approvals: &Approvals, first: HeldRequest, reach: Reach) -> String {
    let (outcome, ()) = tokio::join!(approvals.ask(first), async {
        while approvals.pending_count() < 1 {
            tokio::task::yield_now().await;
        }
        let id = approvals.pending()[0].id.clone();
        approvals.decide(&id, Ruling::Allow, reach, "bob").unwrap();
    });
    assert!(matches!(outcome, Resolution::Allowed { .. }), "{outcome:?}");
    let grants = approvals.grants();
    assert_eq!(grants.len(), 1);
    assert_eq!(grants[0].reach, reach);
    grants[0].id.clone()
}

fn with_query_and_body(query: Option<&str>, body: &[u8]) -> HeldRequest {
    let mut a = ask("sb-1", "/api/send");
    a.query = query.map(String::from);
    a.shown_query = a.query.clone();
    a.body = BodySeen {
        length: body.len() as u64,
        sha256: hex::encode(ring::digest::digest(&ring::digest::SHA256, body)),
    };
    a
}

#[tokio::test(start_paused = true)]
async fn exact_passes_only_the_same_query_and_body() {
    let approvals = Approvals::new(8, MINUTE, None);
    let first = with_query_and_body(Some("to=bob&amount=5"), b"note=hello");
    let grant = granted(&approvals, first.clone(), Reach::Exact).await;
    assert_eq!(approvals.ask(first).await, Resolution::Granted { grant });
    for other in [
        with_query_and_body(Some("to=attacker&amount=99999"), b"note=hello"),
        with_query_and_body(None, b"note=hello"),
        with_query_and_body(Some("to=bob&amount=5"), b"note=hello, and more"),
    ] {
        assert!(matches!(approvals.ask(other).await, Resolution::TimedOut { .. }));
    }
}

#[tokio::test(start_paused = true)]
async fn always_passes_any_query_and_body_on_the_same_path() {
    let approvals = Approvals::new(8, MINUTE, None);
    let grant = granted(&approvals, with_query_and_body(Some("a=1"), b"x"), Reach::Always).await;
    let other = with_query_and_body(Some("to=attacker"), b"anything");
    assert_eq!(approvals.ask(other).await, Resolution::Granted { grant });
}

#[tokio::test(start_paused = true)]
async fn a_grant_belongs_to_one_incarnation_and_one_rule() {
    let approvals = Approvals::new(8, MINUTE, None);
    granted(&approvals, ask("gx", "/x"), Reach::Always).await;
    // The same id created again (another nonce, another user): not covered.
    let mut again = ask("gx", "/x");
    again.who = incarnation("gx", "n2");
    again.user = "bob".to_string();
    assert!(matches!(approvals.ask(again).await, Resolution::TimedOut { .. }));
    // The rule was edited: not covered.
    let mut edited = ask("gx", "/x");
    edited.rule_fingerprint = "rule-3-edited".to_string();
    assert!(matches!(approvals.ask(edited).await, Resolution::TimedOut { .. }));
    // A sweep that finds the incarnation gone drops the grant.
    approvals.sweep(|who, _, _| who.incarnation() != "gx#n1");
    assert!(approvals.grants().is_empty());
}

/// A sandbox of the configuration file, `id` of `user`.
fn declared(id: &str, user: &str) -> std::sync::Arc<crate::identity::Sandbox> {
    std::sync::Arc::new(crate::identity::Sandbox::new(
        id.into(),
        user.to_string(),
        "default".to_string(),
        crate::identity::Origin::Config,
    ))
}

#[tokio::test(start_paused = true)]
async fn a_grant_to_a_sandbox_of_the_file_does_not_cover_the_id_declared_for_another_user() {
    let approvals = Approvals::new(8, MINUTE, None);
    let mut first = ask("fx", "/x");
    first.who = declared("fx", "alice");
    granted(&approvals, first.clone(), Reach::Always).await;
    assert!(matches!(approvals.ask(first).await, Resolution::Granted { .. }));
    // A reload gave fx to bob: before any sweep, alice's grant answers nothing of bob's.
    let mut again = ask("fx", "/x");
    again.who = declared("fx", "bob");
    again.user = "bob".to_string();
    assert!(matches!(approvals.ask(again).await, Resolution::TimedOut { .. }));
}

#[tokio::test(start_paused = true)]
async fn a_sweep_denies_the_asks_of_what_is_gone() {
    let approvals = Approvals::new(8, MINUTE, None);
    let (gone, kept, ()) = tokio::join!(
        approvals.ask(ask("sb-1", "/x")),
        approvals.ask(ask("sb-2", "/x")),
        async {
            while approvals.pending_count() < 2 {
                tokio::task::yield_now().await;
            }
            approvals.sweep(|who, _, _| who.id.as_str() != "sb-1");
        }
    );
    let Resolution::Denied { decision, .. } = gone else {
        panic!("{gone:?}")
    };
    assert_eq!(decision.by, "cordon");
    assert!(matches!(kept, Resolution::TimedOut { .. }), "{kept:?}");
}

#[tokio::test(start_paused = true)]
async fn one_sandbox_or_one_user_cannot_fill_the_queue() {
    let approvals = Approvals::new(100, MINUTE, None).with_caps(2, 3);
    let mut other_user = ask("sb-9", "/x");
    other_user.user = "carol".to_string();
    let (a, b, c, d, e, f, ()) = tokio::join!(
        approvals.ask(ask("sb-1", "/a")),
        approvals.ask(ask("sb-1", "/b")),
        async {
            while approvals.pending_count() < 2 {
                tokio::task::yield_now().await;
            }
            tokio::time::advance(Duration::from_secs(20)).await;
            // The sandbox's third: refused, with when its oldest ask times out.
            approvals.ask(ask("sb-1", "/c")).await
        },
        async {
            while approvals.pending_count() < 2 {
                tokio::task::yield_now().await;
            }
            approvals.ask(ask("sb-2", "/a")).await
        },
        async {
            while approvals.pending_count() < 3 {
                tokio::task::yield_now().await;
            }
            // The user's fourth, from yet another sandbox: refused.
            approvals.ask(ask("sb-3", "/a")).await
        },
        async {
            while approvals.pending_count() < 3 {
                tokio::task::yield_now().await;
            }
            // Another user is not held back.
            approvals.ask(other_user).await
        },
        async {
            while approvals.pending_count() < 4 {
                tokio::task::yield_now().await;
            }
        }
    );
    assert_eq!(
        c,
        Resolution::Limited {
            over: Over::Sandbox,
            max: 2,
            retry_after: Duration::from_secs(40)
        }
    );
    assert!(
        matches!(
            e,
            Resolution::Limited {
                over: Over::User,
                max: 3,
                ..
            }
        ),
        "{e:?}"
    );
    for held in [a, b, d, f] {
        assert!(matches!(held, Resolution::TimedOut { .. }), "{held:?}");
    }
}
