//! The names and addresses of one sandbox's jail, derived from its id alone, so that a later run can find
//! and remove what a crashed one left behind.

use std::net::Ipv4Addr;
use std::path::PathBuf;

use crate::names::SandboxId;
use ipnet::Ipv4Net;
use sha2::{Digest, Sha256};

/// The default pool the jails' /30 links are carved from.
pub const DEFAULT_SUBNET: &str = "10.200.0.0/16";

/// Everything a jail creates, by name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// The sandbox jailed.
    pub(crate) sandbox: SandboxId,
    /// Eight hex digits of SHA-256 of the sandbox id.
    pub(crate) tag: String,
    /// The network namespace.
    pub netns: String,
    /// The veth end that stays on the host (at most 15 characters, as Linux requires).
    pub host_if: String,
    /// The veth end inside the namespace.
    pub(crate) jail_if: String,
    /// The host end's address: cordon listens here.
    pub(crate) host_ip: Ipv4Addr,
    /// The namespace's address: cordon knows the sandbox by it.
    pub(crate) jail_ip: Ipv4Addr,
    /// The nftables table, or the prefix of the iptables chains.
    pub table: String,
    /// Where the lock and the CA file live.
    pub(crate) run_dir: PathBuf,
}

impl Plan {
    /// The plan for `sandbox`, its /30 chosen by the id's hash within `subnet` (a /29 or wider).
    pub fn new(sandbox: &SandboxId, subnet: Ipv4Net) -> Result<Plan, String> {
        if subnet.prefix_len() > 29 {
            return Err(format!(
                "--subnet {subnet} is too small; give a /29 or wider (jails take a /30 each)"
            ));
        }
        let digest = Sha256::digest(sandbox.as_str().as_bytes());
        let tag = hex::encode(&digest[..4]);
        let slots = 1u64 << (30 - subnet.prefix_len());
        let n = u64::from(u32::from_be_bytes([digest[0], digest[1], digest[2], digest[3]])) % slots;
        let base = u32::from(subnet.network()) + u32::try_from(n * 4).unwrap_or(0);
        Ok(Plan {
            sandbox: sandbox.clone(),
            netns: format!("cordon-jail-{tag}"),
            host_if: format!("cjh-{tag}"),
            jail_if: format!("cjs-{tag}"),
            host_ip: Ipv4Addr::from(base + 1),
            jail_ip: Ipv4Addr::from(base + 2),
            table: format!("cordon_jail_{tag}"),
            run_dir: PathBuf::from("/run/cordon/jail").join(&tag),
            tag,
        })
    }

    /// Where the jail keeps its lock, the CA file and what it mounts (its private home, the gVisor jail's state).
    pub fn run_dir(&self) -> &std::path::Path {
        &self.run_dir
    }

    /// The iptables chain prefix (chain names are limited to 28 characters).
    pub fn chain(&self) -> String {
        format!("CORDON_JAIL_{}", self.tag.to_uppercase())
    }
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
