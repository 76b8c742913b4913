//! Credentials: secrets from vaults, short-lived tokens from issuers, applied at the proxy so that no
//! long-lived secret ever lives inside a sandbox.

pub(crate) mod apply;
mod aws;
mod aws_chunked;
mod aws_step;
pub(crate) use aws::key_body::{mask_aws_keys, mask_tokens};
pub(crate) mod body;
mod book;
pub(crate) mod codings;
pub(crate) mod decode;
mod decode_chain;
pub mod detect;
mod encode;
pub(crate) mod envelope;
mod forms;
pub mod mask;
mod mask_forms;
mod mask_view;
pub(crate) mod masked_body;
mod minting;
pub(crate) mod outgoing;
pub mod placeholder;
pub(crate) mod preflight;
pub(crate) mod probe;
pub(crate) mod scan_body;
pub(crate) mod scan_stream;
pub(crate) mod secrets;
pub(crate) mod source;
mod stored_cache;
pub(crate) mod supply;
pub(crate) mod vault;
pub(crate) mod views;
