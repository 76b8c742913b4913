//! Custody of rotating OAuth2 refresh tokens (`source.oauth2_refresh`): a subscription sign-in whose refresh
//! token cordon keeps, sealed under `control.store_key`, in the store (the SQLite file, or PostgreSQL for
//! replicas), and trades for access tokens as they expire.
//!
//! The failure this prevents: a provider that rotates refresh tokens consumes the old one when it answers, so
//! a new refresh token that is not stored is a sign-in lost. Each credential has one row, and a refresh is:
//!
//! 1. In one short transaction (`SELECT … FOR UPDATE` on PostgreSQL, `BEGIN IMMEDIATE` on SQLite), read the
//!    row: a stored access token still valid past the refresh margin is used as it is (another replica
//!    refreshed); a live lease of another replica means wait; otherwise take the lease (`lease_until`, longer
//!    than any token call may take) and commit. One refresh at a time per credential, across replicas, without a
//!    transaction held over the network.
//! 2. Call the token endpoint with the current refresh token (generation N).
//! 3. On the answer, before anything else (before the access token is handed to the request), commit in one
//!    transaction: the new refresh token as generation N+1, the old one gone (spent), the new access token, and
//!    the lease released; conditional on the row still being at generation N.
//! 4. `invalid_grant` (revoked, expired, or reused) marks the credential dead, with why: requests are refused
//!    with `credential_unavailable` (never the placeholder sent on), `/readyz` names it, and the metric counts
//!    it, until an operator seeds a new refresh token.
//!
//! A replica that dies between 1 and 3 leaves a lease that expires; the next refresh retries with generation
//! N: if the call never reached the provider, or the provider keeps a reuse grace, that works; if the provider
//! had consumed N, it answers `invalid_grant` and the credential is marked dead with an operator-actionable
//! message (the one loss no client can prevent: the answer never reached cordon). Once the answer has reached
//! cordon, it is durable before it is used.

mod open;
mod pg;
mod row;
mod sqlite;

use std::sync::Arc;
use std::time::{Duration, UNIX_EPOCH};

use secrecy::{ExposeSecret, SecretString};

use crate::config::credentials::OAuth2RefreshSpec;
use crate::locks::Unpoisoned;
use crate::pg::Sealer;
use crate::secrets::issuer::refresh::{RefreshClient, Refreshed, is_dead_grant};
use crate::secrets::issuer::{IssuerError, Token};
use crate::upstream::outbound::HttpClient;

use row::{Step, ms, now_ms};

/// How long a refresh lease lasts: longer than a token call may take (`ISSUER_TIMEOUT`), so that a replica
/// takes over only from one that is gone.
const LEASE: Duration = Duration::from_secs(15);

/// How often a replica waiting on another's lease looks again.
const POLL: Duration = Duration::from_millis(100);

/// Where the rows are.
enum CustodyStore {
    Sqlite(sqlite::SqliteRows),
    Pg(pg::PgRows),
}

/// The refresh tokens of every `oauth2_refresh` credential, in the store.
pub(crate) struct Custody {
    backend: CustodyStore,
    sealer: Sealer,
    /// This process's name in leases.
    me: String,
    metrics: Option<Arc<crate::metrics::Metrics>>,
    /// The credentials this process has found dead, with the message: their requests are refused at once, even
    /// while an access token refreshed before the refusal is still valid.
    dead: std::sync::Mutex<std::collections::BTreeMap<String, String>>,
}

impl Custody {
    /// Custody in the SQLite file `path`, sealing under `key`.
    pub(crate) fn sqlite(path: &std::path::Path, key: &SecretString) -> Result<Custody, String> {
        Custody::with(CustodyStore::Sqlite(sqlite::SqliteRows::open(path)?), key)
    }

    /// Custody in the PostgreSQL store `db`, sealing under `key`.
    pub(crate) fn pg(db: Arc<crate::pg::Db>, key: &SecretString) -> Result<Custody, String> {
        Custody::with(CustodyStore::Pg(pg::PgRows::new(db)), key)
    }

    fn with(backend: CustodyStore, key: &SecretString) -> Result<Custody, String> {
        Ok(Custody {
            backend,
            sealer: Sealer::new(key)?,
            me: format!("{}-{}", std::process::id(), crate::secret_file::random_hex(8)?),
            metrics: None,
            dead: std::sync::Mutex::default(),
        })
    }

    /// Count refreshes and dead sign-ins in these metrics.
    pub(crate) fn set_metrics(&mut self, metrics: Arc<crate::metrics::Metrics>) {
        self.metrics = Some(metrics);
    }

    /// The row's sealing context: the credential and generation, so a sealed token moved to another row or
    /// generation does not open.
    fn aad(credential: &str, generation: i64, part: &str) -> String {
        format!("oauth2_refresh\u{0}{credential}\u{0}{generation}\u{0}{part}")
    }

    fn seal(&self, credential: &str, generation: i64, part: &str, value: &SecretString) -> Result<Vec<u8>, String> {
        self.sealer.seal(
            &Custody::aad(credential, generation, part),
            value.expose_secret().as_bytes(),
        )
    }

    fn open(&self, credential: &str, generation: i64, part: &str, sealed: &[u8]) -> Result<SecretString, String> {
        let bytes = self
            .sealer
            .open(&Custody::aad(credential, generation, part), sealed)
            .map_err(|e| format!("the stored {part} token of credential {credential}: {e}"))?;
        String::from_utf8(bytes)
            .map(SecretString::from)
            .map_err(|_| format!("the stored {part} token of credential {credential} is not text"))
    }

    /// Keep `token` as `credential`'s refresh token (a new generation; any stored access token, lease and dead
    /// mark dropped). Returns the generation.
    pub(crate) async fn seed(&self, credential: &str, token: &SecretString) -> Result<i64, String> {
        let seal = |generation: i64| self.seal(credential, generation, "refresh", token);
        let generation = match &self.backend {
            CustodyStore::Sqlite(rows) => rows.seed(credential, &seal),
            CustodyStore::Pg(rows) => rows.seed(credential, &seal).await,
        }?;
        self.dead.lock().unpoisoned().remove(credential);
        Ok(generation)
    }

    /// Why `credential`'s sign-in is dead, if this process has found it so (the request's message).
    pub(crate) fn known_dead(&self, credential: &str) -> Option<String> {
        self.dead.lock().unpoisoned().get(credential).cloned()
    }

    fn found_dead(&self, credential: &str, why: &str) -> IssuerError {
        let message = dead_message(credential, why);
        self.dead
            .lock()
            .unpoisoned()
            .insert(credential.to_owned(), message.clone());
        IssuerError::SignIn(message)
    }

    /// Whether `credential`'s sign-in is dead, and why (for `/readyz` and the metric).
    pub(crate) async fn dead(&self, credential: &str) -> Result<Option<String>, String> {
        let row = match &self.backend {
            CustodyStore::Sqlite(rows) => rows.read(credential)?,
            CustodyStore::Pg(rows) => rows.read(credential).await?,
        };
        Ok(row.and_then(|r| r.dead))
    }

    async fn step(&self, credential: &str) -> Result<Step, String> {
        let (now, me) = (now_ms(), self.me.as_str());
        let lease_until = now.saturating_add(ms(LEASE));
        match &self.backend {
            CustodyStore::Sqlite(rows) => rows.step(credential, now, me, lease_until),
            CustodyStore::Pg(rows) => rows.step(credential, now, me, lease_until).await,
        }
    }

    /// A valid access token for `credential`: the stored one while good, or a new one refreshed (and the
    /// rotated refresh token stored before it is used).
    pub(crate) async fn access(
        &self,
        credential: &str,
        spec: &OAuth2RefreshSpec,
        client_secret: Option<SecretString>,
        http: &HttpClient,
    ) -> Result<Token, IssuerError> {
        let cfg = IssuerError::SignIn;
        let wait_until = std::time::Instant::now() + LEASE + Duration::from_secs(5);
        let (generation, sealed, stale) = loop {
            match self.step(credential).await.map_err(cfg)? {
                Step::NotSeeded => {
                    return Err(cfg(format!(
                        "no refresh token is held for credential {credential}: seed one with `cordon credentials \
                         seed {credential} --refresh-token-file PATH` (or an operator's sign-in)"
                    )));
                }
                Step::Dead(why) => return Err(self.found_dead(credential, &why)),
                Step::Fresh {
                    generation,
                    access,
                    expires,
                } => {
                    let value = self.open(credential, generation, "access", &access).map_err(cfg)?;
                    return Ok(Token {
                        value,
                        expires_at: Some(UNIX_EPOCH + Duration::from_millis(u64::try_from(expires).unwrap_or(0))),
                    });
                }
                Step::Busy if std::time::Instant::now() < wait_until => tokio::time::sleep(POLL).await,
                Step::Busy => {
                    return Err(cfg(format!(
                        "another replica has been refreshing credential {credential} for longer than {}",
                        humantime::format_duration(LEASE)
                    )));
                }
                Step::Take {
                    generation,
                    token,
                    stale,
                } => break (generation, token, stale),
            }
        };
        if stale {
            tracing::warn!(
                credential,
                generation,
                "a refresh of this credential did not finish (a replica stopped mid-refresh); retrying with the \
                 refresh token it held"
            );
        }
        let old = self.open(credential, generation, "refresh", &sealed).map_err(cfg)?;
        let client = RefreshClient {
            token_url: spec.token_url.clone(),
            client_id: spec.client_id.clone(),
            client_secret,
            scope: spec.scope.clone(),
        };
        match client.refresh(http, &old).await {
            Ok(answer) => self.keep(credential, generation, &old, answer).await,
            Err(e) => {
                let dead = is_dead_grant(&e).then(|| e.to_string());
                let released = match &self.backend {
                    CustodyStore::Sqlite(rows) => rows.release(credential, generation, &self.me, dead.as_deref()),
                    CustodyStore::Pg(rows) => rows.release(credential, generation, &self.me, dead.as_deref()).await,
                };
                if let Err(why) = released {
                    tracing::warn!(credential, "cannot release the refresh lease: {why}");
                }
                if let Some(why) = dead {
                    tracing::error!(credential, "{}", dead_message(credential, &why));
                    if let Some(m) = &self.metrics {
                        m.signin_dead(credential);
                    }
                    return Err(self.found_dead(credential, &why));
                }
                Err(e)
            }
        }
    }

    /// Store what the provider answered (the rotated refresh token first of all), then hand out the access token.
    async fn keep(
        &self,
        credential: &str,
        generation: i64,
        old: &SecretString,
        answer: Refreshed,
    ) -> Result<Token, IssuerError> {
        fault("oauth_refresh_after_answer");
        let next = generation + 1;
        let refresh = answer.refresh.as_ref().unwrap_or(old);
        let sealed = self
            .seal(credential, next, "refresh", refresh)
            .and_then(|r| Ok((r, self.seal(credential, next, "access", &answer.access.value)?)))
            .map_err(IssuerError::SignIn)?;
        let expires = answer
            .access
            .expires_at
            .map(|t| t.duration_since(UNIX_EPOCH).map(ms).unwrap_or(0))
            .unwrap_or_else(|| now_ms().saturating_add(ms(super::issuer::cache::DEFAULT_LIFETIME)));
        // SECURITY: the rotated refresh token is stored (and the old one spent) before the access token is used;
        // a store that is briefly down is tried again rather than the new token dropped.
        let mut tries = 0;
        let stored = loop {
            let r = match &self.backend {
                CustodyStore::Sqlite(rows) => rows.store(credential, generation, &sealed.0, &sealed.1, expires),
                CustodyStore::Pg(rows) => rows.store(credential, generation, &sealed.0, &sealed.1, expires).await,
            };
            match r {
                Ok(s) => break s,
                Err(why) if tries < 20 => {
                    tries += 1;
                    tracing::warn!(
                        credential,
                        "cannot store the rotated refresh token yet ({why}); trying again"
                    );
                    tokio::time::sleep(Duration::from_millis(250)).await;
                }
                Err(why) => {
                    tracing::error!(
                        credential,
                        "the rotated refresh token could not be stored ({why}); the sign-in will need seeding again"
                    );
                    return Err(IssuerError::SignIn(format!(
                        "the rotated refresh token of credential {credential} could not be stored: {why}"
                    )));
                }
            }
        };
        fault("oauth_refresh_after_store");
        if !stored.moved {
            // Another replica moved the row meanwhile (our lease had expired): ours is a token the provider also
            // issued; the row's is what every replica uses from now on.
            tracing::warn!(
                credential,
                "the row moved on while this replica refreshed; its answer was not stored"
            );
        }
        if let Some(m) = &self.metrics {
            m.token_mint(credential, true);
        }
        Ok(answer.access)
    }
}

/// What a request and `/readyz` say of a dead sign-in.
fn dead_message(credential: &str, why: &str) -> String {
    format!(
        "the sign-in of credential {credential} is no longer usable ({why}); sign in again and seed the new \
         refresh token: `cordon credentials seed {credential} --refresh-token-file PATH`"
    )
}

/// Test builds only: end the process abruptly at the named point when `CORDON_TEST_FAULT` names it, so that a
/// test can stop a replica mid-refresh. Release builds have no such point.
#[cfg(debug_assertions)]
fn fault(point: &str) {
    if std::env::var("CORDON_TEST_FAULT").is_ok_and(|v| v == point) {
        eprintln!("CORDON_TEST_FAULT: aborting at {point}");
        std::process::abort();
    }
}

#[cfg(not(debug_assertions))]
fn fault(_point: &str) {}
