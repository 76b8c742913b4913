//! The audit trail: exactly one record per request and per tunnel, also when it was refused or failed.
//!
//! [`record`] holds the record and the builder the request pipeline fills it through; [`sink`] where
//! records go; [`writer`] the thread that writes them out.

mod admin;
pub(crate) mod chain;
pub(crate) mod file;
mod health;
mod jail_event;
mod jail_file;
mod kind;
mod output;
mod pending;
mod recent;
mod record;
mod sink;
pub(crate) mod spool;
mod unwritten;
pub(crate) mod verify;
pub(crate) mod writer;

pub(crate) use admin::{AdminAction, Covered, admin};
pub use health::{AuditState, Health};
pub(crate) use jail_event::{JailOf, jail_event, jail_exec, jail_file_op};
pub(crate) use jail_file::{FileChange, jail_file};
pub(crate) use kind::{AccessRecord, Aggregated, ExecRecord, FileRecord, JailRecord};
pub(crate) use pending::auth_failures;
pub use pending::{Pending, Violation, violation};
pub use recent::Recent;
pub(crate) use recent::Seen;
pub use record::{ApprovalRecord, Kind, Record, Verdict};
pub use sink::{LineSink, Metered, Sink};
