//! Whether the shared store is reachable, as the last operation found it.

use std::sync::Mutex;

/// The store's state as `/readyz` and the admin API report it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub(crate) struct StoreState {
    /// `up` or `down`.
    pub(crate) state: &'static str,
    /// Unix seconds since when it is in this state.
    pub(crate) since: i64,
    /// Why it is down.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) error: Option<String>,
}

/// The last outcome, shared by every user of the pool and the listener.
pub(crate) struct PgHealth {
    state: Mutex<StoreState>,
}

impl Default for PgHealth {
    fn default() -> Self {
        PgHealth {
            state: Mutex::new(StoreState {
                state: "up",
                since: super::now(),
                error: None,
            }),
        }
    }
}

impl PgHealth {
    pub(crate) fn state(&self) -> StoreState {
        self.state.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    pub(crate) fn up(&self) {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if s.state != "up" {
            tracing::info!("the PostgreSQL store is reachable again");
            *s = StoreState {
                state: "up",
                since: super::now(),
                error: None,
            };
        }
    }

    pub(crate) fn down(&self, why: &str) {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if s.state != "down" {
            tracing::warn!("the PostgreSQL store is unreachable: {why}");
            s.state = "down";
            s.since = super::now();
        }
        s.error = Some(why.to_owned());
    }
}
