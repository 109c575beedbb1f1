//! Duplicate object keys. serde_json (like most parsers) keeps the last of two equal keys
//! silently; RFC 8259 §4 says names SHOULD be unique because receivers then disagree on the
//! value. This walks a document once with a visitor and reports each repeated key by path.

use std::collections::HashSet;
use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

use crate::schema::Finding;

/// Every key that occurs twice in one object, with its path (`observations[0].severity`).
/// Err when the text is not JSON (callers parse it first and report that).
pub fn duplicate_keys(body: &[u8]) -> Result<Vec<Finding>, serde_json::Error> {
    let mut found = Vec::new();
    let mut de = serde_json::Deserializer::from_slice(body);
    Walk {
        path: String::new(),
        found: &mut found,
    }
    .deserialize(&mut de)?;
    Ok(found)
}

struct Walk<'a> {
    path: String,
    found: &'a mut Vec<Finding>,
}

impl<'de> DeserializeSeed<'de> for Walk<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

impl<'de> Visitor<'de> for Walk<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen = HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            let path = join(&self.path, &key);
            if !seen.insert(key.clone()) {
                self.found.push(crate::schema::finding(
                    path.clone(),
                    format!("the key {key:?} occurs twice in one object (readers disagree on which value counts)"),
                ));
            }
            map.next_value_seed(Walk {
                path,
                found: self.found,
            })?;
        }
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut i = 0;
        while seq
            .next_element_seed(Walk {
                path: format!("{}[{i}]", self.path),
                found: self.found,
            })?
            .is_some()
        {
            i += 1;
        }
        Ok(())
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn deep_nesting_is_an_error_not_a_stack_overflow() {
        let deep = "[".repeat(200_000);
        assert!(duplicate_keys(deep.as_bytes()).is_err());
    }
}
