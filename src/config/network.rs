//! `network:`: the address guard's exceptions, static name overrides and the resolver, as written and
//! validated.

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;

use ipnet::IpNet;
use schemars::JsonSchema;
use serde::Deserialize;

use super::errors::Errors;
use super::fields::{cidr, ip};
use super::shapes;
use crate::net::ResolverKind;
use crate::target::{Host, Target};

/// `network:`
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "a mapping of keys and values")]
pub(super) struct RawNetwork {
    /// CIDRs exempted from the special-range guard.
    #[serde(default)]
    #[schemars(with = "Vec<shapes::Cidr>")]
    pub(crate) allow_cidrs: Vec<String>,
    /// Metadata addresses an operator explicitly opts in to reaching.
    #[serde(default)]
    #[schemars(with = "Vec<shapes::IpAddress>")]
    pub(crate) dangerous_allow_metadata: Vec<String>,
    /// Static name -> address(es) overrides.
    #[serde(default)]
    pub(crate) hosts: BTreeMap<String, RawAddrs>,
    /// `dns` (default) or `system`.
    #[serde(default)]
    #[schemars(with = "Option<shapes::Resolver>")]
    pub(crate) resolver: Option<String>,
}

/// One address or a list of them.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(untagged, expecting = "expected an IP address or a list of them")]
pub(super) enum RawAddrs {
    /// `name: 10.0.0.1`
    One(#[schemars(with = "shapes::IpAddress")] String),
    /// `name: [10.0.0.1, 10.0.0.2]`
    Many(#[schemars(with = "Vec<shapes::IpAddress>")] Vec<String>),
}

/// `network:`
#[derive(Debug, Clone, Default)]
pub(crate) struct Network {
    /// Exceptions to the special-range guard.
    pub(crate) allow_cidrs: Vec<IpNet>,
    /// Metadata addresses explicitly opted in to. Dangerous: a sandbox that reaches them can steal the
    /// host's cloud credentials.
    pub(crate) dangerous_allow_metadata: Vec<IpAddr>,
    /// Static name overrides (still checked by the guard).
    pub(crate) hosts: HashMap<String, Vec<IpAddr>>,
    /// How other names are resolved.
    pub(crate) resolver: crate::net::ResolverKind,
}

/// `network:`: the guard's exceptions, the metadata addresses opted in to, name overrides and the resolver.
pub(super) fn network(errs: &mut Errors, raw: RawNetwork) -> Network {
    let allow_cidrs = raw
        .allow_cidrs
        .iter()
        .enumerate()
        .filter_map(|(i, c)| cidr(errs, &format!("network.allow_cidrs[{i}]"), c))
        .collect();
    let dangerous_allow_metadata = raw
        .dangerous_allow_metadata
        .iter()
        .enumerate()
        .filter_map(|(i, a)| {
            let path = format!("network.dangerous_allow_metadata[{i}]");
            let addr = ip(errs, &path, a)?;
            if crate::net::ipguard::is_metadata_address(addr) {
                Some(addr)
            } else {
                errs.at(
                    path,
                    format!("{addr} is not a metadata address; this setting only opens metadata endpoints (use network.allow_cidrs for other ranges)"),
                );
                None
            }
        })
        .collect();
    let mut hosts = HashMap::new();
    for (name, addrs) in raw.hosts {
        let path = format!("network.hosts.{name}");
        let key = match Target::from_host_value(name.as_bytes(), 80) {
            Ok(Target {
                host: Host::Name(n), ..
            }) => n,
            Ok(_) => {
                errs.at(&path, "is an IP address; only names can be mapped");
                continue;
            }
            Err(e) => {
                errs.at(&path, format!("{name:?} is not a host name: {e}"));
                continue;
            }
        };
        let list = match addrs {
            RawAddrs::One(a) => vec![a],
            RawAddrs::Many(v) => v,
        };
        if list.is_empty() {
            errs.at(&path, "maps to no address; give at least one");
        }
        let parsed: Vec<IpAddr> = list
            .iter()
            .enumerate()
            .filter_map(|(i, a)| ip(errs, &format!("{path}[{i}]"), a))
            .collect();
        hosts.insert(key, parsed);
    }
    let resolver = match raw.resolver.as_deref() {
        None | Some("dns") => ResolverKind::Dns,
        Some("system") => ResolverKind::System,
        Some(other) => {
            errs.at(
                "network.resolver",
                format!("{other:?} is not a resolver: use dns (the default: resolv.conf and /etc/hosts, answers cached for their TTL) or system (the C library's getaddrinfo, uncached)"),
            );
            ResolverKind::Dns
        }
    };
    Network {
        allow_cidrs,
        dangerous_allow_metadata,
        hosts,
        resolver,
    }
}
