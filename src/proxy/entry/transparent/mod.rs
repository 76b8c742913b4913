//! The transparent listener: connections the kernel redirected to cordon (`REDIRECT`, `DNAT`, `TPROXY`)
//! from sandboxes that never asked for a proxy.
//!
//! The sandbox is known by its source address (`source_cidrs`), the destination port by the original
//! destination, and the host by what the client itself says: the TLS server name (SNI) or the HTTP `Host`
//! header. The pipeline then takes the same steps as for an explicit request (policy, interception with the
//! sandbox's CA, credentials, limits, audit) and dials its own resolution of that name through the guard,
//! never the address the sandbox chose.

pub(crate) mod origdst;

use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpStream;
use tokio_util::sync::CancellationToken;

use super::replay::Replay;
use crate::addr::{ClientAddr, OriginalDst};
use crate::audit::Kind;
use crate::error::TunnelEnd;
use crate::identity::Sandbox;
use crate::proxy::{self, Claim, Input, Intent, Outcome};
use crate::state::ProxyState;
use crate::target::Target;
use crate::tls::sni;

/// What the first bytes of a connection say it is.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Sniffed {
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
pub(crate) fn classify(bytes: &[u8]) -> Option<Sniffed> {
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
pub(crate) async fn sniff(stream: &TcpStream, limit: Duration) -> Sniffed {
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
pub(crate) async fn serve(state: Arc<ProxyState>, stream: TcpStream, client: ClientAddr, graceful: CancellationToken) {
    let original = match origdst::original_dst(&stream) {
        Ok(a) => OriginalDst(a),
        Err(e) => {
            tracing::warn!(%client, "transparent connection without a destination: {e}");
            return;
        }
    };
    // Who: known by the source address alone, before a byte is read.
    let Some(sandbox) = proxy::by_source(&state, client, original) else {
        return;
    };
    let limit = state.current().config.timeouts.tls_handshake;
    match sniff(&stream, limit).await {
        Sniffed::Http => super::http::serve_transparent(state, stream, client, original, graceful).await,
        Sniffed::Tls => tls(state, stream, client, original, sandbox).await,
        // SECURITY: a protocol cordon cannot police (SSH, SMTP, raw TCP) is closed, never relayed.
        Sniffed::Other(why) => {
            proxy::refuse_connection(&state, client, original, Some(&sandbox), &TunnelEnd::NotTlsOrHttp(why));
        }
    }
}

/// TLS: the host is the SNI, the port the original destination's; then as a CONNECT to that target.
async fn tls(
    state: Arc<ProxyState>,
    mut stream: TcpStream,
    client: ClientAddr,
    original: OriginalDst,
    sandbox: Arc<Sandbox>,
) {
    let limit = state.current().config.timeouts.tls_handshake;
    let hello = match tokio::time::timeout(limit, sni::read_client_hello(&mut stream)).await {
        Ok(Ok(hello)) => Ok(hello),
        Ok(Err(e)) => Err(TunnelEnd::NotTls(e.to_string())),
        Err(_) => Err(TunnelEnd::HandshakeTimeout(format!(
            "no whole TLS ClientHello within {limit:?} (timeouts.tls_handshake)"
        ))),
    };
    let target = match hello {
        // SECURITY: without SNI there is no host to decide on; an IP the sandbox picked is never trusted.
        Ok((_, None)) => Err(TunnelEnd::NoSni),
        Ok((head, Some(name))) => match Target::from_host_value(name.as_bytes(), original.port()) {
            Ok(t) if t.host.as_name().is_some() => Ok((head, t)),
            _ => Err(TunnelEnd::BadSni(name)),
        },
        Err(end) => Err(end),
    };
    let (head, target) = match target {
        Ok(found) => found,
        Err(end) => return proxy::refuse_connection(&state, client, original, Some(&sandbox), &end),
    };
    let input = Input {
        kind: Kind::Transparent,
        client,
        original_dst: Some(original),
        conn: None,
        claim: Claim::Established(sandbox),
        target: Ok(target),
        intent: Intent::Tunnel,
    };
    // Nothing to answer on a TLS connection cordon will not open: the refusal's record is all there is.
    if let Outcome::Open(opened) = proxy::run(&state, input).await {
        let io = Replay::new(head, stream);
        crate::proxy::tunnel::run::launch(state, client, *opened, async move { Ok(io) });
    }
}

#[cfg(test)]
#[path = "mod_tests.rs"]
mod tests;
