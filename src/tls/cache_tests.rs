#![expect(clippy::unwrap_used, reason = "tests")]

use std::sync::Barrier;

use super::super::ca::{CaStore, Scope};
use super::super::leaf::tests::{assert_rejected, client, handshake};
use super::*;

const DAY: Duration = Duration::from_secs(86_400);

fn store() -> (tempfile::TempDir, CaStore) {
    let dir = tempfile::tempdir().unwrap();
    let store = CaStore::new(dir.path().join("ca"));
    (dir, store)
}

fn dns(name: &str) -> LeafName {
    LeafName::Dns(name.to_owned())
}

#[test]
fn concurrent_misses_mint_once() {
    let (_dir, store) = store();
    let ca = store
        .load_or_create(&crate::names::SandboxId::from("sb"), &Scope::Unconstrained)
        .unwrap();
    let cache = LeafCache::new(100, DAY, 30 * DAY);
    let barrier = Barrier::new(16);
    let configs: Vec<_> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..16)
            .map(|_| {
                s.spawn(|| {
                    barrier.wait();
                    cache.get(&ca, &dns("api.example.com")).unwrap()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(cache.mints(), 1);
    assert!(configs.iter().all(|c| Arc::ptr_eq(c, &configs[0])));
}

#[test]
fn two_names_mint_twice_and_equivalent_spellings_share() {
    let (_dir, store) = store();
    let ca = store
        .load_or_create(&crate::names::SandboxId::from("sb"), &Scope::Unconstrained)
        .unwrap();
    let cache = LeafCache::new(100, DAY, 30 * DAY);
    let a = cache.get(&ca, &dns("a.example.com")).unwrap();
    cache.get(&ca, &dns("b.example.com")).unwrap();
    assert_eq!(cache.mints(), 2);
    let a2 = cache.get(&ca, &dns("A.Example.COM.")).unwrap();
    assert!(Arc::ptr_eq(&a, &a2));
    assert_eq!(cache.mints(), 2);
}

#[test]
fn invalidate_sandbox_drops_only_that_sandbox() {
    let (_dir, store) = store();
    let ca_a = store
        .load_or_create(&crate::names::SandboxId::from("a"), &Scope::Unconstrained)
        .unwrap();
    let ca_b = store
        .load_or_create(&crate::names::SandboxId::from("b"), &Scope::Unconstrained)
        .unwrap();
    let cache = LeafCache::new(100, DAY, 30 * DAY);
    cache.get(&ca_a, &dns("x.example.com")).unwrap();
    cache.get(&ca_b, &dns("x.example.com")).unwrap();
    assert_eq!(cache.mints(), 2);
    cache.invalidate_sandbox(&crate::names::SandboxId::from("a"));
    cache.get(&ca_a, &dns("x.example.com")).unwrap();
    assert_eq!(cache.mints(), 3);
    cache.get(&ca_b, &dns("x.example.com")).unwrap();
    assert_eq!(cache.mints(), 3, "sandbox b's leaf survives");
}

#[test]
fn rotated_ca_never_gets_a_stale_leaf() {
    let (_dir, store) = store();
    let old = store
        .load_or_create(&crate::names::SandboxId::from("sb"), &Scope::Unconstrained)
        .unwrap();
    let cache = LeafCache::new(100, DAY, 30 * DAY);
    cache.get(&old, &dns("x.example.com")).unwrap();
    let new = store
        .rotate(&crate::names::SandboxId::from("sb"), &Scope::Unconstrained)
        .unwrap();
    // No invalidate_sandbox call: the CA's key id in the key still keeps the old leaf away.
    let config = cache.get(&new, &dns("x.example.com")).unwrap();
    assert_eq!(cache.mints(), 2);
    handshake(config, client(&new), "x.example.com").unwrap();
}

#[test]
fn same_name_in_two_sandboxes_gets_each_its_own_leaf() {
    let (_dir, store) = store();
    let ca_a = store
        .load_or_create(&crate::names::SandboxId::from("a"), &Scope::Unconstrained)
        .unwrap();
    let ca_b = store
        .load_or_create(&crate::names::SandboxId::from("b"), &Scope::Unconstrained)
        .unwrap();
    let cache = LeafCache::new(100, DAY, 30 * DAY);
    let for_a = cache.get(&ca_a, &dns("api.example.com")).unwrap();
    let for_b = cache.get(&ca_b, &dns("api.example.com")).unwrap();
    assert_eq!(cache.mints(), 2);
    handshake(Arc::clone(&for_a), client(&ca_a), "api.example.com").unwrap();
    handshake(Arc::clone(&for_b), client(&ca_b), "api.example.com").unwrap();
    assert_rejected(handshake(for_a, client(&ca_b), "api.example.com"), "UnknownIssuer");
    assert_rejected(handshake(for_b, client(&ca_a), "api.example.com"), "UnknownIssuer");
}

#[test]
fn errors_are_returned_and_not_cached() {
    let (_dir, store) = store();
    let scope = Scope::Names {
        dns: vec!["example.com".into()],
        ips: vec![],
    };
    let ca = store
        .load_or_create(&crate::names::SandboxId::from("sb"), &scope)
        .unwrap();
    let cache = LeafCache::new(100, DAY, 30 * DAY);
    let err = cache.get(&ca, &dns("evil.com")).unwrap_err();
    assert!(matches!(err, CaError::OutOfScope { .. }), "{err}");
    assert!(matches!(
        cache.get(&ca, &dns("*.example.com")),
        Err(CaError::InvalidName { .. })
    ));
    assert_eq!(cache.mints(), 0);
    cache.get(&ca, &dns("example.com")).unwrap();
    assert_eq!(cache.mints(), 1);
}

#[test]
fn ttl_is_clamped_to_half_the_validity() {
    assert_eq!(LeafCache::new(10, 30 * DAY, 10 * DAY).ttl(), 5 * DAY);
    assert_eq!(LeafCache::new(10, DAY, 10 * DAY).ttl(), DAY);
    assert_eq!(LeafCache::new(10, Duration::MAX, Duration::MAX).ttl(), MAX_TTL);
}

#[test]
fn entries_expire_after_ttl() {
    let (_dir, store) = store();
    let ca = store
        .load_or_create(&crate::names::SandboxId::from("sb"), &Scope::Unconstrained)
        .unwrap();
    let cache = LeafCache::new(10, Duration::from_millis(200), 30 * DAY);
    cache.get(&ca, &dns("x.example.com")).unwrap();
    std::thread::sleep(Duration::from_millis(400));
    cache.get(&ca, &dns("x.example.com")).unwrap();
    assert_eq!(cache.mints(), 2);
}
