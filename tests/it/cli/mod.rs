//! The `cordon` commands through the binary: check, explain (also live), run, token, reasons, ca, plain `cordon`.

mod commands;
mod default;
mod explain_live;
