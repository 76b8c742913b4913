//! Minting leaf certificates from a sandbox's CA, and the rustls server configuration that serves them.
//!
//! A leaf is made for exactly one name (a DNS name or an IP address) with a fresh ECDSA P-256 key of its own, is
//! valid from five minutes before it was minted (clock skew between cordon and the sandbox) for the validity the
//! caller asks for, but never past its CA's expiry, and may only authenticate a TLS server.

use std::sync::Arc;
use std::time::Duration;

use rcgen::{
    CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair, KeyUsagePurpose,
    PKCS_ECDSA_P256_SHA256, SanType,
};
use rustls::server::ServerSessionMemoryCache;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use time::OffsetDateTime;

use super::ca::{CaError, SandboxCa};
use super::crypto::{provider, random_serial};
pub use super::scope::LeafName;

/// How far before its minting a leaf's validity starts, so that a sandbox whose clock is behind accepts it.
pub(crate) const LEAF_BACKDATE: time::Duration = time::Duration::minutes(5);

/// TLS sessions remembered per leaf for resumption. Each leaf has its own store, because sharing one between
/// server identities would let a session made for one name be resumed for another; it is kept small because the
/// leaf cache may hold thousands of configurations.
const SESSIONS_PER_LEAF: usize = 32;

/// A leaf for `name`, signed by `ca`, with a fresh ECDSA P-256 key of its own: SAN = the DNS name or the IP
/// address, EKU serverAuth, key usage digitalSignature, CA:FALSE, valid from now − [`LEAF_BACKDATE`] to
/// now + `validity` (or the CA's expiry, if earlier). Returns the chain `[leaf, ca]` and the leaf key for rustls.
///
/// Refuses a name outside the CA's [`Scope`](super::ca::Scope) with [`CaError::OutOfScope`], since clients would
/// reject the leaf anyway; the error tells the operator to rotate the CA.
pub fn mint(
    ca: &SandboxCa,
    name: &LeafName,
    validity: Duration,
) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), CaError> {
    let name = name.normalized()?;
    if !ca.scope().permits(&name) {
        return Err(CaError::OutOfScope {
            sandbox: ca.sandbox().to_string(),
            name: name.to_string(),
        });
    }
    mint_unchecked(ca, &name, validity)
}

/// [`mint`] without the scope check, so tests can show that clients enforce the CA's name constraints.
fn mint_unchecked(
    ca: &SandboxCa,
    name: &LeafName,
    validity: Duration,
) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), CaError> {
    if validity.is_zero() {
        return Err(CaError::InvalidValidity("a leaf must be valid for some time"));
    }
    let generate_err = |what| move |source| CaError::Generate { what, source };
    // SECURITY: a fresh key per leaf, never the CA's key pair: the leaf key is handed to rustls and lives in
    // connection state, and a CA key there would let anything that reads it sign for the whole sandbox.
    let key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256).map_err(generate_err("a leaf key"))?;

    let mut params = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    params.subject_alt_names = match name {
        LeafName::Dns(host) => {
            dn.push(DnType::CommonName, host.as_str());
            let ia5 = host.as_str().try_into().map_err(|_| CaError::InvalidName {
                name: host.clone(),
                reason: "not an ASCII DNS name",
            })?;
            vec![SanType::DnsName(ia5)]
        }
        // No common name: OpenSSL checks a leaf's CN against DNS name constraints when it has no DNS SAN, and
        // an IP address there would fail them.
        LeafName::Ip(ip) => vec![SanType::IpAddress(*ip)],
    };
    params.distinguished_name = dn;
    params.is_ca = IsCa::ExplicitNoCa;
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    params.use_authority_key_identifier_extension = true;
    params.serial_number = Some(random_serial()?);

    let now = OffsetDateTime::now_utc();
    params.not_before = now - LEAF_BACKDATE;
    let not_after = time::Duration::try_from(validity)
        .ok()
        .and_then(|v| now.checked_add(v))
        .unwrap_or(ca.not_after());
    params.not_after = not_after.min(ca.not_after());

    let cert = params
        .signed_by(&key, ca.issuer())
        .map_err(generate_err("a leaf certificate"))?;
    let key_der = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
    Ok((vec![cert.der().clone(), ca.cert_der().clone()], key_der))
}

/// A rustls `ServerConfig` serving `chain` with `key`: TLS 1.3 and 1.2, ALPN `h2` then `http/1.1`, no client
/// authentication, the ring provider (not the process-wide default, so nothing depends on one being installed).
/// Fails if the key does not match the chain's first certificate.
pub fn server_config(
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
) -> Result<rustls::ServerConfig, CaError> {
    let mut config = rustls::ServerConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])?
        .with_no_client_auth()
        .with_single_cert(chain, key)?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    config.session_storage = ServerSessionMemoryCache::new(SESSIONS_PER_LEAF);
    Ok(config)
}

/// The leaf minting shared by [`mint`] and the cache: mint and wrap in a server configuration.
pub(super) fn mint_config(
    ca: &SandboxCa,
    name: &LeafName,
    validity: Duration,
) -> Result<Arc<rustls::ServerConfig>, CaError> {
    let (chain, key) = mint(ca, name, validity)?;
    server_config(chain, key).map(Arc::new)
}

#[cfg(test)]
#[path = "leaf_tests.rs"]
pub(super) mod tests;
