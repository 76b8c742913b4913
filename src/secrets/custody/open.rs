//! Opening custody for a configuration: the store `control.store` names (the SQLite file, or PostgreSQL), sealed
//! under `control.store_key`; and what `/readyz` learns from it at once (a sign-in already dead).

use std::sync::Arc;

use super::Custody;
use crate::config::Config;
use crate::config::credentials::SecretSource;
use crate::secrets::Secrets;

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
