//! The `cordon` binary: the command line lives in the library ([`cordon::cli`]).

use std::process::ExitCode;

/// mimalloc rather than glibc's malloc: hyper takes a fresh 8 KiB read buffer for most messages (the last one is
/// still shared with the parsed head), and glibc serves those from its slow bins, consolidating as it goes.
/// HTTP forward: 13% less CPU per request; intercept 7%; at 60 KiB instead of 49 KiB per idle intercepted
/// connection (BENCHMARKS.md).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    cordon::cli::main(give_back)
}

/// Hand back to the system the pages this thread's heap no longer uses. mimalloc returns the pages of a freed
/// large block (a WebSocket message, a decoded body) only when the thread owning them next allocates or
/// frees, so a worker that goes idle after a burst would keep them: six WebSockets relaying 12 MiB messages
/// left over 100 MiB resident after they closed (tests/it/websocket_memory.rs). The runtime calls this on a
/// worker about to park, at most once a second.
#[expect(unsafe_code, reason = "one call into the allocator, which has no safe binding")]
fn give_back() {
    // SAFETY: mi_collect takes no pointers and may be called on any thread at any time.
    unsafe { libmimalloc_sys::mi_collect(true) }
}
