//! Model APIs: what their answers say they used, and what that costs. Requests to an endpoint whose rule has a
//! `model_api:` section are read for the model they name (the pipeline's model API protocol,
//! `crate::proxy::protocol`); their answers, JSON or a stream of server-sent events, are read as they pass for the
//! tokens the provider reports ([`usage`]), priced from the configuration's price table ([`prices`]), and charged
//! to the budgets a policy sets ([`budget`]).
//!
//! What the provider does not report (a stream cut short before its usage event, an answer cordon cannot read) is
//! estimated from what was delivered, never counted as nothing, and the record says it was estimated.

pub(crate) mod budget;
pub(crate) mod prices;
pub(crate) mod usage;
