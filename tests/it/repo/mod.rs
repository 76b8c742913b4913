//! The repository agrees with itself: the module map of src/lib.rs and the paths the docs name, and docs/openapi.yaml.

mod layers;
pub(crate) mod openapi;
