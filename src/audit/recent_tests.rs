#![expect(clippy::unwrap_used, reason = "tests")]

use std::sync::Arc;

use super::*;
use crate::audit::{AdminAction, ApprovalRecord, Covered, Pending};
use crate::principal::{Principal, Role, Roles, Via};
use crate::reason::Reason;

struct Nowhere;

impl Sink for Nowhere {
    fn write(&self, _: &Record) {}
}

fn client() -> std::net::SocketAddr {
    "127.0.0.1:4000".parse().unwrap()
}

fn refusal(sink: &Arc<dyn Sink>, sandbox: &str, path: &str) {
    let mut p = Pending::start(sink.clone(), client(), Kind::Https);
    p.sandbox_id(sandbox);
    p.host("api.test");
    p.path(path);
    p.refused(true, Some(403), Reason::NoRule, crate::error::Side::Downstream, None);
    p.finish();
}

#[test]
fn each_sandbox_keeps_its_latest_refusals_newest_first() {
    let recent = Arc::new(Recent::new(Arc::new(Nowhere)));
    let sink: Arc<dyn Sink> = recent.clone();
    for i in 0..12 {
        refusal(&sink, "s1", &format!("/{i}"));
    }
    refusal(&sink, "s2", "/other");
    let mut allowed = Pending::start(sink.clone(), client(), Kind::Https);
    allowed.sandbox_id("s1");
    allowed.allowed(Some(0), None);
    allowed.finish();
    let s1: Vec<String> = recent
        .refusals(&crate::names::SandboxId::from("s1"))
        .into_iter()
        .map(|s| s.path.unwrap())
        .collect();
    assert_eq!(s1.len(), PER_SANDBOX);
    assert_eq!(s1.first().map(String::as_str), Some("/11"));
    assert_eq!(s1.last().map(String::as_str), Some("/2"));
    assert_eq!(
        recent.refusals(&crate::names::SandboxId::from("s2"))[0]
            .reason
            .as_deref(),
        Some("no_rule")
    );
    assert!(recent.refusals(&crate::names::SandboxId::from("s3")).is_empty());
}

#[test]
fn decisions_are_kept_from_the_admin_records_that_made_them() {
    let recent = Arc::new(Recent::new(Arc::new(Nowhere)));
    let sink: Arc<dyn Sink> = recent.clone();
    let anna = Principal {
        name: "anna@example.test".into(),
        roles: Roles::of([Role::Approver]),
        via: Via::Oidc,
    };
    let decide = |refused: Option<Reason>| {
        crate::audit::admin(
            &sink,
            AdminAction {
                principal: Some(&anna),
                client: client(),
                action: "approval_decided",
                status: if refused.is_some() { 403 } else { 200 },
                refused,
                sandbox: Some("s1"),
                detail: None,
                covered: Some((
                    Covered {
                        method: "POST",
                        host: "api.test",
                        port: 443,
                        path: "/pay",
                        policy: "agents",
                        user: "alice",
                    },
                    ApprovalRecord {
                        id: "ap-1".into(),
                        outcome: "allow".into(),
                        by: Some("anna@example.test".into()),
                        scope: Some("once".into()),
                        waited_ms: 0,
                    },
                )),
            },
        );
    };
    decide(None);
    decide(Some(Reason::AdminForbidden));
    let d = recent.decisions();
    assert_eq!(d.len(), 1, "a refused call decided nothing: {d:?}");
    assert_eq!(d[0].by.as_deref(), Some("anna@example.test"));
    assert_eq!(d[0].path.as_deref(), Some("/pay"));
    assert!(
        recent.refusals(&crate::names::SandboxId::from("s1")).is_empty(),
        "admin records are not the sandbox's refusals"
    );
}
