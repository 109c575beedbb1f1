//! How a description reads: what it opens with, and how many sentences it is.

use super::{clause, Dialect, Extra, LISTS};

/// What is wrong with how a description opens, if anything: the standard's "starts with action
/// verb" read as what the agent does or when to use it. A fixed verb list keeps missing real
/// verbs (`Integrate`, `Pulls`, `Answer`…), so the rule flags what cannot be one — a role or a
/// rank (`Expert…`, `Senior…`), an article or a pronoun (`A…`, `This…`, `You…`), from
/// `lists.yaml` — and passes every other word. `--verb WORD` accepts a listed word.
pub(super) fn opening_problem(desc: &str, extra: &Extra) -> Option<String> {
    let Some(first) = desc.split_whitespace().next() else {
        return Some("the description is empty: say what the agent does or when to use it".into());
    };
    // Claude Code's documented wording for proactive delegation: its dialect accepts it; the
    // standard's letter (an action verb) does not take "MUST" for one. ("Use PROACTIVELY…"
    // opens with the verb `use` and passes in both.)
    if proactive_opening(desc) {
        return (extra.dialect == Dialect::Standard).then(|| {
            format!(
                "the description begins with {:?}, not an action verb ({})",
                desc.split_whitespace()
                    .take(3)
                    .collect::<Vec<_>>()
                    .join(" "),
                clause::PROACTIVE
            )
        });
    }
    let word = first
        .trim_matches(|c: char| !c.is_alphanumeric() && c != '-')
        .to_lowercase();
    let accepted = extra.verbs.iter().any(|v| v.eq_ignore_ascii_case(&word));
    let role = LISTS.role_openings.iter().any(|o| o.word == word);
    (role && !accepted).then(|| {
        format!(
            "the description begins with {first:?}: it says who the agent is, not what it does or \
             when to use it (begin with a verb, `Review…` or `Use this agent when…`; --verb {word} \
             accepts it)"
        )
    })
}

/// Whether `desc` opens with "MUST BE USED" (any case, any spacing).
fn proactive_opening(desc: &str) -> bool {
    let words: Vec<String> = desc
        .split_whitespace()
        .take(3)
        .map(|w| {
            w.trim_matches(|c: char| !c.is_alphanumeric())
                .to_lowercase()
        })
        .collect();
    words == ["must", "be", "used"]
}

/// Abbreviations that never end a sentence (`etc.` can: see below).
const ABBREVIATIONS: &[&str] = &[
    "e.g.", "i.e.", "vs.", "cf.", "approx.", "incl.", "esp.", "mr.", "mrs.", "ms.", "dr.", "st.",
    "no.", "fig.", "eg.", "ie.",
];

/// Sentences in a description: words ending in `.`, `!`, `?` or `…` (before closing quotes,
/// brackets or emphasis), not counting abbreviations (`e.g.`, `vs.`), with `etc.` and initials
/// (`U.S.`) ending one only before a capital; a last sentence without a full stop counts too.
/// At least one.
pub(super) fn sentences(text: &str) -> usize {
    let words: Vec<&str> = text.split_whitespace().collect();
    let capital_next = |i: usize| {
        words.get(i + 1).is_some_and(|w| {
            w.chars()
                .find(|c| c.is_alphanumeric())
                .is_some_and(|c| c.is_uppercase() || c.is_ascii_digit())
        })
    };
    let mut count = 0;
    let mut open = false;
    for (i, w) in words.iter().enumerate() {
        let core = w.trim_end_matches(['"', '\'', '”', '’', ')', ']', '*', '_', '`']);
        let lower = core.to_lowercase();
        let ends = if core.ends_with(['!', '?', '…']) {
            true
        } else if !core.ends_with('.') || ABBREVIATIONS.contains(&lower.as_str()) {
            false
        } else if lower == "etc." || initials(core) {
            capital_next(i) || i + 1 == words.len()
        } else {
            true
        };
        if ends {
            count += 1;
            open = false;
        } else {
            open = true;
        }
    }
    (count + usize::from(open)).max(1)
}

/// `U.S.`, `A.I.`: single letters each followed by a dot.
fn initials(word: &str) -> bool {
    let chars: Vec<char> = word.chars().collect();
    chars.len() >= 4
        && chars.len().is_multiple_of(2)
        && chars.chunks(2).all(|p| p[0].is_alphabetic() && p[1] == '.')
}
