//! The provider's discovery document and signing keys.

use std::str::FromStr;
use std::time::Duration;

use bytes::Bytes;
use http::Request;
use http::header::ACCEPT;
use http_body_util::Full;
use jsonwebtoken::Algorithm;
use jsonwebtoken::jwk::{AlgorithmParameters, Jwk, JwkSet};
use serde_json::Value;

use crate::upstream::outbound::HttpClient;

/// What the discovery document says, with the keys it points to.
#[derive(Debug, Clone)]
pub(super) struct Discovered {
    /// The issuer exactly as the document writes it (what `iss` must equal).
    pub(super) issuer: String,
    /// Where the browser is sent.
    pub(super) authorization_endpoint: url::Url,
    /// Where the code is exchanged.
    pub(super) token_endpoint: url::Url,
    /// Where the keys are.
    pub(super) jwks_uri: url::Url,
    /// The asymmetric algorithms ID tokens may be signed with (RS256 when the document names none).
    pub(super) algorithms: Vec<Algorithm>,
    /// The provider's public keys (symmetric keys left out).
    pub(super) keys: JwkSet,
}

/// The signing algorithms cordon accepts for an ID token: asymmetric ones only (an `HS256` token would be
/// signed with cordon's own client secret, a `none` token with nothing).
const ASYMMETRIC: [Algorithm; 9] = [
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::EdDSA,
];

/// GET `url` as JSON.
async fn get_json(http: &HttpClient, url: &str, timeout: Duration) -> Result<Value, String> {
    let req = Request::get(url)
        .header(ACCEPT, "application/json")
        .body(Full::new(Bytes::new()))
        .map_err(|e| format!("{url}: {e}"))?;
    let (status, _, body) = http.send(req, timeout).await.map_err(|e| e.to_string())?;
    if !status.is_success() {
        return Err(format!("{url} answered {status}"));
    }
    serde_json::from_slice(&body).map_err(|e| format!("{url} is not JSON: {e}"))
}

/// An endpoint the document names: an `https://` URL, or `http://` on loopback.
fn endpoint(doc: &Value, key: &str) -> Result<url::Url, String> {
    let text = doc
        .get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| format!("the discovery document has no {key}"))?;
    let url = url::Url::parse(text).map_err(|e| format!("{key} {text:?} is not a URL: {e}"))?;
    let loopback = match url.host() {
        Some(url::Host::Domain(d)) => d == "localhost",
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    };
    match url.scheme() {
        "https" => Ok(url),
        "http" if loopback => Ok(url),
        _ => Err(format!("{key} {text:?} is not an https:// URL")),
    }
}

/// Fetch and check the discovery document of `issuer`, then its keys.
pub(super) async fn fetch(http: &HttpClient, issuer: &str, timeout: Duration) -> Result<Discovered, String> {
    let doc = get_json(http, &format!("{issuer}/.well-known/openid-configuration"), timeout).await?;
    let said = doc.get("issuer").and_then(Value::as_str).unwrap_or_default();
    // SECURITY: the document must be the configured issuer's own (OpenID Connect Discovery 4.3): its `issuer` is
    // the one ID tokens must carry, so a document naming another issuer is refused.
    if said.trim_end_matches('/') != issuer {
        return Err(format!(
            "the discovery document names the issuer {said:?}, not {issuer:?} as console.oidc.issuer says"
        ));
    }
    let announced: Vec<Algorithm> = doc
        .get("id_token_signing_alg_values_supported")
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .filter_map(Value::as_str)
                .filter_map(|a| Algorithm::from_str(a).ok())
                .filter(|a| ASYMMETRIC.contains(a))
                .collect()
        })
        .unwrap_or_else(|| vec![Algorithm::RS256]);
    if announced.is_empty() {
        return Err("the provider announces no asymmetric ID token signing algorithm cordon accepts".into());
    }
    let jwks_uri = endpoint(&doc, "jwks_uri")?;
    Ok(Discovered {
        issuer: said.to_owned(),
        authorization_endpoint: endpoint(&doc, "authorization_endpoint")?,
        token_endpoint: endpoint(&doc, "token_endpoint")?,
        keys: keys(http, &jwks_uri, timeout).await?,
        jwks_uri,
        algorithms: announced,
    })
}

/// The provider's public keys at `jwks_uri`: each key cordon can read, symmetric ones left out.
pub(super) async fn keys(http: &HttpClient, jwks_uri: &url::Url, timeout: Duration) -> Result<JwkSet, String> {
    let doc = get_json(http, jwks_uri.as_str(), timeout).await?;
    let keys: Vec<Jwk> = doc
        .get("keys")
        .and_then(Value::as_array)
        .ok_or_else(|| format!("{jwks_uri} holds no keys"))?
        .iter()
        .filter_map(|k| serde_json::from_value::<Jwk>(k.clone()).ok())
        .filter(|k| !matches!(k.algorithm, AlgorithmParameters::OctetKey(_)))
        .collect();
    if keys.is_empty() {
        return Err(format!("{jwks_uri} holds no public key cordon can use"));
    }
    Ok(JwkSet { keys })
}

#[cfg(test)]
#[path = "discovery_tests.rs"]
mod tests;
