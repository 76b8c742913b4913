//! Per-sandbox certificate authorities for TLS interception: each sandbox's CA ([`SandboxCa`], made by
//! [`sandbox_ca`]) kept in a folder ([`CaStore`], its files [`files`]) or shared through the database between
//! replicas ([`SharedCas`]), every sandbox's CA by name and scope ([`SandboxCas`], [`scope_for`]), and what goes
//! wrong with them ([`CaError`]).

pub(crate) mod cas;
pub(crate) mod error;
pub(crate) mod files;
pub(crate) mod sandbox_ca;
pub(crate) mod shared;
pub(crate) mod store;

pub use crate::tls::scope::Scope;
pub(crate) use cas::SandboxCas;
pub use cas::scope_for;
pub use error::CaError;
pub use sandbox_ca::SandboxCa;
pub(crate) use shared::SharedCas;
pub use store::CaStore;
pub(crate) use store::RotateCommand;
