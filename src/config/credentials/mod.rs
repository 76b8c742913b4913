//! Where secrets come from and where they may go, by concern: `vault:` (the file vault, OpenBao), a reference to
//! a stored secret wherever the file names one (`secret.rs`), each entry of `credentials:` (`credential.rs`)
//! with its `source:` (`source.rs`, AWS keys in `aws.rs`), `bind:` (`binding.rs`), `inject:` (`inject.rs`) and
//! `allow_minting:` (`minting.rs`, the table of minting calls), and a policy's `credential_scope:` (`scope.rs`).
//! Each file holds what is written (`Raw*`), what it means once validated, and the validation between them.

mod aws;
mod binding;
mod credential;
mod inject;
pub(crate) mod minting;
mod scope;
mod secret;
mod source;
mod vault;

pub(crate) use credential::CredentialSpec;
pub(super) use credential::{RawCredential, check_policy_credentials, credentials, refresh_needs_store};
pub(crate) use inject::Inject;
pub(super) use scope::{RawScope, scopes};
pub(crate) use secret::SecretRef;
pub(super) use secret::{RawSecretRef, secret_ref};
pub(crate) use source::{OAuth2RefreshSpec, SecretSource};
pub(crate) use vault::{FileVaultSpec, KeySpec, OpenBaoAuthSpec, OpenBaoSpec};
pub(super) use vault::{RawVault, openbao, vault};
