//! The network edge: the only place that resolves names, knows IP ranges, or dials.

pub(crate) mod ipguard;
mod resolve;

pub use ipguard::{Guard, Refusal};
pub use resolve::{DialError, Dialer, Resolution};
