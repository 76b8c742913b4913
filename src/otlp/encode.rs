//! Audit lines as OpenTelemetry log records, in the official protobuf messages (`opentelemetry-proto`).
//!
//! Each line becomes one record whose body is the line exactly as written (so a receiver can recompute the
//! hash chain from the bodies), with the fields a log pipeline filters on as attributes.

use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, InstrumentationScope, KeyValue, any_value::Value};
use opentelemetry_proto::tonic::logs::v1::{LogRecord, ResourceLogs, ScopeLogs, SeverityNumber};
use opentelemetry_proto::tonic::resource::v1::Resource;
use prost::Message;

/// Who sends: the attributes of every request's resource.
#[derive(Debug, Clone)]
pub(crate) struct Sender {
    attributes: Vec<KeyValue>,
}

impl Sender {
    /// cordon on this host, as `instance` (`service.instance.id`).
    pub(crate) fn new(instance: &str, host: &str) -> Sender {
        Sender {
            attributes: vec![
                text("service.name", "cordon"),
                text("service.version", env!("CARGO_PKG_VERSION")),
                text("service.instance.id", instance),
                text("host.name", host),
            ],
        }
    }
}

/// One `ExportLogsServiceRequest` for `lines`, encoded.
pub(crate) fn request(sender: &Sender, lines: &[Vec<u8>]) -> Vec<u8> {
    let observed = now_nanos();
    let message = ExportLogsServiceRequest {
        resource_logs: vec![ResourceLogs {
            resource: Some(Resource {
                attributes: sender.attributes.clone(),
                ..Default::default()
            }),
            scope_logs: vec![ScopeLogs {
                scope: Some(InstrumentationScope {
                    name: "cordon.audit".into(),
                    version: env!("CARGO_PKG_VERSION").into(),
                    ..Default::default()
                }),
                log_records: lines.iter().map(|l| record(l, observed)).collect(),
                ..Default::default()
            }],
            ..Default::default()
        }],
    };
    message.encode_to_vec()
}

/// One line as a log record.
fn record(line: &[u8], observed: u64) -> LogRecord {
    let body = String::from_utf8_lossy(line).into_owned();
    let v: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
    let field = |name: &str| v.get(name).and_then(serde_json::Value::as_str);
    let kind = field("kind").unwrap_or("unknown");
    let decision = field("decision");
    let failed = v.get("error").is_some_and(|e| !e.is_null());
    let (severity, severity_text) = match (decision, failed, kind) {
        (Some("deny"), _, _) | (_, _, "audit_gap") => (SeverityNumber::Warn, "WARN"),
        (_, true, _) => (SeverityNumber::Error, "ERROR"),
        _ => (SeverityNumber::Info, "INFO"),
    };
    let mut attributes = Vec::with_capacity(12);
    if let Some(seq) = v.get("seq").and_then(serde_json::Value::as_i64) {
        attributes.push(KeyValue {
            key: "cordon.seq".into(),
            value: Some(AnyValue {
                value: Some(Value::IntValue(seq)),
            }),
            ..Default::default()
        });
    }
    attributes.push(text("cordon.kind", kind));
    for (key, name) in [
        ("cordon.sandbox", "sandbox"),
        ("cordon.user", "user"),
        ("cordon.decision", "decision"),
        ("cordon.reason", "reason"),
        ("cordon.policy", "policy"),
        ("http.request.method", "method"),
        ("server.address", "host"),
        ("url.path", "path"),
        ("client.address", "client"),
    ] {
        if let Some(value) = field(name) {
            attributes.push(text(key, value));
        }
    }
    for (key, name) in [("server.port", "port"), ("http.response.status_code", "status")] {
        if let Some(n) = v.get(name).and_then(serde_json::Value::as_i64) {
            attributes.push(KeyValue {
                key: key.into(),
                value: Some(AnyValue {
                    value: Some(Value::IntValue(n)),
                }),
                ..Default::default()
            });
        }
    }
    LogRecord {
        time_unix_nano: field("time").and_then(nanos).unwrap_or(observed),
        observed_time_unix_nano: observed,
        severity_number: severity as i32,
        severity_text: severity_text.into(),
        event_name: format!("cordon.audit.{kind}"),
        body: Some(AnyValue {
            value: Some(Value::StringValue(body)),
        }),
        attributes,
        ..Default::default()
    }
}

fn text(key: &str, value: &str) -> KeyValue {
    KeyValue {
        key: key.into(),
        value: Some(AnyValue {
            value: Some(Value::StringValue(value.into())),
        }),
        ..Default::default()
    }
}

fn nanos(rfc3339: &str) -> Option<u64> {
    let t = crate::rfc3339::parse(rfc3339)?;
    u64::try_from(t.duration_since(std::time::UNIX_EPOCH).ok()?.as_nanos()).ok()
}

fn now_nanos() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

#[cfg(test)]
#[path = "encode_tests.rs"]
mod tests;
