#![expect(clippy::unwrap_used, reason = "tests")]

use std::path::Path;
use std::process::Command;

use rustls::client::ClientConnection;
use rustls::server::ServerConnection;
use rustls::{ClientConfig, Connection, RootCertStore, ServerConfig, SupportedProtocolVersion};
use rustls_pki_types::ServerName;
use x509_parser::extensions::GeneralName;
use x509_parser::oid_registry::OID_X509_EXT_AUTHORITY_KEY_IDENTIFIER;

use super::super::ca::Scope;
use super::super::crypto::provider;
use super::*;
use crate::tls::ca::store::tests::{ca_params, install_handmade, store};

const DAY: Duration = Duration::from_secs(86_400);

/// What a finished handshake agreed on.
#[derive(Debug)]
pub(crate) struct Negotiated {
    pub(crate) version: rustls::ProtocolVersion,
    pub(crate) alpn: Option<Vec<u8>>,
}

/// A client trusting only `ca`, offering h2 and http/1.1, TLS 1.3 and 1.2.
pub(crate) fn client(ca: &SandboxCa) -> Arc<ClientConfig> {
    client_with(ca, &[&rustls::version::TLS13, &rustls::version::TLS12])
}

fn client_with(ca: &SandboxCa, versions: &[&'static SupportedProtocolVersion]) -> Arc<ClientConfig> {
    let mut roots = RootCertStore::empty();
    roots.add(ca.cert_der().clone()).unwrap();
    let mut config = ClientConfig::builder_with_provider(provider())
        .with_protocol_versions(versions)
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Arc::new(config)
}

/// A real rustls handshake, in memory, between `server` and a client connecting to `name`. The error says which
/// side failed and how (rustls' Debug form, which names webpki's error).
pub(crate) fn handshake(
    server: Arc<ServerConfig>,
    client: Arc<ClientConfig>,
    name: &str,
) -> Result<Negotiated, String> {
    let name = ServerName::try_from(name.to_owned()).map_err(|e| e.to_string())?;
    let mut client = Connection::Client(ClientConnection::new(client, name).map_err(|e| format!("client: {e:?}"))?);
    let mut server = Connection::Server(ServerConnection::new(server).map_err(|e| format!("server: {e:?}"))?);
    for _ in 0..10 {
        transfer(&mut client, &mut server).map_err(|e| format!("server: {e}"))?;
        transfer(&mut server, &mut client).map_err(|e| format!("client: {e}"))?;
        if !client.is_handshaking() && !server.is_handshaking() {
            return Ok(Negotiated {
                version: client.protocol_version().unwrap(),
                alpn: client.alpn_protocol().map(<[u8]>::to_vec),
            });
        }
    }
    Err("the handshake did not finish".into())
}

/// Moves what `from` has to send into `to`, and lets `to` process it.
fn transfer(from: &mut Connection, to: &mut Connection) -> Result<(), String> {
    let mut buf = Vec::new();
    while from.wants_write() {
        from.write_tls(&mut buf).map_err(|e| e.to_string())?;
    }
    let mut rest = &buf[..];
    while !rest.is_empty() {
        to.read_tls(&mut rest).map_err(|e| e.to_string())?;
        to.process_new_packets().map_err(|e| format!("{e:?}"))?;
    }
    Ok(())
}

/// Asserts the handshake failed on the client side with an error mentioning `needle`.
pub(crate) fn assert_rejected(result: Result<Negotiated, String>, needle: &str) {
    let err = result.unwrap_err();
    assert!(
        err.starts_with("client: ") && err.contains(needle),
        "expected a client-side {needle}, got {err}"
    );
}

fn dns(name: &str) -> LeafName {
    LeafName::Dns(name.to_owned())
}

fn ip(addr: &str) -> LeafName {
    LeafName::Ip(addr.parse().unwrap())
}

fn names(dns: &[&str], ips: &[&str]) -> Scope {
    Scope::Names {
        dns: dns.iter().map(|s| (*s).to_owned()).collect(),
        ips: ips.iter().map(|s| s.parse().unwrap()).collect(),
    }
}

/// Serves a leaf minted without the scope check (as a stolen CA key could) to a client trusting `ca`.
fn forced(ca: &SandboxCa, name: &LeafName, server_name: &str) -> Result<Negotiated, String> {
    let (chain, key) = mint_unchecked(ca, name, DAY).unwrap();
    handshake(Arc::new(server_config(chain, key).unwrap()), client(ca), server_name)
}

fn served(ca: &SandboxCa, name: &LeafName, server_name: &str) -> Result<Negotiated, String> {
    handshake(mint_config(ca, name, DAY).unwrap(), client(ca), server_name)
}

#[test]
fn leaf_is_accepted_by_its_sandbox_and_rejected_by_another() {
    let (_dir, store) = store();
    let ca_a = store
        .load_or_create(&crate::names::SandboxId::from("a"), &Scope::Unconstrained)
        .unwrap();
    let ca_b = store
        .load_or_create(&crate::names::SandboxId::from("b"), &Scope::Unconstrained)
        .unwrap();
    let config = mint_config(&ca_a, &dns("api.example.com"), DAY).unwrap();

    let ok = handshake(Arc::clone(&config), client(&ca_a), "api.example.com").unwrap();
    assert_eq!(ok.version, rustls::ProtocolVersion::TLSv1_3);
    assert_eq!(ok.alpn.as_deref(), Some(&b"h2"[..]));
    let tls12 = handshake(
        Arc::clone(&config),
        client_with(&ca_a, &[&rustls::version::TLS12]),
        "api.example.com",
    )
    .unwrap();
    assert_eq!(tls12.version, rustls::ProtocolVersion::TLSv1_2);

    // The leaf is for its name only.
    assert_rejected(
        handshake(Arc::clone(&config), client(&ca_a), "other.example.com"),
        "NotValidForName",
    );
    // SECURITY test: cross-sandbox isolation.
    assert_rejected(handshake(config, client(&ca_b), "api.example.com"), "UnknownIssuer");
}

#[test]
fn names_in_the_dns_scope_verify() {
    let (_dir, store) = store();
    let ca = store
        .load_or_create(&crate::names::SandboxId::from("sb"), &names(&["example.com"], &[]))
        .unwrap();
    for name in ["api.example.com", "example.com", "a.b.example.com"] {
        served(&ca, &dns(name), name).unwrap();
    }
}

#[test]
fn names_outside_the_dns_scope_are_rejected_by_webpki() {
    let (_dir, store) = store();
    let ca = store
        .load_or_create(&crate::names::SandboxId::from("sb"), &names(&["example.com"], &[]))
        .unwrap();
    for name in ["evil.com", "badexample.com", "example.com.evil.com"] {
        assert_rejected(forced(&ca, &dns(name), name), "NameConstraintViolation");
    }
}

#[test]
fn ip_leaves_are_rejected_when_the_scope_has_no_ip_ranges() {
    let (_dir, store) = store();
    let ca = store
        .load_or_create(&crate::names::SandboxId::from("sb"), &names(&["example.com"], &[]))
        .unwrap();
    // SECURITY test: the 0.0.0.0/0 and ::/0 exclusions.
    assert_rejected(forced(&ca, &ip("10.0.0.1"), "10.0.0.1"), "NameConstraintViolation");
    assert_rejected(
        forced(&ca, &ip("2001:db8::1"), "2001:db8::1"),
        "NameConstraintViolation",
    );
}

#[test]
fn dns_leaves_are_rejected_when_the_scope_has_only_ip_ranges() {
    let (_dir, store) = store();
    let ca = store
        .load_or_create(&crate::names::SandboxId::from("sb"), &names(&[], &["10.0.0.0/8"]))
        .unwrap();
    served(&ca, &ip("10.0.0.1"), "10.0.0.1").unwrap();
    // SECURITY test: the exclusion of every DNS name.
    assert_rejected(
        forced(&ca, &dns("api.example.com"), "api.example.com"),
        "NameConstraintViolation",
    );
    assert_rejected(
        forced(&ca, &ip("192.168.1.1"), "192.168.1.1"),
        "NameConstraintViolation",
    );
    // Permitted IPv4 ranges only: IPv6 is outside them (one name form).
    assert_rejected(
        forced(&ca, &ip("2001:db8::1"), "2001:db8::1"),
        "NameConstraintViolation",
    );
}

#[test]
fn mint_refuses_names_outside_the_scope() {
    let (_dir, store) = store();
    let ca = store
        .load_or_create(
            &crate::names::SandboxId::from("sb"),
            &names(&["example.com"], &["10.0.0.0/8"]),
        )
        .unwrap();
    let err = mint(&ca, &dns("evil.com"), DAY).unwrap_err();
    assert!(matches!(err, CaError::OutOfScope { .. }), "{err}");
    assert!(err.to_string().contains("sandbox sb may sign for"), "{err}");
    assert!(matches!(
        mint(&ca, &ip("192.168.0.1"), DAY),
        Err(CaError::OutOfScope { .. })
    ));
    mint(&ca, &ip("10.1.2.3"), DAY).unwrap();
    mint(&ca, &dns("API.Example.com."), DAY).unwrap();
}

#[test]
fn leaf_certificate_fields() {
    let (_dir, store) = store();
    let ca = store
        .load_or_create(&crate::names::SandboxId::from("sb"), &Scope::Unconstrained)
        .unwrap();
    let before = OffsetDateTime::now_utc();
    let (chain, key) = mint(&ca, &dns("API.example.com"), 7 * DAY).unwrap();
    assert_eq!(chain.len(), 2);
    assert_eq!(&chain[1], ca.cert_der());
    let (_, leaf) = x509_parser::parse_x509_certificate(&chain[0]).unwrap();
    let (_, ca_x509) = x509_parser::parse_x509_certificate(ca.cert_der()).unwrap();

    let san = leaf.subject_alternative_name().unwrap().unwrap();
    assert_eq!(san.value.general_names, vec![GeneralName::DNSName("api.example.com")]);
    assert_eq!(
        leaf.subject().iter_common_name().next().unwrap().as_str().unwrap(),
        "api.example.com"
    );
    assert!(leaf.extended_key_usage().unwrap().unwrap().value.server_auth);
    let ku = leaf.key_usage().unwrap().unwrap().value;
    assert!(ku.digital_signature() && !ku.key_cert_sign() && !ku.key_encipherment());
    assert!(!leaf.basic_constraints().unwrap().unwrap().value.ca);
    assert_eq!(leaf.issuer(), ca_x509.subject());
    assert!(
        leaf.get_extension_unique(&OID_X509_EXT_AUTHORITY_KEY_IDENTIFIER)
            .unwrap()
            .is_some()
    );

    let not_before = leaf.validity().not_before.to_datetime();
    let not_after = leaf.validity().not_after.to_datetime();
    assert!(
        (before - LEAF_BACKDATE - not_before).abs() <= time::Duration::seconds(2),
        "{not_before}"
    );
    assert!(
        (before + time::Duration::days(7) - not_after).abs() <= time::Duration::seconds(2),
        "{not_after}"
    );

    // SECURITY test: the leaf key is its own, never the CA's.
    let leaf_key = KeyPair::try_from(key.secret_der()).unwrap();
    let leaf_public = leaf.public_key().subject_public_key.data.as_ref();
    assert_eq!(leaf_public, rcgen::PublicKeyData::der_bytes(&leaf_key));
    assert_ne!(leaf_public, ca_x509.public_key().subject_public_key.data.as_ref());
}

#[test]
fn ip_leaf_has_an_ip_san_and_no_common_name() {
    let (_dir, store) = store();
    let ca = store
        .load_or_create(&crate::names::SandboxId::from("sb"), &Scope::Unconstrained)
        .unwrap();
    let (chain, _) = mint(&ca, &LeafName::from_host("[2001:db8::1]"), DAY).unwrap();
    let (_, leaf) = x509_parser::parse_x509_certificate(&chain[0]).unwrap();
    let san = leaf.subject_alternative_name().unwrap().unwrap();
    let expected: std::net::Ipv6Addr = "2001:db8::1".parse().unwrap();
    assert_eq!(
        san.value.general_names,
        vec![GeneralName::IPAddress(&expected.octets())]
    );
    assert_eq!(leaf.subject().iter_common_name().count(), 0);
    served(&ca, &ip("2001:db8::1"), "2001:db8::1").unwrap();
}

#[test]
fn every_mint_has_a_fresh_key_and_serial() {
    let (_dir, store) = store();
    let ca = store
        .load_or_create(&crate::names::SandboxId::from("sb"), &Scope::Unconstrained)
        .unwrap();
    let (one, _) = mint(&ca, &dns("x.example.com"), DAY).unwrap();
    let (two, _) = mint(&ca, &dns("x.example.com"), DAY).unwrap();
    let (_, one) = x509_parser::parse_x509_certificate(&one[0]).unwrap();
    let (_, two) = x509_parser::parse_x509_certificate(&two[0]).unwrap();
    assert_ne!(one.raw_serial(), two.raw_serial());
    assert_ne!(one.public_key().raw, two.public_key().raw);
}

#[test]
fn leaf_never_outlives_its_ca() {
    let (dir, store) = store();
    let ca_not_after = OffsetDateTime::now_utc() + time::Duration::days(2);
    install_handmade(&dir.path().join("ca"), "sb", &ca_params(ca_not_after));
    let ca = store.load(&crate::names::SandboxId::from("sb")).unwrap().unwrap();
    let (chain, _) = mint(&ca, &dns("x.example.com"), 30 * DAY).unwrap();
    let (_, leaf) = x509_parser::parse_x509_certificate(&chain[0]).unwrap();
    assert_eq!(leaf.validity().not_after.to_datetime(), ca.not_after());
}

#[test]
fn bad_requests_are_refused() {
    let (_dir, store) = store();
    let ca = store
        .load_or_create(&crate::names::SandboxId::from("sb"), &Scope::Unconstrained)
        .unwrap();
    assert!(matches!(
        mint(&ca, &dns("x.example.com"), Duration::ZERO),
        Err(CaError::InvalidValidity(_))
    ));
    for bad in [
        "*.example.com",
        "",
        "a..b",
        "exa mple.com",
        "-a.example.com",
        "ex\u{e4}mple.com",
    ] {
        assert!(
            matches!(mint(&ca, &dns(bad), DAY), Err(CaError::InvalidName { .. })),
            "{bad:?}"
        );
    }
    // A key that is not the chain's.
    let (chain, _) = mint(&ca, &dns("x.example.com"), DAY).unwrap();
    let (_, other_key) = mint(&ca, &dns("x.example.com"), DAY).unwrap();
    assert!(matches!(server_config(chain, other_key), Err(CaError::Tls(_))));
}

#[test]
fn leaf_names_from_hosts() {
    assert_eq!(LeafName::from_host("10.0.0.1"), ip("10.0.0.1"));
    assert_eq!(LeafName::from_host("[::1]"), ip("::1"));
    assert_eq!(LeafName::from_host("::1"), ip("::1"));
    assert_eq!(LeafName::from_host("Example.com"), dns("Example.com"));
    assert_eq!(dns("Example.COM.").normalized().unwrap(), dns("example.com"));
    assert_eq!(dns("10.0.0.1").normalized().unwrap(), ip("10.0.0.1"));
    assert_eq!(ip("10.0.0.1").to_string(), "10.0.0.1");
}

/// Runs openssl, or says loudly that it cannot.
fn openssl(args: &[&str], cwd: &Path) -> Option<(bool, String)> {
    match Command::new("openssl").args(args).current_dir(cwd).output() {
        Ok(out) => Some((
            out.status.success(),
            format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ),
        )),
        Err(e) => {
            eprintln!(
                "!!! SKIPPED: openssl cannot be run ({e}); the name-constraint check against OpenSSL did not run"
            );
            None
        }
    }
}

/// Writes a leaf chain's first certificate as PEM, through openssl.
fn write_leaf_pem(dir: &Path, file: &str, chain: &[CertificateDer<'static>]) -> Option<()> {
    std::fs::write(dir.join("leaf.der"), chain[0].as_ref()).unwrap();
    let (ok, out) = openssl(&["x509", "-inform", "DER", "-in", "leaf.der", "-out", file], dir)?;
    assert!(ok, "{out}");
    Some(())
}

#[test]
fn openssl_enforces_the_name_constraints() {
    let (dir, store) = store();
    let ca = store
        .load_or_create(&crate::names::SandboxId::from("sb"), &names(&["example.com"], &[]))
        .unwrap();
    let work = dir.path();
    std::fs::write(work.join("ca.pem"), ca.cert_pem()).unwrap();

    let Some((ok, text)) = openssl(&["x509", "-noout", "-text", "-in", "ca.pem"], work) else {
        return;
    };
    assert!(ok, "{text}");
    for needle in [
        "X509v3 Name Constraints: critical",
        "DNS:example.com",
        "IP:0.0.0.0/0.0.0.0",
        "CA:TRUE, pathlen:0",
        "Certificate Sign, CRL Sign",
    ] {
        assert!(text.contains(needle), "{needle:?} missing from\n{text}");
    }

    let verify = |name: &LeafName, file: &str| -> Option<(bool, String)> {
        let (chain, _) = mint_unchecked(&ca, name, DAY).unwrap();
        write_leaf_pem(work, file, &chain)?;
        openssl(&["verify", "-purpose", "sslserver", "-CAfile", "ca.pem", file], work)
    };
    let Some((ok, out)) = verify(&dns("api.example.com"), "good.pem") else {
        return;
    };
    assert!(ok && out.contains("good.pem: OK"), "{out}");
    let Some((ok, out)) = verify(&dns("evil.com"), "evil.pem") else {
        return;
    };
    assert!(!ok && out.contains("permitted subtree violation"), "{out}");
    let Some((ok, out)) = verify(&ip("10.0.0.1"), "ip.pem") else {
        return;
    };
    assert!(!ok && out.contains("excluded subtree violation"), "{out}");
}

#[test]
fn openssl_accepts_in_scope_ip_leaves() {
    let (dir, store) = store();
    let ca = store
        .load_or_create(&crate::names::SandboxId::from("sb"), &names(&[], &["10.0.0.0/8"]))
        .unwrap();
    let work = dir.path();
    std::fs::write(work.join("ca.pem"), ca.cert_pem()).unwrap();
    let (chain, _) = mint(&ca, &ip("10.0.0.1"), DAY).unwrap();
    if write_leaf_pem(work, "ip.pem", &chain).is_none() {
        return;
    }
    let Some((ok, out)) = openssl(
        &["verify", "-purpose", "sslserver", "-CAfile", "ca.pem", "ip.pem"],
        work,
    ) else {
        return;
    };
    assert!(ok && out.contains("ip.pem: OK"), "{out}");
    let (chain, _) = mint_unchecked(&ca, &dns("api.example.com"), DAY).unwrap();
    write_leaf_pem(work, "dns.pem", &chain);
    let Some((ok, out)) = openssl(
        &["verify", "-purpose", "sslserver", "-CAfile", "ca.pem", "dns.pem"],
        work,
    ) else {
        return;
    };
    assert!(!ok && out.contains("excluded subtree violation"), "{out}");
}
