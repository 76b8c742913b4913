//! Secrets never come back and never leave: masking of every echo, its encodings and envelope, the outbound scan.

mod encodings;
mod envelope;
mod mask;
mod scan;
