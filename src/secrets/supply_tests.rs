use super::*;

#[test]
fn a_failure_is_kept_until_the_next_success_of_the_same_credential() {
    let s = Supply::default();
    s.note::<()>(
        "api",
        &Err("token issuer http://127.0.0.1:9/token is unavailable".into()),
    );
    s.note::<()>("git", &Ok(()));
    let first = s.failing();
    assert_eq!(first.keys().collect::<Vec<_>>(), ["api"]);
    // Failing again keeps when it began, and the latest reason.
    s.note::<()>("api", &Err("refused".into()));
    let again = s.failing();
    assert_eq!(again["api"].since, first["api"].since);
    assert_eq!(again["api"].error, "refused");
    s.note("api", &Ok(1));
    assert!(s.failing().is_empty());
}
