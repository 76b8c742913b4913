//! Micro-benchmarks of the per-request admission work: identifying a declared sandbox by token and a
//! run-time sandbox by its signed credential, finding a sandbox's policy (the file's, by name; a run-time
//! sandbox's, from its record; a sandbox's own, compiled once per configuration), and the rate limiters
//! (scanning and masking bodies: `benches/secrets.rs`).
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
        id: cordon::names::SandboxId::parse("sb1").unwrap(),
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
    // Bytes are counted per incarnation: that of a declared sandbox, as identifying it gives it.
    let token = "a-declared-token-of-48-hex-chars-0123456789ab";
    let ids = Identities::new(&[SandboxSpec {
        id: cordon::names::SandboxId::parse("sb1").unwrap(),
        user: "alice".into(),
        token_sha256: hex::decode(hash_token(token)).unwrap().try_into().ok(),
        source_cidrs: vec![],
        policy: "web".into(),
    }]);
    let sandbox = ids.by_id_token("sb1", token).unwrap();
    let spec = cordon::config::default_rates();
    let l = Limits::new(&spec);
    let sb1 = cordon::names::SandboxId::parse("sb1").unwrap();
    g.bench_function("request_default_rates", |b| {
        b.iter(|| {
            let _ = l.request(black_box(&sb1), black_box("alice"), black_box(Some("api.example.com")));
        })
    });
    let off = Limits::new(&LimitSpec::default());
    g.bench_function("request_unlimited", |b| {
        b.iter(|| {
            let _ = off.request(black_box(&sb1), black_box("alice"), black_box(Some("api.example.com")));
        })
    });
    g.bench_function("bytes", |b| {
        b.iter(|| l.bytes(black_box(sandbox.incarnation()), 1500, 0))
    });
    g.finish();
}

/// What the pipeline asks for each request: the policy of the sandbox that sent it.
fn policy_lookup(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let yaml = [
        format!("ca: {{ dir: {}/cas }}", dir.path().display()),
        format!("vault: {{ file: {{ path: {}/vault.bin }} }}", dir.path().display()),
        format!("control: {{ store: {}/cordon.db }}", dir.path().display()),
        "sandboxes:".into(),
        format!(
            "  - {{ id: sb1, user: alice, token_sha256: {}, policy: web }}",
            hash_token("t")
        ),
        "policies:".into(),
        "  web:".into(),
        "    allow:".into(),
        "      - { host: github.com, methods: [GET, POST], paths: [\"/acme/**\"] }".into(),
        "      - { host: \"*.pythonhosted.org\" }".into(),
        "      - { host: pypi.org }".into(),
    ]
    .join("\n");
    let config = cordon::config::Config::parse("bench.yaml", &yaml).unwrap();
    struct Nowhere;
    impl cordon::audit::Sink for Nowhere {
        fn write(&self, _: &cordon::audit::Record) {}
    }
    let state = rt
        .block_on(cordon::state::ProxyState::new(
            config,
            std::sync::Arc::new(Nowhere),
            vec![],
        ))
        .unwrap();
    let _guard = rt.enter();
    let ttl = Ttl {
        default: Duration::from_secs(3600),
        max: Duration::from_secs(7200),
    };
    let now = cordon::control::now();
    let own = r#"{"extends":"web","allow":[{"host":"github.com","methods":["GET"],"paths":["/acme/web/**"]},{"host":"pypi.org"}]}"#;
    let mut sandboxes = Vec::new();
    for (id, inline) in [("rt-named", None), ("rt-own", Some(own))] {
        let new = NewSandbox {
            id: Some(id.into()),
            user: "alice".into(),
            policy: "web".into(),
            inline_policy: inline.map(std::sync::Arc::from),
            ..NewSandbox::default()
        };
        let (_, credential) = state
            .control
            .create(new, ttl, |_| true, |_| false, |_| Ok(()), now)
            .unwrap();
        sandboxes.push((id, state.control.verify(id, &credential, now).unwrap()));
    }
    let generation = state.current();
    let declared = Identities::new(&[SandboxSpec {
        id: cordon::names::SandboxId::parse("sb1").unwrap(),
        user: "alice".into(),
        token_sha256: hex::decode(hash_token("t")).unwrap().try_into().ok(),
        source_cidrs: vec![],
        policy: "web".into(),
    }])
    .by_id_token("sb1", "t")
    .unwrap();
    let mut g = c.benchmark_group("policy_lookup");
    g.bench_function("declared", |b| {
        b.iter(|| {
            generation
                .policy_for(black_box(&declared), Some(&state.control))
                .is_some()
        })
    });
    for (id, sandbox) in &sandboxes {
        g.bench_function(*id, |b| {
            b.iter(|| {
                generation
                    .policy_for(black_box(sandbox), Some(&state.control))
                    .is_some()
            })
        });
    }
    g.finish();
}

criterion_group!(benches, identify, policy_lookup, limits);
criterion_main!(benches);
