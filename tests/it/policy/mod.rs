//! `cordon policy diff` and `cordon policy contains` through the binary, on the docs' example
//! (config/examples/boundaries.yaml): each counterexample decided the same way by `cordon explain`, every kind of
//! finding (a path under a host already reached, an MCP tool, a GraphQL operation, a credential reaching a new
//! host, a tunnel where there was interception), a policy past its own boundary refused by `check`, and bad input
//! named with where it is.

mod proofs;
