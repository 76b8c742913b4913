//! Raw mirror -> typed `Config`, collecting every error with the path of the offending value.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::net::IpAddr;
use std::time::Duration;

use ipnet::IpNet;

use super::model::{CaConfig, Config, ConfigErrors, Listen, LogFormat, Network, SandboxSpec, UpstreamConfig};
use super::raw::{RawAddrs, RawConfig, RawSandbox};
use crate::net::ResolverKind;
use crate::policy::Policy;
use crate::target::{Host, Target};

mod audit;
mod aws;
mod console;
mod control;
mod credentials;
mod export;
mod fields;
mod inline;
mod jail;
mod limits;
mod lint;
mod minting;
mod policies;
mod postgres;
mod previews;
mod principals;
mod violations;

use fields::{Errors, cidr, duration, ip, socket_addr};
pub(crate) use inline::inline_policy;

pub(super) fn validate(source: &str, base: super::paths::Base, mut raw: RawConfig) -> Result<Config, ConfigErrors> {
    let mut errs = Errors {
        file: source.to_string(),
        list: Vec::new(),
        warnings: Vec::new(),
        base,
    };
    let listen = Listen {
        proxy: socket_addr(&mut errs, "listen.proxy", raw.listen.proxy.as_deref(), "127.0.0.1:3128"),
        admin: raw
            .listen
            .admin
            .as_deref()
            .map(|a| socket_addr(&mut errs, "listen.admin", Some(a), "")),
        transparent: None,
        transparent_tproxy: false,
        dns: None,
        preview: None,
        console: None,
    };
    let optional = |errs: &mut Errors, path: &str, raw: Option<&str>| raw.map(|a| socket_addr(errs, path, Some(a), ""));
    let listen = Listen {
        transparent: optional(&mut errs, "listen.transparent", raw.listen.transparent.as_deref()),
        transparent_tproxy: fields::flag(&mut errs, "listen.transparent_tproxy", raw.listen.transparent_tproxy)
            .unwrap_or(false),
        dns: optional(&mut errs, "listen.dns", raw.listen.dns.as_deref()),
        preview: optional(&mut errs, "listen.preview", raw.listen.preview.as_deref()),
        console: optional(&mut errs, "listen.console", raw.listen.console.as_deref()),
        ..listen
    };
    let previews = previews::previews(&mut errs, raw.previews.take(), listen.preview);
    let admin_tls = console::admin_tls(&mut errs, raw.admin.take(), listen.admin);
    let console = console::console(&mut errs, raw.console.take(), listen.console, listen.admin);
    console::certs_and_sign_in(&mut errs, admin_tls.as_ref(), console.as_ref(), listen.console);
    if let Some(admin) = listen.admin
        && !listen.admin_api_served(admin_tls.is_some())
    {
        errs.warn(
            "listen.admin",
            format!(
                "{admin} is not a loopback address and admin.tls is not set: only /healthz, /readyz and /metrics \
                 are served there; /v1{} answer 403 admin_needs_tls (set admin.tls to serve them)",
                if console.is_some() && listen.console.is_none() {
                    " and the console"
                } else {
                    ""
                }
            ),
        );
    }
    if listen.transparent_tproxy && listen.transparent.is_none() {
        errs.at(
            "listen.transparent_tproxy",
            "is set but listen.transparent is not; give the transparent listener an address",
        );
    }
    // TCP listeners may not share an address (the DNS responder's TCP side is checked with them).
    let tcp = listen.all();
    for (i, (name, addr)) in tcp.iter().enumerate() {
        if let Some((other, _)) = tcp[..i].iter().find(|(_, a)| a == addr && addr.port() != 0) {
            errs.at(
                *name,
                format!("is {other}'s address too ({addr}); each listener needs its own"),
            );
        }
    }
    let per_user_jails = raw.limits.per_user.as_mut().and_then(|u| u.jails.take());
    let activity = fields::flag(&mut errs, "audit.activity", raw.audit.activity.take());
    let policy_jails: Vec<(String, super::raw::RawJailLimits)> = raw
        .policies
        .iter_mut()
        .filter_map(|(name, p)| Some((name.clone(), p.jail.take()?)))
        .collect();
    let jail = jail::jail(&mut errs, raw.jail.take(), policy_jails, per_user_jails, activity);
    let control = control::control(&mut errs, std::mem::take(&mut raw.control), &listen);
    let approval = limits::approval(&mut errs, std::mem::take(&mut raw.approval));
    let (audit, audit_chain) = audit::audit(&mut errs, std::mem::take(&mut raw.audit));
    let network = network(&mut errs, raw.network);
    let timeouts = limits::timeouts(&mut errs, std::mem::take(&mut raw.timeouts));
    let limits = limits::limits(&mut errs, std::mem::take(&mut raw.limits));
    let on_violation: BTreeMap<String, super::violations::OnViolation> = raw
        .policies
        .iter_mut()
        .filter_map(|(name, p)| {
            let raw = p.on_violation.take()?;
            violations::on_violation(&mut errs, &format!("policies.{name}"), raw).map(|o| (name.clone(), o))
        })
        .collect();
    let mut credential_budgets = super::violations::CredentialBudgets::default();
    for (name, c) in raw.credentials.iter_mut() {
        if let Some(b) = c.budget.take() {
            let at = format!("credentials.{name}.budget");
            if let Some(b) = violations::budget(&mut errs, &at, b) {
                credential_budgets.credentials.insert(name.clone(), b);
            }
        }
    }
    for (policy, p) in raw.policies.iter_mut() {
        for (name, b) in std::mem::take(&mut p.credential_budget) {
            let at = format!("policies.{policy}.credential_budget.{name}");
            if !p.credentials.contains(&name) {
                errs.at(&at, format!("{name:?} is not one of this policy's credentials"));
            } else if let Some(b) = violations::budget(&mut errs, &at, b) {
                credential_budgets.policies.insert((policy.clone(), name), b);
            }
        }
    }
    let exposed: BTreeMap<String, Vec<u16>> = raw
        .policies
        .iter_mut()
        .map(|(name, p)| (name.clone(), previews::expose(&mut errs, name, p.expose.take())))
        .collect();
    let mut policy_credentials: BTreeMap<String, (Vec<String>, BTreeMap<String, super::raw::RawScope>)> = raw
        .policies
        .iter_mut()
        .map(|(name, p)| {
            (
                name.clone(),
                (
                    std::mem::take(&mut p.credentials),
                    std::mem::take(&mut p.credential_scope),
                ),
            )
        })
        .collect();
    let ca = ca(&mut errs, raw.ca);
    let upstream = upstream(&mut errs, raw.upstream);
    let openbao = credentials::openbao(&mut errs, raw.vault.openbao.take());
    let secret_cache = fields::duration(
        &mut errs,
        "vault.cache_ttl",
        raw.vault.cache_ttl.take(),
        std::time::Duration::from_secs(300),
    );
    let vault = credentials::vault(&mut errs, raw.vault);
    let creds = credentials::credentials(&mut errs, raw.credentials);
    let mut policies = policies::policies(&mut errs, raw.policies);
    for (name, p) in policies.iter_mut() {
        p.expose = exposed.get(name).cloned().unwrap_or_default();
        if let Some((list, scopes)) = policy_credentials.remove(name) {
            credentials::check_policy_credentials(&mut errs, name, &list, &creds);
            p.credential_scope = credentials::scopes(&mut errs, name, &list, scopes, &creds);
            p.credentials = list.into_iter().map(crate::names::CredentialName::from).collect();
        }
    }
    lint::network(&mut errs, &network);
    lint::policies(&mut errs, &policies, &network);
    let sandboxes = sandboxes(&mut errs, raw.sandboxes, &policies);
    let log_format = match raw.log.format.as_deref() {
        None | Some("text") => LogFormat::Text,
        Some("json") => LogFormat::Json,
        Some(other) => {
            errs.at(
                "log.format",
                format!("{other:?} is not a log format; write text or json"),
            );
            LogFormat::Text
        }
    };
    if errs.list.is_empty() {
        Ok(Config {
            source: source.to_string(),
            base: errs.base,
            listen,
            audit,
            audit_chain,
            on_violation,
            credential_budgets,
            network,
            timeouts,
            limits,
            ca,
            upstream,
            vault,
            openbao,
            secret_cache,
            credentials: creds.into_iter().map(|(k, v)| (k.into(), v)).collect(),
            sandboxes,
            policies: policies
                .into_iter()
                .map(|(name, p)| (name, std::sync::Arc::new(p)))
                .collect(),
            control,
            approval,
            log_format,
            previews,
            admin_tls,
            console,
            jail,
            warnings: errs.warnings,
        })
    } else {
        Err(ConfigErrors(errs.list))
    }
}

fn network(errs: &mut Errors, raw: super::raw::RawNetwork) -> Network {
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

fn ca(errs: &mut Errors, raw: super::raw::RawCa) -> CaConfig {
    let mut ca = CaConfig::default();
    ca.dir = errs.path(&ca.dir.to_string_lossy());
    if let Some(dir) = raw.dir {
        if dir.trim().is_empty() {
            errs.at("ca.dir", "is empty; name a folder, e.g. \"certs\"");
        }
        ca.dir = errs.path(&dir);
    }
    ca.leaf_validity = duration(errs, "ca.leaf_validity", raw.leaf_validity, ca.leaf_validity);
    if ca.leaf_validity < Duration::from_secs(3600) {
        errs.at(
            "ca.leaf_validity",
            "must be at least 1h (leaves are cached for a quarter of it)",
        );
    }
    if let Some(n) = fields::whole(errs, "ca.leaf_cache", raw.leaf_cache, fields::A_COUNT) {
        match u64::try_from(n) {
            Ok(n) if n >= 1 => ca.leaf_cache = n,
            _ => errs.at("ca.leaf_cache", format!("{n} must be at least 1")),
        }
    }
    ca
}

fn upstream(errs: &mut Errors, raw: super::raw::RawUpstream) -> UpstreamConfig {
    let mut up = UpstreamConfig::default();
    up.pool_idle = duration(errs, "upstream.pool_idle", raw.pool_idle, up.pool_idle);
    for (i, file) in raw.extra_roots.iter().enumerate() {
        let path = format!("upstream.extra_roots[{i}]");
        let resolved = errs.path(file);
        match crate::tls::pem::read_pem_certs(&resolved) {
            Ok(certs) if certs.is_empty() => errs.at(path, format!("{file}: holds no PEM certificate")),
            Ok(certs) => {
                up.extra_root_files.push(resolved);
                up.extra_roots.extend(certs);
            }
            Err(e) => errs.at(path, format!("{file}: {e}")),
        }
    }
    up
}

fn sandboxes(errs: &mut Errors, raw: Vec<RawSandbox>, policies: &BTreeMap<String, Policy>) -> Vec<SandboxSpec> {
    let mut out: Vec<SandboxSpec> = Vec::new();
    let mut seen = HashSet::new();
    for (i, s) in raw.into_iter().enumerate() {
        let base = format!("sandboxes[{i}]");
        let id = s.id.unwrap_or_default();
        if !crate::identity::valid_id(&id) {
            errs.at(
                format!("{base}.id"),
                format!("{id:?} is not a sandbox id; {}", crate::identity::ID_RULE),
            );
        } else if !seen.insert(id.clone()) {
            errs.at(format!("{base}.id"), format!("{id:?} is declared twice"));
        }
        let user = s.user.unwrap_or_default();
        if user.trim().is_empty() {
            errs.at(
                format!("{base}.user"),
                "is missing; name the user who owns this sandbox",
            );
        }
        let policy = s.policy.unwrap_or_default();
        if !policies.contains_key(&policy) {
            let known: Vec<&str> = policies.keys().map(String::as_str).collect();
            errs.at(
                format!("{base}.policy"),
                format!("{policy:?} is not a policy; the policies are: {}", known.join(", ")),
            );
        }
        let token_sha256 = s.token_sha256.and_then(|h| {
            let mut out = [0u8; 32];
            hex::decode_to_slice(h.trim(), &mut out)
                .map_err(|_| {
                    errs.at(
                        format!("{base}.token_sha256"),
                        "is not 64 hex digits; write the SHA-256 of the token (`cordon token hash` prints it)",
                    )
                })
                .ok()
                .map(|()| out)
        });
        let source_cidrs: Vec<IpNet> = s
            .source_cidrs
            .iter()
            .enumerate()
            .filter_map(|(j, c)| cidr(errs, &format!("{base}.source_cidrs[{j}]"), c))
            .collect();
        // Neither `token_sha256` nor `source_cidrs`: a sandbox for `cordon jail`, which makes a credential of its
        // own for it (or knows it by the jail's address); `cordon run` says at start that nothing reaches it.
        for (j, net) in source_cidrs.iter().enumerate() {
            // SECURITY: overlapping source ranges would make one client address two sandboxes.
            if let Some(other) = out
                .iter()
                .find(|o| o.source_cidrs.iter().any(|n| n.contains(net) || net.contains(n)))
            {
                errs.at(
                    format!("{base}.source_cidrs[{j}]"),
                    format!(
                        "{net} overlaps a source range of sandbox {:?}; one address must mean one sandbox",
                        other.id
                    ),
                );
            }
        }
        out.push(SandboxSpec {
            id,
            user,
            token_sha256,
            source_cidrs,
            policy,
        });
    }
    out
}
