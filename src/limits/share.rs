//! A replica's share of the limits when several replicas share a PostgreSQL store: each enforces the rates
//! and open-connection caps divided by the number of live replicas, so that together they allow what the
//! configuration says. Byte budgets and the authentication throttle are not divided (see docs/src/control-plane.md).

use std::num::NonZeroU32;

use super::{LimitSpec, Rate};

impl LimitSpec {
    /// This configuration's limits for one of `replicas` live replicas (rounded up, never below 1).
    pub(crate) fn share(&self, replicas: usize) -> LimitSpec {
        let n = u32::try_from(replicas.max(1)).unwrap_or(u32::MAX);
        if n == 1 {
            return self.clone();
        }
        let part = |v: NonZeroU32| NonZeroU32::new(v.get().div_ceil(n)).unwrap_or(NonZeroU32::MIN);
        let rate = |r: Option<Rate>| {
            r.map(|r| Rate {
                per_second: part(r.per_second),
                burst: part(r.burst),
            })
        };
        let cap = |c: Option<u32>| c.map(|c| c.div_ceil(n).max(1));
        LimitSpec {
            sandbox_requests: rate(self.sandbox_requests),
            user_requests: rate(self.user_requests),
            host_requests: rate(self.host_requests),
            sandbox_connections: rate(self.sandbox_connections),
            sandbox_open: cap(self.sandbox_open),
            user_open: cap(self.user_open),
            ..self.clone()
        }
    }
}

#[cfg(test)]
#[path = "share_tests.rs"]
mod tests;
