//! Read a TLS ClientHello without terminating TLS (for `tls: tunnel` rules): parsed by rustls's own
//! `Acceptor`, and every byte read is kept so it can be forwarded to the upstream unchanged.

use rustls::server::Acceptor;
use tokio::io::{AsyncRead, AsyncReadExt};

/// A ClientHello larger than this is not one a real client sends.
const MAX_HELLO: usize = 64 * 1024;

/// Why no ClientHello could be read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum HelloError {
    /// The bytes are not a TLS ClientHello.
    #[error("the client did not start TLS: {0}")]
    NotTls(String),
    /// The client closed or failed before a whole ClientHello arrived.
    #[error("the connection ended before the TLS ClientHello: {0}")]
    Io(#[from] std::io::Error),
}

/// Read until rustls has a whole ClientHello; returns the bytes read and the SNI, if any.
pub(crate) async fn read_client_hello<IO: AsyncRead + Unpin>(
    io: &mut IO,
) -> Result<(Vec<u8>, Option<String>), HelloError> {
    let mut acceptor = Acceptor::default();
    let mut buf = Vec::with_capacity(2048);
    let mut fed = 0;
    let mut chunk = [0u8; 4096];
    loop {
        let n = io.read(&mut chunk).await?;
        if n == 0 {
            return Err(HelloError::Io(std::io::ErrorKind::UnexpectedEof.into()));
        }
        buf.extend_from_slice(&chunk[..n]);
        while fed < buf.len() {
            let mut rest = &buf[fed..];
            let took = acceptor
                .read_tls(&mut rest)
                .map_err(|e| HelloError::NotTls(e.to_string()))?;
            if took == 0 {
                break;
            }
            fed += took;
        }
        match acceptor.accept() {
            Ok(Some(accepted)) => {
                let sni = accepted.client_hello().server_name().map(|s| s.to_ascii_lowercase());
                return Ok((buf, sni));
            }
            Ok(None) if buf.len() < MAX_HELLO => {}
            Ok(None) => return Err(HelloError::NotTls("the ClientHello is too large".into())),
            Err((e, _alert)) => return Err(HelloError::NotTls(e.to_string())),
        }
    }
}
