//! cordon: a default-deny egress proxy for AI-agent sandboxes.
//!
//! # The path of a request
//!
//! The data plane is one module, `proxy`. Every kind of traffic enters through one of its entries
//! (`proxy::entry`), which reads it, translates it into one `proxy::Input` and acts on one `proxy::Outcome`.
//! `proxy` runs the phases, in one order, for every kind: identify, admit (rates and budget), target, hygiene,
//! decide, then open a tunnel (`proxy::tunnel`: its whole life), forward a request or answer a DNS query. The
//! whole path of each kind can be read top to bottom in `src/proxy/mod.rs`; `cordon explain` is a dry run of the
//! same phases.
//!
//! # The map
//!
//! Modules by rank, bottom to top. A module imports only modules of a lower rank (`tests/it/repo/layers.rs`
//! holds the tree to it, and to no file over 450 lines).
//!
//! | rank | modules | what they do |
//! |---:|---|---|
//! | 16 | `fuzzing` | with the `fuzzing` feature only: thin entry points into the parsers for the cargo-fuzz targets under `fuzz/` |
//! | 15 | `cli` | the command line: every `cordon` command, and the admin API's client |
//! | 14 | `jail` | `cordon jail`: a command whose only way out is cordon, bounded (CPU, memory, processes, disk, wall-clock and idle time) and recorded (every program it starts and file it writes) |
//! | 13 | `admin` | the admin API and the console |
//! | 12 | `proxy`, `reload`, `preflight` | the data plane: the one request pipeline, owner of the phases and of the audit record, its entries (explicit HTTP and CONNECT, transparent, DNS, preview, explain), a tunnel's whole life (interception, splice, WebSocket relay), the listeners and header hygiene; reloading the configuration; what a start would refuse, the one list `check` prints and `run` refuses on |
//! | 11 | `state` | what outlives reloads: the generation in force, CAs and leaves, sessions, limits; the one owner that acts (closes, revokes, re-decides) on what the replica and the watch learn |
//! | 10 | `replica`, `violation` | this replica's part in a PostgreSQL store shared with others (opening it, applying announcements, the heartbeat, budget flushes); `on_violation`'s watch over refusals and its announcements |
//! | 9 | `generation` | one configuration in force and everything built from it; the one way to a sandbox's policy under it |
//! | 8 | `inject`, `sandbox_env`, `otlp` | applying credentials to a request (and refusing what must not leave); the environment a sandbox is started with; shipping audit records as OpenTelemetry logs |
//! | 7 | `secrets`, `session`, `approval`, `logging`, `preview` | where credential values come from (vaults, token issuers, caches); what a sandbox has open (leases) and the only caller of limits; held requests; log and audit output; preview links, sessions and their names |
//! | 6 | `webhook`, `oidc` | delivering an event (approvals, violations, spent budgets) to the operator's webhook, signed and retried; signing people in through OpenID Connect (code flow with PKCE, the ID token verified) |
//! | 5 | `audit`, `config`, `upstream` | the audit record and its sinks; the validated configuration; sending upstream (pooled, verified) |
//! | 4 | `control`, `error`, `tls`, `leak` | run-time sandboxes and their store; every failure and its status; CAs, leaves, SNI; the exfiltration scan and echo masking |
//! | 3 | `mcp`, `graphql`, `llm` | model APIs: the tokens their answers report, their price and the budgets they count against; the Model Context Protocol: its messages read strictly and judged against a rule's `mcp:` section, its tool lists filtered and pinned; GraphQL: its requests read strictly, its documents parsed and each operation judged by its root fields against a rule's `graphql:` section |
//! | 2 | `identity`, `policy`, `net`, `body`, `pg`, `metrics`, `placeholder` | who is talking; the pure decision; resolution, the address guard, dialling; bodies and their content codings; the PostgreSQL store's connection, schema, notifications and replica registry; metrics (with the build they describe); the values a sandbox holds in place of secrets |
//! | 1 | `target`, `principal`, `limits`, `addr`, `framing`, `dns`, `file_lock`, `secret_file`, `supervise`, `rfc3339`, `version`, `systemd`, `sigv4` | the one destination parser; admin principals and their roles; rate, cap and budget mechanisms; address newtypes; the byte-level framing guard; the DNS wire; file locks and secret files; background tasks started again when they panic; RFC 3339 timestamps; what the build is (`--version`, `cordon_build_info`); telling systemd ready, reloading, stopping; AWS Signature Version 4 |
//! | 0 | `reason`, `locks`, `names` | every reason code, its answer and its meaning (the Troubleshooting page, docs/src/troubleshooting.md, is made from it); locks a panic does not wedge; sandbox ids (and the rule they keep) and credential names as types |
//!
//! The invariants every module keeps are in `docs/src/architecture.md`.

#![forbid(unsafe_code)]

// cordon is built and tested on Linux only (CI builds nothing else): the jail, transparent mode, splice(2) and
// the gateway use Linux interfaces. Say so at once rather than with a page of unresolved imports.
#[cfg(not(target_os = "linux"))]
compile_error!("cordon builds on Linux only: the jail, transparent interception and the gateway use Linux interfaces");

mod addr;
pub mod admin;
pub mod approval;
pub mod audit;
mod body;
pub mod cli;
pub mod config;
pub mod control;
mod dns;
mod error;
mod file_lock;
mod framing;
/// Entry points into the parsers for the cargo-fuzz targets under `fuzz/` (see `docs/src/fuzzing.md`).
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
pub mod generation;
mod graphql;
pub mod identity;
mod inject;
pub mod jail;
pub mod leak;
pub mod limits;
mod llm;
mod locks;
mod logging;
mod mcp;
mod metrics;
pub mod names;
pub mod net;
mod oidc;
mod otlp;
mod pg;
pub mod placeholder;
pub mod policy;
mod preflight;
mod preview;
pub mod principal;
pub mod proxy;
mod reason;
pub mod reload;
mod replica;
mod rfc3339;
mod sandbox_env;
mod secret_file;
mod secrets;
mod session;
mod sigv4;
pub mod state;
mod supervise;
mod systemd;
pub mod target;
pub mod tls;
mod upstream;
mod version;
mod violation;
pub mod webhook;
