//! Where credential values come from at request time: stored secrets (file vault, environment, OpenBao)
//! and short-lived tokens (OAuth2 client credentials, GitHub App installations), cached until shortly
//! before they expire and never served expired.

use std::time::Duration;

use secrecy::{ExposeSecret, SecretString};

use super::http::HttpClient;
use super::source::cache::TokenCache;
use super::source::github_app::{GitHubApp, Narrowing};
use super::source::oauth2::{ClientAuth, ClientCredentials};
use super::source::{SourceError, Token};
use super::spec::{CredentialSpec, FileVaultSpec, KeySpec, OpenBaoAuthSpec, SecretRef, SecretSource};
use super::vault::file::{FileVault, KeySource};
use super::vault::openbao::{BaoAuth, OpenBao};
use super::vault::{SecretStore, VaultError};
use crate::config::Config;

/// Tokens are refreshed this long before they expire.
const REFRESH_AHEAD: Duration = Duration::from_secs(60);

/// The sources of every configured credential.
pub struct Secrets {
    file: Option<FileVault>,
    openbao: Option<OpenBao>,
    http: HttpClient,
    tokens: TokenCache,
}

/// Open the file vault as configured (creating its key file, 0600, on first use).
pub fn open_vault(spec: &FileVaultSpec) -> Result<FileVault, VaultError> {
    let key = match &spec.key {
        KeySpec::File(p) => KeySource::File(p.clone()),
        KeySpec::Env(v) => KeySource::Env(v.clone()),
    };
    FileVault::open(spec.path.clone(), key)
}

fn refs(spec: &CredentialSpec) -> Vec<&SecretRef> {
    match &spec.source {
        SecretSource::Static(r) => vec![r],
        SecretSource::OAuth2(o) => vec![&o.client_secret],
        SecretSource::GitHubApp(g) => vec![&g.private_key],
    }
}

impl Secrets {
    /// Open what the configured credentials need (the file vault only if one reads from it).
    pub fn new(config: &Config) -> Result<Secrets, String> {
        let all: Vec<&SecretRef> = config.credentials.values().flat_map(refs).collect();
        let file = if all.iter().any(|r| matches!(r, SecretRef::Vault(_))) {
            Some(open_vault(&config.vault).map_err(|e| e.to_string())?)
        } else {
            None
        };
        let http = HttpClient::new(&config.upstream.extra_roots)?;
        let openbao = match &config.openbao {
            None => None,
            Some(spec) => {
                let auth = match &spec.auth {
                    OpenBaoAuthSpec::TokenEnv(var) => BaoAuth::Token(env_secret(var)?),
                    OpenBaoAuthSpec::AppRole {
                        role_id,
                        secret_id_env,
                        mount,
                    } => BaoAuth::AppRole {
                        role_id: role_id.clone(),
                        secret_id: env_secret(secret_id_env)?,
                        mount: mount.clone(),
                    },
                };
                Some(OpenBao::new(spec.addr.clone(), spec.mount.clone(), auth, http.clone()))
            }
        };
        if openbao.is_none() && all.iter().any(|r| matches!(r, SecretRef::OpenBao(_))) {
            return Err("a credential reads from OpenBao but `vault.openbao` is not configured".into());
        }
        Ok(Secrets {
            file,
            openbao,
            http,
            tokens: TokenCache::new(REFRESH_AHEAD, 100_000),
        })
    }

    /// A stored secret. Errors name where it was looked for, never a value.
    pub async fn stored(&self, r: &SecretRef) -> Result<SecretString, String> {
        match r {
            SecretRef::Env(var) => env_secret(var),
            SecretRef::Vault(name) => match &self.file {
                Some(v) => v.get(name).await.map_err(|e| e.to_string()),
                None => Err("the file vault is not open".into()),
            },
            SecretRef::OpenBao(name) => match &self.openbao {
                Some(b) => b.get(name).await.map_err(|e| e.to_string()),
                None => Err("OpenBao is not configured".into()),
            },
        }
    }

    /// The value to apply for `spec` now: a stored secret, or a valid token (fetched or cached).
    pub async fn value(&self, spec: &CredentialSpec) -> Result<SecretString, String> {
        let token = match &spec.source {
            SecretSource::Static(r) => return self.stored(r).await,
            SecretSource::OAuth2(o) => {
                self.tokens
                    .get(&spec.name, || async {
                        let client_secret = self.stored(&o.client_secret).await.map_err(SourceError::Config)?;
                        ClientCredentials {
                            token_url: o.token_url.clone(),
                            client_id: o.client_id.clone(),
                            client_secret,
                            scope: o.scope.clone(),
                            audience: o.audience.clone(),
                            resource: o.resource.clone(),
                            auth: if o.post { ClientAuth::Post } else { ClientAuth::Basic },
                        }
                        .fetch(&self.http)
                        .await
                    })
                    .await
            }
            SecretSource::GitHubApp(g) => {
                self.tokens
                    .get(&spec.name, || async {
                        let key = self.stored(&g.private_key).await.map_err(SourceError::Config)?;
                        let app = GitHubApp {
                            api_base: g.api_base.clone(),
                            app_id: g.app_id.clone(),
                            private_key_pem: key,
                            installation_id: g.installation_id,
                        };
                        let narrow = Narrowing {
                            repositories: g.repositories.clone(),
                            permissions: g.permissions.clone(),
                        };
                        app.fetch(&self.http, &narrow).await
                    })
                    .await
            }
        };
        token
            .map(|t: std::sync::Arc<Token>| t.value.clone())
            .map_err(|e| e.to_string())
    }
}

fn env_secret(var: &str) -> Result<SecretString, String> {
    match std::env::var(var) {
        Ok(v) if !v.is_empty() => Ok(SecretString::from(v)),
        _ => Err(format!("the environment variable {var} is not set")),
    }
}

/// Whether a value is usable in a header (a token with a newline would split the request).
pub fn header_safe(value: &SecretString) -> bool {
    value
        .expose_secret()
        .bytes()
        .all(|b| b == b'\t' || (b' '..=b'~').contains(&b))
}
