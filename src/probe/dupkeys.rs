//! Duplicate object keys. serde_json (like most parsers) keeps the last of two equal keys
//! silently; RFC 8259 §4 says names SHOULD be unique because receivers then disagree on the
//! value. A document is parsed once into its value (as serde_json builds it: the last of two
//! equal keys kept) with a visitor that reports each repeated key by path on the way.

use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::map::Entry;
use serde_json::{Map, Value};

use crate::jsonpath::Place;

use crate::schema::Finding;

/// A document parsed, and the keys it repeats.
#[derive(Debug, Clone, PartialEq)]
pub struct Parsed {
    pub value: Value,
    /// Every key that occurs twice in one object, with its path.
    pub duplicates: Vec<Finding>,
}

/// Parses `body` as serde_json does (`from_slice`: one value, nothing after it but blanks),
/// noting the keys it repeats: one pass where the proxy's judge made two.
pub fn parse(body: &[u8]) -> Result<Parsed, serde_json::Error> {
    let mut duplicates = Vec::new();
    let mut de = serde_json::Deserializer::from_slice(body);
    let value = Build {
        at: &Place::Root,
        found: &mut duplicates,
    }
    .deserialize(&mut de)?;
    de.end()?;
    Ok(Parsed { value, duplicates })
}

/// One value of the document: where it is (rendered only for a repeated key: the proxy parses
/// every answer, and almost none repeats one) and what was found so far.
struct Build<'p, 'f> {
    at: &'p Place<'p>,
    found: &'f mut Vec<Finding>,
}

impl<'de> DeserializeSeed<'de> for Build<'_, '_> {
    type Value = Value;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Build<'_, '_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any valid JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut object = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            // One search of the object for the key, whether it is new or repeated; a repeated
            // key's value replaces the first (as serde_json keeps the last).
            let slot = object.entry(key);
            let at = Place::Key(self.at, slot.key());
            if let Entry::Occupied(_) = slot {
                self.found.push(crate::schema::finding(
                    at.to_string(),
                    format!("the key {:?} occurs twice in one object (readers disagree on which value counts)", slot.key()),
                ));
            }
            let value = map.next_value_seed(Build {
                at: &at,
                found: self.found,
            })?;
            match slot {
                Entry::Vacant(slot) => {
                    slot.insert(value);
                }
                Entry::Occupied(mut slot) => {
                    slot.insert(value);
                }
            }
        }
        Ok(Value::Object(object))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(Build {
            at: &Place::Index(self.at, items.len()),
            found: self.found,
        })? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_bool<E>(self, b: bool) -> Result<Value, E> {
        Ok(Value::Bool(b))
    }
    fn visit_i64<E>(self, n: i64) -> Result<Value, E> {
        Ok(Value::Number(n.into()))
    }
    fn visit_u64<E>(self, n: u64) -> Result<Value, E> {
        Ok(Value::Number(n.into()))
    }
    fn visit_f64<E>(self, n: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(n).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E>(self, s: &str) -> Result<Value, E> {
        Ok(Value::String(s.to_string()))
    }
    fn visit_string<E>(self, s: String) -> Result<Value, E> {
        Ok(Value::String(s))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn duplicate_keys(body: &[u8]) -> Result<Vec<Finding>, serde_json::Error> {
        parse(body).map(|p| p.duplicates)
    }

    /// The value is serde_json's own, duplicates and all (the last of two equal keys kept).
    #[test]
    fn the_value_is_serde_jsons() {
        for text in [
            r#"{"a":1,"b":[{"c":1,"c":2}],"a":3}"#,
            r#"{"n":-5,"u":18446744073709551615,"f":1.5e3,"s":"\u00e9\n","t":true,"z":null}"#,
            r#"[1,[2,[3,{}]],"x"]"#,
            " \"text\" ",
        ] {
            let parsed = parse(text.as_bytes()).unwrap();
            assert_eq!(
                parsed.value,
                serde_json::from_str::<Value>(text).unwrap(),
                "{text}"
            );
        }
        assert!(parse(b"{} x").is_err() && serde_json::from_slice::<Value>(b"{} x").is_err());
    }

    #[test]
    fn repeated_keys_are_found_with_their_path() {
        let found = duplicate_keys(br#"{"a":1,"b":[{"c":1,"c":2}],"a":3}"#).unwrap();
        let paths: Vec<&str> = found.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(paths, ["b[0].c", "a"]);
        assert!(duplicate_keys(br#"{"a":{"a":1},"b":[1,2]}"#)
            .unwrap()
            .is_empty());
        assert!(duplicate_keys(b"{\"a\":").is_err());
    }

    /// A key written with escapes is the key it spells; an object of many keys is searched as
    /// well as a small one; a document that is a list names its items.
    #[test]
    fn escaped_keys_and_large_objects_and_lists() {
        let found = duplicate_keys(br#"[{"a":1,"\u0061":2}]"#).unwrap();
        let paths: Vec<&str> = found.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(paths, ["[0].a"]);
        assert!(
            found[0].message.contains(r#"the key "a" occurs twice"#),
            "{found:?}"
        );
        let keys: Vec<String> = (0..40).map(|i| format!("\"k{i}\":{i}")).collect();
        let wide = format!("{{{},\"k3\":0,\"k39\":1}}", keys.join(","));
        let found = duplicate_keys(wide.as_bytes()).unwrap();
        let paths: Vec<&str> = found.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(paths, ["k3", "k39"]);
        assert!(duplicate_keys(format!("{{{}}}", keys.join(",")).as_bytes())
            .unwrap()
            .is_empty());
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_stack_overflow() {
        let deep = "[".repeat(200_000);
        assert!(duplicate_keys(deep.as_bytes()).is_err());
    }
}
