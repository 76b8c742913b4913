//! The PostgreSQL store that replicas on many hosts share (`control.store: postgres://…`).
//!
//! This module is the connection, the schema, the notifications and the replica registry; each table's rows are
//! read and written by the module that owns them (the control plane's sandboxes, the CAs, approvals, budgets).
//! It holds rows, never decisions: run-time sandboxes and their revocations, the sandboxes' CAs (keys sealed under
//! `control.store_key`), pending approvals and their decisions, standing grants, byte-budget counters and the
//! replica registry. Every write that another replica must see at once is announced on the channel
//! [`CHANNEL`] (`NOTIFY`, delivered at commit); each replica listens ([`listen`]) and keeps what it needs in memory,
//! so nothing on the request path waits on the database. The client is tokio-postgres (the async driver the
//! `postgres` family is built on) behind a deadpool pool, with TLS by rustls.

mod health;
pub(crate) mod listen;
mod migrate;
pub(crate) mod replicas;
mod seal;

use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod, Runtime};
use secrecy::{ExposeSecret, SecretString};
use tokio_postgres_rustls::MakeRustlsConnect;

pub(crate) use health::{PgHealth, StoreState};
pub(crate) use seal::Sealer;

/// The notification channel every replica listens on.
pub(crate) const CHANNEL: &str = "cordon";

/// How long a statement, a connection or a wait for a pooled connection may take before the store counts as down.
const TIMEOUT: Duration = Duration::from_secs(5);

/// Why a database operation failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum DbError {
    /// The server cannot be reached (or did not answer in time): try again later.
    #[error("PostgreSQL at {location} is unavailable: {message}")]
    Unavailable {
        /// Where the server is.
        location: String,
        /// What failed.
        message: String,
    },
    /// The server answered with an error.
    #[error("PostgreSQL at {location} refused {what}: {message}")]
    Refused {
        /// Where the server is.
        location: String,
        /// What was being done.
        what: String,
        /// The server's message.
        message: String,
    },
    /// A row could not be understood.
    #[error("PostgreSQL at {location} holds a {what} this cordon cannot read: {message}")]
    Corrupt {
        /// Where the server is.
        location: String,
        /// What kind of row.
        what: &'static str,
        /// Why.
        message: String,
    },
}

/// A connection pool to the shared store, with its health.
pub(crate) struct Db {
    pool: Pool,
    config: tokio_postgres::Config,
    tls: MakeRustlsConnect,
    location: String,
    health: PgHealth,
}

/// Where to connect and as whom.
pub(crate) struct PgTarget<'a> {
    /// The DSN, without a password.
    pub(crate) dsn: &'a str,
    /// The password, if the server wants one.
    pub(crate) password: Option<SecretString>,
    /// Extra roots for the server's certificate.
    pub(crate) roots: &'a [rustls_pki_types::CertificateDer<'static>],
}

impl Db {
    /// Connect, and create or migrate the schema (safe when several replicas start at once).
    pub(crate) async fn connect(target: PgTarget<'_>) -> Result<Arc<Db>, String> {
        let mut config = tokio_postgres::Config::from_str(target.dsn)
            .map_err(|e| format!("control.store: not a PostgreSQL URL: {e}"))?;
        if let Some(p) = &target.password {
            config.password(p.expose_secret());
        }
        config.connect_timeout(TIMEOUT);
        config.application_name("cordon");
        let location = location(&config);
        let tls = MakeRustlsConnect::new(tls_config(target.roots)?);
        let manager = Manager::from_config(
            config.clone(),
            tls.clone(),
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(16)
            .runtime(Runtime::Tokio1)
            .wait_timeout(Some(TIMEOUT))
            .create_timeout(Some(TIMEOUT))
            .recycle_timeout(Some(TIMEOUT))
            .build()
            .map_err(|e| format!("control.store: cannot set up the connection pool: {e}"))?;
        let db = Arc::new(Db {
            pool,
            config,
            tls,
            location: location.clone(),
            health: PgHealth::default(),
        });
        let mut client = db
            .client()
            .await
            .map_err(|e| format!("control.store: cannot connect: {e}"))?;
        migrate::migrate(&mut client, &location)
            .await
            .map_err(|e| format!("control.store: {e}"))?;
        Ok(db)
    }

    /// `host:port/database`, for messages (never the password).
    pub(crate) fn location(&self) -> &str {
        &self.location
    }

    /// Up or down, and since when.
    pub(crate) fn state(&self) -> StoreState {
        self.health.state()
    }

    /// A pooled client; a failure marks the store down.
    pub(crate) async fn client(&self) -> Result<deadpool_postgres::Object, DbError> {
        match self.pool.get().await {
            Ok(c) => Ok(c),
            Err(e) => Err(self.unavailable(e)),
        }
    }

    /// Record the outcome of an operation: an error from the network marks the store down, anything else
    /// (including an error the server answered with) marks it up.
    pub(crate) fn outcome<T>(&self, what: &str, r: Result<T, tokio_postgres::Error>) -> Result<T, DbError> {
        match r {
            Ok(v) => {
                self.health.up();
                Ok(v)
            }
            Err(e) => match e.as_db_error() {
                Some(server) => {
                    self.health.up();
                    Err(DbError::Refused {
                        location: self.location.clone(),
                        what: what.to_owned(),
                        message: server.message().to_owned(),
                    })
                }
                None => Err(self.unavailable(e)),
            },
        }
    }

    /// Mark the store down for `e` and say so.
    pub(crate) fn unavailable(&self, e: impl std::fmt::Display) -> DbError {
        let message = e.to_string();
        self.health.down(&message);
        DbError::Unavailable {
            location: self.location.clone(),
            message,
        }
    }

    /// A row that cannot be read.
    pub(crate) fn corrupt(&self, what: &'static str, e: impl std::fmt::Display) -> DbError {
        DbError::Corrupt {
            location: self.location.clone(),
            what,
            message: e.to_string(),
        }
    }

    /// Mark the store up (the listener reached it).
    pub(crate) fn mark_up(&self) {
        self.health.up();
    }
}

/// Verification always on, against the built-in web roots and `control.store_ca_file`.
fn tls_config(extra: &[rustls_pki_types::CertificateDer<'static>]) -> Result<rustls::ClientConfig, String> {
    let mut roots = rustls::RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    for (i, cert) in extra.iter().enumerate() {
        roots
            .add(cert.clone())
            .map_err(|e| format!("control.store_ca_file: certificate #{i} is not usable as a root: {e}"))?;
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    Ok(rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS setup failed: {e}"))?
        .with_root_certificates(roots)
        .with_no_client_auth())
}

/// `host:port/database` of a configuration.
fn location(config: &tokio_postgres::Config) -> String {
    let host = config
        .get_hosts()
        .first()
        .map(|h| match h {
            tokio_postgres::config::Host::Tcp(name) => name.clone(),
            tokio_postgres::config::Host::Unix(path) => path.display().to_string(),
        })
        .unwrap_or_default();
    let port = config.get_ports().first().copied().unwrap_or(5432);
    format!("{host}:{port}/{}", config.get_dbname().unwrap_or("postgres"))
}

/// Unix seconds now.
pub(crate) fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}
