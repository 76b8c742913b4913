//! The DNS responder on cordon's real state, over real UDP sockets on loopback (no namespaces needed): it
//! answers a sandbox's allowed names from cordon's own resolution, refuses the rest and unknown sources, holds
//! a flood of queries to the sandbox's request rate, and audits every query.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use cordon::config::Config;
use cordon::state::ProxyState;
use hickory_proto::op::{Message, Query, ResponseCode};
use hickory_proto::rr::{Name, RData, RecordType};
use tokio::net::UdpSocket;

use crate::rigs::proxy::Capture;

async fn code(server: SocketAddr, from: &str, name: &str) -> ResponseCode {
    ask(server, from, name, RecordType::A).await.metadata.response_code
}

async fn ask(server: SocketAddr, from: &str, name: &str, rtype: RecordType) -> Message {
    let mut msg = Message::query();
    msg.metadata.recursion_desired = true;
    msg.add_query(Query::query(Name::from_ascii(name).unwrap(), rtype));
    let sock = UdpSocket::bind((from, 0)).await.unwrap();
    sock.send_to(&msg.to_vec().unwrap(), server).await.unwrap();
    let mut buf = vec![0u8; 4096];
    let (len, _) = tokio::time::timeout(Duration::from_secs(5), sock.recv_from(&mut buf))
        .await
        .expect("the responder answered")
        .unwrap();
    Message::from_vec(&buf[..len]).unwrap()
}

#[tokio::test]
async fn the_responder_answers_allowed_names_only_and_within_the_sandbox_rate() {
    let yaml = r#"
network:
  allow_cidrs: ["127.0.0.0/8"]
  hosts: { api.test: ["127.0.0.9"], private.test: ["10.1.2.3"] }
limits:
  per_sandbox:
    requests: { per_second: 1, burst: 8 }
sandboxes:
  - { id: vm, user: alice, policy: p, source_cidrs: ["127.0.0.1/32"] }
policies:
  p:
    allow:
      - host: api.test
      - host: private.test
"#;
    let config = Config::parse("dns.yaml", yaml).unwrap();
    let audit = Capture::default();
    let state = ProxyState::new(config, Arc::new(audit.clone()), vec![]).await.unwrap();
    let (udp, tcp) = cordon::proxy::entry::dns::bind("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let server = udp.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(cordon::proxy::entry::dns::serve(udp, tcp, state, async move {
        let _ = stopped.await;
    }));

    let a = ask(server, "127.0.0.1", "api.test", RecordType::A).await;
    assert_eq!(a.metadata.response_code, ResponseCode::NoError);
    let ips: Vec<String> = a
        .answers
        .iter()
        .filter_map(|r| match &r.data {
            RData::A(ip) => Some(ip.to_string()),
            _ => None,
        })
        .collect();
    assert_eq!(ips, ["127.0.0.9"]);
    // Names no rule allows, and a name whose answer the guard refuses, are REFUSED.
    assert_eq!(code(server, "127.0.0.1", "evil.test").await, ResponseCode::Refused);
    assert_eq!(code(server, "127.0.0.1", "private.test").await, ResponseCode::Refused);
    // An address written as a name is not a name, and a number no rule names is not looked up.
    for disguised in ["169.254.169.254", "2852039166"] {
        let code = code(server, "127.0.0.1", disguised).await;
        assert_eq!(code, ResponseCode::Refused, "{disguised}");
    }
    // An address no sandbox claims gets nothing.
    assert_eq!(code(server, "127.0.0.2", "api.test").await, ResponseCode::Refused);
    // The sandbox's request rate (burst 8, five spent above) holds a flood, allowed names included.
    let mut codes = Vec::new();
    for _ in 0..6 {
        codes.push(code(server, "127.0.0.1", "api.test").await);
    }
    assert_eq!(
        codes.iter().filter(|c| **c == ResponseCode::NoError).count(),
        3,
        "{codes:?}"
    );
    assert!(codes[3..].iter().all(|c| *c == ResponseCode::Refused), "{codes:?}");

    tokio::time::sleep(Duration::from_millis(100)).await;
    let records = audit.now();
    let dns: Vec<_> = records.iter().filter(|r| r.kind == cordon::audit::Kind::Dns).collect();
    assert_eq!(dns.len(), 12, "one record per query: {dns:#?}");
    assert_eq!(reason_of(&dns, "169.254.169.254").as_deref(), Some("bad_host"));
    // A number is a name to the parser (the resolver would make it an address): no rule names it, so it is
    // never looked up.
    assert_eq!(reason_of(&dns, "2852039166").as_deref(), Some("no_rule"));
    assert_eq!(reason_of(&dns, "evil.test").as_deref(), Some("no_rule"));
    assert!(
        reason_of(&dns, "private.test").is_some_and(|r| r != "no_rule"),
        "{:?}",
        reason_of(&dns, "private.test")
    );
    assert!(
        dns.iter()
            .any(|r| r.reason.as_deref() == Some("unknown_source") && r.sandbox.is_none())
    );
    assert_eq!(
        dns.iter()
            .filter(|r| r.reason.as_deref() == Some("sandbox_rate"))
            .count(),
        3
    );
    assert!(
        dns.iter()
            .any(|r| r.qtype.as_deref() == Some("A") && r.dialled.as_deref() == Some("127.0.0.9"))
    );
    let _ = stop.send(());
}

fn reason_of(records: &[&crate::rigs::proxy::Record], host: &str) -> Option<String> {
    records
        .iter()
        .find(|r| r.host.as_deref() == Some(host))
        .and_then(|r| r.reason.clone())
}

/// Send `msg` from `from` and read the answer's code.
async fn send(server: SocketAddr, from: &str, msg: &Message) -> ResponseCode {
    let sock = UdpSocket::bind((from, 0)).await.unwrap();
    sock.send_to(&msg.to_vec().unwrap(), server).await.unwrap();
    let mut buf = vec![0u8; 4096];
    let (len, _) = tokio::time::timeout(Duration::from_secs(5), sock.recv_from(&mut buf))
        .await
        .expect("the responder answered")
        .unwrap();
    Message::from_vec(&buf[..len]).unwrap().metadata.response_code
}

#[tokio::test]
async fn queries_refused_before_the_policy_are_audited_like_every_refusal() {
    use hickory_proto::op::OpCode;
    use hickory_proto::rr::DNSClass;
    let yaml = r#"
network:
  allow_cidrs: ["127.0.0.0/8"]
  hosts: { api.test: ["127.0.0.9"] }
sandboxes:
  - { id: vm, user: alice, policy: p, source_cidrs: ["127.0.0.1/32"] }
policies:
  p:
    allow:
      - host: api.test
"#;
    let config = Config::parse("dns.yaml", yaml).unwrap();
    let audit = Capture::default();
    let state = ProxyState::new(config, Arc::new(audit.clone()), vec![]).await.unwrap();
    let (udp, tcp) = cordon::proxy::entry::dns::bind("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let server = udp.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(cordon::proxy::entry::dns::serve(udp, tcp, state, async move {
        let _ = stopped.await;
    }));
    let question = |name: &str, rtype: RecordType| Query::query(Name::from_ascii(name).unwrap(), rtype);
    let one = |q: Query| {
        let mut msg = Message::query();
        msg.metadata.recursion_desired = true;
        msg.add_query(q);
        msg
    };
    // ANY of an allowed name: refused, as it would list everything.
    assert_eq!(
        send(server, "127.0.0.1", &one(question("api.test", RecordType::ANY))).await,
        ResponseCode::Refused
    );
    // CHAOS (version.bind) and HESIOD: only IN is served.
    for class in [DNSClass::CH, DNSClass::HS] {
        let mut q = question("version.bind", RecordType::TXT);
        q.set_query_class(class);
        assert_eq!(
            send(server, "127.0.0.1", &one(q)).await,
            ResponseCode::Refused,
            "{class:?}"
        );
    }
    // Opcodes other than QUERY.
    for op in [OpCode::Status, OpCode::Notify, OpCode::Update] {
        let mut msg = one(question("api.test", RecordType::A));
        msg.metadata.op_code = op;
        assert_eq!(send(server, "127.0.0.1", &msg).await, ResponseCode::NotImp, "{op:?}");
    }
    // Two questions in one query, and none.
    let mut two = one(question("api.test", RecordType::A));
    two.add_query(question("leak.attacker.test", RecordType::A));
    assert_eq!(send(server, "127.0.0.1", &two).await, ResponseCode::FormErr);
    let mut none = Message::query();
    none.metadata.recursion_desired = true;
    assert_eq!(send(server, "127.0.0.1", &none).await, ResponseCode::FormErr);
    // A label that is not a host name's.
    assert_eq!(
        send(
            server,
            "127.0.0.1",
            &one(Query::query(
                Name::from_labels([b"bad label".as_slice(), b"test".as_slice()]).unwrap(),
                RecordType::A
            ))
        )
        .await,
        ResponseCode::Refused
    );

    tokio::time::sleep(Duration::from_millis(100)).await;
    let records = audit.now();
    let dns: Vec<_> = records.iter().filter(|r| r.kind == cordon::audit::Kind::Dns).collect();
    let reasons: Vec<_> = dns.iter().map(|r| r.reason.clone().unwrap_or_default()).collect();
    assert_eq!(
        reasons,
        [
            "dns_any_refused",
            "dns_class_refused",
            "dns_class_refused",
            "dns_opcode_unsupported",
            "dns_opcode_unsupported",
            "dns_opcode_unsupported",
            "dns_malformed",
            "dns_malformed",
            "bad_host",
        ],
        "{dns:#?}"
    );
    // Each is the sandbox's, denied, with the name it asked as far as it reads.
    assert!(dns.iter().all(|r| r.sandbox.as_deref() == Some("vm")), "{dns:#?}");
    assert!(
        dns.iter().all(|r| r.decision == cordon::audit::Verdict::Deny),
        "{dns:#?}"
    );
    assert_eq!(reason_of(&dns, "version.bind").as_deref(), Some("dns_class_refused"));
    let _ = stop.send(());
}
