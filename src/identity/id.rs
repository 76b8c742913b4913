//! A sandbox's id as a type of its own: never confused with a user or a policy name, and cheap to clone (the
//! request path copies it into limits, metrics and records).

use std::borrow::Borrow;
use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

/// The id of a sandbox (declared in the configuration or created at run time).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SandboxId(Arc<str>);

impl SandboxId {
    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl From<&str> for SandboxId {
    fn from(id: &str) -> SandboxId {
        SandboxId(Arc::from(id))
    }
}

impl From<String> for SandboxId {
    fn from(id: String) -> SandboxId {
        SandboxId(Arc::from(id))
    }
}

impl Deref for SandboxId {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl Borrow<str> for SandboxId {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for SandboxId {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl PartialEq<str> for SandboxId {
    fn eq(&self, other: &str) -> bool {
        &*self.0 == other
    }
}

impl PartialEq<&str> for SandboxId {
    fn eq(&self, other: &&str) -> bool {
        &*self.0 == *other
    }
}

impl PartialEq<String> for SandboxId {
    fn eq(&self, other: &String) -> bool {
        *self.0 == **other
    }
}

impl fmt::Display for SandboxId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl serde::Serialize for SandboxId {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}
