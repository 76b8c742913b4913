//! Leaks: finding what must not leave a sandbox and masking what must not reach it.
//!
//! Two halves over two shared pieces. [`scan`], the exfiltration scan, looks for placeholders and secrets in
//! what a sandbox sends. [`mask`], echo masking, replaces every secret in what comes back. Both search for the
//! forms a re-encoded secret takes ([`forms`]) and read JSON string escapes by one grammar ([`json_escape`]).
//! What is looked for is handed in; where the values come from is `secrets`.

mod forms;
mod json_escape;
pub mod mask;
pub mod scan;

pub(crate) use mask::key_body::{mask_aws_keys, mask_tokens};
