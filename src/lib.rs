//! cordon: a default-deny egress proxy for AI-agent sandboxes.
//!
//! The path of one request, and the module that owns each step:
//!
//! ```text
//! server  accept, connection cap, drain on shutdown
//!  conn   hyper HTTP/1.1 behind the byte-level framing guard (framing)
//!   forward (absolute-form http://)
//!   tunnel (CONNECT): decide, guard, 200; then mitm (terminate TLS with the sandbox's CA: tls::ca,
//!          tls::leaf, tls::cache; serve h1/h2 inside) or splice (tls: tunnel, SNI checked: tls::sni)
//!    exchange   identify (identity) -> parse target (target) -> decide (policy)
//!               -> resolve, guard every address, dial the checked one (net)
//!    forward    every request (plain or inside TLS) goes upstream through the sandbox's verified,
//!               pooled client (tls::upstream)
//!    headers    hop-by-hop and proxy headers never cross
//!    audit      exactly one record per request or tunnel, also on every error path (error: statuses)
//! ```
//!
//! Imports run one way: `server -> conn -> tunnel -> mitm -> forward -> exchange -> {policy, net, identity,
//! tls} -> {target, audit, error}`. Configuration (`config`) is the only module that knows YAML.

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
mod headers;
pub mod identity;
pub mod jail;
pub mod limits;
mod logging;
mod metrics;
pub mod net;
mod pipeline;
pub mod policy;
pub mod reload;
mod sandbox_env;
mod secret_file;
pub mod server;
mod session;
pub mod state;
pub mod target;
pub mod tls;
mod upstream;
