//! Integration tests: real sockets on 127.x addresses, real clients; nothing leaves the machine.
#![expect(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "tests")]

mod approvals;
mod approvals_cli;
mod approvals_held;
mod auth;
mod cli;
mod connect;
mod containers;
mod control;
mod control_procs;
mod control_reload;
mod control_rig;
mod control_sources;
mod credentials;
mod dns;
#[path = "../e2e/mod.rs"]
mod e2e;
mod faults;
mod faults_process;
mod framing;
mod gateway;
mod gateway_bridge;
mod gateway_runtime;
mod gateway_tproxy;
mod guard;
mod hardening;
mod hardening_sources;
mod http;
mod intercept;
mod jail;
mod jail_confine;
mod layers;
mod lifecycle;
mod limits;
mod netns;
mod openapi;
mod pg_replicas;
mod pg_rig;
mod pg_smoke;
mod ports;
mod rig;
mod secrets_mask;
mod secrets_rig;
mod secrets_scan;
mod sources;
mod tls_rig;
