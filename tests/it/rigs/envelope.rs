//! A raw HTTP/1.1 upstream for the envelope masking tests: it reads the request head, takes the secret
//! cordon injected (`Authorization: Bearer ...`), and writes back byte-exact answers that reflect it
//! everywhere a response has bytes: the reason phrase, 1xx heads, header names, trailers, and bodies under
//! every layout of stacked codings.

use std::io::Write;
use std::net::SocketAddr;
use std::sync::Arc;

use base64::Engine;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use crate::rigs::tls::TestCa;

/// What the bodies say: the secret 50 times, in JSON.
pub(crate) fn payload(secret: &str) -> Vec<u8> {
    format!("{{\"echo\": \"{secret}\"}}\n").repeat(50).into_bytes()
}

/// A body with no secret in it, for answers that must arrive intact.
pub(crate) fn plain_text() -> Vec<u8> {
    (0..2000)
        .flat_map(|i| format!("plain line {i}\n").into_bytes())
        .collect()
}

pub(crate) fn gzip(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

fn zlib(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

fn raw_deflate(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

fn br(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    {
        let mut e = brotli::CompressorWriter::new(&mut out, 4096, 5, 22);
        e.write_all(data).unwrap();
    }
    out
}

fn zstd(data: &[u8]) -> Vec<u8> {
    zstd::encode_all(data, 3).unwrap()
}

/// `data` in chunked framing, 700-byte chunks, with these trailer lines.
fn chunked(data: &[u8], trailers: &str) -> Vec<u8> {
    let mut out = Vec::new();
    for c in data.chunks(700) {
        out.extend_from_slice(format!("{:x}\r\n", c.len()).as_bytes());
        out.extend_from_slice(c);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(format!("0\r\n{trailers}\r\n").as_bytes());
    out
}

/// Forms of the secret that are valid header names (tchar only): RFC 3986 percent-encoding with upper-case
/// hex, hex, URL-safe base64.
pub(crate) fn name_forms(secret: &str) -> [String; 3] {
    let pct: String = secret
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect();
    [
        format!("x-{pct}"),
        hex::encode_upper(secret),
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(secret),
    ]
}

/// The layouts of stacked codings a body arrives in: (name, header lines, body as written).
pub(crate) fn coded(layout: &str, p: &[u8]) -> Option<(&'static str, Vec<u8>)> {
    Some(match layout {
        "ce-two-lines" => ("content-encoding: gzip\r\ncontent-encoding: gzip\r\n", gzip(&gzip(p))),
        "ce-list" => ("content-encoding: gzip, gzip\r\n", gzip(&gzip(p))),
        "ce-mixed-case" => ("content-encoding: Deflate ,GZip\r\n", gzip(&zlib(p))),
        "ce-identity" => (
            "content-encoding: identity, x-gzip\r\ncontent-encoding: identity\r\n",
            gzip(p),
        ),
        "ce-br-zstd" => ("content-encoding: br\r\ncontent-encoding: zstd\r\n", zstd(&br(p))),
        "ce-raw-deflate" => ("content-encoding: deflate\r\n", raw_deflate(p)),
        "te-gzip-chunked" => ("transfer-encoding: gzip, chunked\r\n", chunked(&gzip(p), "")),
        "te-two-lines" => (
            "transfer-encoding: gzip\r\ntransfer-encoding: chunked\r\n",
            chunked(&gzip(p), ""),
        ),
        "te-close-delimited" => ("transfer-encoding: gzip\r\n", gzip(p)),
        "ce-and-te" => (
            "content-encoding: gzip\r\ntransfer-encoding: deflate, chunked\r\n",
            chunked(&zlib(&gzip(p)), ""),
        ),
        "media-gzip" => ("content-type: application/gzip\r\n", gzip(p)),
        "media-x-gzip-under-ce" => (
            "content-type: application/x-gzip\r\ncontent-encoding: gzip\r\n",
            gzip(&gzip(p)),
        ),
        "media-zstd" => ("content-type: application/zstd\r\n", zstd(p)),
        "unknown" => ("content-encoding: gzip, compress\r\n", gzip(p)),
        "te-after-chunked" => ("transfer-encoding: chunked, gzip\r\n", gzip(p)),
        "too-deep" => (
            "content-encoding: gzip, gzip, gzip, gzip, gzip\r\n",
            gzip(&gzip(&gzip(&gzip(&gzip(p))))),
        ),
        _ => return None,
    })
}

/// The answer to `method path?query` for a request that carried `secret`.
fn answer(method: &str, path: &str, query: &str, secret: &str) -> Vec<u8> {
    let [n1, n2, n3] = name_forms(secret);
    let close = "connection: close\r\n";
    let sized = |head: &str, body: &[u8]| {
        let mut out = format!("{head}content-length: {}\r\n{close}\r\n", body.len()).into_bytes();
        out.extend_from_slice(body);
        out
    };
    match path {
        "/reason" => {
            let status = query.strip_prefix("s=").unwrap_or("200");
            let range = if status == "206" {
                "content-range: bytes 0-99/1000\r\n"
            } else {
                ""
            };
            sized(
                &format!("HTTP/1.1 {status} Echo {secret} here\r\n{range}"),
                &payload(secret),
            )
        }
        "/informational" => {
            let mut out = format!(
                "HTTP/1.1 100 Continue {secret}\r\n\r\nHTTP/1.1 103 Early {secret}\r\nlink: </{secret}>; \
                 rel=preload\r\n{n1}: 1\r\n\r\n"
            )
            .into_bytes();
            out.extend(sized("HTTP/1.1 200 OK\r\n", b"ok\n"));
            out
        }
        "/names" => sized(
            &format!("HTTP/1.1 200 OK\r\n{n1}: 1\r\n{n2}: 2\r\n{n3}: 3\r\nx-plain: kept\r\n"),
            b"ok\n",
        ),
        "/trailers" => {
            let trailers = format!("{n1}: 1\r\n{n2}: {secret}\r\nx-fine: {secret}\r\n");
            let mut out =
                format!("HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\ntrailer: {n1}, {n2}, x-fine\r\n{close}\r\n")
                    .into_bytes();
            out.extend(chunked(b"body\n", &trailers));
            out
        }
        "/upgrade" => format!(
            "HTTP/1.1 101 Switching {secret}\r\nconnection: upgrade\r\nupgrade: websocket\r\n\
             sec-websocket-accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n{n1}: 1\r\nx-echo: {secret}\r\n\r\n"
        )
        .into_bytes(),
        "/coded" => {
            let layout = query.strip_prefix("l=").unwrap_or("");
            let plain = layout.strip_prefix("plain-");
            let data = if plain.is_some() { plain_text() } else { payload(secret) };
            let Some((head, body)) = coded(plain.unwrap_or(layout), &data) else {
                return sized("HTTP/1.1 404 Not Found\r\n", b"no such layout\n");
            };
            let head = format!("HTTP/1.1 200 OK\r\nx-echo: {secret}\r\n{head}");
            if method == "HEAD" {
                return format!("{head}content-length: {}\r\n{close}\r\n", body.len()).into_bytes();
            }
            if head.contains("transfer-encoding") {
                let mut out = format!("{head}{close}\r\n").into_bytes();
                out.extend(body);
                out
            } else {
                sized(&head, &body)
            }
        }
        _ => sized("HTTP/1.1 404 Not Found\r\n", b"no such path\n"),
    }
}

/// The raw upstream on 127.0.0.5, HTTP/1.1 only, with a certificate for `leaky.test`: one request per
/// connection, answered and closed.
pub(crate) async fn raw_upstream(ca: &TestCa) -> SocketAddr {
    let listener = TcpListener::bind(("127.0.0.5", 0)).await.unwrap();
    let addr = listener.local_addr().unwrap();
    let mut cfg = (*ca.server_config(&["leaky.test"])).clone();
    cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(cfg));
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(stream).await else {
                    return;
                };
                let mut head = Vec::new();
                let mut buf = [0u8; 4096];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match tls.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let mut headers = [httparse::EMPTY_HEADER; 64];
                let mut req = httparse::Request::new(&mut headers);
                if req.parse(&head).is_err() {
                    return;
                }
                let secret = req
                    .headers
                    .iter()
                    .find(|h| h.name.eq_ignore_ascii_case("authorization"))
                    .and_then(|h| std::str::from_utf8(h.value).ok())
                    .and_then(|v| v.strip_prefix("Bearer "))
                    .unwrap_or("no-secret")
                    .to_string();
                let target = req.path.unwrap_or("/");
                let (path, query) = target.split_once('?').unwrap_or((target, ""));
                let out = answer(req.method.unwrap_or("GET"), path, query, &secret);
                let _ = tls.write_all(&out).await;
                let _ = tls.shutdown().await;
            });
        }
    });
    addr
}
