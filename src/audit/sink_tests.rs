#![expect(clippy::unwrap_used, reason = "tests")]

use std::sync::{Arc, Mutex};

use super::*;
use crate::audit::{Kind, Pending, Sink};

#[derive(Clone, Default)]
struct Shared(Arc<Mutex<Vec<u8>>>);

impl super::super::writer::Lines for Shared {
    fn line(&self, line: Vec<u8>) {
        self.0.lock().unwrap().extend_from_slice(&line);
    }
}

#[test]
fn line_sink_writes_one_json_line_per_record() {
    let out = Shared::default();
    let sink: Arc<dyn Sink> = Arc::new(LineSink::new(out.clone()));
    let mut first = Pending::start(sink.clone(), "127.0.0.1:4000".parse().unwrap(), Kind::Https);
    first.host("api.test");
    first.path("/a \"quoted\"\nline");
    first.finish();
    // Dropped without finish: still exactly one record.
    drop(Pending::start(sink, "[::1]:5000".parse().unwrap(), Kind::Connect));
    let text = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert!(text.ends_with('\n'));
    let a: serde_json::Value = serde_json::from_str(lines[0]).unwrap();
    let b: serde_json::Value = serde_json::from_str(lines[1]).unwrap();
    assert_eq!(a["host"], "api.test");
    assert_eq!(a["path"], "/a \"quoted\"\nline", "escaped inside its one line");
    assert_eq!(a["kind"], "https");
    assert_eq!(b["client"], "[::1]:5000");
    assert_eq!(b["decision"], "deny");
}
