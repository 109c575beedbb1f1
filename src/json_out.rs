//! Writing JSON text straight into a byte buffer, for answers generated on the mock's hot path
//! (a typical answer written piece by piece costs a fraction of building a struct of owned
//! strings and serializing it). Text is escaped as serde_json escapes it, and
//! numbers as it writes them.

use crate::json_skim::plain_prefix;

/// `text` as the contents of a JSON string (no quotes): copied as it is when nothing in it
/// needs an escape, which is nearly always.
#[inline]
pub fn escaped(out: &mut Vec<u8>, text: &str) {
    if plain_prefix(text.as_bytes()) == text.len() {
        out.extend_from_slice(text.as_bytes());
    } else {
        let quoted = serde_json::to_string(text).unwrap_or_default();
        out.extend_from_slice(&quoted.as_bytes()[1..quoted.len() - 1]);
    }
}

/// `text` as a JSON string.
#[inline]
pub fn string(out: &mut Vec<u8>, text: &str) {
    out.push(b'"');
    escaped(out, text);
    out.push(b'"');
}

/// `value` as `serde_json::to_vec` writes it (compact, the map's own key order), its strings
/// through [`escaped`]: a request body holding 100,000 characters of text is copied, not escaped
/// byte by byte (~1 million instructions a body with serde_json's writer).
pub fn value(out: &mut Vec<u8>, value: &serde_json::Value) {
    use serde_json::Value;
    match value {
        Value::String(text) => string(out, text),
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                self::value(out, item);
            }
            out.push(b']');
        }
        Value::Object(map) => {
            out.push(b'{');
            for (i, (key, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                string(out, key);
                out.push(b':');
                self::value(out, item);
            }
            out.push(b'}');
        }
        // Null, booleans and numbers: as serde_json writes them (writing to a Vec cannot fail).
        scalar => serde_json::to_writer(&mut *out, scalar).unwrap_or_default(),
    }
}

/// `n` hundredths (n ≤ 100) as serde_json writes the f64 `n as f64 / 100.0`: the shortest
/// decimal that reads back as it (`0.05`, `0.5`, `1.0`), written without a float formatter.
#[inline]
pub fn hundredths(out: &mut Vec<u8>, n: u32) {
    match n {
        100.. => out.extend_from_slice(b"1.0"),
        _ if n.is_multiple_of(10) => out.extend_from_slice(&[b'0', b'.', b'0' + (n / 10) as u8]),
        _ => out.extend_from_slice(&[b'0', b'.', b'0' + (n / 10) as u8, b'0' + (n % 10) as u8]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Values come out byte for byte as `serde_json::to_vec` writes them.
    #[test]
    fn values_are_written_as_serde_json_writes_them() {
        let long = "Lorem ipsum dolor sit amet. ".repeat(4000);
        let values = [
            serde_json::json!(null),
            serde_json::json!([]),
            serde_json::json!({}),
            serde_json::json!({"task_id": "t-1", "content": long, "n": [1, -2, 3.5, 1e300, 0.1],
                "ok": true, "no": false, "none": null,
                "nested": {"z": "last", "a": ["x\"y", "tab\t", "nul\u{0}", "é 認証 🔐 \u{2028}"]},
                "esc\"aped key": {"": ""}}),
            serde_json::json!("just a string"),
            serde_json::json!(18446744073709551615u64),
        ];
        for v in &values {
            let mut out = Vec::new();
            value(&mut out, v);
            assert_eq!(
                String::from_utf8(out).unwrap(),
                serde_json::to_string(v).unwrap()
            );
        }
    }

    /// Strings come out as serde_json writes them, whatever they hold.
    #[test]
    fn strings_are_escaped_as_serde_json_escapes_them() {
        let texts = [
            "",
            "plain words",
            "a \"quote\" and a \\ backslash",
            "tab\there, newline\n, nul\u{0}, bell\u{7}, unit separator\u{1f}",
            "é ü 認証 🔐 \u{2028}",
            "exactly8",
            "seventeen chars!!",
        ];
        for text in texts {
            let mut out = Vec::new();
            string(&mut out, text);
            assert_eq!(
                String::from_utf8(out).unwrap(),
                serde_json::to_string(text).unwrap(),
                "{text:?}"
            );
        }
    }

    /// Every confidence is written as serde_json writes the float it stands for.
    #[test]
    fn hundredths_are_written_as_serde_json_writes_the_float() {
        let mut out = Vec::new();
        for n in 0..=100u32 {
            out.clear();
            hundredths(&mut out, n);
            let float = f64::from(n) / 100.0;
            assert_eq!(
                String::from_utf8_lossy(&out),
                serde_json::to_string(&float).unwrap(),
                "{n}"
            );
        }
    }
}
