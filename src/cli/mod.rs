//! The command line's longer commands: `run`, `jail`, and `sandbox` and `approvals` over the admin API.

pub mod approvals;
pub mod jail;
pub mod run;
pub mod sandbox;
