//! The `cordon` binary: the command line lives in the library ([`cordon::cli`]).

use std::process::ExitCode;

/// mimalloc rather than glibc's malloc: hyper takes a fresh 8 KiB read buffer for most messages (the last one is
/// still shared with the parsed head), and glibc serves those from its slow bins, consolidating as it goes.
/// HTTP forward: 13% less CPU per request; intercept 7%; at 60 KiB instead of 49 KiB per idle intercepted
/// connection (BENCHMARKS.md).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    cordon::cli::main()
}
