//! The entries: each reads one kind of traffic, translates what it read into a [`crate::proxy::Input`],
//! and acts on the [`crate::proxy::Outcome`]. None of them decides anything itself.
//!
//! - [`http`]: a client connection on the explicit proxy port (absolute-form HTTP and CONNECT), or plain
//!   HTTP that reached the transparent listener;
//! - [`connect`]: a CONNECT, answered 200 only once the pipeline opened the tunnel;
//! - [`tunnel`]: an opened tunnel run to its end: bytes passed through (`tls: tunnel`, SNI checked) or
//!   handed to [`intercept`];
//! - [`intercept`]: TLS terminated with the sandbox's CA, and each request inside sent through the pipeline;
//!   after a 101, the WebSocket relayed frame by frame (`websocket`, on `websocket_frames` and
//!   `websocket_message`);
//! - [`transparent`]: connections the kernel redirected (REDIRECT, TPROXY), known by their source address;
//! - [`dns`]: the DNS responder's questions;
//! - [`explain`]: `cordon explain`, a dry run of the pipeline.

pub(crate) mod connect;
pub mod dns;
pub(crate) mod explain;
pub(crate) mod http;
pub(crate) mod preview;
mod replay;
pub(crate) mod socket;
pub(crate) mod transparent;
