//! The little template language of payload texts: `{canary}` and encodings such as
//! `{base64:TEXT}`. Encodings are computed when a payload is rendered rather than typed into the
//! corpus by hand, so an encoded instruction always decodes to what its source says, canary
//! included, and the corpus stays readable.

use std::fmt::Write as _;

/// The placeholder a rendered payload replaces with the canary token.
pub const CANARY: &str = "{canary}";

/// Deepest nesting of encodings (`{base64:{rot13:…}}` is 2). A bound keeps a hostile corpus file
/// from driving the recursive parser into a stack overflow.
const MAX_DEPTH: usize = 4;

/// A canary-shaped stand-in, for checks that need a rendered text before any canary exists.
const SAMPLE_CANARY: &str = "tck0000000000";

/// How an encoded part of a payload is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    Base64,
    Hex,
    Rot13,
    Url,
    /// Unicode tag characters (U+E0020..U+E007E), invisible in most interfaces.
    Tags,
}

impl Encoding {
    const ALL: [Encoding; 5] = [
        Encoding::Base64,
        Encoding::Hex,
        Encoding::Rot13,
        Encoding::Url,
        Encoding::Tags,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Encoding::Base64 => "base64",
            Encoding::Hex => "hex",
            Encoding::Rot13 => "rot13",
            Encoding::Url => "url",
            Encoding::Tags => "tags",
        }
    }

    /// The encoding whose opening (`{base64:`) starts `text`, and the opening's length.
    fn opening(text: &str) -> Option<(Encoding, usize)> {
        let rest = text.strip_prefix('{')?;
        Encoding::ALL.into_iter().find_map(|e| {
            let after = rest.strip_prefix(e.name())?.strip_prefix(':')?;
            Some((e, text.len() - after.len()))
        })
    }

    pub fn apply(self, text: &str) -> String {
        match self {
            Encoding::Base64 => crate::base64::encode(text.as_bytes()),
            Encoding::Hex => text.bytes().fold(String::new(), |mut out, b| {
                let _ = write!(out, "{b:02x}");
                out
            }),
            Encoding::Rot13 => text.chars().map(rot13).collect(),
            Encoding::Url => percent_encode(text),
            Encoding::Tags => text.chars().map(to_tag).collect(),
        }
    }
}

/// One piece of a parsed payload text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Segment {
    Text(String),
    Canary,
    Encoded(Encoding, Vec<Segment>),
}

/// A parsed payload text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    pub segments: Vec<Segment>,
}

impl Template {
    /// Parses a payload text. The error says which encoding is left open, nested too deep, or
    /// cannot hold what it was given.
    pub fn parse(text: &str) -> Result<Template, TemplateError> {
        let mut parser = Parser { text, pos: 0 };
        let segments = parser.segments(None, 0)?;
        check_tags(&segments)?;
        Ok(Template { segments })
    }

    pub fn render(&self, canary: &str) -> String {
        render(&self.segments, canary)
    }

    /// Whether a rendered text holds the canary where `find_canaries` can see it: in plain text,
    /// or spelled in tag characters (which it maps back to ASCII), but not under base64 and the
    /// like.
    pub fn has_findable_canary(&self) -> bool {
        findable(&self.segments)
    }
}

fn findable(segments: &[Segment]) -> bool {
    segments.iter().any(|s| match s {
        Segment::Canary => true,
        Segment::Encoded(Encoding::Tags, inner) => findable(inner),
        _ => false,
    })
}

pub fn render(segments: &[Segment], canary: &str) -> String {
    let mut out = String::new();
    for segment in segments {
        match segment {
            Segment::Text(text) => out.push_str(text),
            Segment::Canary => out.push_str(canary),
            Segment::Encoded(encoding, inner) => {
                out.push_str(&encoding.apply(&render(inner, canary)))
            }
        }
    }
    out
}

/// Why a payload text is not a template.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TemplateError {
    #[error("`{{{encoding}:` is never closed by a `}}`")]
    Unclosed { encoding: &'static str },
    #[error("encodings nested deeper than {MAX_DEPTH}")]
    TooDeep,
    /// A `{tags:…}` that renders to a character with no tag character.
    #[error("`{{tags:…}}` holds {found:?}, which has no tag character (printable ASCII only)")]
    NotTaggable { found: char },
}

/// Tag characters exist for printable ASCII only: what a `{tags:…}` holds must render to that.
fn check_tags(segments: &[Segment]) -> Result<(), TemplateError> {
    for segment in segments {
        if let Segment::Encoded(encoding, inner) = segment {
            if *encoding == Encoding::Tags {
                let text = render(inner, SAMPLE_CANARY);
                if let Some(c) = text.chars().find(|c| !matches!(c, ' '..='~')) {
                    return Err(TemplateError::NotTaggable { found: c });
                }
            }
            check_tags(inner)?;
        }
    }
    Ok(())
}

struct Parser<'a> {
    text: &'a str,
    pos: usize,
}

impl Parser<'_> {
    /// Reads segments up to the end of the text, or, inside an encoding, up to the `}` that
    /// closes it.
    fn segments(
        &mut self,
        inside: Option<Encoding>,
        depth: usize,
    ) -> Result<Vec<Segment>, TemplateError> {
        let mut out = Vec::new();
        let mut literal = String::new();
        loop {
            let rest = self.text.get(self.pos..).unwrap_or_default();
            let Some(c) = rest.chars().next() else {
                return match inside {
                    Some(e) => Err(TemplateError::Unclosed { encoding: e.name() }),
                    None => Ok(flushed(out, literal)),
                };
            };
            if rest.starts_with(CANARY) {
                out = flushed(out, std::mem::take(&mut literal));
                out.push(Segment::Canary);
                self.pos += CANARY.len();
            } else if let Some((encoding, len)) = Encoding::opening(rest) {
                if depth == MAX_DEPTH {
                    return Err(TemplateError::TooDeep);
                }
                out = flushed(out, std::mem::take(&mut literal));
                self.pos += len;
                let inner = self.segments(Some(encoding), depth + 1)?;
                out.push(Segment::Encoded(encoding, inner));
            } else if c == '}' && inside.is_some() {
                self.pos += 1;
                return Ok(flushed(out, literal));
            } else {
                literal.push(c);
                self.pos += c.len_utf8();
            }
        }
    }
}

/// `out` with the pending literal text appended, if there is any.
fn flushed(mut out: Vec<Segment>, literal: String) -> Vec<Segment> {
    if !literal.is_empty() {
        out.push(Segment::Text(literal));
    }
    out
}

fn rot13(c: char) -> char {
    let rotate = |base: u8| char::from((c as u8 - base + 13) % 26 + base);
    match c {
        'a'..='z' => rotate(b'a'),
        'A'..='Z' => rotate(b'A'),
        _ => c,
    }
}

/// Percent-encodes every byte but the unreserved characters of RFC 3986.
fn percent_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len() * 3);
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// The tag character spelling printable ASCII `c`; other characters have none and are kept.
fn to_tag(c: char) -> char {
    match c {
        ' '..='~' => char::from_u32(0xE0000 + c as u32).unwrap_or(c),
        _ => c,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_the_rfc_vectors() {
        for (plain, encoded) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(Encoding::Base64.apply(plain), encoded, "{plain:?}");
        }
    }

    #[test]
    fn other_encodings_match_known_values() {
        assert_eq!(Encoding::Hex.apply("Hi\n"), "48690a");
        assert_eq!(Encoding::Rot13.apply("Hello, World"), "Uryyb, Jbeyq");
        assert_eq!(Encoding::Url.apply("a b&c=d~é"), "a%20b%26c%3Dd~%C3%A9");
        assert_eq!(Encoding::Tags.apply("Hi"), "\u{E0048}\u{E0069}");
    }

    #[test]
    fn parses_nested_encodings_and_literal_braces() {
        let t = Template::parse("{\"a\": 1} {base64:{rot13:x {canary}}} {canary}").unwrap();
        assert_eq!(
            t.segments,
            vec![
                Segment::Text("{\"a\": 1} ".into()),
                Segment::Encoded(
                    Encoding::Base64,
                    vec![Segment::Encoded(
                        Encoding::Rot13,
                        vec![Segment::Text("x ".into()), Segment::Canary]
                    )]
                ),
                Segment::Text(" ".into()),
                Segment::Canary,
            ]
        );
        assert_eq!(
            t.render("tckabc"),
            format!("{{\"a\": 1}} {} tckabc", Encoding::Base64.apply("k gpxnop"))
        );
    }

    #[test]
    fn reports_what_is_wrong() {
        let e = Template::parse("{hex:abc").unwrap_err();
        assert_eq!(e, TemplateError::Unclosed { encoding: "hex" });
        assert_eq!(e.to_string(), "`{hex:` is never closed by a `}`");
        let e = Template::parse(&"{url:".repeat(MAX_DEPTH + 1)).unwrap_err();
        assert_eq!(e, TemplateError::TooDeep);
        assert!(e.to_string().contains("nested deeper than"), "{e}");
        let e = Template::parse("{tags:héllo {canary}}").unwrap_err();
        assert_eq!(
            e.to_string(),
            "`{tags:…}` holds 'é', which has no tag character (printable ASCII only)"
        );
    }

    #[test]
    fn a_canary_is_findable_in_plain_text_or_tags_only() {
        let findable = |t: &str| Template::parse(t).unwrap().has_findable_canary();
        assert!(findable("x {canary}"));
        assert!(findable("{tags:x {canary}}"));
        assert!(!findable("{base64:{canary}}"));
        assert!(!findable("{tags:{hex:{canary}}}"));
        assert!(!findable("no placeholder"));
    }
}
