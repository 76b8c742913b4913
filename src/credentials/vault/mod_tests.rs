#![expect(clippy::unwrap_used, reason = "tests")]

use super::*;

#[tokio::test]
async fn vault_dispatches_to_each_backend() {
    let dir = tempfile::tempdir().unwrap();
    let file = file::FileVault::open(
        dir.path().join("vault.bin"),
        file::KeySource::File(dir.path().join("vault.key")),
    )
    .unwrap();
    file.set("name", SecretString::from("from-file")).unwrap();
    let vault = Vault::File(file);
    assert_eq!(vault.get("name").await.unwrap().expose_secret(), "from-file");
    let vault = Vault::Env(env::EnvVault);
    assert_eq!(
        vault.get("PATH").await.unwrap().expose_secret(),
        std::env::var("PATH").unwrap()
    );
}

#[test]
fn errors_are_send_sync_and_static() {
    fn check<T: Send + Sync + 'static + std::error::Error>() {}
    check::<VaultError>();
}
