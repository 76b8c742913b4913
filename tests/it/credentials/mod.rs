//! Credentials: injection, sources, budgets, ids that are not identities, tokens the sandbox must not mint.

pub(crate) mod aws_minting;
mod aws_sigv4;
mod budgets;
mod incarnations;
mod inject;
mod minting_table;
mod sources;
mod token_minting;
