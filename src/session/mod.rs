//! What a sandbox has open and when it must close: the connections and tunnels registered under it, how a
//! tunnel's life is watched (bytes, idleness, age, byte budget), and the limits each must pass.

pub mod admission;
pub mod leases;
pub mod lifetime;
pub mod scope;
