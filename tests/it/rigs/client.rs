//! A raw client of the proxy: `Proxy-Authorization` and token hashes, responses and CONNECT answers read off
//! the socket, and whether a connection was closed in time.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// `Proxy-Authorization` header line for `id:token`.
pub(crate) fn auth(id: &str, token: &str) -> String {
    use base64::Engine;
    format!(
        "Proxy-Authorization: Basic {}\r\n",
        base64::engine::general_purpose::STANDARD.encode(format!("{id}:{token}"))
    )
}

/// The hex SHA-256 of a token.
pub(crate) fn hash(token: &str) -> String {
    cordon::identity::hash_token(token)
}

/// A parsed response.
#[derive(Debug)]
pub(crate) struct Resp {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Resp {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
    pub(crate) fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// Read one response (head + Content-Length body, or to EOF without one) from `stream`.
pub(crate) async fn read_response(stream: &mut TcpStream) -> Option<Resp> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        let mut headers = [httparse::EMPTY_HEADER; 64];
        let mut parsed = httparse::Response::new(&mut headers);
        if let Ok(httparse::Status::Complete(len)) = parsed.parse(&buf) {
            let status = parsed.code.unwrap_or(0);
            let headers: Vec<(String, String)> = parsed
                .headers
                .iter()
                .map(|h| {
                    (
                        h.name.to_ascii_lowercase(),
                        String::from_utf8_lossy(h.value).into_owned(),
                    )
                })
                .collect();
            let cl = headers
                .iter()
                .find(|(k, _)| k == "content-length")
                .and_then(|(_, v)| v.parse::<usize>().ok());
            let mut body = buf[len..].to_vec();
            match cl {
                Some(n) => {
                    while body.len() < n {
                        let got = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut chunk))
                            .await
                            .ok()?
                            .ok()?;
                        if got == 0 {
                            break;
                        }
                        body.extend_from_slice(&chunk[..got]);
                    }
                }
                None => {
                    let _ = tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut body)).await;
                }
            }
            return Some(Resp { status, headers, body });
        }
        let got = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut chunk))
            .await
            .ok()?
            .ok()?;
        if got == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..got]);
    }
}

/// Read the head of a response to CONNECT (a 2xx has no body; the tunnel starts right after).
pub(crate) async fn read_connect_response(stream: &mut TcpStream) -> u16 {
    read_head(stream).await.status
}

/// The status line and headers of a response, without waiting for a body (a 200 to CONNECT has none).
pub(crate) async fn read_head(stream: &mut TcpStream) -> Resp {
    let mut buf = Vec::new();
    let mut byte = [0u8; 1];
    while !buf.ends_with(b"\r\n\r\n") {
        let n = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut byte))
            .await
            .unwrap()
            .unwrap();
        assert!(
            n == 1,
            "closed before the end of the response head: {}",
            String::from_utf8_lossy(&buf)
        );
        buf.push(byte[0]);
    }
    let mut headers = [httparse::EMPTY_HEADER; 32];
    let mut parsed = httparse::Response::new(&mut headers);
    parsed.parse(&buf).unwrap();
    Resp {
        status: parsed.code.unwrap(),
        headers: parsed
            .headers
            .iter()
            .map(|h| (h.name.to_string(), String::from_utf8_lossy(h.value).into_owned()))
            .collect(),
        body: Vec::new(),
    }
}

/// Open a connection to the proxy, send `raw`, read one response.
pub(crate) async fn send(proxy: SocketAddr, raw: &str) -> Resp {
    let mut s = TcpStream::connect(proxy).await.unwrap();
    s.write_all(raw.as_bytes()).await.unwrap();
    read_response(&mut s).await.expect("a response")
}

/// Whether the peer closes `stream` (EOF within a short wait; anything sent before it, e.g. a TLS alert, is read).
pub(crate) async fn closed(stream: &mut TcpStream) -> bool {
    closed_within(stream, Duration::from_secs(3)).await
}

/// Whether the peer closes `stream` (plain or TLS) within `limit`, reading whatever comes before.
pub(crate) async fn closed_within<S: tokio::io::AsyncRead + Unpin>(stream: &mut S, limit: Duration) -> bool {
    let mut b = [0u8; 1024];
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        match tokio::time::timeout_at(deadline, stream.read(&mut b)).await {
            Ok(Ok(0)) | Ok(Err(_)) => return true,
            Ok(Ok(_)) => continue,
            Err(_) => return false,
        }
    }
}
