#![expect(clippy::unwrap_used, reason = "tests")]

use std::convert::Infallible;

use bytes::Bytes;
use http_body_util::Full;
use serde_json::{Value, json};

use super::*;

/// A provider on loopback serving `doc` (with `{base}` replaced by its own URL) and `keys`.
async fn provider(doc: Value, keys: Value) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let doc = doc.to_string().replace("{base}", &base);
    let keys = keys.to_string();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let (doc, keys) = (doc.clone(), keys.clone());
            tokio::spawn(async move {
                let svc = hyper::service::service_fn(move |req: http::Request<hyper::body::Incoming>| {
                    let body = if req.uri().path() == "/jwks" {
                        keys.clone()
                    } else {
                        doc.clone()
                    };
                    async move { Ok::<_, Infallible>(http::Response::new(Full::new(Bytes::from(body)))) }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), svc)
                    .await;
            });
        }
    });
    base
}

fn rsa_key() -> Value {
    json!({"kty": "RSA", "kid": "k1", "n": "sXchDaQebHnPiGvyDOAT4saGEUetSyo9MKLOoWFsueri23bOdgWp4Dy1WlUzewbgBHod5pcM9H95GQRV3JDXboIRROSBigeC5yjU1hGzHHyXss8UDprecbAYxknTcQkhslANGRUZmdTOQ5qTRsLAt6BTYuyvVRdhS8exSZEy_c4gs_7svlJJQ4H9_NxsiIoLwAEk7-Q3UXERGYw_75IDrGA84-lA_-Ct4eTlXHBIY2EaV7t7LjJaynVJCpkv4LKjTTAumiGUIuQhrNhZLuF_RJLqHpM2kgWFLU7-VTdL1VbC2tejvcI2BlMkEpk1BzBZI0KQB0GaDWFLN-aEAw3vRw", "e": "AQAB"})
}

fn doc(issuer: &str) -> Value {
    json!({
        "issuer": issuer,
        "authorization_endpoint": "{base}/auth",
        "token_endpoint": "{base}/token",
        "jwks_uri": "{base}/jwks",
        "id_token_signing_alg_values_supported": ["RS256", "HS256"],
    })
}

async fn fetched(doc: Value, keys: Value) -> Result<Discovered, String> {
    let base = provider(doc, keys).await;
    let http = HttpClient::new(&[]).unwrap();
    fetch(&http, &base, Duration::from_secs(5)).await
}

#[tokio::test]
async fn a_provider_that_names_itself_is_found_with_its_asymmetric_algorithms_and_keys() {
    let found = fetched(doc("{base}"), json!({"keys": [rsa_key()]})).await.unwrap();
    assert_eq!(found.algorithms, vec![Algorithm::RS256], "HS256 is never accepted");
    assert_eq!(found.keys.keys.len(), 1);
    assert!(found.token_endpoint.as_str().ends_with("/token"));
}

#[tokio::test]
async fn a_document_of_another_issuer_or_with_unusable_parts_is_refused() {
    let mut plain = doc("{base}");
    plain["token_endpoint"] = json!("http://login.example.com/token");
    let mut hmac_only = doc("{base}");
    hmac_only["id_token_signing_alg_values_supported"] = json!(["HS256", "none"]);
    let oct = json!({"keys": [{"kty": "oct", "kid": "k1", "k": "c2VjcmV0"}]});
    let cases = [
        (
            doc("https://login.example.com"),
            json!({"keys": [rsa_key()]}),
            "names the issuer",
        ),
        (plain, json!({"keys": [rsa_key()]}), "is not an https:// URL"),
        (hmac_only, json!({"keys": [rsa_key()]}), "no asymmetric"),
        (doc("{base}"), oct, "holds no public key"),
        (doc("{base}"), json!({"nokeys": []}), "holds no keys"),
    ];
    for (doc, keys, said) in cases {
        let e = fetched(doc, keys).await.err().unwrap_or_default();
        assert!(e.contains(said), "{said}: {e}");
    }
}
