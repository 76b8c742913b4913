//! The registry of reason codes, family by family: for each reason its variant, its code, how the sandbox is
//! answered, what it means, and what to do about it (see `src/reason.rs`). A family's title is a section of the
//! book's Troubleshooting page, and the page lists the codes in this order; `CORDON_BLESS=1 cargo test --lib
//! reason` rewrites the page after a change here.
//!
//! What to do is written for whoever meets the code (a platform engineer, an agent's developer): the setting
//! to change, the command that tells more (every `cordon ...` named must be a real command: a test runs each
//! with `--help`), "Fix the client: ..." for what no setting allows, "Nothing: this is a record" for records.

use super::Answer::{self, Close, Closed, Dns, InProtocol, Record, Status};

reasons! {
    "Who is asking" {
        AuthMissing = "auth_missing", Status(407), "no proxy credentials",
            "Give the client its proxy URL with the sandbox's credential, `http://ID:TOKEN@HOST:PORT` in `HTTP_PROXY` and `HTTPS_PROXY` (`cordon sandbox env ID` prints them for a run-time sandbox). Clients that send credentials only after a 407 (git, libcurl) leave one such record per connection, which is harmless.";
        AuthMalformed = "auth_malformed", Status(407), "proxy credentials that cannot be read",
            "Fix the client: send one `Proxy-Authorization: Basic` header, base64 of `ID:TOKEN`, as clients build it from a proxy URL `http://ID:TOKEN@HOST:PORT`.";
        AuthInvalid = "auth_invalid", Status(407), "proxy credentials that open no sandbox",
            "Check the id and token in the proxy URL: for a sandbox of the file, the token's SHA-256 must be its `token_sha256` (`cordon token hash` prints it); for a run-time sandbox, issue a fresh credential with `cordon sandbox env ID`. Repeated failures are throttled (`auth_throttled`).";
        AuthExpired = "auth_expired", Status(407), "a run-time sandbox whose time ran out",
            "Create a new sandbox (`cordon sandbox create --user USER --policy POLICY`) and start the agent with its environment: an expired sandbox cannot be renewed. Renew live ones in time with `cordon sandbox renew ID --ttl 2h` (at most `control.max_ttl`).";
        AuthRevoked = "auth_revoked", Status(407), "a run-time sandbox that was revoked",
            "The sandbox was revoked (through the admin API, the console or `on_violation`) and cannot be brought back: find out why in its audit records, then create a new one with `cordon sandbox create --user USER --policy POLICY` if it should go on.";
        UnknownSource = "unknown_source", Status(403), "a connection from an address no sandbox claims",
            "Add the address to the sandbox's `source_cidrs` (in the file, or at creation: `cordon sandbox create --user USER --policy POLICY --source-cidr CIDR`), or have the client use the explicit proxy with its credential: the transparent listener and the DNS responder know sandboxes by address only.";
    }
    "Malformed destinations" {
        NotProxyRequest = "not_proxy_request", Status(400), "an origin-form request on the proxy port (set HTTP_PROXY, or use CONNECT)",
            "Point the client at cordon as a proxy, not as a server: set `HTTP_PROXY` and `HTTPS_PROXY` to `http://ID:TOKEN@HOST:PORT`, and clients send absolute URLs or CONNECT. Redirected traffic belongs on `listen.transparent`, not on the proxy port.";
        EmptyHost = "empty_host", Status(400), "the destination has no host",
            "Fix the client: the URL or the CONNECT target names no host.";
        NonAsciiHost = "non_ascii_host", Status(400), "a host that is not ASCII (send the punycode)",
            "Fix the client: send the name in its punycode form (`xn--...`); libraries that apply IDNA do it for you.";
        BadHost = "bad_host", Status(400), "a host that is not a name or an address",
            "Fix the client: a host is a name of letters, digits, `-` and `_` between dots, or an IP address (IPv6 in brackets); the DNS responder refuses an address asked as a name.";
        EmptyLabel = "empty_label", Status(400), "a host with an empty label",
            "Fix the client: the host has an empty label (`a..example.com`, a leading dot, or more than one trailing dot).";
        LabelTooLong = "label_too_long", Status(400), "a host label over 63 bytes",
            "Fix the client: no DNS name has a label over 63 bytes. A generated name this long may be carrying data out; look at the sandbox's other records.";
        HostTooLong = "host_too_long", Status(400), "a host over 253 bytes",
            "Fix the client: no DNS name is over 253 bytes. A generated name this long may be carrying data out; look at the sandbox's other records.";
        BadIpv6 = "bad_ipv6", Status(400), "a bracketed IPv6 address that is not one",
            "Fix the client: the text in brackets must be an IPv6 address, as in `[2001:db8::1]:443`.";
        ZoneId = "zone_id", Status(400), "an IPv6 address with a zone",
            "Fix the client: an address with a zone (`fe80::1%eth0`) means an interface of the sandbox's own host, which cordon cannot reach for it; use a routable address or a name.";
        UnbracketedIpv6 = "unbracketed_ipv6", Status(400), "an IPv6 address without brackets",
            "Fix the client: write an IPv6 address in brackets, `[2001:db8::1]:443`.";
        Userinfo = "userinfo", Status(400), "a destination with user information",
            "Fix the client: take `user:password@` out of the URL; send credentials in a header, or let cordon inject them (`credentials:`).";
        BadPort = "bad_port", Status(400), "a port that is not a number from 1 to 65535",
            "Fix the client: the port must be a number from 1 to 65535.";
        MissingPort = "missing_port", Status(400), "a CONNECT without a port",
            "Fix the client: a CONNECT target is `host:port`, as in `CONNECT example.com:443`.";
        NotAuthorityForm = "not_authority_form", Status(400), "a CONNECT whose target is not host:port",
            "Fix the client: a CONNECT target is `host:port` alone, with no scheme or path.";
        NotAbsolute = "not_absolute", Status(400), "a proxied request whose target is not an absolute URL",
            "Fix the client: a request to the proxy carries the whole URL (`GET http://example.com/path`), as clients send it when `HTTP_PROXY` is set.";
        BadScheme = "bad_scheme", Status(400), "a scheme other than http (https goes through CONNECT)",
            "Fix the client: send `https://` URLs through CONNECT (set `HTTPS_PROXY`, and clients tunnel them), and only `http://` as absolute URLs; cordon carries no other scheme.";
        MissingAuthority = "missing_authority", Status(400), "an absolute URL without a host",
            "Fix the client: the absolute URL names no host.";
        RelativePath = "relative_path", Status(400), "a path that does not start with /",
            "Fix the client: the path must start with `/`.";
        DotSegment = "dot_segment", Status(400), "a path with . or .. segments, in any spelling",
            "Fix the client: send the path with its `.` and `..` segments resolved (also when written `%2e`): cordon refuses rather than guess how the upstream would resolve them.";
        BadPath = "bad_path", Status(400), "a path with bytes a URL may not carry",
            "Fix the client: percent-encode spaces, quotes, control characters and bytes over 127 in the path.";
        BadEscape = "bad_escape", Status(400), "a path with a % not followed by two hex digits",
            "Fix the client: a `%` in the path must be followed by two hex digits; a literal `%` is written `%25`.";
        DuplicateHost = "duplicate_host", Status(400), "more than one Host header",
            "Fix the client: send one Host header; two could be read as two different hosts.";
        MissingHost = "missing_host", Status(400), "a request without the Host it needs",
            "Fix the client: send one Host header (inside a CONNECT, a Host or `:authority` naming the CONNECT's host).";
        ConnectInTunnel = "connect_in_tunnel", Status(400), "a CONNECT inside an intercepted connection",
            "Fix the client: it sent CONNECT through a connection cordon intercepts (a proxy chained behind cordon, or a proxy set twice); let it connect through cordon once.";
        ConnectTransparent = "connect_transparent", Status(400), "a CONNECT on the transparent listener",
            "Point explicit proxy clients at `listen.proxy`, not at the transparent listener, which takes only connections the kernel redirected to it.";
        BadTarget = "bad_target", Status(400), "plain HTTP on the transparent listener whose target is not a valid path",
            "Fix the client: a plain HTTP request to the transparent listener must have a path (`/...`) as its target.";
        HostPortMismatch = "host_port_mismatch", Status(400), "plain HTTP on the transparent listener whose Host names another port than the connection's",
            "Fix the client: the Host header must name the port the connection was made to (or none, for the scheme's default).";
        Misdirected = "misdirected", Status(421), "a request inside a CONNECT names another host or port",
            "Fix the client: send each host's requests through its own CONNECT, with a Host naming that host. HTTP/2 clients that reuse one connection for several hosts (connection coalescing) do this.";
    }
    "Malformed framing" {
        ClAndTe = "cl_and_te", Status(400), "both Content-Length and Transfer-Encoding",
            "Fix the client: send Content-Length or `Transfer-Encoding: chunked`, never both; cordon refuses what two servers could frame differently (request smuggling).";
        DuplicateContentLength = "duplicate_content_length", Status(400), "more than one Content-Length",
            "Fix the client: send one Content-Length header.";
        InvalidContentLength = "invalid_content_length", Status(400), "a Content-Length that is not a number",
            "Fix the client: Content-Length must be a decimal number alone (not `+5` or `5, 5`).";
        TeNotChunked = "te_not_chunked", Status(400), "a Transfer-Encoding that does not end in chunked",
            "Fix the client: send `Transfer-Encoding: chunked` alone, or a Content-Length instead.";
        TeInHttp10 = "te_in_http10", Status(400), "Transfer-Encoding in an HTTP/1.0 request",
            "Fix the client: HTTP/1.0 has no Transfer-Encoding; send a Content-Length, or speak HTTP/1.1.";
        MalformedHead = "malformed_head", Status(400), "a request head that cannot be read unambiguously",
            "Fix the client: its request line or headers can be read more than one way (line folding, a bare CR or NUL in a value, a space before a colon); the record's `error` says what.";
        MalformedChunk = "malformed_chunk", Status(400), "a chunked body that cannot be read unambiguously",
            "Fix the client: its chunked body does not follow the chunked format (hex sizes, CRLF after each chunk).";
        BodyIncomplete = "body_incomplete", Status(400), "a request body that broke off before its framing ended",
            "Fix the client: it stopped its request body before the end its Content-Length or chunked framing announced, or sent a chunked body cordon cut off (the connection's `malformed_chunk` record says where); the upstream got no complete request. The record's `error` says what.";
        UnparseableRequest = "unparseable_request", Status(400), "bytes that are not an HTTP request",
            "Fix the client: it sent something that is not HTTP to cordon, often TLS to the plain HTTP proxy port (an `https://` proxy URL): write the proxy URL with `http://`.";
        HeadTooLarge = "head_too_large", Status(431), "a request head over limits.max_request_header_bytes (or over the most cordon's HTTP parser reads: 100 headers, about 400 KiB)",
            "Send a smaller request head (fewer or shorter headers and cookies), or raise `limits.max_request_header_bytes` (at most 1MiB); a head of more than 100 headers or about 400 KiB is refused whatever the limit.";
        UriTooLong = "uri_too_long", Status(414), "a request target over 65534 bytes",
            "Fix the client: send a request target (path and query) under 64 KiB; put large data in the body. A generated URL this long may be carrying data out; look at the sandbox's other records.";
    }
    "The policy" {
        NoRule = "no_rule", Status(403), "no rule of the policy allows the host",
            "Run `cordon explain --sandbox ID URL` to see what decides; if the sandbox should reach the host, add a rule for it to the sandbox's policy (`allow:`), check it with `cordon check` and reload. A run-time sandbox's own policy changes with `cordon sandbox set-policy ID --policy-file FILE`.";
        PortNotAllowed = "port_not_allowed", Status(403), "a rule names the host, not this port",
            "Add the port to the governing rule's `ports` (the default is 80 and 443); `cordon explain --sandbox ID URL` names the rule.";
        MethodNotAllowed = "method_not_allowed", Status(403), "the governing rule does not allow the method (methods are case-sensitive)",
            "Add the method to the governing rule's `methods`, or fix the client's spelling (methods are case-sensitive: `get` is not GET); `cordon explain --sandbox ID --method METHOD URL` shows the decision.";
        PathNotAllowed = "path_not_allowed", Status(403), "the governing rule does not allow the path",
            "Add a glob for the path to the governing rule's `paths` (`*` stays within a segment, `**` spans segments); `cordon explain --sandbox ID URL` shows which rule governs.";
    }
    "The address guard" {
        MetadataName = "metadata_name", Status(403), "a cloud metadata name",
            "Nothing to open: cloud metadata names and `localhost` are refused whatever the policy says. Give the agent what it needs as a cordon credential; an agent that keeps trying may be prompt-injected (`on_violation`).";
        MetadataAddress = "metadata_address", Status(403), "an address of a cloud metadata service, in any spelling",
            "Nothing to open, as a rule: the metadata service hands out the machine's own cloud credentials. Only an exact entry of `network.dangerous_allow_metadata` opens one; an agent that keeps trying may be prompt-injected (`on_violation`).";
        SpecialRange = "special_range", Status(403), "a private, loopback, link-local or other special address network.allow_cidrs does not open",
            "If the sandbox should reach this private service, add its range to `network.allow_cidrs` (with a rule for it); `cordon explain --sandbox ID URL` shows the guard's verdict on every address the name resolves to. A public name answering with a private address may be DNS rebinding.";
        SelfAddress = "self_address", Status(403), "one of cordon's own listeners",
            "Nothing to open: no rule sends a sandbox to cordon's own listeners. Check the client's `NO_PROXY` and that it is not pointed at cordon's admin, preview or transparent address.";
    }
    "Credentials" {
        CredentialExfiltration = "credential_exfiltration", Status(403), "a placeholder sent where its credential is not bound, or encoded, split or re-cased",
            "The record's `error` names the credential and why. If the placeholder belongs there, add the host to the credential's `bind.hosts`; if it is stale (the sandbox was created again), give the sandbox its current environment (`cordon sandbox env ID`). Otherwise something tried to carry it out.";
        SecretExfiltration = "secret_exfiltration", Status(403), "a credential's real secret sent anywhere but its binding",
            "The sandbox holds a real secret, which it never should: take it out, give it the placeholder instead (`cordon placeholders --sandbox ID`), and rotate the secret, which may have leaked elsewhere.";
        CredentialMinting = "credential_minting", Status(403), "a call that would mint a credential the sandbox keeps, or give someone outside lasting access (a role's trust, a resource policy, a collaborator), which allow_minting does not name",
            "If the sandbox should make this call, name it in the credential's `allow_minting` (the record's `error` gives the call, e.g. `sts:AssumeRole`, `github:collaborators`; `cordon check` lists what each credential may mint); the token in the answer is still masked.";
        CredentialUnavailable = "credential_unavailable", Status(503), "a bound credential's secret or token could not be had",
            "Run `cordon check --probe` to ask each network source (OpenBao, an OAuth2 token endpoint, STS, a GitHub App) once and print its error; the record's `error` and `/readyz` name the credential. For a vault, `env` or `file` source, `cordon check` names what is missing. For a sign-in cordon holds (`oauth2_refresh`), the record's `error` says whether it is not seeded yet or was refused for good: sign in again and `cordon credentials seed NAME --refresh-token-file PATH`.";
    }
    "AWS signatures" {
        AwsUnsigned = "aws_unsigned", Status(403), "a request to an AWS credential's destination that is not signed with the sandbox's placeholder key",
            "Sign the request with the sandbox's AWS keys: give the SDK the `AWS_ACCESS_KEY_ID` and `AWS_SECRET_ACCESS_KEY` of `cordon sandbox env ID` (or `cordon placeholders --sandbox ID`): where an AWS credential is bound, only requests signed with them go.";
        AwsSignatureMalformed = "aws_signature_malformed", Status(400), "an AWS signature that cannot be read",
            "Fix the client: its `Authorization` header or presigned `X-Amz-*` parameters are not a SigV4 signature cordon can read; the answer says which part.";
        AwsSignatureUnsupported = "aws_signature_unsupported", Status(400), "an AWS signature of a kind cordon does not re-sign",
            "Sign with SigV4 over HTTPS: SigV2, SigV4a and chunk-signed payloads are not re-signed; the answer says what to set instead.";
        AwsSignatureKey = "aws_signature_key", Status(403), "an AWS signature made with another key than the sandbox's placeholder",
            "Sign with this sandbox's own placeholder keys (`cordon sandbox env ID`), not with real keys or keys for a credential not bound to this host.";
        AwsSignatureScope = "aws_signature_scope", Status(403), "an AWS signature for another region or service than the credential's",
            "Sign for the region and service the credential pins (`inject.aws_sigv4`): set the SDK's region (`AWS_REGION`) to match, or change the pin.";
        AwsSignatureExpired = "aws_signature_expired", Status(403), "an AWS signature too old or from the future",
            "Check the sandbox's clock (it must be within 15 minutes of cordon's), and use presigned URLs before their `X-Amz-Expires`.";
        AwsSignatureMismatch = "aws_signature_mismatch", Status(403), "an AWS signature that does not match the request",
            "Sign with the `AWS_SECRET_ACCESS_KEY` cordon gave this sandbox (`cordon sandbox env ID`), and change nothing the signature covers after signing.";
        AwsSessionToken = "aws_session_token", Status(403), "a session token the sandbox added itself",
            "Unset `AWS_SESSION_TOKEN` in the sandbox: its placeholder keys have none, and cordon adds its own keys' token.";
        AwsBodyUnreadable = "aws_body_unreadable", Status(400), "a body to an AWS service cordon must read to judge, which cannot be read",
            "Fix the client: send the body uncompressed and under 1 MiB, so cordon can see which action it calls.";
    }
    "Bodies cordon must read" {
        MintingBodyUnreadable = "minting_body_unreadable", Status(400), "a token request body cordon must read to judge, which cannot be read",
            "Fix the client: send the form uncompressed and under 1 MiB, so cordon can see whether it asks for a token.";
        TokenRequestAmbiguous = "token_request_ambiguous", Status(400), "a request that may be an OAuth2 token request written in a way servers read differently (a `;`, a byte order mark, a NUL, `grant_type` spelt otherwise, twice, nested or not a string, a charset, a multipart body)",
            "Fix the client: send a token request as every server reads it: `grant_type` once, written as it is, in an uncompressed UTF-8 `application/x-www-form-urlencoded` (or JSON) body without `;`. The answer says what is wrong.";
        UnreadableBody = "unreadable_body", Status(400), "a request body in a content coding cordon cannot read to scan",
            "Fix the client: send the body uncompressed, or in gzip, deflate, br or zstd, which cordon reads to scan it for secrets.";
        BodyUnreadable = "body_unreadable", Status(400), "a request body that could not be read (to scan it or to show it to an approver)",
            "The body broke off or was framed wrong before cordon had read it (to scan it, or to show it to an approver); the record's `error` says why. Usually the client gave up: retry.";
        BodyTooLarge = "body_too_large", Status(413), "a body over 1 MiB to a destination where a placeholder may be swapped in it",
            "Keep such bodies under 1 MiB, or stop swapping placeholders in bodies where none is needed (`inject.placeholder.body` on the credential bound there). Requests a rule holds for approval (`action: ask`) are read whole too.";
        UpstreamEncoding = "upstream_encoding", Status(502), "an answer to be masked in a content coding cordon cannot read",
            "The upstream compressed its answer in a coding cordon cannot read (it reads gzip, deflate, br and zstd) where it must mask a secret; nothing was passed on. Fix the upstream, or drop `mask_echo` from the credential bound there if no echo needs masking.";
    }
    "The upstream" {
        ResolveFailed = "resolve_failed", Status(502), "the name did not resolve",
            "Check the name: cordon resolves with `network.resolver` (`dns`: /etc/resolv.conf and /etc/hosts; `system`: the C library's getaddrinfo), and `network.hosts` pins names your network alone knows. The record's `error` has the resolver's answer.";
        NoAddress = "no_address", Status(502), "the name resolved to no address",
            "The name resolved to no address cordon could use: check its A and AAAA records, or pin it in `network.hosts`.";
        ConnectFailed = "connect_failed", Status(502), "the upstream refused or dropped the connection",
            "The upstream refused or dropped the connection: check that it listens on that port and that cordon's host may reach it (a firewall, an outbound proxy). The record's `error` names the address.";
        UpstreamFailed = "upstream_failed", Status(502), "the upstream failed after the connection was made",
            "The upstream failed after the connection was made (a reset, a protocol error); the record's `error` says how. Retry, or check the upstream.";
        UpstreamCertUntrusted = "upstream_cert_untrusted", Status(502), "the upstream's certificate did not verify",
            "The upstream's certificate did not verify against Mozilla's roots and `upstream.extra_roots`: for a server under your own CA add its PEM file to `upstream.extra_roots`; otherwise the server's chain is wrong (expired, another name, a missing intermediate). Verification cannot be turned off.";
        ConnectTimeout = "connect_timeout", Status(504), "the upstream did not accept the connection in time",
            "The upstream did not accept the connection within `timeouts.connect`: check that cordon's host can reach it, or raise the timeout for a slow network.";
        UpstreamTimeout = "upstream_timeout", Status(504), "the upstream did not answer in time",
            "The upstream did not send its answer's head within `timeouts.upstream_headers`: raise it for slow endpoints (long generations), or check the upstream.";
        TlsHandshakeTimeout = "tls_handshake_timeout", Status(504), "a TLS handshake took longer than timeouts.tls_handshake (the upstream's: 504; the sandbox's: the connection is closed)",
            "Raise `timeouts.tls_handshake` if the upstream is slow to shake hands (answered 504). On the sandbox's side (the connection closed) the client started TLS and did not finish: check that it speaks TLS to cordon and trusts the sandbox's CA.";
    }
    "Limits and budgets" {
        TooManyConnections = "too_many_connections", Status(503), "over limits.max_connections",
            "All `limits.max_connections` client connections are taken: raise it (a restart applies it) or add replicas; `cordon_open_connections{sandbox}` shows who holds them.";
        CredentialBudget = "credential_budget", Status(429), "a credential's usage budget for the sandbox (or its user) is spent in this window",
            "Wait until the window renews (`Retry-After`), or raise the credential's `budget` (or the policy's `credential_budget`); a sandbox that spends its budget may be misusing the credential.";
        SandboxRate = "sandbox_rate", Status(429), "the sandbox's request rate",
            "Slow the client down (it should honour `Retry-After`), or raise `limits.per_sandbox.requests`.";
        UserRate = "user_rate", Status(429), "the user's request rate",
            "Slow the user's sandboxes down (they should honour `Retry-After`), or raise `limits.per_user.requests`, which all of them share.";
        HostRate = "host_rate", Status(429), "the request rate to this host",
            "Slow the client down for this host (it should honour `Retry-After`), or raise `limits.per_sandbox.per_host`.";
        ConnectionRate = "connection_rate", Status(429), "the source address's connection rate",
            "Reuse connections (keep-alive, a connection pool) rather than opening one per request, or raise `limits.per_sandbox.connections`.";
        SandboxOpenLimit = "sandbox_open_limit", Status(429), "the sandbox's open connections",
            "Close idle connections and tunnels (a pool that leaks them), or raise `limits.per_sandbox.max_open`.";
        UserOpenLimit = "user_open_limit", Status(429), "the user's open connections",
            "Close idle connections and tunnels of the user's sandboxes, or raise `limits.per_user.max_open`, which all of them share.";
        UploadBudget = "upload_budget", Status(429), "the sandbox's upload budget for the window",
            "The sandbox sent `limits.per_sandbox.upload` bytes in this `budget_window`: wait until the window renews (`Retry-After`), or raise the budget.";
        DownloadBudget = "download_budget", Status(429), "the sandbox's download budget for the window",
            "The sandbox received `limits.per_sandbox.download` bytes in this `budget_window`: wait until the window renews (`Retry-After`), or raise the budget.";
        ByteBudget = "byte_budget", Closed, "a tunnel closed because the sandbox spent its byte budget",
            "The sandbox crossed its upload or download budget, and cordon closed its connections: raise `limits.per_sandbox.upload` or `download`, or wait until the `budget_window` renews.";
        AuthThrottled = "auth_throttled", Status(429), "too many failed proxy logins from the source address",
            "Fix the credential the client sends (wrong tokens for this id from this address are what counted); it is let in again once `limits.auth_failures` allows. For a run-time sandbox, `cordon sandbox env ID` issues a fresh credential.";
        UnauthenticatedLimit = "unauthenticated_limit", Status(429), "too many connections that have not authenticated yet",
            "Find the client that opens connections and sends nothing (or a scanner); when many sandboxes share one address (a NAT), raise `limits.per_source.unauthenticated`.";
    }
    "MCP and GraphQL" {
        McpInvalid = "mcp_invalid", Status(400), "a message to an MCP endpoint that is not JSON-RPC 2.0 (or a method MCP's HTTP transport does not use)",
            "Fix the client: send strict JSON-RPC 2.0, uncompressed, by POST (no member written twice, no unknown member, an id that is a string or an integer); the answer says what is wrong.";
        McpToolDenied = "mcp_tool_denied", InProtocol, "a tools/call of a tool the endpoint's rule denies or does not name (answered with a JSON-RPC error)",
            "If the agent should call this tool, name it in the rule's `mcp.tools` (or `mcp.ask`, to have a person decide) and keep it out of `mcp.deny`; `cordon explain --sandbox ID --method POST URL` shows the rule.";
        McpMethodDenied = "mcp_method_denied", InProtocol, "a JSON-RPC method beyond MCP's lifecycle that the endpoint's rule does not name (answered with a JSON-RPC error)",
            "If the agent needs the method, name it in the rule's `mcp.methods` (e.g. `resources/read`).";
        McpToolChanged = "mcp_tool_changed", InProtocol, "a tools/call of a tool that changed what it says it does since the sandbox first saw it (answered with a JSON-RPC error)",
            "The server changed what the tool says (any member of the tool: its description, schemas, annotations, `_meta`, icons) since the sandbox first saw it on that server (its origin, whatever the path), and cordon's log names the sandbox, server and tool: review the change. If it is sound, a new sandbox pins the tool afresh.";
        McpSessionForeign = "mcp_session_foreign", Status(403), "a request with an Mcp-Session-Id (or the older HTTP+SSE transport's session id in its query) that another sandbox first showed cordon (the session is that sandbox's)",
            "Fix the client: a session is its own sandbox's; start one with `initialize` rather than reuse an id another sandbox was given. Several sandboxes sharing one id is what this refuses.";
        McpRedirect = "mcp_redirect", Status(502), "an MCP endpoint redirected to another origin, or to a path no `mcp:` rule of the sandbox's policy allows (its tool lists would escape the pins and the filter)",
            "If the server really moved, point the client at the new URL and give it a rule with an `mcp:` section; a redirect within the same origin to a path an `mcp:` rule allows (e.g. `/mcp` to `/mcp/`) goes through.";
        McpAnswerUnreadable = "mcp_answer_unreadable", Status(502), "an MCP endpoint's answer that cordon cannot read with certainty as JSON or an event stream (where a tool list could be), or over its bounds (8 MiB an answer or event, 16 MiB a sandbox, 64 MiB in all); an error answer keeps its status with its body withheld",
            "Fix the server: answer with `application/json` (one JSON text, no member twice) or exactly `text/event-stream`, uncompressed, each event under 8 MiB; cordon's log names the server and what it could not read.";
        GraphqlInvalid = "graphql_invalid", Status(400), "a request to a GraphQL endpoint cordon cannot judge: not GraphQL over HTTP, a document that does not parse, a parameter written twice or a stored document's id",
            "Fix the client: send one GraphQL request by GET or POST (JSON, `application/graphql` or a form), uncompressed, each parameter once; stored document ids, uploads and WebSockets cannot be judged. The answer says what is wrong.";
        GraphqlOperationDenied = "graphql_operation_denied", InProtocol, "a GraphQL operation whose root fields (or name) the endpoint's rule denies or does not name (answered with a GraphQL error)",
            "If the agent should send it, name its type or root field in the rule's `graphql.operations` (or `graphql.ask`) and keep it out of `graphql.deny`; the record's `graphql.fields` lists what it selected.";
        GraphqlPersistedUnknown = "graphql_persisted_unknown", InProtocol, "a persisted query's hash whose document cordon has not seen (answered PersistedQueryNotFound, so the client sends the document)",
            "Usually nothing: Apollo-style clients answer `PersistedQueryNotFound` by sending the document, which cordon checks and remembers. A client that only ever sends hashes must be set to send documents.";
    }
    "Model APIs" {
        ModelNotAllowed = "model_not_allowed", Status(403), "a request to a model API for a model the endpoint's rule does not list under `model_api.models`",
            "If the agent should use this model, add it (or a glob) to the rule's `model_api.models`; the answer lists the models the rule allows.";
        ModelApiInvalid = "model_api_invalid", Status(400), "a request to a model API that cordon cannot read the model of: a POST whose body is not one uncompressed JSON object with a string `model`",
            "Send model calls as JSON with their `model`, uncompressed; give the API's other endpoints (file uploads, listings) a rule of their own without `model_api`, so they are not read as model calls.";
        ModelUnpriced = "model_unpriced", Status(403), "a request for a model the price table (`model_prices:`) does not price, where a model budget limits cost",
            "Add the model (or a glob over it) to `model_prices:` with its input and output price per million tokens; until then a cost budget cannot count it, so it is refused.";
        ModelBudgetSpent = "model_budget_spent", Status(429), "the sandbox's (or its user's) model budget (`model_budget:` tokens or cost) is spent in this window",
            "The window's tokens or cost are used: wait until it renews (`Retry-After`), or raise `policies.NAME.model_budget`; with `on_spent: ask` a person can let a request through.";
        ModelBudgetUnavailable = "model_budget_unavailable", Status(503), "cordon cannot read or count the model budget (the shared PostgreSQL store is down): a request it cannot count is not sent",
            "Bring the PostgreSQL store back (`/readyz` says what is wrong); model calls under a budget are refused until cordon can count them.";
    }
    "Approval and `on_violation`" {
        ApprovalSandboxLimit = "approval_sandbox_limit", Status(429), "approval.max_pending_per_sandbox requests of the sandbox already wait",
            "Decide the sandbox's waiting requests (`cordon approvals list`, or the console), or raise `approval.max_pending_per_sandbox` (a restart applies it).";
        ApprovalUserLimit = "approval_user_limit", Status(429), "approval.max_pending_per_user requests of the user already wait",
            "Decide the user's waiting requests (`cordon approvals list`, or the console), or raise `approval.max_pending_per_user` (a restart applies it).";
        ApprovalDenied = "approval_denied", Status(403), "a human denied the request",
            "A person denied it (the record names who): nothing to fix in cordon. For requests that are always fine, allow with `cordon approvals allow ID --always`, or drop `action: ask` from the rule.";
        ApprovalTimeout = "approval_timeout", Status(403), "nobody decided within approval.timeout",
            "Nobody decided within `approval.timeout`: make sure approvers hear of held requests (the console, `approval.webhook`, `cordon approvals list`), or raise the timeout (a restart applies it).";
        ProtocolApprovalDenied = "protocol_approval_denied", InProtocol, "a human denied a message to an MCP or GraphQL endpoint (answered with a JSON-RPC or GraphQL error)",
            "A person denied the call (the record names who): nothing to fix in cordon. The agent's MCP or GraphQL client sees an error like any tool or operation error. For calls that are always fine, allow with `cordon approvals allow ID --always`, or take the tool or operation out of the rule's `mcp.ask` or `graphql.ask`.";
        ProtocolApprovalTimeout = "protocol_approval_timeout", InProtocol, "nobody decided on a message to an MCP or GraphQL endpoint within approval.timeout (answered with a JSON-RPC or GraphQL error)",
            "Nobody decided within `approval.timeout`: make sure approvers hear of held requests (the console, `approval.webhook`, `cordon approvals list`), or raise the timeout (a restart applies it).";
        ApprovalQueueFull = "approval_queue_full", Status(503), "over approval.max_pending requests already wait",
            "Decide what waits (`cordon approvals list`), or raise `approval.max_pending` (a restart applies it).";
        SandboxHeld = "sandbox_held", Status(403), "a tunnel (tls: tunnel) of a sandbox on_violation holds",
            "`on_violation` holds the sandbox: its requests wait for a person and its blind tunnels are refused. Read its records; then lift the hold (`DELETE /v1/sandboxes/ID/hold` on the admin API) or revoke it (`cordon sandbox revoke ID`).";
        OnViolationRevoke = "on_violation_revoke", Record, "the record of an on_violation action that revoked a sandbox (kind violation)",
            "Nothing: this is a record of the action taken. The records before it (and the webhook's `sandbox.violation` event) show what the sandbox tried; a sandbox of the file stays suspended until a restart or `DELETE /v1/sandboxes/ID/hold`.";
        OnViolationHold = "on_violation_hold", Record, "the record of an on_violation action that holds a sandbox (kind violation)",
            "Nothing: this is a record of the action taken. Decide the sandbox's held requests (`cordon approvals list`), and lift the hold with `DELETE /v1/sandboxes/ID/hold` once it is safe.";
    }
    "Access requests (from inside a sandbox)" {
        AccessNotOffered = "access_not_offered", Status(403), "an access request from a sandbox whose policy offers no asking (it has no `access:`)",
            "If the policy's sandboxes should ask for access, give it a `boundary:` (the most they may be granted) and an `access:` (see the book's When an agent is refused).";
        AccessInvalid = "access_invalid", Status(400), "an access request cordon cannot read: not JSON, an unknown field, or rules that are not rules",
            "Fix the agent's request: its answer lists each problem at its path (`allow[0].ports: ...`); the fields are allow, reason and lifetime.";
        AccessPastBoundary = "access_past_boundary", Status(403), "an access request for more than the policy's boundary allows",
            "Nothing to grant: the answer names what goes past the boundary, with a request that shows it. Widen the policy's `boundary:` if sandboxes should be able to get it (check with `cordon policy contains boundary:POLICY FILE`).";
        AccessTooOften = "access_too_often", Status(429), "over the policy's access.per_hour requests in an hour, or too many waiting for a person",
            "Decide what waits (`cordon approvals list`), or raise the policy's `access.per_hour`; the agent may ask again after Retry-After.";
        AccessUnknown = "access_unknown", Status(404), "an access request the sandbox did not file, or a path cordon does not answer at access.cordon.internal",
            "Fix the agent: it may read only its own requests, at /v1/requests and /v1/requests/ID.";
        AccessNeedsHttp = "access_needs_http", Status(400), "access.cordon.internal asked for other than by plain HTTP through the proxy (a CONNECT, a DNS query)",
            "Fix the agent: cordon answers access.cordon.internal itself, as http:// through the proxy in HTTP_PROXY (never resolved, never through TLS).";
    }
    "cordon itself" {
        AuditUnavailable = "audit_unavailable", Status(503), "cordon cannot write its audit records: nothing is served until it can",
            "Free or fix the disk that holds `audit.path`: cordon serves again by itself at the first write that succeeds. `/readyz`, `cordon_audit_up` and stderr say why meanwhile.";
        Internal = "internal", Status(500), "a fault of cordon's (the log says more)",
            "A fault of cordon's: its log (stderr) has a line with the detail at the same moment; report it with that line.";
    }
    "Previews" {
        PreviewLogin = "preview_login", Status(401), "a preview without a link or session cookie, or with a bad one",
            "Open a fresh link: `cordon sandbox preview ID --port PORT --user USER` prints one (it lives `previews.link_ttl`, its session `previews.session_ttl`).";
        PreviewUnknown = "preview_unknown", Status(404), "a preview of no live sandbox or port",
            "Check that the link's host (`PORT-SANDBOX.` and then `previews.domain`) names a live sandbox (`cordon sandbox list`), or make a fresh link with `cordon sandbox preview ID --port PORT --user USER`.";
        PreviewOtherIncarnation = "preview_other_incarnation", Status(403), "a link or session made for an earlier sandbox of the same id",
            "The link or session was made for an earlier sandbox of this id: make a fresh link with `cordon sandbox preview ID --port PORT --user USER`.";
        PreviewRevoked = "preview_revoked", Status(403), "a preview that was closed, or whose sandbox was revoked or expired",
            "The preview was closed, or its sandbox revoked or expired: make a fresh link for a live sandbox with `cordon sandbox preview ID --port PORT --user USER`.";
        PortNotExposed = "port_not_exposed", Status(403), "a preview of a port the sandbox's policy does not expose",
            "Add the port to the sandbox's policy's `expose` (e.g. `expose: [3000]`) if people should see it.";
        PreviewOther = "preview_other", Status(403), "a session for another preview",
            "Open this preview's own link: a session opens only the preview (sandbox and port) its link was made for.";
        PreviewCrossOrigin = "preview_cross_origin", Status(403), "a request from another origin than the preview's own",
            "Keep a preview's requests on its own origin: let the front end's dev server proxy the API (Vite's `server.proxy` and the like) rather than call another port or preview.";
        PreviewNoAddress = "preview_no_address", Status(502), "the sandbox has no address its dev server can be reached at",
            "Give the sandbox an address of its own: a `source_cidrs` entry of one address (`/32` or `/128`), in the file or at creation (`cordon sandbox create --user USER --policy POLICY --source-cidr CIDR`).";
        PreviewUnreachable = "preview_unreachable", Status(502), "the dev server does not answer",
            "Start the dev server in the sandbox on that port, listening on the sandbox's address (`0.0.0.0`, not `127.0.0.1`).";
        PreviewTimeout = "preview_timeout", Status(504), "the dev server did not answer within timeouts.upstream_headers",
            "Check that the dev server answers in time (`timeouts.upstream_headers`); a dev server still compiling its first page may need a longer one.";
        PreviewFailed = "preview_failed", Status(500), "the preview could not be served",
            "A fault while serving the preview: cordon's log (stderr) has the detail at the same moment.";
    }
    "WebSocket and DNS" {
        WebsocketMessageTooBig = "websocket_message_too_big", Close(1009), "a WebSocket message or frame over limits.websocket_message / websocket_frame, from either side",
            "If such messages are expected, raise `limits.websocket_message` (and `limits.websocket_frame`, at most as large); WebSockets opened after the reload get the new sizes. The record names the side that sent it.";
        DnsOpcodeUnsupported = "dns_opcode_unsupported", Dns("NOTIMP"), "a DNS opcode other than QUERY",
            "Fix the client: cordon's DNS responder answers standard queries only (no NOTIFY, UPDATE or inverse queries).";
        DnsMalformed = "dns_malformed", Dns("FORMERR"), "a DNS query without exactly one question",
            "Fix the client: send exactly one question per DNS query.";
        DnsClassRefused = "dns_class_refused", Dns("REFUSED"), "a DNS class other than IN (CHAOS, HESIOD)",
            "Nothing to change: only class IN is answered (server version probes such as CHAOS `version.bind` are refused).";
        DnsAnyRefused = "dns_any_refused", Dns("REFUSED"), "a DNS query of type ANY",
            "Fix the client: ask for A or AAAA records (RFC 8482 retires ANY); the responder answers only for names the policy allows.";
    }
    "TLS and transparent connections" {
        SniMismatch = "sni_mismatch", Closed, "a TLS server name that is not the CONNECT's host",
            "Fix the client: the TLS server name must be the CONNECT's host; a name that differs (domain fronting) is refused.";
        NotTls = "not_tls", Closed, "bytes that are not TLS where TLS was due",
            "Fix the client: after a CONNECT, cordon expects TLS; send cleartext HTTP as `http://` URLs through the proxy, not inside a CONNECT. Other protocols cannot pass cordon.";
        NotTlsOrHttp = "not_tls_or_http", Closed, "a transparent connection that is neither TLS nor HTTP",
            "Redirect only web traffic (ports 80 and 443) to the transparent listener: other protocols (SSH, databases) cannot pass cordon.";
        NoSni = "no_sni", Closed, "a transparent TLS connection without a server name",
            "Fix the client: it must send a server name (SNI) for cordon to know the host; clients leave it out when connecting to an IP address, so use the host name, or the explicit proxy (`HTTPS_PROXY`).";
        BadSni = "bad_sni", Closed, "a server name that is not a valid host",
            "Fix the client: its TLS server name must be a valid host name.";
        TlsHandshakeFailed = "tls_handshake_failed", Closed, "the sandbox's TLS handshake with cordon failed",
            "Usually the client does not trust the sandbox's CA: install it (`cordon ca export --sandbox ID`, or `cordon sandbox ca-bundle ID` for a run-time sandbox) and point the client's CA variable at it (`SSL_CERT_FILE`, `REQUESTS_CA_BUNDLE`, `NODE_EXTRA_CA_CERTS`...). A client that pins certificates needs a `tls: tunnel` rule.";
        LeafUnavailable = "leaf_unavailable", Closed, "no certificate for the host: the sandbox's CA does not cover it (the log names the command that fixes it)",
            "The sandbox's CA cannot sign for the host (its policy was widened after the CA was made): run the command the log names (`cordon ca rotate --sandbox ID`), then give the sandbox its new CA (`cordon ca export --sandbox ID`).";
    }
    "How tunnels end" {
        TunnelMaxLifetime = "tunnel_max_lifetime", Closed, "a tunnel older than timeouts.tunnel_max",
            "Raise `timeouts.tunnel_max` if connections must live longer, or have the client reconnect.";
        IdleTimeout = "idle_timeout", Closed, "a tunnel idle longer than timeouts.tunnel_idle",
            "Raise `timeouts.idle`, or have the client keep the connection busy (WebSocket or HTTP/2 pings).";
        Closed = "closed", Record, "a tunnel that ended: one side closed it",
            "Nothing: this is how a tunnel's record ends. When cordon closed it (`decision` `deny`), the record's `error` says why: the sandbox was revoked, expired or removed, spent its byte budget, or its policy no longer allows the host.";
        Shutdown = "shutdown", Record, "a tunnel closed because cordon stopped",
            "Nothing: cordon stopped and cut what was still open after `timeouts.drain`; clients reconnect to another replica or after the restart. Raise `timeouts.drain` to let long transfers finish.";
    }
    "Jails" {
        JailStarted = "jail_started", Record, "a jail started, with its limits and what holds each (kind jail)",
            "Nothing: this is a record of the jail's limits and what set each.";
        JailLimit = "jail_limit", Record, "a jail reached a limit: which, its value, what holds it (kind jail)",
            "Nothing: this is a record. If the command needs more, raise the limit it names: `jail:` of the configuration or of the policy, or `cordon jail` with `--memory`, `--cpu`, `--pids`, `--disk`, `--wall` or `--idle`.";
        JailEnded = "jail_ended", Record, "a jail ended, with its exit status (kind jail)",
            "Nothing: this is a record with the command's exit status (124: `cordon jail --wall` stopped it; 123: `--idle` did; 125: the jail itself failed, and stderr says why).";
        JailExec = "jail_exec", Record, "a program a jailed command started: path, arguments, folder, pid, parent, uid (kind exec)",
            "Nothing: this is a record of a program the jailed command started (`audit.activity: false` stops these).";
        JailFileWritten = "jail_file_written", Record, "a file a jailed command wrote, created, renamed or removed, or a summary of many in one folder (kind file)",
            "Nothing: this is a record of a file the jailed command changed (`audit.activity: false` stops these).";
        JailAttempted = "jail_attempted", Record, "a program start or file change a jailed command asked for that the kernel refuses: the error it answers, as cordon saw while the call waited (kinds exec and file)",
            "Nothing: this is a record of an attempt that failed (a program not there, a file on a read-only mount, a folder the command may not write). Many from one program is a tool probing `PATH` or a command trying what its jail does not let it.";
        JailUnreadable = "jail_unreadable", Record, "a program start or file change of a jailed command whose path cordon could not read: the system call and pid, and why (kinds exec and file)",
            "Look at `unreadable`: a path or argument in memory the process could not map (the kernel refuses the call too), or a descriptor or folder out of cordon's reach. The call was made; what it named is not known.";
        JailFileChanged = "jail_file_changed", Record, "a file developer tools run, changed by a jailed command (kind jail_file)",
            "Review the change before you run git, direnv or your editor in that folder: the jailed command changed a file those tools run (a git hook, `.envrc`, `.vscode/`...).";
    }
    "The admin API and the console" {
        AdminAction = "admin_action", Record, "the record of an admin API action: who did what (kind admin)",
            "Nothing: this is a record of who did what through the admin API or the console.";
        AdminUnauthorized = "admin_unauthorized", Status(401), "an admin API call without a valid token or session (kind admin)",
            "Send a valid admin token, `control.admin_token` or one of `control.admin_tokens` (`cordon sandbox list --token-file FILE` tries one), and a client certificate where `admin.tls.client_ca` asks for one; in the console, sign in again.";
        AdminForbidden = "admin_forbidden", Status(403), "an admin API call whose principal lacks the role it needs (kind admin)",
            "Give the principal the role the answer names: its `roles` in `control.admin_tokens`, or `console.oidc.roles` for people who sign in.";
        AdminNeedsTls = "admin_needs_tls", Status(403), "an admin API or console call on a plain-HTTP admin listener off loopback, where only probes and metrics are served (kind admin)",
            "Set `admin.tls`, or put `listen.admin` on a loopback address: off loopback, plain HTTP serves only the probes and metrics, so tokens and sign-ins never cross the network in the clear.";
        AdminCsrf = "admin_csrf", Status(403), "a console form posted without its session's CSRF token, or from another origin (kind admin)",
            "Reload the console page and submit again: the form must come from a page of this console, carrying its session's CSRF token.";
    }

}
