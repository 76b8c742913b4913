//! cordon's DNS responder (`src/dns/server.rs`, with a stand-in for the policy that, like `src/proxy/entry/dns.rs`,
//! answers only names the target parser reads as themselves) on arbitrary datagrams.
//!
//! The responder's request handler is private to `dns::server`, so each datagram goes over loopback UDP to
//! the real responder serving in this process (see `cordon::fuzzing::dns_query`). Datagrams hickory drops
//! before cordon sees them (under 12 bytes, or marked as responses) are not sent.
//!
//! Checks that the responder never panics or goes silent, and that every answer:
//! - has the query's id and is marked as a response;
//! - parses as a DNS message, if the query does (a question sent with compression pointers, which could only
//!   point into the header or at another question, is echoed written out in full);
//! - when it is NOERROR to a well-formed query for one A or AAAA name of class IN, holds only records of that
//!   name and type, with cordon's TTL and the stand-in's addresses; and no records at all for any other
//!   query or outcome.
#![no_main]

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::time::Duration;

use cordon::fuzzing::{DNS_TTL, dns_query};
use hickory_proto::op::{Message, MessageType, ResponseCode};
use hickory_proto::rr::{DNSClass, RData, RecordType};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if data.len() < 12 || data[2] & 0x80 != 0 {
        return;
    }
    let reply = dns_query(data, Duration::from_secs(2)).expect("the responder answers every query");
    assert!(reply.len() >= 12, "an answer shorter than a DNS header");
    assert_eq!(reply[..2], data[..2], "the answer does not carry the query's id");
    assert!(reply[2] & 0x80 != 0, "the answer is not marked as a response");
    let Ok(query) = Message::from_vec(data) else {
        return;
    };
    let answer = match Message::from_vec(&reply) {
        Ok(answer) => answer,
        Err(e) => panic!("the answer to {query:?} does not parse: {e}"),
    };
    assert_eq!(answer.metadata.message_type, MessageType::Response);
    let asked = match query.queries.as_slice() {
        [q] if q.query_class() == DNSClass::IN && matches!(q.query_type(), RecordType::A | RecordType::AAAA) => q,
        _ => {
            assert!(answer.answers.is_empty(), "records in answer to {:?}", query.queries);
            return;
        }
    };
    if answer.metadata.response_code != ResponseCode::NoError {
        assert!(
            answer.answers.is_empty(),
            "records with {:?}",
            answer.metadata.response_code
        );
        return;
    }
    for record in &answer.answers {
        assert_eq!(record.name, *asked.name(), "record for another name");
        assert_eq!(record.ttl, DNS_TTL);
        let ok = match (&record.data, asked.query_type()) {
            (RData::A(a), RecordType::A) => IpAddr::V4(a.0) == IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1)),
            (RData::AAAA(a), RecordType::AAAA) => a.0 == Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1),
            _ => false,
        };
        assert!(ok, "record {record:?} in answer to {asked:?}");
    }
});
