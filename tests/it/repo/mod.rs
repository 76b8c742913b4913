//! The repository agrees with itself: the module map of src/lib.rs and the paths the docs name, docs/openapi.yaml,
//! and BENCHMARKS.md with the load harness CI keeps running.

mod benchmarks;
mod layers;
pub(crate) mod openapi;
