//! gVisor's remote sink as the packaged runsc (20221219) speaks it, declared for `prost`: the header's layout, the
//! message types cordon reads, and the few messages with the field numbers of gVisor's `.proto` files (only the
//! fields cordon reads; the others are skipped as unknown).

use prost::Message;

/// The header's size (gVisor's `HeaderStructSize`).
pub(super) const HEADER: usize = 8;
/// The message types cordon reads (gVisor's `MessageType`).
pub(super) const SENTRY_CLONE: u16 = 2;
pub(super) const SENTRY_EXEC: u16 = 3;
pub(super) const SYSCALL_RAW: u16 = 6;
pub(super) const SYSCALL_OPEN: u16 = 7;
/// The wire version cordon speaks.
pub(super) const VERSION: u32 = 1;

/// gVisor's `Handshake`.
#[derive(Clone, PartialEq, Message)]
pub(super) struct GvHandshake {
    #[prost(uint32, tag = "1")]
    pub(super) version: u32,
}

/// gVisor's `Credentials` (the real uid only).
#[derive(Clone, PartialEq, Message)]
pub(super) struct GvCredentials {
    #[prost(uint32, tag = "1")]
    pub(super) real_uid: u32,
}

/// gVisor's `ContextData` (the fields asked for: thread group, credentials, folder).
#[derive(Clone, PartialEq, Message)]
pub(super) struct GvContext {
    #[prost(int32, tag = "4")]
    pub(super) thread_group_id: i32,
    #[prost(message, optional, tag = "7")]
    pub(super) credentials: Option<GvCredentials>,
    #[prost(string, tag = "8")]
    pub(super) cwd: String,
}

/// gVisor's `Exit`.
#[derive(Clone, PartialEq, Message)]
pub(super) struct GvExit {
    #[prost(int64, tag = "1")]
    pub(super) result: i64,
    #[prost(int64, tag = "2")]
    pub(super) errorno: i64,
}

/// gVisor's `ExecveInfo` (point `sentry/execve`).
#[derive(Clone, PartialEq, Message)]
pub(super) struct GvExecve {
    #[prost(message, optional, tag = "1")]
    pub(super) context_data: Option<GvContext>,
    #[prost(string, tag = "2")]
    pub(super) binary_path: String,
    #[prost(string, repeated, tag = "3")]
    pub(super) argv: Vec<String>,
}

/// gVisor's `CloneInfo` (point `sentry/clone`): the caller's context, and the thread it made.
#[derive(Clone, PartialEq, Message)]
pub(super) struct GvClone {
    #[prost(message, optional, tag = "1")]
    pub(super) context_data: Option<GvContext>,
    #[prost(int32, tag = "4")]
    pub(super) created_thread_group_id: i32,
}

/// gVisor's `Open` (points `syscall/open`, `openat`, `creat`).
#[derive(Clone, PartialEq, Message)]
pub(super) struct GvOpen {
    #[prost(message, optional, tag = "1")]
    pub(super) context_data: Option<GvContext>,
    #[prost(message, optional, tag = "2")]
    pub(super) exit: Option<GvExit>,
    #[prost(uint64, tag = "3")]
    pub(super) sysno: u64,
    #[prost(int64, tag = "4")]
    pub(super) fd: i64,
    #[prost(string, tag = "5")]
    pub(super) fd_path: String,
    #[prost(string, tag = "6")]
    pub(super) pathname: String,
    #[prost(uint32, tag = "7")]
    pub(super) flags: u32,
}

/// gVisor's `Syscall` (raw points `syscall/sysno/N`).
#[derive(Clone, PartialEq, Message)]
pub(super) struct GvSyscall {
    #[prost(message, optional, tag = "1")]
    pub(super) context_data: Option<GvContext>,
    #[prost(message, optional, tag = "2")]
    pub(super) exit: Option<GvExit>,
    #[prost(uint64, tag = "4")]
    pub(super) sysno: u64,
}
