#![expect(clippy::unwrap_used, reason = "tests")]

use std::fs;
use std::os::unix::fs::PermissionsExt;

use super::*;

fn secret(s: &str) -> SecretString {
    SecretString::from(s)
}

fn mode(path: &Path) -> u32 {
    fs::metadata(path).unwrap().permissions().mode() & 0o777
}

fn vault_in(dir: &Path) -> FileVault {
    FileVault::open(dir.join("vault.bin"), KeySource::File(dir.join("vault.key"))).unwrap()
}

#[tokio::test]
async fn round_trip_set_get_list_remove() {
    let dir = tempfile::tempdir().unwrap();
    let vault = vault_in(dir.path());
    assert!(
        vault.list().unwrap().is_empty(),
        "a missing vault file is an empty vault"
    );
    vault.set("openai/api_key", secret("sk-one")).unwrap();
    vault.set("b.token", secret("two")).unwrap();
    vault.set("a-token", secret("three")).unwrap();
    assert_eq!(vault.get("openai/api_key").await.unwrap().expose_secret(), "sk-one");
    assert_eq!(vault.list().unwrap(), vec!["a-token", "b.token", "openai/api_key"]);
    vault.set("b.token", secret("two-replaced")).unwrap();
    assert_eq!(vault.get("b.token").await.unwrap().expose_secret(), "two-replaced");
    assert!(vault.remove("b.token").unwrap());
    assert!(!vault.remove("b.token").unwrap());
    let err = vault.get("b.token").await.unwrap_err();
    assert!(matches!(err, VaultError::NotFound { .. }), "{err}");
    assert!(err.to_string().contains("b.token"), "{err}");
    assert_eq!(vault.list().unwrap(), vec!["a-token", "openai/api_key"]);
}

#[tokio::test]
async fn reopen_from_disk_and_files_are_0600() {
    let dir = tempfile::tempdir().unwrap();
    vault_in(dir.path()).set("k", secret("v\"with\\json\u{e9}")).unwrap();
    let again = vault_in(dir.path());
    assert_eq!(again.get("k").await.unwrap().expose_secret(), "v\"with\\json\u{e9}");
    assert_eq!(again.get_blocking("k").unwrap().expose_secret(), "v\"with\\json\u{e9}");
    assert_eq!(mode(&dir.path().join("vault.key")), 0o600);
    assert_eq!(mode(&dir.path().join("vault.bin")), 0o600);
    let raw = fs::read(dir.path().join("vault.bin")).unwrap();
    assert!(raw.starts_with(b"CORDONV1"));
    assert!(
        !raw.windows(4).any(|w| w == b"with"),
        "the value is not stored in clear"
    );
    let key = fs::read_to_string(dir.path().join("vault.key")).unwrap();
    assert_eq!(key.trim().len(), 64);
}

#[test]
fn key_and_vault_created_in_missing_directories() {
    let dir = tempfile::tempdir().unwrap();
    let vault = FileVault::open(
        dir.path().join("a/vault.bin"),
        KeySource::File(dir.path().join("b/key")),
    )
    .unwrap();
    vault.set("x", secret("y")).unwrap();
    assert_eq!(vault.list().unwrap(), vec!["x"]);
    assert_eq!(mode(&dir.path().join("b")), 0o700);
}

#[tokio::test]
async fn wrong_key_gives_the_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    vault_in(dir.path()).set("k", secret("value")).unwrap();
    let other = FileVault::open(
        dir.path().join("vault.bin"),
        KeySource::File(dir.path().join("other.key")),
    )
    .unwrap();
    let err = other.get("k").await.unwrap_err();
    let want = format!(
        "cannot decrypt {}: wrong key or the file is corrupted",
        dir.path().join("vault.bin").display()
    );
    assert_eq!(err.to_string(), want);
    assert_eq!(other.list().unwrap_err().to_string(), want);
    // A write with the wrong key must not clobber the vault either.
    assert!(other.set("k2", secret("x")).is_err());
    assert_eq!(vault_in(dir.path()).get("k").await.unwrap().expose_secret(), "value");
}

#[tokio::test]
async fn corrupted_byte_or_truncation_gives_the_same_error() {
    let dir = tempfile::tempdir().unwrap();
    let vault = vault_in(dir.path());
    vault.set("k", secret("value")).unwrap();
    let path = dir.path().join("vault.bin");
    let good = fs::read(&path).unwrap();
    for i in [0, 9, 8 + 24 + 1, good.len() - 1] {
        let mut bad = good.clone();
        bad[i] ^= 0x40;
        fs::write(&path, &bad).unwrap();
        let err = vault.get("k").await.unwrap_err();
        assert!(
            err.to_string().ends_with("wrong key or the file is corrupted"),
            "byte {i}: {err}"
        );
    }
    fs::write(&path, &good[..good.len() - 5]).unwrap();
    assert!(matches!(vault.get("k").await.unwrap_err(), VaultError::Decrypt { .. }));
    fs::write(&path, b"").unwrap();
    assert!(matches!(vault.get("k").await.unwrap_err(), VaultError::Decrypt { .. }));
}

#[tokio::test]
async fn leftover_temp_file_is_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let vault = vault_in(dir.path());
    vault.set("k", secret("old")).unwrap();
    // A crash between creating and renaming a temporary file leaves it behind, possibly half-written.
    let leftover = dir.path().join(".vault.bin.tmp-00000000deadbeef");
    fs::write(&leftover, b"CORDONV1 half written").unwrap();
    let reopened = vault_in(dir.path());
    assert_eq!(reopened.get("k").await.unwrap().expose_secret(), "old");
    reopened.set("k", secret("new")).unwrap();
    assert_eq!(reopened.get("k").await.unwrap().expose_secret(), "new");
    assert!(leftover.exists(), "not touched");
    // The only other files are the key, the vault, its lock file and the leftover: a write leaves no
    // temporary behind.
    let mut names: Vec<_> = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(
        names,
        vec![
            ".vault.bin.tmp-00000000deadbeef",
            "vault.bin",
            "vault.bin.lock",
            "vault.key"
        ]
    );
}

#[test]
fn readers_always_see_the_old_or_the_new_vault() {
    let dir = tempfile::tempdir().unwrap();
    let writer = vault_in(dir.path());
    writer.set("k", secret("value-0")).unwrap();
    let reader = vault_in(dir.path());
    std::thread::scope(|scope| {
        let handle = scope.spawn(|| {
            for i in 1..=60 {
                // Different lengths, so a torn write could not pass for a whole one.
                writer
                    .set("k", secret(&format!("value-{i}-{}", "x".repeat(i))))
                    .unwrap();
            }
        });
        let mut reads = 0;
        while !handle.is_finished() || reads < 100 {
            let value = reader.get_blocking("k").unwrap();
            assert!(value.expose_secret().starts_with("value-"));
            reads += 1;
        }
    });
    let last = format!("value-60-{}", "x".repeat(60));
    assert_eq!(reader.get_blocking("k").unwrap().expose_secret(), last);
    let mut names: Vec<_> = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(
        names,
        vec!["vault.bin", "vault.bin.lock", "vault.key"],
        "no temporary file is left behind"
    );
}

#[test]
fn concurrent_writers_in_one_process_lose_no_update() {
    let dir = tempfile::tempdir().unwrap();
    let vault = vault_in(dir.path());
    std::thread::scope(|scope| {
        for t in 0..4 {
            let vault = &vault;
            scope.spawn(move || {
                for i in 0..10 {
                    vault.set(&format!("t{t}/n{i}"), secret("v")).unwrap();
                }
            });
        }
    });
    assert_eq!(vault.list().unwrap().len(), 40);
}

#[test]
fn key_file_readable_by_others_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("vault.key");
    vault_in(dir.path());
    fs::set_permissions(&key, fs::Permissions::from_mode(0o644)).unwrap();
    let err = FileVault::open(dir.path().join("vault.bin"), KeySource::File(key.clone()))
        .err()
        .unwrap();
    assert!(
        err.to_string().contains(&format!("chmod 600 {}", key.display())),
        "{err}"
    );
    fs::set_permissions(&key, fs::Permissions::from_mode(0o640)).unwrap();
    assert!(FileVault::open(dir.path().join("vault.bin"), KeySource::File(key.clone())).is_err());
    fs::set_permissions(&key, fs::Permissions::from_mode(0o600)).unwrap();
    assert!(FileVault::open(dir.path().join("vault.bin"), KeySource::File(key)).is_ok());
}

#[test]
fn malformed_key_file_is_refused_without_showing_it() {
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("vault.key");
    fs::write(&key, "zz-not-hex-secretish").unwrap();
    fs::set_permissions(&key, fs::Permissions::from_mode(0o600)).unwrap();
    let err = FileVault::open(dir.path().join("v"), KeySource::File(key))
        .err()
        .unwrap();
    assert!(matches!(err, VaultError::BadKey { .. }), "{err}");
    assert!(!err.to_string().contains("secretish"), "{err}");
}

#[tokio::test]
async fn env_key_source() {
    let dir = tempfile::tempdir().unwrap();
    // `set_var` is unsafe (and unsafe code is forbidden); PATH is always set but is not 64 hex digits.
    let err = FileVault::open(dir.path().join("v"), KeySource::Env("PATH".into()))
        .err()
        .unwrap();
    assert!(matches!(err, VaultError::BadKey { .. }), "{err}");
    assert!(err.to_string().contains("environment variable PATH"), "{err}");
    let path_value = std::env::var("PATH").unwrap();
    assert!(!err.to_string().contains(&path_value), "{err}");
    let err = FileVault::open(
        dir.path().join("v"),
        KeySource::Env("CORDON_TEST_SURELY_UNSET_9f3a".into()),
    )
    .err()
    .unwrap();
    assert_eq!(
        err.to_string(),
        "environment variable CORDON_TEST_SURELY_UNSET_9f3a is not set"
    );
    // A valid hex key from the environment, through a child process that has it set.
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "secrets::vault::file::tests::env_key_child", "--nocapture"])
        .env("CORDON_TEST_VAULT_KEY", "ab".repeat(32))
        .env("CORDON_TEST_VAULT_DIR", dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && stdout.contains("1 passed"), "{stdout}");
    let reopened = FileVault::open(dir.path().join("v"), KeySource::File(dir.path().join("k")));
    // The same vault file with a different key (a new key file) cannot be read.
    assert!(matches!(reopened.unwrap().list(), Err(VaultError::Decrypt { .. })));
}

/// Run by `env_key_source` in a child process with the key in its environment; a no-op otherwise.
#[test]
fn env_key_child() {
    let Ok(dir) = std::env::var("CORDON_TEST_VAULT_DIR") else {
        return;
    };
    let path = Path::new(&dir).join("v");
    let vault = FileVault::open(path.clone(), KeySource::Env("CORDON_TEST_VAULT_KEY".into())).unwrap();
    vault.set("k", secret("from-env-key")).unwrap();
    let again = FileVault::open(path, KeySource::Env("CORDON_TEST_VAULT_KEY".into())).unwrap();
    assert_eq!(again.get_blocking("k").unwrap().expose_secret(), "from-env-key");
}

#[tokio::test]
async fn bad_names_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let vault = vault_in(dir.path());
    let long = "a".repeat(129);
    for bad in [
        "",
        "has space",
        "semi;colon",
        "hash#key",
        "uni\u{e9}",
        "nul\0",
        long.as_str(),
    ] {
        assert!(
            matches!(vault.set(bad, secret("x")), Err(VaultError::BadName { .. })),
            "{bad:?}"
        );
        assert!(
            matches!(vault.get(bad).await, Err(VaultError::BadName { .. })),
            "{bad:?}"
        );
        assert!(matches!(vault.remove(bad), Err(VaultError::BadName { .. })), "{bad:?}");
    }
    let ok = "A-z_0.9/x".to_owned() + &"b".repeat(119);
    assert_eq!(ok.len(), 128);
    vault.set(&ok, secret("x")).unwrap();
    assert_eq!(vault.list().unwrap(), vec![ok]);
}

#[test]
fn debug_of_a_secret_does_not_show_it() {
    let s = secret("hunter2-value");
    assert!(!format!("{s:?}").contains("hunter2"));
}

#[test]
fn edits_from_several_processes_at_once_all_survive() {
    // Each FileVault stands for a process (`cordon vault set` run twice at once): their in-process locks
    // are separate, and only the vault's lock file keeps one write from dropping the other's entry.
    let dir = tempfile::tempdir().unwrap();
    let vaults: Vec<FileVault> = (0..4).map(|_| vault_in(dir.path())).collect();
    let barrier = std::sync::Barrier::new(8);
    std::thread::scope(|s| {
        for i in 0..8 {
            let (vault, barrier) = (&vaults[i % 4], &barrier);
            s.spawn(move || {
                barrier.wait();
                for j in 0..5 {
                    vault.set(&format!("t{i}-{j}"), secret("v")).unwrap();
                }
            });
        }
    });
    assert_eq!(vault_in(dir.path()).list().unwrap().len(), 40);
    assert_eq!(mode(&dir.path().join("vault.bin.lock")), 0o600);
}
