//! The audit log as evidence: the signed chain, what a kill or a full disk loses, OTLP export, rotation, truncation.

mod chain;
mod durability;
mod export;
mod rotation;
mod truncation;
