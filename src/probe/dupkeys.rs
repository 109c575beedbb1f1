//! Duplicate object keys. serde_json (like most parsers) keeps the last of two equal keys
//! silently; RFC 8259 §4 says names SHOULD be unique because receivers then disagree on the
//! value. This walks a document once with a visitor and reports each repeated key by path.

use std::borrow::Cow;
use std::collections::HashSet;
use std::fmt;

use serde::de::{Deserialize, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

use crate::jsonpath::Place;

use crate::schema::Finding;

/// Every key that occurs twice in one object, with its path (`observations[0].severity`).
/// Err when the text is not JSON (callers parse it first and report that).
pub fn duplicate_keys(body: &[u8]) -> Result<Vec<Finding>, serde_json::Error> {
    let mut found = Vec::new();
    let mut de = serde_json::Deserializer::from_slice(body);
    Walk {
        at: &Place::Root,
        found: &mut found,
    }
    .deserialize(&mut de)?;
    Ok(found)
}

/// One value of the document: where it is (rendered only for a repeated key: the proxy walks
/// every answer, and almost none repeats one) and what was found so far.
struct Walk<'p, 'f> {
    at: &'p Place<'p>,
    found: &'f mut Vec<Finding>,
}

impl<'de> DeserializeSeed<'de> for Walk<'_, '_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

/// A key as the text holds it: borrowed unless it has escapes.
struct Key<'de>(Cow<'de, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Text;
        impl<'de> Visitor<'de> for Text {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object key")
            }
            fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(s)))
            }
            fn visit_str<E>(self, s: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(s.to_string())))
            }
        }
        d.deserialize_str(Text)
    }
}

/// Keys of one object seen so far: compared in turn while there are few (most objects), in a
/// set past that (an object of many keys stays linear).
const FEW: usize = 16;

impl<'de> Visitor<'de> for Walk<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let (mut few, mut many) = (Vec::<Cow<'de, str>>::new(), HashSet::<Cow<'de, str>>::new());
        while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
            let repeated = if many.is_empty() && few.len() < FEW {
                let repeated = few.contains(&key);
                if !repeated {
                    few.push(key.clone());
                }
                repeated
            } else {
                many.extend(few.drain(..));
                !many.insert(key.clone())
            };
            let at = Place::Key(self.at, &key);
            if repeated {
                self.found.push(crate::schema::finding(
                    at.to_string(),
                    format!("the key {:?} occurs twice in one object (readers disagree on which value counts)", &*key),
                ));
            }
            map.next_value_seed(Walk {
                at: &at,
                found: self.found,
            })?;
        }
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut i = 0;
        while seq
            .next_element_seed(Walk {
                at: &Place::Index(self.at, i),
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
