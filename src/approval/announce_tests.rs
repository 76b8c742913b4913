#![expect(clippy::unwrap_used, reason = "tests")]

use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use http::{Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

use http::{Request, Uri};
use secrecy::SecretString;

use super::super::{Approval, Approvals, HeldRequest, HumanDecision, Reach, Resolution, Ruling};
use super::*;
use crate::upstream::outbound::HttpClient;
use crate::webhook::{Webhook, verify};

const SECRET: &str = "webhook-secret";
const QUICK: Duration = Duration::from_millis(5);

type Seen = Arc<Mutex<Vec<(http::request::Parts, Bytes)>>>;

/// A real HTTP/1 server on 127.0.0.1 answering with `statuses` in turn (the last one from then on), recording every
/// request. Returns its URL (path `/hook?token=t`) and the record.
async fn serve(statuses: &[u16]) -> (Uri, Seen) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let seen: Seen = Arc::default();
    let statuses = Arc::new(statuses.to_vec());
    let record = seen.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let (record, statuses) = (record.clone(), statuses.clone());
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |req: Request<Incoming>| {
                    let (record, statuses) = (record.clone(), statuses.clone());
                    async move {
                        let (parts, body) = req.into_parts();
                        let body = body.collect().await.map(|b| b.to_bytes()).unwrap_or_default();
                        let n = {
                            let mut seen = record.lock().unwrap();
                            seen.push((parts, body));
                            seen.len()
                        };
                        let status = statuses[(n - 1).min(statuses.len() - 1)];
                        let mut resp = Response::new(Full::new(Bytes::from_static(b"{}")));
                        *resp.status_mut() = StatusCode::from_u16(status).unwrap();
                        Ok::<_, Infallible>(resp)
                    }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    let url = format!("http://{addr}/hook?token=t").parse().unwrap();
    (url, seen)
}

fn hook(url: Uri, secret: Option<&str>) -> Webhook {
    let client = HttpClient::new(&[]).unwrap();
    Webhook::new(url, secret.map(|s| SecretString::from(s.to_string())), client).with_backoff(QUICK, 3)
}

fn pending() -> Approval {
    Approval {
        id: "ap-0123456789abcdef".to_string(),
        ask: HeldRequest {
            path: "/api/chat.postMessage".to_string(),
            host: "slack.com".to_string(),
            url: "https://slack.com/api/chat.postMessage".to_string(),
            excerpt: "{\"channel\":\"C1\",\"text\":\"hi\"}".to_string(),
            rule: 2,
            ..crate::approval::tests::ask("sb-1", "/api/chat.postMessage")
        },
        asked_at: "2026-01-01T00:00:00Z".to_string(),
        expires_at: "2026-01-01T00:05:00Z".to_string(),
    }
}

fn header<'a>(parts: &'a http::request::Parts, name: &str) -> &'a str {
    parts.headers.get(name).map(|v| v.to_str().unwrap()).unwrap_or("")
}

#[tokio::test]
async fn announce_posts_signed_json() {
    let (url, seen) = serve(&[200]).await;
    assert!(requested(&hook(url, Some(SECRET)), &pending()).await);
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 1);
    let (parts, body) = &seen[0];
    assert_eq!(parts.method, http::Method::POST);
    assert_eq!(parts.uri.path(), "/hook");
    assert_eq!(parts.uri.query(), Some("token=t"));
    assert_eq!(header(parts, "content-type"), "application/json");
    assert_eq!(header(parts, "x-cordon-event"), "approval.requested");
    let timestamp = header(parts, "x-cordon-timestamp");
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs();
    assert!(now.abs_diff(timestamp.parse::<u64>().unwrap()) < 60, "{timestamp}");
    let signature = header(parts, "x-cordon-signature");
    assert!(
        signature.starts_with("sha256=") && signature.len() == 7 + 64,
        "{signature}"
    );
    assert!(verify(SECRET.as_bytes(), timestamp, body, signature));
    assert!(!verify(b"another secret", timestamp, body, signature));
    assert!(!verify(SECRET.as_bytes(), "1", body, signature));
    assert!(!verify(
        SECRET.as_bytes(),
        timestamp,
        &[body.as_ref(), b" "].concat(),
        signature
    ));

    let json: serde_json::Value = serde_json::from_slice(body).unwrap();
    assert_eq!(json["event"], "approval.requested");
    assert_eq!(json["approval"], serde_json::to_value(pending()).unwrap());
    assert_eq!(json["approval"]["id"], "ap-0123456789abcdef");
    assert_eq!(json["approval"]["excerpt"], "{\"channel\":\"C1\",\"text\":\"hi\"}");
    assert!(json.get("decision").is_none());
}

#[tokio::test]
async fn decided_posts_the_decision() {
    let (url, seen) = serve(&[204]).await;
    let decision = HumanDecision {
        verdict: Ruling::Allow,
        scope: Reach::Always,
        by: "bob".to_string(),
        at: "2026-01-01T00:01:00Z".to_string(),
    };
    assert!(decided(&hook(url, Some(SECRET)), &pending(), &decision).await);
    let seen = seen.lock().unwrap();
    let (parts, body) = &seen[0];
    assert_eq!(header(parts, "x-cordon-event"), "approval.decided");
    assert!(verify(
        SECRET.as_bytes(),
        header(parts, "x-cordon-timestamp"),
        body,
        header(parts, "x-cordon-signature")
    ));
    let json: serde_json::Value = serde_json::from_slice(body).unwrap();
    assert_eq!(json["event"], "approval.decided");
    assert_eq!(json["approval"]["id"], "ap-0123456789abcdef");
    assert_eq!(
        json["decision"],
        serde_json::json!({"verdict": "allow", "scope": "always", "by": "bob", "at": "2026-01-01T00:01:00Z"})
    );
}

#[tokio::test]
async fn without_a_secret_nothing_is_signed() {
    let (url, seen) = serve(&[200]).await;
    assert!(requested(&hook(url, None), &pending()).await);
    let seen = seen.lock().unwrap();
    assert!(seen[0].0.headers.get("x-cordon-signature").is_none());
    assert_eq!(header(&seen[0].0, "x-cordon-event"), "approval.requested");
}

#[tokio::test]
async fn server_errors_are_retried() {
    let (url, seen) = serve(&[500, 500, 200]).await;
    assert!(requested(&hook(url, Some(SECRET)), &pending()).await);
    assert_eq!(seen.lock().unwrap().len(), 3);
}

#[tokio::test]
async fn retries_run_out() {
    let (url, seen) = serve(&[503]).await;
    assert!(!requested(&hook(url, Some(SECRET)), &pending()).await);
    assert_eq!(seen.lock().unwrap().len(), 4, "one attempt and three retries");
}

#[tokio::test]
async fn client_errors_are_not_retried() {
    let (url, seen) = serve(&[400, 200]).await;
    assert!(!requested(&hook(url, Some(SECRET)), &pending()).await);
    assert_eq!(seen.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn unreachable_is_not_delivered() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let url = format!("http://{addr}/hook").parse().unwrap();
    assert!(!requested(&hook(url, Some(SECRET)), &pending()).await);
}

#[tokio::test]
async fn approvals_announce_asks_and_decisions_in_order() {
    let (url, seen) = serve(&[200]).await;
    let approvals = Approvals::new(8, Duration::from_secs(60), Some(Arc::new(hook(url, Some(SECRET)))));
    let (outcome, ()) = tokio::join!(approvals.ask(pending().ask), async {
        while approvals.pending_count() == 0 {
            tokio::task::yield_now().await;
        }
        let id = approvals.pending()[0].id.clone();
        approvals.decide(&id, Ruling::Deny, Reach::Once, "bob").unwrap();
    });
    assert!(matches!(outcome, Resolution::Denied { .. }), "{outcome:?}");
    for _ in 0..500 {
        if seen.lock().unwrap().len() >= 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let seen = seen.lock().unwrap();
    let events: Vec<serde_json::Value> = seen
        .iter()
        .map(|(_, body)| serde_json::from_slice(body).unwrap())
        .collect();
    assert_eq!(events.len(), 2);
    assert_eq!(
        (&events[0]["event"], &events[1]["event"]),
        (&"approval.requested".into(), &"approval.decided".into())
    );
    assert_eq!(events[0]["approval"], events[1]["approval"]);
    assert_eq!(events[1]["decision"]["by"], "bob");
    assert_eq!(events[1]["decision"]["verdict"], "deny");
}
