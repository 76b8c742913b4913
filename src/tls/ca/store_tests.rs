#![expect(clippy::unwrap_used, reason = "tests")]

use std::collections::BTreeSet;
use std::fs::{DirBuilder, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::sync::Barrier;

use rcgen::{
    BasicConstraints, CertificateParams, GeneralSubtree, IsCa, KeyPair, KeyUsagePurpose, NameConstraints,
    PKCS_ECDSA_P256_SHA256, PublicKeyData,
};
use tempfile::TempDir;
use time::OffsetDateTime;
use x509_parser::oid_registry::OID_SIG_ECDSA_WITH_SHA256;

use super::*;
use crate::tls::ca::sandbox_ca::CA_VALIDITY_DAYS;
use crate::tls::leaf::LeafName;
use crate::tls::scope::name_constraints;

/// A store under a fresh temporary folder; its root is `<tempdir>/ca`, which does not exist yet.
pub(crate) fn store() -> (TempDir, CaStore) {
    let dir = tempfile::tempdir().unwrap();
    let store = CaStore::new(dir.path().join("ca"));
    (dir, store)
}

/// Minimal CA parameters, for certificates cordon would not have made itself.
pub(crate) fn ca_params(not_after: OffsetDateTime) -> CertificateParams {
    let mut params = CertificateParams::default();
    params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign];
    params.not_before = OffsetDateTime::now_utc() - time::Duration::hours(1);
    params.not_after = not_after;
    params
}

/// Puts a self-signed certificate made from `params` and its key where `CaStore` looks for `sandbox`'s CA.
pub(crate) fn install_handmade(root: &Path, sandbox: &str, params: &CertificateParams) {
    let key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256).unwrap();
    let cert = params.self_signed(&key).unwrap();
    let dir = root.join(sandbox);
    DirBuilder::new().recursive(true).mode(0o700).create(&dir).unwrap();
    fs::write(dir.join(CERT_FILE), cert.pem()).unwrap();
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(dir.join(KEY_FILE))
        .unwrap();
    file.write_all(key.serialize_pem().as_bytes()).unwrap();
}

fn root(dir: &TempDir) -> PathBuf {
    dir.path().join("ca")
}

fn mode(path: &Path) -> u32 {
    fs::metadata(path).unwrap().permissions().mode() & 0o777
}

fn chmod(path: &Path, mode: u32) {
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).unwrap();
}

fn files(dir: &Path) -> BTreeSet<String> {
    fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect()
}

fn names(dns: &[&str], ips: &[&str]) -> Scope {
    Scope::Names {
        dns: dns.iter().map(|s| (*s).to_owned()).collect(),
        ips: ips.iter().map(|s| s.parse().unwrap()).collect(),
    }
}

#[test]
fn create_then_load_returns_the_same_ca() {
    let (dir, store) = store();
    let scope = names(&["example.com"], &[]);
    let created = store
        .load_or_create(&crate::names::SandboxId::from("sb"), &scope)
        .unwrap();
    assert_eq!(created.sandbox(), "sb");
    assert!(created.cert_pem().starts_with("-----BEGIN CERTIFICATE-----"));
    assert_eq!(created.scope(), &scope);

    let loaded = store.load(&crate::names::SandboxId::from("sb")).unwrap().unwrap();
    assert_eq!(loaded.cert_der(), created.cert_der());
    assert_eq!(loaded.cert_pem(), created.cert_pem());
    assert_eq!(loaded.scope(), created.scope());

    // A restart (a new store over the same folder) finds it unchanged, and never regenerates it, even when asked
    // for another scope: the caller compares scopes and decides whether to rotate.
    let restarted = CaStore::new(root(&dir));
    let again = restarted
        .load_or_create(&crate::names::SandboxId::from("sb"), &Scope::Unconstrained)
        .unwrap();
    assert_eq!(again.cert_der(), created.cert_der());
    assert_eq!(again.scope(), &scope);
    assert_eq!(again.not_after(), created.not_after());
}

#[test]
fn files_and_folders_are_private() {
    let (dir, store) = store();
    store
        .load_or_create(&crate::names::SandboxId::from("sb"), &Scope::Unconstrained)
        .unwrap();
    // SECURITY test: folders 0700 and the key 0600 from their creation.
    assert_eq!(mode(&root(&dir)), 0o700);
    assert_eq!(mode(&root(&dir).join("sb")), 0o700);
    assert_eq!(mode(&root(&dir).join("sb/ca.key")), 0o600);
    assert_eq!(
        files(&root(&dir).join("sb")),
        BTreeSet::from(["ca.key".into(), "ca.pem".into()])
    );
}

#[test]
fn a_key_readable_by_others_is_refused() {
    let (dir, store) = store();
    let created = store
        .load_or_create(&crate::names::SandboxId::from("sb"), &Scope::Unconstrained)
        .unwrap();
    let key = root(&dir).join("sb/ca.key");
    chmod(&key, 0o644);
    // SECURITY test: a group/world-readable key is refused, not used.
    let err = store.load(&crate::names::SandboxId::from("sb")).unwrap_err();
    assert!(matches!(err, CaError::KeyPermissions { mode: 0o644, .. }), "{err}");
    assert!(
        err.to_string().contains(&format!("chmod 600 {}", key.display())),
        "{err}"
    );
    // Nor is it regenerated behind the operator's back.
    assert!(
        store
            .load_or_create(&crate::names::SandboxId::from("sb"), &Scope::Unconstrained)
            .is_err()
    );
    chmod(&key, 0o640);
    assert!(matches!(
        store.load(&crate::names::SandboxId::from("sb")),
        Err(CaError::KeyPermissions { .. })
    ));
    chmod(&key, 0o400);
    assert_eq!(
        store
            .load(&crate::names::SandboxId::from("sb"))
            .unwrap()
            .unwrap()
            .cert_der(),
        created.cert_der()
    );
}

#[test]
fn a_key_that_is_not_the_certificates_is_refused() {
    let (dir, store) = store();
    store
        .load_or_create(&crate::names::SandboxId::from("a"), &Scope::Unconstrained)
        .unwrap();
    store
        .load_or_create(&crate::names::SandboxId::from("b"), &Scope::Unconstrained)
        .unwrap();
    let (cert, key) = (root(&dir).join("a/ca.pem"), root(&dir).join("a/ca.key"));
    fs::copy(root(&dir).join("b/ca.key"), &key).unwrap();
    let err = store.load(&crate::names::SandboxId::from("a")).unwrap_err();
    assert!(matches!(err.cause(), CaError::KeyMismatch { .. }), "{err}");
    let message = err.to_string();
    assert!(
        message.contains(&cert.display().to_string()) && message.contains(&key.display().to_string()),
        "{message}"
    );
    assert!(
        store
            .load_or_create(&crate::names::SandboxId::from("a"), &Scope::Unconstrained)
            .is_err()
    );
}

#[test]
fn sandbox_ids_that_could_leave_the_folder_are_refused() {
    let (dir, store) = store();
    let long = "x".repeat(65);
    // SECURITY test: path traversal out of the CA folder.
    for id in [
        "../x",
        "..",
        ".",
        "a/b",
        "/tmp/x",
        "",
        long.as_str(),
        "a b",
        "a\\b",
        "caf\u{e9}",
        "a\0b",
    ] {
        // The store takes only a `SandboxId`, and none can be made of these: they stop where text is read.
        assert!(crate::names::SandboxId::parse(id).is_err(), "{id:?}");
        // The store's own check refuses them too, should a folder name ever come from elsewhere.
        assert!(
            matches!(validate_sandbox_id(id), Err(CaError::InvalidSandboxId { .. })),
            "{id:?}"
        );
    }
    assert_eq!(files(dir.path()), BTreeSet::new(), "nothing was created anywhere");
    for id in ["A-z_0.9", "a..b", &"y".repeat(64)] {
        store
            .load_or_create(&crate::names::SandboxId::from(id), &Scope::Unconstrained)
            .unwrap();
    }
}

#[test]
fn a_sandbox_without_a_ca_loads_as_none() {
    let (dir, store) = store();
    assert!(store.load(&crate::names::SandboxId::from("sb")).unwrap().is_none());
    assert!(!root(&dir).exists(), "load creates nothing");
    store
        .load_or_create(&crate::names::SandboxId::from("other"), &Scope::Unconstrained)
        .unwrap();
    assert!(store.load(&crate::names::SandboxId::from("sb")).unwrap().is_none());
}

#[test]
fn rotate_replaces_the_ca_and_keeps_only_the_old_certificate() {
    let (dir, store) = store();
    let old = store
        .load_or_create(&crate::names::SandboxId::from("sb"), &names(&["example.com"], &[]))
        .unwrap();
    let new = store
        .rotate(&crate::names::SandboxId::from("sb"), &names(&["example.org"], &[]))
        .unwrap();
    assert_ne!(new.cert_der(), old.cert_der());
    assert_ne!(new.key_id(), old.key_id());
    assert_eq!(new.scope(), &names(&["example.org"], &[]));
    let loaded = store.load(&crate::names::SandboxId::from("sb")).unwrap().unwrap();
    assert_eq!(loaded.cert_der(), new.cert_der());
    let sb = root(&dir).join("sb");
    assert_eq!(fs::read_to_string(sb.join("ca.pem.old")).unwrap(), old.cert_pem());
    assert_eq!(
        files(&sb),
        BTreeSet::from(["ca.key".into(), "ca.pem".into(), "ca.pem.old".into()])
    );
    assert_eq!(mode(&sb.join("ca.key")), 0o600);
    // A second rotation replaces ca.pem.old.
    store
        .rotate(&crate::names::SandboxId::from("sb"), &Scope::Unconstrained)
        .unwrap();
    assert_eq!(fs::read_to_string(sb.join("ca.pem.old")).unwrap(), new.cert_pem());
}

#[test]
fn rotate_repairs_a_broken_ca() {
    let (dir, store) = store();
    store
        .load_or_create(&crate::names::SandboxId::from("a"), &Scope::Unconstrained)
        .unwrap();
    store
        .load_or_create(&crate::names::SandboxId::from("b"), &Scope::Unconstrained)
        .unwrap();
    fs::copy(root(&dir).join("b/ca.key"), root(&dir).join("a/ca.key")).unwrap();
    chmod(&root(&dir).join("a/ca.key"), 0o644);
    assert!(store.load(&crate::names::SandboxId::from("a")).is_err());
    let rotated = store
        .rotate(&crate::names::SandboxId::from("a"), &Scope::Unconstrained)
        .unwrap();
    assert_eq!(
        store
            .load(&crate::names::SandboxId::from("a"))
            .unwrap()
            .unwrap()
            .cert_der(),
        rotated.cert_der()
    );
    // Rotating a sandbox that has no CA creates one.
    store
        .rotate(&crate::names::SandboxId::from("c"), &Scope::Unconstrained)
        .unwrap();
    assert!(store.load(&crate::names::SandboxId::from("c")).unwrap().is_some());
}

/// Sets up `a` with a CA, and returns the paths of `b`'s CA files to stand in for a new pair.
fn interrupted(store: &CaStore, dir: &TempDir) -> (Arc<SandboxCa>, Arc<SandboxCa>, PathBuf, PathBuf) {
    let a = store
        .load_or_create(&crate::names::SandboxId::from("a"), &Scope::Unconstrained)
        .unwrap();
    let b = store
        .load_or_create(&crate::names::SandboxId::from("b"), &Scope::Unconstrained)
        .unwrap();
    (a, b, root(dir).join("b/ca.pem"), root(dir).join("b/ca.key"))
}

#[test]
fn an_install_interrupted_after_writing_both_new_files_completes_on_load() {
    let (dir, store) = store();
    let (_, b, b_cert, b_key) = interrupted(&store, &dir);
    let sb = root(&dir).join("a");
    fs::copy(&b_cert, sb.join(NEW_CERT_FILE)).unwrap();
    fs::copy(&b_key, sb.join(NEW_KEY_FILE)).unwrap();
    assert_eq!(
        store
            .load(&crate::names::SandboxId::from("a"))
            .unwrap()
            .unwrap()
            .cert_der(),
        b.cert_der()
    );
    assert_eq!(files(&sb), BTreeSet::from(["ca.key".into(), "ca.pem".into()]));
}

#[test]
fn an_install_interrupted_between_the_renames_completes_on_load() {
    let (dir, store) = store();
    let (_, b, b_cert, b_key) = interrupted(&store, &dir);
    let sb = root(&dir).join("a");
    // ca.key.new was already renamed over ca.key; ca.pem.new was not yet renamed.
    fs::copy(&b_key, sb.join(KEY_FILE)).unwrap();
    fs::copy(&b_cert, sb.join(NEW_CERT_FILE)).unwrap();
    assert_eq!(
        store
            .load(&crate::names::SandboxId::from("a"))
            .unwrap()
            .unwrap()
            .cert_der(),
        b.cert_der()
    );
    assert_eq!(files(&sb), BTreeSet::from(["ca.key".into(), "ca.pem".into()]));
}

#[test]
fn an_install_interrupted_before_its_key_was_written_is_undone_on_load() {
    let (dir, store) = store();
    let (a, _, b_cert, _) = interrupted(&store, &dir);
    let sb = root(&dir).join("a");
    fs::copy(&b_cert, sb.join(NEW_CERT_FILE)).unwrap();
    assert_eq!(
        store
            .load(&crate::names::SandboxId::from("a"))
            .unwrap()
            .unwrap()
            .cert_der(),
        a.cert_der()
    );
    assert_eq!(files(&sb), BTreeSet::from(["ca.key".into(), "ca.pem".into()]));

    // The same during a sandbox's first creation: nothing was installed, so there is no CA yet.
    let fresh = root(&dir).join("fresh");
    DirBuilder::new().mode(0o700).create(&fresh).unwrap();
    fs::copy(&b_cert, fresh.join(NEW_CERT_FILE)).unwrap();
    assert!(store.load(&crate::names::SandboxId::from("fresh")).unwrap().is_none());
    assert_eq!(files(&fresh), BTreeSet::new());
    store
        .load_or_create(&crate::names::SandboxId::from("fresh"), &Scope::Unconstrained)
        .unwrap();
}

#[test]
fn temporary_files_left_by_a_crash_are_removed_on_load() {
    let (dir, store) = store();
    store
        .load_or_create(&crate::names::SandboxId::from("sb"), &Scope::Unconstrained)
        .unwrap();
    let sb = root(&dir).join("sb");
    fs::write(sb.join(".ca.key.new.tmp-0123456789abcdef"), "half a key").unwrap();
    fs::write(sb.join(".ca.pem.new.tmp-0123456789abcdef"), "half a cert").unwrap();
    fs::write(sb.join("notes.txt"), "not ours").unwrap();
    store.load(&crate::names::SandboxId::from("sb")).unwrap().unwrap();
    assert_eq!(
        files(&sb),
        BTreeSet::from(["ca.key".into(), "ca.pem".into(), "notes.txt".into()])
    );
}

#[test]
fn half_a_pair_is_refused_not_regenerated() {
    let (dir, store) = store();
    store
        .load_or_create(&crate::names::SandboxId::from("sb"), &Scope::Unconstrained)
        .unwrap();
    let key = root(&dir).join("sb/ca.key");
    fs::remove_file(&key).unwrap();
    let err = store
        .load_or_create(&crate::names::SandboxId::from("sb"), &Scope::Unconstrained)
        .unwrap_err();
    assert!(matches!(err.cause(), CaError::Incomplete { .. }), "{err}");
    assert!(err.to_string().contains(&key.display().to_string()), "{err}");
    assert!(!key.exists());
}

#[test]
fn a_folder_writable_by_others_is_refused() {
    let (dir, store) = store();
    store
        .load_or_create(&crate::names::SandboxId::from("sb"), &Scope::Unconstrained)
        .unwrap();
    let sb = root(&dir).join("sb");
    chmod(&sb, 0o777);
    // SECURITY test: a CA folder others can write to is refused.
    let err = store.load(&crate::names::SandboxId::from("sb")).unwrap_err();
    assert!(matches!(err, CaError::DirPermissions { .. }), "{err}");
    assert!(
        err.to_string().contains(&format!("chmod 700 {}", sb.display())),
        "{err}"
    );
    assert!(matches!(
        store.rotate(&crate::names::SandboxId::from("sb"), &Scope::Unconstrained),
        Err(CaError::DirPermissions { .. })
    ));
    chmod(&sb, 0o750);
    store.load(&crate::names::SandboxId::from("sb")).unwrap().unwrap();
}

#[test]
fn debug_output_never_shows_the_key() {
    let (dir, store) = store();
    let ca = store
        .load_or_create(&crate::names::SandboxId::from("sb"), &Scope::Unconstrained)
        .unwrap();
    let key_pem = fs::read_to_string(root(&dir).join("sb/ca.key")).unwrap();
    let debug = format!("{ca:?} {store:?}");
    // SECURITY test: the CA key stays out of Debug output (and so out of logs).
    for line in key_pem.lines().filter(|l| !l.starts_with("-----")) {
        assert!(!debug.contains(line), "{debug}");
    }
    let key = KeyPair::from_pem(&key_pem).unwrap();
    let secret: String = key.serialized_der().iter().map(|b| format!("{b:02x}")).collect();
    assert!(!debug.to_ascii_lowercase().contains(&secret[secret.len() - 40..]));
    assert!(debug.contains("sb"), "{debug}");
}

#[test]
fn ca_certificate_fields() {
    let (_dir, store) = store();
    let before = OffsetDateTime::now_utc();
    let ca = store
        .load_or_create(&crate::names::SandboxId::from("sb-1"), &names(&["example.com"], &[]))
        .unwrap();
    let other = store
        .load_or_create(&crate::names::SandboxId::from("sb-2"), &names(&["example.com"], &[]))
        .unwrap();
    let (_, x509) = x509_parser::parse_x509_certificate(ca.cert_der()).unwrap();
    let (_, other) = x509_parser::parse_x509_certificate(other.cert_der()).unwrap();

    let cn = x509.subject().iter_common_name().next().unwrap().as_str().unwrap();
    assert_eq!(cn, "cordon sandbox sb-1 CA");
    assert_eq!(
        x509.subject().iter_organization().next().unwrap().as_str().unwrap(),
        "cordon"
    );
    assert_eq!(x509.issuer(), x509.subject());
    let bc = x509.basic_constraints().unwrap().unwrap();
    assert!(bc.critical && bc.value.ca);
    assert_eq!(bc.value.path_len_constraint, Some(0));
    let ku = x509.key_usage().unwrap().unwrap().value;
    assert!(ku.key_cert_sign() && ku.crl_sign() && ku.digital_signature() && !ku.key_encipherment());
    assert!(x509.name_constraints().unwrap().unwrap().critical);
    assert_eq!(x509.signature_algorithm.algorithm, OID_SIG_ECDSA_WITH_SHA256);
    assert_eq!(
        x509.public_key().subject_public_key.data.len(),
        65,
        "an uncompressed P-256 point"
    );

    let not_before = x509.validity().not_before.to_datetime();
    let not_after = x509.validity().not_after.to_datetime();
    assert!((before - time::Duration::hours(1) - not_before).abs() <= time::Duration::seconds(2));
    assert!((before + time::Duration::days(CA_VALIDITY_DAYS) - not_after).abs() <= time::Duration::seconds(2));

    assert_eq!(x509.raw_serial().len(), 16);
    assert_ne!(x509.raw_serial(), other.raw_serial());
    assert_ne!(x509.public_key().raw, other.public_key().raw);
}

#[test]
fn the_scope_is_read_back_from_the_certificate() {
    let (_dir, store) = store();
    let unconstrained = store
        .load_or_create(&crate::names::SandboxId::from("u"), &Scope::Unconstrained)
        .unwrap();
    assert_eq!(unconstrained.scope(), &Scope::Unconstrained);
    let (_, x509) = x509_parser::parse_x509_certificate(unconstrained.cert_der()).unwrap();
    assert!(x509.name_constraints().unwrap().is_none());

    let messy = names(
        &["Example.COM.", "api.example.com", "example.com"],
        &["10.1.2.3/8", "::1/128", "10.0.0.0/8"],
    );
    let ca = store
        .load_or_create(&crate::names::SandboxId::from("n"), &messy)
        .unwrap();
    let tidy = names(&["api.example.com", "example.com"], &["10.0.0.0/8", "::1/128"]);
    assert_eq!(messy.normalized().unwrap(), tidy);
    assert_eq!(ca.scope(), &tidy);
    assert_eq!(
        store
            .load(&crate::names::SandboxId::from("n"))
            .unwrap()
            .unwrap()
            .scope(),
        &tidy
    );

    for scope in [
        names(&[], &["10.0.0.0/8"]),
        names(&["example.com"], &[]),
        names(&[], &[]),
    ] {
        let ca = store.rotate(&crate::names::SandboxId::from("n"), &scope).unwrap();
        assert_eq!(ca.scope(), &scope);
        assert_eq!(
            store
                .load(&crate::names::SandboxId::from("n"))
                .unwrap()
                .unwrap()
                .scope(),
            &scope
        );
    }
}

#[test]
fn bad_scope_entries_are_refused_before_anything_is_written() {
    let (dir, store) = store();
    for bad in [
        "*.example.com",
        "",
        ".example.com",
        "10.0.0.1",
        "a..b",
        "-a.com",
        "exa mple.com",
    ] {
        let err = store
            .load_or_create(&crate::names::SandboxId::from("sb"), &names(&[bad], &[]))
            .unwrap_err();
        assert!(matches!(err, CaError::InvalidScope { .. }), "{bad:?}: {err}");
    }
    assert!(!root(&dir).exists());
}

#[test]
fn scope_permits_follows_rfc_5280_subtrees() {
    let scope = names(&["example.com"], &["10.0.0.0/8"]);
    let dns = |n: &str| LeafName::Dns(n.to_owned());
    let ip = |a: &str| LeafName::Ip(a.parse().unwrap());
    for ok in ["example.com", "api.example.com", "a.b.example.com", "API.Example.COM."] {
        assert!(scope.permits(&dns(ok)), "{ok}");
    }
    for no in ["badexample.com", "example.com.evil", "com", "xexample.com"] {
        assert!(!scope.permits(&dns(no)), "{no}");
    }
    assert!(scope.permits(&ip("10.255.0.1")));
    assert!(!scope.permits(&ip("11.0.0.1")));
    assert!(!scope.permits(&ip("::1")));
    assert!(!names(&["example.com"], &[]).permits(&ip("10.0.0.1")));
    assert!(!names(&[], &["10.0.0.0/8"]).permits(&dns("example.com")));
    assert!(Scope::Unconstrained.permits(&dns("anything.test")));
}

#[test]
fn constraints_cordon_did_not_write_are_refused() {
    let (dir, store) = store();
    let far = OffsetDateTime::now_utc() + time::Duration::days(30);
    // Permitted DNS names without the IP exclusion: reporting `ips: []` would hide that it signs for any IP.
    let mut params = ca_params(far);
    params.name_constraints = Some(NameConstraints {
        permitted_subtrees: vec![GeneralSubtree::DnsName("example.com".into())],
        excluded_subtrees: vec![],
    });
    install_handmade(&root(&dir), "no-ip-exclusion", &params);
    // SECURITY test: such a CA is refused rather than misreported.
    let err = store
        .load(&crate::names::SandboxId::from("no-ip-exclusion"))
        .unwrap_err();
    assert!(matches!(err.cause(), CaError::UnsupportedConstraints { .. }), "{err}");

    params.name_constraints = Some(NameConstraints {
        permitted_subtrees: vec![GeneralSubtree::Rfc822Name("example.com".into())],
        excluded_subtrees: vec![],
    });
    install_handmade(&root(&dir), "email", &params);
    assert!(matches!(
        store.load(&crate::names::SandboxId::from("email")).map_err(|e| e.cause().to_string()),
        Err(e) if e.contains("name constraints cordon did not write")
    ));

    // The same constraints cordon writes are accepted, whoever wrote them.
    params.name_constraints = name_constraints(&names(&["example.com"], &[]));
    install_handmade(&root(&dir), "like-cordon", &params);
    assert_eq!(
        store
            .load(&crate::names::SandboxId::from("like-cordon"))
            .unwrap()
            .unwrap()
            .scope(),
        &names(&["example.com"], &[])
    );
}

#[test]
fn expired_and_non_ca_certificates_are_refused() {
    let (dir, store) = store();
    let past = OffsetDateTime::now_utc() - time::Duration::minutes(1);
    install_handmade(&root(&dir), "expired", &ca_params(past));
    let err = store.load(&crate::names::SandboxId::from("expired")).unwrap_err();
    assert!(matches!(err.cause(), CaError::Expired { .. }), "{err}");
    assert!(
        err.to_string()
            .contains("run `cordon ca rotate --sandbox expired` to make a new CA"),
        "{err}"
    );

    let mut params = ca_params(OffsetDateTime::now_utc() + time::Duration::days(30));
    params.is_ca = IsCa::ExplicitNoCa;
    install_handmade(&root(&dir), "leaf", &params);
    let err = store.load(&crate::names::SandboxId::from("leaf")).unwrap_err();
    assert!(matches!(err.cause(), CaError::BadCert { .. }), "{err}");

    let sb = root(&dir).join("garbage");
    install_handmade(
        &root(&dir),
        "garbage",
        &ca_params(OffsetDateTime::now_utc() + time::Duration::days(30)),
    );
    fs::write(sb.join(CERT_FILE), "not a certificate").unwrap();
    let err = store.load(&crate::names::SandboxId::from("garbage")).unwrap_err();
    assert!(matches!(err.cause(), CaError::BadCert { .. }), "{err}");
}

#[test]
fn concurrent_first_uses_create_one_ca() {
    let (_dir, store) = store();
    let barrier = Barrier::new(8);
    let certs: Vec<_> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..8)
            .map(|_| {
                s.spawn(|| {
                    barrier.wait();
                    store
                        .load_or_create(&crate::names::SandboxId::from("sb"), &Scope::Unconstrained)
                        .unwrap()
                        .cert_der()
                        .clone()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert!(certs.iter().all(|c| c == &certs[0]));
}

#[test]
fn key_id_is_the_public_key_identifier() {
    let (dir, store) = store();
    let ca = store
        .load_or_create(&crate::names::SandboxId::from("sb"), &Scope::Unconstrained)
        .unwrap();
    let key = KeyPair::from_pem(&fs::read_to_string(root(&dir).join("sb/ca.key")).unwrap()).unwrap();
    let expected = CertificateParams::default().key_identifier(&key);
    assert_eq!(ca.key_id(), expected.as_slice());
    assert_eq!(key.der_bytes().len(), 65);
}
