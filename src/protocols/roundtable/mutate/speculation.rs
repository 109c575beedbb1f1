//! Speculation: evidence that says what the evidence pipeline must flag, with the phrases taken
//! from the built-in suite's checks.

use std::sync::OnceLock;

use serde_json::Value;

use crate::phrases::PhraseSet;
use crate::probe::checks::Check;
use crate::protocols::roundtable::evidence::evidence_level;

use super::forwarded::{for_each_forwarded, leading_tag_len};

/// Phrases that the evidence pipeline flags or warns about, as an agent writes them. The phrase
/// lists themselves are the suite's (`suites/roundtable.yaml`, patterns of the `phrases` checks
/// that read evidence): a pattern that is plain text is its own example; for the others (a
/// percentage, a case-sensitive phrase) an example is picked here. This list is also the fallback
/// should the suite ever have no such check.
pub(super) const SPECULATION_EXAMPLES: &[&str] = &[
    "probably",
    "I think",
    "I believe",
    "in my opinion",
    "it appears that",
    "this suggests",
    "likely indicates",
    "90% confident",
    "HIGH confidence",
    "seems to",
    "may indicate",
    "might be",
    "could be",
];

/// speculative: rewrites evidence (analyze: `observations[*].evidence`; challenge:
/// `challenges[*].counter_evidence`) so each keeps a well-formed evidence tag first (adding
/// `[POSSIBLE]` to text that had none) and then carries every speculation phrase and hedge of
/// the suite. The speculation cases fail; the tag cases still pass. Vote answers carry no
/// evidence: `false`.
pub fn speculative(endpoint: &str, answer: &mut Value) -> bool {
    let speculation = speculation_sentence();
    let mut any = false;
    for_each_forwarded(endpoint, answer, |path, text| {
        if path.ends_with("evidence") {
            *text = with_speculation(text, speculation);
            any = true;
        }
    });
    any
}

/// `text` with `speculation` after its leading tag, or after the text when its tag is elsewhere;
/// text without a well-formed tag gets `[POSSIBLE]`.
pub(super) fn with_speculation(text: &str, speculation: &str) -> String {
    let tag = leading_tag_len(text);
    if tag > 0 {
        let rest = text[tag..].trim_start();
        format!("{} {speculation} {rest}", &text[..tag])
            .trim_end()
            .to_string()
    } else if evidence_level(text).is_ok() {
        format!("{text} {speculation}")
    } else {
        format!("[POSSIBLE] {speculation} {text}")
            .trim_end()
            .to_string()
    }
}

/// Every speculation phrase and hedge of the suite, in one sentence.
pub(super) fn speculation_sentence() -> &'static str {
    static SENTENCE: OnceLock<String> = OnceLock::new();
    SENTENCE.get_or_init(|| {
        let mut phrases: Vec<String> = Vec::new();
        for pattern in suite_speculation_patterns() {
            if let Some(example) = example_of(&pattern) {
                if !phrases.contains(&example) {
                    phrases.push(example);
                }
            }
        }
        if phrases.is_empty() {
            phrases = SPECULATION_EXAMPLES
                .iter()
                .map(ToString::to_string)
                .collect();
        }
        format!("{}.", phrases.join(", "))
    })
}

/// The patterns of the built-in suite's `phrases` checks that read evidence (the speculation and
/// hedging lists; sanitization reads `**`), each once, in suite order.
pub(super) fn suite_speculation_patterns() -> Vec<String> {
    let Ok(suite) = crate::protocols::roundtable::suite() else {
        return Vec::new();
    };
    let mut out: Vec<String> = Vec::new();
    for check in suite.cases().iter().flat_map(|case| &case.checks) {
        if let Check::Phrases {
            fields, patterns, ..
        } = check
        {
            if fields.iter().any(|f| f.ends_with("evidence")) {
                for pattern in patterns.list().unwrap_or_default() {
                    if !out.contains(pattern) {
                        out.push(pattern.clone());
                    }
                }
            }
        }
    }
    out
}

/// A phrase the pattern finds (as the probe compiles it): the pattern itself when it is plain
/// words once `\b`, `?` and a `(?-i:…)` group are removed, else the first example that matches.
pub(super) fn example_of(pattern: &str) -> Option<String> {
    let set = PhraseSet::new(&[pattern]).ok()?;
    let unwrapped = pattern
        .strip_prefix("(?-i:")
        .and_then(|p| p.strip_suffix(')'))
        .unwrap_or(pattern);
    let plain = unwrapped.replace(r"\b", "").replace('?', "");
    let is_plain = !plain.is_empty() && !plain.contains(|c: char| r"\()[]{}|*+.^$".contains(c));
    is_plain
        .then_some(plain.as_str())
        .into_iter()
        .chain(SPECULATION_EXAMPLES.iter().copied())
        .find(|candidate| !set.scan("", candidate).is_empty())
        .map(str::to_string)
}
