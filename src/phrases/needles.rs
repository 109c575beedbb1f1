//! A quick first look for a phrase list: the literal words every match of its patterns must
//! hold, found by one multi-word search (ASCII case aside). Most texts an agent writes hold
//! none of the list's phrases, and the regular expressions read ~1.2 ns a byte to say so (a
//! fifth of judging a round-table answer, three lists over the same strings); the words are
//! found several times faster. The look is sound only on an ASCII text: there every letter of
//! a case-insensitive pattern is one of two ASCII letters, so a text that holds none of the
//! words holds no phrase. Any other text, or a list with a pattern that names no word every
//! match needs (`.*`, `\d+`), is left to the regular expressions.

use aho_corasick::packed::Searcher;
use regex_syntax::hir::{Class, Hir, HirKind};

/// The words every match of some pattern of a list holds (ASCII, lower case).
#[derive(Debug, Clone)]
pub struct Needles {
    /// The words of three bytes or more.
    words: Option<Searcher>,
    /// The shorter ones (a NUL, `\x1b[`, `|>`), searched apart by their first bytes (at most
    /// three, each rare in prose): one short word among many makes the SIMD searcher's first
    /// filter pass nearly every position (~650 ns on an answer instead of ~110).
    short: Vec<Vec<u8>>,
    /// Their first bytes, each once (the first repeated up to three).
    starts: [u8; 3],
}

impl Needles {
    /// The words of the patterns (their syntax, as compiled: flags included); None when some
    /// pattern needs no word (then only the regular expressions can say a text holds none).
    pub fn of(patterns: &[Hir]) -> Option<Needles> {
        let mut words = Vec::new();
        for hir in patterns {
            words.extend(required(hir)?);
        }
        words.sort();
        words.dedup();
        let (short, longer): (Vec<String>, Vec<String>) =
            words.into_iter().partition(|w| w.len() < SHORT);
        let mut starts: Vec<u8> = short.iter().map(|w| w.as_bytes()[0]).collect();
        starts.sort_unstable();
        starts.dedup();
        if starts.len() > 3 {
            return None;
        }
        // Searched in a lower-cased copy of the text by the crate's SIMD searcher (Teddy): ~50
        // ns on a 330-byte answer, where the automata (its own, or a regex set) take ~480 and a
        // case-blind search cannot use it. None when it cannot be built (too many words, no
        // SIMD on this machine): then the list goes without the quick look.
        let words = match longer.is_empty() {
            true => None,
            false => Some(Searcher::new(longer)?),
        };
        let start = |i: usize| starts.get(i).or(starts.first()).copied().unwrap_or(0);
        Some(Needles {
            words,
            short: short.into_iter().map(String::into_bytes).collect(),
            starts: [start(0), start(1), start(2)],
        })
    }

    /// True when `text` surely holds no match of the list: it is ASCII and holds none of the
    /// words. False says nothing.
    pub fn surely_none(&self, text: &str) -> bool {
        if !crate::text::is_ascii(text.as_bytes()) {
            return false;
        }
        thread_local! {
            /// The room a thread lower-cases a text in.
            static LOWER: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
        }
        crate::scratch::with(&LOWER, |lower| {
            lower.extend_from_slice(text.as_bytes());
            lower.make_ascii_lowercase();
            !self.holds_short(lower) && self.words.as_ref().is_none_or(|w| w.find(lower).is_none())
        })
    }

    /// Whether `lower` holds a short word: each place of one of their first bytes is tried.
    fn holds_short(&self, lower: &[u8]) -> bool {
        if self.short.is_empty() {
            return false;
        }
        let [a, b, c] = self.starts;
        memchr::memchr3_iter(a, b, c, lower)
            .any(|at| self.short.iter().any(|w| lower[at..].starts_with(w)))
    }
}

/// A piece of a pattern, as far as literal words go.
enum Words {
    /// Every match is one of these strings (in an ASCII text, case aside).
    Exact(Vec<String>),
    /// Every match holds one of these strings.
    Within(Vec<String>),
    /// Nothing to say.
    Unknown,
}

/// Words shorter than this are searched apart ([`Needles::short`]).
const SHORT: usize = 3;

/// Past this many strings a set says too little to be worth searching for.
const MAX_SET: usize = 64;

/// Strings this long are rare enough in prose: past it, fewer strings beat longer ones.
const RARE: usize = 6;

/// Past this many ASCII characters a class is not turned into strings.
const MAX_CLASS: usize = 4;

/// The strings of which every match of `hir` holds one, none of them empty; None when there
/// are none to name.
fn required(hir: &Hir) -> Option<Vec<String>> {
    match words(hir) {
        Words::Exact(set) | Words::Within(set) if usable(&set) => Some(set),
        _ => None,
    }
}

fn usable(set: &[String]) -> bool {
    !set.is_empty() && set.iter().all(|s| !s.is_empty())
}

fn words(hir: &Hir) -> Words {
    match hir.kind() {
        // Zero-width: matches the empty string wherever it holds.
        HirKind::Empty | HirKind::Look(_) => Words::Exact(vec![String::new()]),
        HirKind::Literal(lit) => match std::str::from_utf8(&lit.0) {
            Ok(s) if s.is_ascii() => Words::Exact(vec![s.to_ascii_lowercase()]),
            _ => Words::Unknown,
        },
        HirKind::Class(class) => class_chars(class).map_or(Words::Unknown, Words::Exact),
        HirKind::Capture(c) => words(&c.sub),
        HirKind::Repetition(r) if r.min == 0 => Words::Unknown,
        HirKind::Repetition(r) => match words(&r.sub) {
            exact @ Words::Exact(_) if r.min == 1 && r.max == Some(1) => exact,
            // At least one round: the match holds one of the round's strings.
            Words::Exact(set) | Words::Within(set) => Words::Within(set),
            Words::Unknown => Words::Unknown,
        },
        HirKind::Concat(parts) => concat(parts),
        HirKind::Alternation(parts) => alternation(parts),
    }
}

/// The ASCII characters a class matches, lower case, when there are few; a character beyond
/// ASCII never occurs in the texts the words are searched in.
fn class_chars(class: &Class) -> Option<Vec<String>> {
    let mut chars: Vec<char> = Vec::new();
    let mut add = |from: u32, to: u32| -> Option<()> {
        for c in from..=to.min(0x7f) {
            let c = char::from_u32(c)?.to_ascii_lowercase();
            if !chars.contains(&c) {
                chars.push(c);
            }
            if chars.len() > MAX_CLASS {
                return None;
            }
        }
        Some(())
    };
    match class {
        Class::Unicode(u) => {
            for r in u.ranges() {
                add(r.start() as u32, r.end() as u32)?;
            }
        }
        Class::Bytes(b) => {
            for r in b.ranges() {
                add(u32::from(r.start()), u32::from(r.end()))?;
            }
        }
    }
    (!chars.is_empty()).then(|| chars.into_iter().map(String::from).collect())
}

/// A sequence: each match holds a string of each piece's set, and the exact pieces next to
/// each other make whole strings (each match holds one of their products). Of those sets the
/// one kept has the fewest strings among those whose strings are long enough to be rare (a
/// list's words must stay few for the searcher), else the longest shortest string.
fn concat(parts: &[Hir]) -> Words {
    let mut candidates: Vec<Vec<String>> = Vec::new();
    let mut run = vec![String::new()];
    let mut all_exact = true;
    for part in parts {
        match words(part) {
            Words::Exact(set) => {
                match product(&run, &set) {
                    Some(longer) => run = longer,
                    None => {
                        all_exact = false;
                        candidates.push(std::mem::replace(&mut run, set.clone()));
                    }
                }
                candidates.push(set);
            }
            other => {
                all_exact = false;
                candidates.push(std::mem::replace(&mut run, vec![String::new()]));
                if let Words::Within(set) = other {
                    candidates.push(set);
                }
            }
        }
    }
    if all_exact {
        return Words::Exact(run);
    }
    candidates.push(run);
    candidates
        .into_iter()
        .filter(|set| usable(set))
        .max_by_key(|set| {
            let shortest = set.iter().map(String::len).min().unwrap_or(0);
            (shortest.min(RARE), std::cmp::Reverse(set.len()), shortest)
        })
        .map_or(Words::Unknown, Words::Within)
}

/// Every string of `a` followed by every string of `b`; None past [`MAX_SET`].
fn product(a: &[String], b: &[String]) -> Option<Vec<String>> {
    if a.len() * b.len() > MAX_SET {
        return None;
    }
    Some(
        a.iter()
            .flat_map(|x| b.iter().map(move |y| format!("{x}{y}")))
            .collect(),
    )
}

/// Either branch: exact when every branch is, else every match holds a string of some
/// branch's set (so each branch must name one).
fn alternation(parts: &[Hir]) -> Words {
    let mut set = Vec::new();
    let mut exact = true;
    for part in parts {
        match words(part) {
            Words::Exact(s) => set.extend(s),
            Words::Within(s) => {
                exact = false;
                set.extend(s);
            }
            Words::Unknown => return Words::Unknown,
        }
    }
    set.sort();
    set.dedup();
    match (exact, set.len() <= MAX_SET) {
        (true, true) => Words::Exact(set),
        (false, true) if usable(&set) => Words::Within(set),
        _ => Words::Unknown,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn needs(pattern: &str) -> Option<Vec<String>> {
        let hir = regex_syntax::Parser::new()
            .parse(&format!("(?i){pattern}"))
            .unwrap();
        required(&hir).map(|mut w| {
            w.sort();
            w
        })
    }

    #[test]
    fn a_pattern_names_the_words_every_match_holds() {
        assert_eq!(needs(r"\bprobably\b").unwrap(), ["probably"]);
        assert_eq!(
            needs(r"\b\d{1,3}(\.\d+)?\s*%\s*(confident|confidence|sure|certain)\b").unwrap(),
            ["certain", "confidence", "confident", "sure"]
        );
        assert_eq!(
            needs(r"(?-i:\bHIGH confidence\b)").unwrap(),
            ["high confidence"]
        );
        assert_eq!(needs(r"\bseems? to\b").unwrap(), ["seem"]);
        assert_eq!(
            needs(r"(?-i)(?m)^\s*(SYSTEM|DEVELOPER|ASSISTANT)\s*:").unwrap(),
            ["assistant", "developer", "system"]
        );
        assert_eq!(
            needs(r"</?(system|developer)>").unwrap(),
            ["developer>", "system>"]
        );
        assert_eq!(needs(r"\x1b[\[\]]").unwrap(), ["\u{1b}[", "\u{1b}]"]);
        assert_eq!(needs(r"\x00").unwrap(), ["\0"]);
        // No word every match needs: the list is left to the regular expressions.
        for none in [r".*", r"\d+", r"(a|\w+)", r"x?", r"é"] {
            assert_eq!(needs(none), None, "{none}");
        }
    }

    #[test]
    fn a_text_with_none_of_the_words_is_surely_clean() {
        let syntax: Vec<Hir> = [
            r"(?i)\x00",
            r"(?i)\x1b[\[\]]",
            r"(?i)<\|[a-z]{2}\|>",
            r"(?i)\bprobably\b",
        ]
        .iter()
        .map(|p| regex_syntax::Parser::new().parse(p).unwrap())
        .collect();
        let needles = Needles::of(&syntax).unwrap();
        assert!(needles.surely_none("plain text, nothing here"));
        // Each short word, whichever its first byte, and a long one in another case.
        for text in ["a\u{0}b", "x\u{1b}]y", "see <|ab|> here", "PROBABLY"] {
            assert!(!needles.surely_none(text), "{text:?}");
        }
        // Beyond ASCII the words say nothing.
        assert!(!needles.surely_none("plain café"));
    }
}
