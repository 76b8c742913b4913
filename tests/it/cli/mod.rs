//! The `cordon` commands through the binary: check, explain (also live), run, token, reasons, ca, plain `cordon`,
//! the completions and manual pages it prints of itself, the examples of its help (run), colour only at a terminal,
//! and `--json`.

mod colour;
mod commands;
mod default;
mod docs;
pub(crate) mod examples;
mod examples_held;
mod examples_live;
mod examples_system;
pub(crate) mod explain_live;
mod explain_own;
mod explain_props;
mod json;
mod policy_examples;
mod suggest;
mod troubleshooting;
