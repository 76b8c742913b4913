#![expect(clippy::unwrap_used, reason = "tests")]
//! Tests for the DNS responder, over real UDP and TCP sockets on 127.0.0.1.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hickory_proto::op::{Edns, Message, MessageType, OpCode, Query as Question, ResponseCode};
use hickory_proto::rr::rdata::{A, AAAA};
use hickory_proto::rr::{DNSClass, Name, RData, RecordType};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream, UdpSocket};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio::time::timeout;

use super::{Answerer, DnsAnswer, Query, serve};

/// TTL the harness serves with.
const TTL: u32 = 42;
/// Upper bound on any single network wait in these tests.
const WAIT: Duration = Duration::from_secs(5);

/// "allowed.test" → both families, "v6only.test" → ::1, "nx.test" → NXDOMAIN, anything else refused.
#[derive(Default)]
struct TestAnswerer {
    /// Calls to either method.
    calls: AtomicUsize,
    /// Every query the answerer saw.
    seen: Mutex<Vec<Query>>,
    /// Every query refused before the policy, with its reason (not counted in `calls`).
    refusals: Mutex<Vec<(String, &'static str)>>,
}

impl TestAnswerer {
    /// Records one call.
    fn note(&self, q: &Query) {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.seen.lock().unwrap().push(q.clone());
    }
}

impl Answerer for TestAnswerer {
    async fn answer(&self, q: &Query) -> DnsAnswer {
        self.note(q);
        match q.name.as_str() {
            "allowed.test" => DnsAnswer::Addrs(vec![
                IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)),
                IpAddr::V6(Ipv6Addr::LOCALHOST),
            ]),
            "v6only.test" => DnsAnswer::Addrs(vec![IpAddr::V6(Ipv6Addr::LOCALHOST)]),
            "nx.test" => DnsAnswer::NxDomain,
            _ => DnsAnswer::Refused,
        }
    }

    async fn other(&self, q: &Query) -> bool {
        self.note(q);
        q.name == "allowed.test"
    }

    async fn refused(&self, q: &Query, reason: crate::reason::Reason) {
        self.refusals.lock().unwrap().push((q.name.clone(), reason.code()));
    }
}

/// A running responder.
struct Harness {
    /// UDP address served.
    udp: SocketAddr,
    /// TCP address served.
    tcp: SocketAddr,
    /// The answerer, to inspect calls.
    answerer: Arc<TestAnswerer>,
    /// Resolves the shutdown future.
    stop: oneshot::Sender<()>,
    /// The `serve` task.
    task: JoinHandle<std::io::Result<()>>,
}

/// Binds ephemeral sockets and spawns `serve`.
async fn start() -> Harness {
    let udp = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let tcp = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let (udp_addr, tcp_addr) = (udp.local_addr().unwrap(), tcp.local_addr().unwrap());
    let answerer = Arc::new(TestAnswerer::default());
    let (stop, stopped) = oneshot::channel::<()>();
    let shutdown = async move {
        let _ = stopped.await;
    };
    let task = tokio::spawn(serve(udp, tcp, answerer.clone(), TTL, shutdown));
    Harness {
        udp: udp_addr,
        tcp: tcp_addr,
        answerer,
        stop,
        task,
    }
}

impl Harness {
    /// Number of answerer calls so far.
    fn calls(&self) -> usize {
        self.answerer.calls.load(Ordering::SeqCst)
    }
}

/// A recursive query for `name`/`rtype`, class IN.
fn query(name: &str, rtype: RecordType) -> Message {
    let mut msg = Message::query();
    msg.metadata.recursion_desired = true;
    msg.add_query(Question::query(Name::from_ascii(name).unwrap(), rtype));
    msg
}

/// Sends `msg` over UDP and returns the parsed reply.
async fn udp_ask(addr: SocketAddr, msg: &Message) -> Message {
    let sock = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    sock.send_to(&msg.to_vec().unwrap(), addr).await.unwrap();
    let mut buf = vec![0u8; 4096];
    let (len, _) = timeout(WAIT, sock.recv_from(&mut buf)).await.unwrap().unwrap();
    Message::from_vec(&buf[..len]).unwrap()
}

/// Sends `msg` on an open TCP stream (2-byte length prefix) and returns the parsed reply.
async fn tcp_exchange(stream: &mut TcpStream, msg: &Message) -> Message {
    let bytes = msg.to_vec().unwrap();
    let mut framed = u16::try_from(bytes.len()).unwrap().to_be_bytes().to_vec();
    framed.extend_from_slice(&bytes);
    stream.write_all(&framed).await.unwrap();
    let mut len = [0u8; 2];
    timeout(WAIT, stream.read_exact(&mut len)).await.unwrap().unwrap();
    let mut buf = vec![0u8; usize::from(u16::from_be_bytes(len))];
    timeout(WAIT, stream.read_exact(&mut buf)).await.unwrap().unwrap();
    Message::from_vec(&buf).unwrap()
}

/// The addresses in the reply's answer section.
fn addrs(reply: &Message) -> Vec<IpAddr> {
    reply
        .answers
        .iter()
        .filter_map(|r| match &r.data {
            RData::A(A(v4)) => Some(IpAddr::V4(*v4)),
            RData::AAAA(AAAA(v6)) => Some(IpAddr::V6(*v6)),
            _ => None,
        })
        .collect()
}

/// Checks the header fields every reply must carry, and that the question is echoed.
fn check_reply(request: &Message, reply: &Message, code: ResponseCode) {
    assert_eq!(reply.metadata.id, request.metadata.id);
    assert_eq!(reply.metadata.message_type, MessageType::Response);
    assert_eq!(reply.metadata.response_code, code);
    assert!(!reply.metadata.authoritative);
    assert!(reply.metadata.recursion_available);
    assert!(reply.metadata.recursion_desired);
    assert_eq!(reply.queries, request.queries);
}

#[tokio::test]
async fn a_gets_only_ipv4_and_aaaa_only_ipv6() {
    let h = start().await;
    let req = query("allowed.test.", RecordType::A);
    let reply = udp_ask(h.udp, &req).await;
    check_reply(&req, &reply, ResponseCode::NoError);
    assert_eq!(addrs(&reply), vec![IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1))]);
    let record = &reply.answers[0];
    assert_eq!((record.name.to_ascii(), record.ttl), ("allowed.test.".to_owned(), TTL));
    assert_eq!((record.record_type(), record.dns_class), (RecordType::A, DNSClass::IN));

    let req = query("allowed.test.", RecordType::AAAA);
    let reply = udp_ask(h.udp, &req).await;
    check_reply(&req, &reply, ResponseCode::NoError);
    assert_eq!(addrs(&reply), vec![IpAddr::V6(Ipv6Addr::LOCALHOST)]);
    assert_eq!(reply.answers[0].record_type(), RecordType::AAAA);
    assert_eq!(h.calls(), 2);
}

#[tokio::test]
async fn no_address_of_the_asked_family_is_noerror_empty() {
    let h = start().await;
    let req = query("v6only.test.", RecordType::A);
    let reply = udp_ask(h.udp, &req).await;
    check_reply(&req, &reply, ResponseCode::NoError);
    assert!(reply.answers.is_empty());
}

#[tokio::test]
async fn refused_and_nxdomain() {
    let h = start().await;
    let req = query("denied.test.", RecordType::A);
    let reply = udp_ask(h.udp, &req).await;
    check_reply(&req, &reply, ResponseCode::Refused);
    assert!(reply.answers.is_empty());

    let req = query("nx.test.", RecordType::AAAA);
    let reply = udp_ask(h.udp, &req).await;
    check_reply(&req, &reply, ResponseCode::NXDomain);
    assert!(reply.answers.is_empty());
    assert_eq!(h.calls(), 2);
}

#[tokio::test]
async fn other_types_ask_the_answerer_about_the_name() {
    let h = start().await;
    let req = query("allowed.test.", RecordType::TXT);
    let reply = udp_ask(h.udp, &req).await;
    check_reply(&req, &reply, ResponseCode::NoError);
    assert!(reply.answers.is_empty());

    let req = query("denied.test.", RecordType::TXT);
    let reply = udp_ask(h.udp, &req).await;
    check_reply(&req, &reply, ResponseCode::Refused);
    assert!(reply.answers.is_empty());

    let seen = h.answerer.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 2);
    assert_eq!((seen[0].qtype.as_str(), seen[0].protocol), ("TXT", "udp"));
}

#[tokio::test]
async fn any_is_refused_without_consulting() {
    let h = start().await;
    let req = query("allowed.test.", RecordType::ANY);
    let reply = udp_ask(h.udp, &req).await;
    check_reply(&req, &reply, ResponseCode::Refused);
    assert!(reply.answers.is_empty());
    assert_eq!(h.calls(), 0);
}

#[tokio::test]
async fn names_are_lowercased_without_trailing_dot() {
    let h = start().await;
    let req = query("ALLOWED.Test.", RecordType::A);
    let reply = udp_ask(h.udp, &req).await;
    check_reply(&req, &reply, ResponseCode::NoError);
    assert_eq!(addrs(&reply), vec![IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1))]);
    // The answer carries the name exactly as asked.
    assert_eq!(reply.answers[0].name.to_ascii(), "ALLOWED.Test.");

    let seen = h.answerer.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].name, "allowed.test");
    assert_eq!(seen[0].qtype, "A");
    assert_eq!(seen[0].src.ip(), IpAddr::V4(Ipv4Addr::LOCALHOST));
}

#[tokio::test]
async fn non_ascii_and_odd_names_are_refused_without_consulting() {
    let h = start().await;
    let labels: [&[u8]; 2] = [b"caf\xc3\xa9", b"test"];
    let dotted: [&[u8]; 2] = [b"allowed.test", b"x"];
    for name in [labels, dotted] {
        let mut req = Message::query();
        req.add_query(Question::query(Name::from_labels(name).unwrap(), RecordType::A));
        let reply = udp_ask(h.udp, &req).await;
        assert_eq!(reply.metadata.response_code, ResponseCode::Refused);
    }
    let req = query(".", RecordType::NS);
    assert_eq!(udp_ask(h.udp, &req).await.metadata.response_code, ResponseCode::Refused);
    assert_eq!(h.calls(), 0);
}

#[tokio::test]
async fn tcp_answers_the_same_and_keeps_the_connection() {
    let h = start().await;
    let mut stream = TcpStream::connect(h.tcp).await.unwrap();
    let req = query("allowed.test.", RecordType::A);
    let reply = tcp_exchange(&mut stream, &req).await;
    check_reply(&req, &reply, ResponseCode::NoError);
    assert_eq!(addrs(&reply), vec![IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1))]);

    let req = query("allowed.test.", RecordType::AAAA);
    let reply = tcp_exchange(&mut stream, &req).await;
    check_reply(&req, &reply, ResponseCode::NoError);
    assert_eq!(addrs(&reply), vec![IpAddr::V6(Ipv6Addr::LOCALHOST)]);

    let req = query("nx.test.", RecordType::A);
    check_reply(&req, &tcp_exchange(&mut stream, &req).await, ResponseCode::NXDomain);
    let req = query("denied.test.", RecordType::A);
    check_reply(&req, &tcp_exchange(&mut stream, &req).await, ResponseCode::Refused);

    let seen = h.answerer.seen.lock().unwrap().clone();
    assert!(seen.iter().all(|q| q.protocol == "tcp"));
    assert_eq!(seen.len(), 4);
}

#[tokio::test]
async fn question_count_other_than_one_is_formerr() {
    let h = start().await;
    let mut req = query("allowed.test.", RecordType::A);
    req.add_query(Question::query(Name::from_ascii("nx.test.").unwrap(), RecordType::A));
    let reply = udp_ask(h.udp, &req).await;
    assert_eq!(reply.metadata.id, req.metadata.id);
    assert_eq!(reply.metadata.response_code, ResponseCode::FormErr);
    assert!(reply.answers.is_empty());

    let mut req = Message::query();
    req.metadata.recursion_desired = true;
    let reply = udp_ask(h.udp, &req).await;
    check_reply(&req, &reply, ResponseCode::FormErr);
    assert_eq!(h.calls(), 0);
}

#[tokio::test]
async fn other_classes_and_opcodes_are_not_served() {
    let h = start().await;
    let mut req = Message::query();
    req.metadata.recursion_desired = true;
    let mut question = Question::query(Name::from_ascii("allowed.test.").unwrap(), RecordType::A);
    question.set_query_class(DNSClass::CH);
    req.add_query(question);
    check_reply(&req, &udp_ask(h.udp, &req).await, ResponseCode::Refused);

    let mut req = query("allowed.test.", RecordType::A);
    req.metadata.op_code = OpCode::Status;
    let reply = udp_ask(h.udp, &req).await;
    assert_eq!(reply.metadata.response_code, ResponseCode::NotImp);
    assert_eq!(h.calls(), 0);
    // Each refusal is told to the answerer, for the audit, with the name it asked.
    let refusals = h.answerer.refusals.lock().unwrap().clone();
    assert_eq!(
        refusals,
        vec![
            ("allowed.test".to_string(), "dns_class_refused"),
            ("allowed.test".to_string(), "dns_opcode_unsupported"),
        ]
    );
}

#[tokio::test]
async fn edns_queries_get_an_opt_back() {
    let h = start().await;
    let mut req = query("allowed.test.", RecordType::A);
    let mut edns = Edns::new();
    edns.set_max_payload(4096);
    req.set_edns(edns);
    let reply = udp_ask(h.udp, &req).await;
    assert_eq!(reply.metadata.response_code, ResponseCode::NoError);
    assert_eq!(reply.edns.as_ref().map(Edns::max_payload), Some(1232));
    assert_eq!(addrs(&reply).len(), 1);
}

#[tokio::test]
async fn shutdown_makes_serve_return() {
    let h = start().await;
    let req = query("allowed.test.", RecordType::A);
    check_reply(&req, &udp_ask(h.udp, &req).await, ResponseCode::NoError);
    // An open TCP connection must not hold shutdown up, and is closed by it.
    let mut open = TcpStream::connect(h.tcp).await.unwrap();
    check_reply(&req, &tcp_exchange(&mut open, &req).await, ResponseCode::NoError);

    h.stop.send(()).unwrap();
    let result = timeout(WAIT, h.task).await.unwrap().unwrap();
    assert!(result.is_ok(), "{result:?}");
    let mut buf = [0u8; 1];
    assert!(matches!(
        timeout(WAIT, open.read(&mut buf)).await.unwrap(),
        Ok(0) | Err(_)
    ));
    // The listener is gone with the server.
    assert!(TcpStream::connect(h.tcp).await.is_err());
}

#[tokio::test]
async fn idle_tcp_connections_are_closed_after_ten_seconds() {
    let h = start().await;
    let mut stream = TcpStream::connect(h.tcp).await.unwrap();
    let req = query("allowed.test.", RecordType::A);
    check_reply(&req, &tcp_exchange(&mut stream, &req).await, ResponseCode::NoError);
    let idle_since = tokio::time::Instant::now();
    let mut buf = [0u8; 1];
    let read = timeout(Duration::from_secs(15), stream.read(&mut buf)).await.unwrap();
    assert!(matches!(read, Ok(0) | Err(_)), "{read:?}");
    let idle = idle_since.elapsed();
    assert!(idle >= Duration::from_millis(9_500), "closed after {idle:?}");
}

/// A question whose name ends in a compression pointer into the header (found by the `dns_query` fuzzer): the
/// answer changes the header's bytes, so echoing the question as received made the answer unreadable. It is
/// echoed written out in full, and the answer parses with the question as it was read.
#[tokio::test]
async fn a_question_compressed_into_the_header_gets_an_answer_that_parses() {
    let h = start().await;
    let raw: &[u8] = &[
        0x12, 0x34, 0x01, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // header: one question
        0x07, b'e', b'x', 0x00, 0x00, 0x00, 0x00, 0x01, 0xc0, 0x02, // a label, then a pointer to offset 2
        0x00, 0x01, 0x00, 0x01, // A, IN
    ];
    let asked = Message::from_vec(raw).unwrap();
    let sock = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    sock.send_to(raw, h.udp).await.unwrap();
    let mut buf = vec![0u8; 4096];
    let (len, _) = timeout(WAIT, sock.recv_from(&mut buf)).await.unwrap().unwrap();
    let reply = Message::from_vec(&buf[..len]).unwrap();
    assert_eq!(reply.metadata.id, 0x1234);
    assert_eq!(reply.queries, asked.queries);
    assert_eq!(reply.metadata.response_code, ResponseCode::Refused);
    assert!(reply.answers.is_empty());
    // A question sent in full is echoed exactly as sent (case included).
    let req = query("AlLoWeD.test.", RecordType::A);
    let reply = udp_ask(h.udp, &req).await;
    assert_eq!(reply.queries, req.queries);
}
