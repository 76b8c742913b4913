//! Why a sign-in through the provider was refused.

/// Why a sign-in was refused. The message names what failed, never a token or a secret.
#[derive(Debug, Clone, thiserror::Error)]
pub(crate) enum SignInError {
    /// The provider has not answered its discovery document yet.
    #[error("the identity provider {0} has not answered yet (cordon keeps asking); sign in with a token meanwhile")]
    NotReady(String),
    /// The provider said no, or cordon could not reach it.
    #[error("the identity provider: {0}")]
    Provider(String),
    /// The ID token is not one cordon accepts.
    #[error("the ID token was refused: {0}")]
    IdToken(String),
    /// The person has no role in cordon.
    #[error("{0} holds no cordon role: the claim {1:?} gives none (ask for a group that console.oidc.roles maps)")]
    NoRole(String, String),
    /// Something cordon itself could not do.
    #[error("{0}")]
    Internal(String),
}
