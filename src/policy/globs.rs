//! Lists of names or globs a rule's protocol sections are written in (`mcp:` tools and methods, `graphql:`
//! operation names and fields): `*` any run of characters, `?` one. Compiled once, kept with their texts for a
//! rule's fingerprint and for the ceiling's comparisons.

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

/// A list of names or globs, as written and compiled.
#[derive(Debug, Clone)]
pub(crate) struct Names {
    pub(super) texts: Vec<String>,
    set: GlobSet,
}

impl Names {
    /// Compile `texts`, each first checked to be a `what` of `alphabet`; `any_case` to match in any case. The error names the entry (its index) and what is wrong.
    pub(super) fn new(
        texts: Vec<String>,
        any_case: bool,
        what: &str,
        alphabet: &Alphabet,
    ) -> Result<Names, (usize, String)> {
        let mut set = GlobSetBuilder::new();
        for (i, text) in texts.iter().enumerate() {
            check(text, what, alphabet).map_err(|e| (i, e))?;
            let glob = GlobBuilder::new(text)
                .case_insensitive(any_case)
                .literal_separator(false)
                .build()
                .map_err(|e| (i, format!("{text:?} is not a valid glob: {}", e.kind())))?;
            set.add(glob);
        }
        let set = set.build().map_err(|e| (0, format!("the globs do not compile: {e}")))?;
        Ok(Names { texts, set })
    }

    /// Whether `name` is one of these.
    pub(crate) fn matches(&self, name: &str) -> bool {
        self.set.is_match(name)
    }

    /// Whether the list is empty.
    pub(crate) fn is_empty(&self) -> bool {
        self.texts.is_empty()
    }

    /// Whether every name one of `self`'s entries matches is matched by `base` too, judged conservatively: an
    /// entry is inside `base` when `base` has the same entry, or it is a literal name `base` matches. The first
    /// entry that is not, if any.
    pub(super) fn within(&self, base: &Names) -> Option<usize> {
        self.texts.iter().position(|t| !base.holds(t))
    }

    /// Whether `text` (an entry of another list) is inside this one: the same entry, or a literal name it matches.
    pub(super) fn holds(&self, text: &str) -> bool {
        self.texts.iter().any(|t| t == text) || (!is_glob(text) && self.matches(text))
    }

    /// Whether `text` (an entry of a list that matches in any case) is inside this list in every case it matches:
    /// inside it (see [`Names::holds`]) and either without letters, or this list takes any name (`*`). Used where
    /// this list matches exactly and the other in any case.
    pub(super) fn holds_every_case(&self, text: &str) -> bool {
        self.holds(text) && (!text.chars().any(|c| c.is_ascii_alphabetic()) || self.texts.iter().any(|t| t == "*"))
    }

    /// Whether every entry of `base` is one of `self`'s (same text): `self` then matches at least what `base`
    /// does. The first that is not, if any.
    pub(super) fn covers<'a>(&self, base: &'a Names) -> Option<&'a str> {
        base.texts.iter().find(|t| !self.texts.contains(t)).map(String::as_str)
    }
}

/// The characters a name may have beside letters and digits, and how an error says them: MCP's names
/// (`_ - . /`) or GraphQL's (`_`).
pub(super) struct Alphabet {
    pub(super) punctuation: &'static str,
    pub(super) says: &'static str,
}

/// A name of 1 to 128 of letters, digits and `alphabet`'s punctuation, or a glob of such names (`*`, `?`).
pub(super) fn check(text: &str, what: &str, alphabet: &Alphabet) -> Result<(), String> {
    if text.is_empty() || text.len() > 128 {
        return Err(format!("{text:?}: a {what} is 1 to 128 characters"));
    }
    if let Some(c) = text
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || alphabet.punctuation.contains(*c) || "*?".contains(*c)))
    {
        return Err(format!(
            "{text:?} contains {c:?}; a {what} has {} (and '*' or '?' as a glob)",
            alphabet.says
        ));
    }
    Ok(())
}

/// Whether an entry is a glob rather than one literal name.
pub(super) fn is_glob(text: &str) -> bool {
    text.contains(['*', '?', '[', '{'])
}
