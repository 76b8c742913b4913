#![expect(clippy::unwrap_used, reason = "tests")]

use secrecy::ExposeSecret;

use super::*;

#[tokio::test]
async fn reads_a_set_variable() {
    // `set_var` is unsafe (and unsafe code is forbidden): PATH is always set.
    let want = std::env::var("PATH").unwrap();
    assert_eq!(EnvVault::new().get("PATH").await.unwrap().expose_secret(), want);
}

#[tokio::test]
async fn missing_variable_names_the_variable() {
    let err = EnvVault.get("CORDON_TEST_SURELY_UNSET_71c2").await.unwrap_err();
    assert!(matches!(err, VaultError::EnvMissing { .. }));
    assert_eq!(
        err.to_string(),
        "environment variable CORDON_TEST_SURELY_UNSET_71c2 is not set"
    );
}

#[tokio::test]
async fn names_std_would_reject_are_errors_not_panics() {
    for bad in ["", "A=B", "A\0B"] {
        assert!(
            matches!(EnvVault.get(bad).await, Err(VaultError::BadName { .. })),
            "{bad:?}"
        );
    }
}
