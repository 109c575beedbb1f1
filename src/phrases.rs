//! Sets of phrases, each a regular expression, found in text with their place: the speculation
//! and hedging lists of the evidence pipeline and the prompt-injection patterns of sanitization
//! checks are data (in suites); this module applies them.

use regex::{Regex, RegexSet};

pub(crate) mod needles;

use crate::schema::{finding, Finding};
use crate::text::excerpt_str;

/// A phrase pattern that does not compile. A usage error (a suite or the built-in list wrote it).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("phrase pattern {pattern:?} is not a valid regular expression: {cause}")]
pub struct PatternError {
    pub pattern: String,
    pub cause: String,
}

impl crate::error::LayerError for PatternError {
    fn class(&self) -> crate::error::Class {
        crate::error::Class::Usage
    }
}

/// For the loaders and rules that gather one-line messages with `?` (the message unchanged).
impl From<PatternError> for String {
    fn from(e: PatternError) -> Self {
        e.to_string()
    }
}

/// A list of speculation phrases, each a regular expression (case-insensitive unless the pattern
/// turns that off with `(?-i)`).
#[derive(Debug, Clone)]
pub struct PhraseSet {
    phrases: Vec<(String, Regex)>,
    /// All the patterns in one automaton: a text is read once to learn which patterns it holds,
    /// and only those are searched for their places. Most texts hold none, and searching each
    /// pattern in turn was a fifth of the proxy's CPU per answer. None when the set would not
    /// compile within the regex crate's size limit (each pattern is then searched in turn).
    any: Option<RegexSet>,
    /// The patterns with their text anchors (`^`, `$` without `(?m)`, `\A`, `\z`) made line
    /// anchors, in one automaton: read once over several texts joined by newlines, it says
    /// at once that none of them holds a phrase ([`none_in_lines`](Self::none_in_lines)).
    /// None when a pattern could not be read that way.
    lines: Option<RegexSet>,
    /// The words every match holds, searched at once: on an ASCII text that holds none of them,
    /// it says "none here" several times faster than the automata ([`needles`]). None when a
    /// pattern names no such word.
    needles: Option<needles::Needles>,
}

impl PhraseSet {
    /// Compiles the patterns; the error names the pattern that does not compile.
    pub fn new<S: AsRef<str>>(patterns: &[S]) -> Result<PhraseSet, PatternError> {
        let phrases = patterns
            .iter()
            .map(|p| {
                let p = p.as_ref();
                Regex::new(&format!("(?i){p}"))
                    .map(|re| (p.to_string(), re))
                    .map_err(|e| PatternError {
                        pattern: p.to_string(),
                        cause: e.to_string(),
                    })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let any = RegexSet::new(phrases.iter().map(|(_, re)| re.as_str())).ok();
        // Each pattern's syntax, read once for the two quick passes (None: one cannot be read).
        let syntax = phrases
            .iter()
            .map(|(_, re)| regex_syntax::Parser::new().parse(re.as_str()).ok())
            .collect::<Option<Vec<_>>>();
        let lines = syntax
            .as_ref()
            .and_then(|hirs| RegexSet::new(hirs.iter().map(line_anchored)).ok());
        let needles = syntax.as_deref().and_then(needles::Needles::of);
        Ok(PhraseSet {
            phrases,
            any,
            lines,
            needles,
        })
    }

    /// Whether none of the texts joined by newlines in `joined` holds a phrase, known in one
    /// pass: each text lies whole between two newlines (or an end), where a line anchor holds
    /// as a text's own anchors do and `\b` holds as at a text's ends (a newline is no word
    /// character); what a match across a newline adds only makes this say false. False says
    /// nothing: the texts are then searched one by one.
    pub fn none_in_lines(&self, joined: &str) -> bool {
        self.surely_none(joined) || self.lines.as_ref().is_some_and(|set| !set.is_match(joined))
    }

    /// Whether the list's words say at once that `text` holds no phrase (false says nothing).
    fn surely_none(&self, text: &str) -> bool {
        self.needles.as_ref().is_some_and(|n| n.surely_none(text))
    }

    /// The patterns, as written.
    pub fn patterns(&self) -> impl Iterator<Item = &str> {
        self.phrases.iter().map(|(p, _)| p.as_str())
    }

    /// Whether the list has the quick look of [`needles`] (each pattern names the words every
    /// match holds).
    pub fn has_quick_look(&self) -> bool {
        self.needles.is_some()
    }

    /// Every phrase found in `text`, as a finding at `path` quoting the match and its place.
    pub fn scan(&self, path: impl std::fmt::Display, text: &str) -> Vec<Finding> {
        self.scan_except(path, text, |_| false)
    }

    /// [`scan`](Self::scan), leaving out the matches `skip` says are not to be judged.
    /// `path` is rendered only for a finding.
    pub fn scan_except(
        &self,
        path: impl std::fmt::Display,
        text: &str,
        mut skip: impl FnMut(&str) -> bool,
    ) -> Vec<Finding> {
        let mut out = Vec::new();
        for (at, m) in self.find(text).filter(|(_, m)| !skip(m)) {
            out.push(finding(
                path.to_string(),
                format!("{} at character {at}", excerpt_str(&format!("\"{m}\""), 80)),
            ));
        }
        out
    }

    /// Every phrase found in `text`: where it starts (in characters) and what matched, pattern
    /// by pattern.
    pub fn find<'t>(&'t self, text: &'t str) -> impl Iterator<Item = (usize, &'t str)> + 't {
        // Most texts hold no phrase: a search that stops at the first is cheaper than learning
        // which of the patterns occur (None: no set, each pattern searched; Some(None): none).
        let held = if self.surely_none(text) {
            Some(None)
        } else {
            self.any
                .as_ref()
                .map(|set| set.is_match(text).then(|| set.matches(text)))
        };
        self.phrases
            .iter()
            .enumerate()
            .filter(move |(i, _)| match &held {
                None => true,
                Some(held) => held.as_ref().is_some_and(|h| h.matched(*i)),
            })
            .flat_map(move |(_, (_, re))| {
                re.find_iter(text)
                    .map(move |m| (text[..m.start()].chars().count(), m.as_str()))
            })
    }
}

/// `pattern` with its text anchors made line anchors: a pattern that matches wherever
/// `pattern` does in a text, and there again once that text is a line among others.
fn line_anchored(pattern: &regex_syntax::hir::Hir) -> String {
    use regex_syntax::hir::{Capture, Hir, HirKind, Look, Repetition};
    fn lines(hir: &Hir) -> Hir {
        match hir.kind() {
            HirKind::Look(Look::Start) => Hir::look(Look::StartLF),
            HirKind::Look(Look::End) => Hir::look(Look::EndLF),
            HirKind::Concat(parts) => Hir::concat(parts.iter().map(lines).collect()),
            HirKind::Alternation(parts) => Hir::alternation(parts.iter().map(lines).collect()),
            HirKind::Repetition(r) => Hir::repetition(Repetition {
                sub: Box::new(lines(&r.sub)),
                ..r.clone()
            }),
            HirKind::Capture(c) => Hir::capture(Capture {
                sub: Box::new(lines(&c.sub)),
                ..c.clone()
            }),
            _ => hir.clone(),
        }
    }
    lines(pattern).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phrases_are_found_with_their_place() {
        let set = PhraseSet::new(&[
            r"\bprobably\b",
            r"\b\d{1,3}(\.\d+)?\s*% confident\b",
            r"(?-i:\bHIGH confidence\b)",
        ])
        .unwrap();
        let f = set.scan(
            "evidence",
            "It is Probably fine, 90% confident. high confidence. HIGH confidence",
        );
        let text: Vec<String> = f.iter().map(|f| f.to_string()).collect();
        assert_eq!(
            text,
            [
                "evidence: \"Probably\" at character 6",
                "evidence: \"90% confident\" at character 21",
                "evidence: \"HIGH confidence\" at character 53",
            ]
        );
        // The one-pass set and the pattern-by-pattern search find the same, in the same order.
        let each = PhraseSet {
            any: None,
            needles: None,
            ..set.clone()
        };
        for text in [
            "",
            "nothing here",
            "90% confident, probably",
            "HIGH confidence probably",
        ] {
            assert_eq!(
                set.find(text).collect::<Vec<_>>(),
                each.find(text).collect::<Vec<_>>(),
                "{text:?}"
            );
        }
        assert!(set.any.is_some(), "the set compiles");
        assert!(PhraseSet::new(&["("])
            .unwrap_err()
            .to_string()
            .contains("\"(\""));
    }
}
