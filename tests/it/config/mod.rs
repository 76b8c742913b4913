//! The configuration file: errors in its words, `check` refusing what `run` would, its warnings about the classic
//! mistakes, stale sandbox CAs, the watcher, its JSON Schema held to the examples, the docs and `check`, and the
//! configurations the packages install.

mod ca_hints;
mod jail_only;
mod lint;
mod packaged;
mod paths;
mod preflight;
mod schema;
mod schema_keys;
mod types;
mod watch;
