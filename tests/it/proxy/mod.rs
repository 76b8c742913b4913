//! The proxy on live traffic: auth, HTTP, CONNECT, interception, smuggling, the guard, DNS, limits, rules, splice.

mod answer_end;
mod auth;
mod connect;
mod dns;
mod framing;
mod guard;
mod http;
mod intercept;
mod lifecycle;
mod limits;
mod refusals;
mod resolver;
mod rule_semantics;
mod tunnel_splice;
