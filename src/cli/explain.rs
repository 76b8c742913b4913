//! `cordon explain`: a dry run of the pipeline for a request from a sandbox, declared in the file or created at
//! run time (then its user and policy come from the running cordon's admin API).

use std::process::ExitCode;

use super::args::{ConfigArg, load};
use super::sandbox::{AdminArgs, client};
use crate::identity::SandboxSpec;
use crate::names::SandboxId;

/// Explain `method url` from sandbox `id` (as text, or JSON when `json`); exit 0 when allowed, 1 when refused,
/// 2 when it cannot say.
pub(crate) fn main(arg: &ConfigArg, id: &str, method: &str, url: &str, json: bool) -> ExitCode {
    let mut config = match load(arg) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("cordon: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    // A sandbox created at run time is not in the file: its user and policy come from the admin API.
    if config.sandbox(id).is_none() && config.listen.admin.is_some() {
        match rt.block_on(run_time_spec(&AdminArgs::of_config(arg.config.clone()), id, &config)) {
            Ok(Some((spec, own))) => {
                eprintln!(
                    "cordon: {id} is a sandbox created at run time (user {}, policy {}), from the admin API",
                    spec.user, spec.policy
                );
                if let Some(own) = own {
                    config.policies.insert(spec.policy.clone(), std::sync::Arc::new(own));
                }
                config.sandboxes.push(spec);
            }
            Ok(None) => {}
            // Not reachable: say so, and go on to the file's sandboxes (the error below lists them).
            Err(e) => eprintln!("cordon: the admin API was not asked about {id:?}: {e}"),
        }
    }
    match rt.block_on(crate::proxy::entry::explain::explain(&config, id, method, url)) {
        Ok(e) => {
            if !json {
                out!("{}", painted(&e.text, e.allowed));
            } else {
                match serde_json::to_string_pretty(&e.json) {
                    Ok(text) => outln!("{text}"),
                    Err(e) => {
                        eprintln!("cordon: cannot write the explanation as JSON: {e}");
                        return ExitCode::from(2);
                    }
                }
            }
            if let Some(known) = other_case(method) {
                eprintln!(
                    "cordon: {method:?} is not {known}: methods are case-sensitive (RFC 9110), and cordon decides on \
                     the method as the client sends it"
                );
            }
            if e.allowed {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            }
        }
        Err(msg) => {
            eprintln!("cordon: {msg}");
            ExitCode::from(2)
        }
    }
}

/// The explanation with its verdict (the last line, `verdict  ALLOW` or `verdict  DENY`) in colour where
/// standard output takes it.
fn painted(text: &str, allowed: bool) -> String {
    let paint = crate::cli::style::Paint::stdout();
    let Some((head, tail)) = text.rsplit_once("verdict  ") else {
        return text.to_owned();
    };
    let word = tail.trim_end();
    let shown = if allowed { paint.good(word) } else { paint.bad(word) };
    format!("{head}verdict  {shown}{}", &tail[word.len()..])
}

/// The known method `method` spells in another case (`get` → GET), if it does.
fn other_case(method: &str) -> Option<&'static str> {
    crate::policy::allowlist::KNOWN_METHODS
        .iter()
        .copied()
        .find(|known| *known != method && known.eq_ignore_ascii_case(method))
}

/// The run-time sandbox `id` as a declared one would be (no token, no source ranges), if the admin API knows a
/// live one; `Ok(None)` if it does not.
/// A run-time sandbox as the admin API shows it, with its own policy compiled against this file (under the name
/// `BASE+inline`) when it has one.
async fn run_time_spec(
    args: &AdminArgs,
    id: &str,
    config: &crate::config::Config,
) -> Result<Option<(SandboxSpec, Option<crate::policy::Policy>)>, String> {
    let admin = client(args)?;
    let shown = match admin.show(id).await {
        Ok(v) => v,
        Err(crate::cli::admin_client::ClientError::Api { status, .. }) if status == http::StatusCode::NOT_FOUND => {
            return Ok(None);
        }
        Err(e) => return Err(format!("cannot ask the admin API about {id:?}: {e}")),
    };
    let field = |name: &str| shown[name].as_str().map(str::to_owned);
    let own = match &shown["inline_policy"] {
        serde_json::Value::Null => None,
        doc => Some(
            crate::config::inline_policy(config, id, "inline_policy", doc)
                .map_err(|errors| {
                    let all: Vec<String> = errors.iter().map(|e| format!("{}: {}", e.path, e.message)).collect();
                    format!("{id}'s own policy does not hold under this file: {}", all.join("; "))
                })?
                .policy,
        ),
    };
    match (field("user"), field("policy")) {
        (Some(user), Some(policy)) => Ok(Some((
            SandboxSpec {
                id: SandboxId::parse(id).map_err(|e| e.to_string())?,
                user,
                token_sha256: None,
                source_cidrs: Vec::new(),
                policy: if own.is_some() {
                    format!("{policy}+inline")
                } else {
                    policy
                },
            },
            own,
        ))),
        _ => Err(format!(
            "the admin API's answer about {id:?} names no user or policy: {shown}"
        )),
    }
}
