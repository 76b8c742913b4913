//! Echo masking: every secret in what comes back to a sandbox is replaced with its placeholder ([`masker`]),
//! in the forms a server re-encodes it to ([`forms`]) and in the readings decoding makes of a response
//! ([`view`]): a response's envelope ([`envelope`]) and its body as it streams, every coding undone first
//! ([`body`]); AWS key material and minted tokens in answers ([`key_mask`], [`key_body`]).

pub(crate) mod body;
pub(crate) mod envelope;
mod forms;
pub(crate) mod key_body;
pub(crate) mod key_mask;
pub mod masker;
mod view;
