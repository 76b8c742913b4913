//! A policy's `boundary:` (the most a sandbox of the policy may ever be granted), and a policy document read on
//! its own (`cordon policy diff` and `contains` take files): both written as a policy is under `policies:`
//! (`mode`, `allow`, `credentials`), validated by the same code with the same messages. A policy must lie inside
//! its own boundary: the ceiling's check ([`crate::policy::ceiling`]) says where it does not, with a request
//! that shows it. Nothing else uses the boundary yet.

use std::collections::BTreeMap;

use super::credentials::CredentialSpec;
use super::errors::Errors;
use super::policies::{RawBoundary, policy};
use crate::names::CredentialName;
use crate::policy::Policy;
use crate::target::Target;

/// Compile `raw` at `at` (`policies.web.boundary`) under the name `name`, its credentials checked against
/// `creds`; `None` after noting what is wrong.
fn compile(errs: &mut Errors, at: &str, name: String, raw: RawBoundary, known: &[&str]) -> Option<Policy> {
    let before = errs.list.len();
    for (i, n) in raw.credentials.iter().enumerate() {
        if !known.contains(&n.as_str()) {
            errs.at(
                format!("{at}.credentials[{i}]"),
                format!("{n:?} is not a credential; the credentials are: {}", known.join(", ")),
            );
        }
    }
    let mut p = policy(errs, at, name, raw.mode.as_deref(), raw.allow)?;
    p.credentials = raw.credentials.into_iter().map(CredentialName::from).collect();
    (errs.list.len() == before).then_some(p)
}

/// Where each credential of `creds` may be sent, for counterexamples.
pub(crate) fn bound_by(
    creds: &BTreeMap<String, CredentialSpec>,
) -> impl Fn(&CredentialName, &Target, &http::Method, &str) -> bool + '_ {
    move |name, target, method, path| {
        creds
            .get(name.as_str())
            .is_some_and(|c| c.binding.matches(target, method, path))
    }
}

/// Each policy's `boundary:`, compiled onto it; an error for a policy that goes past its own boundary, at the
/// JSON path of what does, with a request that shows it.
pub(super) fn boundaries(
    errs: &mut Errors,
    raw: BTreeMap<String, RawBoundary>,
    policies: &mut BTreeMap<String, Policy>,
    creds: &BTreeMap<String, CredentialSpec>,
) {
    for (name, raw) in raw {
        let at = format!("policies.{name}.boundary");
        let known: Vec<&str> = creds.keys().map(String::as_str).collect();
        let Some(b) = compile(errs, &at, format!("{name}.boundary"), raw, &known) else {
            continue;
        };
        let Some(p) = policies.get_mut(&name) else { continue };
        // SECURITY: a policy that already goes past its boundary would make every grant inside the boundary
        // look safe while the sandbox holds more; `check` and `run` refuse it.
        for e in crate::policy::ceiling::exceeds_bound(p, &b, &format!("policies.{name}"), &bound_by(creds)) {
            let shown = e
                .counterexample
                .map(|w| {
                    format!(
                        "; for example {}: {}, the boundary {}",
                        w.describe(),
                        w.allowed_by,
                        w.refused_by
                    )
                })
                .unwrap_or_default();
            errs.at(e.path, format!("goes past the policy's boundary: {}{shown}", e.message));
        }
        p.boundary = Some(Box::new(b));
    }
}

/// A policy document read from `file` (YAML or JSON, as a policy is written under `policies:`), named `name`,
/// its credentials checked against the configuration's (`known`). The errors say `FILE: PATH: message`.
pub(crate) fn document(known: &[&str], file: &str, name: String, text: &str) -> Result<Policy, Vec<String>> {
    let raw: RawBoundary = {
        let de = serde_yaml_ng::Deserializer::from_str(text);
        serde_path_to_error::deserialize(de).map_err(|e| {
            let path = e.path().to_string();
            let inner = e.into_inner();
            let at = inner
                .location()
                .map(|l| format!(":{}:{}", l.line(), l.column()))
                .unwrap_or_default();
            let path = if path == "." {
                String::new()
            } else {
                format!(" {path}:")
            };
            vec![format!("{file}{at}:{path} {inner}")]
        })?
    };
    let mut errs = Errors {
        file: file.to_string(),
        list: Vec::new(),
        warnings: Vec::new(),
        base: crate::config::paths::Base::AsWritten,
    };
    compile(&mut errs, "", name, raw, known)
        .filter(|_| errs.list.is_empty())
        .ok_or_else(|| errs.list.iter().map(ToString::to_string).collect())
}
