//! The GraphQL requests one HTTP request carries, read strictly as GraphQL over HTTP sends them: a GET's query
//! string; a POST's JSON body (one request, or a batch: an array of them), its `application/graphql` body (the
//! document itself), or its form. Only the protocol's parameters are taken (`query`, `operationName`,
//! `variables`, `extensions`), each once: a parameter written twice, in the URL and the body, or under a name
//! some server reads a document from (`id`, `documentId`, ...) would let a request be judged as one thing and run
//! as another.

use http::Method;
use serde::Deserialize;
use serde_json::Value;

/// The most requests in one batch.
const MOST_IN_BATCH: usize = 64;

/// The parameters servers read a stored document's id from, which cordon cannot judge.
const PERSISTED_IDS: &[&str] = &["id", "documentId", "doc_id", "queryId", "hash"];

/// The parameters of GraphQL over HTTP.
const PARAMETERS: &[&str] = &["query", "operationName", "variables", "extensions"];

/// One GraphQL request: its document (or the hash of a persisted one) and which operation of it to run.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Params {
    /// The document, when sent.
    pub(crate) query: Option<String>,
    /// `operationName`, when given.
    pub(crate) operation_name: Option<String>,
    /// An automatic persisted query's SHA-256 (`extensions.persistedQuery.sha256Hash`), lowercase hex.
    pub(crate) hash: Option<String>,
}

/// A request as a JSON body writes it: the protocol's members only, each once.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, expecting = "a GraphQL request (a JSON object)")]
struct RequestBody {
    #[serde(default)]
    query: Option<String>,
    #[serde(default, rename = "operationName")]
    operation_name: Option<String>,
    /// Read only to be sure it is an object.
    #[serde(default, rename = "variables")]
    _variables: Option<serde_json::Map<String, Value>>,
    #[serde(default)]
    extensions: Option<serde_json::Map<String, Value>>,
}

/// An automatic persisted query's extension.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, expecting = "a persisted query (a JSON object)")]
struct PersistedQuery {
    version: u32,
    #[serde(rename = "sha256Hash")]
    sha256_hash: String,
}

/// The GraphQL requests of an HTTP request, and whether they came as a batch; or why it is not one cordon can
/// judge. `query` is the URL's query string, `content_type` the request's, `body` its whole body.
pub(crate) fn read(
    method: &Method,
    query: Option<&str>,
    content_type: Option<&str>,
    body: &[u8],
) -> Result<(Vec<Params>, bool), String> {
    let url = match query {
        Some(q) => form(q, "the URL's query string")?,
        None => Vec::new(),
    };
    match *method {
        Method::GET => {
            if !body.is_empty() {
                return Err("a GraphQL GET with a body: send the request in the URL or as a POST, not both".into());
            }
            Ok((vec![params(url, "the URL")?], false))
        }
        Method::POST => {
            // SECURITY: a server may read the URL's parameters before (or instead of) the body's.
            if let Some((k, _)) = url
                .iter()
                .find(|(k, _)| PARAMETERS.contains(&k.as_str()) || PERSISTED_IDS.contains(&k.as_str()))
            {
                return Err(format!(
                    "a GraphQL POST with {k:?} in its URL: send the request in the body only"
                ));
            }
            let media = content_type
                .and_then(|c| c.split(';').next())
                .map(|m| m.trim().to_ascii_lowercase())
                .unwrap_or_default();
            match media.as_str() {
                "application/json" | "application/graphql+json" => json(body),
                "application/graphql" => {
                    let text = std::str::from_utf8(body).map_err(|_| "the document is not UTF-8".to_owned())?;
                    Ok((
                        vec![Params {
                            query: Some(text.to_owned()),
                            ..Params::default()
                        }],
                        false,
                    ))
                }
                "application/x-www-form-urlencoded" => {
                    let text = std::str::from_utf8(body).map_err(|_| "the form is not UTF-8".to_owned())?;
                    Ok((vec![params(form(text, "the form")?, "the form")?], false))
                }
                "" => Err("a GraphQL POST without a Content-Type: send application/json".into()),
                other => Err(format!(
                    "a GraphQL POST of {other}: cordon judges application/json, application/graphql and forms; \
                     send the request as JSON"
                )),
            }
        }
        ref other => Err(format!("a GraphQL endpoint takes GET and POST, not {other}")),
    }
}

/// The pairs of a query string or form, each name once; a `;` (which some servers split on) is refused.
fn form(text: &str, what: &str) -> Result<Vec<(String, String)>, String> {
    if text.contains(';') {
        return Err(format!(
            "{what} has a ';', which some servers read as a separator and others do not; encode it (%3B)"
        ));
    }
    let pairs: Vec<(String, String)> = form_urlencoded::parse(text.as_bytes()).into_owned().collect();
    // A set, not a scan per pair: a 1 MiB form holds a hundred thousand pairs.
    let mut seen = std::collections::HashSet::with_capacity(pairs.len());
    if let Some((k, _)) = pairs.iter().find(|(k, _)| !seen.insert(k.as_str())) {
        return Err(format!("{what} has {k:?} twice"));
    }
    Ok(pairs)
}

/// One request from a query string's or form's pairs.
fn params(pairs: Vec<(String, String)>, what: &str) -> Result<Params, String> {
    let mut out = Params::default();
    let mut extensions = None;
    for (k, v) in pairs {
        match k.as_str() {
            "query" => out.query = Some(v),
            "operationName" => out.operation_name = Some(v).filter(|v| !v.is_empty()),
            "variables" => object(&v, "variables")?,
            "extensions" => {
                object(&v, "extensions")?;
                extensions = serde_json::from_str::<serde_json::Map<String, Value>>(&v).ok();
            }
            k if PERSISTED_IDS.contains(&k) => return Err(persisted_id(k)),
            // Others (a cache-buster, a tracking tag) no GraphQL server reads.
            _ => {}
        }
    }
    out.hash = persisted(extensions.as_ref()).map_err(|e| format!("{what}: {e}"))?;
    Ok(out)
}

/// A JSON object as a URL parameter (`variables`, `extensions`), no member twice.
fn object(text: &str, name: &str) -> Result<(), String> {
    crate::body::json::unique_members(text.as_bytes()).map_err(|e| format!("{name} is not JSON: {e}"))?;
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(_) | Value::Null) => Ok(()),
        _ => Err(format!("{name} is not a JSON object")),
    }
}

fn persisted_id(k: &str) -> String {
    format!(
        "{k:?} names a document stored on the server, which cordon cannot read to judge; send the document \
         (or an automatic persisted query's hash with it once)"
    )
}

/// The requests of a JSON body.
fn json(body: &[u8]) -> Result<(Vec<Params>, bool), String> {
    // SECURITY: no member twice in any object of the body (read before anything is judged).
    crate::body::json::unique_members(body).map_err(|e| format!("not a GraphQL request: {e}"))?;
    let value: Value = serde_json::from_slice(body).map_err(|e| format!("not a GraphQL request: {e}"))?;
    let (items, batch) = match value {
        Value::Array(items) if items.is_empty() => return Err("an empty batch".into()),
        Value::Array(items) if items.len() > MOST_IN_BATCH => {
            return Err(format!("a batch of {} requests (at most {MOST_IN_BATCH})", items.len()));
        }
        Value::Array(items) => (items, true),
        one @ Value::Object(_) => (vec![one], false),
        _ => return Err("a GraphQL request is a JSON object (or a batch: an array of them)".into()),
    };
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.into_iter().enumerate() {
        let at = |e: String| {
            if batch {
                format!("request {i} of the batch: {e}")
            } else {
                e
            }
        };
        if let Value::Object(map) = &item
            && let Some(k) = map.keys().find(|k| PERSISTED_IDS.contains(&k.as_str()))
        {
            return Err(at(persisted_id(k)));
        }
        let raw = RequestBody::deserialize(item).map_err(|e| at(format!("not a GraphQL request: {e}")))?;
        out.push(Params {
            hash: persisted(raw.extensions.as_ref()).map_err(at)?,
            query: raw.query,
            operation_name: raw.operation_name,
        });
    }
    Ok((out, batch))
}

/// The hash of an automatic persisted query, from a request's `extensions`.
fn persisted(extensions: Option<&serde_json::Map<String, Value>>) -> Result<Option<String>, String> {
    let Some(p) = extensions.and_then(|e| e.get("persistedQuery")) else {
        return Ok(None);
    };
    let p = PersistedQuery::deserialize(p).map_err(|e| format!("extensions.persistedQuery: {e}"))?;
    if p.version != 1 {
        return Err(format!(
            "extensions.persistedQuery is version {}; cordon reads version 1",
            p.version
        ));
    }
    let hash = p.sha256_hash;
    if hash.len() != 64 || !hash.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        return Err("extensions.persistedQuery.sha256Hash is not a SHA-256 in lowercase hex".into());
    }
    Ok(Some(hash))
}

#[cfg(test)]
#[path = "request_tests.rs"]
mod tests;
