//! Thin entry points into cordon's parsers, for the cargo-fuzz targets under `fuzz/` (feature `fuzzing`).
//!
//! Each function feeds bytes to one parser and hands back what the parser made of them, in types a target can
//! compare; none has logic of its own beyond adapting types: an in-memory connection for the framing guard, a
//! noop waker for code that never waits on I/O here, a stand-in policy for the DNS responder (which has no
//! entry point without sockets, so [`dns_query`] reaches it over loopback). What each target checks is in
//! `docs/src/fuzzing.md`.

use std::collections::VecDeque;
use std::future::Future;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::pin::{Pin, pin};
use std::sync::{Arc, LazyLock};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use bytes::Bytes;
use http::HeaderMap;
use http::header::{HeaderValue, PROXY_AUTHORIZATION};
use http_body::{Body, Frame};
use http_body_util::{BodyExt, StreamBody};
use ipnet::IpNet;
use secrecy::SecretString;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::body::BoxError;
use crate::config::Config;
use crate::dns::{Answerer, DnsAnswer, Query};
use crate::framing::FramingGuard;
pub use crate::identity::AuthFailure;
use crate::identity::{Identities, RunTime, Sandbox, SandboxSpec, credentials, hash_token, identify};
use crate::leak::mask::body::MaskedBody;
pub use crate::leak::mask::masker::Masker;
pub use crate::leak::scan::detect::{Detector, Found};
use crate::leak::scan::views::views;
use crate::net::Guard;
pub use crate::net::GuardRefusal;
use crate::target::check_path;
pub use crate::target::{Target, TargetError};
use crate::tls::sni::read_client_hello;

mod credentials;
mod websocket;
pub use credentials::whole_body;
pub use websocket::{Relayed, websocket};

/// Polls `fut` once with a waker that does nothing: for futures that never wait here (in-memory I/O).
fn once<F: Future>(fut: F) -> Option<F::Output> {
    match pin!(fut).poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(out) => Some(out),
        Poll::Pending => None,
    }
}

/// What the framing guard let through to hyper, and why it stopped, if it refused something.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Framed {
    /// Every byte hyper would have read, in order.
    pub released: Vec<u8>,
    /// The code of the violation the guard recorded (`FramingViolation::code`), if any.
    pub violation: Option<&'static str>,
}

/// A client connection that delivers `reads` one by one, then end-of-file, and swallows what is written.
struct Script(VecDeque<Vec<u8>>);

impl AsyncRead for Script {
    fn poll_read(self: Pin<&mut Self>, _: &mut Context<'_>, out: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if let Some(mut next) = this.0.pop_front() {
            let n = next.len().min(out.remaining());
            out.put_slice(&next[..n]);
            if n < next.len() {
                this.0.push_front(next.split_off(n));
            }
        }
        Poll::Ready(Ok(()))
    }
}

impl AsyncWrite for Script {
    fn poll_write(self: Pin<&mut Self>, _: &mut Context<'_>, data: &[u8]) -> Poll<io::Result<usize>> {
        Poll::Ready(Ok(data.len()))
    }
    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

/// Runs the framing guard (head limit `max_head`) over a client that sends `reads` (empty reads skipped) and
/// then closes, reading as hyper would until end-of-file; an `Upgrade` request is answered `101` when
/// `switch_protocols`, else `403`.
pub fn framing(reads: &[&[u8]], max_head: usize, switch_protocols: bool) -> Framed {
    let script = Script(reads.iter().filter(|r| !r.is_empty()).map(|r| r.to_vec()).collect());
    let (mut guard, report) = FramingGuard::new(script, max_head, |v| v.reason().code().as_bytes().to_vec());
    let mut cx = Context::from_waker(Waker::noop());
    let mut released = Vec::new();
    let mut chunk = [0u8; 4096];
    let answer: &[u8] = if switch_protocols {
        b"HTTP/1.1 101 Switching Protocols\r\n\r\n"
    } else {
        b"HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\n\r\n"
    };
    let mut answered = false;
    loop {
        let mut buf = ReadBuf::new(&mut chunk);
        match Pin::new(&mut guard).poll_read(&mut cx, &mut buf) {
            Poll::Ready(Ok(())) if buf.filled().is_empty() => break,
            Poll::Ready(Ok(())) => {
                released.extend_from_slice(buf.filled());
                answered = false;
            }
            Poll::Ready(Err(_)) => break,
            // Waiting for hyper's answer to an Upgrade request (the script itself never waits).
            Poll::Pending if !answered => {
                let _ = Pin::new(&mut guard).poll_write(&mut cx, answer);
                answered = true;
            }
            Poll::Pending => break,
        }
    }
    Framed {
        released,
        violation: report.violation().map(|v| v.reason().code()),
    }
}

/// An absolute-form request target (`GET http://host/ HTTP/1.1`); `None` when `http::Uri` refuses the text.
pub fn target_absolute(uri: &str) -> Option<Result<Target, TargetError>> {
    uri.parse::<http::Uri>().ok().map(|u| Target::from_absolute_uri(&u))
}

/// A CONNECT request target as hyper hands it over; `None` when `http::Uri` refuses the text.
pub fn target_connect(uri: &str) -> Option<Result<Target, TargetError>> {
    uri.parse::<http::Uri>().ok().map(|u| Target::from_connect_uri(&u))
}

/// A CONNECT authority (`host:port`) as text.
pub fn target_authority(text: &str) -> Result<Target, TargetError> {
    Target::from_authority_form(text)
}

/// A `Host` header, `:authority` or SNI value; `default_port` when it names none.
pub fn target_host(value: &[u8], default_port: u16) -> Result<Target, TargetError> {
    Target::from_host_value(value, default_port)
}

/// The `Host` value cordon writes for `target` (port left out when it is `default_port`).
pub fn target_host_header(target: &Target, default_port: u16) -> String {
    target.authority(default_port)
}

/// The DNS name of `target`, or `None` for an IP literal.
pub fn target_name(target: &Target) -> Option<&str> {
    target.host.as_name()
}

/// A request path as policy matching checks it.
pub fn target_path(path: &str) -> Result<(), TargetError> {
    check_path(path)
}

/// No run-time sandboxes: a signed credential never verifies.
struct NoRunTime;

impl RunTime for NoRunTime {
    fn verify(&self, _: &str, _: &str) -> Result<Arc<Sandbox>, AuthFailure> {
        Err(AuthFailure::Invalid)
    }
    fn by_source(&self, _: std::net::IpAddr) -> Option<Arc<Sandbox>> {
        None
    }
}

/// The one declared sandbox [`proxy_identify`] knows: id `fuzz`, token `fuzz-token`.
pub const FUZZ_SANDBOX: (&str, &str) = ("fuzz", "fuzz-token");

/// One `Proxy-Authorization` value as cordon reads it: `Ok(Some((id, token)))` for Basic credentials;
/// `None` when the bytes cannot be a header value at all (hyper would not hand them over).
pub fn proxy_authorization(value: &[u8]) -> Option<Result<Option<(String, String)>, AuthFailure>> {
    let mut headers = HeaderMap::new();
    headers.insert(PROXY_AUTHORIZATION, HeaderValue::from_bytes(value).ok()?);
    Some(credentials(&headers))
}

/// Who a request with this `Proxy-Authorization` value is, among [`FUZZ_SANDBOX`] alone (no source ranges,
/// no run-time sandboxes); `None` when the bytes cannot be a header value.
pub fn proxy_identify(value: &[u8]) -> Option<Result<String, AuthFailure>> {
    // `None` only if FUZZ_SANDBOX's id were not an id.
    static DECLARED: LazyLock<Option<Identities>> = LazyLock::new(|| {
        let token = hex::decode(hash_token(FUZZ_SANDBOX.1))
            .ok()
            .and_then(|h| h.try_into().ok());
        let id = crate::names::SandboxId::parse(FUZZ_SANDBOX.0).ok()?;
        Some(Identities::new(&[SandboxSpec {
            id,
            user: "fuzz-user".into(),
            token_sha256: token,
            source_cidrs: Vec::new(),
            policy: "p".into(),
        }]))
    });
    let declared = DECLARED.as_ref()?;
    let mut headers = HeaderMap::new();
    headers.insert(PROXY_AUTHORIZATION, HeaderValue::from_bytes(value).ok()?);
    let client = IpAddr::V4(Ipv4Addr::LOCALHOST);
    Some(identify(declared, &NoRunTime, &credentials(&headers), client).map(|s| s.id.to_string()))
}

/// The address guard's verdict on dialling `ip` (port 443), with these `network.allow_cidrs` and no
/// metadata opt-ins or own listeners.
pub fn ip_guard(ip: IpAddr, allow_cidrs: &[IpNet]) -> Result<(), GuardRefusal> {
    Guard::new(allow_cidrs.to_vec(), Vec::new(), Vec::new()).check_addr(SocketAddr::new(ip, 443))
}

/// The exfiltration scanner for placeholders and these `(credential, secret)` pairs; `None` when its automaton
/// cannot be built.
pub fn detector(secrets: &[(String, String)]) -> Option<Detector> {
    let secrets: Vec<(String, SecretString)> = secrets
        .iter()
        .map(|(c, s)| (c.clone(), SecretString::from(s.as_str())))
        .collect();
    Detector::new(&secrets).ok()
}

/// What the scan finds in `text`.
pub fn scan(detector: &Detector, text: &[u8]) -> Found {
    detector.scan(text)
}

/// The readings of `text` the scan looks through (the text itself first).
pub fn text_views(text: &[u8]) -> Vec<Vec<u8>> {
    views(text).into_iter().map(|v| v.into_owned()).collect()
}

/// The masker for these `(secret, placeholder)` pairs; `None` when there is nothing to mask.
pub fn masker(secrets: &[(String, String)]) -> Option<Arc<Masker>> {
    let pairs: Vec<(SecretString, String)> = secrets
        .iter()
        .map(|(s, p)| (SecretString::from(s.as_str()), p.clone()))
        .collect();
    Masker::new(&pairs).map(Arc::new)
}

/// `text` masked in one piece.
pub fn mask_whole(masker: &Masker, text: &[u8]) -> Vec<u8> {
    masker.mask(text).unwrap_or_else(|| text.to_vec())
}

/// `chunks` masked as a response body arriving in these data frames (`MaskedBody`, no content coding);
/// `None` when the body fails.
pub fn mask_streamed(masker: &Arc<Masker>, chunks: &[&[u8]]) -> Option<Vec<u8>> {
    let frames: Vec<Result<Frame<Bytes>, BoxError>> = chunks
        .iter()
        .map(|c| Ok(Frame::data(Bytes::copy_from_slice(c))))
        .collect();
    let inner = StreamBody::new(futures_util::stream::iter(frames)).boxed_unsync();
    let mut body = MaskedBody::decoded(inner, masker.clone(), &Default::default()).ok()?;
    let mut cx = Context::from_waker(Waker::noop());
    let mut out = Vec::new();
    loop {
        match Pin::new(&mut body).poll_frame(&mut cx) {
            Poll::Ready(Some(Ok(frame))) => out.extend_from_slice(frame.data_ref()?),
            Poll::Ready(None) => return Some(out),
            Poll::Ready(Some(Err(_))) | Poll::Pending => return None,
        }
    }
}

/// What the SNI reader made of the first bytes of a connection: the bytes it read and the server name, or
/// why it gave up.
pub fn sni(start: &[u8]) -> Result<(Vec<u8>, Option<String>), String> {
    let mut reader = start;
    match once(read_client_hello(&mut reader)) {
        Some(read) => read.map_err(|e| e.to_string()),
        None => Err("waited for more bytes".into()),
    }
}

/// Answers A and AAAA for every name the target parser reads as that same name (as `entry::dns` requires
/// before it asks the policy): 192.0.2.1 and 2001:db8::1; refuses the rest.
struct FuzzAnswerer;

impl FuzzAnswerer {
    fn named(q: &Query) -> bool {
        Target::from_host_value(q.name.as_bytes(), 53).is_ok_and(|t| t.host.as_name() == Some(q.name.as_str()))
    }
}

impl Answerer for FuzzAnswerer {
    async fn answer(&self, q: &Query) -> DnsAnswer {
        if FuzzAnswerer::named(q) {
            DnsAnswer::Addrs(vec![
                IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1)),
                IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1)),
            ])
        } else {
            DnsAnswer::Refused
        }
    }

    async fn other(&self, q: &Query) -> bool {
        FuzzAnswerer::named(q)
    }

    async fn refused(&self, _q: &Query, _reason: crate::reason::Reason) {}
}

/// The TTL the fuzzed responder answers with.
pub const DNS_TTL: u32 = 30;

/// cordon's DNS responder, serving [`FuzzAnswerer`] on 127.0.0.1 (UDP) in a runtime of its own.
static RESPONDER: LazyLock<Option<(tokio::runtime::Runtime, SocketAddr)>> = LazyLock::new(|| {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .ok()?;
    let addr = rt.block_on(async {
        let (udp, tcp) = crate::proxy::entry::dns::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)))
            .await
            .ok()?;
        let addr = udp.local_addr().ok()?;
        let serving = crate::dns::server::serve(udp, tcp, Arc::new(FuzzAnswerer), DNS_TTL, std::future::pending());
        tokio::spawn(serving);
        Some(addr)
    })?;
    Some((rt, addr))
});

/// cordon's DNS responder's answer to one UDP datagram, or `None` if none came within `wait`.
///
/// There is no pure entry into the responder (its request handler is private to `dns::server`), so the
/// datagram goes over loopback to the real responder, running in this process.
pub fn dns_query(packet: &[u8], wait: Duration) -> Option<Vec<u8>> {
    let (rt, addr) = RESPONDER.as_ref()?;
    rt.block_on(async {
        let socket = tokio::net::UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).await.ok()?;
        socket.send_to(packet, addr).await.ok()?;
        let mut buf = vec![0u8; 65_536];
        let (n, _) = tokio::time::timeout(wait, socket.recv_from(&mut buf))
            .await
            .ok()?
            .ok()?;
        buf.truncate(n);
        Some(buf)
    })
}

/// One configuration error as a target sees it: line and column (where the YAML parser knows them), the
/// path of the offending value (empty when none), and the message.
pub type ConfigProblem = (Option<(usize, usize)>, String, String);

/// The configuration loader on `text` (as the file `fuzz.yaml`).
pub fn config(text: &str) -> Result<Config, Vec<ConfigProblem>> {
    Config::parse("fuzz.yaml", text)
        .map_err(|errors| errors.0.into_iter().map(|e| (e.location, e.path, e.message)).collect())
}

/// One GraphQL operation as a target sees it: its type (`query`, `mutation`, `subscription`), its name, and the
/// fields it selects at its root (sorted).
pub type GraphqlOperation = (&'static str, Option<String>, Vec<String>);

/// The operations of a GraphQL document as cordon reads them (`src/graphql/document.rs`), or why it refuses it.
pub fn graphql_operations(text: &str) -> Result<Vec<GraphqlOperation>, String> {
    crate::graphql::document::operations(text).map(|ops| {
        ops.into_iter()
            .map(|op| {
                let mut fields = op.fields;
                fields.sort();
                (op.ty.as_str(), op.name, fields)
            })
            .collect()
    })
}

/// The verdict on a GraphQL request (`src/graphql/`) under the rule `operations: [query], ask: [mutation.add*],
/// deny: ["mutation.delete*", subscription]`, with no persisted query known: `pass`, `ask`, `invalid`, or the
/// refusal's reason code.
pub fn graphql_judge(method: &str, query: Option<&str>, content_type: Option<&str>, body: &[u8]) -> String {
    use crate::graphql::judge::{Documents, judge};
    use crate::policy::protocol::Judgement;
    struct Nothing;
    impl Documents for Nothing {
        fn get(&self, _: &str) -> Option<Arc<str>> {
            None
        }
        fn put(&self, _: &str, _: Arc<str>) {}
    }
    static RULES: LazyLock<Option<crate::policy::graphql::GraphqlRules>> = LazyLock::new(|| {
        let v = |l: &[&str]| l.iter().map(|s| s.to_string()).collect();
        crate::policy::graphql::GraphqlRules::new(
            v(&["query"]),
            v(&["mutation.add*"]),
            v(&["mutation.delete*", "subscription"]),
            Vec::new(),
        )
        .ok()
    });
    let (Some(rules), Ok(method)) = (RULES.as_ref(), http::Method::from_bytes(method.as_bytes())) else {
        return "invalid".into();
    };
    let (params, batch) = match crate::graphql::request::read(&method, query, content_type, body) {
        Ok(read) => read,
        Err(_) => return "invalid".into(),
    };
    match judge(rules, &Nothing, params, batch).1 {
        Judgement::Pass => "pass".into(),
        Judgement::Ask(_) => "ask".into(),
        Judgement::Invalid(_) => "invalid".into(),
        Judgement::Refused(r) => r.reason.code().into(),
    }
}

/// The verdict on an MCP POST body (`src/mcp/`) under the rule `tools: ["read_*"], ask: ["send_*"],
/// deny: ["delete_*"]`, no tool changed: `pass`, `ask`, `invalid`, or the refusal's reason code.
pub fn mcp_judge(body: &[u8]) -> String {
    use crate::mcp::judge::judge;
    use crate::policy::protocol::Judgement;
    static RULES: LazyLock<Option<crate::policy::mcp::McpRules>> = LazyLock::new(|| {
        let v = |l: &[&str]| l.iter().map(|s| s.to_string()).collect();
        crate::policy::mcp::McpRules::new(v(&["read_*"]), v(&["send_*"]), v(&["delete_*"]), Vec::new()).ok()
    });
    let Some(rules) = RULES.as_ref() else {
        return "invalid".into();
    };
    match judge(rules, &|_| false, body).1 {
        Judgement::Pass => "pass".into(),
        Judgement::Ask(_) => "ask".into(),
        Judgement::Invalid(_) => "invalid".into(),
        Judgement::Refused(r) => r.reason.code().into(),
    }
}
