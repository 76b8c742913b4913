#![expect(clippy::unwrap_used, reason = "tests")]
use super::*;
use std::convert::Infallible;

/// A token endpoint whose tokens name the scope they were asked for.
async fn issuer() -> u16 {
    use http_body_util::BodyExt;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let svc = hyper::service::service_fn(|req: hyper::Request<hyper::body::Incoming>| async move {
                let body = req
                    .into_body()
                    .collect()
                    .await
                    .map(|b| b.to_bytes())
                    .unwrap_or_default();
                let form: Vec<(String, String)> = serde_urlencoded::from_bytes(&body).unwrap_or_default();
                let scope = form
                    .iter()
                    .find(|(k, _)| k == "scope")
                    .map(|(_, v)| v.clone())
                    .unwrap_or_default();
                let json = format!(
                    "{{\"access_token\":\"tok-{}\",\"token_type\":\"Bearer\",\"expires_in\":600}}",
                    scope.replace(':', "-")
                );
                Ok::<_, Infallible>(hyper::Response::new(http_body_util::Full::new(bytes::Bytes::from(
                    json,
                ))))
            });
            tokio::spawn(
                hyper::server::conn::http1::Builder::new().serve_connection(hyper_util::rt::TokioIo::new(stream), svc),
            );
        }
    });
    port
}

#[tokio::test]
async fn each_policy_gets_its_own_narrowed_token() {
    let port = issuer().await;
    let yaml = format!(
        r#"
credentials:
  api:
    source: {{ oauth2: {{ token_url: "http://127.0.0.1:{port}/token", client_id: c, client_secret: {{ env: PATH }}, scope: "default" }} }}
    bind: {{ hosts: [api.example.com] }}
    inject: {{ header: Authorization, value: "Bearer {{secret}}" }}
policies:
  reader:
    credentials: [api]
    credential_scope: {{ api: {{ scope: "repo:read" }} }}
  writer:
    credentials: [api]
    credential_scope: {{ api: {{ scope: "repo:write" }} }}
  plain:
    credentials: [api]
"#
    );
    let config = Config::parse("t.yaml", &yaml).unwrap();
    let secrets = Secrets::new(&config).unwrap();
    let spec = &config.credentials["api"];
    let value = |p: &str| {
        let policy = &config.policies[p];
        let narrowed = policy.credential_scope.get("api").map(|o| (policy.name.as_str(), o));
        secrets.value(spec, narrowed)
    };
    assert_eq!(value("reader").await.unwrap().expose_secret(), "tok-repo-read");
    assert_eq!(value("writer").await.unwrap().expose_secret(), "tok-repo-write");
    assert_eq!(value("plain").await.unwrap().expose_secret(), "tok-default");
    // Cached per policy: asking again does not mix them up.
    assert_eq!(value("reader").await.unwrap().expose_secret(), "tok-repo-read");
}

#[test]
fn narrowing_is_validated_against_the_credential_kind() {
    let yaml = r#"
credentials:
  s:
    source: { env: PATH }
    bind: { hosts: [a.example.com] }
    inject: { header: X-Key }
policies:
  p:
    credentials: [s]
    credential_scope: { s: { scope: x }, t: { scope: y } }
"#;
    let errs = Config::parse("t.yaml", yaml).err().unwrap().to_string();
    assert!(
        errs.contains("policies.p.credential_scope.s: a stored secret cannot be narrowed"),
        "{errs}"
    );
    assert!(
        errs.contains("policies.p.credential_scope.t: \"t\" is not in this policy's `credentials`"),
        "{errs}"
    );
}
