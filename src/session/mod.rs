//! What a sandbox has open, as state that outlives a connection: the connections and tunnels registered under it
//! (leases) and the rates, caps and budget each must pass (admission). A tunnel's own life (its stop, its watch,
//! the splice) is the data plane's: `crate::proxy::tunnel`.

pub(crate) mod admission;
pub(crate) mod leases;
