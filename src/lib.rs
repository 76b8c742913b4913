//! cordon: a default-deny egress proxy for AI-agent sandboxes.
//!
//! # The path of a request
//!
//! Every kind of traffic enters through an entry (`entry`), which reads it, translates it into one
//! `pipeline::Input` and acts on one `pipeline::Outcome`. The `pipeline` runs the steps, in one order, for
//! every kind: identify, admit (rates and budget), target, hygiene, decide, then open a tunnel, forward a
//! request or answer a DNS query. The whole path of each kind can be read top to bottom in
//! `src/pipeline/mod.rs`; `cordon explain` is a dry run of the same steps.
//!
//! # The map
//!
//! Modules by rank, bottom to top. A module imports only modules of a lower rank (`tests/it/layers.rs`
//! holds the tree to it, and to no file over 450 lines).
//!
//! | rank | modules | what they do |
//! |---:|---|---|
//! | 12 | `fuzzing` | with the `fuzzing` feature only: thin entry points into the parsers for the cargo-fuzz targets under `fuzz/` |
//! | 11 | `cli` | the command line: every `cordon` command, and the admin API's client |
//! | 10 | `jail` | `cordon jail`: a command in a network namespace whose only way out is cordon |
//! | 9 | `server` | the listeners: accept, cap open connections, drain on shutdown |
//! | 8 | `entry`, `admin` | the entries (explicit HTTP and CONNECT, interception, tunnels, transparent, DNS, explain); the admin API |
//! | 7 | `pipeline`, `reload`, `preflight` | the one request pipeline, owner of the steps and of the audit record; reloading the configuration; what a start would refuse, the one list `check` prints and `run` refuses on |
//! | 6 | `state`, `sandbox_env`, `otlp` | the configuration generation in force and what outlives reloads; the environment a sandbox is started with; shipping audit records as OpenTelemetry logs |
//! | 5 | `session`, `credentials`, `approval`, `logging`, `preview` | what a sandbox has open and the only caller of limits; secrets, tokens and placeholders; held requests; log and audit output; preview links, sessions and their names |
//! | 4 | `audit`, `config`, `headers`, `upstream` | the audit record and its sinks; the validated configuration; header hygiene; sending upstream (pooled, verified) |
//! | 3 | `control`, `error`, `tls` | run-time sandboxes and their store; every failure and its status; CAs, leaves, SNI |
//! | 2 | `identity`, `policy`, `net`, `body`, `pg`, `metrics` | who is talking; the pure decision; resolution, the address guard, dialling; body types; the PostgreSQL store's connection, schema, notifications and replica registry; metrics (with the build they describe) |
//! | 1 | `target`, `limits`, `addr`, `framing`, `dns`, `file_lock`, `secret_file`, `supervise`, `rfc3339`, `version`, `systemd` | the one destination parser; rate, cap and budget mechanisms; address newtypes; the byte-level framing guard; the DNS wire; file locks and secret files; background tasks started again when they panic; RFC 3339 timestamps; what the build is (`--version`, `cordon_build_info`); telling systemd ready, reloading, stopping |
//! | 0 | `reason` | every reason code, its answer and its meaning (the README's table is made from it) |
//!
//! The invariants every module keeps are in `docs/architecture.md`.

#![forbid(unsafe_code)]

mod addr;
pub mod admin;
pub mod approval;
pub mod audit;
mod body;
pub mod cli;
pub mod config;
pub mod control;
pub mod credentials;
mod dns;
pub mod entry;
mod error;
mod file_lock;
mod framing;
/// Entry points into the parsers for the cargo-fuzz targets under `fuzz/` (see `docs/fuzzing.md`).
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
mod headers;
pub mod identity;
pub mod jail;
pub mod limits;
mod logging;
mod metrics;
pub mod net;
mod otlp;
mod pg;
mod pipeline;
pub mod policy;
mod preflight;
mod preview;
mod reason;
pub mod reload;
mod rfc3339;
mod sandbox_env;
mod secret_file;
pub mod server;
mod session;
pub mod state;
mod supervise;
mod systemd;
pub mod target;
pub mod tls;
mod upstream;
mod version;
