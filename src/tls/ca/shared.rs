//! The sandboxes' CAs kept in PostgreSQL (`control.store: postgres://…`), so that replicas on different hosts
//! share them without a shared folder. The certificate is stored as PEM; the key is sealed under
//! `control.store_key` for its row. Each replica holds every CA in memory: loaded at start, on announcement
//! ([`crate::pg::listen::Event::Ca`]), and when it makes one; the request path never reads the database.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, RwLock};

use crate::names::SandboxId;
use crate::pg::listen::{Event, announce};
use crate::pg::{Db, DbError, Sealer};
use crate::tls::ca::error::CaError;
use crate::tls::ca::sandbox_ca::{SandboxCa, generate};
use crate::tls::scope::Scope;

/// The `cas` table and this replica's copy of it.
pub(crate) struct SharedCas {
    db: Arc<Db>,
    sealer: Sealer,
    known: RwLock<HashMap<SandboxId, Arc<SandboxCa>>>,
}

impl From<DbError> for CaError {
    fn from(e: DbError) -> Self {
        CaError::Store(e.to_string())
    }
}

/// A name for error messages where the file store would name a path.
fn row(sandbox: &SandboxId, part: &str) -> PathBuf {
    PathBuf::from(format!("postgres:cas/{sandbox}/{part}"))
}

/// What seals a sandbox's key: the row it belongs to.
fn aad(sandbox: &SandboxId) -> String {
    format!("cas:{sandbox}")
}

impl SharedCas {
    pub(crate) fn new(db: Arc<Db>, sealer: Sealer) -> SharedCas {
        SharedCas {
            db,
            sealer,
            known: RwLock::new(HashMap::new()),
        }
    }

    /// The CA of `sandbox`, if this replica holds it.
    pub(crate) fn get(&self, sandbox: &SandboxId) -> Option<Arc<SandboxCa>> {
        self.known
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(sandbox)
            .cloned()
    }

    /// Re-read every CA.
    pub(crate) async fn load_all(&self) -> Result<(), CaError> {
        let client = self.db.client().await?;
        let r = client.query("SELECT sandbox, cert_pem, key_sealed FROM cas", &[]).await;
        let rows = self.db.outcome("reading the CAs", r)?;
        let mut all = HashMap::with_capacity(rows.len());
        for r in &rows {
            let text: String = r.get(0);
            let sandbox = match SandboxId::parse(&text) {
                Ok(sandbox) => sandbox,
                Err(e) => {
                    tracing::error!("cannot use a CA kept in the database: {e}");
                    continue;
                }
            };
            match self.open(&sandbox, r.get(1), r.get(2)) {
                Ok(ca) => {
                    all.insert(sandbox, Arc::new(ca));
                }
                Err(e) => tracing::error!(sandbox = %sandbox, "cannot use the CA kept in the database: {e}"),
            }
        }
        *self.known.write().unwrap_or_else(|p| p.into_inner()) = all;
        Ok(())
    }

    /// Re-read the CA of `sandbox` (announced as made or replaced, or needed and not held).
    pub(crate) async fn learn(&self, sandbox: &SandboxId) -> Result<Option<Arc<SandboxCa>>, CaError> {
        let client = self.db.client().await?;
        let r = client
            .query_opt(
                "SELECT cert_pem, key_sealed FROM cas WHERE sandbox = $1",
                &[&sandbox.as_str()],
            )
            .await;
        let found = self.db.outcome("reading a CA", r)?;
        let mut known = self.known.write().unwrap_or_else(|p| p.into_inner());
        match found {
            Some(r) => {
                let ca = Arc::new(self.open(sandbox, r.get(0), r.get(1))?);
                known.insert(sandbox.clone(), ca.clone());
                Ok(Some(ca))
            }
            None => {
                known.remove(sandbox);
                Ok(None)
            }
        }
    }

    /// The CA of `sandbox`, made for `scope` if the database holds none. Replicas racing to make one end up
    /// with the same CA: the first insert wins and every one reads back what is stored.
    pub(crate) async fn ensure(&self, sandbox: &SandboxId, scope: &Scope) -> Result<Arc<SandboxCa>, CaError> {
        if let Some(ca) = self.get(sandbox) {
            return Ok(ca);
        }
        if let Some(ca) = self.learn(sandbox).await? {
            return Ok(ca);
        }
        self.install(sandbox, scope, false).await
    }

    /// Replace the CA of `sandbox` with a new one for `scope` (the old key is gone from the database).
    pub(crate) async fn rotate(&self, sandbox: &SandboxId, scope: &Scope) -> Result<Arc<SandboxCa>, CaError> {
        self.install(sandbox, scope, true).await
    }

    async fn install(&self, sandbox: &SandboxId, scope: &Scope, replace: bool) -> Result<Arc<SandboxCa>, CaError> {
        let scope = scope.normalized()?;
        let (cert_pem, key_pem) = generate(sandbox, &scope)?;
        // Check the pair exactly as a later load will, before it is stored.
        SandboxCa::from_pem(
            sandbox,
            cert_pem.clone(),
            &key_pem,
            &row(sandbox, "cert"),
            &row(sandbox, "key"),
        )?;
        let sealed = self
            .sealer
            .seal(&aad(sandbox), key_pem.as_bytes())
            .map_err(CaError::Store)?;
        let sql = if replace {
            "INSERT INTO cas (sandbox, cert_pem, key_sealed, created) VALUES ($1, $2, $3, $4)
             ON CONFLICT (sandbox) DO UPDATE SET cert_pem = excluded.cert_pem, key_sealed = excluded.key_sealed,
               created = excluded.created"
        } else {
            "INSERT INTO cas (sandbox, cert_pem, key_sealed, created) VALUES ($1, $2, $3, $4)
             ON CONFLICT (sandbox) DO NOTHING"
        };
        let what = "storing a CA";
        let mut client = self.db.client().await?;
        let tx = self.db.outcome(what, client.transaction().await)?;
        let now = crate::pg::now();
        self.db.outcome(
            what,
            tx.execute(sql, &[&sandbox.as_str(), &cert_pem, &sealed, &now]).await,
        )?;
        self.db
            .outcome(what, announce(&tx, &Event::Ca(sandbox.clone())).await)?;
        self.db.outcome(what, tx.commit().await)?;
        drop(client);
        self.learn(sandbox)
            .await?
            .ok_or_else(|| CaError::Store(format!("the CA of {sandbox:?} vanished right after it was stored")))
    }

    fn open(&self, sandbox: &SandboxId, cert_pem: String, sealed: Vec<u8>) -> Result<SandboxCa, CaError> {
        let key = self.sealer.open(&aad(sandbox), &sealed).map_err(CaError::Store)?;
        let key = String::from_utf8(key).map_err(|_| CaError::Store("a CA key that is not PEM".into()))?;
        SandboxCa::from_pem(sandbox, cert_pem, &key, &row(sandbox, "cert"), &row(sandbox, "key"))
    }
}
