//! A validating one-pass JSON scanner for the mock's hot path: it checks a request body is JSON
//! and records its top-level object's members (their kind and raw text) without building a
//! `serde_json::Value` — a tenth of the instructions for a typical /analyze body.
//!
//! It is deliberately partial: whatever it is not sure serde_json reads the same way (a `\u`
//! escape, a number with an exponent or many digits, a duplicate key, deep nesting, anything but
//! an object at the top) it declines with `None`, and the caller takes the full path (serde_json
//! and the JSON Schema validator). So a skim is only ever an *accepting* shortcut: the tests and
//! the `mock_body` fuzz target hold every skimmed body to parsing with serde_json.

use std::borrow::Cow;
use std::ops::Range;

/// What a value is, as JSON Schema's `type` names it (`Integer`: a number without fraction or
/// exponent).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Null = 0,
    Bool = 1,
    Integer = 2,
    Number = 3,
    String = 4,
    Array = 5,
    Object = 6,
}

impl Kind {
    /// Its bit in a [`Kinds`] set.
    pub const fn bit(self) -> Kinds {
        1 << self as u8
    }
}

/// A set of kinds, one bit each.
pub type Kinds = u8;

/// One member of the top-level object.
#[derive(Debug, Clone)]
pub struct Member<'a> {
    pub key: &'a str,
    pub kind: Kind,
    /// The value's text as sent (a string with its quotes).
    pub raw: &'a str,
    /// For a string: whether it holds an escape (its value is then not `raw` less the quotes).
    escaped: bool,
    /// For an array: the kinds of its items.
    pub items: Kinds,
}

/// A body's top-level object, skimmed.
#[derive(Debug, Clone, Default)]
pub struct Skim<'a> {
    pub members: Vec<Member<'a>>,
}

impl<'a> Skim<'a> {
    pub fn get(&self, key: &str) -> Option<&Member<'a>> {
        self.members.iter().find(|m| m.key == key)
    }

    /// The string value of member `key`, when it is a string.
    pub fn str(&self, key: &str) -> Option<Cow<'a, str>> {
        let member = self.get(key).filter(|m| m.kind == Kind::String)?;
        let inner = &member.raw[1..member.raw.len() - 1];
        if member.escaped {
            // Rare: only the simple escapes got here (no \u), which serde_json reads as JSON.
            serde_json::from_str::<String>(member.raw)
                .ok()
                .map(Cow::Owned)
        } else {
            Some(Cow::Borrowed(inner))
        }
    }
}

/// Nesting deeper than this is left to serde_json (whose own limit is 128).
const MAX_DEPTH: usize = 64;
/// Integer or fraction digits beyond this are left to serde_json (where a number becomes a
/// float, or out of range).
const MAX_DIGITS: usize = 18;

/// The body's top-level object, or None: not JSON, not an object, or not sure (see the module).
pub fn skim(bytes: &[u8]) -> Option<Skim<'_>> {
    let text = std::str::from_utf8(bytes).ok()?;
    let mut scan = Scan {
        s: text.as_bytes(),
        i: 0,
    };
    scan.ws();
    if scan.peek()? != b'{' {
        return None;
    }
    let mut members: Vec<Member<'_>> = Vec::with_capacity(8);
    scan.object(0, |key, value, (kind, escaped, items)| {
        let key = &text[key?]; // a key with an escape is declined
        if members.iter().any(|m| m.key == key) {
            return None; // serde_json keeps the last, the skim would see the first
        }
        members.push(Member {
            key,
            kind,
            raw: &text[value],
            escaped,
            items,
        });
        Some(())
    })?;
    scan.ws();
    (scan.i == bytes.len()).then_some(Skim { members })
}

struct Scan<'a> {
    s: &'a [u8],
    i: usize,
}

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// The high bit of each byte of `w` below `n` (n ≤ 128). Borrows run only towards higher
/// bytes, so the lowest bit set is exactly the first such byte (later ones may be flagged
/// falsely, which no caller relies on).
#[inline]
fn below(w: u64, n: u8) -> u64 {
    w.wrapping_sub(ONES * u64::from(n)) & !w & HIGHS
}

/// The high bit of each byte of `w` (read little-endian: the first byte lowest) that ends a
/// plain run of string text: a quote, a backslash or a control character.
#[inline]
fn specials(w: u64) -> u64 {
    below(w ^ (ONES * u64::from(b'"')), 1)
        | below(w ^ (ONES * u64::from(b'\\')), 1)
        | below(w, 0x20)
}

/// How many bytes at the start of `s` are plain string text (no quote, backslash or control
/// character), eight at a time.
#[inline]
pub fn plain_prefix(s: &[u8]) -> usize {
    let mut i = 0;
    while let Some(word) = s.get(i..i + 8) {
        let mut bytes = [0; 8];
        bytes.copy_from_slice(word);
        let special = specials(u64::from_le_bytes(bytes));
        if special != 0 {
            return i + (special.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while let Some(&b) = s.get(i) {
        if b == b'"' || b == b'\\' || b < 0x20 {
            break;
        }
        i += 1;
    }
    i
}

impl Scan<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn next(&mut self) -> Option<u8> {
        let b = self.peek()?;
        self.i += 1;
        Some(b)
    }

    fn expect(&mut self, b: u8) -> Option<()> {
        (self.next()? == b).then_some(())
    }

    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.i += 1;
        }
    }

    /// A value at nesting `depth`: its kind, whether (a string) it holds escapes, and (an
    /// array) its items' kinds.
    fn value(&mut self, depth: usize) -> Option<(Kind, bool, Kinds)> {
        if depth > MAX_DEPTH {
            return None;
        }
        Some(match self.peek()? {
            b'"' => (Kind::String, self.string()?, 0),
            b'{' => {
                self.object(depth, |_, _, _| Some(()))?;
                (Kind::Object, false, 0)
            }
            b'[' => {
                self.i += 1;
                let mut items = 0;
                self.ws();
                if self.peek()? == b']' {
                    self.i += 1;
                } else {
                    loop {
                        self.ws();
                        items |= self.value(depth + 1)?.0.bit();
                        self.ws();
                        match self.next()? {
                            b',' => {}
                            b']' => break,
                            _ => return None,
                        }
                    }
                }
                (Kind::Array, false, items)
            }
            b't' => (self.literal(b"true", Kind::Bool)?, false, 0),
            b'f' => (self.literal(b"false", Kind::Bool)?, false, 0),
            b'n' => (self.literal(b"null", Kind::Null)?, false, 0),
            _ => (self.number()?, false, 0),
        })
    }

    /// An object at nesting `depth`, from its `{` past its `}`. For each member, `each` gets
    /// where its key's text is (None when the key holds an escape), where its value is, and
    /// the value's kind, escapes and items as [`Scan::value`] gives them; None from `each`
    /// declines the whole body.
    fn object(
        &mut self,
        depth: usize,
        mut each: impl FnMut(Option<Range<usize>>, Range<usize>, (Kind, bool, Kinds)) -> Option<()>,
    ) -> Option<()> {
        self.i += 1;
        self.ws();
        if self.peek()? == b'}' {
            self.i += 1;
            return Some(());
        }
        loop {
            self.ws();
            if self.peek()? != b'"' {
                return None;
            }
            let key_start = self.i;
            let key_escaped = self.string()?;
            let key = (!key_escaped).then_some(key_start + 1..self.i - 1);
            self.ws();
            self.expect(b':')?;
            self.ws();
            let start = self.i;
            let value = self.value(depth + 1)?;
            each(key, start..self.i, value)?;
            self.ws();
            match self.next()? {
                b',' => {}
                b'}' => return Some(()),
                _ => return None,
            }
        }
    }

    fn literal(&mut self, word: &[u8], kind: Kind) -> Option<Kind> {
        let end = self.i + word.len();
        (self.s.get(self.i..end)? == word).then(|| {
            self.i = end;
            kind
        })
    }

    /// From its opening quote past its closing one; whether it holds escapes. Declines `\u`
    /// (serde_json refuses lone surrogates) and anything JSON refuses (a control character, an
    /// unknown escape, no closing quote).
    fn string(&mut self) -> Option<bool> {
        let s = self.s;
        self.i += 1;
        let mut escaped = false;
        loop {
            self.i += plain_prefix(s.get(self.i..)?);
            match self.next()? {
                b'"' => return Some(escaped),
                b'\\' => {
                    escaped = true;
                    match self.next()? {
                        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => {}
                        _ => return None,
                    }
                }
                _ => return None, // a control character
            }
        }
    }

    /// `-?(0|[1-9][0-9]*)(\.[0-9]+)?`; an exponent or many digits is declined.
    fn number(&mut self) -> Option<Kind> {
        if self.peek() == Some(b'-') {
            self.i += 1;
        }
        match self.peek()? {
            b'0' => self.i += 1,
            b'1'..=b'9' => {
                self.digits()?;
            }
            _ => return None,
        }
        let mut kind = Kind::Integer;
        if self.peek() == Some(b'.') {
            self.i += 1;
            if self.digits()? == 0 {
                return None;
            }
            kind = Kind::Number;
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            return None;
        }
        Some(kind)
    }

    /// Digits from here: how many (None beyond [`MAX_DIGITS`]).
    fn digits(&mut self) -> Option<usize> {
        let start = self.i;
        while let Some(b'0'..=b'9') = self.peek() {
            self.i += 1;
        }
        let n = self.i - start;
        (n <= MAX_DIGITS).then_some(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_are_recorded_with_their_kind_and_text() {
        let body = br#" {"a":"x\ty","n":-12,"f":0.5,"o":{"k":[1,{"z":null}]},"l":["p","q",true],"e":[],"b":false,"z":null} "#;
        let skim = skim(body).expect("skimmed");
        let kinds: Vec<(&str, Kind)> = skim.members.iter().map(|m| (m.key, m.kind)).collect();
        assert_eq!(
            kinds,
            [
                ("a", Kind::String),
                ("n", Kind::Integer),
                ("f", Kind::Number),
                ("o", Kind::Object),
                ("l", Kind::Array),
                ("e", Kind::Array),
                ("b", Kind::Bool),
                ("z", Kind::Null),
            ]
        );
        assert_eq!(skim.str("a").as_deref(), Some("x\ty"));
        assert_eq!(skim.get("o").unwrap().raw, r#"{"k":[1,{"z":null}]}"#);
        assert_eq!(
            skim.get("l").unwrap().items,
            Kind::String.bit() | Kind::Bool.bit()
        );
        assert_eq!(skim.get("e").unwrap().items, 0);
        assert_eq!(skim.str("n"), None);
    }

    /// Each of these is declined: not JSON, or JSON the skim leaves to serde_json.
    #[test]
    fn what_it_is_not_sure_of_is_declined() {
        let declined: [&[u8]; 22] = [
            b"",
            b"[1]",
            b"\"s\"",
            b"{",
            b"{\"a\":1,}",
            b"{\"a\":1} x",
            b"{\"a\":01}",
            b"{\"a\":1.}",
            b"{\"a\":1e5}",
            b"{\"a\":-}",
            b"{\"a\":1234567890123456789}",
            b"{\"a\":\"\\u0041\"}",
            b"{\"a\":\"\\x\"}",
            b"{\"a\":\"tab\there\"}",
            b"{\"a\":1,\"a\":2}",
            b"{\"a\\n\":1}",
            b"{\"a\":tru}",
            b"{\"a\":[1 2]}",
            b"{\"a\":{\"k\" 1}}",
            b"{\"a\":\"\xff\"}",
            b"{a:1}",
            b"{\"a\":\"unterminated}",
        ];
        for body in declined {
            assert!(
                skim(body).is_none(),
                "{:?} was skimmed",
                String::from_utf8_lossy(body)
            );
        }
        let deep = format!("{{\"a\":{}{}}}", "[".repeat(70), "]".repeat(70));
        assert!(skim(deep.as_bytes()).is_none());
        let ok = format!("{{\"a\":{}{}}}", "[".repeat(60), "]".repeat(60));
        assert!(skim(ok.as_bytes()).is_some());
    }

    /// The eight-bytes-at-a-time scan stops at every special byte wherever it falls in a word.
    #[test]
    fn special_bytes_are_found_at_every_offset() {
        for at in 0..20 {
            for special in ["\\\"", "\\\\", "\\n", "\"", "\u{1}"] {
                let mut s = "é".repeat(at / 2) + &"x".repeat(at % 2);
                s.push_str(special);
                s.push_str("tail-tail-tail");
                let body = format!("{{\"k\":\"{s}\"}}");
                let ours = skim(body.as_bytes()).and_then(|m| m.str("k").map(|c| c.into_owned()));
                let theirs = serde_json::from_str::<serde_json::Value>(&body)
                    .ok()
                    .and_then(|v| v["k"].as_str().map(str::to_string));
                if special == "\"" || special == "\u{1}" {
                    // The string ends early (the rest is not JSON), or holds a raw control byte.
                    assert_eq!(ours, None, "{body:?}");
                    assert_eq!(theirs, None, "{body:?}");
                } else {
                    assert_eq!(ours, theirs, "{body:?}");
                    assert!(ours.is_some(), "{body:?}");
                }
            }
        }
    }
}
