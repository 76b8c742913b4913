//! What a sandbox has open and when it must close: the connections and tunnels registered under it, how a
//! tunnel's life is watched (bytes, idleness, age, byte budget), and the limits each must pass.

pub(crate) mod admission;
pub(crate) mod leases;
pub(crate) mod lifetime;
pub(crate) mod scope;
pub(crate) mod splice;
