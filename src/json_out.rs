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
