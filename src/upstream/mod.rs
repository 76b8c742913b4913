//! cordon's own connections out: the pooled, verified client every policed request is sent through, and the
//! outbound client that credential sources and the webhook use.

pub(crate) mod answer;
pub(crate) mod outbound;
pub(crate) mod pool;
pub(crate) mod send;
