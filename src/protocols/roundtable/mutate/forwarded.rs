//! The strings a platform forwards (findings, evidence, rationales, counter-evidence): where they
//! sit in each answer, and the edits of them (NUL bytes, ANSI escapes, injection payloads).

use serde_json::{Map, Value};

use crate::protocols::roundtable::evidence::evidence_level;

/// Where the text a platform passes on (to other agents, its store, its UI) sits in an answer.
pub(super) enum Place {
    /// String fields of the items of a list.
    Items(&'static str, &'static [&'static str]),
    /// The items of a list of strings.
    Strings(&'static str),
    /// A top-level string field.
    Field(&'static str),
}

/// The forwarded text of each endpoint: findings, evidence, rationales, counter-evidence,
/// concession reasons, conditions and dissent reasons. Names (`agent_name`, `target_agent`) and
/// echoes of other agents' findings are left out: they identify, they do not argue.
pub(super) fn forwarded(endpoint: &str) -> &'static [Place] {
    match endpoint {
        "analyze" => &[
            Place::Items("observations", &["finding", "evidence"]),
            Place::Items("recommendations", &["rationale"]),
        ],
        "challenge" => &[
            Place::Items("challenges", &["counter_evidence"]),
            Place::Items("concessions", &["reason"]),
        ],
        "vote" => &[Place::Strings("conditions"), Place::Field("dissent_reason")],
        _ => &[],
    }
}

/// Calls `visit(path, text)` on every forwarded string of the answer, in document order, with the
/// path as the probe writes it (`observations[0].evidence`, `conditions[1]`, `dissent_reason`).
/// Values that are not strings are skipped.
pub(super) fn for_each_forwarded(
    endpoint: &str,
    answer: &mut Value,
    mut visit: impl FnMut(String, &mut String),
) {
    let Some(object) = answer.as_object_mut() else {
        return;
    };
    for place in forwarded(endpoint) {
        match place {
            Place::Items(list, fields) => {
                for (i, item) in items_mut(object, list) {
                    for field in *fields {
                        if let Some(Value::String(text)) = item.get_mut(*field) {
                            visit(format!("{list}[{i}].{field}"), text);
                        }
                    }
                }
            }
            Place::Strings(list) => {
                for (i, item) in items_mut(object, list) {
                    if let Value::String(text) = item {
                        visit(format!("{list}[{i}]"), text);
                    }
                }
            }
            Place::Field(field) => {
                if let Some(Value::String(text)) = object.get_mut(*field) {
                    visit(field.to_string(), text);
                }
            }
        }
    }
}

pub(super) fn items_mut<'a>(
    object: &'a mut Map<String, Value>,
    list: &str,
) -> impl Iterator<Item = (usize, &'a mut Value)> {
    object
        .get_mut(list)
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
        .enumerate()
}

/// Applies `edit` to every forwarded string; returns whether there was one.
pub(super) fn edit_forwarded(
    endpoint: &str,
    answer: &mut Value,
    mut edit: impl FnMut(&mut String),
) -> bool {
    let mut any = false;
    for_each_forwarded(endpoint, answer, |_, text| {
        edit(text);
        any = true;
    });
    any
}

/// The length in bytes of a well-formed evidence tag that opens `text` (`[VERIFIED: a:b]`), or 0.
/// Insertions go after it, so that the tag rules still pass and only the rule under test breaks.
pub(super) fn leading_tag_len(text: &str) -> usize {
    if !text.starts_with('[') {
        return 0;
    }
    match text.find(']') {
        Some(end) if evidence_level(&text[..=end]).is_ok() => end + 1,
        _ => 0,
    }
}

/// null-bytes: inserts U+0000 in the middle of every forwarded string (after an evidence tag): a
/// C-string consumer would cut the text there; the platform must strip it.
pub fn null_bytes(endpoint: &str, answer: &mut Value) -> bool {
    edit_forwarded(endpoint, answer, |text| {
        let tag = leading_tag_len(text);
        let body = &text[tag..];
        let middle = body
            .char_indices()
            .nth(body.chars().count() / 2)
            .map_or(body.len(), |(at, _)| at);
        text.insert(tag + middle, '\u{0}');
    })
}

/// The escape sequences `ansi_escapes` writes: an OSC window title, clear screen, red, reset.
pub(super) const OSC_TITLE: &str = "\u{1b}]0;agent-tck\u{7}";
pub(super) const CLEAR_SCREEN: &str = "\u{1b}[2J";
pub(super) const RED: &str = "\u{1b}[31m";
pub(super) const RESET: &str = "\u{1b}[0m";

/// ansi-escapes: writes into every forwarded string (after an evidence tag) an OSC title
/// (`ESC]0;…BEL`), a clear screen (`ESC[2J`) and the text in red (`ESC[31m…ESC[0m`): a platform
/// that shows agent text on a terminal or in logs must neutralise them. The probe's suite has no
/// rule against them, so a conforming answer stays conforming for the probe.
pub fn ansi_escapes(endpoint: &str, answer: &mut Value) -> bool {
    edit_forwarded(endpoint, answer, |text| {
        let tag = leading_tag_len(text);
        let body = text.split_off(tag);
        text.push_str(&format!("{OSC_TITLE}{CLEAR_SCREEN}{RED}{body}{RESET}"));
    })
}

/// injection: appends the payloads (already rendered, with their canaries) to the forwarded
/// strings, round-robin: the first string gets payload 0, the next payload 1, and so on. Appending
/// keeps the answer schema-valid and evidence tags first. Payloads beyond the number of forwarded
/// strings are not placed: the returned list says where each placed payload went (the JSON path,
/// the payload's index). Nothing changes when `payloads` is empty or the answer has no forwarded
/// string.
pub fn inject(endpoint: &str, answer: &mut Value, payloads: &[String]) -> Vec<(String, usize)> {
    let mut placed = Vec::new();
    if payloads.is_empty() {
        return placed;
    }
    for_each_forwarded(endpoint, answer, |path, text| {
        let index = placed.len() % payloads.len();
        text.push(' ');
        text.push_str(&payloads[index]);
        placed.push((path, index));
    });
    placed
}
