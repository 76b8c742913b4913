#![expect(clippy::unwrap_used, reason = "tests")]
use super::*;
use crate::identity::Origin;
use crate::names::SandboxId;

fn sandbox(id: &str) -> Arc<Sandbox> {
    Arc::new(Sandbox::new(id.into(), "u".into(), "p".into(), Origin::Config))
}

fn target(host: &str) -> Target {
    Target::from_host_value(host.as_bytes(), 443).unwrap()
}

fn sessions() -> (Arc<Sessions>, CancellationToken, Arc<Metrics>) {
    let root = CancellationToken::new();
    let metrics = Arc::new(Metrics::new());
    (Arc::new(Sessions::new(root.clone(), metrics.clone())), root, metrics)
}

#[test]
fn leases_count_and_deregister() {
    let (s, _, _) = sessions();
    let a = sandbox("a");
    let c1 = s.attach_connection(&a);
    let t1 = s.open_tunnel(&a, &target("x.test"), TlsMode::Intercept);
    assert_eq!(s.counts(&"a".into()), (1, 1));
    drop(c1);
    assert_eq!(s.counts(&"a".into()), (0, 1));
    drop(t1);
    assert_eq!(s.counts(&"a".into()), (0, 0));
}

#[test]
fn a_sweep_cancels_only_the_sandbox_that_lost_access() {
    let (s, _, metrics) = sessions();
    let (a, b) = (sandbox("a"), sandbox("b"));
    let ca = s.attach_connection(&a);
    let ta = s.open_tunnel(&a, &target("x.test"), TlsMode::Tunnel);
    let cb = s.attach_connection(&b);
    let closed = s.sweep(|sb| if sb.id == "a" { Err(Closed::Revoked) } else { Ok(()) }, None);
    assert_eq!(closed, vec![(SandboxId::from("a"), Closed::Revoked)]);
    assert!(ca.token().is_cancelled() && ta.token().is_cancelled());
    assert!(!cb.token().is_cancelled());
    assert!(
        metrics
            .encode()
            .contains("cordon_sandbox_closures_total{reason=\"revoked\"} 1")
    );
}

#[test]
fn a_redecision_cancels_only_tunnels_no_longer_allowed() {
    let (s, _, _) = sessions();
    let a = sandbox("a");
    let conn = s.attach_connection(&a);
    let keep = s.open_tunnel(&a, &target("keep.test"), TlsMode::Intercept);
    let gone = s.open_tunnel(&a, &target("gone.test"), TlsMode::Tunnel);
    let allowed = |_: &Sandbox, t: &Target, _: TlsMode| t.host.as_name() == Some("keep.test");
    s.sweep(|_| Ok(()), Some(&allowed));
    assert!(gone.token().is_cancelled());
    assert!(!keep.token().is_cancelled() && !conn.token().is_cancelled());
}

#[test]
fn a_redecision_cancels_tunnels_whose_tls_mode_changed() {
    let (s, _, _) = sessions();
    let a = sandbox("a");
    let blind = s.open_tunnel(&a, &target("x.test"), TlsMode::Tunnel);
    let read = s.open_tunnel(&a, &target("x.test"), TlsMode::Intercept);
    // The destination is still allowed, now intercepted: the blind tunnel closes, the intercepted one stays.
    let allowed = |_: &Sandbox, _: &Target, mode: TlsMode| mode == TlsMode::Intercept;
    s.sweep(|_| Ok(()), Some(&allowed));
    assert!(blind.token().is_cancelled());
    assert!(!read.token().is_cancelled());
}

#[test]
fn the_drain_deadline_cancels_everything() {
    let (s, root, _) = sessions();
    let a = sandbox("a");
    let c = s.attach_connection(&a);
    let t = s.open_tunnel(&a, &target("x.test"), TlsMode::Tunnel);
    root.cancel();
    assert!(c.token().is_cancelled() && t.token().is_cancelled());
}

#[test]
fn incarnations_are_separate() {
    let (s, _, _) = sessions();
    let old = Arc::new(Sandbox::new(
        "a".into(),
        "u".into(),
        "p".into(),
        Origin::Api {
            nonce: "n1".into(),
            expires: 10,
        },
    ));
    let new = Arc::new(Sandbox::new(
        "a".into(),
        "u".into(),
        "p".into(),
        Origin::Api {
            nonce: "n2".into(),
            expires: 10,
        },
    ));
    let lo = s.attach_connection(&old);
    let ln = s.attach_connection(&new);
    s.sweep(
        |sb| match &sb.origin {
            Origin::Api { nonce, .. } if nonce == "n1" => Err(Closed::Revoked),
            _ => Ok(()),
        },
        None,
    );
    assert!(lo.token().is_cancelled());
    assert!(!ln.token().is_cancelled());
    // The closed incarnation is out of the registry; the new one counts.
    assert_eq!(s.counts(&"a".into()), (1, 0));
}
