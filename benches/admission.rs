//! Micro-benchmarks of the per-request admission work: identifying a declared sandbox by token and a
//! run-time sandbox by its signed credential, and the rate limiters (scanning and masking bodies:
//! `benches/secrets.rs`).
//! `cargo bench --bench admission`.
#![expect(clippy::unwrap_used, missing_docs, reason = "benchmark")]

use std::collections::BTreeMap;
use std::hint::black_box;
use std::time::Duration;

use cordon::control::{Control, NewSandbox, Ttl};
use cordon::identity::SandboxSpec;
use cordon::identity::{Identities, hash_token};
use cordon::limits::{LimitSpec, Limits};
use criterion::{Criterion, criterion_group, criterion_main};
use secrecy::SecretString;

fn identify(c: &mut Criterion) {
    let mut g = c.benchmark_group("identify");
    let ids = Identities::new(&[SandboxSpec {
        id: "sb1".into(),
        user: "alice".into(),
        token_sha256: hex::decode(hash_token("a-declared-token-of-48-hex-chars-0123456789ab"))
            .unwrap()
            .try_into()
            .ok(),
        source_cidrs: vec![],
        policy: "web".into(),
    }]);
    g.bench_function("declared_token", |b| {
        b.iter(|| {
            ids.by_id_token(
                black_box("sb1"),
                black_box("a-declared-token-of-48-hex-chars-0123456789ab"),
            )
        })
    });
    let control = Control::open(None, Some(SecretString::from("k".repeat(32)))).unwrap();
    let ttl = Ttl {
        default: Duration::from_secs(3600),
        max: Duration::from_secs(7200),
    };
    let new = NewSandbox {
        id: Some("rt1".into()),
        user: "alice".into(),
        policy: "web".into(),
        ttl: None,
        labels: BTreeMap::new(),
        source_cidrs: Vec::new(),
        inline_policy: None,
    };
    let now = cordon::control::now();
    let (_, credential) = control.create(new, ttl, |_| true, |_| false, |_| Ok(()), now).unwrap();
    g.bench_function("signed_credential", |b| {
        b.iter(|| control.verify(black_box("rt1"), black_box(&credential), now))
    });
    g.finish();
}

fn limits(c: &mut Criterion) {
    let mut g = c.benchmark_group("limits");
    let spec = cordon::config::default_rates();
    let l = Limits::new(&spec);
    g.bench_function("request_default_rates", |b| {
        b.iter(|| {
            let _ = l.request(black_box("sb1"), black_box("alice"), black_box(Some("api.example.com")));
        })
    });
    let off = Limits::new(&LimitSpec::default());
    g.bench_function("request_unlimited", |b| {
        b.iter(|| {
            let _ = off.request(black_box("sb1"), black_box("alice"), black_box(Some("api.example.com")));
        })
    });
    g.bench_function("bytes", |b| b.iter(|| l.bytes(black_box("sb1"), 1500, 0)));
    g.finish();
}

criterion_group!(benches, identify, limits);
criterion_main!(benches);
