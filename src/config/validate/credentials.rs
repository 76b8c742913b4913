//! Validation of `vault:` and `credentials:`, and of the credentials policies name.

use std::collections::BTreeMap;
use std::path::PathBuf;

use http::HeaderName;

use super::Errors;
use crate::config::raw::{RawCredential, RawVault};
use crate::credentials::spec::{Binding, CredentialSpec, FileVaultSpec, Inject, KeySpec, SecretSource};
use crate::policy::HostPattern;
use crate::policy::allowlist::{compile_paths, host_set, parse_method, parse_port};

/// Headers a credential may never be written into: they are cordon's own or framing.
const FORBIDDEN_HEADERS: [&str; 6] = [
    "proxy-authorization",
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
    "upgrade",
];

pub(super) fn vault(errs: &mut Errors, raw: RawVault) -> FileVaultSpec {
    let mut spec = FileVaultSpec::default();
    let f = raw.file;
    if let Some(p) = f.path {
        spec.path = PathBuf::from(p);
    }
    match (f.key_file, f.key_env) {
        (Some(_), Some(_)) => errs.at("vault.file", "has both `key_file` and `key_env`; keep one"),
        (Some(k), None) => spec.key = KeySpec::File(PathBuf::from(k)),
        (None, Some(v)) => spec.key = KeySpec::Env(v),
        (None, None) => {
            // The key file sits beside the vault file by default.
            let mut key = spec.path.clone();
            key.set_extension("key");
            spec.key = KeySpec::File(key);
        }
    }
    spec
}

pub(super) fn credentials(errs: &mut Errors, raw: BTreeMap<String, RawCredential>) -> BTreeMap<String, CredentialSpec> {
    let mut out = BTreeMap::new();
    for (name, c) in raw {
        let base = format!("credentials.{name}");
        let before = errs.list.len();
        let source = match c.source {
            None => {
                errs.at(
                    &base,
                    "has no `source`; write e.g. `source: { vault: openai-api-key }` or `source: { env: OPENAI_KEY }`",
                );
                None
            }
            Some(s) => match (s.vault, s.env) {
                (Some(v), None) if !v.trim().is_empty() => Some(SecretSource::Vault(v)),
                (None, Some(e)) if !e.trim().is_empty() => Some(SecretSource::Env(e)),
                _ => {
                    errs.at(
                        format!("{base}.source"),
                        "needs exactly one of `vault: NAME` or `env: VARIABLE`",
                    );
                    None
                }
            },
        };
        let binding = match c.bind {
            None => {
                errs.at(
                    &base,
                    "has no `bind`; say where it may be sent, e.g. `bind: { hosts: [api.openai.com] }`",
                );
                None
            }
            Some(b) => binding(errs, &format!("{base}.bind"), b),
        };
        let inject = inject(errs, &format!("{base}.inject"), c.inject.unwrap_or_default());
        if let (Some(source), Some(binding), Some(inject)) = (source, binding, inject)
            && errs.list.len() == before
        {
            out.insert(
                name.clone(),
                CredentialSpec {
                    name,
                    source,
                    binding,
                    inject,
                },
            );
        }
    }
    out
}

fn binding(errs: &mut Errors, base: &str, raw: crate::config::raw::RawBinding) -> Option<Binding> {
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
    let ports = match raw.ports {
        None => vec![443],
        Some(list) => list
            .iter()
            .enumerate()
            .filter_map(|(i, p)| {
                parse_port(*p)
                    .map_err(|e| errs.at(format!("{base}.ports[{i}]"), e))
                    .ok()
            })
            .collect(),
    };
    let methods = raw.methods.map(|list| {
        list.iter()
            .enumerate()
            .filter_map(|(i, m)| {
                parse_method(m)
                    .map_err(|e| errs.at(format!("{base}.methods[{i}]"), e))
                    .ok()
            })
            .collect()
    });
    let paths = match raw.paths {
        None => None,
        Some(list) => compile_paths(&list)
            .map_err(|(i, e)| errs.at(format!("{base}.paths[{i}]"), e))
            .ok(),
    };
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

fn inject(errs: &mut Errors, base: &str, raw: crate::config::raw::RawInject) -> Option<Inject> {
    match (raw.header, raw.value, raw.basic_user, raw.placeholder) {
        (Some(header), value, None, None) => {
            let lower = header.to_ascii_lowercase();
            let Ok(name) = HeaderName::from_bytes(lower.as_bytes()) else {
                errs.at(format!("{base}.header"), format!("{header:?} is not a header name"));
                return None;
            };
            if FORBIDDEN_HEADERS.contains(&lower.as_str()) || lower.starts_with("x-cordon-") {
                errs.at(
                    format!("{base}.header"),
                    format!("{header:?} cannot carry a credential"),
                );
                return None;
            }
            let template = value.unwrap_or_else(|| "{secret}".to_string());
            if !template.contains("{secret}") {
                errs.at(
                    format!("{base}.value"),
                    "must contain {secret}, e.g. \"Bearer {secret}\"",
                );
                return None;
            }
            Some(Inject::Header { name, template })
        }
        (None, None, Some(user), None) => {
            if user.contains(':') {
                errs.at(
                    format!("{base}.basic_user"),
                    "cannot contain ':' (it separates user and secret)",
                );
                return None;
            }
            Some(Inject::Basic { user })
        }
        (None, None, None, Some(p)) => Some(Inject::Placeholder { query: p.query }),
        _ => {
            errs.at(
                base,
                "needs exactly one of: `header` (with `value: \"Bearer {secret}\"`), `basic_user`, or `placeholder: {}`",
            );
            None
        }
    }
}

/// Every credential a policy names must exist.
pub(super) fn check_policy_credentials(
    errs: &mut Errors,
    policy: &str,
    names: &[String],
    credentials: &BTreeMap<String, CredentialSpec>,
) {
    for (i, n) in names.iter().enumerate() {
        if !credentials.contains_key(n) {
            let known: Vec<&str> = credentials.keys().map(String::as_str).collect();
            errs.at(
                format!("policies.{policy}.credentials[{i}]"),
                format!("{n:?} is not a credential; the credentials are: {}", known.join(", ")),
            );
        }
    }
}
