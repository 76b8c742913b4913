//! The command line's longer commands: `run`, and `sandbox` over the admin API.

pub mod run;
pub mod sandbox;
