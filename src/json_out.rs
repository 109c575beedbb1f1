//! Writing JSON text straight into a byte buffer, for answers generated on the mock's hot path
//! (an /analyze answer written piece by piece costs a fraction of building a struct of owned
//! strings and serializing it). Text is escaped as serde_json escapes it; numbers are written by
//! serde_json itself.

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

/// A number as serde_json writes it (`0.5`, `1.0`).
#[inline]
pub fn number(out: &mut Vec<u8>, value: f64) {
    let _ = serde_json::to_writer(&mut *out, &value);
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let mut out = Vec::new();
        for n in [0.05, 0.5, 1.0, 0.33] {
            out.clear();
            number(&mut out, n);
            assert_eq!(out, serde_json::to_vec(&n).unwrap());
        }
    }
}
