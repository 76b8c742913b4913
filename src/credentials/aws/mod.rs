//! AWS Signature Version 4 at the proxy: the sandbox signs with placeholder keys; cordon reads that
//! signature ([`signature`]), checks it by signing the same request with the sandbox's placeholder keys, and
//! signs the request again with the real keys ([`sign`], both with the `aws-sigv4` crate), which come from
//! any secret source or from STS AssumeRole ([`sts`]).

pub(crate) mod key_body;
pub(crate) mod key_mask;
pub(crate) mod minting;
pub(crate) mod sign;
pub(crate) mod signature;
pub(crate) mod sts;

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
