//! The transparent listener: connections the kernel redirected to cordon (`REDIRECT`, `DNAT`, `TPROXY`)
//! from sandboxes that never asked for a proxy.
//!
//! The sandbox is known by its source address (`source_cidrs`), the destination port by the original
//! destination, and the host by what the client itself says: the TLS server name (SNI) or the HTTP `Host`
//! header. cordon then walks the same path as for an explicit request — policy, interception with the
//! sandbox's CA, credentials, limits, audit — and dials its own resolution of that name through the guard,
//! never the address the sandbox chose.

pub mod origdst;
mod replay;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use http::Method;
use tokio::net::TcpStream;
use tokio_util::sync::CancellationToken;

use crate::audit::Kind;
use crate::exchange::Exchange;
use crate::identity::Sandbox;
use crate::state::ProxyState;
use crate::target::Target;
use crate::tls::sni;
use crate::tunnel::{self, Opened};
use replay::Replay;

/// What the first bytes of a connection say it is.
#[derive(Debug, PartialEq, Eq)]
pub enum Sniffed {
    /// A TLS record (a ClientHello, presumably).
    Tls,
    /// An HTTP/1 request line.
    Http,
    /// Anything else, with why.
    Other(String),
}

/// The longest method token looked at before a connection is judged not to be HTTP.
const MAX_METHOD: usize = 24;

/// Classify the bytes seen so far; `None` while it cannot yet tell.
pub fn classify(bytes: &[u8]) -> Option<Sniffed> {
    let first = *bytes.first()?;
    if first == 0x16 {
        return Some(Sniffed::Tls);
    }
    for (i, b) in bytes.iter().enumerate() {
        match b {
            b' ' if i > 0 => return Some(Sniffed::Http),
            b'A'..=b'Z' | b'-' | b'_' if i < MAX_METHOD => {}
            _ => {
                return Some(Sniffed::Other(format!(
                    "neither TLS nor HTTP (first bytes {:02x?})",
                    &bytes[..bytes.len().min(8)]
                )));
            }
        }
    }
    None
}

/// Peek (without consuming) until the first bytes say what the connection is, or `limit` passes.
pub async fn sniff(stream: &TcpStream, limit: Duration) -> Sniffed {
    let deadline = tokio::time::Instant::now() + limit;
    let mut buf = [0u8; MAX_METHOD + 1];
    loop {
        let n = match tokio::time::timeout_at(deadline, stream.peek(&mut buf)).await {
            Err(_) => {
                return Sniffed::Other(format!(
                    "the client sent nothing it could be judged by within {limit:?}"
                ));
            }
            Ok(Err(e)) => return Sniffed::Other(format!("the connection failed: {e}")),
            Ok(Ok(0)) => return Sniffed::Other("the client closed before sending anything".into()),
            Ok(Ok(n)) => n,
        };
        if let Some(verdict) = classify(&buf[..n]) {
            return verdict;
        }
        // Part of a request line has arrived: wait for more (peek returns at once while data is queued).
        if tokio::time::timeout_at(deadline, tokio::time::sleep(Duration::from_millis(5)))
            .await
            .is_err()
        {
            return Sniffed::Other(format!("the client's first bytes did not finish within {limit:?}"));
        }
    }
}

/// Serve one redirected connection.
pub async fn serve(state: Arc<ProxyState>, stream: TcpStream, client: SocketAddr, graceful: CancellationToken) {
    let original = match origdst::original_dst(&stream) {
        Ok(a) => a,
        Err(e) => {
            tracing::warn!(%client, "transparent connection without a destination: {e}");
            return;
        }
    };
    let generation = state.current();
    let limit = generation.config.timeouts.tls_handshake;
    let sandbox = generation.identities.by_source(client.ip());
    drop(generation);
    let Some(sandbox) = sandbox else {
        // SECURITY: a transparent connection carries no credential; an address no sandbox claims gets nothing.
        let mut ex = record(&state, client, original);
        refuse(
            &mut ex,
            "unknown_source",
            format!("no sandbox's source_cidrs hold {}", client.ip()),
        );
        return;
    };
    match sniff(&stream, limit).await {
        Sniffed::Http => crate::conn::serve_transparent(state, stream, client, original, graceful).await,
        Sniffed::Tls => tls(state, stream, client, original, sandbox).await,
        Sniffed::Other(why) => {
            let mut ex = record(&state, client, original);
            ex.set_identity(&sandbox);
            // SECURITY: a protocol cordon cannot police (SSH, SMTP, raw TCP) is closed, never relayed.
            refuse(&mut ex, "not_tls_or_http", why);
        }
    }
}

fn record(state: &Arc<ProxyState>, client: SocketAddr, original: SocketAddr) -> Exchange {
    let mut ex = Exchange::new(state.clone(), client, Kind::Transparent, &Method::CONNECT);
    let r = ex.record();
    r.method = None;
    r.original_dst = Some(original.to_string());
    ex
}

fn refuse(ex: &mut Exchange, reason: &str, detail: String) {
    let r = ex.record();
    r.reason = Some(reason.into());
    r.error = Some(detail);
}

/// TLS: the host is the SNI, the port the original destination's; then as a CONNECT to that target.
async fn tls(
    state: Arc<ProxyState>,
    mut stream: TcpStream,
    client: SocketAddr,
    original: SocketAddr,
    sandbox: Arc<Sandbox>,
) {
    let mut ex = record(&state, client, original);
    ex.set_identity(&sandbox);
    let limit = ex.generation.config.timeouts.tls_handshake;
    let hello = match tokio::time::timeout(limit, sni::read_client_hello(&mut stream)).await {
        Ok(Ok(hello)) => hello,
        Ok(Err(e)) => return refuse(&mut ex, "not_tls", e.to_string()),
        Err(_) => {
            let why = format!("no whole TLS ClientHello within {limit:?} (timeouts.tls_handshake)");
            return refuse(&mut ex, "tls_handshake_timeout", why);
        }
    };
    let (head, Some(name)) = hello else {
        // SECURITY: without SNI there is no host to decide on; an IP the sandbox picked is never trusted.
        return refuse(
            &mut ex,
            "no_sni",
            "the TLS ClientHello names no server (SNI); transparent mode needs it to know the host".into(),
        );
    };
    let target = match Target::from_host_value(name.as_bytes(), original.port()) {
        Ok(t) if t.host.as_name().is_some() => t,
        _ => {
            return refuse(
                &mut ex,
                "bad_sni",
                format!("the TLS server name {name:?} is not a host name"),
            );
        }
    };
    ex.set_target(&target);
    match tunnel::open_for(&mut ex, sandbox, target).await {
        Ok(opened) => {
            if let Opened::Intercept(_, target, _) = &opened {
                // The pool dials later; say now whether the sandbox aimed somewhere cordon would not go.
                let resolved = ex.generation.dialer.resolve(target).await.unwrap_or_default();
                ex.record().original_dst_differs = Some(!resolved.contains(&original));
            }
            let io = Replay::new(head, stream);
            tunnel::launch(state, client, ex, opened, async move { Ok(io) });
        }
        // Nothing to answer on a TLS connection cordon will not terminate: the record, then close.
        Err(e) => drop(ex.fail(e)),
    }
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    #[test]
    fn first_bytes_tell_tls_http_and_the_rest() {
        assert_eq!(classify(&[0x16, 0x03, 0x01]), Some(Sniffed::Tls));
        assert_eq!(classify(b"GET / HTTP/1.1"), Some(Sniffed::Http));
        assert_eq!(classify(b"M-SEARCH * HTTP/1.1"), Some(Sniffed::Http));
        assert_eq!(classify(b"GE"), None);
        assert_eq!(classify(b""), None);
        assert!(matches!(classify(b"SSH-2.0-OpenSSH"), Some(Sniffed::Other(_))));
        assert!(matches!(classify(b"get / HTTP/1.1"), Some(Sniffed::Other(_))));
        assert!(matches!(classify(b" GET"), Some(Sniffed::Other(_))));
        assert!(matches!(classify(&[b'A'; 30]), Some(Sniffed::Other(_))));
    }

    #[tokio::test]
    async fn sniffing_waits_for_a_split_request_line_and_gives_up_on_silence() {
        use tokio::io::AsyncWriteExt;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let mut client = TcpStream::connect(addr).await.unwrap();
        let (server, _) = listener.accept().await.unwrap();
        client.write_all(b"PO").await.unwrap();
        let sniffing = tokio::spawn(async move { sniff(&server, Duration::from_secs(5)).await });
        tokio::time::sleep(Duration::from_millis(30)).await;
        client.write_all(b"ST / HTTP/1.1\r\n").await.unwrap();
        assert_eq!(sniffing.await.unwrap(), Sniffed::Http);

        let _silent = TcpStream::connect(addr).await.unwrap();
        let (server, _) = listener.accept().await.unwrap();
        assert!(matches!(
            sniff(&server, Duration::from_millis(50)).await,
            Sniffed::Other(_)
        ));
    }
}
