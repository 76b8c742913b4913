//! The previews of this process, opened at start: the signing key and the listener's certificate read from
//! their secret sources (a random key when none is configured).

use std::sync::Arc;

use secrecy::ExposeSecret;

use crate::generation::Generation;
use crate::preview::Previews;

/// The previews `generation`'s configuration asks for, if any.
pub(super) async fn open(generation: &Generation) -> Result<Option<Arc<Previews>>, String> {
    let config = &generation.config;
    let (Some(previews), Some(listen)) = (&config.previews, config.listen.preview) else {
        return Ok(None);
    };
    let secrets = generation.credentials.secrets();
    let key = match &previews.key {
        Some(r) => {
            let key = secrets.stored(r).await.map_err(|e| format!("previews.key: {e}"))?;
            if key.expose_secret().len() < 32 {
                return Err("previews.key: is shorter than 32 bytes".into());
            }
            key.expose_secret().as_bytes().to_vec()
        }
        // 32 random bytes, as hex.
        None => crate::secret_file::random_hex(32)?.into_bytes(),
    };
    let tls = match &previews.tls {
        None => None,
        Some((cert, key)) => {
            let cert = secrets
                .stored(cert)
                .await
                .map_err(|e| format!("previews.tls.cert: {e}"))?;
            let key = secrets
                .stored(key)
                .await
                .map_err(|e| format!("previews.tls.key: {e}"))?;
            Some(crate::preview::tls::acceptor(
                cert.expose_secret().as_bytes(),
                key.expose_secret().as_bytes(),
            )?)
        }
    };
    Ok(Some(Arc::new(Previews::new(
        previews.clone(),
        &key,
        tls,
        listen.port(),
    ))))
}
