#![expect(clippy::unwrap_used, reason = "tests")]
use super::*;

#[test]
fn models_match_exactly_and_by_glob() {
    let r = ModelApiRules::new(Dialect::Openai, Some(vec!["gpt-4o-mini".into(), "gpt-4.1*".into()])).unwrap();
    assert!(r.allows("gpt-4o-mini"));
    assert!(r.allows("gpt-4.1-nano"));
    for no in ["GPT-4o-mini", "gpt-4o", "gpt-4o-mini ", "o3", ""] {
        assert!(!r.allows(no), "{no:?}");
    }
    assert!(ModelApiRules::new(Dialect::Openai, None).unwrap().allows("anything"));
}

#[test]
fn bad_lists_say_which_entry() {
    assert!(ModelApiRules::new(Dialect::Openai, Some(vec![])).is_err());
    let (i, e) = ModelApiRules::new(Dialect::Anthropic, Some(vec!["ok".into(), "bad name".into()])).unwrap_err();
    assert_eq!(i, 1);
    assert!(e.contains("bad name"), "{e}");
}

#[test]
fn within_holds_dialect_and_models() {
    let any = ModelApiRules::new(Dialect::Openai, None).unwrap();
    let some = ModelApiRules::new(Dialect::Openai, Some(vec!["gpt-4o-mini".into()])).unwrap();
    let other = ModelApiRules::new(Dialect::Anthropic, None).unwrap();
    assert!(some.within(&any).is_ok());
    assert!(any.within(&some).is_err());
    assert!(some.within(&other).is_err());
    let glob = ModelApiRules::new(Dialect::Openai, Some(vec!["gpt-*".into()])).unwrap();
    assert!(some.within(&glob).is_ok());
    assert!(glob.within(&some).is_err());
}
