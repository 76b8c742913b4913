//! What judging a protocol inside a request comes to, the same for every protocol (MCP, GraphQL, ...): the
//! verdict ([`Judgement`]), what a person is asked to allow ([`Asked`]), a refusal already in the protocol's own
//! words ([`Refused`]), and the protocol's section of the audit record ([`ProtocolRecord`]). Each protocol reads
//! and judges its own messages (`crate::mcp`, `crate::graphql`); the pipeline's protocol step
//! (`crate::proxy`) acts on these alone.

use serde::{Serialize, Serializer};
use serde_json::Value;

use crate::reason::Reason;

/// The verdict on the messages of one request.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Judgement {
    /// Every message may go.
    Pass,
    /// Every message may go once a person allows what is asked.
    Ask(Asked),
    /// Not the protocol, or not as cordon can judge it (answered 400, with the protocol's reason code).
    Invalid(String),
    /// A message the rule refuses (answered in the protocol's own words).
    Refused(Refused),
}

/// What a person must allow first, and to whom a person's refusal is answered.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Asked {
    /// What is asked, as the approver reads it: MCP tools in the order called (`send_email`), GraphQL operations
    /// (`mutation AddComment: addComment`).
    pub(crate) what: Vec<String>,
    /// The ids of the body's requests, each answered with a refusal (JSON-RPC ids; none for GraphQL).
    pub(crate) ids: Vec<Value>,
    /// How many requests the body had, when it was a batch (answered with an array).
    pub(crate) batch: Option<usize>,
}

/// Why a request may not go, and the answer that says so in the protocol's own words (a JSON-RPC error, a
/// GraphQL error ...), sent with status 200 as the protocol's clients understand it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Refused {
    /// The reason code (the audit record's `reason`, the `x-cordon-reason` header).
    pub(crate) reason: Reason,
    /// What is refused and why (the audit record's detail).
    pub(crate) message: String,
    /// The answer's media type and body.
    pub(crate) content_type: &'static str,
    pub(crate) body: Vec<u8>,
}

/// A protocol's section of the audit record: its name (`mcp`, `graphql`), the record's key, and what the
/// request said (the message or operation that decided).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ProtocolRecord {
    pub(crate) section: &'static str,
    pub(crate) said: Value,
    /// What the answer adds to the section, once it has ended (a model API's usage): its members are written
    /// over `said`'s when the record is emitted.
    pub(crate) completion: Option<Completion>,
}

/// What a protocol adds to its section of the record when the answer ends: set by the answer's reader, read when
/// the record is emitted (the end of the body, or its drop: whichever comes, the reader has set it first).
#[derive(Debug, Clone, Default)]
pub(crate) struct Completion(std::sync::Arc<std::sync::Mutex<Option<Value>>>);

impl Completion {
    /// Say what the answer adds (a JSON object; the later word wins).
    pub(crate) fn set(&self, value: Value) {
        use crate::locks::Unpoisoned;
        *self.0.lock().unpoisoned() = Some(value);
    }

    fn take(&self) -> Option<Value> {
        use crate::locks::Unpoisoned;
        self.0.lock().unpoisoned().take()
    }
}

/// The same completion (the same answer's).
impl PartialEq for Completion {
    fn eq(&self, other: &Self) -> bool {
        std::sync::Arc::ptr_eq(&self.0, &other.0)
    }
}

impl ProtocolRecord {
    /// The section `section` saying `said` (a value that does not serialize says nothing: `{}`).
    pub(crate) fn new(section: &'static str, said: &impl Serialize) -> ProtocolRecord {
        ProtocolRecord {
            section,
            said: serde_json::to_value(said).unwrap_or_else(|_| Value::Object(Default::default())),
            completion: None,
        }
    }

    /// The section, completed by `completion` when the answer ends.
    pub(crate) fn completed_by(mut self, completion: Completion) -> ProtocolRecord {
        self.completion = Some(completion);
        self
    }

    /// Write what the answer added over what the request said (once; the record is about to be emitted).
    pub(crate) fn complete(&mut self) {
        let Some(Value::Object(added)) = self.completion.take().and_then(|c| c.take()) else {
            return;
        };
        if let Value::Object(said) = &mut self.said {
            said.extend(added);
        }
    }
}

/// Written as one member of the record: `"mcp": {...}`.
impl Serialize for ProtocolRecord {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(Some(1))?;
        map.serialize_entry(self.section, &self.said)?;
        map.end()
    }
}
