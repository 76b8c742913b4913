//! What an admin-side listener serves, and what one of its connections is.

/// What a listener serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Surface {
    /// `listen.admin`.
    Admin {
        /// Whether `/v1` (and the console, when it is here) is served: over TLS, or on a loopback address.
        /// Otherwise only `/healthz`, `/readyz` and `/metrics` are.
        api: bool,
        /// Whether the console is served here, under `/console/`.
        console: bool,
        /// Whether `/v1` calls must come with a verified client certificate (`admin.tls.client_ca`).
        client_certs: bool,
    },
    /// `listen.console`: the console alone.
    Console,
}

/// What one connection is.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Conn {
    /// The listener's surface.
    pub(crate) surface: Surface,
    /// Whether the client presented a certificate the client CAs verified.
    pub(crate) client_cert: bool,
}
