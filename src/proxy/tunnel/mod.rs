//! A tunnel's whole life once the pipeline's open phase (`proxy::phase::open`: its connection caps, the dial or
//! the resolve) let it through, in one place: the scope of its connection ([`scope`]), running it to its end ([`run`]: bytes passed through after the
//! ClientHello is checked, or handed to [`intercept`]), what stops it and how it is watched ([`lifetime`]),
//! the splice of a blind tunnel ([`splice`]), and after a 101 the WebSocket relayed frame by frame
//! ([`websocket`], on [`websocket_frames`] and [`websocket_message`]).

pub(crate) mod intercept;
pub(crate) mod lifetime;
pub(crate) mod run;
pub(crate) mod scope;
pub(crate) mod splice;
mod websocket;
pub(crate) mod websocket_frames;
pub(crate) mod websocket_message;
