//! Transparent mode as a VM gateway in network namespaces: nft rules, TPROXY, bridges, DHCP, run-time VMs, containers.

mod bridge;
mod containers;
pub(crate) mod dhcp;
mod dhcp_hostile;
mod runtime;
mod tproxy;
mod vm;
