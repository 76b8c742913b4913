//! Opening the control plane's store: SQLite (or memory) as it always was, or a PostgreSQL store shared with
//! other replicas, with its CAs, its replica registry, the byte counts budgets are enforced on, and the
//! listener whose announcements [`super::start`] applies.

use std::sync::Arc;

use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};
use tokio_util::sync::CancellationToken;

use crate::approval::SharedApprovals;
use crate::config::Config;
use crate::control::Control;
use crate::generation::Generation;
use crate::limits::SharedBytes;
use crate::pg::listen::{self, Event};
use crate::pg::replicas::Registry;
use crate::pg::{Db, PgTarget, Sealer, StoreState};
use crate::tls::ca::{SandboxCas, SharedCas};

/// The PostgreSQL store as this replica uses it.
pub(crate) struct SharedStore {
    pub(crate) db: Arc<Db>,
    pub(crate) registry: Registry,
    /// Byte counts shared with the other replicas, which budgets are enforced on.
    pub(crate) bytes: Arc<SharedBytes>,
    stop: CancellationToken,
}

impl Drop for SharedStore {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

impl SharedStore {
    /// Up or down, and since when.
    pub(crate) fn state(&self) -> StoreState {
        self.db.state()
    }

    /// The held approvals and grants shared through this store, as this replica takes part in them; each ask
    /// waits at most `timeout`.
    pub(crate) fn approvals(&self, timeout: std::time::Duration) -> SharedApprovals {
        SharedApprovals::new(self.db.clone(), self.registry.id().to_owned(), timeout)
    }
}

/// What the control plane opened.
pub(crate) struct StoreOpened {
    pub(crate) control: Control,
    pub(crate) cas: SandboxCas,
    pub(crate) shared: Option<Arc<SharedStore>>,
    /// What the listener hears, for [`super::start`].
    pub(crate) events: Option<UnboundedReceiver<Event>>,
}

/// Open the store `config` names: SQLite (or memory) as before, or PostgreSQL with its CAs, registry and
/// listener.
/// Run-time sandboxes' credentials are signed with `control.signing_key` (read from its secret source).
pub(crate) async fn open(config: &Config, generation: &Generation) -> Result<StoreOpened, String> {
    let key = match &config.control.signing_key {
        None => {
            // Without the admin API no sandbox is made at run time, so there is nothing to sign for others.
            if config.listen.admin.is_some() {
                tracing::warn!(
                    "control.signing_key is not set: run-time sandboxes' credentials are signed with a key that \
                     dies with this process, and no other replica accepts them"
                );
            }
            None
        }
        Some(r) => {
            crate::generation::generate_if_file(r)?;
            let key = generation.credentials.secrets().stored(r).await;
            Some(key.map_err(|e| format!("control.signing_key: {e}"))?)
        }
    };
    let Some(pg) = &config.control.postgres else {
        let control = Control::open(config.control.store.as_deref(), key)?;
        if config.control.store.is_none() {
            tracing::info!("control.store is not set: sandboxes created at run time live in memory only");
        }
        return Ok(StoreOpened {
            control,
            cas: SandboxCas::new(config.ca.dir.clone(), config.rotate_command()),
            shared: None,
            events: None,
        });
    };
    let (db, sealer) = connect(pg, generation.credentials.secrets()).await?;
    let stop = CancellationToken::new();
    let (tx, events) = unbounded_channel();
    // Listening before the first read: nothing written in between is missed.
    tokio::spawn(listen::run(db.clone(), tx, stop.clone()));
    let control = Control::open_shared(db.clone(), key).await?;
    let cas = SandboxCas::shared(
        config.ca.dir.clone(),
        config.rotate_command(),
        SharedCas::new(db.clone(), sealer),
    );
    let in_db = cas.in_db().ok_or("the CA store is not shared")?;
    in_db.load_all().await.map_err(|e| e.to_string())?;
    let registry = Registry::new(db.clone())?;
    registry.beat().await.map_err(|e| e.to_string())?;
    tracing::info!(
        replica = registry.id(),
        store = db.location(),
        "sharing state through PostgreSQL"
    );
    Ok(StoreOpened {
        control,
        cas,
        shared: Some(Arc::new(SharedStore {
            db,
            registry,
            bytes: Arc::new(SharedBytes::new(config.limits.rates.budget_window)),
            stop,
        })),
        events: Some(events),
    })
}

/// Connect to the PostgreSQL store `pg` (its password and key read from their secret sources) and make the sealer
/// of CA keys.
pub(crate) async fn connect(
    pg: &crate::config::PostgresConfig,
    secrets: &crate::secrets::Secrets,
) -> Result<(Arc<Db>, Sealer), String> {
    let password = match &pg.password {
        Some(r) => Some(
            secrets
                .stored(r)
                .await
                .map_err(|e| format!("control.store_password: {e}"))?,
        ),
        None => None,
    };
    let key = secrets
        .stored(&pg.key)
        .await
        .map_err(|e| format!("control.store_key: {e}"))?;
    let sealer = Sealer::new(&key)?;
    let db = Db::connect(PgTarget {
        dsn: &pg.dsn,
        password,
        roots: &pg.roots,
    })
    .await?;
    Ok((db, sealer))
}
