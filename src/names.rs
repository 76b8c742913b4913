//! Names that cross modules, as types of their own: a sandbox's id and a credential's name are never confused
//! with each other, with a user or a policy name, or with any other string, and are cheap to clone (the request
//! path copies them into limits, metrics, budgets and records). Each is read as text only by name (`as_str`, `Display`), never by dereference, so an id cannot pass for a string unnoticed.

use std::borrow::Borrow;
use std::fmt;
use std::sync::Arc;

/// A name type holding an `Arc<str>`: read as text by `as_str` (never by dereference), compared with text,
/// written as a string. How one is built from text is each type's own (see below).
macro_rules! name {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(Arc<str>);

        impl $name {
            /// The name as text.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl Borrow<str> for $name {
            fn borrow(&self) -> &str {
                &self.0
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                &*self.0 == other
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                &*self.0 == *other
            }
        }

        impl PartialEq<String> for $name {
            fn eq(&self, other: &String) -> bool {
                *self.0 == **other
            }
        }

        /// Debug-formatted as the text it holds (`"slack"`), as errors and logs quote names.
        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Debug::fmt(&*self.0, f)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(&self.0)
            }
        }
    };
}

name!(
    /// The id of a sandbox (declared in the configuration or created at run time). Only [`SandboxId::parse`]
    /// makes one from text, so every id the inner code holds keeps [`SANDBOX_ID_RULE`].
    SandboxId
);

/// What a sandbox id may be, for messages.
pub const SANDBOX_ID_RULE: &str = "use 1-64 letters, digits, '-', '_' or '.', not starting with '.'";

/// Whether `id` can be a sandbox id ([`SANDBOX_ID_RULE`]). Ids travel as the user part of Basic credentials,
/// which ends at the first ':', as a path segment of the admin API, and name the sandbox's CA folder.
pub fn valid_sandbox_id(id: &str) -> bool {
    // SECURITY: an id never starts with '.': not `.` or `..`, and not a name cordon gives its own files in
    // the CA folder (`.lock`), which a sandbox's folder would collide with.
    !id.is_empty()
        && id.len() <= 64
        && !id.starts_with('.')
        && id.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
}

/// Text that is no sandbox id, with the rule it breaks.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not a sandbox id; {SANDBOX_ID_RULE}")]
pub struct InvalidSandboxId(pub String);

impl SandboxId {
    /// The id `text` names, or why it cannot be one: the one way from text to a sandbox id (configuration,
    /// command-line arguments, admin API paths and bodies, database rows, credentials a sandbox sends).
    pub fn parse(text: &str) -> Result<SandboxId, InvalidSandboxId> {
        if valid_sandbox_id(text) {
            Ok(SandboxId(Arc::from(text)))
        } else {
            Err(InvalidSandboxId(text.to_string()))
        }
    }
}

impl std::str::FromStr for SandboxId {
    type Err = InvalidSandboxId;

    fn from_str(text: &str) -> Result<SandboxId, InvalidSandboxId> {
        SandboxId::parse(text)
    }
}

/// Read with the rule checked: a row or a body holding something else fails to read.
impl<'de> serde::Deserialize<'de> for SandboxId {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<SandboxId, D::Error> {
        let text = String::deserialize(deserializer)?;
        SandboxId::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// Tests name ids as literals; one that breaks the rule is a mistake in the test.
#[cfg(test)]
impl From<&str> for SandboxId {
    fn from(text: &str) -> SandboxId {
        #[expect(clippy::expect_used, reason = "tests")]
        SandboxId::parse(text).expect("a test names a valid sandbox id")
    }
}

name!(
    /// The name of a credential (a key of `credentials:`), as policies, budgets and records name it.
    CredentialName
);

impl From<&str> for CredentialName {
    fn from(s: &str) -> CredentialName {
        CredentialName(Arc::from(s))
    }
}

impl From<String> for CredentialName {
    fn from(s: String) -> CredentialName {
        CredentialName(Arc::from(s))
    }
}

impl From<&String> for CredentialName {
    fn from(s: &String) -> CredentialName {
        CredentialName(Arc::from(s.as_str()))
    }
}

impl<'de> serde::Deserialize<'de> for CredentialName {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<CredentialName, D::Error> {
        String::deserialize(deserializer).map(CredentialName::from)
    }
}

name!(
    /// One life of one sandbox id (see `identity::Sandbox::incarnation`): `id#nonce` for a run-time sandbox,
    /// `id@user` for one of the file. What everything bound to a sandbox is keyed by (placeholders, budgets, MCP
    /// sessions and pins, preview links, grants), so a key made for one life is never taken for another's, or for
    /// an id.
    Incarnation
);

impl Incarnation {
    /// The incarnation of the sandbox `id` declared in the file for `user`: `id@user` (declared again for
    /// another user, it is another incarnation).
    pub fn declared(id: &SandboxId, user: &str) -> Incarnation {
        Incarnation(Arc::from(format!("{id}@{user}")))
    }

    /// The incarnation of the run-time sandbox `id` created with `nonce` (random per creation): `id#nonce`.
    pub fn created(id: &SandboxId, nonce: &str) -> Incarnation {
        Incarnation(Arc::from(format!("{id}#{nonce}")))
    }

    /// The incarnation written `text`, read back from what cordon stored (budget counts shared with other
    /// replicas).
    pub(crate) fn of(text: impl Into<Arc<str>>) -> Incarnation {
        Incarnation(text.into())
    }
}

#[cfg(test)]
#[path = "names_tests.rs"]
mod tests;
