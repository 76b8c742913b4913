//! Numbers and switches as written. Their deserialization never fails: what is not a whole number (or not
//! `true`/`false`) is kept as a description of what was written instead, and validation reports it with the
//! field's path and what belongs there ("expected a port number, not the text \"https\""). So a file with
//! several such mistakes gets every one listed at once, in the configuration's words rather than serde's
//! (`i64`, `u128`), and the rest of the file is still validated.

use std::borrow::Cow;
use std::fmt;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};

use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// A whole number, or what was written where one belongs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Whole {
    /// The number.
    Given(i64),
    /// What was written instead: `the text "lots"`, `the decimal number 1.5`, `a list`...
    Wrong(String),
}

/// `true` or `false`, or what was written where one belongs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Flag {
    /// The value.
    Given(bool),
    /// What was written instead.
    Wrong(String),
}

impl Default for Flag {
    fn default() -> Flag {
        Flag::Given(false)
    }
}

/// What a scalar or a collection was, in words, for the cases that are not the kind expected.
struct WrittenAs;

impl WrittenAs {
    fn text(v: &str) -> String {
        format!("the text {v:?}")
    }
    fn number(v: impl fmt::Display) -> String {
        format!("the number {v}")
    }
    fn list<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<String, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok("a list".into())
    }
    fn mapping<'de, A: MapAccess<'de>>(mut map: A) -> Result<String, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok("a mapping".into())
    }
}

struct WholeVisitor;

impl<'de> Visitor<'de> for WholeVisitor {
    type Value = Whole;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a whole number")
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Whole, E> {
        Ok(Whole::Given(v))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Whole, E> {
        Ok(i64::try_from(v).map_or_else(|_| Whole::Wrong(format!("{v}, which is too large")), Whole::Given))
    }
    fn visit_i128<E: de::Error>(self, v: i128) -> Result<Whole, E> {
        Ok(Whole::Wrong(format!("{v}, which is too large")))
    }
    fn visit_u128<E: de::Error>(self, v: u128) -> Result<Whole, E> {
        Ok(Whole::Wrong(format!("{v}, which is too large")))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Whole, E> {
        Ok(Whole::Wrong(format!("the decimal number {v}")))
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Whole, E> {
        Ok(Whole::Wrong(format!("{v}")))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Whole, E> {
        Ok(Whole::Wrong(WrittenAs::text(v)))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Whole, E> {
        Ok(Whole::Wrong("an empty value (null)".into()))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Whole, A::Error> {
        WrittenAs::list(seq).map(Whole::Wrong)
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Whole, A::Error> {
        WrittenAs::mapping(map).map(Whole::Wrong)
    }
}

impl<'de> Deserialize<'de> for Whole {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Whole, D::Error> {
        d.deserialize_any(WholeVisitor)
    }
}

struct FlagVisitor;

impl<'de> Visitor<'de> for FlagVisitor {
    type Value = Flag;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("true or false")
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Flag, E> {
        Ok(Flag::Given(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Flag, E> {
        Ok(Flag::Wrong(WrittenAs::number(v)))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Flag, E> {
        Ok(Flag::Wrong(WrittenAs::number(v)))
    }
    fn visit_i128<E: de::Error>(self, v: i128) -> Result<Flag, E> {
        Ok(Flag::Wrong(WrittenAs::number(v)))
    }
    fn visit_u128<E: de::Error>(self, v: u128) -> Result<Flag, E> {
        Ok(Flag::Wrong(WrittenAs::number(v)))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Flag, E> {
        Ok(Flag::Wrong(WrittenAs::number(v)))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Flag, E> {
        Ok(Flag::Wrong(WrittenAs::text(v)))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Flag, E> {
        Ok(Flag::Wrong("an empty value (null)".into()))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Flag, A::Error> {
        WrittenAs::list(seq).map(Flag::Wrong)
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Flag, A::Error> {
        WrittenAs::mapping(map).map(Flag::Wrong)
    }
}

impl<'de> Deserialize<'de> for Flag {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Flag, D::Error> {
        d.deserialize_any(FlagVisitor)
    }
}

/// In the schema a whole number is what it is in the file, whatever [`Whole::Wrong`] keeps for the message.
impl JsonSchema for Whole {
    fn inline_schema() -> bool {
        true
    }
    fn schema_name() -> Cow<'static, str> {
        "Whole".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({ "type": "integer" })
    }
}

/// In the schema a switch is `true` or `false`, whatever [`Flag::Wrong`] keeps for the message.
impl JsonSchema for Flag {
    fn inline_schema() -> bool {
        true
    }
    fn schema_name() -> Cow<'static, str> {
        "Flag".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({ "type": "boolean" })
    }
}
