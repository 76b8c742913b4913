#![expect(clippy::unwrap_used, clippy::panic, reason = "tests")]
use super::*;
use crate::identity::AuthFailure;

const KEY: &str = "0123456789abcdef0123456789abcdef-test";
const TTL: Ttl = Ttl {
    default: Duration::from_secs(3600),
    max: Duration::from_secs(7200),
};

fn control(path: Option<&Path>) -> Control {
    Control::open(path, Some(SecretString::from(KEY.to_string()))).unwrap()
}

fn new(id: Option<&str>) -> NewSandbox {
    NewSandbox {
        id: id.map(String::from),
        user: "alice".into(),
        policy: "web".into(),
        ttl: None,
        labels: BTreeMap::from([("task".to_string(), "42".to_string())]),
        source_cidrs: Vec::new(),
        inline_policy: None,
    }
}

fn create(c: &Control, id: Option<&str>, now: i64) -> Result<(SandboxRow, String), ControlError> {
    c.create(new(id), TTL, |p| p == "web", |id| id == "declared", |_| Ok(()), now)
}

#[test]
fn a_created_sandbox_verifies_with_its_credential_only() {
    let c = control(None);
    let (r, cred) = create(&c, None, 1000).unwrap();
    assert!(r.id.as_str().starts_with("sb-"));
    assert_eq!(r.expires, 1000 + 3600);
    let s = c.verify(r.id.as_str(), &cred, 1001).unwrap();
    assert_eq!((s.user.as_str(), s.policy.as_str()), ("alice", "web"));
    // SECURITY: the credential is bound to its id.
    let (other, _) = create(&c, Some("other"), 1000).unwrap();
    assert_eq!(c.verify(other.id.as_str(), &cred, 1001), Err(AuthFailure::Invalid));
    assert_eq!(
        c.verify(r.id.as_str(), "eyJhbGciOiJIUzI1NiJ9.e30.x", 1001),
        Err(AuthFailure::Invalid)
    );
}

#[test]
fn expiry_renewal_and_revocation() {
    let c = control(None);
    let (r, cred) = create(&c, Some("a"), 1000).unwrap();
    assert_eq!(c.verify("a", &cred, 1000 + 3600), Err(AuthFailure::Expired));
    // Renewal moves the expiry for credentials already handed out.
    c.renew(&"a".into(), Some(Duration::from_secs(7000)), TTL, 2000)
        .unwrap();
    assert!(c.verify("a", &cred, 1000 + 3600).is_ok());
    // Renewal never shortens: one that would is refused, saying when the sandbox expires and when it would.
    let shorter = c.renew(&"a".into(), Some(Duration::from_secs(10)), TTL, 2000);
    assert!(
        matches!(
            &shorter,
            Err(ControlError::Shorter {
                expires: 9000,
                asked: 2010,
                ..
            })
        ),
        "{shorter:?}"
    );
    assert_eq!(
        c.renew(&"a".into(), Some(Duration::from_secs(7000)), TTL, 2000)
            .unwrap()
            .expires,
        9000
    );
    c.revoke_sandbox(&"a".into(), 2500).unwrap();
    assert_eq!(c.verify("a", &cred, 2501), Err(AuthFailure::Revoked));
    assert!(matches!(
        c.renew(&"a".into(), None, TTL, 2600),
        Err(ControlError::NotFound(_))
    ));
    assert!(matches!(c.issue(&"a".into(), 2600), Err(ControlError::NotFound(_))));
    let _ = r;
}

#[test]
fn a_recreated_id_does_not_revive_old_credentials() {
    let c = control(None);
    let (_, old) = create(&c, Some("a"), 1000).unwrap();
    c.revoke_sandbox(&"a".into(), 1100).unwrap();
    let (_, fresh) = create(&c, Some("a"), 1200).unwrap();
    assert!(c.verify("a", &fresh, 1201).is_ok());
    assert_eq!(c.verify("a", &old, 1201), Err(AuthFailure::Revoked));
}

#[test]
fn bad_requests_say_what_is_wrong() {
    let c = control(None);
    let field = |r: Result<(SandboxRow, String), ControlError>| match r {
        Err(ControlError::Invalid { field, .. }) => field,
        other => panic!("expected Invalid, got {other:?}"),
    };
    assert_eq!(field(create(&c, Some("bad id"), 1)), "id");
    assert_eq!(field(create(&c, Some(".."), 1)), "id");
    // Lengths are in characters, as the messages say.
    let mut n = new(None);
    n.user = "é".repeat(128);
    assert!(c.create(n, TTL, |_| true, |_| false, |_| Ok(()), 1).is_ok());
    assert!(matches!(create(&c, Some("declared"), 1), Err(ControlError::Exists(_))));
    let mut n = new(None);
    n.policy = "nope".into();
    assert_eq!(
        field(c.create(n, TTL, |p| p == "web", |_| false, |_| Ok(()), 1)),
        "policy"
    );
    let mut n = new(None);
    n.ttl = Some(Duration::from_secs(99_999));
    assert_eq!(field(c.create(n, TTL, |_| true, |_| false, |_| Ok(()), 1)), "ttl");
    let mut n = new(None);
    n.user = String::new();
    assert_eq!(field(c.create(n, TTL, |_| true, |_| false, |_| Ok(()), 1)), "user");
    let mut n = new(None);
    n.labels.insert("bad key".into(), "v".into());
    assert_eq!(field(c.create(n, TTL, |_| true, |_| false, |_| Ok(()), 1)), "labels");
    create(&c, Some("dup"), 1).unwrap();
    assert!(matches!(create(&c, Some("dup"), 2), Err(ControlError::Exists(_))));
}

#[test]
fn a_second_process_on_the_same_store_agrees() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cordon.db");
    let (a, b) = (control(Some(&path)), control(Some(&path)));
    let (r, cred) = create(&a, Some("shared"), 1000).unwrap();
    // Accepted before b has re-read the store: the credential carries what is needed.
    assert!(b.verify("shared", &cred, 1001).is_ok());
    a.revoke_sandbox(&"shared".into(), 1002).unwrap();
    assert!(b.refresh().unwrap());
    assert_eq!(b.verify("shared", &cred, 1003), Err(AuthFailure::Revoked));
    assert!(!b.refresh().unwrap());
    // A restart keeps everything.
    drop((a, b));
    let c = control(Some(&path));
    assert_eq!(c.get(&"shared".into()).unwrap().nonce, r.nonce);
    assert_eq!(c.verify("shared", &cred, 1004), Err(AuthFailure::Revoked));
}

#[test]
fn another_key_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cordon.db");
    let a = control(Some(&path));
    let (_, cred) = create(&a, Some("x"), 1000).unwrap();
    let other = Control::open(Some(&path), None).unwrap();
    assert_eq!(other.verify("x", &cred, 1001), Err(AuthFailure::Invalid));
}

#[test]
fn secret_files_are_made_once_and_private() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("sub/admin-token");
    assert!(crate::secret_file::ensure_secret_file(&p).unwrap());
    let first = std::fs::read_to_string(&p).unwrap();
    assert_eq!(first.trim().len(), 64);
    assert!(!crate::secret_file::ensure_secret_file(&p).unwrap());
    assert_eq!(std::fs::read_to_string(&p).unwrap(), first);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&p).unwrap().permissions().mode() & 0o777, 0o600);
    }
}
