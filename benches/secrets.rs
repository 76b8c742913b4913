//! Throughput of keeping secrets in: masking a response body and scanning a request body, with 1, 10 and
//! 100 credentials' secrets (each in all its forms). `cargo bench --bench secrets`.
#![expect(clippy::unwrap_used, missing_docs, reason = "benchmark")]

use std::hint::black_box;
use std::sync::Arc;

use bytes::Bytes;
use cordon::credentials::detect::Detector;
use cordon::credentials::mask::Masker;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use secrecy::SecretString;

/// A JSON API response or request body of about 1 MiB: words, numbers, short ids, no secret.
fn body() -> Vec<u8> {
    let mut out = Vec::with_capacity(1 << 20);
    let mut i = 0u64;
    while out.len() < 1 << 20 {
        i = i.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        out.extend_from_slice(
            format!(
                "{{\"id\": \"msg_{:016x}\", \"role\": \"assistant\", \"content\": \"The quick brown fox jumps over the lazy dog {}\", \"tokens\": {}}},\n",
                i, i % 1000, i % 4096
            )
            .as_bytes(),
        );
    }
    out
}

fn secret(n: usize) -> String {
    format!("sk-live-{n:04}-4f9a1c7e2b8d6a03f1e2d3c4b5a69788")
}

fn mask(c: &mut Criterion) {
    let data = body();
    let mut g = c.benchmark_group("mask");
    g.throughput(Throughput::Bytes(data.len() as u64));
    for n in [1, 10, 100] {
        let secrets: Vec<(SecretString, String)> = (0..n)
            .map(|i| (SecretString::from(secret(i)), format!("cordon-ph-{i:032x}")))
            .collect();
        let masker = Arc::new(Masker::new(&secrets).unwrap());
        g.bench_function(format!("{n}_credentials"), |b| {
            b.iter(|| {
                let mut stream = masker.stream();
                let mut out = 0;
                for chunk in data.chunks(16 * 1024) {
                    out += stream.push(Bytes::copy_from_slice(chunk)).len();
                }
                out + stream.finish().len()
            })
        });
    }
    g.finish();
}

fn scan(c: &mut Criterion) {
    let data = body();
    let mut g = c.benchmark_group("scan");
    g.throughput(Throughput::Bytes(data.len() as u64));
    for n in [1, 10, 100] {
        let secrets: Vec<(String, SecretString)> = (0..n)
            .map(|i| (format!("cred{i}"), SecretString::from(secret(i))))
            .collect();
        let detector = Detector::new(&secrets).unwrap();
        g.bench_function(format!("{n}_credentials"), |b| {
            b.iter(|| {
                let mut found = 0;
                for chunk in data.chunks(16 * 1024) {
                    found += detector.scan(black_box(chunk)).secrets.len();
                }
                found
            })
        });
    }
    g.finish();
}

criterion_group!(benches, mask, scan);
criterion_main!(benches);
