//! The crypto every TLS module uses: one provider, and randomness from it.

use std::sync::{Arc, LazyLock};

use rcgen::SerialNumber;
use rustls::crypto::CryptoProvider;

use crate::tls::ca::error::CaError;

/// The crypto provider for everything in this module tree, built here rather than taken from rustls' process-wide
/// default so that nothing depends on what another part of the process installed.
static PROVIDER: LazyLock<Arc<CryptoProvider>> = LazyLock::new(|| Arc::new(rustls::crypto::ring::default_provider()));

/// The ring crypto provider shared by the TLS modules.
pub(super) fn provider() -> Arc<CryptoProvider> {
    Arc::clone(&PROVIDER)
}

/// `N` bytes from the provider's CSPRNG.
pub(super) fn random_bytes<const N: usize>() -> Result<[u8; N], CaError> {
    let mut buf = [0u8; N];
    PROVIDER.secure_random.fill(&mut buf).map_err(|_| CaError::Random)?;
    Ok(buf)
}

/// A random, positive 128-bit certificate serial number (RFC 5280 allows 20 octets; CA/B forum wants 64 random
/// bits).
pub(super) fn random_serial() -> Result<SerialNumber, CaError> {
    let mut bytes = random_bytes::<16>()?;
    // Clear the sign bit (serials are positive) and set the next one, so the DER INTEGER is exactly 16 octets.
    bytes[0] = (bytes[0] & 0x7f) | 0x40;
    Ok(SerialNumber::from_slice(&bytes))
}
