//! PEM files of certificates: the upstream roots cordon trusts beside the built-in ones.

use std::path::Path;

use rustls_pki_types::CertificateDer;
use rustls_pki_types::pem::PemObject;

/// Read every certificate in a PEM file.
pub fn read_pem_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let iter = CertificateDer::pem_file_iter(path).map_err(|e| format!("cannot read PEM certificates: {e}"))?;
    iter.collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("not a valid PEM certificate file: {e}"))
}
