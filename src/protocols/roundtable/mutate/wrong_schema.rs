//! `wrong-schema`: answers that break one schema rule each, and the helpers that find or make
//! the field to break.

use serde_json::{json, Map, Value};

use crate::protocols::roundtable::model::ENDPOINTS;

/// Variants of `wrong-schema`: each breaks one schema rule (or, for DissentWithoutReason, the
/// semantic rule).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WrongSchema {
    MissingField,
    WrongType,
    SeverityEnum,
    ConfidenceRange,
    ApproveString,
    DissentWithoutReason,
}

impl WrongSchema {
    pub const ALL: [WrongSchema; 6] = [
        WrongSchema::MissingField,
        WrongSchema::WrongType,
        WrongSchema::SeverityEnum,
        WrongSchema::ConfidenceRange,
        WrongSchema::ApproveString,
        WrongSchema::DissentWithoutReason,
    ];

    pub fn name(self) -> &'static str {
        match self {
            WrongSchema::MissingField => "missing-field",
            WrongSchema::WrongType => "wrong-type",
            WrongSchema::SeverityEnum => "severity-enum",
            WrongSchema::ConfidenceRange => "confidence-range",
            WrongSchema::ApproveString => "approve-string",
            WrongSchema::DissentWithoutReason => "dissent-without-reason",
        }
    }

    pub fn parse(name: &str) -> Option<WrongSchema> {
        WrongSchema::ALL.into_iter().find(|v| v.name() == name)
    }

    /// Which endpoints the variant changes (others answer conformingly).
    pub fn endpoints(self) -> &'static [&'static str] {
        match self {
            WrongSchema::MissingField | WrongSchema::WrongType => &ENDPOINTS,
            WrongSchema::SeverityEnum | WrongSchema::ConfidenceRange => &["analyze"],
            WrongSchema::ApproveString | WrongSchema::DissentWithoutReason => &["vote"],
        }
    }
}

/// A reason given with `approve: "false"`, so that the only fault is the string: a platform that
/// coerces `"false"` to true turns a reasoned dissent into an approval.
pub(super) const DISSENT_REASON: &str = "The synthesis leaves the reported issue unaddressed";

/// Returns whether it changed anything.
///
/// missing-field: analyze drops `observations`, challenge drops `agent_name`, vote drops
/// `approve`; wrong-type: analyze `observations` becomes an object (keyed by index), challenge
/// `challenges` and vote `conditions` become strings (the list's JSON text, as a double-encoding
/// agent sends it); severity-enum: analyze `observations[0].severity = "high"`;
/// confidence-range: analyze `observations[0].confidence = 1.5` (both add an observation to an
/// empty list); approve-string: vote `approve = "false"` with a `dissent_reason`;
/// dissent-without-reason: vote `approve = false` and no `dissent_reason` (schema-valid, breaks
/// the semantic rule).
pub fn wrong_schema(variant: WrongSchema, endpoint: &str, answer: &mut Value) -> bool {
    if !variant.endpoints().contains(&endpoint) {
        return false;
    }
    changes(answer, |answer| {
        let object = answer.as_object_mut()?;
        match variant {
            WrongSchema::MissingField => {
                let field = match endpoint {
                    "analyze" => "observations",
                    "challenge" => "agent_name",
                    _ => "approve",
                };
                object.remove(field).map(drop)
            }
            WrongSchema::WrongType => {
                let (field, wrong) = match endpoint {
                    "analyze" => ("observations", keyed_by_index(object.get("observations"))),
                    "challenge" => ("challenges", json_text(object.get("challenges"))),
                    _ => ("conditions", json_text(object.get("conditions"))),
                };
                object.insert(field.into(), wrong);
                Some(())
            }
            WrongSchema::SeverityEnum => {
                first_observation(object)?.insert("severity".into(), json!("high"));
                Some(())
            }
            WrongSchema::ConfidenceRange => {
                first_observation(object)?.insert("confidence".into(), json!(1.5));
                Some(())
            }
            WrongSchema::ApproveString => {
                object.insert("approve".into(), json!("false"));
                if !is_text(object.get("dissent_reason")) {
                    object.insert("dissent_reason".into(), json!(DISSENT_REASON));
                }
                Some(())
            }
            WrongSchema::DissentWithoutReason => {
                object.insert("approve".into(), json!(false));
                object.remove("dissent_reason");
                Some(())
            }
        }
    })
}

/// A list as an object keyed by index (`{"0": …, "1": …}`), as an agent that serializes a map
/// instead of a list sends it; anything else becomes an empty object.
pub(super) fn keyed_by_index(list: Option<&Value>) -> Value {
    let items = list.and_then(Value::as_array).into_iter().flatten();
    Value::Object(
        items
            .enumerate()
            .map(|(i, item)| (i.to_string(), item.clone()))
            .collect(),
    )
}

/// A value as its JSON text, in a string (an absent list is `"[]"`).
pub(super) fn json_text(value: Option<&Value>) -> Value {
    Value::String(value.map_or_else(|| "[]".to_string(), Value::to_string))
}

pub(super) fn is_text(value: Option<&Value>) -> bool {
    value
        .and_then(Value::as_str)
        .is_some_and(|s| !s.trim().is_empty())
}

/// A conforming observation, for mutations that need one when the list is empty.
pub(super) fn placeholder_observation() -> Value {
    json!({
        "finding": "Input reviewed",
        "evidence": "[POSSIBLE] No specific issue located",
        "severity": "info",
    })
}

/// The first observation of an analysis (added to an empty list), when it is an object.
pub(super) fn first_observation(
    answer: &mut Map<String, Value>,
) -> Option<&mut Map<String, Value>> {
    let list = answer.get_mut("observations")?.as_array_mut()?;
    if list.is_empty() {
        list.push(placeholder_observation());
    }
    list.first_mut()?.as_object_mut()
}

/// Applies `mutate` to `answer`; on `None` the answer is restored. Returns whether the answer
/// differs from what it was, so that "returns whether it changed anything" holds for every
/// mutation by construction.
pub(super) fn changes(answer: &mut Value, mutate: impl FnOnce(&mut Value) -> Option<()>) -> bool {
    let before = answer.clone();
    if mutate(answer).is_none() {
        *answer = before;
        return false;
    }
    *answer != before
}
