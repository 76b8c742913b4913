//! Secrets: where credential values come from at request time. Stored secrets (the file vault, OpenBao:
//! [`vault`], kept between requests by [`stored_cache`]; the environment; files) and short-lived tokens from
//! issuers (OAuth2 client credentials, GitHub App installations, STS sessions: [`issuer`]), cached until
//! shortly before they expire and never served expired. Every value obtained is kept in the [`book`] for the
//! leak scans; what could not be supplied is kept for `/readyz` ([`supply`]); what `check` and the start ask
//! of the sources is [`preflight`] (no network) and [`probe`] (the network).

pub(crate) mod book;
pub(crate) mod custody;
pub(crate) mod issuer;
pub(crate) mod preflight;
pub(crate) mod probe;
mod stored_cache;
pub(crate) mod supply;
pub(crate) mod vault;

use std::sync::Arc;
use std::time::{Duration, Instant};

use secrecy::{ExposeSecret, SecretString};

use crate::config::Config;
use crate::config::credentials::{CredentialSpec, FileVaultSpec, KeySpec, OpenBaoAuthSpec, SecretRef, SecretSource};
use crate::policy::ScopeOverride;
use crate::secrets::book::Book;
use crate::secrets::issuer::cache::TokenCache;
use crate::secrets::issuer::github_app::{GitHubApp, Narrowing};
use crate::secrets::issuer::oauth2::{ClientAuth, ClientCredentials};
use crate::secrets::issuer::sts::AssumeRole;
use crate::secrets::issuer::{IssuerError, Token};
use crate::secrets::stored_cache::{Cached, StoredCache};
use crate::secrets::vault::file::{FileVault, KeySource};
use crate::secrets::vault::openbao::{BaoAuth, OpenBao};
use crate::secrets::vault::{SecretStore, VaultError};
use crate::sigv4::AwsKeys;
use crate::upstream::outbound::HttpClient;

/// Tokens are refreshed this long before they expire.
const REFRESH_AHEAD: Duration = Duration::from_secs(60);

/// The sources of every configured credential.
pub(crate) struct Secrets {
    file: Option<Arc<FileVault>>,
    openbao: Option<Arc<OpenBao>>,
    /// What the file vault and OpenBao gave, kept `vault.cache_ttl`.
    cache: Arc<StoredCache>,
    http: HttpClient,
    tokens: TokenCache,
    metrics: Option<std::sync::Arc<crate::metrics::Metrics>>,
    /// Every value obtained for a credential, for the exfiltration scan and masking.
    pub(crate) book: Book,
    /// Which credentials could not be supplied the last time, for `/readyz`.
    pub(crate) supply: crate::secrets::supply::Supply,
    /// The refresh tokens of `oauth2_refresh` credentials, in the store (`None`: none configured, or a dry run).
    custody: Option<Arc<custody::Custody>>,
}

/// Read a file vault or OpenBao secret from its source.
async fn read(file: Option<&FileVault>, bao: Option<&OpenBao>, r: &SecretRef) -> Result<SecretString, String> {
    match r {
        SecretRef::Vault(name) => match file {
            Some(v) => v.get(name).await.map_err(|e| e.to_string()),
            None => Err("the file vault is not open".into()),
        },
        SecretRef::OpenBao(name) => match bao {
            Some(b) => b.get(name).await.map_err(|e| e.to_string()),
            None => Err("OpenBao is not configured".into()),
        },
        SecretRef::Env(var) => env_secret(var),
        SecretRef::File(path) => file_secret(path),
    }
}

/// Open the file vault as configured (creating its key file, 0600, on first use).
pub(crate) fn open_vault(spec: &FileVaultSpec) -> Result<FileVault, VaultError> {
    FileVault::open(spec.path.clone(), key_source(spec))
}

/// What [`open_vault`] refuses about the vault's folders, without opening it (or creating its key).
pub(crate) fn check_vault_folders(spec: &FileVaultSpec) -> Result<(), VaultError> {
    FileVault::check_folders(&spec.path, &key_source(spec))
}

fn key_source(spec: &FileVaultSpec) -> KeySource {
    match &spec.key {
        KeySpec::File(p) => KeySource::File(p.clone()),
        KeySpec::Env(v) => KeySource::Env(v.clone()),
    }
}

/// The secrets a credential reads.
pub(crate) fn refs(spec: &CredentialSpec) -> Vec<&SecretRef> {
    spec.secret_refs().into_iter().map(|(_, r)| r).collect()
}

impl Secrets {
    /// Open what the configured credentials need (the file vault only if one reads from it).
    pub(crate) fn new(config: &Config) -> Result<Secrets, String> {
        let all: Vec<&SecretRef> = config
            .credentials
            .values()
            .flat_map(refs)
            .chain(config.control.refs())
            .chain(config.approval.webhook.iter().filter_map(|w| w.secret.as_ref()))
            .collect();
        let file = if all.iter().any(|r| matches!(r, SecretRef::Vault(_))) {
            Some(Arc::new(open_vault(&config.vault).map_err(|e| e.to_string())?))
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
                Some(Arc::new(OpenBao::new(
                    spec.addr.clone(),
                    spec.mount.clone(),
                    auth,
                    http.clone(),
                )))
            }
        };
        if openbao.is_none() && all.iter().any(|r| matches!(r, SecretRef::OpenBao(_))) {
            return Err("a credential reads from OpenBao but `vault.openbao` is not configured".into());
        }
        Ok(Secrets {
            file,
            openbao,
            cache: Arc::new(StoredCache::new(config.secret_cache)),
            http,
            tokens: TokenCache::new(REFRESH_AHEAD, 100_000),
            metrics: None,
            book: Book::default(),
            supply: crate::secrets::supply::Supply::default(),
            custody: None,
        })
    }

    /// Sources that open nothing: every vault and OpenBao read is unavailable (for dry runs).
    pub(crate) fn inert(config: &Config) -> Result<Secrets, String> {
        Ok(Secrets {
            file: None,
            openbao: None,
            cache: Arc::new(StoredCache::new(config.secret_cache)),
            http: HttpClient::new(&config.upstream.extra_roots)?,
            tokens: TokenCache::new(REFRESH_AHEAD, 16),
            metrics: None,
            book: Book::default(),
            supply: crate::secrets::supply::Supply::default(),
            custody: None,
        })
    }

    /// Count token mints (and failures) in these metrics.
    pub(crate) fn set_metrics(&mut self, metrics: std::sync::Arc<crate::metrics::Metrics>) {
        self.metrics = Some(metrics);
    }

    pub(super) fn minted(&self, credential: &str, ok: bool) {
        if let Some(m) = &self.metrics {
            m.token_mint(credential, ok);
        }
    }

    /// A stored secret. Errors name where it was looked for, never a value.
    pub(crate) async fn stored(&self, r: &SecretRef) -> Result<SecretString, String> {
        match r {
            SecretRef::Env(var) => env_secret(var),
            SecretRef::File(path) => file_secret(path),
            SecretRef::Vault(_) | SecretRef::OpenBao(_) => self.cached(r).await,
        }
    }

    /// A file vault or OpenBao secret, through the cache (see [`StoredCache`]).
    async fn cached(&self, r: &SecretRef) -> Result<SecretString, String> {
        let key = format!("{r:?}");
        match self.cache.lookup(&key, Instant::now()) {
            Cached::Fresh(value) => Ok(value),
            Cached::RefreshAhead(value) => {
                let (file, bao, cache, r) = (self.file.clone(), self.openbao.clone(), self.cache.clone(), r.clone());
                match tokio::runtime::Handle::try_current() {
                    Ok(runtime) => {
                        runtime.spawn(async move {
                            match read(file.as_deref(), bao.as_deref(), &r).await {
                                Ok(fresh) => cache.put(&key, fresh, Instant::now()),
                                Err(e) => {
                                    tracing::warn!("cannot read {key} again ({e}); the value read last is used until vault.cache_ttl");
                                    cache.refresh_failed(&key);
                                }
                            }
                        });
                    }
                    Err(_) => self.cache.refresh_failed(&key),
                }
                Ok(value)
            }
            Cached::Miss => {
                let value = read(self.file.as_deref(), self.openbao.as_deref(), r).await?;
                self.cache.put(&key, value.clone(), Instant::now());
                Ok(value)
            }
        }
    }

    /// The value to apply for `spec` now: a stored secret, or a valid token (fetched or cached). `narrowed`
    /// is a policy's narrowing of a token credential: its tokens are cached apart from other policies'.
    pub(crate) async fn value(
        &self,
        spec: &CredentialSpec,
        narrowed: Option<(&str, &ScopeOverride)>,
    ) -> Result<SecretString, String> {
        let value = self.value_now(spec, narrowed).await;
        self.supply.note(&spec.name, &value);
        value
    }

    pub(super) async fn value_now(
        &self,
        spec: &CredentialSpec,
        narrowed: Option<(&str, &ScopeOverride)>,
    ) -> Result<SecretString, String> {
        let key = match narrowed {
            Some((policy, _)) => format!("{}\u{0}{policy}", spec.name),
            None => spec.name.clone(),
        };
        let o = narrowed.map(|(_, o)| o.clone()).unwrap_or_default();
        let token = match &spec.source {
            SecretSource::Static(r) => {
                let value = self.stored(r).await?;
                self.book.record(&spec.name, &value);
                return Ok(value);
            }
            SecretSource::OAuth2(spec_o) => {
                self.tokens
                    .get(&key, || async {
                        let client_secret = self.stored(&spec_o.client_secret).await.map_err(IssuerError::Config)?;
                        ClientCredentials {
                            token_url: spec_o.token_url.clone(),
                            client_id: spec_o.client_id.clone(),
                            client_secret,
                            scope: narrowed_or(&o.scope, &spec_o.scope),
                            audience: narrowed_or(&o.audience, &spec_o.audience),
                            resource: narrowed_or(&o.resource, &spec_o.resource),
                            auth: if spec_o.post {
                                ClientAuth::Post
                            } else {
                                ClientAuth::Basic
                            },
                        }
                        .fetch(&self.http)
                        .await
                        .inspect(|_| self.minted(&spec.name, true))
                        .inspect_err(|_| self.minted(&spec.name, false))
                    })
                    .await
            }
            SecretSource::OAuth2Refresh(r) => self.held(spec, r, &key).await,
            SecretSource::Aws(_) => {
                // Applied by signing, never as a value: the keys are `aws_keys`'.
                let keys = self.aws_keys(spec, narrowed).await?;
                return Ok(keys.secret);
            }
            SecretSource::GitHubApp(g) => {
                self.tokens
                    .get(&key, || async {
                        let pem = self.stored(&g.private_key).await.map_err(IssuerError::Config)?;
                        let app = GitHubApp {
                            api_base: g.api_base.clone(),
                            app_id: g.app_id.clone(),
                            private_key_pem: pem,
                            installation_id: g.installation_id,
                        };
                        let narrow = Narrowing {
                            repositories: o.repositories.clone().unwrap_or_else(|| g.repositories.clone()),
                            permissions: o.permissions.clone().unwrap_or_else(|| g.permissions.clone()),
                        };
                        app.fetch(&self.http, &narrow)
                            .await
                            .inspect(|_| self.minted(&spec.name, true))
                            .inspect_err(|_| self.minted(&spec.name, false))
                    })
                    .await
            }
        };
        let value = token
            .map(|t: std::sync::Arc<Token>| t.value.clone())
            .map_err(|e| e.to_string())?;
        self.book.record(&spec.name, &value);
        Ok(value)
    }
}

impl Secrets {
    /// The AWS keys to sign with for `spec` now: its stored keys, or the keys of the role it assumes with
    /// them (cached, refreshed ahead of expiry; one set per policy that narrows it with a session policy).
    /// Every part is learnt by the exfiltration scan.
    pub(crate) async fn aws_keys(
        &self,
        spec: &CredentialSpec,
        narrowed: Option<(&str, &ScopeOverride)>,
    ) -> Result<AwsKeys, String> {
        let keys = self.aws_keys_now(spec, narrowed).await;
        self.supply.note(&spec.name, &keys);
        keys
    }

    pub(super) async fn aws_keys_now(
        &self,
        spec: &CredentialSpec,
        narrowed: Option<(&str, &ScopeOverride)>,
    ) -> Result<AwsKeys, String> {
        let SecretSource::Aws(aws) = &spec.source else {
            return Err(format!("credential {} has no AWS keys", spec.name));
        };
        let stored = async || -> Result<AwsKeys, String> {
            let id = self.stored(&aws.access_key_id).await?;
            let secret = self.stored(&aws.secret_access_key).await?;
            let token = match &aws.session_token {
                Some(t) => Some(self.stored(t).await?),
                None => None,
            };
            for value in [&id, &secret].into_iter().chain(token.as_ref()) {
                self.book.record(&spec.name, value);
            }
            Ok(AwsKeys {
                id: id.expose_secret().to_string(),
                secret,
                token,
            })
        };
        let Some(role) = &aws.assume_role else {
            return stored().await;
        };
        let policy = narrowed.and_then(|(_, o)| o.session_policy.as_deref());
        let key = match (narrowed, policy) {
            (Some((name, _)), Some(_)) => format!("{}\u{0}{name}", spec.name),
            _ => spec.name.clone(),
        };
        let token = self
            .tokens
            .get(&key, || async {
                let base = stored().await.map_err(IssuerError::Config)?;
                AssumeRole {
                    endpoint: &role.endpoint,
                    region: &role.region,
                    role_arn: &role.role_arn,
                    session_name: &role.session_name,
                    duration_secs: role.duration.as_secs(),
                    external_id: role.external_id.as_deref(),
                    session_policy: policy.or(role.session_policy.as_deref()),
                }
                .fetch(&self.http, &base)
                .await
                .map(|(keys, expires_at)| Token {
                    value: encode(&keys),
                    expires_at: Some(expires_at),
                })
                .inspect(|_| self.minted(&spec.name, true))
                .inspect_err(|_| self.minted(&spec.name, false))
            })
            .await
            .map_err(|e| e.to_string())?;
        let keys = decode(&token.value).ok_or("the cached AWS keys do not read back")?;
        let id = SecretString::from(keys.id.clone());
        for value in [&id, &keys.secret].into_iter().chain(keys.token.as_ref()) {
            self.book.record(&spec.name, value);
        }
        Ok(keys)
    }
}

/// AWS keys as one cached value (the token cache keeps one secret per key).
fn encode(keys: &AwsKeys) -> SecretString {
    let token = keys.token.as_ref().map(|t| t.expose_secret().to_string());
    let value = serde_json::json!([keys.id, keys.secret.expose_secret(), token]);
    SecretString::from(value.to_string())
}

fn decode(value: &SecretString) -> Option<AwsKeys> {
    let (id, secret, token): (String, String, Option<String>) = serde_json::from_str(value.expose_secret()).ok()?;
    Some(AwsKeys {
        id,
        secret: SecretString::from(secret),
        token: token.map(SecretString::from),
    })
}

fn narrowed_or(policy: &Option<String>, credential: &Option<String>) -> Option<String> {
    policy.clone().or_else(|| credential.clone())
}

pub(crate) fn env_secret(var: &str) -> Result<SecretString, String> {
    match std::env::var(var) {
        Ok(v) if !v.is_empty() => Ok(SecretString::from(v)),
        Ok(_) => Err(format!("the environment variable {var} is empty")),
        _ => Err(format!("the environment variable {var} is not set")),
    }
}

/// A secret kept in a file (a mounted Kubernetes secret, say); one trailing newline is not part of it.
pub(crate) fn file_secret(path: &std::path::Path) -> Result<SecretString, String> {
    match std::fs::read_to_string(path) {
        Ok(text) => {
            let value = text.strip_suffix('\n').unwrap_or(&text);
            let value = value.strip_suffix('\r').unwrap_or(value);
            if value.is_empty() {
                Err(format!("the file {} is empty", path.display()))
            } else {
                Ok(SecretString::from(value.to_string()))
            }
        }
        Err(e) => Err(format!("cannot read the secret file {}: {e}", path.display())),
    }
}

/// Whether a value is usable in a header (a token with a newline would split the request).
pub(crate) fn header_safe(value: &SecretString) -> bool {
    value
        .expose_secret()
        .bytes()
        .all(|b| b == b'\t' || (b' '..=b'~').contains(&b))
}

#[cfg(test)]
#[path = "mod_tests.rs"]
mod tests;
