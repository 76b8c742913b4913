//! Leaks: finding what must not leave a sandbox and masking what must not reach it.
//!
//! The exfiltration scan looks for placeholders and secrets in what a sandbox sends ([`detect`], through the
//! readings a receiver might decode, [`views`], and the forms a re-encoded secret takes, [`forms`]), whole
//! ([`scan_body`]) or as it streams ([`scan_stream`]). Echo masking replaces every secret in what comes back
//! ([`mask`], [`mask_forms`], [`mask_view`]): a response's envelope ([`envelope`]) and its body as it streams,
//! every coding undone first ([`masked_body`]); AWS key material and minted tokens in answers
//! ([`key_mask`], [`key_body`]). What is looked for is handed in; where the values come from is `secrets`.

pub mod detect;
pub(crate) mod envelope;
mod forms;
mod json_escape;
pub(crate) mod key_body;
pub(crate) mod key_mask;
pub mod mask;
mod mask_forms;
mod mask_view;
pub(crate) mod masked_body;
pub(crate) mod scan_body;
pub(crate) mod scan_stream;
pub(crate) mod views;

pub(crate) use key_body::{mask_aws_keys, mask_tokens};
