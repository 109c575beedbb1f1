//! Evidence rules of the round-table platform's evidence pipeline: level tags
//! (`[VERIFIED: source:ref]`, `[CORROBORATED: src1 + src2]`, `[INDICATED: source]`, `[POSSIBLE]`)
//! and speculation phrases. The phrase lists are data (in the suite); this module applies them.

use std::sync::OnceLock;

use regex::Regex;

use super::finding;
use crate::schema::Finding;
use crate::text::excerpt_str;

/// The evidence level a tag claims.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EvidenceLevel {
    Verified,
    Corroborated,
    Indicated,
    Possible,
}

const EXPECTED: &str =
    "[VERIFIED: source:ref], [CORROBORATED: src1 + src2], [INDICATED: source] or [POSSIBLE]";

fn tag_regex() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"(?i)\[\s*(VERIFIED|CORROBORATED|INDICATED|POSSIBLE)\s*(?::([^\]]*))?\]")
            .expect("valid regex")
    })
}

/// Reads the first well-formed evidence tag in `text`. The error says what is wrong with the tag
/// found, or that there is none.
pub fn evidence_level(text: &str) -> Result<EvidenceLevel, String> {
    let mut first_problem = None;
    for caps in tag_regex().captures_iter(text) {
        let whole = caps.get(0).map_or("", |m| m.as_str());
        let word = caps.get(1).map_or("", |m| m.as_str());
        let arg = caps.get(2).map(|m| m.as_str().trim());
        let problem = if word != word.to_uppercase() {
            Some(format!(
                "{} is not upper case (write {})",
                quote(whole),
                word.to_uppercase()
            ))
        } else {
            match (word, arg) {
                ("POSSIBLE", None) => return Ok(EvidenceLevel::Possible),
                ("POSSIBLE", Some(_)) => Some(format!(
                    "{} takes no source (write [POSSIBLE])",
                    quote(whole)
                )),
                (_, None) | (_, Some("")) => Some(format!("{} names no source", quote(whole))),
                ("VERIFIED", Some(a)) => match a.split_once(':') {
                    Some((src, r)) if !src.trim().is_empty() && !r.trim().is_empty() => {
                        return Ok(EvidenceLevel::Verified)
                    }
                    _ => Some(format!(
                        "{} lacks the :ref part (a VERIFIED tag is [VERIFIED: source:ref])",
                        quote(whole)
                    )),
                },
                ("CORROBORATED", Some(a)) => {
                    let sources = a.split('+').filter(|s| !s.trim().is_empty()).count();
                    if sources >= 2 && !a.split('+').any(|s| s.trim().is_empty()) {
                        return Ok(EvidenceLevel::Corroborated);
                    }
                    Some(format!(
                        "{} needs two or more sources joined by + ([CORROBORATED: src1 + src2])",
                        quote(whole)
                    ))
                }
                ("INDICATED", Some(_)) => return Ok(EvidenceLevel::Indicated),
                _ => None,
            }
        };
        if first_problem.is_none() {
            first_problem = problem;
        }
    }
    Err(first_problem.unwrap_or_else(|| format!("no evidence level tag (expected {EXPECTED})")))
}

fn quote(text: &str) -> String {
    excerpt_str(text, 80)
}

/// Checks the tag of one evidence string at `path`.
pub fn check_tag(path: &str, text: &str) -> Option<Finding> {
    evidence_level(text).err().map(|why| finding(path, why))
}

/// A list of speculation phrases, each a regular expression (case-insensitive unless the pattern
/// turns that off with `(?-i)`).
#[derive(Debug, Clone)]
pub struct PhraseSet {
    phrases: Vec<(String, Regex)>,
}

impl PhraseSet {
    /// Compiles the patterns; the error names the pattern that does not compile.
    pub fn new<S: AsRef<str>>(patterns: &[S]) -> Result<PhraseSet, String> {
        let phrases = patterns
            .iter()
            .map(|p| {
                let p = p.as_ref();
                Regex::new(&format!("(?i){p}"))
                    .map(|re| (p.to_string(), re))
                    .map_err(|e| {
                        format!("phrase pattern {p:?} is not a valid regular expression: {e}")
                    })
            })
            .collect::<Result<_, _>>()?;
        Ok(PhraseSet { phrases })
    }

    /// Every phrase found in `text`, as a finding at `path` quoting the match and its place.
    pub fn scan(&self, path: &str, text: &str) -> Vec<Finding> {
        let mut out = Vec::new();
        for (_, re) in &self.phrases {
            for m in re.find_iter(text) {
                let at = text[..m.start()].chars().count();
                out.push(finding(
                    path,
                    format!(
                        "{} at character {at}",
                        quote(&format!("\"{}\"", m.as_str()))
                    ),
                ));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn well_formed_tags() {
        assert_eq!(
            evidence_level("[VERIFIED: auth_module.py:line_42] raw SQL"),
            Ok(EvidenceLevel::Verified)
        );
        assert_eq!(
            evidence_level("x [CORROBORATED: logs + metrics + trace] y"),
            Ok(EvidenceLevel::Corroborated)
        );
        assert_eq!(
            evidence_level("[INDICATED: routes/auth.py] no limiter"),
            Ok(EvidenceLevel::Indicated)
        );
        assert_eq!(
            evidence_level("[POSSIBLE] a guess"),
            Ok(EvidenceLevel::Possible)
        );
    }

    #[test]
    fn malformed_tags_say_why() {
        assert!(evidence_level("[VERIFIED: auth.py] x")
            .unwrap_err()
            .contains("lacks the :ref part"));
        assert!(evidence_level("[CORROBORATED: logs] x")
            .unwrap_err()
            .contains("two or more sources"));
        assert!(evidence_level("[CORROBORATED: logs + ] x")
            .unwrap_err()
            .contains("two or more sources"));
        assert!(evidence_level("[INDICATED] x")
            .unwrap_err()
            .contains("names no source"));
        assert!(evidence_level("[verified: a:b] x")
            .unwrap_err()
            .contains("not upper case"));
        assert!(evidence_level("plain text")
            .unwrap_err()
            .contains("no evidence level tag"));
        // A bad tag followed by a good one is fine: the good one counts.
        assert_eq!(
            evidence_level("[VERIFIED: a] then [INDICATED: b]"),
            Ok(EvidenceLevel::Indicated)
        );
    }

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
        assert!(PhraseSet::new(&["("]).unwrap_err().contains("\"(\""));
    }
}
