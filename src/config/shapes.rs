//! What the JSON Schema of `cordon.yaml` (`cordon config schema`) says about the values the raw types keep as
//! text: durations, sizes, addresses, CIDRs, URLs and the words a key takes. The raw types keep them as strings
//! so that validation can name the path and what belongs there; these types are never built, they only lend
//! their schema to such fields (`#[schemars(with = "...")]`), so an editor can complete and check what
//! `cordon check` would read.
//!
//! Each pattern accepts at least what validation accepts (a pattern that refused a value cordon takes would
//! make editors flag a good file); validation may still refuse a value the pattern lets by (zero durations,
//! ranges, bits below a prefix).

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};

/// A marker type whose only use is its schema: `$name` with `$schema`, kept under `$defs` unless `inline`.
macro_rules! shape {
    ($(#[$doc:meta])* $name:ident, inline: $inline:expr, $schema:tt) => {
        $(#[$doc])*
        pub(super) enum $name {}

        impl JsonSchema for $name {
            fn inline_schema() -> bool {
                $inline
            }
            fn schema_name() -> Cow<'static, str> {
                stringify!($name).into()
            }
            fn json_schema(_: &mut SchemaGenerator) -> Schema {
                json_schema!($schema)
            }
        }
    };
}

/// humantime's units (`humantime::parse_duration`), longest first within each family.
const DURATION: &str = concat!(
    r"^\s*([0-9]+(\.[0-9]+)?\s*(nanos|nsec|ns|usec|us|µs|millis|msec|ms|seconds|second|secs|sec|s|",
    r"minutes|minute|mins|min|m|hours|hour|hrs|hr|h|days|day|d|weeks|week|wks|wk|w|months|month|M|",
    r"years|year|yrs|yr|y)\s*)+$"
);

/// `bytesize`'s sizes: bytes alone, or a number and a unit (case-insensitive: `k`, `KB`, `KiB`, ..., `B`).
const SIZE: &str = r"^([0-9]+|([0-9]+(\.[0-9]*)?|\.[0-9]+)\s*([KkMmGgTtPpEe][Ii]?[Bb]?|[Bb]))$";

shape!(
    /// A duration, as `humantime` reads it.
    Duration, inline: false, {
        "description": "A duration: a number and a unit, e.g. \"500ms\", \"30s\", \"5m\", \"1h30m\", \"7d\".",
        "type": "string",
        "pattern": DURATION,
        "examples": ["30s", "5m", "1h"]
    }
);

shape!(
    /// A size in bytes, as `bytesize` reads it: a whole number of bytes, or text with a unit.
    Size, inline: false, {
        "description": "A size: bytes, or a number and a unit, e.g. \"64KiB\", \"100MiB\", \"1GB\".",
        "anyOf": [
            { "type": "integer", "minimum": 0 },
            { "type": "string", "pattern": SIZE }
        ],
        "examples": ["64KiB", "256MiB", "1GiB"]
    }
);

shape!(
    /// An IP address and a port, as `SocketAddr` reads it (no host names).
    HostPort, inline: false, {
        "description": "An IP address and a port, e.g. \"127.0.0.1:3128\", \"0.0.0.0:3128\" or \"[::1]:3128\".",
        "type": "string",
        "pattern": r"^([0-9]{1,3}(\.[0-9]{1,3}){3}|\[[^\]]+\]):[0-9]{1,5}$",
        "examples": ["127.0.0.1:3128"]
    }
);

shape!(
    /// An IP address.
    IpAddress, inline: false, {
        "description": "An IP address, e.g. \"10.0.0.1\" or \"fd00::1\".",
        "type": "string",
        "pattern": r"^[0-9A-Fa-f:.]+$"
    }
);

shape!(
    /// A CIDR, or an address alone (one host).
    Cidr, inline: false, {
        "description": "A CIDR, e.g. \"10.1.0.0/16\" or \"fd00::/8\", or one address.",
        "type": "string",
        "pattern": r"^[0-9A-Fa-f:.]+(/[0-9]{1,3})?$"
    }
);

shape!(
    /// An http(s) URL.
    HttpUrl, inline: false, {
        "description": "An http:// or https:// URL.",
        "type": "string",
        "pattern": r"^[Hh][Tt][Tt][Pp][Ss]?://."
    }
);

shape!(
    /// A port number.
    Port, inline: true, {
        "type": "integer",
        "minimum": 1,
        "maximum": 65535
    }
);

shape!(
    /// The SHA-256 of a token, in hex.
    Sha256, inline: false, {
        "description": "The SHA-256 of the sandbox's proxy token, 64 hex digits (`cordon token hash` prints it).",
        "type": "string",
        "pattern": r"^\s*[0-9A-Fa-f]{64}\s*$"
    }
);

shape!(
    /// A number of CPUs: a number, or text that is one.
    Cpus, inline: false, {
        "description": "CPUs, e.g. 1.5 (more than 0, at most 1024).",
        "anyOf": [
            { "type": "number", "exclusiveMinimum": 0, "maximum": 1024 },
            { "type": "string", "pattern": r"^\s*([0-9]+\.?[0-9]*|\.[0-9]+)\s*$" }
        ]
    }
);

shape!(
    /// A name or an id that YAML may read as a number or a switch when it is not quoted (`app_id: 12345`):
    /// cordon takes any scalar there as its text.
    Text, inline: true, {
        "type": ["string", "integer", "number", "boolean"]
    }
);

shape!(
    /// A credential's `kind:`, read without regard to case.
    CredentialKind, inline: true, {
        "description": "github: a GitHub Enterprise API host (its minting calls are refused).",
        "type": "string",
        "pattern": r"^\s*[Gg][Ii][Tt][Hh][Uu][Bb]\s*$",
        "examples": ["github"]
    }
);

/// The words a key takes, each with what it means: `choice!(Name, "doc", ["word", "what it does"], ...)`.
macro_rules! choice {
    ($(#[$doc:meta])* $name:ident, $($word:literal => $meaning:literal),+ $(,)?) => {
        shape!(
            $(#[$doc])*
            $name, inline: true, {
                "type": "string",
                "oneOf": [$({ "const": $word, "description": $meaning }),+]
            }
        );
    };
}

choice!(
    /// `policies.NAME.mode`.
    PolicyMode,
    "enforce" => "Refuse what no rule allows (the default).",
    "report" => "Let everything through, and record what enforce would have refused.",
);

choice!(
    /// A rule's `tls:`.
    TlsMode,
    "intercept" => "cordon terminates TLS and judges each request (the default).",
    "tunnel" => "Pass the TLS through unopened: host and port only, no methods, paths or credentials.",
);

choice!(
    /// A rule's `action:`.
    RuleAction,
    "allow" => "Let matching requests through (the default).",
    "ask" => "Hold matching requests until a person approves them.",
);

choice!(
    /// `log.format`.
    LogFormat,
    "text" => "Human-readable lines (the default).",
    "json" => "One JSON object per line.",
);

choice!(
    /// `network.resolver`.
    Resolver,
    "dns" => "resolv.conf and /etc/hosts, answers cached for their TTL (the default).",
    "system" => "The C library's getaddrinfo, uncached.",
);

choice!(
    /// A rule's `model_api.dialect`.
    Dialect,
    "openai" => "OpenAI's API and compatible ones: chat completions, responses, embeddings.",
    "anthropic" => "Anthropic's messages API.",
);

choice!(
    /// A model budget's `on_spent:`.
    OnSpent,
    "refuse" => "Refuse the next request (429 model_budget_spent) until the window renews (the default).",
    "ask" => "Hold the next request for a person, who may let it through.",
);

choice!(
    /// A budget's `per:`.
    BudgetPer,
    "sandbox" => "Each sandbox has the budget (the default).",
    "user" => "All of a user's sandboxes share it.",
);

choice!(
    /// `on_violation.action`.
    ViolationAction,
    "revoke" => "Revoke a run-time sandbox; suspend a sandbox of the file until restart or its hold is lifted.",
    "hold" => "Every further request waits for a person's approval; tunnels are refused.",
);

choice!(
    /// `source.oauth2.auth`.
    OAuth2Auth,
    "basic" => "The client id and secret in HTTP Basic auth (the default).",
    "post" => "The client id and secret in the form posted.",
);

choice!(
    /// An admin token's role.
    Role,
    "admin" => "Everything, reload included.",
    "platform" => "Create, patch, renew and revoke sandboxes, hand out credentials, rotate CAs, make previews.",
    "approver" => "List and decide held requests; remove standing grants.",
    "viewer" => "Read: sandboxes, approvals, grants, replicas.",
);
