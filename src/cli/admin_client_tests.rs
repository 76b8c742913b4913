#![expect(clippy::unwrap_used, reason = "tests")]

use std::convert::Infallible;
use std::time::Duration;

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use secrecy::SecretString;
use serde_json::{Value, json};
use tokio::net::TcpListener;

use super::*;

const TOKEN: &str = "s3cret-token";

pub(in crate::cli) fn view(id: &str) -> Value {
    json!({
        "id": id, "user": "alice", "policy": "default", "labels": {"team": "infra"}, "origin": "api",
        "created_at": "2025-01-01T00:00:00Z", "expires_at": "2025-01-01T01:00:00Z", "revoked_at": null,
        "open_connections": 2, "open_tunnels": 1, "future_field": {"ignored": true}
    })
}

fn created(id: &str) -> Value {
    let mut v = view(id);
    let extra = json!({
        "credential": "cred-1", "proxy_url": format!("http://{id}:cred-1@127.0.0.1:3128"),
        "placeholders": {"GITHUB_TOKEN": "cordon-ph-1"},
        "env": {"HTTP_PROXY": format!("http://{id}:cred-1@127.0.0.1:3128"), "NO_PROXY": "localhost"}
    });
    for (k, val) in extra.as_object().unwrap() {
        v[k] = val.clone();
    }
    v
}

pub(in crate::cli) fn pending(id: &str) -> Value {
    json!({
        "id": id, "sandbox": "sb-1", "user": "alice", "policy": "default", "method": "POST",
        "host": "api.example.com", "port": 443, "path": "/v1/issues", "excerpt": "{\"title\": \"hello\"}", "rule": 0,
        "asked_at": "2025-01-01T00:00:00Z", "expires_at": "2025-01-01T00:05:00Z"
    })
}

pub(in crate::cli) fn grant(id: &str) -> Value {
    json!({
        "id": id, "sandbox": "sb-1", "reach": "always", "method": "POST", "host": "api.example.com", "port": 443,
        "path": "/v1/issues", "query": null, "body_sha256": null, "policy": "default", "rule": 0, "by": "bob", "at": "2025-01-01T00:01:00Z", "approval": "ap-0123456789abcdef"
    })
}

fn reply(status: StatusCode, body: &Value) -> Response<Full<Bytes>> {
    Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body.to_string())))
        .unwrap()
}

fn api_err(status: StatusCode, code: &str, message: &str) -> Response<Full<Bytes>> {
    reply(
        status,
        &json!({"error": {"code": code, "message": message, "details": ["d1", "d2"]}}),
    )
}

/// The canned admin API: checks the token, method, path and body; echoes what it saw under `_seen`.
async fn route(req: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    let auth = req
        .headers()
        .get("authorization")
        .map(|v| v.to_str().unwrap().to_owned());
    let content_type = req
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_owned());
    let method = req.method().clone();
    let path = req.uri().path().to_owned();
    let raw = req.into_body().collect().await.unwrap().to_bytes();
    if auth.as_deref() != Some(&format!("Bearer {TOKEN}")) {
        return Ok(api_err(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "bad or missing admin token",
        ));
    }
    let body: Value = if raw.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&raw).unwrap()
    };
    if !raw.is_empty() {
        assert_eq!(content_type.as_deref(), Some("application/json"));
    }
    let seen = json!({"method": method.as_str(), "path": path, "body": body});
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let (status, mut answer) = match (&method, segments.as_slice()) {
        (&Method::POST, ["v1", "sandboxes"]) => {
            assert_eq!(body["user"], "alice");
            (StatusCode::CREATED, created(body["id"].as_str().unwrap_or("generated")))
        }
        (&Method::GET, ["v1", "sandboxes"]) => (StatusCode::OK, json!({"sandboxes": [view("sb-1"), view("b")]})),
        (&Method::GET, ["v1", "sandboxes", "missing"]) => {
            return Ok(api_err(StatusCode::NOT_FOUND, "not_found", "no sandbox \"missing\""));
        }
        (&Method::GET, ["v1", "sandboxes", "plain"]) => {
            return Ok(Response::builder()
                .status(502)
                .body(Full::new(Bytes::from("bad gateway")))
                .unwrap());
        }
        (&Method::GET, ["v1", "sandboxes", "notjson"]) => {
            return Ok(Response::new(Full::new(Bytes::from("<html>"))));
        }
        (&Method::GET, ["v1", "sandboxes", id]) => (StatusCode::OK, view(id)),
        (&Method::POST, ["v1", "sandboxes", id, "renew"]) => (StatusCode::OK, view(id)),
        (&Method::DELETE, ["v1", "sandboxes", id]) => {
            let mut v = view(id);
            v["revoked_at"] = json!("2025-01-01T00:30:00Z");
            (StatusCode::OK, v)
        }
        (&Method::POST, ["v1", "sandboxes", id, "credentials"]) => (StatusCode::OK, created(id)),
        (&Method::GET, ["v1", "approvals"]) => (StatusCode::OK, json!({"pending": [pending("ap-1")]})),
        (&Method::POST, ["v1", "approvals", "ap-missing"]) => {
            return Ok(api_err(
                StatusCode::NOT_FOUND,
                "not_found",
                "no pending approval \"ap-missing\"",
            ));
        }
        (&Method::POST, ["v1", "approvals", id]) => {
            let decision = json!({"verdict": body["decision"], "scope": body["scope"], "by": "bob"});
            (StatusCode::OK, json!({"approval": pending(id), "decision": decision}))
        }
        (&Method::GET, ["v1", "grants"]) => (StatusCode::OK, json!({"grants": [grant("gr-1")]})),
        (&Method::DELETE, ["v1", "grants", "gr-missing"]) => {
            return Ok(api_err(StatusCode::NOT_FOUND, "not_found", "no grant \"gr-missing\""));
        }
        (&Method::DELETE, ["v1", "grants", id]) => (StatusCode::OK, json!({"removed": id})),
        _ => return Ok(api_err(StatusCode::NOT_FOUND, "no_route", "no such route")),
    };
    answer["_seen"] = seen;
    Ok(reply(status, &answer))
}

/// Starts the canned server on 127.0.0.1:0 and returns its base URL.
async fn server() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let (stream, _) = listener.accept().await.unwrap();
            tokio::spawn(async move {
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service_fn(route))
                    .await;
            });
        }
    });
    format!("http://{addr}")
}

fn client(base: &str) -> AdminClient {
    AdminClient::new(base, SecretString::from(TOKEN)).unwrap()
}

#[tokio::test]
async fn create_sends_the_request_body() {
    let c = client(&server().await);
    let req = CreateRequest {
        user: "alice".into(),
        policy: "default".into(),
        id: Some("sb-9".into()),
        ttl: Some("1h".into()),
        labels: BTreeMap::from([("team".into(), "infra".into())]),
        source_cidrs: Vec::new(),
    };
    let v = c.create(&req).await.unwrap();
    assert_eq!(v["_seen"]["method"], "POST");
    assert_eq!(v["_seen"]["path"], "/v1/sandboxes");
    assert_eq!(
        v["_seen"]["body"],
        json!({"user": "alice", "policy": "default", "id": "sb-9", "ttl": "1h", "labels": {"team": "infra"}})
    );
    assert_eq!(v["credential"], "cred-1");
    assert_eq!(v["id"], "sb-9");
}

#[tokio::test]
async fn create_skips_absent_fields() {
    let c = client(&server().await);
    let req = CreateRequest {
        user: "alice".into(),
        policy: "default".into(),
        ..CreateRequest::default()
    };
    let v = c.create(&req).await.unwrap();
    assert_eq!(v["_seen"]["body"], json!({"user": "alice", "policy": "default"}));
}

#[tokio::test]
async fn list_show_renew_revoke_credentials() {
    let c = client(&format!("{}/", server().await));
    let list = c.list().await.unwrap();
    assert_eq!(list["_seen"]["method"], "GET");
    assert_eq!(list["sandboxes"].as_array().unwrap().len(), 2);

    let show = c.show("sb-1").await.unwrap();
    assert_eq!(
        (show["_seen"]["method"].as_str(), show["id"].as_str()),
        (Some("GET"), Some("sb-1"))
    );

    let renew = c.renew("sb-1", Some("2h")).await.unwrap();
    assert_eq!(renew["_seen"]["path"], "/v1/sandboxes/sb-1/renew");
    assert_eq!(renew["_seen"]["body"], json!({"ttl": "2h"}));
    let renew = c.renew("sb-1", None).await.unwrap();
    assert_eq!(renew["_seen"]["body"], json!({}));

    let revoked = c.revoke("sb-1").await.unwrap();
    assert_eq!(revoked["_seen"]["method"], "DELETE");
    assert_eq!(revoked["revoked_at"], "2025-01-01T00:30:00Z");

    let fresh = c.credentials("sb-1").await.unwrap();
    assert_eq!(fresh["_seen"]["path"], "/v1/sandboxes/sb-1/credentials");
    assert_eq!(fresh["_seen"]["body"], Value::Null);
    assert_eq!(fresh["credential"], "cred-1");
}

#[tokio::test]
async fn approvals_decide_grants_revoke_grant() {
    let c = client(&server().await);
    let list = c.approvals().await.unwrap();
    assert_eq!(
        (list["_seen"]["method"].as_str(), list["_seen"]["path"].as_str()),
        (Some("GET"), Some("/v1/approvals"))
    );
    assert_eq!(list["pending"][0]["id"], "ap-1");

    let allowed = c.decide("ap-1", "allow", "always").await.unwrap();
    assert_eq!(allowed["_seen"]["method"], "POST");
    assert_eq!(allowed["_seen"]["path"], "/v1/approvals/ap-1");
    assert_eq!(
        allowed["_seen"]["body"],
        json!({"decision": "allow", "scope": "always"})
    );
    assert_eq!(
        allowed["decision"],
        json!({"verdict": "allow", "scope": "always", "by": "bob"})
    );
    let denied = c.decide("ap-2", "deny", "once").await.unwrap();
    assert_eq!(denied["_seen"]["body"], json!({"decision": "deny", "scope": "once"}));
    assert_eq!(denied["approval"]["id"], "ap-2");

    let grants = c.grants().await.unwrap();
    assert_eq!(
        (grants["_seen"]["method"].as_str(), grants["_seen"]["path"].as_str()),
        (Some("GET"), Some("/v1/grants"))
    );
    assert_eq!(grants["grants"][0]["id"], "gr-1");

    let removed = c.revoke_grant("gr-1").await.unwrap();
    assert_eq!(removed["_seen"]["method"], "DELETE");
    assert_eq!(removed["_seen"]["path"], "/v1/grants/gr-1");
    assert_eq!(removed["_seen"]["body"], Value::Null);
    assert_eq!(removed["removed"], "gr-1");
}

#[tokio::test]
async fn approval_and_grant_errors() {
    let c = client(&server().await);
    let err = c.decide("ap-missing", "allow", "once").await.unwrap_err();
    assert!(
        matches!(&err, ClientError::Api { status: StatusCode::NOT_FOUND, code, .. } if code == "not_found"),
        "{err:?}"
    );
    assert!(
        err.to_string()
            .starts_with("no pending approval \"ap-missing\" (not_found, HTTP 404)"),
        "{err}"
    );
    let err = c.revoke_grant("gr-missing").await.unwrap_err();
    assert!(
        err.to_string()
            .starts_with("no grant \"gr-missing\" (not_found, HTTP 404)"),
        "{err}"
    );
    let v = c.decide("ap/1 x", "deny", "once").await.unwrap();
    assert_eq!(v["_seen"]["path"], "/v1/approvals/ap%2F1%20x");
    let v = c.revoke_grant("../x").await.unwrap();
    assert_eq!(v["_seen"]["path"], "/v1/grants/..%2Fx");
    for bad in ["", ".", ".."] {
        let err = c.decide(bad, "allow", "once").await.unwrap_err();
        assert!(
            matches!(&err, ClientError::Invalid(m) if m.ends_with("is not an approval id")),
            "{err:?}"
        );
        let err = c.revoke_grant(bad).await.unwrap_err();
        assert!(
            matches!(&err, ClientError::Invalid(m) if m.ends_with("is not a grant id")),
            "{err:?}"
        );
    }
    let wrong = AdminClient::new(&server().await, SecretString::from("wrong")).unwrap();
    for result in [wrong.approvals().await, wrong.grants().await] {
        assert!(
            matches!(
                result,
                Err(ClientError::Api {
                    status: StatusCode::UNAUTHORIZED,
                    ..
                })
            ),
            "{result:?}"
        );
    }
}

#[tokio::test]
async fn ids_are_percent_encoded() {
    let c = client(&server().await);
    let v = c.show("a/b c?é").await.unwrap();
    assert_eq!(v["_seen"]["path"], "/v1/sandboxes/a%2Fb%20c%3F%C3%A9");
    assert_eq!(encode_segment("Ab9._~-"), "Ab9._~-");
    for bad in ["", ".", ".."] {
        assert!(matches!(c.show(bad).await, Err(ClientError::Invalid(_))), "{bad:?}");
    }
}

#[tokio::test]
async fn not_found_maps_to_api_error() {
    let c = client(&server().await);
    let err = c.show("missing").await.unwrap_err();
    let ClientError::Api {
        status,
        code,
        message,
        details,
    } = &err
    else {
        unreachable!("{err:?}")
    };
    assert_eq!(*status, StatusCode::NOT_FOUND);
    assert_eq!(code, "not_found");
    assert_eq!(message, "no sandbox \"missing\"");
    assert_eq!(details, &["d1", "d2"]);
    assert_eq!(
        err.to_string(),
        "no sandbox \"missing\" (not_found, HTTP 404)\n  d1\n  d2"
    );
}

#[tokio::test]
async fn wrong_token_is_unauthorized() {
    let c = AdminClient::new(&server().await, SecretString::from("wrong")).unwrap();
    let err = c.list().await.unwrap_err();
    assert!(
        matches!(&err, ClientError::Api { status: StatusCode::UNAUTHORIZED, code, .. } if code == "unauthorized"),
        "{err:?}"
    );
}

#[tokio::test]
async fn odd_answers() {
    let c = client(&server().await);
    let err = c.show("plain").await.unwrap_err();
    assert!(
        matches!(&err, ClientError::Api { status, code, message, .. }
            if status.as_u16() == 502 && code == "unknown" && message == "bad gateway"),
        "{err:?}"
    );
    assert!(matches!(c.show("notjson").await, Err(ClientError::BadResponse(_))));
}

#[tokio::test]
async fn connection_refused_says_what_to_check() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let err = client(&format!("http://{addr}")).list().await.unwrap_err();
    assert!(matches!(err, ClientError::Connect { .. }), "{err:?}");
    let text = err.to_string();
    assert!(
        text.contains(&format!("is cordon running with listen.admin = {addr}?")),
        "{text}"
    );
    assert!(text.to_lowercase().contains("refused"), "{text}");
}

#[tokio::test]
async fn silent_server_times_out() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let hold = tokio::spawn(async move {
        let (_stream, _) = listener.accept().await.unwrap();
        tokio::time::sleep(Duration::from_secs(30)).await;
    });
    let c = client(&addr.to_string()).with_timeout(Duration::from_millis(200));
    let err = c.list().await.unwrap_err();
    assert!(matches!(err, ClientError::Timeout { .. }), "{err:?}");
    assert!(err.to_string().contains("did not answer within 200ms"), "{err}");
    hold.abort();
}

#[test]
fn new_checks_the_url_and_token() {
    let token = || SecretString::from(TOKEN);
    assert_eq!(
        AdminClient::new("127.0.0.1:9090", token()).unwrap().base(),
        "http://127.0.0.1:9090"
    );
    assert_eq!(
        AdminClient::new("http://localhost:9090/admin/", token())
            .unwrap()
            .base(),
        "http://localhost:9090/admin"
    );
    for bad in [
        "https://127.0.0.1:9090",
        "ftp://x",
        "http://",
        "http://u:p@127.0.0.1:1",
        "http://h:1/?q=1",
        "a b",
    ] {
        assert!(
            matches!(AdminClient::new(bad, token()), Err(ClientError::BadUrl { .. })),
            "{bad}"
        );
    }
    let https = AdminClient::new("https://127.0.0.1:9090", token())
        .unwrap_err()
        .to_string();
    assert!(https.contains("use http://"), "{https}");
    for bad in ["", "  ", "bad\ntoken"] {
        assert!(matches!(
            AdminClient::new("http://h:1", SecretString::from(bad)),
            Err(ClientError::Invalid(_))
        ));
    }
}

#[test]
fn client_debug_does_not_leak_the_token() {
    let text = format!("{:?}", client("http://127.0.0.1:1"));
    assert!(!text.contains(TOKEN), "{text}");
}
