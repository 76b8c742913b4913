//! Faults through the binary: upstreams that reset or stall, a broken configuration, cordon killed or starved.

mod flood;
mod outside;
mod process;
