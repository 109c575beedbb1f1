//! A validating one-pass JSON scanner for the mock's hot path: it checks a request body is JSON
//! and records its top-level object's members (their kind and raw text) without building a
//! `serde_json::Value` — a tenth of the instructions for a typical request body.
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
    /// The value's text as sent (a string with its quotes): UTF-8, as the whole body is.
    pub raw: &'a [u8],
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
            serde_json::from_slice::<String>(member.raw)
                .ok()
                .map(Cow::Owned)
        } else {
            crate::text::utf8(inner).map(Cow::Borrowed)
        }
    }
}

/// Nesting deeper than this is left to serde_json (whose own limit is 128).
const MAX_DEPTH: usize = 64;
/// Integer or fraction digits beyond this are left to serde_json (where a number becomes a
/// float, or out of range).
const MAX_DIGITS: usize = 18;

/// The body's top-level object, or None: not JSON, not an object, or not sure (see the module).
///
/// UTF-8 is checked on the way, not in a pass of its own: outside strings only ASCII is JSON,
/// and inside them each run of non-ASCII bytes is checked where the scan meets it.
pub fn skim(bytes: &[u8]) -> Option<Skim<'_>> {
    let mut scan = Scan { s: bytes, i: 0 };
    scan.ws();
    if scan.peek()? != b'{' {
        return None;
    }
    let mut members: Vec<Member<'_>> = Vec::with_capacity(8);
    scan.object(0, |key, value, (kind, escaped, items)| {
        // A key with an escape is declined.
        let key = crate::text::utf8(&bytes[key?])?;
        if members.iter().any(|m| m.key == key) {
            return None; // serde_json keeps the last, the skim would see the first
        }
        members.push(Member {
            key,
            kind,
            raw: &bytes[value],
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
/// plain run of string text: a quote, a backslash or a control character (and, when `ASCII`,
/// a byte of a non-ASCII character).
#[inline]
fn specials<const ASCII: bool>(w: u64) -> u64 {
    let special = below(w ^ (ONES * u64::from(b'"')), 1)
        | below(w ^ (ONES * u64::from(b'\\')), 1)
        | below(w, 0x20);
    if ASCII {
        special | (w & HIGHS)
    } else {
        special
    }
}

/// Whether byte `b` ends a plain run (see [`specials`]).
#[inline]
fn is_special<const ASCII: bool>(b: u8) -> bool {
    b == b'"' || b == b'\\' || b < 0x20 || (ASCII && b >= 0x80)
}

/// How many bytes at the start of `s` are plain string text: no quote, backslash or control
/// character.
#[inline]
pub fn plain_prefix(s: &[u8]) -> usize {
    plain_run::<false>(s, 0)
}

/// How many bytes of `s` from `from` on are plain (see [`plain_prefix`]; when `ASCII`, non-ASCII
/// bytes end the run too). Sixteen bytes at a time with SSE2 (every x86_64 has it), the last
/// few by one more load of the last sixteen; elsewhere eight at a time, then byte by byte.
#[inline]
fn plain_run<const ASCII: bool>(s: &[u8], from: usize) -> usize {
    let mut i = from;
    #[cfg(target_arch = "x86_64")]
    {
        while let Some(block) = s.get(i..).and_then(<[u8]>::first_chunk) {
            let mask = sse2_specials::<ASCII>(block);
            if mask != 0 {
                return i + mask.trailing_zeros() as usize - from;
            }
            i += 16;
        }
        if let Some(last) = s.last_chunk::<16>().filter(|_| i < s.len()) {
            // The last sixteen bytes overlap what is behind `i`: their bits are shifted out.
            let mask = sse2_specials::<ASCII>(last) >> (i + 16 - s.len());
            return match mask {
                0 => s.len() - from,
                _ => i + mask.trailing_zeros() as usize - from,
            };
        }
    }
    while let Some(word) = s.get(i..).and_then(<[u8]>::first_chunk::<8>) {
        let special = specials::<ASCII>(u64::from_le_bytes(*word));
        if special != 0 {
            return i + (special.trailing_zeros() / 8) as usize - from;
        }
        i += 8;
    }
    while let Some(&b) = s.get(i) {
        if is_special::<ASCII>(b) {
            break;
        }
        i += 1;
    }
    i - from
}

/// One bit per byte of `block` (the first byte lowest) that ends a plain run (see [`specials`]).
#[cfg(target_arch = "x86_64")]
#[inline]
fn sse2_specials<const ASCII: bool>(block: &[u8; 16]) -> u32 {
    use std::arch::x86_64::*;
    // SAFETY: SSE2 is part of the x86_64 baseline; the load reads the 16 bytes of `block`
    // (unaligned loads are allowed).
    unsafe {
        let x = _mm_loadu_si128(block.as_ptr().cast::<__m128i>());
        // x ≤ 0x1f, unsigned: a control character.
        let control = _mm_cmpeq_epi8(_mm_min_epu8(x, _mm_set1_epi8(0x1f)), x);
        let quote = _mm_cmpeq_epi8(x, _mm_set1_epi8(b'"' as i8));
        let backslash = _mm_cmpeq_epi8(x, _mm_set1_epi8(b'\\' as i8));
        let special = _mm_or_si128(_mm_or_si128(quote, backslash), control);
        let mut mask = _mm_movemask_epi8(special) as u32;
        if ASCII {
            mask |= _mm_movemask_epi8(x) as u32; // the high bits: non-ASCII
        }
        mask
    }
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
    /// array) its items' kinds. A string (most values of a request) is read here, inline; the
    /// rest in [`Scan::nested_or_literal`], a call of its own (it recurses, so it is never
    /// inlined, and a call cost as much as reading the string).
    #[inline(always)]
    fn value(&mut self, depth: usize) -> Option<(Kind, bool, Kinds)> {
        if self.peek()? == b'"' {
            Some((Kind::String, self.string()?, 0))
        } else {
            self.nested_or_literal(depth)
        }
    }

    /// A value at nesting `depth` that is not a string: an object, an array, a literal or a
    /// number (see [`Scan::value`]).
    fn nested_or_literal(&mut self, depth: usize) -> Option<(Kind, bool, Kinds)> {
        if depth > MAX_DEPTH {
            return None;
        }
        Some(match self.peek()? {
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
    /// unknown escape, no closing quote, bytes that are not UTF-8).
    #[inline]
    fn string(&mut self) -> Option<bool> {
        // Nearly always plain text up to the closing quote: that much inline, the rest not.
        let end = self.i + 1 + plain_run::<true>(self.s, self.i + 1);
        self.i = end;
        if self.s.get(end) == Some(&b'"') {
            self.i += 1;
            return Some(false);
        }
        self.string_rest()
    }

    /// The rest of a string from a byte that ended a plain run and is not its closing quote.
    #[cold]
    #[inline(never)]
    fn string_rest(&mut self) -> Option<bool> {
        let s = self.s;
        let mut escaped = false;
        loop {
            match self.next()? {
                b'"' => return Some(escaped),
                0x80.. => {
                    // A run of non-ASCII bytes holds whole characters (each is all high
                    // bytes) when the body is UTF-8: check the run, and only the run.
                    let start = self.i - 1;
                    let run = s[start..].iter().take_while(|&&b| b >= 0x80).count();
                    std::str::from_utf8(&s[start..start + run]).ok()?;
                    self.i = start + run;
                }
                b'\\' => {
                    escaped = true;
                    match self.next()? {
                        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => {}
                        _ => return None,
                    }
                }
                _ => return None, // a control character
            }
            self.i += plain_run::<true>(s, self.i);
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
        assert_eq!(skim.get("o").unwrap().raw, br#"{"k":[1,{"z":null}]}"#);
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

    /// UTF-8 is checked where the scan meets non-ASCII bytes: what serde_json refuses is
    /// declined, what it reads is read the same.
    #[test]
    fn utf8_is_checked_in_strings_and_refused_outside_them() {
        let refused: [&[u8]; 8] = [
            b"{\"a\":\"\xc0\x80\"}",         // an overlong NUL
            b"{\"a\":\"\xed\xa0\x80\"}",     // a surrogate
            b"{\"a\":\"\xe8\xaa\"}",         // a character cut short by the quote
            b"{\"a\":\"x\x80\"}",            // a lone continuation byte
            b"{\"\xff\":1}",                 // in a key
            b"{\"a\":1}\xc3\xa9",            // after the object
            b"\xc3\xa9{\"a\":1}",            // before it
            b"{\"a\":\"\xf4\x90\x80\x80\"}", // past U+10FFFF
        ];
        for body in refused {
            assert!(serde_json::from_slice::<serde_json::Value>(body).is_err());
            assert!(skim(body).is_none(), "{body:?} was skimmed");
        }
        for text in [
            "é",
            "認証 モジュール",
            "🔐👩‍💻",
            "a€b",
            "\u{7f}\u{80}\u{7ff}\u{800}\u{ffff}\u{10000}",
        ] {
            let body = format!("{{\"{text}\":\"{text} and {text}\"}}");
            let skim = skim(body.as_bytes()).expect("skimmed");
            assert_eq!(skim.members[0].key, text);
            assert_eq!(
                skim.str(text).as_deref(),
                Some(format!("{text} and {text}").as_str())
            );
        }
    }

    /// The sixteen-, eight- and one-byte scans agree with a byte-by-byte reading, wherever the
    /// first special byte falls, wherever the run starts and whatever the length.
    #[test]
    fn plain_runs_agree_with_a_byte_by_byte_reading() {
        for len in 0..40 {
            for at in 0..=len {
                for special in [b'"', b'\\', 0x00, 0x1f, 0x80, 0xc3, 0xff] {
                    let mut s = vec![b'x'; len];
                    if at < len {
                        s[at] = special;
                    }
                    // A byte just past 0x1f, 0x7f and bytes around the quote are plain.
                    if at + 1 < len {
                        s[at + 1] = [0x20, 0x7f, b'!', b'#'][at % 4];
                    }
                    let naive = |ascii: bool, from: usize| {
                        s[from..]
                            .iter()
                            .position(|&b| {
                                b == b'"' || b == b'\\' || b < 0x20 || (ascii && b >= 0x80)
                            })
                            .unwrap_or(len - from)
                    };
                    for from in 0..=len {
                        let naive = |ascii: bool| naive(ascii, from);
                        assert_eq!(plain_run::<false>(&s, from), naive(false), "{s:?} {from}");
                        assert_eq!(plain_run::<true>(&s, from), naive(true), "{s:?} {from}");
                    }
                }
            }
        }
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
