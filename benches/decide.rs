//! Micro-benchmarks of the per-request pure work: policy decision at 10, 1,000 and 10,000 rules, target
//! parsing, and the address guard. `cargo bench --bench decide`.
#![expect(clippy::unwrap_used, missing_docs, reason = "benchmark")]

use std::hint::black_box;
use std::net::SocketAddr;

use cordon::net::Guard;
use cordon::policy::allowlist::DEFAULT_PORTS;
use cordon::policy::{HostPattern, Mode, Policy, Question, Rule, TlsMode};
use cordon::target::Target;
use criterion::{Criterion, criterion_group, criterion_main};
use http::Method;

fn policy(n: usize) -> Policy {
    let rules = (0..n)
        .map(|i| Rule {
            host: Some(
                HostPattern::parse(&if i % 2 == 0 {
                    format!("h{i}.example.com")
                } else {
                    format!("*.d{i}.example.org")
                })
                .unwrap(),
            ),
            cidrs: vec![],
            ports: DEFAULT_PORTS.to_vec(),
            methods: None,
            paths: None,
            path_texts: vec![],
            tls: TlsMode::Intercept,
            action: Default::default(),
            mcp: None,
            graphql: None,
            model_api: None,
        })
        .collect();
    Policy::new("bench".into(), Mode::Enforce, rules).unwrap()
}

fn decide(c: &mut Criterion) {
    let mut g = c.benchmark_group("policy_decide");
    for n in [10, 1_000, 10_000] {
        let p = policy(n);
        let hit = Target::from_authority_form(&format!("api.d{}.example.org:443", n - 1)).unwrap();
        let miss = Target::from_authority_form("nothing.example.net:443").unwrap();
        g.bench_function(format!("{n}_rules_hit"), |b| {
            b.iter(|| {
                p.decide(Question {
                    target: black_box(&hit),
                    request: Some((&Method::GET, "/v1/x")),
                    intercepted: true,
                })
            })
        });
        g.bench_function(format!("{n}_rules_miss"), |b| {
            b.iter(|| {
                p.decide(Question {
                    target: black_box(&miss),
                    request: None,
                    intercepted: false,
                })
            })
        });
    }
    g.finish();
}

fn parse(c: &mut Criterion) {
    let uri: http::Uri = "http://api.example.com:8080/v1/items?page=2".parse().unwrap();
    c.bench_function("target_absolute_form", |b| {
        b.iter(|| Target::from_absolute_uri(black_box(&uri)))
    });
    c.bench_function("target_authority_form", |b| {
        b.iter(|| Target::from_authority_form(black_box("api.example.com:443")))
    });
}

fn guard(c: &mut Criterion) {
    let g = Guard::new(vec![], vec![], vec!["127.0.0.1:3128".parse().unwrap()]);
    let public: SocketAddr = "93.184.215.14:443".parse().unwrap();
    let teredo: SocketAddr = "[2001:0:4136:e378:8000:63bf:3fff:fdd2]:443".parse().unwrap();
    c.bench_function("guard_public_v4", |b| b.iter(|| g.check_addr(black_box(public))));
    c.bench_function("guard_teredo_v6", |b| b.iter(|| g.check_addr(black_box(teredo))));
}

criterion_group!(benches, decide, parse, guard);
criterion_main!(benches);
