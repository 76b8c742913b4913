//! Who calls the admin API and what they may do. A [`Principal`] is a named admin token or a person signed in
//! through OpenID Connect; it carries [`Roles`], and each admin call [`Needs`] one of them. The principal's name is
//! what the audit records and approval decisions carry: it comes from the token's configured name or the verified
//! ID token, never from a request body.

use std::fmt;

use serde::Serialize;

/// A role an admin token or a signed-in person holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Everything, reload included.
    Admin,
    /// Create, patch, renew and revoke sandboxes, hand out their credentials, rotate their CAs, make previews.
    Platform,
    /// List and decide held requests; remove standing grants.
    Approver,
    /// Read: sandboxes, approvals, grants, replicas.
    Viewer,
}

impl Role {
    /// Every role, in the order the documentation lists them.
    pub const ALL: [Role; 4] = [Role::Admin, Role::Platform, Role::Approver, Role::Viewer];

    /// The role's name in the configuration and in records.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Admin => "admin",
            Role::Platform => "platform",
            Role::Approver => "approver",
            Role::Viewer => "viewer",
        }
    }

    /// The role named `name`, or an error that lists the roles there are.
    pub fn parse(name: &str) -> Result<Role, String> {
        Role::ALL.into_iter().find(|r| r.as_str() == name).ok_or_else(|| {
            format!(
                "{name:?} is not a role; the roles are {}",
                Role::ALL.map(Role::as_str).join(", ")
            )
        })
    }

    fn bit(self) -> u8 {
        1 << (self as u8)
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A set of roles.
#[derive(Clone, Copy, Default, PartialEq, Eq)]
pub struct Roles(u8);

impl Roles {
    /// The set holding `roles`.
    pub fn of(roles: impl IntoIterator<Item = Role>) -> Roles {
        let mut set = Roles::default();
        for r in roles {
            set.0 |= r.bit();
        }
        set
    }

    /// Whether `role` is in the set.
    pub fn has(self, role: Role) -> bool {
        self.0 & role.bit() != 0
    }

    /// Whether the set is empty.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The roles in the set, in [`Role::ALL`]'s order.
    pub fn iter(self) -> impl Iterator<Item = Role> {
        Role::ALL.into_iter().filter(move |r| self.has(*r))
    }

    /// Both sets together.
    pub fn union(self, other: Roles) -> Roles {
        Roles(self.0 | other.0)
    }

    /// The names, comma-separated (`none` for the empty set).
    pub fn names(self) -> String {
        if self.is_empty() {
            return "none".to_owned();
        }
        self.iter().map(Role::as_str).collect::<Vec<_>>().join(", ")
    }
}

impl fmt::Debug for Roles {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl Serialize for Roles {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.iter())
    }
}

/// What an admin call needs. `admin` satisfies every need.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Needs {
    /// Reading (any role).
    Read,
    /// Changing sandboxes: `platform`.
    Sandboxes,
    /// Deciding held requests and removing grants: `approver`.
    Decide,
    /// What only `admin` may do (reload).
    Admin,
}

impl Needs {
    /// The roles that satisfy the need.
    pub fn roles(self) -> Roles {
        match self {
            Needs::Read => Roles::of(Role::ALL),
            Needs::Sandboxes => Roles::of([Role::Admin, Role::Platform]),
            Needs::Decide => Roles::of([Role::Admin, Role::Approver]),
            Needs::Admin => Roles::of([Role::Admin]),
        }
    }

    /// Whether `roles` satisfy the need.
    pub fn met_by(self, roles: Roles) -> bool {
        self.roles().iter().any(|r| roles.has(r))
    }
}

/// How a principal proved who it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Via {
    /// A bearer token from `control.admin_token` or `control.admin_tokens`.
    Token,
    /// A browser session opened by signing in through OpenID Connect.
    Oidc,
}

/// Who is calling: a name and the roles it holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Principal {
    /// The token's configured name, or for a person signed in through OpenID Connect `person:` and their `email`
    /// (else `person-sub:` and their `sub`) from the verified ID token: the two never share a name.
    pub name: String,
    /// What it may do.
    pub roles: Roles,
    /// How it proved it.
    pub via: Via,
}

impl Principal {
    /// Whether the principal may do what `needs` asks.
    pub fn may(&self, needs: Needs) -> bool {
        needs.met_by(self.roles)
    }
}

/// Who the decisions cordon makes itself are by (an ask ended because its sandbox went away): no token may
/// take this name.
pub const CORDON: &str = "cordon";

/// Whether `name` can name a principal (a token's name): 1 to 64 of letters, digits and `._@+-`. It holds no
/// `:`, so it never reads as a person's name (`person:...`, `person-sub:...`).
pub fn valid_name(name: &str) -> bool {
    !name.is_empty() && name.len() <= 64 && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"._@+-".contains(&b))
}

#[cfg(test)]
#[path = "principal_tests.rs"]
mod tests;
