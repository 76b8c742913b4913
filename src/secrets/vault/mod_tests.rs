use super::*;

#[test]
fn errors_are_send_sync_and_static() {
    fn check<T: Send + Sync + 'static + std::error::Error>() {}
    check::<VaultError>();
}
