//! The exfiltration scan: placeholders and secrets in what a sandbox sends ([`detect`]), through the readings a
//! receiver might decode ([`views`]) and the forms a re-encoded secret takes (`leak::forms`), whole
//! ([`body`]) or as it streams ([`stream`]).

pub(crate) mod body;
pub mod detect;
pub(crate) mod stream;
pub(crate) mod views;
