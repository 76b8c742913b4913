//! A credential's `bind:`: the hosts, ports, methods and paths it may be sent to. As written and validated.

use globset::GlobSet;
use http::Method;
use schemars::JsonSchema;
use serde::Deserialize;

use crate::config::errors::Errors;
use crate::config::fields::{methods, paths, ports};
use crate::config::scalars::Whole;
use crate::config::shapes;
use crate::policy::HostPattern;
use crate::policy::allowlist::{host_matches, host_set};
use crate::target::{Host, Target};

/// `bind:` of a credential.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "a mapping of keys and values")]
pub(crate) struct RawBinding {
    /// Host patterns (policy semantics).
    #[serde(default)]
    pub(crate) hosts: Vec<String>,
    /// Ports (default [443]).
    #[schemars(with = "Option<Vec<shapes::Port>>")]
    pub(crate) ports: Option<Vec<Whole>>,
    /// Methods (default any).
    pub(crate) methods: Option<Vec<String>>,
    /// Path globs (default any).
    pub(crate) paths: Option<Vec<String>>,
}

/// The destinations a credential is bound to. Injection happens only on intercepted HTTPS to a destination
/// matching all of these.
#[derive(Debug, Clone)]
pub(crate) struct Binding {
    /// The host patterns, as validated.
    pub(crate) hosts: Vec<HostPattern>,
    /// The compiled host matcher (policy semantics: `*.x` is one or more labels under x).
    pub(crate) host_set: GlobSet,
    /// Ports (default 443).
    pub(crate) ports: Vec<u16>,
    /// Methods, `None` = any.
    pub(crate) methods: Option<Vec<Method>>,
    /// Path globs, `None` = any.
    pub(crate) paths: Option<GlobSet>,
}

impl Binding {
    /// Whether a request to `target` with `method` and `path` is one this credential may be sent with.
    pub(crate) fn matches(&self, target: &Target, method: &Method, path: &str) -> bool {
        // An IP-literal destination never matches a host binding.
        let Host::Name(name) = &target.host else { return false };
        host_matches(&self.host_set, name)
            && self.ports.contains(&target.port)
            && self.methods.as_ref().is_none_or(|m| m.contains(method))
            && self.paths.as_ref().is_none_or(|p| p.is_match(path))
    }

    /// Whether a request `rule` allows might carry this credential: the rule intercepts, and its host pattern and
    /// ports meet the binding's. Methods and paths are not compared, so `false` is a proof and `true` may not be.
    pub(crate) fn may_reach(&self, rule: &crate::policy::Rule) -> bool {
        let Some(host) = &rule.host else { return false };
        rule.tls == crate::policy::TlsMode::Intercept
            && rule.ports.iter().any(|p| self.ports.contains(p))
            && self
                .hosts
                .iter()
                .any(|b| crate::policy::ceiling::host_within(b, host) || crate::policy::ceiling::host_within(host, b))
    }

    /// Whether `host` is one this credential is bound to (at any port, for any method and path).
    pub(crate) fn matches_host(&self, host: &Host) -> bool {
        matches!(host, Host::Name(name) if host_matches(&self.host_set, name))
    }
}

/// `bind:` at `base`: at least one host pattern, and ports (443 by default), methods and paths.
pub(super) fn binding(errs: &mut Errors, base: &str, raw: RawBinding) -> Option<Binding> {
    let before = errs.list.len();
    if raw.hosts.is_empty() {
        errs.at(
            format!("{base}.hosts"),
            "is empty; a credential must be bound to at least one host",
        );
    }
    let hosts: Vec<HostPattern> = raw
        .hosts
        .iter()
        .enumerate()
        .filter_map(|(i, h)| {
            HostPattern::parse(h)
                .map_err(|e| errs.at(format!("{base}.hosts[{i}]"), e))
                .ok()
        })
        .collect();
    let ports = ports(errs, base, raw.ports, &[443]);
    let methods = methods(errs, base, raw.methods);
    let paths = paths(errs, base, raw.paths.as_deref());
    let host_set = host_set(&hosts)
        .map_err(|e| errs.at(format!("{base}.hosts"), e.to_string()))
        .ok()?;
    (errs.list.len() == before).then_some(Binding {
        hosts,
        host_set,
        ports,
        methods,
        paths,
    })
}
