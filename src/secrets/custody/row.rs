//! One held sign-in's row as both stores keep it, and the decision taken on it inside the transaction that read
//! it (the same for SQLite and PostgreSQL).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A stored access token is used by another replica only while it is valid past this margin, in ms (the token
/// cache refreshes 60 s before expiry, so a token it holds as good is never one custody would refresh).
pub(super) const FRESH_MARGIN_MS: i64 = 61_000;

/// One credential's row, as stored (sealed parts still sealed).
#[derive(Debug, Clone)]
pub(super) struct HeldRow {
    /// Generation of the current refresh token (1 for the first seeded, one more per rotation or seeding).
    pub(super) generation: i64,
    /// The current refresh token, sealed.
    pub(super) token: Vec<u8>,
    /// The newest access token, sealed, and when it expires (unix ms).
    pub(super) access: Option<(Vec<u8>, i64)>,
    /// A refresh is under way until then (unix ms), by that replica.
    pub(super) lease: Option<(i64, String)>,
    /// Why the sign-in is no longer usable, if it is not.
    pub(super) dead: Option<String>,
}

/// The columns a row is read from, in the order [`HeldRow::from_columns`] takes them.
pub(super) const COLUMNS: &str = "generation, token, access, access_expires, lease_until, lease_by, dead";

/// The columns of [`COLUMNS`] as either store reads them (nullable ones as `Option`).
pub(super) type Columns = (
    i64,
    Vec<u8>,
    Option<Vec<u8>>,
    Option<i64>,
    Option<i64>,
    Option<String>,
    Option<String>,
);

impl HeldRow {
    /// The row of its columns: an access token and its expiry, or a lease and its holder, are there together
    /// or not at all.
    pub(super) fn from_columns(c: Columns) -> HeldRow {
        let (generation, token, access, expires, until, by, dead) = c;
        HeldRow {
            generation,
            token,
            access: access.zip(expires),
            lease: until.zip(by),
            dead,
        }
    }
}

/// What to do with a row, decided inside the transaction that read it.
#[derive(Debug)]
pub(super) enum Step {
    /// No refresh token was ever seeded.
    NotSeeded,
    /// The sign-in is dead, with why.
    Dead(String),
    /// A stored access token is good: use it.
    Fresh {
        generation: i64,
        access: Vec<u8>,
        expires: i64,
    },
    /// Another replica holds the lease: wait.
    Busy,
    /// This replica took the lease (written in the same transaction): refresh generation `generation`.
    Take {
        generation: i64,
        token: Vec<u8>,
        stale: bool,
    },
}

/// The step for `row` at `now_ms` for replica `me`.
pub(super) fn decide(row: Option<&HeldRow>, now_ms: i64, me: &str) -> Step {
    let Some(row) = row else { return Step::NotSeeded };
    if let Some(why) = &row.dead {
        return Step::Dead(why.clone());
    }
    if let Some((access, expires)) = &row.access
        && *expires > now_ms.saturating_add(FRESH_MARGIN_MS)
    {
        return Step::Fresh {
            generation: row.generation,
            access: access.clone(),
            expires: *expires,
        };
    }
    match &row.lease {
        Some((until, by)) if *until > now_ms && by != me => Step::Busy,
        lease => Step::Take {
            generation: row.generation,
            token: row.token.clone(),
            stale: lease.is_some(),
        },
    }
}

pub(super) fn ms(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// Unix milliseconds now.
pub(super) fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(ms).unwrap_or(0)
}

/// What the store answered a refresh's store step.
pub(super) struct Stored {
    /// The row moved from the generation refreshed to the next.
    pub(super) moved: bool,
}

#[cfg(test)]
#[path = "row_tests.rs"]
mod tests;
