//! Opening custody for a configuration: the store `control.store` names (the SQLite file, or PostgreSQL), sealed
//! under `control.store_key`; and what `/readyz` learns from it at once (a sign-in already dead).

use std::sync::Arc;

use super::Custody;
use crate::config::Config;
use crate::config::credentials::{CredentialSpec, OAuth2RefreshSpec, SecretSource};
use crate::secrets::Secrets;
use crate::secrets::issuer::{IssuerError, Token};

impl Secrets {
    /// Open custody for `config`'s `oauth2_refresh` credentials (nothing when it has none), and note in the
    /// supply record (`/readyz`) each whose sign-in is already dead.
    pub(crate) async fn open_custody(
        &mut self,
        config: &Config,
        metrics: Option<Arc<crate::metrics::Metrics>>,
    ) -> Result<(), String> {
        let held: Vec<&str> = config
            .credentials
            .values()
            .filter(|c| matches!(c.source, SecretSource::OAuth2Refresh(_)))
            .map(|c| c.name.as_str())
            .collect();
        if held.is_empty() {
            return Ok(());
        }
        let key_ref = config
            .control
            .store_key()
            .ok_or("an oauth2_refresh credential needs control.store_key")?;
        let key = self
            .stored(key_ref)
            .await
            .map_err(|e| format!("control.store_key: {e}"))?;
        let mut custody = match (&config.control.postgres, &config.control.store) {
            (Some(pg), _) => {
                let password = match &pg.password {
                    Some(r) => Some(
                        self.stored(r)
                            .await
                            .map_err(|e| format!("control.store_password: {e}"))?,
                    ),
                    None => None,
                };
                let db = crate::pg::Db::connect(crate::pg::PgTarget {
                    dsn: &pg.dsn,
                    password,
                    roots: &pg.roots,
                })
                .await?;
                Custody::pg(db, &key)?
            }
            (None, Some(path)) => Custody::sqlite(path, &key)?,
            (None, None) => return Err("an oauth2_refresh credential needs control.store".into()),
        };
        if let Some(m) = metrics {
            custody.set_metrics(m);
        }
        for name in held {
            match custody.dead(name).await {
                Ok(Some(why)) => {
                    let known = custody.found_dead(name, &why);
                    self.supply.note::<()>(name, &Err(known.to_string()));
                }
                Ok(None) => {}
                Err(e) => tracing::warn!(credential = name, "cannot read its refresh token's state: {e}"),
            }
        }
        self.set_custody(Arc::new(custody));
        Ok(())
    }
}

impl Secrets {
    /// Keep the refresh tokens of `oauth2_refresh` credentials in `custody`.
    pub(crate) fn set_custody(&mut self, custody: Arc<Custody>) {
        self.custody = Some(custody);
    }

    /// Where the refresh tokens are kept, if any credential has one.
    pub(crate) fn custody(&self) -> Option<&Arc<Custody>> {
        self.custody.as_ref()
    }

    /// Forget `credential`'s cached token (a new refresh token was seeded: the next request refreshes with it).
    pub(crate) async fn forget_token(&self, credential: &str) {
        self.tokens.invalidate(credential).await;
    }

    /// A valid access token of the held sign-in `spec` (cache key `key`): cached until shortly before it
    /// expires, then refreshed through custody.
    pub(in crate::secrets) async fn held(
        &self,
        spec: &CredentialSpec,
        held: &OAuth2RefreshSpec,
        key: &str,
    ) -> Result<Arc<Token>, IssuerError> {
        // SECURITY: a sign-in found dead refuses at once (never a token refreshed before it died, never the
        // placeholder passed on), until it is seeded again.
        let dead = || self.custody.as_ref().and_then(|c| c.known_dead(&spec.name));
        if let Some(why) = dead() {
            self.tokens.invalidate(key).await;
            return Err(IssuerError::SignIn(why));
        }
        let token = self
            .tokens
            .get(key, || async {
                let Some(custody) = &self.custody else {
                    return Err(IssuerError::SignIn(
                        "the store that keeps the refresh token is not open here (`cordon run` opens it)".to_string(),
                    ));
                };
                let secret = match &held.client_secret {
                    Some(s) => Some(self.stored(s).await.map_err(IssuerError::Config)?),
                    None => None,
                };
                custody
                    .access(&spec.name, held, secret, &self.http)
                    .await
                    .inspect_err(|_| self.minted(&spec.name, false))
            })
            .await;
        if let Some(why) = dead() {
            self.tokens.invalidate(key).await;
            return Err(IssuerError::SignIn(why));
        }
        token
    }
}
