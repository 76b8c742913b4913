//! A CA folder shared by several processes (replicas, `cordon ca export` beside a live proxy): each
//! `CaStore` here stands for one process, since the folder's lock file holds off any other open of it.
#![expect(clippy::unwrap_used, reason = "tests")]

use std::os::unix::fs::PermissionsExt;
use std::sync::Barrier;

use super::tests::store;
use super::*;
use crate::tls::ca::files::LOCK_FILE;

#[test]
fn stores_sharing_a_folder_agree_on_each_new_sandboxs_ca() {
    let (dir, first) = store();
    let root = dir.path().join("ca");
    let stores = [first, CaStore::new(&root), CaStore::new(&root), CaStore::new(&root)];
    for round in 0..5 {
        let sandbox = format!("sb{round}");
        let barrier = Barrier::new(8);
        let certs: Vec<String> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..8)
                .map(|i| {
                    let (store, barrier, sandbox) = (&stores[i % 4], &barrier, &sandbox);
                    s.spawn(move || {
                        barrier.wait();
                        let ca = if i % 2 == 0 {
                            store
                                .load_or_create(&crate::names::SandboxId::from(sandbox.as_str()), &Scope::Unconstrained)
                                .unwrap()
                        } else {
                            // A later load finds either nothing yet or the one CA, whole.
                            match store.load(&crate::names::SandboxId::from(sandbox.as_str())).unwrap() {
                                Some(ca) => ca,
                                None => store
                                    .load_or_create(
                                        &crate::names::SandboxId::from(sandbox.as_str()),
                                        &Scope::Unconstrained,
                                    )
                                    .unwrap(),
                            }
                        };
                        ca.cert_pem().to_string()
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let on_disk = fs::read_to_string(root.join(&sandbox).join(CERT_FILE)).unwrap();
        assert!(
            certs.iter().all(|c| *c == on_disk),
            "round {round}: a store signs with a CA that is not the one on disk"
        );
        let reloaded = CaStore::new(&root)
            .load(&crate::names::SandboxId::from(&*sandbox))
            .unwrap()
            .unwrap();
        assert_eq!(reloaded.cert_pem(), on_disk);
    }
}

#[test]
fn a_rotation_waits_for_a_creation_in_another_store() {
    let (dir, a) = store();
    let b = CaStore::new(dir.path().join("ca"));
    let barrier = Barrier::new(2);
    let (created, rotated) = std::thread::scope(|s| {
        let c = s.spawn(|| {
            barrier.wait();
            a.load_or_create(&crate::names::SandboxId::from("sb"), &Scope::Unconstrained)
                .unwrap()
        });
        let r = s.spawn(|| {
            barrier.wait();
            b.rotate(&crate::names::SandboxId::from("sb"), &Scope::Unconstrained)
                .unwrap()
        });
        (c.join().unwrap(), r.join().unwrap())
    });
    // Whichever went second, the pair on disk is whole and is one of the two.
    let on_disk = CaStore::new(dir.path().join("ca"))
        .load(&crate::names::SandboxId::from("sb"))
        .unwrap()
        .unwrap();
    assert!(on_disk.cert_pem() == created.cert_pem() || on_disk.cert_pem() == rotated.cert_pem());
}

#[test]
fn the_lock_file_is_private_and_never_followed_through_a_link() {
    let (dir, store) = store();
    store
        .load_or_create(&crate::names::SandboxId::from("sb"), &Scope::Unconstrained)
        .unwrap();
    let root = dir.path().join("ca");
    assert_eq!(fs::metadata(&root).unwrap().permissions().mode() & 0o777, 0o700);
    let lock = root.join(LOCK_FILE);
    assert_eq!(fs::metadata(&lock).unwrap().permissions().mode() & 0o777, 0o600);
    assert_eq!(fs::read(&lock).unwrap(), b"", "nothing is written to it");

    // SECURITY (ca_files::lock_folder): a lock file replaced by a link to another file is refused, and
    // the file the link names is neither created nor touched.
    fs::remove_file(&lock).unwrap();
    let elsewhere = dir.path().join("not-cordons");
    std::os::unix::fs::symlink(&elsewhere, &lock).unwrap();
    let err = store.load(&crate::names::SandboxId::from("sb")).unwrap_err();
    assert!(err.to_string().contains(LOCK_FILE), "{err}");
    assert!(!elsewhere.exists());
}

#[test]
fn a_load_from_a_store_that_does_not_exist_creates_nothing() {
    let (dir, store) = store();
    assert!(store.load(&crate::names::SandboxId::from("sb")).unwrap().is_none());
    assert!(!dir.path().join("ca").exists());
}

#[test]
fn a_scope_that_cannot_be_installed_still_loads_an_existing_ca_and_creates_nothing() {
    let (dir, store) = store();
    let bad = Scope::Names {
        dns: vec!["exa mple.com".into()],
        ips: vec![],
    };
    assert!(matches!(
        store.load_or_create(&crate::names::SandboxId::from("sb"), &bad),
        Err(CaError::InvalidScope { .. })
    ));
    assert!(!dir.path().join("ca").exists(), "nothing was created for it");
    let made = store
        .load_or_create(&crate::names::SandboxId::from("sb"), &Scope::Unconstrained)
        .unwrap();
    let again = CaStore::new(dir.path().join("ca"))
        .load_or_create(&crate::names::SandboxId::from("sb"), &bad)
        .unwrap();
    assert_eq!(again.cert_pem(), made.cert_pem());
}
