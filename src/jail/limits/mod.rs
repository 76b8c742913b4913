//! What a jail may spend, and how each limit is held to: CPUs, memory and processes by a cgroup of the jail's
//! own ([`cgroup`]; v2, or v1's controllers), else by rlimits on the command (weaker: per process, or per user);
//! the private writable folders by their tmpfs size; wall-clock and idle time by cordon, which stops the whole
//! jail ([`watch`]). `cordon jail` says at start which mechanism holds each limit.

mod bounds;
pub(crate) mod cgroup;
mod supervision;
pub(crate) mod watch;

pub(crate) use supervision::Supervision;
