//! Every reason code cordon gives, in one place: the code a sandbox reads in `x-cordon-reason` and the audit
//! record's `reason`, how the sandbox is answered, a line saying what it means, and what to do about it.
//!
//! Nothing else in the crate writes a reason as a string: the steps that refuse name a [`Reason`], and the
//! record, the metrics and the response header take its [`Reason::code`]. The registry itself is
//! `src/reason/codes.rs`, family by family; the book's Troubleshooting page (`docs/src/troubleshooting.md`) is
//! made from it, and a test fails when the two differ. The codes and their meanings are an interface (SIEM
//! queries, alerts and scripts match on them), so a code once shipped keeps its spelling.
//!
//! The registry alone says how a refusal is answered: a request refused for a reason gets the HTTP status of
//! that reason's [`Answer`], whatever step refused it and whichever error carried the reason
//! (`ProxyError::status`, the raw answers below hyper and the audit record all read it from here; a test in
//! `src/error_tests.rs` builds every kind of refusal and checks its response against its reason). So a reason
//! has one status: where the same refusal must be answered two ways, it is two reasons. A refusal said in a
//! protocol's own words (a JSON-RPC error, a GraphQL error, answered HTTP 200 because that is how the
//! protocol's clients understand a refusal) is [`Answer::InProtocol`], never `Status(200)`: its reasons are
//! given only to such answers, and such answers only carry its reasons.

/// How the sandbox is answered when a request ends for this reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Answer {
    /// An HTTP status (for a CONNECT, before its 200).
    Status(u16),
    /// An HTTP 200 whose body refuses in the protocol's own words (a JSON-RPC error for MCP, a GraphQL error),
    /// with the reason in it: how clients of that protocol understand a refusal.
    InProtocol,
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
    /// The HTTP status the sandbox gets, when the answer is an HTTP response (200 for one in the protocol's own
    /// words); `None` for a close code, a DNS answer, a closed connection or a record.
    pub(crate) const fn http_status(self) -> Option<u16> {
        match self {
            Answer::Status(s) => Some(s),
            Answer::InProtocol => Some(200),
            Answer::Close(_) | Answer::Dns(_) | Answer::Closed | Answer::Record => None,
        }
    }

    /// The answer as the table of `cordon reasons` shows it.
    pub(crate) fn shown(self) -> String {
        match self {
            Answer::Status(s) => s.to_string(),
            Answer::InProtocol => "200 (in its words)".to_string(),
            Answer::Close(c) => format!("({c})"),
            Answer::Dns(rcode) => format!("DNS {rcode}"),
            Answer::Closed => "closed".to_string(),
            Answer::Record => "record".to_string(),
        }
    }
}

/// The registry's shape: families (a title each, in the order the book shows them), each a list of
/// `Variant = "code", answer, "meaning", "what to do";`. Makes [`Reason`] and its accessors.
macro_rules! reasons {
    ($($family:literal {
        $($variant:ident = $code:literal, $answer:expr, $meaning:literal, $remedy:literal;)*
    })*) => {
        /// A reason code. See the module documentation.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Reason {
            $($(
                #[doc = $meaning]
                $variant,
            )*)*
        }

        impl Reason {
            /// Every reason, in the registry's order.
            pub(crate) const ALL: &'static [Reason] = &[$($(Reason::$variant,)*)*];

            /// The registry's families, in its order: each one's title and its reasons (the book's
            /// Troubleshooting page groups the codes by them).
            #[cfg(test)]
            pub(crate) const FAMILIES: &'static [(&'static str, &'static [Reason])] =
                &[$(($family, &[$(Reason::$variant,)*]),)*];

            /// The code, as `x-cordon-reason`, the audit record and the metrics carry it.
            pub const fn code(self) -> &'static str {
                match self {
                    $($(Reason::$variant => $code,)*)*
                }
            }

            /// How the sandbox is answered.
            pub(crate) const fn answer(self) -> Answer {
                match self {
                    $($(Reason::$variant => $answer,)*)*
                }
            }

            /// The reason whose code is `code`, if any (a record read back).
            pub(crate) fn from_code(code: &str) -> Option<Reason> {
                match code {
                    $($($code => Some(Reason::$variant),)*)*
                    _ => None,
                }
            }

            /// What it means, in a line.
            pub(crate) const fn meaning(self) -> &'static str {
                match self {
                    $($(Reason::$variant => $meaning,)*)*
                }
            }

            /// What to do about it, in a sentence or two, for whoever meets the code (a platform engineer, an
            /// agent's developer): which setting to change, which command tells more, or that the client must
            /// be fixed; "Nothing: this is a record" for a record that refuses nothing.
            pub(crate) const fn remedy(self) -> &'static str {
                match self {
                    $($(Reason::$variant => $remedy,)*)*
                }
            }
        }
    };
}

mod agent;
mod codes;
#[cfg(test)]
pub(crate) use agent::{HINT_MAX, Whose};
pub(crate) use agent::{NO_WAY_AROUND, SCHEMA};
pub(crate) use codes::Reason;

impl Reason {
    /// The reason for the same refusal said in a protocol's own words (a person's denial of an MCP call is
    /// `protocol_approval_denied`, not `approval_denied`, because it is answered 200 with a JSON-RPC error, not
    /// 403); a reason with no such twin is itself.
    pub(crate) const fn in_protocol(self) -> Reason {
        match self {
            Reason::ApprovalDenied => Reason::ProtocolApprovalDenied,
            Reason::ApprovalTimeout => Reason::ProtocolApprovalTimeout,
            other => other,
        }
    }

    /// The table of reasons `cordon reasons` prints: a row per code, in the registry's order. The book's
    /// Troubleshooting page starts with the same table, each code linked to its section.
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
