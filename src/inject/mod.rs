//! Applying credentials to a request at the proxy, so that no long-lived secret ever lives inside a sandbox.
//!
//! [`apply`] holds the configured credentials as the request path uses them (which a request may carry, their
//! placeholders, the scanners and maskers built from their secrets); [`outgoing`] applies them to a request
//! and refuses what must not leave; [`aws`] checks a sandbox's SigV4 signature and signs again with the real
//! keys; [`minting`] and [`aws_minting`] recognise the calls that would mint further credentials (an OAuth2
//! token request read strictly by [`token_request`]). Values come
//! from `secrets`, the scans and masks from `leak`.

pub(crate) mod apply;
mod aws;
mod aws_minting;
mod minting;
pub(crate) mod outgoing;
pub(crate) mod token_request;
