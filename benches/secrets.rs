//! Throughput of keeping secrets in: masking a response body and scanning a request body, with 1, 10 and
//! 100 credentials' secrets (each in all its forms). `cargo bench --bench secrets`.
#![expect(clippy::unwrap_used, missing_docs, reason = "benchmark")]

use std::hint::black_box;
use std::sync::Arc;

use bytes::Bytes;
use cordon::leak::mask::masker::Masker;
use cordon::leak::scan::detect::Detector;
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

/// What every request toward any host pays once credentials are configured: its header values scanned one
/// by one and joined, its path and its query (a curl-like GET with an Authorization header).
fn head(c: &mut Criterion) {
    let values: Vec<&[u8]> = vec![
        b"api.example.com",
        b"curl/8.5.0",
        b"*/*",
        b"Bearer cordon-ph-0123456789abcdef0123456789abcdef",
        b"application/json",
        b"gzip, deflate, br",
    ];
    let joined: Vec<u8> = values.concat();
    let mut g = c.benchmark_group("head");
    for n in [1, 10] {
        let secrets: Vec<(String, SecretString)> = (0..n)
            .map(|i| (format!("cred{i}"), SecretString::from(secret(i))))
            .collect();
        let detector = Detector::new(&secrets).unwrap();
        g.bench_function(format!("{n}_credentials"), |b| {
            b.iter(|| {
                let mut found = 0;
                for v in &values {
                    found += detector.scan(black_box(v)).plain.len();
                }
                found += detector.scan(black_box(&joined)).plain.len();
                found += detector.scan(black_box(b"/v1/models/gpt-4/completions")).plain.len();
                found + detector.scan(black_box(b"page=2&limit=50")).plain.len()
            })
        });
    }
    g.finish();
}

criterion_group!(benches, mask, scan, head);
criterion_main!(benches);
