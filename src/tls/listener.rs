//! The TLS of cordon's own listeners that people and platforms reach (the admin API, the console, previews):
//! a configured certificate chain and key (PEM), and optionally the CAs client certificates must chain to.

use std::sync::Arc;

use rustls::server::WebPkiClientVerifier;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

/// An acceptor for the chain `cert_pem` and key `key_pem` (`at` names the setting in errors), offering `alpn`.
/// With `client_ca_pem`, a client may present a certificate, which must chain to one of those CAs; one that
/// presents none is still accepted (what it may then do is the listener's to say).
pub(crate) fn acceptor(
    at: &str,
    cert_pem: &[u8],
    key_pem: &[u8],
    client_ca_pem: Option<&[u8]>,
    alpn: &[&[u8]],
) -> Result<tokio_rustls::TlsAcceptor, String> {
    let chain = CertificateDer::pem_slice_iter(cert_pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("{at}.cert: not a PEM certificate chain: {e}"))?;
    if chain.is_empty() {
        return Err(format!("{at}.cert: holds no certificate"));
    }
    let key = PrivateKeyDer::from_pem_slice(key_pem).map_err(|e| format!("{at}.key: not a PEM private key: {e}"))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?;
    let builder = match client_ca_pem {
        None => builder.with_no_client_auth(),
        Some(pem) => {
            let mut roots = rustls::RootCertStore::empty();
            for cert in CertificateDer::pem_slice_iter(pem) {
                let cert = cert.map_err(|e| format!("{at}.client_ca: not a PEM certificate: {e}"))?;
                roots
                    .add(cert)
                    .map_err(|e| format!("{at}.client_ca: not a CA certificate cordon can use: {e}"))?;
            }
            if roots.is_empty() {
                return Err(format!("{at}.client_ca: holds no certificate"));
            }
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                .allow_unauthenticated()
                .build()
                .map_err(|e| format!("{at}.client_ca: {e}"))?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    let mut config = builder
        .with_single_cert(chain, key)
        .map_err(|e| format!("{at}: the certificate and key do not go together: {e}"))?;
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Ok(tokio_rustls::TlsAcceptor::from(Arc::new(config)))
}
