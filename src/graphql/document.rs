//! A GraphQL document read with a maintained parser (`apollo-parser`), bounded, and only what a server would
//! execute accepted: operations and fragments, no syntax error, no two operations of one name, an anonymous
//! operation only alone, and every fragment spread at an operation's root defined. Each operation is described by
//! its type, its name and the fields it selects at its root (through fragments and inline fragments: what it
//! does, whatever it calls itself).

use std::collections::{HashMap, HashSet};

use apollo_parser::cst::{self, CstNode};

use crate::policy::graphql::OpType;

/// The most tokens a document may have (a 1 MiB body of one-letter fields is about half a million).
const MOST_TOKENS: usize = 250_000;

/// The deepest a document may nest.
const DEEPEST: usize = 128;

/// The most root fields an operation is described by (a larger one is refused, not cut short).
const MOST_ROOT_FIELDS: usize = 1024;

/// One operation of a document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Operation {
    pub(crate) ty: OpType,
    /// Its name; `None` for an anonymous operation.
    pub(crate) name: Option<String>,
    /// The fields it selects at its root, each once, in order.
    pub(crate) fields: Vec<String>,
}

/// The operations of `text`, in order; or why a server would not execute it.
pub(crate) fn operations(text: &str) -> Result<Vec<Operation>, String> {
    let tree = apollo_parser::Parser::new(text)
        .recursion_limit(DEEPEST)
        .token_limit(MOST_TOKENS)
        .parse();
    if let Some(e) = tree.errors().next() {
        return Err(format!(
            "the document does not parse: {} at byte {}",
            e.message(),
            e.index()
        ));
    }
    let document = tree.document();
    let mut fragments = HashMap::new();
    let mut ops = Vec::new();
    for definition in document.definitions() {
        match definition {
            cst::Definition::OperationDefinition(op) => ops.push(op),
            cst::Definition::FragmentDefinition(f) => {
                let name = f
                    .fragment_name()
                    .and_then(|n| n.name())
                    .map(|n| n.text().to_string())
                    .ok_or("a fragment without a name")?;
                let set = f.selection_set().ok_or("a fragment without a selection")?;
                if fragments.insert(name.clone(), set).is_some() {
                    return Err(format!("two fragments are named {name:?}"));
                }
            }
            other => {
                return Err(format!(
                    "the document defines a type system part (at byte {}), which a request may not",
                    u32::from(other.syntax().text_range().start())
                ));
            }
        }
    }
    if ops.is_empty() {
        return Err("the document has no operation".into());
    }
    let mut out: Vec<Operation> = Vec::with_capacity(ops.len());
    // Sets, not scans of what came before: a document within the limits holds tens of thousands of operations.
    let mut names = HashSet::new();
    for op in ops {
        let ty = match op.operation_type() {
            None => OpType::Query,
            Some(t) if t.mutation_token().is_some() => OpType::Mutation,
            Some(t) if t.subscription_token().is_some() => OpType::Subscription,
            Some(_) => OpType::Query,
        };
        let name = op.name().map(|n| n.text().to_string());
        // An anonymous operation only alone (an earlier one could only have been the first).
        if !out.is_empty() && (name.is_none() || out[0].name.is_none()) {
            return Err("an anonymous operation must be the document's only operation".into());
        }
        if let Some(n) = &name
            && !names.insert(n.clone())
        {
            return Err(format!("two operations are named {n:?}"));
        }
        let set = op.selection_set().ok_or("an operation without a selection")?;
        let fields = root_fields(set, &fragments)?;
        out.push(Operation { ty, name, fields });
    }
    Ok(out)
}

/// The fields `set` selects at its level, through fragment spreads (each fragment once) and inline fragments.
/// A work list, not recursion: a chain of fragments is as long as the document allows.
fn root_fields(set: cst::SelectionSet, fragments: &HashMap<String, cst::SelectionSet>) -> Result<Vec<String>, String> {
    let mut fields: Vec<String> = Vec::new();
    let mut have = HashSet::new();
    let mut spread = HashSet::new();
    let mut sets = vec![set];
    while let Some(set) = sets.pop() {
        for selection in set.selections() {
            match selection {
                cst::Selection::Field(f) => {
                    let name = f.name().map(|n| n.text().to_string()).ok_or("a field without a name")?;
                    if have.insert(name.clone()) {
                        if fields.len() == MOST_ROOT_FIELDS {
                            return Err(format!("an operation selects more than {MOST_ROOT_FIELDS} root fields"));
                        }
                        fields.push(name);
                    }
                }
                cst::Selection::FragmentSpread(s) => {
                    let name = s
                        .fragment_name()
                        .and_then(|n| n.name())
                        .map(|n| n.text().to_string())
                        .ok_or("a fragment spread without a name")?;
                    let inner = fragments
                        .get(&name)
                        .ok_or_else(|| format!("the fragment {name:?} is spread but not defined"))?;
                    if spread.insert(name) {
                        sets.push(inner.clone());
                    }
                }
                cst::Selection::InlineFragment(i) => {
                    sets.push(i.selection_set().ok_or("an inline fragment without a selection")?);
                }
            }
        }
    }
    Ok(fields)
}

#[cfg(test)]
#[path = "document_tests.rs"]
mod tests;
