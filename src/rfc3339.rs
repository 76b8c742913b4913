//! Timestamps as RFC 3339 text, the one place cordon writes and reads them: audit records and the chain's lines
//! (to the millisecond), the admin API's and approvals' times (to the second), and the times issuers send
//! (parsed, any precision and offset). Always UTC, written `Z`; a time past what four year digits can show is
//! written as the last second they can, and one before 1970 as the epoch, so what is written always parses.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use time::macros::format_description;

/// 9999-12-31T23:59:59Z, the last second four year digits can show.
const LAST: Duration = Duration::from_secs(253_402_300_799);

fn utc(t: SystemTime) -> OffsetDateTime {
    let since = t.duration_since(UNIX_EPOCH).unwrap_or(Duration::ZERO).min(LAST);
    OffsetDateTime::UNIX_EPOCH + since
}

/// `t` to the second: `2026-12-02T23:08:26Z`.
pub(crate) fn seconds(t: SystemTime) -> String {
    let format = format_description!("[year]-[month]-[day]T[hour]:[minute]:[second]Z");
    utc(t).format(&format).unwrap_or_default()
}

/// `secs` since the epoch (as the stores keep times), to the second.
pub(crate) fn unix_seconds(secs: i64) -> String {
    seconds(UNIX_EPOCH + Duration::from_secs(u64::try_from(secs).unwrap_or(0)))
}

/// `t` to the millisecond: `2026-12-02T23:08:26.123Z`.
pub(crate) fn millis(t: SystemTime) -> String {
    let format = format_description!("[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z");
    utc(t).format(&format).unwrap_or_default()
}

/// Now, to the millisecond.
pub(crate) fn now_millis() -> String {
    millis(SystemTime::now())
}

/// Now, to the microsecond, as the operational log's JSON lines write their `timestamp`:
/// `2026-12-02T23:08:26.123456Z`.
pub(crate) fn now_micros() -> String {
    let format = format_description!("[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:6]Z");
    utc(SystemTime::now()).format(&format).unwrap_or_default()
}

/// An RFC 3339 time of any precision and offset, or `None` if `text` is not one (or lies before 1970).
pub(crate) fn parse(text: &str) -> Option<SystemTime> {
    let t = OffsetDateTime::parse(text, &Rfc3339).ok()?;
    let secs = u64::try_from(t.unix_timestamp()).ok()?;
    Some(UNIX_EPOCH + Duration::new(secs, t.nanosecond()))
}

#[cfg(test)]
#[path = "rfc3339_tests.rs"]
mod tests;
