use super::*;

fn row() -> HeldRow {
    HeldRow {
        generation: 7,
        token: vec![1],
        access: None,
        lease: None,
        dead: None,
    }
}

const NOW: i64 = 1_000_000_000;

#[test]
fn the_decision_on_a_row() {
    assert!(matches!(decide(None, NOW, "me"), Step::NotSeeded));
    let dead = HeldRow {
        dead: Some("invalid_grant".into()),
        ..row()
    };
    assert!(matches!(decide(Some(&dead), NOW, "me"), Step::Dead(w) if w == "invalid_grant"));
    // A stored access token good past the margin is used; one within it is refreshed.
    let fresh = HeldRow {
        access: Some((vec![2], NOW + FRESH_MARGIN_MS + 1)),
        ..row()
    };
    assert!(matches!(
        decide(Some(&fresh), NOW, "me"),
        Step::Fresh { generation: 7, .. }
    ));
    let due = HeldRow {
        access: Some((vec![2], NOW + FRESH_MARGIN_MS)),
        ..row()
    };
    assert!(matches!(
        decide(Some(&due), NOW, "me"),
        Step::Take {
            generation: 7,
            stale: false,
            ..
        }
    ));
    // Another replica's live lease: wait; an expired one (it died): take over, knowing it is a retry.
    let leased = HeldRow {
        lease: Some((NOW + 1, "other".into())),
        ..row()
    };
    assert!(matches!(decide(Some(&leased), NOW, "me"), Step::Busy));
    assert!(matches!(decide(Some(&leased), NOW, "other"), Step::Take { .. }));
    let expired = HeldRow {
        lease: Some((NOW, "other".into())),
        ..row()
    };
    assert!(matches!(
        decide(Some(&expired), NOW, "me"),
        Step::Take { stale: true, .. }
    ));
    // A dead mark wins over everything else.
    let both = HeldRow {
        dead: Some("x".into()),
        ..fresh
    };
    assert!(matches!(decide(Some(&both), NOW, "me"), Step::Dead(_)));
}
