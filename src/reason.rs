//! Every reason code cordon gives, in one place: the code a sandbox reads in `x-cordon-reason` and the audit
//! record's `reason`, how the sandbox is answered, and a line saying what it means.
//!
//! Nothing else in the crate writes a reason as a string: the steps that refuse name a [`Reason`], and the
//! record, the metrics and the response header take its [`Reason::code`]. The README's table "What a sandbox
//! sees" is [`Reason::table`]; a test fails when the two differ. The codes are an interface (SIEM queries,
//! alerts and scripts match on them), so a code once shipped keeps its spelling.

/// How the sandbox is answered when a request ends for this reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Answer {
    /// An HTTP status (for a CONNECT, before its 200).
    Status(u16),
    /// A WebSocket close code (the handshake was answered 101 long before).
    Close(u16),
    /// A DNS response code from the DNS responder.
    Dns(&'static str),
    /// The connection is closed: a tunnel or TLS connection cordon ends, nothing more can be said on it.
    Closed,
    /// Not a refusal: why a tunnel ended, or what a record that is not a request is about.
    Record,
}

impl Answer {
    /// The answer as the README's table shows it.
    pub(crate) fn shown(self) -> String {
        match self {
            Answer::Status(s) => s.to_string(),
            Answer::Close(c) => format!("({c})"),
            Answer::Dns(rcode) => format!("DNS {rcode}"),
            Answer::Closed => "closed".to_string(),
            Answer::Record => "record".to_string(),
        }
    }
}

macro_rules! reasons {
    ($($variant:ident = $code:literal, $answer:expr, $meaning:literal;)*) => {
        /// A reason code. See the module documentation.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Reason {
            $(
                #[doc = $meaning]
                $variant,
            )*
        }

        impl Reason {
            /// Every reason, in the order of the README's table.
            pub(crate) const ALL: &'static [Reason] = &[$(Reason::$variant),*];

            /// The code, as `x-cordon-reason`, the audit record and the metrics carry it.
            pub const fn code(self) -> &'static str {
                match self {
                    $(Reason::$variant => $code,)*
                }
            }

            /// How the sandbox is answered.
            pub(crate) const fn answer(self) -> Answer {
                match self {
                    $(Reason::$variant => $answer,)*
                }
            }

            /// The reason whose code is `code`, if any (a record read back).
            pub(crate) fn from_code(code: &str) -> Option<Reason> {
                match code {
                    $($code => Some(Reason::$variant),)*
                    _ => None,
                }
            }

            /// What it means, in a line.
            pub(crate) const fn meaning(self) -> &'static str {
                match self {
                    $(Reason::$variant => $meaning,)*
                }
            }
        }
    };
}

use Answer::{Close, Closed, Dns, Record, Status};

reasons! {
    AuthMissing = "auth_missing", Status(407), "no proxy credentials";
    AuthMalformed = "auth_malformed", Status(407), "proxy credentials that cannot be read";
    AuthInvalid = "auth_invalid", Status(407), "proxy credentials that open no sandbox";
    AuthExpired = "auth_expired", Status(407), "a run-time sandbox whose time ran out";
    AuthRevoked = "auth_revoked", Status(407), "a run-time sandbox that was revoked";
    NotProxyRequest = "not_proxy_request", Status(400), "an origin-form request on the proxy port (set HTTP_PROXY, or use CONNECT)";
    EmptyHost = "empty_host", Status(400), "the destination has no host";
    NonAsciiHost = "non_ascii_host", Status(400), "a host that is not ASCII (send the punycode)";
    BadHost = "bad_host", Status(400), "a host that is not a name or an address";
    EmptyLabel = "empty_label", Status(400), "a host with an empty label";
    LabelTooLong = "label_too_long", Status(400), "a host label over 63 bytes";
    HostTooLong = "host_too_long", Status(400), "a host over 253 bytes";
    BadIpv6 = "bad_ipv6", Status(400), "a bracketed IPv6 address that is not one";
    ZoneId = "zone_id", Status(400), "an IPv6 address with a zone";
    UnbracketedIpv6 = "unbracketed_ipv6", Status(400), "an IPv6 address without brackets";
    Userinfo = "userinfo", Status(400), "a destination with user information";
    BadPort = "bad_port", Status(400), "a port that is not a number from 1 to 65535";
    MissingPort = "missing_port", Status(400), "a CONNECT without a port";
    NotAuthorityForm = "not_authority_form", Status(400), "a CONNECT whose target is not host:port";
    NotAbsolute = "not_absolute", Status(400), "a proxied request whose target is not an absolute URL";
    BadScheme = "bad_scheme", Status(400), "a scheme other than http (https goes through CONNECT)";
    MissingAuthority = "missing_authority", Status(400), "an absolute URL without a host";
    RelativePath = "relative_path", Status(400), "a path that does not start with /";
    DotSegment = "dot_segment", Status(400), "a path with . or .. segments, in any spelling";
    BadPath = "bad_path", Status(400), "a path with bytes a URL may not carry";
    BadEscape = "bad_escape", Status(400), "a path with a % not followed by two hex digits";
    DuplicateHost = "duplicate_host", Status(400), "more than one Host header";
    MissingHost = "missing_host", Status(400), "a request without the Host it needs";
    ConnectInTunnel = "connect_in_tunnel", Status(400), "a CONNECT inside an intercepted connection";
    ConnectTransparent = "connect_transparent", Status(400), "a CONNECT on the transparent listener";
    BadTarget = "bad_target", Status(400), "plain HTTP on the transparent listener whose target is not a valid path";
    HostPortMismatch = "host_port_mismatch", Status(400), "plain HTTP on the transparent listener whose Host names another port than the connection's";
    ClAndTe = "cl_and_te", Status(400), "both Content-Length and Transfer-Encoding";
    DuplicateContentLength = "duplicate_content_length", Status(400), "more than one Content-Length";
    InvalidContentLength = "invalid_content_length", Status(400), "a Content-Length that is not a number";
    TeNotChunked = "te_not_chunked", Status(400), "a Transfer-Encoding that does not end in chunked";
    TeInHttp10 = "te_in_http10", Status(400), "Transfer-Encoding in an HTTP/1.0 request";
    MalformedHead = "malformed_head", Status(400), "a request head that cannot be read unambiguously";
    MalformedChunk = "malformed_chunk", Status(400), "a chunked body that cannot be read unambiguously";
    UnparseableRequest = "unparseable_request", Status(400), "bytes that are not an HTTP request";
    HeadTooLarge = "head_too_large", Status(431), "a request head over limits.max_request_header_bytes";
    NoRule = "no_rule", Status(403), "no rule of the policy allows the host";
    PortNotAllowed = "port_not_allowed", Status(403), "a rule names the host, not this port";
    MethodNotAllowed = "method_not_allowed", Status(403), "the governing rule does not allow the method (methods are case-sensitive)";
    PathNotAllowed = "path_not_allowed", Status(403), "the governing rule does not allow the path";
    Misdirected = "misdirected", Status(421), "a request inside a CONNECT names another host or port";
    CredentialExfiltration = "credential_exfiltration", Status(403), "a placeholder sent where its credential is not bound, or encoded, split or re-cased";
    SecretExfiltration = "secret_exfiltration", Status(403), "a credential's real secret sent anywhere but its binding";
    CredentialMinting = "credential_minting", Status(403), "a call that would mint a credential the sandbox keeps, which allow_minting does not name";
    AwsUnsigned = "aws_unsigned", Status(403), "a request to an AWS credential's destination that is not signed with the sandbox's placeholder key";
    AwsSignatureMalformed = "aws_signature_malformed", Status(403), "an AWS signature that cannot be read";
    AwsSignatureUnsupported = "aws_signature_unsupported", Status(403), "an AWS signature of a kind cordon does not re-sign";
    AwsSignatureKey = "aws_signature_key", Status(403), "an AWS signature made with another key than the sandbox's placeholder";
    AwsSignatureScope = "aws_signature_scope", Status(403), "an AWS signature for another region or service than the credential's";
    AwsSignatureExpired = "aws_signature_expired", Status(403), "an AWS signature too old or from the future";
    AwsSignatureMismatch = "aws_signature_mismatch", Status(403), "an AWS signature that does not match the request";
    AwsSessionToken = "aws_session_token", Status(403), "a session token the sandbox added itself";
    AwsBodyUnreadable = "aws_body_unreadable", Status(400), "a body to an AWS service cordon must read to judge, which cannot be read";
    MintingBodyUnreadable = "minting_body_unreadable", Status(400), "a token request body cordon must read to judge, which cannot be read";
    UnreadableBody = "unreadable_body", Status(400), "a request body in a content coding cordon cannot read to scan";
    BodyUnreadable = "body_unreadable", Status(400), "a request body that could not be read (to scan it or to show it to an approver)";
    UpstreamEncoding = "upstream_encoding", Status(502), "an answer to be masked in a content coding cordon cannot read";
    CredentialUnavailable = "credential_unavailable", Status(503), "a bound credential's secret or token could not be had";
    BodyTooLarge = "body_too_large", Status(413), "a body over 1 MiB to a destination where a placeholder may be swapped in it";
    MetadataName = "metadata_name", Status(403), "a cloud metadata name";
    MetadataAddress = "metadata_address", Status(403), "an address of a cloud metadata service, in any spelling";
    SpecialRange = "special_range", Status(403), "a private, loopback, link-local or other special address network.allow_cidrs does not open";
    SelfAddress = "self_address", Status(403), "one of cordon's own listeners";
    UnknownSource = "unknown_source", Status(403), "a connection from an address no sandbox claims";
    ResolveFailed = "resolve_failed", Status(502), "the name did not resolve";
    NoAddress = "no_address", Status(502), "the name resolved to no address";
    ConnectFailed = "connect_failed", Status(502), "the upstream refused or dropped the connection";
    UpstreamFailed = "upstream_failed", Status(502), "the upstream failed after the connection was made";
    UpstreamCertUntrusted = "upstream_cert_untrusted", Status(502), "the upstream's certificate did not verify";
    ConnectTimeout = "connect_timeout", Status(504), "the upstream did not accept the connection in time";
    UpstreamTimeout = "upstream_timeout", Status(504), "the upstream did not answer in time";
    TlsHandshakeTimeout = "tls_handshake_timeout", Status(504), "a TLS handshake took longer than timeouts.tls_handshake (the upstream's: 504; the sandbox's: the connection is closed)";
    TooManyConnections = "too_many_connections", Status(503), "over limits.max_connections";
    CredentialBudget = "credential_budget", Status(429), "a credential's usage budget for the sandbox (or its user) is spent in this window";
    SandboxRate = "sandbox_rate", Status(429), "the sandbox's request rate";
    UserRate = "user_rate", Status(429), "the user's request rate";
    HostRate = "host_rate", Status(429), "the request rate to this host";
    ConnectionRate = "connection_rate", Status(429), "the source address's connection rate";
    SandboxOpenLimit = "sandbox_open_limit", Status(429), "the sandbox's open connections";
    UserOpenLimit = "user_open_limit", Status(429), "the user's open connections";
    UploadBudget = "upload_budget", Status(429), "the sandbox's upload budget for the window";
    DownloadBudget = "download_budget", Status(429), "the sandbox's download budget for the window";
    AuthThrottled = "auth_throttled", Status(429), "too many failed proxy logins from the source address";
    UnauthenticatedLimit = "unauthenticated_limit", Status(429), "too many connections that have not authenticated yet";
    ApprovalSandboxLimit = "approval_sandbox_limit", Status(429), "approval.max_pending_per_sandbox requests of the sandbox already wait";
    ApprovalUserLimit = "approval_user_limit", Status(429), "approval.max_pending_per_user requests of the user already wait";
    McpInvalid = "mcp_invalid", Status(400), "a message to an MCP endpoint that is not JSON-RPC 2.0 (or a method MCP's HTTP transport does not use)";
    McpToolDenied = "mcp_tool_denied", Status(200), "a tools/call of a tool the endpoint's rule denies or does not name (answered with a JSON-RPC error)";
    McpMethodDenied = "mcp_method_denied", Status(200), "a JSON-RPC method beyond MCP's lifecycle that the endpoint's rule does not name (answered with a JSON-RPC error)";
    McpToolChanged = "mcp_tool_changed", Status(200), "a tools/call of a tool that changed what it says it does since the sandbox first saw it (answered with a JSON-RPC error)";
    GraphqlInvalid = "graphql_invalid", Status(400), "a request to a GraphQL endpoint cordon cannot judge: not GraphQL over HTTP, a document that does not parse, a parameter written twice or a stored document's id";
    GraphqlOperationDenied = "graphql_operation_denied", Status(200), "a GraphQL operation whose root fields (or name) the endpoint's rule denies or does not name (answered with a GraphQL error)";
    GraphqlPersistedUnknown = "graphql_persisted_unknown", Status(200), "a persisted query's hash whose document cordon has not seen (answered PersistedQueryNotFound, so the client sends the document)";
    ApprovalDenied = "approval_denied", Status(403), "a human denied the request";
    ApprovalTimeout = "approval_timeout", Status(403), "nobody decided within approval.timeout";
    SandboxHeld = "sandbox_held", Status(403), "a tunnel (tls: tunnel) of a sandbox on_violation holds";
    ApprovalQueueFull = "approval_queue_full", Status(503), "over approval.max_pending requests already wait";
    AuditUnavailable = "audit_unavailable", Status(503), "cordon cannot write its audit records: nothing is served until it can";
    Internal = "internal", Status(500), "a fault of cordon's (the log says more)";
    PreviewLogin = "preview_login", Status(401), "a preview without a link or session cookie, or with a bad one";
    PreviewUnknown = "preview_unknown", Status(404), "a preview of no live sandbox or port";
    PreviewOtherIncarnation = "preview_other_incarnation", Status(403), "a link or session made for an earlier sandbox of the same id";
    PreviewRevoked = "preview_revoked", Status(403), "a preview that was closed, or whose sandbox was revoked or expired";
    PortNotExposed = "port_not_exposed", Status(403), "a preview of a port the sandbox's policy does not expose";
    PreviewOther = "preview_other", Status(403), "a session for another preview";
    PreviewCrossOrigin = "preview_cross_origin", Status(403), "a request from another origin than the preview's own";
    PreviewNoAddress = "preview_no_address", Status(502), "the sandbox has no address its dev server can be reached at";
    PreviewUnreachable = "preview_unreachable", Status(502), "the dev server does not answer (504 when it is too slow)";
    PreviewFailed = "preview_failed", Status(500), "the preview could not be served";
    WebsocketMessageTooBig = "websocket_message_too_big", Close(1009), "a WebSocket message or frame over limits.websocket_message / websocket_frame, from either side";
    DnsOpcodeUnsupported = "dns_opcode_unsupported", Dns("NOTIMP"), "a DNS opcode other than QUERY";
    DnsMalformed = "dns_malformed", Dns("FORMERR"), "a DNS query without exactly one question";
    DnsClassRefused = "dns_class_refused", Dns("REFUSED"), "a DNS class other than IN (CHAOS, HESIOD)";
    DnsAnyRefused = "dns_any_refused", Dns("REFUSED"), "a DNS query of type ANY";
    SniMismatch = "sni_mismatch", Closed, "a TLS server name that is not the CONNECT's host";
    NotTls = "not_tls", Closed, "bytes that are not TLS where TLS was due";
    NotTlsOrHttp = "not_tls_or_http", Closed, "a transparent connection that is neither TLS nor HTTP";
    NoSni = "no_sni", Closed, "a transparent TLS connection without a server name";
    BadSni = "bad_sni", Closed, "a server name that is not a valid host";
    TlsHandshakeFailed = "tls_handshake_failed", Closed, "the sandbox's TLS handshake with cordon failed";
    LeafUnavailable = "leaf_unavailable", Closed, "no certificate for the host: the sandbox's CA does not cover it (the log names the command that fixes it)";
    ByteBudget = "byte_budget", Closed, "a tunnel closed because the sandbox spent its byte budget";
    TunnelMaxLifetime = "tunnel_max_lifetime", Closed, "a tunnel older than timeouts.tunnel_max";
    IdleTimeout = "idle_timeout", Closed, "a tunnel idle longer than timeouts.tunnel_idle";
    Closed = "closed", Record, "a tunnel that ended: one side closed it";
    Shutdown = "shutdown", Record, "a tunnel closed because cordon stopped";
    OnViolationRevoke = "on_violation_revoke", Record, "the record of an on_violation action that revoked a sandbox (kind violation)";
    OnViolationHold = "on_violation_hold", Record, "the record of an on_violation action that holds a sandbox (kind violation)";
    JailStarted = "jail_started", Record, "a jail started, with its limits and what holds each (kind jail)";
    JailLimit = "jail_limit", Record, "a jail reached a limit: which, its value, what holds it (kind jail)";
    JailEnded = "jail_ended", Record, "a jail ended, with its exit status (kind jail)";
    JailExec = "jail_exec", Record, "a program a jailed command started: path, arguments, folder, pid, parent, uid (kind exec)";
    JailFileWritten = "jail_file_written", Record, "a file a jailed command wrote, created, renamed or removed, or a summary of many in one folder (kind file)";
    JailFileChanged = "jail_file_changed", Record, "a file developer tools run, changed by a jailed command (kind jail_file)";
    AdminAction = "admin_action", Record, "the record of an admin API action: who did what (kind admin)";
    AdminUnauthorized = "admin_unauthorized", Status(401), "an admin API call without a valid token or session (kind admin)";
    AdminForbidden = "admin_forbidden", Status(403), "an admin API call whose principal lacks the role it needs (kind admin)";
    AdminNeedsTls = "admin_needs_tls", Status(403), "an admin API or console call on a plain-HTTP admin listener off loopback, where only probes and metrics are served (kind admin)";
    AdminCsrf = "admin_csrf", Status(403), "a console form posted without its session's CSRF token, or from another origin (kind admin)";
}

impl Reason {
    /// The README's table of reasons: a row per code, in the registry's order.
    pub(crate) fn table() -> String {
        let mut out = String::from("| answer | `x-cordon-reason` | meaning |\n| --- | --- | --- |\n");
        for r in Reason::ALL {
            out.push_str(&format!(
                "| {} | `{}` | {} |\n",
                r.answer().shown(),
                r.code(),
                r.meaning()
            ));
        }
        out
    }
}

#[cfg(test)]
#[path = "reason_tests.rs"]
mod tests;
