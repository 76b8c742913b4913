//! AWS Signature Version 4, the mechanism: reading the signature a request carries ([`signature`]) and signing
//! a request ([`sign`], with the `aws-sigv4` crate). The request path checks a sandbox's signature by signing
//! the same request with its placeholder keys and signs again with the real keys (`inject::aws`); the STS
//! issuer signs its own AssumeRole calls (`secrets::issuer::sts`).

pub(crate) mod sign;
pub(crate) mod signature;

use secrecy::SecretString;

/// A set of AWS keys.
#[derive(Clone)]
pub(crate) struct AwsKeys {
    /// The access key id.
    pub(crate) id: String,
    /// The secret access key.
    pub(crate) secret: SecretString,
    /// The session token of temporary keys.
    pub(crate) token: Option<SecretString>,
}

impl std::fmt::Debug for AwsKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AwsKeys")
            .field("id", &self.id)
            .field("secret", &"[redacted]")
            .field("token", &self.token.as_ref().map(|_| "[redacted]"))
            .finish()
    }
}
