//! This replica's part in a PostgreSQL store: opening it, applying what other replicas announce, the
//! heartbeat, and learning a sandbox this replica has not heard of yet. With a SQLite store (or none) there is
//! nothing to share and the control plane opens as it always did.

use std::sync::{Arc, Weak};
use std::time::Duration;

use secrecy::SecretString;
use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};
use tokio_util::sync::CancellationToken;

use super::ProxyState;
use crate::config::Config;
use crate::control::Control;
use crate::generation::Generation;
use crate::pg::listen::{self, Event};
use crate::pg::replicas::{HEARTBEAT, Registry};
use crate::pg::{Db, Sealer, StoreState, Target};
use crate::tls::cas::{SandboxCas, SharedCas};

/// How often everything is re-read even without a missed notification (the safety net).
const RESYNC_EVERY: Duration = Duration::from_secs(30);
/// The longest a request waits to learn a sandbox created on another replica a moment ago.
const LEARN_TIMEOUT: Duration = Duration::from_secs(2);

/// The PostgreSQL store as this replica uses it.
pub(crate) struct SharedStore {
    pub(crate) db: Arc<Db>,
    pub(crate) registry: Registry,
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
}

/// What the control plane opened.
pub(super) struct Opened {
    pub(super) control: Control,
    pub(super) cas: SandboxCas,
    pub(super) shared: Option<Arc<SharedStore>>,
    pub(super) events: Option<UnboundedReceiver<Event>>,
}

/// Open the store `config` names: SQLite (or memory) as before, or PostgreSQL with its CAs, registry and
/// listener.
pub(super) async fn open(
    config: &Config,
    generation: &Generation,
    key: Option<SecretString>,
) -> Result<Opened, String> {
    let Some(pg) = &config.control.postgres else {
        let control = Control::open(config.control.store.as_deref(), key)?;
        if config.control.store.is_none() {
            tracing::info!("control.store is not set: sandboxes created at run time live in memory only");
        }
        return Ok(Opened {
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
    Ok(Opened {
        control,
        cas,
        shared: Some(Arc::new(SharedStore { db, registry, stop })),
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
    let db = Db::connect(Target {
        dsn: &pg.dsn,
        password,
        roots: &pg.roots,
    })
    .await?;
    Ok((db, sealer))
}

/// Start applying announcements, the heartbeat and the periodic re-read. Each stops when the state is dropped.
pub(super) fn start(state: &Arc<ProxyState>, events: Option<UnboundedReceiver<Event>>) {
    let Some(events) = events else { return };
    tokio::spawn(apply_events(Arc::downgrade(state), events));
    tokio::spawn(heartbeat(Arc::downgrade(state)));
}

async fn apply_events(state: Weak<ProxyState>, mut events: UnboundedReceiver<Event>) {
    let mut resync = tokio::time::interval(RESYNC_EVERY);
    resync.tick().await;
    loop {
        let event = tokio::select! {
            e = events.recv() => match e {
                Some(e) => e,
                None => return,
            },
            _ = resync.tick() => Event::Resync,
        };
        let Some(s) = state.upgrade() else { return };
        if let Err(e) = s.apply(&event).await {
            tracing::warn!(event = %event.payload(), "cannot apply an announcement from the shared store: {e}");
        }
    }
}

async fn heartbeat(state: Weak<ProxyState>) {
    loop {
        tokio::time::sleep(HEARTBEAT).await;
        let Some(s) = state.upgrade() else { return };
        let Some(shared) = s.shared.clone() else { return };
        match shared.registry.beat().await {
            Ok(live) => s.set_replicas(live),
            Err(e) => tracing::debug!("heartbeat: {e}"),
        }
    }
}

impl ProxyState {
    /// The PostgreSQL store, when state is shared through one.
    pub(crate) fn shared(&self) -> Option<&Arc<SharedStore>> {
        self.shared.as_ref()
    }

    /// Apply one announcement.
    async fn apply(&self, event: &Event) -> Result<(), String> {
        let cas = self.cas.in_db();
        match event {
            Event::Resync => {
                self.control.resync().await.map_err(|e| e.to_string())?;
                // Whatever changed while announcements were missed (a policy among it) is decided again.
                self.sweep(true);
                if let Some(cas) = cas {
                    cas.load_all().await.map_err(|e| e.to_string())?;
                }
                if let Some(shared) = self.approvals.shared() {
                    let all = shared.grants().await.map_err(|e| e.to_string())?;
                    self.approvals.apply_shared_grants(all);
                }
                self.resync_approvals().await
            }
            Event::Sandbox(id) => {
                // The CA first: a sandbox this replica knows always has the CA its interception needs.
                if let Some(cas) = cas
                    && cas.get(id).is_none()
                {
                    cas.learn(id).await.map_err(|e| e.to_string())?;
                }
                let before = self.control.policy_of(id);
                self.control.learn(id).await.map_err(|e| e.to_string())?;
                if self.control.policy_of(id) != before {
                    // Another replica changed its policy: tunnels it no longer allows close here too.
                    self.sweep(true);
                }
                Ok(())
            }
            Event::Ca(id) => {
                if let Some(cas) = cas {
                    cas.learn(id).await.map_err(|e| e.to_string())?;
                }
                // A rotated CA: leaves of the old one are not served again.
                self.leaves.invalidate_sandbox(id);
                Ok(())
            }
            Event::Approval(id) => self.approval_decided(id).await,
            Event::Grant(id) => self.grant_changed(id).await,
        }
    }

    /// Make sure this replica knows sandbox `id` (created on another replica a moment ago) before its credential
    /// is judged: one read of the shared store, bounded. Nothing happens with a SQLite store, or when the
    /// sandbox is known.
    pub(crate) async fn learn_sandbox(&self, id: &str, credential: &str) {
        // Every credentialed request passes here: the cheap tests first (no copy, no signature check for a
        // declared sandbox's token or a sandbox already known).
        if !self.control.is_shared() || !crate::identity::signed::looks_signed(credential) {
            return;
        }
        // Known is not enough: an announcement applied half-way (the record read, its CA not yet) leaves a
        // live sandbox whose interception would fail, so its missing CA is learned here too.
        if self.control.knows(id) {
            let ca_held = self.cas.in_db().is_none_or(|cas| cas.get(id).is_some());
            if ca_held || !self.control.knows_live(id, crate::control::now()) {
                return;
            }
        }
        // SECURITY: only a credential signed for this id makes a read: made-up ids cannot load the database.
        if !self.control.signed_for(id, credential) {
            return;
        }
        let learn = async {
            if (self.control.knows(id) || self.control.learn(id).await?)
                && let Some(cas) = self.cas.in_db()
                && cas.get(id).is_none()
            {
                let _ = cas.learn(id).await;
            }
            Ok::<(), crate::control::ControlError>(())
        };
        match tokio::time::timeout(LEARN_TIMEOUT, learn).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::warn!(sandbox = %id, "cannot learn of a sandbox: {e}"),
            Err(_) => tracing::warn!(sandbox = %id, "the shared store did not answer in time; sandbox unknown here"),
        }
    }
}

impl ProxyState {
    /// Re-read the decisions of the asks this replica holds (after missed announcements).
    async fn resync_approvals(&self) -> Result<(), String> {
        for id in self.approvals.held() {
            self.approval_decided(&id).await?;
        }
        Ok(())
    }

    /// A pending approval was decided on some replica: release the request if this replica holds it.
    async fn approval_decided(&self, id: &str) -> Result<(), String> {
        let Some(shared) = self.approvals.shared() else {
            return Ok(());
        };
        if !self.approvals.holds(id) {
            return Ok(());
        }
        let Some(written) = shared.decision(id).await.map_err(|e| e.to_string())? else {
            return Ok(());
        };
        match self.approvals.decide(id, written.verdict, written.scope, &written.by) {
            Ok(_) => tracing::info!(approval = %id, by = %written.by, "approval decided on another replica, applied"),
            Err(e) => tracing::debug!(approval = %id, "a decision from another replica: {e}"),
        }
        Ok(())
    }

    /// A grant was made or withdrawn on some replica.
    async fn grant_changed(&self, id: &str) -> Result<(), String> {
        let Some(shared) = self.approvals.shared() else {
            return Ok(());
        };
        let grant = shared.grant(id).await.map_err(|e| e.to_string())?;
        self.approvals.apply_shared_grant(id, grant);
        Ok(())
    }

    /// The number of live replicas is `live`: when it changed, this replica's share of the rate limits follows
    /// (from fresh counters, as after a reload that changes them).
    fn set_replicas(&self, live: usize) {
        use std::sync::atomic::Ordering;
        let before = self.replicas.swap(live, Ordering::Relaxed);
        if before != live {
            let spec = self.current().config.limits.rates.share(live);
            tracing::info!(
                live,
                "live replicas changed: this replica enforces 1/{live} of each rate limit"
            );
            let limits = crate::limits::Limits::new(&spec).with_shared_bytes(self.shared_bytes.clone());
            self.limits.store(Arc::new(limits));
        }
    }
}
