#![expect(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "tests")]

//! The status of every refusal is its reason's, from the registry: every `ProxyError` that can be built (one
//! of each variant, and every kind inside the families: deny reasons, guard refusals, dial errors, limit codes,
//! auth failures, target errors, protocol refusals), every raw answer below hyper, and what hyper answers itself
//! to a request it cannot parse behind the framing guard.

use std::collections::BTreeSet;
use std::time::Duration;

use http::StatusCode;
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::*;
use crate::framing::{FramingGuard, FramingViolation};
use crate::limits::LimitRefusal;
use crate::net::GuardRefusal;
use crate::reason::Answer;
use crate::target::Host;

fn target() -> Target {
    Target {
        host: Host::Name("example.com".into()),
        port: 443,
    }
}

/// Every auth failure (the match fails to compile when one is added, until it is listed here).
fn auth_failures() -> Vec<AuthFailure> {
    let all = vec![
        AuthFailure::Missing,
        AuthFailure::Malformed,
        AuthFailure::Invalid,
        AuthFailure::Expired,
        AuthFailure::Revoked,
    ];
    for a in &all {
        match a {
            AuthFailure::Missing
            | AuthFailure::Malformed
            | AuthFailure::Invalid
            | AuthFailure::Expired
            | AuthFailure::Revoked => {}
        }
    }
    all
}

/// Every target error.
fn target_errors() -> Vec<TargetError> {
    use TargetError::*;
    let all = vec![
        EmptyHost,
        NonAsciiHost,
        BadHost,
        EmptyLabel,
        LabelTooLong,
        HostTooLong,
        BadIpv6,
        ZoneId,
        UnbracketedIpv6,
        Userinfo,
        BadPort,
        MissingPort,
        NotAuthorityForm,
        NotAbsolute,
        BadScheme,
        MissingAuthority,
        RelativePath,
        DotSegment,
        BadPath,
        BadEscape,
    ];
    for e in &all {
        match e {
            EmptyHost | NonAsciiHost | BadHost | EmptyLabel | LabelTooLong | HostTooLong | BadIpv6 | ZoneId
            | UnbracketedIpv6 | Userinfo | BadPort | MissingPort | NotAuthorityForm | NotAbsolute | BadScheme
            | MissingAuthority | RelativePath | DotSegment | BadPath | BadEscape => {}
        }
    }
    all
}

/// Every policy deny reason.
fn deny_reasons() -> Vec<DenyReason> {
    let all = vec![
        DenyReason::NoRule,
        DenyReason::Port,
        DenyReason::Method,
        DenyReason::Path,
    ];
    for d in &all {
        match d {
            DenyReason::NoRule | DenyReason::Port | DenyReason::Method | DenyReason::Path => {}
        }
    }
    all
}

/// Every refusal of the address guard.
fn guard_refusals() -> Vec<GuardRefusal> {
    let special = GuardRefusal::SpecialRange {
        addr: "10.0.0.1".parse().unwrap(),
        range: "10.0.0.0/8",
        what: "private",
    };
    let all = vec![
        GuardRefusal::MetadataName {
            host: "metadata.google.internal".into(),
        },
        GuardRefusal::MetadataAddress {
            addr: "169.254.169.254".parse().unwrap(),
        },
        special.clone(),
        GuardRefusal::Embedded {
            outer: "2002:a00:1::".parse().unwrap(),
            embedded: "10.0.0.1".parse().unwrap(),
            via: "6to4",
            inner: Box::new(special),
        },
        GuardRefusal::SelfAddress {
            addr: "127.0.0.1:8080".parse().unwrap(),
        },
    ];
    for g in &all {
        match g {
            GuardRefusal::MetadataName { .. }
            | GuardRefusal::MetadataAddress { .. }
            | GuardRefusal::SpecialRange { .. }
            | GuardRefusal::Embedded { .. }
            | GuardRefusal::SelfAddress { .. } => {}
        }
    }
    all
}

/// Every kind of dial error, with every guard refusal.
fn dial_errors() -> Vec<DialError> {
    let mut all: Vec<DialError> = guard_refusals().into_iter().map(DialError::Refused).collect();
    all.push(DialError::Resolve {
        target: target(),
        detail: "NXDOMAIN".into(),
    });
    all.push(DialError::NoAddress { target: target() });
    all.push(DialError::Connect {
        target: target(),
        addr: "192.0.2.1:443".parse().unwrap(),
        source: std::io::Error::from(std::io::ErrorKind::ConnectionRefused),
    });
    all.push(DialError::Timeout(target()));
    for d in &all {
        match d {
            DialError::Refused(_)
            | DialError::Resolve { .. }
            | DialError::NoAddress { .. }
            | DialError::Connect { .. }
            | DialError::Timeout(_) => {}
        }
    }
    all
}

/// Every code a limit refuses with (`LimitRefusal`'s constants).
const LIMIT_CODES: &[Reason] = &[
    LimitRefusal::APPROVAL_SANDBOX_LIMIT,
    LimitRefusal::APPROVAL_USER_LIMIT,
    LimitRefusal::CREDENTIAL_BUDGET,
    LimitRefusal::SANDBOX_RATE,
    LimitRefusal::USER_RATE,
    LimitRefusal::HOST_RATE,
    LimitRefusal::CONNECTION_RATE,
    LimitRefusal::SANDBOX_OPEN_LIMIT,
    LimitRefusal::USER_OPEN_LIMIT,
    LimitRefusal::UPLOAD_BUDGET,
    LimitRefusal::DOWNLOAD_BUDGET,
    LimitRefusal::AUTH_THROTTLED,
    Reason::ModelBudgetSpent,
];

/// The reasons a refusal in a protocol's own words is given for: the registry's `InProtocol` answers.
fn in_protocol() -> Vec<Reason> {
    Reason::ALL
        .iter()
        .copied()
        .filter(|r| r.answer() == Answer::InProtocol)
        .collect()
}

/// The reasons answered with an HTTP status of their own (what a step may name in `BadRequest`, `Signature`
/// or `McpAnswer`).
fn http_reasons() -> Vec<Reason> {
    Reason::ALL
        .iter()
        .copied()
        .filter(|r| matches!(r.answer(), Answer::Status(_)))
        .collect()
}

/// The variant of `e`, numbered: a new variant does not compile here until it is numbered, and the test then
/// fails until [`every_error`] builds it (and `VARIANTS` counts it).
fn variant(e: &ProxyError) -> u8 {
    match e {
        ProxyError::Auth(_) => 0,
        ProxyError::Target(_) => 1,
        ProxyError::NotProxyRequest => 2,
        ProxyError::BadRequest { .. } => 3,
        ProxyError::Denied { .. } => 4,
        ProxyError::Dial(_) => 5,
        ProxyError::Misdirected(_) => 6,
        ProxyError::Signature { .. } => 7,
        ProxyError::Exfiltration { .. } => 8,
        ProxyError::Minting { .. } => 9,
        ProxyError::SecretExfiltration { .. } => 10,
        ProxyError::UpstreamEncoding(_) => 11,
        ProxyError::PayloadTooLarge { .. } => 12,
        ProxyError::CredentialUnavailable { .. } => 13,
        ProxyError::UpstreamCertificate(_) => 14,
        ProxyError::Upstream(_) => 15,
        ProxyError::Limited(_) => 16,
        ProxyError::HandshakeTimeout => 17,
        ProxyError::Protocol(_) => 18,
        ProxyError::McpSessionForeign => 19,
        ProxyError::McpAnswer { .. } => 20,
        ProxyError::ApprovalDenied { .. } => 21,
        ProxyError::ApprovalTimedOut(..) => 22,
        ProxyError::ApprovalQueueFull => 23,
        ProxyError::UpstreamTimeout => 24,
        ProxyError::UnknownSource(_) => 25,
        ProxyError::Held => 26,
        ProxyError::AuditUnavailable => 27,
        ProxyError::Internal => 28,
        ProxyError::Preview { .. } => 29,
        ProxyError::Access { .. } => 30,
        ProxyError::Model { .. } => 31,
    }
}
const VARIANTS: u8 = 32;

/// Every `ProxyError` that can be built: each variant, with every kind of what it carries.
pub(super) fn every_error() -> Vec<ProxyError> {
    let credential = || crate::names::CredentialName::from("github");
    let mut all: Vec<ProxyError> = Vec::new();
    all.extend(auth_failures().into_iter().map(ProxyError::Auth));
    all.extend(target_errors().into_iter().map(ProxyError::Target));
    all.push(ProxyError::NotProxyRequest);
    for code in http_reasons() {
        let message = "what is wrong".to_string();
        all.push(ProxyError::BadRequest {
            code,
            message: message.clone(),
        });
        all.push(ProxyError::Signature {
            code,
            message: message.clone(),
        });
        all.push(ProxyError::McpAnswer { code, message });
    }
    all.extend(deny_reasons().into_iter().map(|reason| ProxyError::Denied {
        reason,
        target: target(),
    }));
    all.extend(dial_errors().into_iter().map(ProxyError::Dial));
    all.push(ProxyError::Misdirected(target()));
    all.push(ProxyError::Exfiltration {
        credential: credential(),
        why: "not bound here".into(),
    });
    all.push(ProxyError::Minting {
        credential: credential(),
        call: "sts:AssumeRole".into(),
    });
    all.push(ProxyError::SecretExfiltration {
        credential: credential(),
    });
    all.push(ProxyError::UpstreamEncoding("compress".into()));
    all.push(ProxyError::PayloadTooLarge { limit: 1 << 20 });
    all.push(ProxyError::CredentialUnavailable {
        credential: credential(),
        detail: "vault sealed".into(),
    });
    all.push(ProxyError::UpstreamCertificate("expired".into()));
    all.push(ProxyError::Upstream("reset".into()));
    all.extend(LIMIT_CODES.iter().map(|&reason| {
        ProxyError::Limited(LimitRefusal {
            reason,
            retry_after: Duration::from_secs(3),
            message: "over the limit".into(),
        })
    }));
    all.push(ProxyError::HandshakeTimeout);
    // In MCP's and GraphQL's own words, as each protocol writes them, for every reason such an answer is given
    // for (a person's denial or silence included, as the protocol step turns them).
    let asked = [
        ProxyError::ApprovalDenied {
            id: "a1".into(),
            by: "alice".into(),
        },
        ProxyError::ApprovalTimedOut(Duration::from_secs(60), "a1".into()),
    ];
    let mut said: Vec<Reason> = asked.iter().map(|e| e.reason().in_protocol()).collect();
    said.extend(in_protocol());
    for reason in said {
        let id = serde_json::json!(1);
        all.push(ProxyError::Protocol(crate::mcp::judge::refused(
            reason,
            "refused".into(),
            std::slice::from_ref(&id),
            None,
        )));
        all.push(ProxyError::Protocol(crate::graphql::judge::refused(
            reason,
            "refused".into(),
            Some(2),
        )));
    }
    all.push(ProxyError::McpSessionForeign);
    all.extend(asked);
    all.push(ProxyError::ApprovalQueueFull);
    all.push(ProxyError::UpstreamTimeout);
    all.push(ProxyError::UnknownSource("192.0.2.7".parse().unwrap()));
    all.push(ProxyError::Held);
    all.push(ProxyError::AuditUnavailable);
    all.push(ProxyError::Internal);
    // A preview's refusals name their reason as the preview's steps found it (a guard's reason too).
    all.extend(http_reasons().into_iter().map(|code| ProxyError::Preview {
        code,
        message: "what is wrong".into(),
    }));
    // An access request's refusals likewise name their reason as the access phase found it.
    all.extend(http_reasons().into_iter().map(|code| ProxyError::Access {
        code,
        message: "what is wrong".into(),
        details: vec!["allow[0].ports: what is wrong there".into()],
    }));
    // A model call's refusals before it leaves.
    all.extend(
        [
            Reason::ModelNotAllowed,
            Reason::ModelUnpriced,
            Reason::ModelBudgetUnavailable,
        ]
        .into_iter()
        .map(|code| ProxyError::Model {
            code,
            message: "what is wrong".into(),
        }),
    );
    all
}

/// Each refusal's response has its reason's status from the registry, and says the reason; an answer in a
/// protocol's words is given exactly for the registry's `InProtocol` reasons.
#[test]
fn every_refusal_is_answered_with_its_reasons_status() {
    let all = every_error();
    let built: BTreeSet<u8> = all.iter().map(variant).collect();
    assert_eq!(built, (0..VARIANTS).collect(), "every_error must build every variant");
    for e in &all {
        let reason = e.reason();
        let answer = reason.answer();
        // A refusal (the record's `deny`) exactly when the registry's answer refuses: a 4xx or the protocol's
        // words (and cordon refusing what it cannot record).
        assert_eq!(
            e.is_refusal(),
            answer.http_status().is_some_and(|s| (400..500).contains(&s))
                || answer == Answer::InProtocol
                || matches!(e, ProxyError::AuditUnavailable),
            "{e:?}"
        );
        let want = answer
            .http_status()
            .unwrap_or_else(|| panic!("{e:?}: {} is answered {answer:?}, not with HTTP", reason.code()));
        let resp = e.response();
        assert_eq!(resp.status().as_u16(), want, "{e:?}");
        assert_eq!(e.status().as_u16(), want, "{e:?}");
        assert_eq!(resp.headers()[REASON_HEADER].to_str().unwrap(), reason.code(), "{e:?}");
        // In a protocol's own words exactly when the registry says so, both ways.
        assert_eq!(
            matches!(e, ProxyError::Protocol(_)),
            answer == Answer::InProtocol,
            "{e:?}: {} is answered {answer:?}",
            reason.code()
        );
        if let ProxyError::Protocol(refused) = e {
            let body = String::from_utf8(refused.body.clone()).unwrap();
            assert!(body.contains(reason.code()), "{body}");
        }
        // The challenge goes with the registry's 407, and only with it.
        assert_eq!(
            resp.headers().contains_key(http::header::PROXY_AUTHENTICATE),
            want == 407,
            "{e:?}"
        );
    }
    // Every reason answered in a protocol's words, a person's denial and silence among them.
    let protocol: BTreeSet<&str> = all
        .iter()
        .filter(|e| matches!(e, ProxyError::Protocol(_)))
        .map(|e| e.reason().code())
        .collect();
    for r in in_protocol() {
        assert!(protocol.contains(r.code()), "{}", r.code());
    }
    assert!(protocol.contains(Reason::ProtocolApprovalDenied.code()));
    assert!(protocol.contains(Reason::ProtocolApprovalTimeout.code()));
}

/// The DNS responder's refusals go through the pipeline for their record only (the query gets its DNS answer):
/// they are refusals, as a 4xx would be.
#[test]
fn the_dns_responders_refusals_are_refusals() {
    let dns: Vec<Reason> = Reason::ALL
        .iter()
        .copied()
        .filter(|r| matches!(r.answer(), Answer::Dns(_)))
        .collect();
    assert!(!dns.is_empty());
    for code in dns {
        let e = ProxyError::BadRequest {
            code,
            message: "a DNS query cordon does not answer".into(),
        };
        assert!(e.is_refusal(), "{}", code.code());
        assert_eq!(e.reason(), code);
    }
}

/// A person's denial of a plain request is 403 and of a protocol's message its words: two reasons, one answer
/// each; the same for nobody deciding.
#[test]
fn a_refusal_answered_two_ways_is_two_reasons() {
    for (plain, said) in [
        (Reason::ApprovalDenied, Reason::ProtocolApprovalDenied),
        (Reason::ApprovalTimeout, Reason::ProtocolApprovalTimeout),
    ] {
        assert_eq!(plain.answer(), Answer::Status(403));
        assert_eq!(plain.in_protocol(), said);
        assert_eq!(said.answer(), Answer::InProtocol);
        assert_eq!(said.in_protocol(), said);
    }
    for r in Reason::ALL {
        let twin = r.in_protocol();
        assert!(twin == *r || twin.answer() == Answer::InProtocol, "{}", r.code());
    }
}

/// The status line and reason header of a raw answer (the last, where there are several).
fn head_of(raw: &[u8]) -> (u16, Option<String>) {
    let text = String::from_utf8_lossy(raw);
    let text = &text[text.rfind("HTTP/1.1 ").unwrap_or(0)..];
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status line: {text:?}"));
    let reason = text
        .lines()
        .take_while(|l| !l.is_empty())
        .find_map(|l| l.strip_prefix(&format!("{REASON_HEADER}: ")))
        .map(str::to_owned);
    (status, reason)
}

#[test]
fn the_answers_below_hyper_have_their_reasons_status() {
    for (raw, reason) in [
        (render_overloaded(), Reason::TooManyConnections),
        (render_unauthenticated_limit(), Reason::UnauthenticatedLimit),
    ] {
        assert_eq!(
            head_of(&raw),
            (status_of(reason).as_u16(), Some(reason.code().to_string()))
        );
    }
    assert!(String::from_utf8_lossy(&render_unauthenticated_limit()).contains("\r\nretry-after: 1\r\n"));
}

/// What is written below hyper says what every refusal says: whose side, whether asking helps, what to do, that
/// a way around will not work, in headers and in its text; and its head is one a client reads.
#[test]
fn the_answers_below_hyper_carry_the_refusal_facts() {
    for (raw, reason) in [
        (render_overloaded(), Reason::TooManyConnections),
        (render_unauthenticated_limit(), Reason::UnauthenticatedLimit),
        (
            render_framing(&FramingViolation::ContentLengthWithTransferEncoding),
            Reason::ClAndTe,
        ),
    ] {
        let text = String::from_utf8(raw).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        for header in ["x-cordon-whose: ", "x-cordon-ask: no", "x-cordon-hint: "] {
            assert!(head.contains(&format!("\r\n{header}")), "{}: {head}", reason.code());
        }
        assert!(head.ends_with(&format!("content-length: {}", body.len())), "{head}");
        assert!(body.starts_with("cordon: "), "{body}");
        assert!(body.contains(&format!("reason: {} (", reason.code())), "{body}");
        assert!(body.contains(crate::reason::NO_WAY_AROUND), "{body}");
        assert!(
            !head.contains("x-cordon-ask-at"),
            "nothing of the sandbox is known here: {head}"
        );
    }
}

/// A request of each kind the framing guard refuses, with a limit of `MAX_HEAD` (the match fails to compile
/// when a violation is added, until it has its request here).
fn violating(v: &FramingViolation) -> Vec<u8> {
    let post = |headers: &str, body: &str| format!("POST /p HTTP/1.1\r\nHost: h\r\n{headers}\r\n{body}").into_bytes();
    match v {
        FramingViolation::ContentLengthWithTransferEncoding => post(
            "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n",
            "5\r\nhello\r\n0\r\n\r\n",
        ),
        FramingViolation::DuplicateContentLength => post("Content-Length: 1\r\nContent-Length: 1\r\n", "a"),
        FramingViolation::InvalidContentLength => post("Content-Length: +1\r\n", "a"),
        FramingViolation::TransferEncodingNotChunked => post("Transfer-Encoding: gzip\r\n", ""),
        FramingViolation::TransferEncodingInHttp10 => {
            b"POST /p HTTP/1.0\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n".to_vec()
        }
        FramingViolation::MalformedHead(_) => b"GET / HTTP/1.1\r\nHost: h\r\nX: a\r\n folded\r\n\r\n".to_vec(),
        FramingViolation::MalformedChunk => post("Transfer-Encoding: chunked\r\n", "zz\r\nhello\r\n0\r\n\r\n"),
        FramingViolation::HeadTooLarge => {
            format!("GET / HTTP/1.1\r\nHost: h\r\nX-Big: {}\r\n\r\n", "a".repeat(MAX_HEAD)).into_bytes()
        }
        FramingViolation::UriTooLong => format!(
            "GET /{} HTTP/1.1\r\nHost: h\r\n\r\n",
            "a".repeat(crate::framing::MAX_TARGET)
        )
        .into_bytes(),
    }
}

/// The limit the guard is given here: `limits.max_request_header_bytes` at its most, so that hyper's own bounds
/// are met first where they are lower.
const MAX_HEAD: usize = 1 << 20;

/// What `input` gets on a connection served as cordon serves one (the framing guard, then hyper), and what the
/// audit record says of it (the status and reason `proxy::malformed` records), if it was refused.
async fn served(input: Vec<u8>) -> (Vec<u8>, Option<(StatusCode, Reason)>) {
    let (client, server) = tokio::io::duplex(1 << 16);
    let (guarded, report) = FramingGuard::new(server, MAX_HEAD, render_framing);
    let conn = tokio::spawn(async move {
        hyper::server::conn::http1::Builder::new()
            .timer(TokioTimer::new())
            .serve_connection(
                TokioIo::new(guarded),
                // As cordon's service does, the body is read before the answer; a body that fails fails it.
                service_fn(|req: http::Request<Incoming>| async {
                    req.into_body().collect().await?;
                    Ok::<_, hyper::Error>(http::Response::new(http_body_util::Full::new(
                        hyper::body::Bytes::from_static(b"ok"),
                    )))
                }),
            )
            .await
    });
    let (mut read, mut write) = tokio::io::split(client);
    let writer = tokio::spawn(async move {
        // No half-close: the client waits for the answer, and the server closes (hyper takes an early EOF for
        // a client gone).
        let _ = write.write_all(&input).await;
    });
    let mut out = Vec::new();
    tokio::time::timeout(Duration::from_secs(20), read.read_to_end(&mut out))
        .await
        .expect("the answer within 20s")
        .unwrap();
    let result = tokio::time::timeout(Duration::from_secs(20), conn)
        .await
        .expect("the connection ends within 20s")
        .unwrap();
    writer.abort();
    let recorded = match (report.violation(), &result) {
        (Some(v), _) => Some((framing_status(&v), v.reason())),
        (None, Err(e)) if e.is_parse() => Some((hyper_parse_status(e), hyper_parse_reason(e))),
        _ => None,
    };
    (out, recorded)
}

/// Every framing violation, and what hyper refuses by itself behind the guard (a head over its 100 headers or
/// its read buffer, within `limits.max_request_header_bytes`): the status the sandbox reads is the one the
/// record keeps, and the registry's for the reason recorded.
#[tokio::test]
async fn refusals_below_and_by_hyper_have_their_reasons_status() {
    let violations = [
        FramingViolation::ContentLengthWithTransferEncoding,
        FramingViolation::DuplicateContentLength,
        FramingViolation::InvalidContentLength,
        FramingViolation::TransferEncodingNotChunked,
        FramingViolation::TransferEncodingInHttp10,
        FramingViolation::MalformedHead(String::new()),
        FramingViolation::MalformedChunk,
        FramingViolation::HeadTooLarge,
        FramingViolation::UriTooLong,
    ];
    let mut cases: Vec<(String, Vec<u8>, Reason)> = violations
        .iter()
        .map(|v| (format!("{v:?}"), violating(v), v.reason()))
        .collect();
    let many: String = (0..110).map(|i| format!("x-{i}: 1\r\n")).collect();
    cases.push((
        "110 headers".into(),
        format!("GET / HTTP/1.1\r\nHost: h\r\n{many}\r\n").into_bytes(),
        Reason::HeadTooLarge,
    ));
    cases.push((
        "a 600 KiB head".into(),
        format!("GET / HTTP/1.1\r\nHost: h\r\nX-Big: {}\r\n\r\n", "a".repeat(600 << 10)).into_bytes(),
        Reason::HeadTooLarge,
    ));
    cases.push((
        "a target hyper cannot read as a URI".into(),
        b"GET http://[::1/ HTTP/1.1\r\nHost: h\r\n\r\n".to_vec(),
        Reason::UnparseableRequest,
    ));
    // All at once: a refused connection lingers a while before it closes.
    let mut answers = Vec::new();
    for (what, input, reason) in cases {
        answers.push((what, reason, tokio::spawn(served(input))));
    }
    for (what, reason, answer) in answers {
        let (out, recorded) = answer.await.unwrap();
        let (status, header) = head_of(&out);
        let (recorded_status, recorded_reason) = recorded.unwrap_or_else(|| panic!("{what}: not refused"));
        assert_eq!(recorded_reason, reason, "{what}");
        assert_eq!(status, recorded_status.as_u16(), "{what}: answered and recorded alike");
        assert_eq!(
            Some(status),
            reason.answer().http_status(),
            "{what}: the registry's status"
        );
        // cordon's own answers say why; hyper's say nothing.
        if let Some(header) = header {
            assert_eq!(header, reason.code(), "{what}");
        }
        println!("{what}: {status} {}", reason.code());
    }
    // The longest target hyper reads is served.
    let (out, recorded) = served(
        format!(
            "GET /{} HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n",
            "a".repeat(crate::framing::MAX_TARGET - 1)
        )
        .into_bytes(),
    )
    .await;
    assert_eq!((head_of(&out).0, recorded), (200, None));
}
