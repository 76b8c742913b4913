//! The configuration file: errors in its words, `check` refusing what `run` would, stale sandbox CAs, the watcher.

mod ca_hints;
mod preflight;
mod types;
mod watch;
