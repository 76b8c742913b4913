//! Before cordon starts, and in `cordon check`: whether every secret the configuration reads exists where its
//! reference says, for the sources that need no network (the file vault, environment variables, files). The
//! rules are the run-time readers' own ([`env_secret`], [`file_secret`], the vault's names); what is missing
//! is named with the credential, the source and the closest name that does exist. Sources that need the
//! network are probed by [`crate::secrets::probe`].

use std::path::Path;

use crate::config::Config;
use crate::config::credentials::{KeySpec, OpenBaoAuthSpec, SecretRef};
use crate::secrets::{check_vault_folders, env_secret, file_secret, open_vault};

/// A secret reference with where it is written (`credentials.api.source`), and whether cordon makes it when it
/// is a missing `file:` (signing keys and the admin token are created with a random secret on first start).
struct Wanted<'a> {
    at: String,
    r: &'a SecretRef,
    made_if_missing: bool,
}

/// Every secret reference of `config` that cordon reads at start or on a request.
fn wanted(config: &Config) -> Vec<Wanted<'_>> {
    let mut all: Vec<Wanted<'_>> = Vec::new();
    for (name, spec) in &config.credentials {
        for (key, r) in spec.secret_refs() {
            all.push(Wanted {
                at: format!("credentials.{name}.{key}"),
                r,
                made_if_missing: false,
            });
        }
    }
    let c = &config.control;
    let tokens = c.admin_tokens.iter().map(|t| {
        let at = if t.at == "control.admin_token" {
            t.at.clone()
        } else {
            format!("{}.token", t.at)
        };
        (at, Some(&t.token))
    });
    let made = [
        ("control.signing_key", c.signing_key.as_ref()),
        ("audit.signing_key", config.audit_chain.signing_key.as_ref()),
    ];
    let made = tokens.chain(made.into_iter().map(|(at, r)| (at.to_owned(), r)));
    for (at, r) in made.filter_map(|(at, r)| Some((at, r?))) {
        all.push(Wanted {
            at,
            r,
            made_if_missing: true,
        });
    }
    let plain = c.postgres.iter().flat_map(|p| {
        p.password
            .iter()
            .map(|r| ("control.store_password", r))
            .chain([("control.store_key", &p.key)])
    });
    let webhook = config.approval.webhook.iter().filter_map(|w| w.secret.as_ref());
    let mut listeners: Vec<(&str, &SecretRef)> = Vec::new();
    listeners.extend(config.admin_tls.iter().flat_map(|t| t.refs()));
    listeners.extend(config.console.iter().flat_map(|c| c.refs()));
    if let Some(p) = &config.previews {
        listeners.extend(
            p.tls
                .iter()
                .flat_map(|(c, k)| [("previews.tls.cert", c), ("previews.tls.key", k)]),
        );
        listeners.extend(p.key.iter().map(|k| ("previews.key", k)));
    }
    let webhook = webhook.map(|r| ("approval.webhook.secret", r));
    for (at, r) in plain.chain(webhook).chain(listeners) {
        all.push(Wanted {
            at: at.into(),
            r,
            made_if_missing: false,
        });
    }
    all
}

/// What a start with `config` would refuse or fail on for want of a secret: one line per missing secret,
/// e.g. `credentials.api.source.vault: "api-kye" is not in the file vault vault/cordon.vault (did you mean
/// "api-key"?)`. OpenBao references are not read here (they need the network: see [`crate::secrets::probe`]), but the
/// environment variables OpenBao's login reads are.
pub(crate) fn missing(config: &Config) -> Vec<String> {
    let all = wanted(config);
    let mut errors = Vec::new();
    let mut vault_names = None;
    if all.iter().any(|w| matches!(w.r, SecretRef::Vault(_))) {
        match vault_list(config) {
            Ok(names) => vault_names = Some(names),
            Err(e) => errors.push(format!("vault.file: {e}")),
        }
    }
    if let Some(spec) = &config.openbao {
        let (at, var) = match &spec.auth {
            OpenBaoAuthSpec::TokenEnv(var) => ("vault.openbao.token_env", var),
            OpenBaoAuthSpec::AppRole { secret_id_env, .. } => ("vault.openbao.approle.secret_id_env", secret_id_env),
        };
        if let Err(e) = env_secret(var) {
            errors.push(format!("{at}: {e}{}", did_you_mean(var, env_names())));
        }
    }
    for w in &all {
        let problem = match w.r {
            SecretRef::OpenBao(_) => None,
            SecretRef::File(path) if w.made_if_missing && !path.exists() => None,
            SecretRef::Env(var) => env_secret(var)
                .err()
                .map(|e| format!("env: {e}{}", did_you_mean(var, env_names()))),
            SecretRef::File(path) => file_secret(path)
                .err()
                .map(|e| format!("file: {e}{}", closest_file(path))),
            SecretRef::Vault(name) => match &vault_names {
                Some(names) if !names.contains(name) => Some(format!(
                    "vault: {name:?} is not in the file vault {}{}",
                    config.vault.path.display(),
                    match names.is_empty() {
                        true => " (it holds no secrets)".to_string(),
                        false => did_you_mean(name, names.iter().cloned()),
                    }
                )),
                _ => None,
            },
        };
        if let Some(p) = problem {
            errors.push(format!("{}.{p}", w.at));
        }
    }
    errors
}

/// Admin tokens that share a value (read from their files and variables, as a start reads them): a start
/// refuses them, since the name a record carries would be a guess. Tokens in a vault or OpenBao are compared at
/// start only.
pub(crate) fn shared_admin_tokens(config: &Config) -> Vec<String> {
    let mut seen: Vec<(secrecy::SecretString, &str)> = Vec::new();
    let mut errors = Vec::new();
    for t in &config.control.admin_tokens {
        let value = match &t.token {
            SecretRef::Env(var) => env_secret(var).ok(),
            SecretRef::File(path) => file_secret(path).ok(),
            SecretRef::Vault(_) | SecretRef::OpenBao(_) => None,
        };
        let Some(value) = value else { continue };
        use secrecy::ExposeSecret;
        if let Some((_, first)) = seen.iter().find(|(v, _)| v.expose_secret() == value.expose_secret()) {
            errors.push(format!(
                "{}: the same token as the one named {first:?}; every admin token needs a value of its own",
                t.at
            ));
        } else {
            seen.push((value, &t.name));
        }
    }
    errors
}

/// The names in the file vault, read the way a start opens it, except that a key file that does not exist is
/// not created here: without it the vault has no names cordon could read.
fn vault_list(config: &Config) -> Result<Vec<String>, String> {
    check_vault_folders(&config.vault).map_err(|e| e.to_string())?;
    if let KeySpec::File(key) = &config.vault.key
        && !key.exists()
    {
        return match config.vault.path.exists() {
            false => Ok(Vec::new()),
            true => Err(format!(
                "{} exists but its key file {} does not: it cannot be decrypted",
                config.vault.path.display(),
                key.display()
            )),
        };
    }
    let vault = open_vault(&config.vault).map_err(|e| e.to_string())?;
    vault.list().map_err(|e| e.to_string())
}

fn env_names() -> impl Iterator<Item = String> {
    std::env::vars_os().filter_map(|(k, _)| k.into_string().ok())
}

/// ` (did you mean "NAME"?)` for the candidate closest to `wanted`, if one is close enough to be a typo of it;
/// empty otherwise.
fn did_you_mean(wanted: &str, candidates: impl Iterator<Item = String>) -> String {
    closest(wanted, candidates)
        .map(|c| format!(" (did you mean {c:?}?)"))
        .unwrap_or_default()
}

/// The candidate closest to `wanted` (case aside) within a third of its length (at least one edit).
pub(crate) fn closest(wanted: &str, candidates: impl Iterator<Item = String>) -> Option<String> {
    let lower = wanted.to_lowercase();
    let most = (wanted.chars().count() / 3).max(1);
    candidates
        .filter(|c| c != wanted)
        .map(|c| (strsim::damerau_levenshtein(&lower, &c.to_lowercase()), c))
        .filter(|(d, _)| *d <= most)
        .min()
        .map(|(_, c)| c)
}

/// ` (did you mean "FOLDER/NAME"?)` for the file in the same folder whose name is closest to `path`'s.
fn closest_file(path: &Path) -> String {
    let (Some(name), Some(dir)) = (path.file_name().and_then(|n| n.to_str()), path.parent()) else {
        return String::new();
    };
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    let Ok(entries) = std::fs::read_dir(dir) else {
        return String::new();
    };
    let names = entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .filter_map(|e| e.file_name().into_string().ok());
    closest(name, names)
        .map(|near| format!(" (did you mean {:?}?)", path.with_file_name(near).display().to_string()))
        .unwrap_or_default()
}

#[cfg(test)]
#[path = "preflight_tests.rs"]
mod tests;
