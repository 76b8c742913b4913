//! The DNS responder's wire side (hickory): queries in, answers out. What to answer is the pipeline's
//! business, asked through [`Answerer`] by `entry::dns`.

pub(crate) mod server;

pub(crate) use server::{Answerer, DnsAnswer, Query};
