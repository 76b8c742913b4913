//! The repository agrees with itself: the module map of src/lib.rs and the paths the docs name, docs/openapi.yaml,
//! and BENCHMARKS.md with the load harness CI keeps running; and the rig every wait of a test goes through ends what
//! never ends.

mod benchmarks;
mod deadlines;
mod layers;
pub(crate) mod openapi;
mod phases;
mod type_names;
