#![expect(clippy::unwrap_used, reason = "tests")]
#![expect(clippy::panic, reason = "tests")]

use std::future::Future;
use std::time::Duration;

use super::shown::MAX_EXCERPT;
use super::*;

const MINUTE: Duration = Duration::from_secs(60);

/// One incarnation of sandbox `id` (of user alice, policy default).
pub(super) fn incarnation(id: &str, nonce: &str) -> std::sync::Arc<Sandbox> {
    std::sync::Arc::new(Sandbox::new(
        id.into(),
        "alice".to_string(),
        "default".to_string(),
        crate::identity::Origin::Api {
            nonce: nonce.to_string(),
            expires: i64::MAX,
        },
    ))
}

/// A POST to api.github.com:443 `path` from sandbox `sandbox` (its first incarnation), asked by rule 3.
pub(super) fn ask(sandbox: &str, path: &str) -> HeldRequest {
    let body = b"{\"ref\":\"main\"}";
    HeldRequest {
        who: incarnation(sandbox, "n1"),
        sandbox: sandbox.into(),
        user: "alice".to_string(),
        policy: "default".to_string(),
        method: "POST".to_string(),
        host: "api.github.com".to_string(),
        port: 443,
        path: path.to_string(),
        query: None,
        shown_query: None,
        url: format!("https://api.github.com{path}"),
        headers: vec![],
        body: BodySeen {
            length: body.len() as u64,
            sha256: hex::encode(ring::digest::digest(&ring::digest::SHA256, body)),
        },
        excerpt: excerpt(body),
        rule: 3,
        rule_fingerprint: "rule-3".to_string(),
        tools: None,
        calls: None,
        operations: None,
        spent: None,
    }
}

/// Wait (without letting paused time run) until `n` asks are pending.
async fn until_pending(approvals: &Approvals, n: usize) {
    while approvals.pending_count() < n {
        tokio::task::yield_now().await;
    }
}

/// Run `ask` while `decide` acts once it is pending; returns the outcome and what `decide` returned.
async fn ask_and<T>(approvals: &Approvals, a: HeldRequest, decide: impl Future<Output = T>) -> (Resolution, T) {
    tokio::join!(approvals.ask(a), async {
        until_pending(approvals, 1).await;
        decide.await
    })
}

fn only_id(approvals: &Approvals) -> String {
    let pending = approvals.pending();
    assert_eq!(pending.len(), 1);
    pending[0].id.clone()
}

#[tokio::test(start_paused = true)]
async fn allow_once_wakes_the_ask_and_removes_it() {
    let approvals = Approvals::new(8, MINUTE, None);
    let (outcome, decided) = ask_and(&approvals, ask("sb-1", "/repos/x/git/refs"), async {
        let pending = approvals.pending();
        assert_eq!(pending.len(), 1);
        let p = &pending[0];
        assert!(p.id.starts_with("ap-") && p.id.len() == 19, "{}", p.id);
        assert_eq!(p.ask, ask("sb-1", "/repos/x/git/refs"));
        assert_eq!(p.ask.excerpt, "{\"ref\":\"main\"}");
        assert!(p.asked_at < p.expires_at, "{} {}", p.asked_at, p.expires_at);
        tokio::time::advance(Duration::from_secs(5)).await;
        approvals.decide(&p.id, Ruling::Allow, Reach::Once, "bob").unwrap()
    })
    .await;
    let Resolution::Allowed { id, decision, waited } = outcome else {
        panic!("{outcome:?}")
    };
    assert_eq!(id, decided.id);
    assert_eq!(
        (decision.verdict, decision.scope, decision.by.as_str()),
        (Ruling::Allow, Reach::Once, "bob")
    );
    assert!(humantime::parse_rfc3339(&decision.at).is_ok(), "{}", decision.at);
    assert_eq!(waited, Duration::from_secs(5));
    assert_eq!(approvals.pending_count(), 0);
    assert!(approvals.grants().is_empty());
    assert_eq!(
        approvals.decide(&id, Ruling::Allow, Reach::Once, "bob"),
        Err(DecideError::NotFound(id.clone()))
    );
}

#[tokio::test(start_paused = true)]
async fn deny_ends_denied() {
    let approvals = Approvals::new(8, MINUTE, None);
    let (outcome, _) = ask_and(&approvals, ask("sb-1", "/x"), async {
        approvals
            .decide(&only_id(&approvals), Ruling::Deny, Reach::Once, "bob")
            .unwrap()
    })
    .await;
    assert!(
        matches!(outcome, Resolution::Denied { ref decision, .. } if decision.by == "bob"),
        "{outcome:?}"
    );
    assert_eq!(approvals.pending_count(), 0);
}

#[tokio::test(start_paused = true)]
async fn nobody_deciding_times_out() {
    let approvals = Approvals::new(8, MINUTE, None);
    let outcome = approvals.ask(ask("sb-1", "/x")).await;
    let Resolution::TimedOut { id, waited } = outcome else {
        panic!("{outcome:?}")
    };
    assert!(id.starts_with("ap-"));
    assert_eq!(waited, MINUTE);
    assert_eq!(approvals.pending_count(), 0);
    assert_eq!(
        approvals.decide(&id, Ruling::Allow, Reach::Once, "bob"),
        Err(DecideError::NotFound(id.clone()))
    );
}

#[tokio::test(start_paused = true)]
async fn full_when_max_pending_reached() {
    let approvals = Approvals::new(2, MINUTE, None);
    let (first, second, third) = tokio::join!(
        approvals.ask(ask("sb-1", "/a")),
        approvals.ask(ask("sb-1", "/b")),
        async {
            until_pending(&approvals, 2).await;
            let third = approvals.ask(ask("sb-2", "/c")).await;
            let pending = approvals.pending();
            assert_eq!(
                pending.iter().map(|p| p.ask.path.as_str()).collect::<Vec<_>>(),
                ["/a", "/b"]
            );
            for p in pending {
                approvals.decide(&p.id, Ruling::Deny, Reach::Once, "bob").unwrap();
            }
            third
        }
    );
    assert_eq!(third, Resolution::Full);
    assert!(matches!(first, Resolution::Denied { .. }) && matches!(second, Resolution::Denied { .. }));
    let none = Approvals::new(0, MINUTE, None);
    assert_eq!(none.ask(ask("sb-1", "/a")).await, Resolution::Full);
}

#[tokio::test(start_paused = true)]
async fn decide_checks_its_input() {
    let approvals = Approvals::new(8, MINUTE, None);
    assert_eq!(
        approvals.decide("ap-0000000000000000", Ruling::Allow, Reach::Once, "bob"),
        Err(DecideError::NotFound("ap-0000000000000000".to_string()))
    );
    let (outcome, _) = ask_and(&approvals, ask("sb-1", "/x"), async {
        let id = only_id(&approvals);
        let long = "b".repeat(129);
        for by in ["", "  ", "bo\nb", long.as_str()] {
            let result = approvals.decide(&id, Ruling::Allow, Reach::Once, by);
            assert!(matches!(result, Err(DecideError::Invalid(_))), "{by:?}: {result:?}");
        }
        let result = approvals.decide(&id, Ruling::Deny, Reach::Always, "bob");
        let Err(DecideError::Invalid(message)) = result else {
            panic!("{result:?}")
        };
        assert!(message.contains("always and exact apply to allow only"), "{message}");
        // Still pending after the refusals.
        assert_eq!(only_id(&approvals), id);
        approvals
            .decide(&id, Ruling::Allow, Reach::Once, &"b".repeat(128))
            .unwrap();
    })
    .await;
    assert!(matches!(outcome, Resolution::Allowed { .. }), "{outcome:?}");
}

#[tokio::test(start_paused = true)]
async fn allow_always_grants_until_revoked() {
    let approvals = Approvals::new(8, MINUTE, None);
    let (outcome, _) = ask_and(&approvals, ask("sb-1", "/repos/x/git/refs"), async {
        approvals
            .decide(&only_id(&approvals), Ruling::Allow, Reach::Always, "bob")
            .unwrap()
    })
    .await;
    let Resolution::Allowed { id: approval, .. } = outcome else {
        panic!("{outcome:?}")
    };
    let grants = approvals.grants();
    assert_eq!(grants.len(), 1);
    let grant = &grants[0];
    assert!(grant.id.starts_with("gr-") && grant.id.len() == 19, "{}", grant.id);
    assert_eq!(grant.approval, approval);
    assert_eq!((grant.sandbox.as_str(), grant.method.as_str()), ("sb-1", "POST"));
    assert_eq!(
        (grant.host.as_str(), grant.port, grant.path.as_str()),
        ("api.github.com", 443, "/repos/x/git/refs")
    );
    assert_eq!(grant.by, "bob");

    // The same request passes at once, whatever the body; the host is compared without regard to case.
    let mut same = ask("sb-1", "/repos/x/git/refs");
    same.excerpt = "something else".to_string();
    same.host = "API.GitHub.com".to_string();
    assert_eq!(
        approvals.ask(same).await,
        Resolution::Granted {
            grant: grant.id.clone()
        }
    );
    assert_eq!(approvals.pending_count(), 0);

    // Anything else asks (and times out here).
    let mut others = vec![ask("sb-1", "/repos/y/git/refs"), ask("sb-2", "/repos/x/git/refs")];
    others.push(HeldRequest {
        method: "DELETE".to_string(),
        ..ask("sb-1", "/repos/x/git/refs")
    });
    others.push(HeldRequest {
        port: 8443,
        ..ask("sb-1", "/repos/x/git/refs")
    });
    for other in others {
        assert!(matches!(approvals.ask(other).await, Resolution::TimedOut { .. }));
    }

    assert!(approvals.revoke_grant(&grant.id));
    assert!(!approvals.revoke_grant(&grant.id));
    assert!(approvals.grants().is_empty());
    let again = approvals.ask(ask("sb-1", "/repos/x/git/refs")).await;
    assert!(matches!(again, Resolution::TimedOut { .. }), "{again:?}");
}

#[tokio::test(start_paused = true)]
async fn identical_always_decisions_share_one_grant() {
    let approvals = Approvals::new(8, MINUTE, None);
    let (a, b, ()) = tokio::join!(
        approvals.ask(ask("sb-1", "/x")),
        approvals.ask(ask("sb-1", "/x")),
        async {
            until_pending(&approvals, 2).await;
            for p in approvals.pending() {
                approvals.decide(&p.id, Ruling::Allow, Reach::Always, "bob").unwrap();
            }
        }
    );
    assert!(matches!(a, Resolution::Allowed { .. }) && matches!(b, Resolution::Allowed { .. }));
    assert_eq!(approvals.grants().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn dropping_the_ask_withdraws_it() {
    let approvals = Approvals::new(8, MINUTE, None);
    let mut asking = Box::pin(approvals.ask(ask("sb-1", "/x")));
    assert!(tokio::time::timeout(Duration::from_secs(1), &mut asking).await.is_err());
    let id = only_id(&approvals);
    drop(asking);
    assert_eq!(approvals.pending_count(), 0);
    assert_eq!(
        approvals.decide(&id, Ruling::Allow, Reach::Always, "bob"),
        Err(DecideError::NotFound(id.clone()))
    );
    assert!(approvals.grants().is_empty());
}

#[tokio::test(start_paused = true)]
async fn forgetting_a_sandbox_denies_its_asks_and_drops_its_grants() {
    let approvals = Approvals::new(8, MINUTE, None);
    for sandbox in ["sb-1", "sb-2"] {
        let (outcome, _) = ask_and(&approvals, ask(sandbox, "/granted"), async {
            approvals
                .decide(&only_id(&approvals), Ruling::Allow, Reach::Always, "bob")
                .unwrap()
        })
        .await;
        assert!(matches!(outcome, Resolution::Allowed { .. }));
    }
    assert_eq!(approvals.grants().len(), 2);

    let (gone, kept, ()) = tokio::join!(
        approvals.ask(ask("sb-1", "/x")),
        approvals.ask(ask("sb-2", "/x")),
        async {
            until_pending(&approvals, 2).await;
            approvals.forget_sandbox(&crate::names::SandboxId::from("sb-1"));
            assert_eq!(
                approvals
                    .pending()
                    .iter()
                    .map(|p| p.ask.sandbox.as_str())
                    .collect::<Vec<_>>(),
                ["sb-2"]
            );
        }
    );
    let Resolution::Denied { decision, .. } = gone else {
        panic!("{gone:?}")
    };
    assert_eq!(
        (decision.verdict, decision.scope, decision.by.as_str()),
        (Ruling::Deny, Reach::Once, "cordon")
    );
    assert!(matches!(kept, Resolution::TimedOut { .. }), "{kept:?}");
    let grants = approvals.grants();
    assert_eq!(grants.iter().map(|g| g.sandbox.as_str()).collect::<Vec<_>>(), ["sb-2"]);
    assert!(matches!(
        approvals.ask(ask("sb-2", "/granted")).await,
        Resolution::Granted { .. }
    ));
}

#[test]
fn excerpts_are_the_bodys_first_characters_as_sent() {
    let body = [b"{\"k\":\"v\"}\r\n".as_slice(), &[0xff, 0x00], &[b'x'; 2000]].concat();
    let e = excerpt(&body);
    assert_eq!(e.chars().count(), MAX_EXCERPT);
    assert!(e.starts_with("{\"k\":\"v\"}\r\n\u{FFFD}\u{0}xxx"), "{e:?}");
    assert_eq!(excerpt(b""), "");
}

#[test]
fn decide_without_a_runtime_still_works() {
    // No webhook, no runtime: nothing to spawn, nothing to panic.
    let approvals = Approvals::new(8, Duration::MAX, None);
    assert!(matches!(
        approvals.decide("ap-x", Ruling::Allow, Reach::Once, "bob"),
        Err(DecideError::NotFound(_))
    ));
    approvals.forget_sandbox(&crate::names::SandboxId::from("sb-1"));
    assert_eq!(approvals.pending_count(), 0);
}

#[test]
fn serialized_forms() {
    let pending = Approval {
        id: "ap-1".to_string(),
        ask: ask("sb-1", "/x"),
        asked_at: "2026-01-01T00:00:00Z".to_string(),
        expires_at: "2026-01-01T00:05:00Z".to_string(),
    };
    let json = serde_json::to_value(&pending).unwrap();
    assert_eq!(json["id"], "ap-1");
    assert_eq!(json["sandbox"], "sb-1");
    assert_eq!(json["port"], 443);
    assert_eq!(json["rule"], 3);
    assert_eq!(json["expires_at"], "2026-01-01T00:05:00Z");
    assert!(json.get("ask").is_none());
    let verdict: Ruling = serde_json::from_str("\"deny\"").unwrap();
    let scope: Reach = serde_json::from_str("\"always\"").unwrap();
    assert_eq!((verdict, scope), (Ruling::Deny, Reach::Always));
    assert_eq!(serde_json::to_value(Ruling::Allow).unwrap(), "allow");
}

#[test]
fn shareable_across_tasks() {
    fn send_sync<T: Send + Sync>(_: &T) {}
    fn send<T: Send>(_: &T) {}
    let approvals = Approvals::new(8, MINUTE, None);
    send_sync(&approvals);
    send(&approvals.ask(ask("sb-1", "/x")));
}
