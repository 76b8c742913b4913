use super::*;

fn refusal(code: &'static str, status: u16) -> DryRefusal {
    DryRefusal {
        status,
        code,
        message: String::new(),
        deny: true,
    }
}

#[test]
fn the_first_refusal_ends_it_as_live_traffic_would() {
    let notes = [
        Note::Refused(refusal("dot_segment", 400)),
        Note::Decided {
            rule: Some(0),
            deny: None,
            mode: Mode::Enforce,
            refused: None,
        },
        Note::Credential("api".into(), CredentialUse::Applied("header authorization".into())),
    ];
    let end = Ending::of(&notes);
    assert_eq!(end.decision, Verdict::Deny);
    assert_eq!(
        (end.reason, end.status, end.rule),
        (Some("dot_segment"), Some(400), None)
    );
    assert!(end.credentials.is_empty());
}

#[test]
fn an_allowed_request_names_its_rule_and_credentials() {
    let notes = [
        Note::Decided {
            rule: Some(2),
            deny: None,
            mode: Mode::Enforce,
            refused: None,
        },
        Note::Credential("api".into(), CredentialUse::Applied("header authorization".into())),
        Note::Credential("other".into(), CredentialUse::NotBound),
    ];
    let end = Ending::of(&notes);
    assert_eq!((end.decision, end.rule, end.status), (Verdict::Allow, Some(2), None));
    assert_eq!(end.credentials, vec!["api".to_string()]);
}
