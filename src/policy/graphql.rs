//! A rule's `graphql:` section: which operations of a GraphQL endpoint its sandboxes may send at once
//! (`operations`), which wait for a person (`ask`), which are refused whatever else says (`deny`), and, when it
//! says so, which operation names may be sent at all (`names`). Decided purely; reading the documents is
//! `crate::graphql`'s.
//!
//! An entry of `operations`, `ask` or `deny` is an operation type (`query`, `mutation`, `subscription`), which
//! speaks for every root field of that type, or a type and a root field (`mutation.addComment`, `mutation.delete*`:
//! a glob), which speaks for that field. An operation is judged by each field it selects at its root (through
//! fragments too), and by its worst: `deny` wins wherever it is written; between `ask` and `operations` the entry
//! that names the field wins over one that names only its type, and `ask` over `operations` at the same level; a
//! field nothing names is refused. `deny` and `ask` match fields in any case (the safe side); `operations` and
//! `names` exactly, as GraphQL does. An operation's name is chosen by whoever sends it: `names` narrows what a
//! known client sends, the fields are what it does.

use super::globs::{Alphabet, Names};

/// The three kinds of GraphQL operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum OpType {
    Query,
    Mutation,
    Subscription,
}

impl OpType {
    /// Every type, in order.
    pub(crate) const ALL: [OpType; 3] = [OpType::Query, OpType::Mutation, OpType::Subscription];

    /// The keyword, as written in a document and in a rule.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            OpType::Query => "query",
            OpType::Mutation => "mutation",
            OpType::Subscription => "subscription",
        }
    }

    fn index(self) -> usize {
        self as usize
    }

    fn parse(text: &str) -> Option<OpType> {
        OpType::ALL.into_iter().find(|t| t.as_str() == text)
    }
}

/// What a rule says about one root field of an operation, from best to worst.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum FieldVerdict {
    /// Sent at once.
    Allow,
    /// Held for a person.
    Ask,
    /// Named under `deny`.
    Deny,
    /// Named nowhere: refused (default deny).
    Unnamed,
}

/// One of the lists `operations`, `ask`, `deny`: the types it names whole and, per type, the fields it names.
#[derive(Debug, Clone)]
struct Entries {
    texts: Vec<String>,
    whole: [bool; 3],
    fields: [Names; 3],
}

impl Entries {
    fn new(texts: Vec<String>, any_case: bool) -> Result<Entries, (usize, String)> {
        let mut whole = [false; 3];
        let mut fields: [Vec<String>; 3] = Default::default();
        let mut at: [Vec<usize>; 3] = Default::default();
        for (i, text) in texts.iter().enumerate() {
            let (ty, field) = match text.split_once('.') {
                Some((ty, field)) => (ty, Some(field)),
                None => (text.as_str(), None),
            };
            let Some(ty) = OpType::parse(ty) else {
                return Err((
                    i,
                    format!(
                        "{text:?}: an entry is an operation type (query, mutation or subscription), or a type and a root \
                         field (mutation.addComment, mutation.delete*)"
                    ),
                ));
            };
            match field {
                None => whole[ty.index()] = true,
                Some(field) => {
                    fields[ty.index()].push(field.to_owned());
                    at[ty.index()].push(i);
                }
            }
        }
        let compile = |k: usize| {
            Names::new(fields[k].clone(), any_case, "field", &GRAPHQL_NAME)
                .map_err(|(j, e)| (at[k].get(j).copied().unwrap_or(0), e))
        };
        let fields = [compile(0)?, compile(1)?, compile(2)?];
        Ok(Entries { texts, whole, fields })
    }

    /// Whether the list names `field` of `ty` by its field (`true, _`) or by its type only (`_, true`).
    fn names(&self, ty: OpType, field: &str) -> (bool, bool) {
        (self.fields[ty.index()].matches(field), self.whole[ty.index()])
    }

    /// [`Entries::holds`] for every case a list matching in any case reads `text` in: its whole type, or a field
    /// this list (matching exactly) holds in every case.
    fn holds_every_case(&self, text: &str) -> bool {
        match text.split_once('.') {
            Some((ty, field)) => OpType::parse(ty)
                .is_some_and(|ty| self.whole[ty.index()] || self.fields[ty.index()].holds_every_case(field)),
            None => self.holds(text),
        }
    }

    /// Whether `text`, an entry of another list, is inside this one: the same entry, its whole type, or a literal
    /// field this list's globs match.
    fn holds(&self, text: &str) -> bool {
        if self.texts.iter().any(|t| t == text) {
            return true;
        }
        match text.split_once('.') {
            Some((ty, field)) => {
                OpType::parse(ty).is_some_and(|ty| self.whole[ty.index()] || self.fields[ty.index()].holds(field))
            }
            None => false,
        }
    }
}

/// A GraphQL name (letters, digits and `_`), or a glob of such names.
const GRAPHQL_NAME: Alphabet = Alphabet {
    punctuation: "_",
    says: "letters, digits and '_'",
};

/// A validated `graphql:` section.
#[derive(Debug, Clone)]
pub struct GraphqlRules {
    operations: Entries,
    ask: Entries,
    deny: Entries,
    names: Names,
}

impl GraphqlRules {
    /// Compile what was written; the error names the list (`operations`, `ask`, `deny`, `names`), the entry and
    /// what is wrong.
    pub(crate) fn new(
        operations: Vec<String>,
        ask: Vec<String>,
        deny: Vec<String>,
        names: Vec<String>,
    ) -> Result<GraphqlRules, (&'static str, usize, String)> {
        Ok(GraphqlRules {
            operations: Entries::new(operations, false).map_err(|(i, e)| ("operations", i, e))?,
            ask: Entries::new(ask, true).map_err(|(i, e)| ("ask", i, e))?,
            deny: Entries::new(deny, true).map_err(|(i, e)| ("deny", i, e))?,
            names: Names::new(names, false, "operation name", &GRAPHQL_NAME).map_err(|(i, e)| ("names", i, e))?,
        })
    }

    /// What the rule says about selecting `field` at the root of an operation of type `ty`.
    pub(crate) fn field(&self, ty: OpType, field: &str) -> FieldVerdict {
        let (deny_field, deny_type) = self.deny.names(ty, field);
        if deny_field || deny_type {
            return FieldVerdict::Deny;
        }
        let (ask_field, ask_type) = self.ask.names(ty, field);
        let (allow_field, allow_type) = self.operations.names(ty, field);
        if ask_field {
            FieldVerdict::Ask
        } else if allow_field {
            FieldVerdict::Allow
        } else if ask_type {
            FieldVerdict::Ask
        } else if allow_type {
            FieldVerdict::Allow
        } else {
            FieldVerdict::Unnamed
        }
    }

    /// Whether an operation of this name (`None`: anonymous) may be sent: always, unless `names` lists some.
    pub(crate) fn name(&self, name: Option<&str>) -> bool {
        self.names.is_empty() || name.is_some_and(|n| self.names.matches(n))
    }

    /// Every entry of `operations`, `ask` and `deny`, as written (`query`, `mutation.addComment`).
    pub(crate) fn entries(&self) -> impl Iterator<Item = &str> {
        self.operations
            .texts
            .iter()
            .chain(&self.ask.texts)
            .chain(&self.deny.texts)
            .map(String::as_str)
    }

    /// The operation names `names` lists (empty: any).
    pub(crate) fn name_texts(&self) -> &[String] {
        &self.names.texts
    }

    /// Everything the section says, for a rule's fingerprint.
    pub(crate) fn said(&self) -> String {
        format!(
            "operations={:?} ask={:?} deny={:?} names={:?}",
            self.operations.texts, self.ask.texts, self.deny.texts, self.names.texts
        )
    }

    /// Whether `self` (a sandbox's own rule) only narrows `base`, checked conservatively by the lists' entries:
    /// its `operations` inside `base.operations`; its `ask` inside `base.operations` or `base.ask`; `base.deny`
    /// among its `deny`; `base.ask` among its `ask` or `deny`; and, when `base` limits names, its `names` given
    /// and inside them. The field and why, when it does not.
    pub(crate) fn within(&self, base: &GraphqlRules) -> Result<(), (&'static str, String)> {
        if let Some(t) = self.operations.texts.iter().find(|t| !base.operations.holds(t)) {
            return Err((
                "operations",
                format!(
                    "{t:?} is not sent at once by the base (its operations: {:?})",
                    base.operations.texts
                ),
            ));
        }
        if let Some(t) = self
            .ask
            .texts
            .iter()
            // SECURITY: `ask` matches fields in any case and `operations` exactly: an own `ask` of a field the
            // base sends only as written would ask for (and a person could let through) its other spellings.
            .find(|t| !(base.ask.holds(t) || base.operations.holds_every_case(t)))
        {
            return Err((
                "ask",
                if base.operations.holds(t) {
                    format!(
                        "{t:?} matches in any case under `ask`, but the base sends only {t:?} as written (its \
                         operations match exactly): ask for it in the base, or leave it to the base's operations"
                    )
                } else {
                    format!("{t:?} is not something the base allows or asks for")
                },
            ));
        }
        if let Some(t) = base.deny.texts.iter().find(|t| !self.deny.texts.contains(t)) {
            return Err(("deny", format!("the base denies {t:?}; an own rule must deny it too")));
        }
        if let Some(t) = base
            .ask
            .texts
            .iter()
            .find(|t| !(self.ask.texts.contains(t) || self.deny.texts.contains(t)))
        {
            return Err((
                "ask",
                format!("the base asks before {t:?}; an own rule must ask before it or deny it"),
            ));
        }
        if !base.names.is_empty() {
            if self.names.is_empty() {
                return Err((
                    "names",
                    format!(
                        "the base sends only the operations {:?}; list them or fewer",
                        base.names.texts
                    ),
                ));
            }
            if let Some(i) = self.names.within(&base.names) {
                return Err((
                    "names",
                    format!("{:?} is not an operation name the base sends", self.names.texts[i]),
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "graphql_tests.rs"]
mod tests;
