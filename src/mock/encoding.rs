//! The encoding layer of a misbehaving answer: bytes a platform's JSON parser must refuse (or
//! accept in a way that hides something), bytes that are not UTF-8, and bodies padded to a size.
//! Built from the conforming answer's bytes, whatever the protocol.
//!
//! Everything here is pure and never panics: a body that is not a JSON object is treated as an
//! empty one.

use serde_json::{json, Map, Value};

use super::protocol::AnswerFields;

/// Longest padding string: 50,000 characters, a common per-field limit of the specs, so that a
/// padded body's size is its only fault, not a field's length too.
const MAX_PADDING_STRING: usize = 50_000;

/// The field `padded_body` fills.
pub const PADDING_FIELD: &str = "padding";

/// The character padding is made of: one byte, one character, no phrase of any rule.
const FILLER: u8 = b'x';

const JSON: &str = "application/json";

// ---- malformed bodies ---------------------------------------------------------------------------

pub use super::behavior::kind::Malformed;

/// What a reverse proxy answers when the agent behind it is down; served with status 200 by the
/// caller, as a misconfigured proxy or a catch-all error page does.
const BAD_GATEWAY_PAGE: &str = "<!DOCTYPE html>\n<html>\n<head><title>502 Bad Gateway</title></head>\n<body>\n<center><h1>502 Bad Gateway</h1></center>\n<hr><center>nginx</center>\n</body>\n</html>\n";

/// The bytes of a malformed answer built from the conforming JSON body, and its Content-Type.
///
/// truncated: the body cut at half its length (on a character boundary); trailing-garbage: the
/// body followed by `}garbage`; single-quotes: the answer written as Python's `repr` writes a
/// dict (`'…'` strings, `True`/`False`/`None`); nan: the first number named `fields.number` (or
/// a new top-level one) as the bare token `NaN`; empty: zero bytes; html: a 502 Bad Gateway
/// page, `text/html`; array: `[ <the object> ]`; duplicate-keys: the object with
/// `fields.identity` twice, the second time with another value (lenient parsers keep the last
/// one).
pub fn malformed(
    variant: Malformed,
    conforming: &[u8],
    fields: &AnswerFields,
) -> (Vec<u8>, &'static str) {
    let body = match variant {
        Malformed::Truncated => conforming[..half(conforming)].to_vec(),
        Malformed::TrailingGarbage => [conforming, b"}garbage".as_slice()].concat(),
        Malformed::SingleQuotes => python_repr(conforming),
        Malformed::NaN => with_nan(conforming, fields.number),
        Malformed::Empty => Vec::new(),
        Malformed::Html => return (BAD_GATEWAY_PAGE.as_bytes().to_vec(), "text/html"),
        Malformed::Array => [b"[".as_slice(), conforming, b"]"].concat(),
        Malformed::DuplicateKeys => duplicate_identity(conforming, fields.identity),
    };
    (body, JSON)
}

/// Half the body's length, moved back to a character boundary so that the cut is the only fault
/// (not a split UTF-8 sequence as well).
fn half(body: &[u8]) -> usize {
    let mut cut = body.len() / 2;
    if let Ok(text) = std::str::from_utf8(body) {
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
    }
    cut
}

/// The answer as Python's `repr` of a dict: what an agent sends when it writes `str(answer)`
/// instead of `json.dumps(answer)`. A body that is not JSON gets its double quotes swapped.
fn python_repr(conforming: &[u8]) -> Vec<u8> {
    match serde_json::from_slice::<Value>(conforming) {
        Ok(value) => {
            let mut out = String::new();
            write_python(&value, &mut out);
            out.into_bytes()
        }
        Err(_) => conforming
            .iter()
            .map(|&b| if b == b'"' { b'\'' } else { b })
            .collect(),
    }
}

/// Writes `value` in Python literal syntax. Parsed JSON is at most 128 levels deep (serde_json's
/// limit), so the recursion is bounded.
fn write_python(value: &Value, out: &mut String) {
    match value {
        Value::Null => out.push_str("None"),
        Value::Bool(true) => out.push_str("True"),
        Value::Bool(false) => out.push_str("False"),
        Value::Number(n) => out.push_str(&n.to_string()),
        Value::String(s) => write_python_str(s, out),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_python(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (key, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_python_str(key, out);
                out.push_str(": ");
                write_python(item, out);
            }
            out.push('}');
        }
    }
}

fn write_python_str(text: &str, out: &mut String) {
    out.push('\'');
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c < ' ' || c == '\u{7f}' => out.push_str(&format!("\\x{:02x}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('\'');
}

/// A string no answer contains, written in place of a number and then replaced by `NaN` in the
/// serialized text (serde_json cannot write a non-finite number).
const NAN_MARK: &str = "__agent_tck_nan__";

/// The answer with its first numeric member `name` (depth first), or a new top-level one,
/// written as the bare token `NaN`: what Python's `json.dumps` writes for `float("nan")` by
/// default.
fn with_nan(conforming: &[u8], name: &str) -> Vec<u8> {
    let mut object = as_object(conforming);
    if !mark_first_number(&mut object, name) {
        object.insert(name.into(), json!(NAN_MARK));
    }
    let text = serde_json::to_string(&object).unwrap_or_default();
    text.replacen(&format!("\"{NAN_MARK}\""), "NaN", 1)
        .into_bytes()
}

fn mark_first_number(object: &mut Map<String, Value>, name: &str) -> bool {
    if let Some(c) = object.get_mut(name).filter(|c| c.is_number()) {
        *c = json!(NAN_MARK);
        return true;
    }
    object
        .values_mut()
        .any(|value| mark_first_number_in(value, name))
}

fn mark_first_number_in(value: &mut Value, name: &str) -> bool {
    match value {
        Value::Object(object) => mark_first_number(object, name),
        Value::Array(items) => items
            .iter_mut()
            .any(|item| mark_first_number_in(item, name)),
        _ => false,
    }
}

/// The body as a JSON object, or an empty one when it is not one.
fn as_object(body: &[u8]) -> Map<String, Value> {
    serde_json::from_slice(body).unwrap_or_default()
}

/// The object with its `identity` member written twice: first the agent's name, then another.
/// Lenient parsers keep the last one, so a platform that does not refuse duplicate keys records
/// the answer under a name the agent never registered.
fn duplicate_identity(conforming: &[u8], identity: &str) -> Vec<u8> {
    let mut object = as_object(conforming);
    let first = object
        .get(identity)
        .and_then(Value::as_str)
        .unwrap_or("agent")
        .to_string();
    object.insert(identity.into(), Value::String(first.clone()));
    let mut text = serde_json::to_string(&object).unwrap_or_default();
    // The object holds at least the identity member, so it ends in `}` after one or more members.
    text.pop();
    text.push_str(&format!(
        ",{}:{}}}",
        Value::String(identity.into()),
        Value::String(format!("{first}-impostor"))
    ));
    text.into_bytes()
}

// ---- raw bodies ---------------------------------------------------------------------------------

/// Bytes that are not UTF-8: 0xC3 opens a two-byte sequence that `(` does not continue, 0xFF
/// never occurs in UTF-8.
pub const NOT_UTF8: [u8; 3] = [0xC3, 0x28, 0xFF];

/// invalid-utf8: the serialized body with 0xC3 0x28 0xFF inserted at the start of a string value
/// (of the first of `fields.text` present, else after the first `"`): otherwise JSON-shaped, so
/// a parser that decodes leniently sees a plausible answer.
pub fn invalid_utf8(body: &[u8], fields: &AnswerFields) -> Vec<u8> {
    let at = fields
        .text
        .iter()
        .find_map(|key| string_value_start(body, key))
        .or_else(|| body.iter().position(|&b| b == b'"').map(|i| i + 1))
        .unwrap_or(body.len());
    [&body[..at], NOT_UTF8.as_slice(), &body[at..]].concat()
}

/// The offset just inside the opening quote of the first string value of member `key`.
fn string_value_start(body: &[u8], key: &str) -> Option<usize> {
    let needle = format!("\"{key}\"");
    let needle = needle.as_bytes();
    let skip_space = |mut i: usize| {
        while body.get(i).is_some_and(u8::is_ascii_whitespace) {
            i += 1;
        }
        i
    };
    let mut from = 0;
    while let Some(found) = body
        .get(from..)?
        .windows(needle.len())
        .position(|w| w == needle)
    {
        let colon = skip_space(from + found + needle.len());
        if body.get(colon) == Some(&b':') {
            let quote = skip_space(colon + 1);
            if body.get(quote) == Some(&b'"') {
                return Some(quote + 1);
            }
        }
        from += found + 1;
    }
    None
}

/// A body of exactly `bytes` bytes (≥ 64) that is one valid JSON object, for `oversized-body`:
/// the conforming answer with a `padding` field first. The padding is a list of strings of at
/// most 50,000 characters each (the spec's per-field limit), so that the body's size is the only
/// fault, not a field's length too. When the answer alone is longer than `bytes`, the body is
/// `{"padding": […]}` alone; below 14 bytes (no room for that), `{}` and spaces (never fewer than
/// the 2 bytes of `{}`).
///
/// The padding is written as bytes, not built as JSON values: a 6 MB body costs a memset, which
/// keeps multi-megabyte answers quick in the debug build the tests run.
pub fn padded_body(conforming: &[u8], bytes: usize) -> Vec<u8> {
    let mut object = as_object(conforming);
    object.remove(PADDING_FIELD);
    let mut rest = serde_json::to_vec(&object).unwrap_or_else(|_| b"{}".to_vec());
    let head = format!("{{\"{PADDING_FIELD}\":[");
    // What follows the list: `]}` for an empty answer, else `],` and the answer's fields.
    let tail = |rest: &[u8]| -> Vec<u8> {
        let mut tail = b"]".to_vec();
        if rest.len() > 2 {
            tail.push(b',');
        }
        tail.extend_from_slice(&rest[1..]);
        tail
    };
    if head.len() + tail(&rest).len() > bytes {
        rest = b"{}".to_vec();
    }
    let tail = tail(&rest);
    let base = head.len() + tail.len();
    if base > bytes {
        let mut out = b"{}".to_vec();
        out.resize(bytes.max(2), b' ');
        return out;
    }
    let (chunks, spaces) = padding(bytes - base);
    // `vec![byte; n]` is a memset even unoptimized; each string is a copy of (part of) it.
    let filler = vec![FILLER; chunks.iter().copied().max().unwrap_or(0)];
    let mut out = Vec::with_capacity(bytes);
    out.extend_from_slice(head.as_bytes());
    for (i, len) in chunks.into_iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.push(b'"');
        out.extend_from_slice(&filler[..len]);
        out.push(b'"');
    }
    out.extend_from_slice(&tail);
    out.extend_from_slice(&b"  "[..spaces]);
    out
}

pub fn serialized_len(object: &Map<String, Value>) -> usize {
    serde_json::to_vec(object).map_or(0, |v| v.len())
}

/// The lengths of the filler strings that take exactly `room` more bytes inside an empty JSON
/// list, each at most the spec's field limit; and the spaces to add after the object when that
/// cannot be done (one byte of room: the smallest string, `""`, takes two).
fn padding(room: usize) -> (Vec<usize>, usize) {
    if room < 2 {
        return (Vec::new(), room);
    }
    // k strings holding c characters in all take c + 2k (quotes) + k - 1 (commas) bytes.
    let k = (room + 1).div_ceil(MAX_PADDING_STRING + 3);
    let total = room + 1 - 3 * k;
    let lengths = (0..k)
        .map(|i| total / k + usize::from(i < total % k))
        .collect();
    (lengths, 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Members no protocol has: the encoding layer bends the ones it is told.
    const FIELDS: AnswerFields = AnswerFields {
        identity: "who",
        text: &["said", "also"],
        number: "score",
    };

    #[test]
    fn the_protocols_members_are_the_ones_bent() {
        let answer = br#"{"also":"b","n":{"score":2},"said":"a","who":"me"}"#;
        let (body, _) = malformed(Malformed::DuplicateKeys, answer, &FIELDS);
        assert_eq!(
            String::from_utf8(body).unwrap(),
            r#"{"also":"b","n":{"score":2},"said":"a","who":"me","who":"me-impostor"}"#
        );
        let (body, _) = malformed(Malformed::NaN, answer, &FIELDS);
        assert_eq!(
            String::from_utf8(body).unwrap(),
            r#"{"also":"b","n":{"score":NaN},"said":"a","who":"me"}"#
        );
        // `said` comes first in the protocol's order, though `also` comes first in the body.
        assert_eq!(
            invalid_utf8(answer, &FIELDS),
            [
                br#"{"also":"b","n":{"score":2},"said":""#.as_slice(),
                NOT_UTF8.as_slice(),
                br#"a","who":"me"}"#.as_slice()
            ]
            .concat()
        );
        // None of them: a new identity and number, the first string's start.
        let (body, _) = malformed(Malformed::DuplicateKeys, br#"{"x":"y"}"#, &FIELDS);
        assert_eq!(
            String::from_utf8(body).unwrap(),
            r#"{"who":"agent","x":"y","who":"agent-impostor"}"#
        );
        let (body, _) = malformed(Malformed::NaN, br#"{"x":1}"#, &FIELDS);
        assert_eq!(String::from_utf8(body).unwrap(), r#"{"score":NaN,"x":1}"#);
        assert_eq!(
            invalid_utf8(br#"{"x":"y"}"#, &FIELDS),
            [
                br#"{""#.as_slice(),
                NOT_UTF8.as_slice(),
                br#"x":"y"}"#.as_slice()
            ]
            .concat()
        );
    }
}
