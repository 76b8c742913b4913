//! The credentials whose sources need the network — OpenBao, an OAuth2 token endpoint, STS (an AWS role),
//! a GitHub App — asked once each, the way a request would ask: by `cordon check --probe`, which prints each
//! result, and at `cordon run`'s start, where a failure is a warning naming the credential (start goes on:
//! the source may come back, and a request that needs it fails until it does). Nothing here runs without
//! one of those two; `cordon check` alone does no network.

use std::time::Duration;

use crate::config::Config;
use crate::config::credentials::{CredentialSpec, SecretRef, SecretSource};
use crate::secrets::Secrets;

/// How long one probe may take.
pub(crate) const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

/// What a credential reaches over the network to be supplied, in a few words; `None` when it needs nothing
/// but local files and variables (checked before start instead, see [`crate::secrets::preflight`]).
pub(crate) fn reaches(spec: &CredentialSpec, config: &Config) -> Option<String> {
    let bao = || match &config.openbao {
        Some(b) => format!("OpenBao {}", b.addr),
        None => "OpenBao".to_string(),
    };
    let by_bao = spec
        .secret_refs()
        .iter()
        .any(|(_, r)| matches!(r, SecretRef::OpenBao(_)));
    let own = match &spec.source {
        SecretSource::OAuth2(o) => Some(format!("token endpoint {}", o.token_url)),
        SecretSource::GitHubApp(g) => Some(format!("GitHub App {} at {}", g.app_id, g.api_base)),
        SecretSource::Aws(a) => a.assume_role.as_ref().map(|r| format!("STS {}", r.endpoint)),
        // A held sign-in is not probed: a probe would rotate its refresh token, and `check` has no store open;
        // its state is read from the store at start instead (`/readyz`).
        SecretSource::Static(_) | SecretSource::OAuth2Refresh(_) => None,
    };
    match (own, by_bao) {
        (Some(own), true) => Some(format!("{}, {own}", bao())),
        (Some(own), false) => Some(own),
        (None, true) => Some(bao()),
        (None, false) => None,
    }
}

/// One credential's probe: its name, what it reaches, and how it went.
pub(crate) struct Probed {
    /// The credential.
    pub(crate) name: String,
    /// What it reaches ([`reaches`]).
    pub(crate) reaches: String,
    /// `Ok`, or the error a request would have met.
    pub(crate) result: Result<(), String>,
}

/// Ask every credential of `config` that needs the network for its value once, at most [`PROBE_TIMEOUT`]
/// each, all at once. What is obtained is kept as a request would keep it (a token is cached until shortly
/// before it expires), but is not counted in `/readyz`'s record of supply: that is what requests met.
pub(crate) async fn probe_all(secrets: &Secrets, config: &Config) -> Vec<Probed> {
    let probes = config.credentials.values().filter_map(|spec| {
        let reaches = reaches(spec, config)?;
        Some(async move {
            Probed {
                name: spec.name.clone(),
                reaches,
                result: probe(secrets, spec).await,
            }
        })
    });
    futures_util::future::join_all(probes).await
}

/// One request's worth of supplying `spec`.
async fn probe(secrets: &Secrets, spec: &CredentialSpec) -> Result<(), String> {
    let attempt = async {
        match &spec.source {
            SecretSource::Aws(_) => secrets.aws_keys_now(spec, None).await.map(drop),
            _ => secrets.value_now(spec, None).await.map(drop),
        }
    };
    match tokio::time::timeout(PROBE_TIMEOUT, attempt).await {
        Ok(result) => result,
        Err(_) => Err(format!(
            "no answer within {}",
            humantime::format_duration(PROBE_TIMEOUT)
        )),
    }
}
