//! The rigs the tests share: servers, clients and cordon processes to test against, and checks several
//! areas make. No test lives here; every area imports what it needs from `crate::rigs::NAME`.

pub(crate) mod audit;
pub(crate) mod aws;
pub(crate) mod bridge;
pub(crate) mod browser;
pub(crate) mod client;
pub(crate) mod console;
pub(crate) mod control;
pub(crate) mod curl;
pub(crate) mod encodings;
pub(crate) mod envelope;
pub(crate) mod gateway;
pub(crate) mod isolated;
pub(crate) mod issuers;
pub(crate) mod jail;
pub(crate) mod leaky;
pub(crate) mod minting;
pub(crate) mod netns;
pub(crate) mod pg;
pub(crate) mod ports;
pub(crate) mod previews;
pub(crate) mod process;
pub(crate) mod proxy;
pub(crate) mod qemu;
pub(crate) mod replicas;
pub(crate) mod secrets;
pub(crate) mod tls;
pub(crate) mod tool;
pub(crate) mod upstreams;
pub(crate) mod wait;
pub(crate) mod webhook;
pub(crate) mod websocket;
