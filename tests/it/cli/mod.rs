//! The `cordon` commands through the binary: check, explain (also live), run, token, reasons, ca, plain `cordon`,
//! and the completions and manual pages it prints of itself.

mod commands;
mod default;
mod docs;
mod explain_live;
