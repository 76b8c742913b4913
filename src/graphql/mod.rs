//! GraphQL, as cordon judges it on an endpoint whose rule has a `graphql:` section (GraphQL over HTTP: a GET's
//! query string, a POST's JSON, document or form; a batch of requests as a JSON array).
//!
//! - [`request`] reads the GraphQL requests of an HTTP request strictly;
//! - [`document`] parses each document (`apollo-parser`) and describes its operations by type, name and root
//!   fields;
//! - [`persisted`] keeps the documents of persisted queries seen with their hash;
//! - [`judge`] decides them against the rule (`crate::policy::graphql`): every operation, worst wins; persisted
//!   queries by the document seen with their hash.
//!
//! The pipeline's GraphQL step (`crate::proxy`) reads the body, hands it here, and acts on the verdict.

pub(crate) mod document;
pub(crate) mod judge;
pub(crate) mod persisted;
pub(crate) mod request;
