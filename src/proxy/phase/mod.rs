//! The phases of the data plane, one file each, in the order `proxy::flow` runs them. Each is
//! `async fn run(&mut Ctx, &impl Effects) -> Result<(), ProxyError>`: it reads what earlier phases wrote in the
//! context (`proxy::ctx`), writes its own slot, and acts on the world only through the effects, so the same code
//! serves live traffic and `cordon explain`. The record phase ends every exchange, refused or not.

pub(crate) mod access;
pub(crate) mod admit;
pub(crate) mod answer;
pub(crate) mod approve;
pub(crate) mod credentials;
pub(crate) mod decide;
pub(crate) mod exposed;
pub(crate) mod hygiene;
pub(crate) mod identify;
pub(crate) mod open;
pub(crate) mod protocol;
pub(crate) mod record;
pub(crate) mod respond;
pub(crate) mod send;
pub(crate) mod shape;
pub(crate) mod target;
pub(crate) mod visit;
pub(crate) mod visitor;
