//! The limits: a string past the per-field length (`oversized-field`), lists past their caps
//! (`too-many-items`).

use serde_json::{json, Map, Value};

use crate::protocols::roundtable::model::ENDPOINTS;

use super::wrong_schema::{changes, first_observation, placeholder_observation};
use super::{EXTRA_FIELD, FILLER};

/// oversized-field: pads one string past `chars` characters (to `chars + 1`, or one more than it
/// had), with a filler that no other rule reads (no phrase, no tag, no NUL), so that only the
/// endpoint's `*.field-length` case fails. The string, by endpoint:
///
/// - analyze: `observations[0].evidence` (appended to, so its tag stays first; an empty list gets
///   an observation);
/// - challenge: the first challenge's `counter_evidence`; without challenges, the first
///   concession's `reason` (added if absent);
/// - vote: `conditions[0]`, or a string `dissent_reason`;
/// - otherwise (e.g. /challenge with an empty `other_analyses`, so no challenge or concession
///   exists): a new top-level `notes` field. `agent_name` is never padded (it must stay the same
///   at every endpoint), and no challenge or concession is invented (its target would break the
///   known-targets rule); the schemas allow unknown fields, so only the rule that reads every
///   string sees it.
///
/// `chars` is the limit under test (the spec's is 50,000).
pub fn oversized_field(endpoint: &str, answer: &mut Value, chars: usize) -> bool {
    if !ENDPOINTS.contains(&endpoint) {
        return false;
    }
    changes(answer, |answer| {
        let object = answer.as_object_mut()?;
        let padded = match endpoint {
            "analyze" => first_observation(object).is_some_and(|o| pad(o, "evidence", chars)),
            "challenge" => {
                pad_first(object, "challenges", "counter_evidence", chars)
                    || pad_first(object, "concessions", "reason", chars)
            }
            _ => {
                pad_first_string(object, "conditions", chars)
                    || pad_string(object, "dissent_reason", chars)
            }
        };
        if !padded {
            pad(object, EXTRA_FIELD, chars);
        }
        Some(())
    })
}

/// Pads `object[field]`, which becomes a string if it was something else.
pub(super) fn pad(object: &mut Map<String, Value>, field: &str, chars: usize) -> bool {
    let value = object.entry(field).or_insert(Value::Null);
    if !value.is_string() {
        *value = Value::String(String::new());
    }
    pad_text(Some(value), chars)
}

/// Pads `object[field]` when it is a string.
pub(super) fn pad_string(object: &mut Map<String, Value>, field: &str, chars: usize) -> bool {
    pad_text(object.get_mut(field), chars)
}

/// Pads `field` of the first item of `object[list]`, when that item is an object.
pub(super) fn pad_first(
    object: &mut Map<String, Value>,
    list: &str,
    field: &str,
    chars: usize,
) -> bool {
    first_item(object, list)
        .and_then(Value::as_object_mut)
        .is_some_and(|item| pad(item, field, chars))
}

/// Pads the first item of `object[list]`, when it is a string.
pub(super) fn pad_first_string(object: &mut Map<String, Value>, list: &str, chars: usize) -> bool {
    pad_text(first_item(object, list), chars)
}

pub(super) fn first_item<'a>(
    object: &'a mut Map<String, Value>,
    list: &str,
) -> Option<&'a mut Value> {
    object.get_mut(list)?.as_array_mut()?.first_mut()
}

/// Pads `value` when it is a string; returns whether it was.
pub(super) fn pad_text(value: Option<&mut Value>, chars: usize) -> bool {
    match value {
        Some(Value::String(text)) => {
            pad_past(text, chars);
            true
        }
        _ => false,
    }
}

/// Appends filler until `text` has more than `chars` characters (at least one is added).
pub(super) fn pad_past(text: &mut String, chars: usize) {
    let have = text.chars().count();
    let want = chars.saturating_add(1).max(have.saturating_add(1));
    text.extend(std::iter::repeat_n(FILLER, want - have));
}

/// too-many-items: grows lists past what the platform keeps, with copies of the items already
/// there (round-robin), each made distinct by a ` (#n)` suffix on its text (a platform that
/// de-duplicates must not hide the excess):
///
/// - analyze: `observations` and (when present) `recommendations` to `count` items;
/// - challenge: `challenges` to `count` items, copies of the existing challenges (their targets
///   are agents at the table, so the known-targets rule still holds); without challenges, the
///   first concession's agent and finding become the challenge copied. Without either, no agent
///   is known and nothing changes (`false`). `concessions` are left as they are;
/// - vote: `conditions` to `conditions` items (a list is created on a dissent that had none).
///
/// Lists already that long are left alone. Callers use 101 and 21 (the platform keeps 100 and 20).
pub fn too_many_items(endpoint: &str, answer: &mut Value, count: usize, conditions: usize) -> bool {
    changes(answer, |answer| {
        let object = answer.as_object_mut()?;
        match endpoint {
            "analyze" => {
                first_observation(object)?;
                grow(
                    object,
                    "observations",
                    Some("finding"),
                    count,
                    &placeholder_observation(),
                );
                if object.get("recommendations").is_some_and(Value::is_array) {
                    let fallback = json!({"action": "Add a regression test"});
                    grow(object, "recommendations", Some("action"), count, &fallback);
                }
            }
            "challenge" => {
                let fallback = seed_challenge(object)?;
                ensure_list(object, "challenges");
                grow(
                    object,
                    "challenges",
                    Some("finding_challenged"),
                    count,
                    &fallback,
                );
            }
            "vote" => {
                ensure_list(object, "conditions");
                let fallback = json!("Re-run the review once the fix is merged");
                grow(object, "conditions", None, conditions, &fallback);
            }
            _ => return None,
        }
        Some(())
    })
}

/// A challenge to copy: the first existing one, or one built from the first concession (its agent
/// was at the table). `None` when the answer names no agent to challenge.
pub(super) fn seed_challenge(object: &Map<String, Value>) -> Option<Value> {
    let first = |list: &str| {
        object
            .get(list)
            .and_then(Value::as_array)
            .and_then(|items| items.first())
            .filter(|item| item.is_object())
    };
    if let Some(challenge) = first("challenges") {
        return Some(challenge.clone());
    }
    let concession = first("concessions")?;
    let target = concession.get("target_agent").and_then(Value::as_str)?;
    let finding = concession
        .get("finding_accepted")
        .and_then(Value::as_str)
        .unwrap_or_default();
    Some(json!({
        "target_agent": target,
        "finding_challenged": finding,
        "counter_evidence": "[POSSIBLE] The finding does not hold for every input",
    }))
}

/// Makes `object[list]` a list (an empty one, if it was absent or something else).
pub(super) fn ensure_list(object: &mut Map<String, Value>, list: &str) {
    if !object.get(list).is_some_and(Value::is_array) {
        object.insert(list.into(), json!([]));
    }
}

/// Grows `object[list]` (an array) to `count` items: copies of its items, round-robin (of
/// `fallback` when it is empty), each made distinct at `field` (the item itself when `None`).
pub(super) fn grow(
    object: &mut Map<String, Value>,
    list: &str,
    field: Option<&str>,
    count: usize,
    fallback: &Value,
) {
    let Some(items) = object.get_mut(list).and_then(Value::as_array_mut) else {
        return;
    };
    let originals = items.len();
    while items.len() < count {
        let n = items.len();
        let base = if originals == 0 {
            fallback
        } else {
            &items[n % originals]
        };
        let copy = distinct(base.clone(), field, n + 1);
        items.push(copy);
    }
}

/// `item` with ` (#n)` appended to its text (at `field`, or the item itself when it is a string).
pub(super) fn distinct(mut item: Value, field: Option<&str>, n: usize) -> Value {
    let text = match field {
        Some(field) => item.get_mut(field),
        None => Some(&mut item),
    };
    if let Some(Value::String(text)) = text {
        text.push_str(&format!(" (#{n})"));
    }
    item
}
