//! The preview listener's TLS: the configured certificate chain and key (PEM), HTTP/1.1 only (dev servers'
//! WebSockets upgrade an HTTP/1.1 connection).

/// An acceptor for the chain `cert_pem` and key `key_pem`.
pub(crate) fn acceptor(cert_pem: &[u8], key_pem: &[u8]) -> Result<tokio_rustls::TlsAcceptor, String> {
    crate::tls::listener::acceptor("previews.tls", cert_pem, key_pem, None, &[b"http/1.1"])
}
