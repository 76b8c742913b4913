//! Names that cross modules, as types of their own: a sandbox's id and a credential's name are never confused
//! with each other, with a user or a policy name, or with any other string, and are cheap to clone (the request
//! path copies them into limits, metrics, budgets and records). Each reads as the `str` it holds.

use std::borrow::Borrow;
use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

/// A name type holding an `Arc<str>`: built from text, read as `str`, compared with text, written as a string.
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

        impl From<&str> for $name {
            fn from(s: &str) -> $name {
                $name(Arc::from(s))
            }
        }

        impl From<String> for $name {
            fn from(s: String) -> $name {
                $name(Arc::from(s))
            }
        }

        impl From<&String> for $name {
            fn from(s: &String) -> $name {
                $name(Arc::from(s.as_str()))
            }
        }

        impl Deref for $name {
            type Target = str;

            fn deref(&self) -> &str {
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

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<$name, D::Error> {
                String::deserialize(deserializer).map($name::from)
            }
        }
    };
}

name!(
    /// The id of a sandbox (declared in the configuration or created at run time).
    SandboxId
);

name!(
    /// The name of a credential (a key of `credentials:`), as policies, budgets and records name it.
    CredentialName
);

#[cfg(test)]
#[path = "names_tests.rs"]
mod tests;
