//! Validation of `vault:` and `credentials:`, and of the credentials policies name.

use std::collections::BTreeMap;

use http::HeaderName;

use super::fields::{Errors, flag, methods, paths, ports, secret_ref, url, whole};
use crate::config::credentials::{
    Binding, CredentialSpec, FileVaultSpec, GitHubAppSpec, Inject, KeySpec, OAuth2Spec, OpenBaoAuthSpec, OpenBaoSpec,
    SecretSource,
};
use crate::config::raw::{RawCredential, RawOpenBao, RawSecretRef, RawSource, RawVault};
use crate::policy::allowlist::host_set;
use crate::policy::{HostPattern, ScopeOverride};

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
    spec.path = errs.path(&spec.path.to_string_lossy());
    let f = raw.file;
    if let Some(p) = f.path {
        spec.path = errs.path(&p);
    }
    match (f.key_file, f.key_env) {
        (Some(_), Some(_)) => errs.at("vault.file", "has both `key_file` and `key_env`; keep one"),
        (Some(k), None) => spec.key = KeySpec::File(errs.path(&k)),
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

pub(super) fn openbao(errs: &mut Errors, raw: Option<RawOpenBao>) -> Option<OpenBaoSpec> {
    let raw = raw?;
    let addr = url(errs, "vault.openbao.addr", &raw.addr)?;
    let auth = match (raw.token_env, raw.approle) {
        (Some(t), None) => OpenBaoAuthSpec::TokenEnv(t),
        (None, Some(a)) => OpenBaoAuthSpec::AppRole {
            role_id: a.role_id,
            secret_id_env: a.secret_id_env,
            mount: a.mount.unwrap_or_else(|| "approle".into()),
        },
        _ => {
            errs.at(
                "vault.openbao",
                "needs exactly one of `token_env: VARIABLE` or `approle: {role_id, secret_id_env}`",
            );
            return None;
        }
    };
    Some(OpenBaoSpec {
        addr,
        mount: raw.mount.unwrap_or_else(|| "secret".into()),
        auth,
    })
}

fn source(errs: &mut Errors, base: &str, s: RawSource) -> Option<SecretSource> {
    let count = [
        s.vault.is_some(),
        s.env.is_some(),
        s.openbao.is_some(),
        s.file.is_some(),
        s.oauth2.is_some(),
        s.github_app.is_some(),
        s.aws.is_some(),
    ]
    .iter()
    .filter(|b| **b)
    .count();
    if count != 1 {
        errs.at(
            base,
            "needs exactly one of `vault: NAME`, `env: VARIABLE`, `openbao: PATH#KEY`, `file: PATH`, `oauth2: {...}`, \
             `github_app: {...}` or `aws: {...}`",
        );
        return None;
    }
    if let Some(o) = s.oauth2 {
        let token_url = url(errs, &format!("{base}.oauth2.token_url"), &o.token_url);
        let secret = secret_ref(errs, &format!("{base}.oauth2.client_secret"), o.client_secret);
        let post = match o.auth.as_deref() {
            None | Some("basic") => false,
            Some("post") => true,
            Some(other) => {
                errs.at(
                    format!("{base}.oauth2.auth"),
                    format!("{other:?} is not `basic` or `post`"),
                );
                false
            }
        };
        return Some(SecretSource::OAuth2(Box::new(OAuth2Spec {
            token_url: token_url?,
            client_id: o.client_id,
            client_secret: secret?,
            scope: o.scope,
            audience: o.audience,
            resource: o.resource,
            post,
        })));
    }
    if let Some(a) = s.aws {
        return super::aws::source(errs, &format!("{base}.aws"), a).map(|a| SecretSource::Aws(Box::new(a)));
    }
    if let Some(g) = s.github_app {
        let api_base = url(
            errs,
            &format!("{base}.github_app.api_base"),
            g.api_base.as_deref().unwrap_or("https://api.github.com"),
        );
        let key = secret_ref(errs, &format!("{base}.github_app.private_key"), g.private_key);
        let at = format!("{base}.github_app.installation_id");
        let installation = whole(errs, &at, Some(g.installation_id), "the installation's number");
        let installation = match installation.map(u64::try_from) {
            Some(Ok(n)) if n > 0 => Some(n),
            Some(_) => {
                errs.at(&at, "must be the installation's number (a positive whole number)");
                None
            }
            None => None,
        };
        return Some(SecretSource::GitHubApp(Box::new(GitHubAppSpec {
            api_base: api_base?,
            app_id: g.app_id,
            installation_id: installation?,
            private_key: key?,
            repositories: g.repositories,
            permissions: g.permissions,
        })));
    }
    secret_ref(
        errs,
        base,
        RawSecretRef {
            vault: s.vault,
            env: s.env,
            openbao: s.openbao,
            file: s.file,
        },
    )
    .map(SecretSource::Static)
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
            Some(s) => source(errs, &format!("{base}.source"), s),
        };
        let hosts: Vec<String> = c.bind.as_ref().map(|b| b.hosts.clone()).unwrap_or_default();
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
        let is_aws = matches!(source, Some(SecretSource::Aws(_)));
        let inject = match c.inject {
            // AWS keys are only ever applied by signing: that is what an absent `inject` means for them.
            None if is_aws => Some(Inject::AwsSigV4 {
                region: None,
                service: None,
            }),
            raw => inject(errs, &format!("{base}.inject"), raw.unwrap_or_default()),
        };
        let mask_echo = flag(errs, &format!("{base}.mask_echo"), Some(c.mask_echo)).unwrap_or(false);
        if is_aws && mask_echo {
            errs.at(
                format!("{base}.mask_echo"),
                "an AWS secret never leaves cordon (only signatures made with it do), so there is nothing to mask; \
                 and masking removes the Range headers S3 clients sign. Remove `mask_echo`",
            );
        }
        match (&inject, is_aws) {
            (Some(Inject::AwsSigV4 { .. }), false) if source.is_some() => errs.at(
                format!("{base}.inject.aws_sigv4"),
                "signs with AWS keys: it needs `source: { aws: {access_key_id, secret_access_key} }`",
            ),
            (Some(i), true) if !matches!(i, Inject::AwsSigV4 { .. }) => errs.at(
                format!("{base}.inject"),
                "AWS keys are applied by signing the request (`aws_sigv4: {}`), never as a header or placeholder",
            ),
            _ => {}
        }
        let github = super::minting::github(
            errs,
            &format!("{base}.kind"),
            c.kind.as_deref(),
            source.as_ref(),
            &hosts,
        );
        let allow_minting = source
            .as_ref()
            .map(|s| super::minting::allow(errs, &format!("{base}.allow_minting"), s, github, c.allow_minting))
            .unwrap_or_default();
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
                    mask_echo,
                    allow_minting,
                    github,
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
    let ports = ports(errs, base, raw.ports, &[443]);
    let methods = methods(errs, base, raw.methods);
    let paths = paths(errs, base, raw.paths.as_deref());
    let host_set = host_set(&hosts)
        .map_err(|e| errs.at(format!("{base}.hosts"), e.to_string()))
        .ok()?;
    (errs.list.len() == before).then_some(Binding {
        host_set,
        ports,
        methods,
        paths,
    })
}

fn inject(errs: &mut Errors, base: &str, raw: crate::config::raw::RawInject) -> Option<Inject> {
    if let Some(aws) = raw.aws_sigv4 {
        if raw.header.is_some() || raw.value.is_some() || raw.basic_user.is_some() || raw.placeholder.is_some() {
            errs.at(
                base,
                "`aws_sigv4` signs the request; it takes no `header`, `basic_user` or `placeholder`",
            );
            return None;
        }
        return super::aws::inject(errs, &format!("{base}.aws_sigv4"), aws);
    }
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
        (None, None, None, Some(p)) => Some(Inject::Placeholder {
            query: flag(errs, &format!("{base}.placeholder.query"), Some(p.query)).unwrap_or(false),
            body: flag(errs, &format!("{base}.placeholder.body"), Some(p.body)).unwrap_or(false),
        }),
        _ => {
            errs.at(
                base,
                "needs exactly one of: `header` (with `value: \"Bearer {secret}\"`), `basic_user`, `placeholder: {}` or \
                 `aws_sigv4: {}`",
            );
            None
        }
    }
}

/// A policy's narrowing of its token credentials: only for credentials it uses, and only the settings that
/// credential's kind has.
pub(super) fn scopes(
    errs: &mut Errors,
    policy: &str,
    used: &[String],
    raw: BTreeMap<String, crate::config::raw::RawScope>,
    credentials: &BTreeMap<String, CredentialSpec>,
) -> BTreeMap<String, ScopeOverride> {
    let mut out = BTreeMap::new();
    for (name, s) in raw {
        let path = format!("policies.{policy}.credential_scope.{name}");
        if !used.contains(&name) {
            errs.at(&path, format!("{name:?} is not in this policy's `credentials`"));
            continue;
        }
        let oauth = s.scope.is_some() || s.audience.is_some() || s.resource.is_some();
        let github = s.repositories.is_some() || s.permissions.is_some();
        let aws = s.session_policy.is_some();
        match credentials.get(&name).map(|c| &c.source) {
            Some(SecretSource::OAuth2(_)) if github || aws => {
                errs.at(&path, "an OAuth2 credential takes `scope`, `audience` or `resource`");
            }
            Some(SecretSource::GitHubApp(_)) if oauth || aws => {
                errs.at(&path, "a GitHub App credential takes `repositories` or `permissions`");
            }
            Some(SecretSource::Aws(a)) if oauth || github || a.assume_role.is_none() => {
                errs.at(
                    &path,
                    "an AWS credential takes only `session_policy`, and only with `assume_role` (a session policy \
                     narrows an assumed role)",
                );
            }
            Some(SecretSource::Static(_)) => {
                errs.at(
                    &path,
                    "a stored secret cannot be narrowed; only OAuth2 and GitHub App tokens can",
                );
            }
            _ => {}
        }
        out.insert(
            name,
            ScopeOverride {
                scope: s.scope,
                audience: s.audience,
                resource: s.resource,
                repositories: s.repositories,
                permissions: s.permissions,
                session_policy: s
                    .session_policy
                    .and_then(|p| super::aws::session_policy(errs, &format!("{path}.session_policy"), p)),
            },
        );
    }
    out
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
