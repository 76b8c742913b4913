//! The network edge: the only place that resolves names, knows IP ranges, or dials.

pub(crate) mod ipguard;
mod lookup;
mod resolve;

pub use ipguard::{Guard, GuardRefusal};
pub use lookup::ResolverKind;
pub use resolve::{DialError, Dialer, ResolvedAddrs};
