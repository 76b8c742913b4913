//! Leaf minting for interception, cold (a new key pair, a signature and a rustls config) and cached (a
//! moka hit). `cargo bench --bench leaf`.
#![expect(clippy::unwrap_used, missing_docs, reason = "benchmark")]

use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use cordon::tls::ca::{CaStore, Scope};
use cordon::tls::cache::LeafCache;
use cordon::tls::leaf::{self, LeafName};
use criterion::{Criterion, criterion_group, criterion_main};

fn leaves(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let store = CaStore::new(dir.path());
    let scope = Scope::Names {
        dns: vec!["example.com".into()],
        ips: vec![],
    };
    let ca = store
        .load_or_create(&cordon::names::SandboxId::parse("bench").unwrap(), &scope)
        .unwrap();
    let day = Duration::from_secs(86_400);
    c.bench_function("leaf_mint_cold", |b| {
        b.iter(|| {
            let (chain, key) = leaf::mint(&ca, &LeafName::Dns("api.example.com".into()), day).unwrap();
            black_box(leaf::server_config(chain, key).unwrap())
        })
    });
    // Cold through the cache: every iteration asks for a name not seen before.
    let cache = LeafCache::new(1_000_000, Duration::from_secs(3600), day);
    let n = AtomicU64::new(0);
    c.bench_function("leaf_cache_miss", |b| {
        b.iter(|| {
            let name = LeafName::Dns(format!("h{}.example.com", n.fetch_add(1, Ordering::Relaxed)));
            black_box(cache.get(&ca, &name).unwrap())
        })
    });
    let name = LeafName::Dns("api.example.com".into());
    cache.get(&ca, &name).unwrap();
    let ca: Arc<_> = ca;
    c.bench_function("leaf_cache_hit", |b| {
        b.iter(|| black_box(cache.get(&ca, black_box(&name)).unwrap()))
    });
}

criterion_group!(benches, leaves);
criterion_main!(benches);
