#![expect(clippy::unwrap_used, reason = "tests")]

use std::sync::{Arc, Mutex};

use super::*;
use crate::secrets::issuer::test_server::{json, serve};

const OLD: &str = "rt-old-0123456789abcdef";
const SECRET: &str = "client-secret-fedcba9876543210";

fn client(port: u16, secret: Option<&str>) -> RefreshClient {
    RefreshClient {
        token_url: format!("http://127.0.0.1:{port}/token").parse().unwrap(),
        client_id: "cordon-client".into(),
        client_secret: secret.map(|s| SecretString::from(s.to_owned())),
        scope: None,
    }
}

async fn answering(status: u16, body: &'static str) -> (u16, Arc<Mutex<Vec<(http::request::Parts, bytes::Bytes)>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let keep = seen.clone();
    let addr = serve(move |parts, body_in| {
        keep.lock().unwrap().push((parts, body_in));
        async move { json(status, body) }
    })
    .await;
    (addr.port(), seen)
}

#[tokio::test]
async fn a_rotating_answer_gives_both_tokens_and_the_request_is_the_refresh_grant() {
    let (port, seen) = answering(
        200,
        r#"{"access_token":"at-new","token_type":"Bearer","expires_in":60,"refresh_token":"rt-new"}"#,
    )
    .await;
    let http = crate::upstream::outbound::HttpClient::new(&[]).unwrap();
    let got = client(port, Some(SECRET))
        .refresh(&http, &SecretString::from(OLD.to_owned()))
        .await
        .unwrap();
    assert_eq!(got.access.value.expose_secret(), "at-new");
    assert_eq!(got.refresh.unwrap().expose_secret(), "rt-new");
    assert!(got.access.expires_at.is_some());
    let seen = seen.lock().unwrap();
    let (parts, body) = &seen[0];
    let form = String::from_utf8_lossy(body);
    assert!(
        form.contains("grant_type=refresh_token") && form.contains(OLD),
        "{form}"
    );
    assert!(!form.contains(SECRET), "the secret goes in Basic, not the form");
    assert!(parts.headers.get("authorization").is_some());
}

#[tokio::test]
async fn a_public_client_sends_its_id_in_the_form_and_a_provider_that_does_not_rotate_keeps_the_token() {
    let (port, seen) = answering(200, r#"{"access_token":"at-new","token_type":"bearer"}"#).await;
    let http = crate::upstream::outbound::HttpClient::new(&[]).unwrap();
    let got = client(port, None)
        .refresh(&http, &SecretString::from(OLD.to_owned()))
        .await
        .unwrap();
    assert!(got.refresh.is_none());
    let seen = seen.lock().unwrap();
    assert!(String::from_utf8_lossy(&seen[0].1).contains("client_id=cordon-client"));
    assert!(seen[0].0.headers.get("authorization").is_none());
}

#[tokio::test]
async fn invalid_grant_is_dead_for_good_other_refusals_and_outages_are_not() {
    let http = crate::upstream::outbound::HttpClient::new(&[]).unwrap();
    let old = SecretString::from(OLD.to_owned());
    let (port, _) = answering(
        400,
        r#"{"error":"invalid_grant","error_description":"grant request is invalid"}"#,
    )
    .await;
    assert!(is_dead_grant(
        &client(port, None).refresh(&http, &old).await.err().unwrap()
    ));
    let (port, _) = answering(401, r#"{"error":"invalid_client"}"#).await;
    let e = client(port, None).refresh(&http, &old).await.err().unwrap();
    assert!(!is_dead_grant(&e) && !e.is_unavailable());
    let (port, _) = answering(503, r#"{"error":"invalid_grant"}"#).await;
    let e = client(port, None).refresh(&http, &old).await.err().unwrap();
    assert!(
        !is_dead_grant(&e) && e.is_unavailable(),
        "an outage is never taken for a revocation: {e}"
    );
}

#[tokio::test]
async fn a_provider_echoing_the_refresh_token_or_the_secret_never_puts_them_in_an_error() {
    let http = crate::upstream::outbound::HttpClient::new(&[]).unwrap();
    let old = SecretString::from(OLD.to_owned());
    let (port, _) = answering(
        400,
        r#"{"error":"invalid_grant","error_description":"token rt-old-0123456789abcdef of client-secret-fedcba9876543210"}"#,
    )
    .await;
    let text = client(port, Some(SECRET))
        .refresh(&http, &old)
        .await
        .err()
        .unwrap()
        .to_string();
    assert!(!text.contains(OLD) && !text.contains(SECRET), "{text}");
    let (port, _) = answering(200, r#"{"access_token":"at","token_type":"rt-old-0123456789abcdef"}"#).await;
    let text = client(port, None).refresh(&http, &old).await.err().unwrap().to_string();
    assert!(!text.contains(OLD), "{text}");
}

#[tokio::test]
async fn tokens_that_could_split_a_header_and_cleartext_urls_are_refused() {
    let http = crate::upstream::outbound::HttpClient::new(&[]).unwrap();
    let old = SecretString::from(OLD.to_owned());
    for body in [
        r#"{"access_token":"at\r\nX-Evil: 1","token_type":"Bearer"}"#,
        r#"{"access_token":"at","token_type":"Bearer","refresh_token":"rt\nx"}"#,
        r#"{"access_token":"","token_type":"Bearer"}"#,
    ] {
        let (port, _) = answering(200, body).await;
        assert!(client(port, None).refresh(&http, &old).await.is_err(), "{body}");
    }
    let mut far = client(1, None);
    far.token_url = "http://auth.example.com/token".parse().unwrap();
    let e = far.refresh(&http, &old).await.err().unwrap();
    assert!(matches!(e, IssuerError::Config(_)), "{e}");
}
