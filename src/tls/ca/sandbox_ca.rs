//! A sandbox's CA as cordon holds it: made (a fresh key and a certificate limited to a [`Scope`]) or read back
//! from its PEM files, checked, and ready to sign leaves. Where the files live is [`super::ca::CaStore`]'s.

use std::fmt;
use std::path::Path;

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose,
    PKCS_ECDSA_P256_SHA256,
};
use rustls_pki_types::CertificateDer;
use rustls_pki_types::pem::PemObject;
use time::OffsetDateTime;

use crate::names::SandboxId;
use crate::tls::ca::error::CaError;
use crate::tls::crypto::random_serial;
use crate::tls::scope::{Scope, name_constraints, scope_from_cert};
/// How long a CA certificate is valid, in days (ten years and the leap days in them).
pub(crate) const CA_VALIDITY_DAYS: i64 = 3652;
/// How far before its creation a CA certificate's validity starts, so that a sandbox whose clock is behind
/// cordon's still accepts it.
const CA_BACKDATE: time::Duration = time::Duration::hours(1);

/// A sandbox's CA, ready to sign leaves.
pub struct SandboxCa {
    sandbox: SandboxId,
    cert_pem: String,
    cert_der: CertificateDer<'static>,
    scope: Scope,
    not_after: OffsetDateTime,
    key_id: Vec<u8>,
    issuer: Issuer<'static, KeyPair>,
}

impl fmt::Debug for SandboxCa {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SandboxCa")
            .field("sandbox", &self.sandbox)
            .field("scope", &self.scope)
            .field("not_after", &self.not_after)
            // SECURITY: the CA key must never reach logs; only public parts are shown.
            .field("key", &"[elided]")
            .finish_non_exhaustive()
    }
}

impl SandboxCa {
    /// The sandbox this CA belongs to.
    pub(crate) fn sandbox(&self) -> &SandboxId {
        &self.sandbox
    }

    /// The CA certificate in PEM, as on disk: what `cordon ca export` prints for the sandbox to trust.
    pub fn cert_pem(&self) -> &str {
        &self.cert_pem
    }

    /// The CA certificate in DER, the second element of every leaf chain.
    pub(crate) fn cert_der(&self) -> &CertificateDer<'static> {
        &self.cert_der
    }

    /// What the CA may sign for, as read back from the certificate (normalized, see [`Scope::normalized`]), so
    /// the caller can compare it with what the policy needs now.
    pub(crate) fn scope(&self) -> &Scope {
        &self.scope
    }

    /// When the CA certificate expires.
    pub(crate) fn not_after(&self) -> OffsetDateTime {
        self.not_after
    }

    /// The CA's key identifier (truncated SHA-256 of its public key): tells two CAs of one sandbox apart.
    pub(crate) fn key_id(&self) -> &[u8] {
        &self.key_id
    }

    /// What rcgen needs to sign a leaf.
    pub(crate) fn issuer(&self) -> &Issuer<'static, KeyPair> {
        &self.issuer
    }

    /// Builds a CA from its PEM files' contents, checking everything [`CaStore::load`] promises; the paths are
    /// for error messages.
    pub(super) fn from_pem(
        sandbox: &SandboxId,
        cert_pem: String,
        key_pem: &str,
        cert_path: &Path,
        key_path: &Path,
    ) -> Result<SandboxCa, CaError> {
        let bad_cert = |reason: String| CaError::BadCert {
            path: cert_path.to_path_buf(),
            reason,
        };
        let cert_der = CertificateDer::from_pem_slice(cert_pem.as_bytes())
            .map_err(|e| bad_cert(format!("no PEM certificate in it ({e})")))?;
        let key = KeyPair::from_pem(key_pem).map_err(|e| CaError::BadKey {
            path: key_path.to_path_buf(),
            reason: format!("not a PKCS#8 PEM private key ({e})"),
        })?;
        let (scope, not_after) = {
            let (_, x509) = x509_parser::parse_x509_certificate(&cert_der)
                .map_err(|e| bad_cert(format!("cannot parse it ({e})")))?;
            if x509.public_key().subject_public_key.data.as_ref() != rcgen::PublicKeyData::der_bytes(&key) {
                return Err(CaError::KeyMismatch {
                    cert: cert_path.to_path_buf(),
                    key: key_path.to_path_buf(),
                });
            }
            match x509.basic_constraints() {
                Ok(Some(bc)) if bc.value.ca => {}
                Ok(_) => {
                    return Err(bad_cert(
                        "it is not a CA certificate (no basicConstraints CA:TRUE)".into(),
                    ));
                }
                Err(e) => return Err(bad_cert(format!("bad basicConstraints ({e})"))),
            }
            match x509.key_usage() {
                Ok(Some(ku)) if !ku.value.key_cert_sign() => {
                    return Err(bad_cert("its key usage does not allow signing certificates".into()));
                }
                Ok(_) => {}
                Err(e) => return Err(bad_cert(format!("bad keyUsage ({e})"))),
            }
            let not_after = x509.validity().not_after.to_datetime();
            if not_after <= OffsetDateTime::now_utc() {
                return Err(CaError::Expired {
                    path: cert_path.to_path_buf(),
                    not_after,
                });
            }
            (scope_from_cert(&x509, cert_path)?, not_after)
        };
        let key_id = CertificateParams::default().key_identifier(&key);
        let issuer =
            Issuer::from_ca_cert_der(&cert_der, key).map_err(|e| bad_cert(format!("cannot sign with it ({e})")))?;
        Ok(SandboxCa {
            sandbox: sandbox.clone(),
            cert_pem,
            cert_der,
            scope,
            not_after,
            key_id,
            issuer,
        })
    }
}

/// Generates a CA certificate and key for `sandbox` limited to `scope` (normalized); returns their PEM.
pub(super) fn generate(sandbox: &SandboxId, scope: &Scope) -> Result<(String, String), CaError> {
    let generate_err = |what| move |source| CaError::Generate { what, source };
    let key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256).map_err(generate_err("a CA key"))?;
    let mut params = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    // Organization before common name: the order X.520 and the CA/Browser Forum's baseline requirements give
    // (pkilint flags the reverse, .ci/suites/pki_lint.py).
    dn.push(DnType::OrganizationName, "cordon");
    dn.push(DnType::CommonName, format!("cordon sandbox {sandbox} CA"));
    params.distinguished_name = dn;
    // Path length 0: this CA signs leaves only, never another CA.
    params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    params.name_constraints = name_constraints(scope);
    let now = OffsetDateTime::now_utc();
    params.not_before = now - CA_BACKDATE;
    params.not_after = now + time::Duration::days(CA_VALIDITY_DAYS);
    params.serial_number = Some(random_serial()?);
    let cert = params.self_signed(&key).map_err(generate_err("a CA certificate"))?;
    Ok((cert.pem(), key.serialize_pem()))
}
