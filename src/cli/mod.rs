//! The command line's longer commands: `run`, and `sandbox` and `approvals` over the admin API.

pub mod approvals;
pub mod run;
pub mod sandbox;
