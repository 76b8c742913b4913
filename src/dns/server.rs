//! DNS responder for sandboxes: answers A/AAAA from the policy, refuses everything it cannot vouch for.
//!
//! Built on hickory-server's [`Server`] (plain UDP and TCP). Every query is decided by an [`Answerer`]:
//! A and AAAA get addresses (or REFUSED / NXDOMAIN), other types get NOERROR with no data when the name
//! is allowed, REFUSED otherwise; what is refused before any policy applies (another opcode, class or ANY, not
//! one question, not a name) is told to the answerer too. Nothing is ever resolved here: the answerer owns
//! resolution and audit. A packet hickory cannot parse at all gets FORMERR from hickory itself, unseen here.

use std::future::Future;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use hickory_proto::op::{Edns, Header, HeaderCounts, Metadata, OpCode, ResponseCode};
use hickory_proto::rr::rdata::{A, AAAA};
use hickory_proto::rr::{DNSClass, Name, RData, Record, RecordType};
use hickory_proto::serialize::binary::{BinDecoder, BinEncodable, BinEncoder, NameEncoding};
use hickory_server::Server;
use hickory_server::net::runtime::Time;
use hickory_server::server::{Request, RequestHandler, ResponseHandler, ResponseInfo};
use hickory_server::zone_handler::{MessageResponseBuilder, Queries};
use tracing::warn;

use crate::reason::Reason;

/// How long a TCP connection may stay idle between two queries before it is closed.
const TCP_IDLE_TIMEOUT: Duration = Duration::from_secs(10);

/// Responses queued per TCP connection (queries on one connection are answered one at a time).
const TCP_RESPONSE_BUFFER: usize = 32;

/// Largest UDP payload advertised back to EDNS clients.
const MAX_UDP_PAYLOAD: u16 = 1232;

/// What the policy says about one query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum DnsAnswer {
    /// Answer with these addresses (the responder keeps only the ones of the asked family: A → IPv4,
    /// AAAA → IPv6; none of that family → NOERROR with no records).
    Addrs(Vec<IpAddr>),
    /// REFUSED.
    Refused,
    /// NXDOMAIN.
    NxDomain,
}

/// One query as the responder saw it, for the policy and the audit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Query {
    /// Address and port the query came from.
    pub(crate) src: SocketAddr,
    /// Lowercased, no trailing dot, ASCII (punycode as received).
    pub(crate) name: String,
    /// "A", "AAAA", "TXT", ... (the record type's mnemonic; `TYPEn` for types hickory does not know).
    pub(crate) qtype: String,
    /// "udp" or "tcp"
    pub(crate) protocol: &'static str,
}

/// Decides each query. Implemented by cordon (policy lookup, resolution, audit).
pub(crate) trait Answerer: Send + Sync + 'static {
    /// Called for A and AAAA queries only (ANY gets REFUSED without calling).
    fn answer(&self, q: &Query) -> impl Future<Output = DnsAnswer> + Send;
    /// Called for every query of another type; return true to answer NOERROR/no data (name allowed),
    /// false for REFUSED.
    fn other(&self, q: &Query) -> impl Future<Output = bool> + Send;
    /// Called for a query refused before any policy applies, so that it is audited like every other refusal:
    /// `reason` is `dns_opcode_unsupported` (an opcode other than QUERY: NOTIFY, UPDATE, ...),
    /// `dns_malformed` (not exactly one question), `dns_class_refused` (a class other than IN: CHAOS's
    /// `version.bind`, HESIOD), `dns_any_refused` (type ANY) or `bad_host` (a name that is not one). `q.name`
    /// is the question's name as far as it reads (empty when there is none).
    fn refused(&self, q: &Query, reason: Reason) -> impl Future<Output = ()> + Send;
}

/// Serve DNS on these sockets until `shutdown` resolves. TTL of answers: `ttl` seconds.
///
/// Returns `Ok(())` once `shutdown` has resolved and both listeners have stopped; connections and
/// queries still in flight at that point are dropped (their answerer futures included). Returns an error
/// if both of hickory's listener tasks end on their own before that (e.g. the sockets became unusable);
/// if only one does, the other keeps serving and its error is reported when `serve` returns.
pub(crate) async fn serve<A: Answerer>(
    udp: tokio::net::UdpSocket,
    tcp: tokio::net::TcpListener,
    answerer: Arc<A>,
    ttl: u32,
    shutdown: impl Future<Output = ()> + Send,
) -> io::Result<()> {
    let mut server = Server::new(Handler { answerer, ttl });
    server.register_socket(udp);
    server.register_listener(tcp, TCP_IDLE_TIMEOUT, TCP_RESPONSE_BUFFER);
    let token = server.shutdown_token().clone();

    let done = server.block_until_done();
    tokio::pin!(done);
    tokio::pin!(shutdown);
    tokio::select! {
        result = &mut done => match result {
            Ok(()) => Err(io::Error::other("dns listeners stopped before shutdown")),
            Err(e) => Err(io::Error::other(e)),
        },
        () = &mut shutdown => {
            token.cancel();
            done.await.map_err(io::Error::other)
        }
    }
}

/// hickory request handler wrapping the [`Answerer`].
struct Handler<A> {
    /// The policy.
    answerer: Arc<A>,
    /// TTL of the records in answers, in seconds.
    ttl: u32,
}

/// The decision for one request, before encoding.
enum Served {
    /// An error or refusal code, no records.
    Code(ResponseCode),
    /// NOERROR with these records (possibly none).
    Records(Vec<Record>),
}

impl<A: Answerer> Handler<A> {
    /// Validates the request, consults the answerer if needed, and builds the records.
    async fn decide(&self, request: &Request) -> Served {
        let protocol = if request.protocol().is_datagram() { "udp" } else { "tcp" };
        let first = request.queries.queries().first();
        let early = Query {
            src: request.src(),
            name: first
                .map(|q| {
                    q.original()
                        .name()
                        .to_ascii()
                        .trim_end_matches('.')
                        .to_ascii_lowercase()
                })
                .unwrap_or_default(),
            qtype: first.map(|q| mnemonic(q.query_type())).unwrap_or_default(),
            protocol,
        };
        let refuse = |code: ResponseCode, reason: Reason| async move {
            self.answerer.refused(&early, reason).await;
            Served::Code(code)
        };
        if request.metadata.op_code != OpCode::Query {
            return refuse(ResponseCode::NotImp, Reason::DnsOpcodeUnsupported).await;
        }
        let [query] = request.queries.queries() else {
            return refuse(ResponseCode::FormErr, Reason::DnsMalformed).await;
        };
        let qtype = query.query_type();
        if query.query_class() != DNSClass::IN {
            return refuse(ResponseCode::Refused, Reason::DnsClassRefused).await;
        }
        if qtype == RecordType::ANY {
            return refuse(ResponseCode::Refused, Reason::DnsAnyRefused).await;
        }
        let asked = query.original().name();
        let Some(name) = normalise(asked) else {
            return refuse(ResponseCode::Refused, Reason::BadHost).await;
        };
        let q = Query {
            src: request.src(),
            name,
            qtype: mnemonic(qtype),
            protocol,
        };

        if qtype != RecordType::A && qtype != RecordType::AAAA {
            return if self.answerer.other(&q).await {
                Served::Records(Vec::new())
            } else {
                Served::Code(ResponseCode::Refused)
            };
        }
        match self.answerer.answer(&q).await {
            DnsAnswer::Refused => Served::Code(ResponseCode::Refused),
            DnsAnswer::NxDomain => Served::Code(ResponseCode::NXDomain),
            DnsAnswer::Addrs(addrs) => Served::Records(
                addrs
                    .into_iter()
                    .filter_map(|ip| match (qtype, ip) {
                        (RecordType::A, IpAddr::V4(v4)) => Some(RData::A(A(v4))),
                        (RecordType::AAAA, IpAddr::V6(v6)) => Some(RData::AAAA(AAAA(v6))),
                        _ => None,
                    })
                    .map(|rdata| Record::from_rdata(asked.clone(), self.ttl, rdata))
                    .collect(),
            ),
        }
    }
}

#[async_trait::async_trait]
impl<A: Answerer> RequestHandler for Handler<A> {
    async fn handle_request<R: ResponseHandler, T: Time>(
        &self,
        request: &Request,
        mut response_handle: R,
    ) -> ResponseInfo {
        let outcome = self.decide(request).await;

        let mut metadata = Metadata::response_from_request(&request.metadata);
        metadata.authoritative = false;
        metadata.recursion_available = true;
        let records = match outcome {
            Served::Code(code) => {
                metadata.response_code = code;
                Vec::new()
            }
            Served::Records(records) => records,
        };

        // RFC 6891: a request with OPT gets an OPT back.
        let edns = request.edns.as_ref().map(|req| {
            let mut edns = Edns::new();
            edns.set_max_payload(req.max_payload().clamp(512, MAX_UDP_PAYLOAD));
            edns
        });
        let echoed = uncompressed(&request.queries);
        let response = MessageResponseBuilder::new(echoed.as_ref().unwrap_or(&request.queries), edns.as_ref()).build(
            metadata,
            records.iter(),
            std::iter::empty(),
            std::iter::empty(),
            std::iter::empty(),
        );
        match response_handle.send_response(response).await {
            Ok(info) => info,
            Err(error) => {
                warn!(%error, src = %request.src(), "dns: failed to send response");
                let mut metadata = Metadata::response_from_request(&request.metadata);
                metadata.response_code = ResponseCode::ServFail;
                ResponseInfo::from(Header {
                    metadata,
                    counts: HeaderCounts::default(),
                })
            }
        }
    }
}

/// The question section to echo when the one received used name compression: each question written out in
/// full. hickory echoes the question as received, and a compression pointer there can only point back into the
/// header (or an earlier question), whose bytes the answer changes: echoed, it would make the answer unreadable.
/// `None` when the question as received is already in full.
fn uncompressed(queries: &Queries) -> Option<Queries> {
    let mut bytes = Vec::new();
    let mut encoder = BinEncoder::new(&mut bytes);
    encoder.set_name_encoding(NameEncoding::Uncompressed);
    for q in queries.queries() {
        q.original().emit(&mut encoder).ok()?;
    }
    if bytes == queries.as_bytes() {
        return None;
    }
    Queries::read(&mut BinDecoder::new(&bytes), queries.len()).ok()
}

/// The name as the policy sees it: labels lowercased and joined by dots, no trailing dot.
///
/// `None` (the query is refused without consulting) for the root name and for any label with a byte
/// outside ASCII letters, digits, `-` and `_` (non-ASCII, dots inside labels, spaces, controls, ...).
fn normalise(name: &Name) -> Option<String> {
    let mut out = String::with_capacity(name.len());
    for label in name.iter() {
        if !label
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || *b == b'-' || *b == b'_')
        {
            return None;
        }
        if !out.is_empty() {
            out.push('.');
        }
        out.extend(label.iter().map(|b| char::from(b.to_ascii_lowercase())));
    }
    (!out.is_empty()).then_some(out)
}

/// The record type's mnemonic ("A", "TXT", ...), or RFC 3597's `TYPEn` for unknown types.
fn mnemonic(qtype: RecordType) -> String {
    match qtype {
        RecordType::Unknown(code) => format!("TYPE{code}"),
        known => <&'static str>::from(known).to_owned(),
    }
}

#[cfg(test)]
#[path = "server_tests.rs"]
mod tests;
