//! The prompt-injection payload corpus of the `injection` mock behaviour.
//!
//! A mock agent puts these payloads into the strings of its answers, so that a platform team can
//! see whether the platform forwards them unsanitized to other agents. Each rendered payload
//! carries a canary token: when the token comes back in a later request the platform sends to
//! another agent, the payload got through, and the token says which agent sent which payload.
//!
//! The corpus is data (`mocks/injection/payloads.yaml`, embedded in the binary); its text
//! templates (`{canary}`, `{base64:…}`, …) are described at the top of that file and implemented
//! in [`template`].

mod template;

use std::collections::{HashMap, HashSet};
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};
use serde_saphyr::Spanned;

use crate::text::is_unsafe_char;
use crate::text::{glob_match, yaml_error};
use template::{Template, CANARY};

/// Where the embedded corpus comes from, for messages.
const EMBEDDED_SOURCE: &str = "mocks/injection/payloads.yaml";
const EMBEDDED: &str = include_str!("../../mocks/injection/payloads.yaml");

/// The payload families, in the order the corpus file lists them.
pub const FAMILIES: &[&str] = &[
    "instruction-override",
    "role-spoofing",
    "chat-template",
    "delimiter-breakout",
    "markdown-exfiltration",
    "tool-hijack",
    "html-script",
    "encoded",
    "invisible",
    "homoglyph",
    "mixed-case",
];

/// One payload as the corpus file has it; `text` is a template (see [`Payload::render`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Payload {
    pub id: String,
    pub family: String,
    pub text: String,
    pub note: String,
}

impl Payload {
    /// The payload as it goes into an answer: every `{canary}` replaced by `canary`, and every
    /// encoding (`{base64:…}`, `{tags:…}`, …) computed. A text that is not a valid template (only
    /// possible for a payload built by hand, since the corpus is validated) gets its `{canary}`
    /// placeholders replaced and nothing else.
    pub fn render(&self, canary: &str) -> String {
        match Template::parse(&self.text) {
            Ok(template) => template.render(canary),
            Err(_) => self.text.replace(CANARY, canary),
        }
    }

    fn matches(&self, pattern: &str) -> bool {
        glob_match(pattern, &self.id) || glob_match(pattern, &self.family)
    }
}

/// A validated list of payloads, in file order.
#[derive(Debug, Clone, Default)]
pub struct Corpus {
    payloads: Vec<Payload>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CorpusFile {
    payloads: Vec<PayloadEntry>,
}

/// A payload with the lines of its fields, so that errors can point at them.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PayloadEntry {
    id: Spanned<String>,
    family: Spanned<String>,
    text: Spanned<String>,
    note: Spanned<String>,
}

/// The corpus embedded in the binary, parsed once. The embedded file is checked by a unit test;
/// should it ever be invalid, the corpus is empty rather than a panic at run time.
pub fn corpus() -> &'static Corpus {
    static CORPUS: OnceLock<Corpus> = OnceLock::new();
    CORPUS.get_or_init(|| Corpus::parse(EMBEDDED_SOURCE, EMBEDDED).unwrap_or_default())
}

/// Why a corpus file does not load: each message starts with the file, and the line where
/// there is one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CorpusError {
    /// The YAML parser's error, one line (`text::yaml_error`).
    #[error("{0}")]
    Yaml(String),
    #[error("{file}: the corpus holds no payloads")]
    NoPayloads { file: String },
    /// One payload is wrong; `line` is the offending field's.
    #[error("{file}:{line}: payload `{id}`: {why}")]
    Payload {
        file: String,
        line: u64,
        id: String,
        why: String,
    },
}

/// Why a selection of payloads is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "injection payload pattern {pattern:?} matches no payload id or family (families: {families})"
)]
pub struct SelectError {
    pub pattern: String,
    /// The corpus's families, comma-separated.
    pub families: String,
}

impl Corpus {
    /// Parses and validates a corpus file. Errors are one line, `SOURCE:LINE: payload `id`: what
    /// is wrong` (unknown family, duplicate id, missing `{canary}`, empty text, bad template).
    pub fn parse(source: &str, text: &str) -> Result<Corpus, CorpusError> {
        let file: CorpusFile = serde_saphyr::from_str(text)
            .map_err(|e| CorpusError::Yaml(yaml_error(source, &e.to_string())))?;
        if file.payloads.is_empty() {
            return Err(CorpusError::NoPayloads {
                file: source.to_string(),
            });
        }
        let mut first_line: HashMap<String, u64> = HashMap::new();
        let mut payloads = Vec::with_capacity(file.payloads.len());
        for entry in file.payloads {
            let payload = validate(source, &entry)?;
            let line = entry.id.referenced.line();
            if let Some(first) = first_line.insert(payload.id.clone(), line) {
                return Err(CorpusError::Payload {
                    file: source.to_string(),
                    line,
                    id: payload.id,
                    why: format!("the id is used twice (first at line {first})"),
                });
            }
            payloads.push(payload);
        }
        Ok(Corpus { payloads })
    }

    pub fn payloads(&self) -> &[Payload] {
        &self.payloads
    }

    /// The families present, each once, in order of first appearance.
    pub fn families(&self) -> Vec<&str> {
        let mut seen = HashSet::new();
        self.payloads
            .iter()
            .map(|p| p.family.as_str())
            .filter(|f| seen.insert(*f))
            .collect()
    }

    /// The payloads whose id or family matches any of `patterns` (an exact name, or a glob with
    /// `*` and `?`), in corpus order; no pattern selects them all. The error names a pattern that
    /// matches nothing, so that a typo does not silently shrink a run.
    pub fn select(&self, patterns: &[String]) -> Result<Vec<&Payload>, SelectError> {
        if patterns.is_empty() {
            return Ok(self.payloads.iter().collect());
        }
        if let Some(p) = patterns
            .iter()
            .find(|p| !self.payloads.iter().any(|x| x.matches(p)))
        {
            return Err(SelectError {
                pattern: p.clone(),
                families: self.families().join(", "),
            });
        }
        Ok(self
            .payloads
            .iter()
            .filter(|x| patterns.iter().any(|p| x.matches(p)))
            .collect())
    }
}

/// Checks one entry and turns it into a payload; the error points at the offending field's line.
fn validate(source: &str, entry: &PayloadEntry) -> Result<Payload, CorpusError> {
    let id = &entry.id.value;
    let bad = |field: &Spanned<String>, why: String| CorpusError::Payload {
        file: source.to_string(),
        line: field.referenced.line(),
        id: id.clone(),
        why,
    };
    if !is_kebab_case(id) {
        return Err(bad(
            &entry.id,
            "the id must be kebab-case (lower-case letters and digits joined by single dashes)"
                .to_string(),
        ));
    }
    let family = &entry.family.value;
    if !FAMILIES.contains(&family.as_str()) {
        return Err(bad(
            &entry.family,
            format!("family `{family}` is not one of {}", FAMILIES.join(", ")),
        ));
    }
    let text = &entry.text.value;
    if text.trim().is_empty() {
        return Err(bad(&entry.text, "the text is empty".to_string()));
    }
    let template = Template::parse(text).map_err(|e| bad(&entry.text, e.to_string()))?;
    if !template.has_findable_canary() {
        return Err(bad(
            &entry.text,
            format!(
                "the text has no {CANARY} placeholder outside base64, hex, rot13 and url \
                 (the token could not be traced)"
            ),
        ));
    }
    if entry.note.value.trim().is_empty() {
        return Err(bad(&entry.note, "the note is empty".to_string()));
    }
    Ok(Payload {
        id: id.clone(),
        family: family.clone(),
        text: text.clone(),
        note: entry.note.value.clone(),
    })
}

fn is_kebab_case(id: &str) -> bool {
    id.split('-').all(|part| {
        !part.is_empty()
            && part
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
    })
}

/// `tck` and the hex digits after it.
const CANARY_PREFIX: &[u8] = b"tck";
const CANARY_HEX_DIGITS: usize = 10;
const CANARY_LEN: usize = CANARY_PREFIX.len() + CANARY_HEX_DIGITS;

/// A canary token: `tck` and 10 lower-case hex digits, a stable hash (64-bit FNV-1a, xor-folded
/// to 40 bits) of the seed, the agent's name, the payload id and a counter. The same inputs give
/// the same token on every machine, so a seed replays a run's tokens; ASCII letters and digits
/// only, so the token survives JSON escaping and case folding.
pub fn canary(seed: u64, agent: &str, payload_id: &str, n: u64) -> String {
    let mut hash = crate::text::Fnv1a::default();
    hash.write(&seed.to_le_bytes());
    hash.write_str(agent);
    hash.write_str(payload_id);
    hash.write(&n.to_le_bytes());
    let bits = 4 * CANARY_HEX_DIGITS as u32;
    let folded = (hash.0 ^ (hash.0 >> bits)) & ((1u64 << bits) - 1);
    format!("tck{folded:0width$x}", width = CANARY_HEX_DIGITS)
}

/// Every canary token in `text`, lower-cased, each once, in order of first appearance. A token is
/// `tck` and the 10 hex digits right after it, whatever follows them.
///
/// Tokens are found also where the text was altered the way the payload families alter text:
/// case changed, zero-width or bidi characters inserted, letters made fullwidth, or the token
/// spelled in Unicode tag characters. The text is folded to one byte per character first (tag
/// characters to their ASCII letter, invisible characters to nothing, anything else that is not
/// ASCII to a separator), then scanned once: linear time, and no input can make it panic.
pub fn find_canaries(text: &str) -> Vec<String> {
    let folded: Vec<u8> = text.chars().filter_map(fold).collect();
    let mut found = Vec::new();
    let mut seen = HashSet::new();
    let mut next = 0;
    for (i, window) in folded.windows(CANARY_LEN).enumerate() {
        if i >= next && is_canary(window) {
            let token = String::from_utf8_lossy(window).into_owned();
            if seen.insert(token.clone()) {
                found.push(token);
            }
            next = i + CANARY_LEN;
        }
    }
    found
}

fn is_canary(window: &[u8]) -> bool {
    window.starts_with(CANARY_PREFIX)
        && window[CANARY_PREFIX.len()..]
            .iter()
            .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// One character of a text as `find_canaries` sees it: lower-case ASCII, `None` for characters
/// that render as nothing, and a NUL separator for any other character (a token cannot span it).
fn fold(c: char) -> Option<u8> {
    let ascii = match c {
        '\u{E0020}'..='\u{E007E}' => c as u32 - 0xE0000,
        '\u{FF01}'..='\u{FF5E}' => c as u32 - 0xFF01 + 0x21,
        _ if is_invisible(c) => return None,
        _ if c.is_ascii() => c as u32,
        _ => 0,
    };
    Some(u8::try_from(ascii).unwrap_or(0).to_ascii_lowercase())
}

/// Characters a platform may keep (or a payload may insert) that show as nothing: the escaped
/// invisible set of `text::is_unsafe_char` (zero-width, bidi, tag characters) and a few
/// formatting characters it prints as they are (soft hyphen, combining grapheme joiner, Mongolian
/// vowel separator, variation selectors).
fn is_invisible(c: char) -> bool {
    matches!(
        c,
        '\u{AD}' | '\u{34F}' | '\u{180E}' | '\u{FE00}'..='\u{FE0F}'
    ) || (is_unsafe_char(c) && !c.is_ascii_control())
}

/// Where a protocol puts payload texts in one of its answers (at an endpoint): it returns where
/// each went and which text it was.
pub type Placement = fn(&str, &mut serde_json::Value, &[String]) -> Vec<(String, usize)>;

/// The `injection` behaviour, on the answers of a protocol that says where their forwarded
/// strings are ([`Placement`]).
#[derive(Debug)]
pub struct Injection {
    select: Vec<String>,
    per_answer: usize,
    put: Placement,
}

impl Injection {
    /// Reads an `injection` item's arguments: `select=ID|FAMILY[+…]` (the main parameter; none:
    /// the whole corpus) and `per_answer=N` (default 3).
    pub fn parse(
        a: &mut crate::mock::args::Args<'_>,
        put: Placement,
    ) -> Result<Box<dyn crate::mock::protocol::Mutation>, crate::mock::args::BehaviorError> {
        let select = a
            .get("select", true)
            .map(|s| s.split('+').map(|p| p.trim().to_string()).collect())
            .unwrap_or_default();
        let per_answer = a.number("per_answer", false, 3usize)?.max(1);
        Ok(Box::new(Injection {
            select,
            per_answer,
            put,
        }))
    }
}

impl crate::mock::protocol::Mutation for Injection {
    fn apply(
        &self,
        answer: &mut serde_json::Value,
        at: &mut crate::mock::protocol::Mutating<'_>,
    ) -> bool {
        let endpoint = at.endpoint;
        place(answer, at, &self.select, self.per_answer, |v, texts| {
            (self.put)(endpoint, v, texts)
        })
    }
}

/// Places `per_answer` payloads of the selection in an answer, rotating through the selection
/// by request number, each with its canary; `put` is the protocol's placement (which strings of
/// its answers a platform forwards), returning where each text went and which one it was.
fn place(
    answer: &mut serde_json::Value,
    at: &mut crate::mock::protocol::Mutating<'_>,
    select: &[String],
    per_answer: usize,
    put: impl FnOnce(&mut serde_json::Value, &[String]) -> Vec<(String, usize)>,
) -> bool {
    let Ok(chosen) = corpus().select(select) else {
        return false;
    };
    if chosen.is_empty() {
        return false;
    }
    let start = (at.n as usize * per_answer) % chosen.len();
    let picked: Vec<&Payload> = (0..per_answer.min(chosen.len()))
        .map(|i| chosen[(start + i) % chosen.len()])
        .collect();
    let canaries: Vec<String> = picked
        .iter()
        .map(|p| canary(at.seed, at.agent, &p.id, at.n))
        .collect();
    let texts: Vec<String> = picked
        .iter()
        .zip(&canaries)
        .map(|(p, c)| p.render(c))
        .collect();
    let placed = put(answer, &texts);
    for (path, index) in &placed {
        let p = picked[*index];
        at.injected.push(crate::mock::decision::Placed {
            canary: canaries[*index].clone(),
            payload: p.id.clone(),
            family: p.family.clone(),
            path: path.clone(),
        });
    }
    !placed.is_empty()
}

#[cfg(test)]
mod tests {
    use super::template::{Encoding, Segment};
    use super::*;

    fn embedded() -> Corpus {
        Corpus::parse(EMBEDDED_SOURCE, EMBEDDED).expect("the embedded corpus is valid")
    }

    /// A canary for payload `p`, as a mock agent would make it.
    fn canary_for(p: &Payload) -> String {
        canary(42, "security_reviewer_0", &p.id, 0)
    }

    #[test]
    fn the_embedded_corpus_is_valid_and_is_what_corpus_returns() {
        let parsed = embedded();
        assert_eq!(corpus().payloads(), parsed.payloads());
    }

    #[test]
    fn the_corpus_is_large_and_covers_every_family() {
        let c = embedded();
        assert!(c.payloads().len() >= 60, "{} payloads", c.payloads().len());
        for family in FAMILIES {
            let n = c.payloads().iter().filter(|p| p.family == *family).count();
            assert!(n >= 4, "family {family} has {n} payloads");
        }
        assert_eq!(c.families(), FAMILIES, "families in file order");
    }

    #[test]
    fn ids_are_unique_and_kebab_case() {
        let c = embedded();
        let mut seen = HashSet::new();
        for p in c.payloads() {
            assert!(seen.insert(&p.id), "{} twice", p.id);
            assert!(is_kebab_case(&p.id), "{}", p.id);
        }
    }

    #[test]
    fn every_payload_has_the_placeholder_and_its_canary_is_found_again() {
        for p in embedded().payloads() {
            assert!(p.text.contains(CANARY), "{}", p.id);
            let token = canary_for(p);
            let rendered = p.render(&token);
            assert!(!rendered.contains(CANARY), "{}: {rendered}", p.id);
            assert!(
                find_canaries(&rendered).contains(&token),
                "{}: {token} not found in {rendered:?}",
                p.id
            );
        }
    }

    /// Every URL a payload names points at a `.invalid` host, which never resolves: a platform
    /// that renders or follows one leaks nothing to anybody.
    #[test]
    fn every_url_points_at_an_invalid_host() {
        for p in embedded().payloads() {
            let rendered = p.render(&canary_for(p));
            for (at, _) in rendered.match_indices("://") {
                let host: String = rendered[at + 3..]
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-'))
                    .collect();
                assert!(host.ends_with(".invalid"), "{}: host {host:?}", p.id);
            }
        }
    }

    fn decode_hex(text: &str) -> Vec<u8> {
        (0..text.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&text[i..i + 2], 16).expect("hex"))
            .collect()
    }

    fn decode_percent(text: &str) -> Vec<u8> {
        let mut out = Vec::new();
        let mut bytes = text.bytes();
        while let Some(b) = bytes.next() {
            if b == b'%' {
                let pair: Vec<u8> = bytes.by_ref().take(2).collect();
                out.extend(decode_hex(std::str::from_utf8(&pair).expect("ascii")));
            } else {
                out.push(b);
            }
        }
        out
    }

    /// Reverses an encoding with code written apart from the encoders (rot13 is its own inverse).
    fn decode(encoding: Encoding, text: &str) -> String {
        let bytes = match encoding {
            Encoding::Base64 => crate::base64::decode(text),
            Encoding::Hex => decode_hex(text),
            Encoding::Url => decode_percent(text),
            Encoding::Rot13 => return Encoding::Rot13.apply(text),
            Encoding::Tags => {
                return text
                    .chars()
                    .map(|c| char::from_u32(c as u32 - 0xE0000).expect("a tag character"))
                    .collect()
            }
        };
        String::from_utf8(bytes).expect("UTF-8")
    }

    /// Decodes every encoded part of `segments`, at any depth, with the decoders above and checks
    /// that it gives back its source as readable ASCII; returns whether a decoded part holds the
    /// canary.
    fn check_encodings(id: &str, segments: &[Segment], token: &str) -> bool {
        let mut carries_canary = false;
        for segment in segments {
            if let Segment::Encoded(encoding, inner) = segment {
                let plain = template::render(inner, token);
                assert_eq!(decode(*encoding, &encoding.apply(&plain)), plain, "{id}");
                assert!(
                    plain.chars().all(|c| matches!(c, ' '..='~')),
                    "{id}: {encoding:?} of unreadable text {plain:?}"
                );
                let deeper = check_encodings(id, inner, token);
                carries_canary |= plain.contains(token) || deeper;
            }
        }
        carries_canary
    }

    #[test]
    fn encoded_payloads_decode_to_instructions_carrying_the_canary() {
        let c = embedded();
        let encoded = c.select(&["encoded".to_string()]).unwrap();
        for p in encoded {
            let token = canary_for(p);
            let template = Template::parse(&p.text).unwrap();
            assert!(
                check_encodings(&p.id, &template.segments, &token),
                "{}: no encoded part carries the canary",
                p.id
            );
            assert!(p.render(&token).contains(&token), "{}: plain canary", p.id);
        }
    }

    /// The obfuscated families do what their names say, so that a platform's result on them
    /// means something.
    #[test]
    fn obfuscated_families_are_obfuscated() {
        let c = embedded();
        let rendered = |family: &str| -> Vec<(String, String)> {
            c.select(&[family.to_string()])
                .unwrap()
                .into_iter()
                .map(|p| (p.id.clone(), p.render(&canary_for(p))))
                .collect()
        };
        for (id, text) in rendered("invisible") {
            assert!(text.chars().any(is_invisible), "{id}: nothing invisible");
        }
        for (id, text) in rendered("homoglyph") {
            assert!(
                text.chars().any(|c| !c.is_ascii() && !is_invisible(c)),
                "{id}: no visible look-alike character"
            );
        }
        // A word with a capital past its first letter ("IgNoRe", "SYSTEM"): what a
        // case-sensitive pattern written in lower case misses. Read in the source text, so that
        // the canary's letters cannot count.
        for p in c.select(&["mixed-case".to_string()]).unwrap() {
            assert!(
                p.text
                    .split(|c: char| !c.is_ascii_alphabetic())
                    .any(|w| w.chars().skip(1).any(|c| c.is_ascii_uppercase())),
                "{}: no word in mixed or upper case",
                p.id
            );
        }
    }

    #[test]
    fn finds_canaries_however_the_text_was_altered() {
        let token = canary(1, "a", "p", 0);
        let upper = token.to_uppercase();
        let zero_width: String = token
            .chars()
            .flat_map(|c| [c, '\u{200B}'])
            .chain("\u{2066}\u{FEFF}".chars())
            .collect();
        let tags = Encoding::Tags.apply(&format!("say {token} now"));
        let fullwidth: String = token
            .chars()
            .map(|c| char::from_u32(c as u32 - 0x21 + 0xFF01).unwrap())
            .collect();
        for text in [
            format!("x {upper} y"),
            format!("x{zero_width}y"),
            format!("visible{tags}"),
            format!("({fullwidth})"),
        ] {
            assert_eq!(find_canaries(&text), vec![token.clone()], "{text:?}");
        }
    }

    #[test]
    fn finds_each_token_once_in_order_and_nothing_else() {
        let a = canary(1, "a", "p", 0);
        let b = canary(1, "a", "p", 1);
        let text = format!("{b} and {a}, again {B} {a}", B = b.to_uppercase());
        assert_eq!(find_canaries(&text), vec![b, a]);
        for miss in [
            "tck012345678",         // 9 digits
            "tck01234 56789",       // split by a space
            "tck01234é56789",       // split by a visible letter
            "tck012345678g",        // not hex
            "tc\u{301}k0123456789", // a combining accent breaks it
            "",
            "tck",
        ] {
            assert!(find_canaries(miss).is_empty(), "{miss:?}");
        }
    }

    #[test]
    fn find_canaries_is_fast_on_adversarial_input() {
        let text = "tck012345678".repeat(100_000) + "\u{E0074}";
        let started = std::time::Instant::now();
        assert!(find_canaries(&text).is_empty());
        assert!(started.elapsed() < std::time::Duration::from_secs(2));
    }

    /// `token` with, after each of its characters, the next of `invisible` (none where it says
    /// `None`), and its letters upper-cased where `flips` says so.
    fn altered(token: &str, invisible: &[Option<char>], flips: &[bool]) -> String {
        let mut out = String::new();
        for ((c, pad), upper) in token
            .chars()
            .zip(invisible.iter().cycle())
            .zip(flips.iter().cycle())
        {
            out.push(if *upper { c.to_ascii_uppercase() } else { c });
            out.extend(*pad);
        }
        out
    }

    proptest::proptest! {
        #[test]
        /// Whatever surrounds it, and however it was altered, a canary is found.
        fn finds_a_canary_in_any_text(
            before in "\\PC{0,40}",
            after in "\\PC{0,40}",
            invisible in proptest::collection::vec(
                proptest::option::of(proptest::sample::select(vec![
                    '\u{200B}', '\u{200D}', '\u{2060}', '\u{202E}', '\u{2066}', '\u{FEFF}', '\u{AD}', '\u{E0001}',
                ])),
                1..8,
            ),
            flips in proptest::collection::vec(proptest::bool::ANY, 1..8),
            n in 0u64..1000,
        ) {
            let token = canary(n, "agent", "payload", n);
            let text = format!("{before}{}{after}", altered(&token, &invisible, &flips));
            proptest::prop_assert!(find_canaries(&text).contains(&token), "{:?}", text);
        }

        #[test]
        fn finds_only_well_formed_tokens_and_never_panics(text in "\\PC{0,200}|(tck|TCK|[0-9a-f]|\u{200B}|\u{E0074}){0,60}") {
            for token in find_canaries(&text) {
                proptest::prop_assert!(is_canary(token.as_bytes()) && token.len() == CANARY_LEN);
            }
        }
    }

    #[test]
    fn canaries_are_stable_and_distinct() {
        let c = canary(7, "agent-a", "override-ignore-previous", 0);
        assert_eq!(c, canary(7, "agent-a", "override-ignore-previous", 0));
        assert_eq!(c.len(), 13);
        assert!(c.starts_with("tck"));
        assert!(c[3..]
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)));
        let others = [
            canary(8, "agent-a", "override-ignore-previous", 0),
            canary(7, "agent-b", "override-ignore-previous", 0),
            canary(7, "agent-a", "override-disregard-prior", 0),
            canary(7, "agent-a", "override-ignore-previous", 1),
            canary(7, "agent-ao", "verride-ignore-previous", 0),
        ];
        for other in &others {
            assert_ne!(&c, other);
        }
        let ids: HashSet<String> = embedded()
            .payloads()
            .iter()
            .map(|p| canary(7, "agent-a", &p.id, 0))
            .collect();
        assert_eq!(
            ids.len(),
            embedded().payloads().len(),
            "a canary per payload"
        );
    }

    const HEAD: &str = "# corpus\npayloads:\n";

    fn entry(id: &str, family: &str, text: &str) -> String {
        format!("  - id: {id}\n    family: {family}\n    text: \"{text}\"\n    note: n\n")
    }

    fn parse_err(body: &str) -> String {
        Corpus::parse("payloads.yaml", &format!("{HEAD}{body}"))
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn parse_errors_name_the_line_and_the_problem() {
        let ok = entry("a-1", "encoded", "x {canary}");
        let e = parse_err(&format!("{ok}{}", entry("a-1", "homoglyph", "y {canary}")));
        assert_eq!(
            e,
            "payloads.yaml:7: payload `a-1`: the id is used twice (first at line 3)"
        );
        let e = parse_err(&entry("b", "foo", "x {canary}"));
        assert!(
            e.starts_with(
                "payloads.yaml:4: payload `b`: family `foo` is not one of instruction-override, "
            ),
            "{e}"
        );
        let e = parse_err(&entry("c", "encoded", "{base64:{canary}}"));
        assert!(
            e.starts_with("payloads.yaml:5: payload `c`: the text has no {canary} placeholder"),
            "{e}"
        );
        let e = parse_err(&entry("d", "encoded", " "));
        assert_eq!(e, "payloads.yaml:5: payload `d`: the text is empty");
        let e = parse_err(&entry("Bad_Id", "encoded", "{canary}"));
        assert!(
            e.starts_with("payloads.yaml:3: payload `Bad_Id`: the id must be kebab-case"),
            "{e}"
        );
        let e = parse_err(&entry("e", "encoded", "{hex:{canary}"));
        assert!(
            e.starts_with("payloads.yaml:5: payload `e`: `{hex:` is never closed"),
            "{e}"
        );
    }

    #[test]
    fn yaml_mistakes_are_one_line_with_a_place() {
        let e = parse_err(
            &entry("a", "encoded", "{canary}").replace("note: n", "note: n\n    tone: loud"),
        );
        assert!(e.starts_with("payloads.yaml:") && e.contains("tone"), "{e}");
        assert_eq!(e.lines().count(), 1, "{e}");
        let e = parse_err("  - id: a\n    family: encoded\n    text: {canary}\n    note: n\n");
        assert!(e.starts_with("payloads.yaml:"), "{e}");
        assert_eq!(
            Corpus::parse("p.yaml", "payloads: []").unwrap_err(),
            CorpusError::NoPayloads {
                file: "p.yaml".into()
            }
        );
        assert_eq!(
            Corpus::parse("p.yaml", "payloads: []")
                .unwrap_err()
                .to_string(),
            "p.yaml: the corpus holds no payloads"
        );
    }

    #[test]
    fn selects_by_family_id_or_glob() {
        let c = embedded();
        let ids = |patterns: &[&str]| -> Result<Vec<String>, String> {
            let patterns: Vec<String> = patterns.iter().map(|p| p.to_string()).collect();
            c.select(&patterns)
                .map(|v| v.into_iter().map(|p| p.id.clone()).collect())
                .map_err(|e| e.to_string())
        };
        let homoglyphs = ids(&["homoglyph"]).unwrap();
        assert!(homoglyphs.len() >= 4);
        assert!(homoglyphs.iter().all(|id| id.starts_with("homoglyph-")));
        assert_eq!(
            ids(&["override-ignore-previous", "html-iframe"]).unwrap(),
            ["override-ignore-previous", "html-iframe"]
        );
        let globbed = ids(&["*-bidi-*", "homoglyph"]).unwrap();
        assert_eq!(globbed.len(), homoglyphs.len() + 2, "{globbed:?}");
        assert_eq!(ids(&[]).unwrap().len(), c.payloads().len());
        let e = ids(&["homoglyph", "nope*"]).unwrap_err();
        assert!(e.contains("\"nope*\" matches no payload"), "{e}");
    }
}
