//! Integration tests: real sockets on 127.x addresses, real clients; nothing leaves the machine.
//!
//! One folder per area (`proxy/`, `control/`, `jail/`, ...) whose `mod.rs` says what its tests cover, one file per
//! concern in it; a test's path is `AREA::FILE::NAME` (`cargo test --test it jail::` runs one area). The rigs the
//! areas share (servers, clients, cordon processes, namespaces) live apart in `rigs/`, which holds no test; the
//! end-to-end cases with the tools agents run are `tests/e2e/`.
#![expect(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "tests")]

mod access;
mod approval;
mod audit;
mod book;
mod cli;
mod config;
mod console;
mod control;
mod credentials;
#[path = "../e2e/mod.rs"]
mod e2e;
mod faults;
mod gateway;
mod jail;
mod oauth_refresh;
mod ops;
mod pg;
mod policy;
mod previews;
mod proxy;
mod repo;
mod rigs;
mod secrets;
mod vm;
mod websocket;
