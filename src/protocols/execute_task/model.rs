//! The execute_task Agent API (specs/execute-task-agent-api.md): the harness sends
//! `{task_description, turn, conversation_history}` (POST /execute_task, one stdio line or one
//! socket line) and the agent answers an object whose `action` says what it did. Types mirror
//! `schemas/execute_task/*.json` (a test below proves it); the functions judge what an agent
//! actually sent, so they read `serde_json::Value`s and never panic on odd shapes.
//!
//! The multi-turn loop that drives an agent through a scenario is `execute_task::harness`.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::schema::finding;
use crate::schema::{schemas, Finding};

/// Schema id of the request (harness to agent).
pub const REQUEST_SCHEMA: &str = "execute_task/request";
/// Schema id of the answer (agent to harness).
pub const RESPONSE_SCHEMA: &str = "execute_task/response";

/// Every action an answer may carry, in the spec's order (`error` last: the spec names it only
/// among the actions that end the loop).
pub const ACTIONS: [&str; 7] = [
    "call_tool",
    "call_multiple_tools",
    "final_answer",
    "provide_instructions",
    "hitl_pause",
    "branch",
    "error",
];

/// One request of the loop.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Request {
    pub task_description: String,
    /// 1-based. (That it is at least 1 is the schema's alone.)
    pub turn: u32,
    /// Optional in the spec's Request Body: absent reads as none.
    #[serde(default)]
    pub conversation_history: Vec<HistoryTurn>,
}

/// One entry of `conversation_history`. The spec does not name the roles; agent-tck sends
/// `user` for what the harness said and `assistant` for the agent's answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HistoryTurn {
    pub role: String,
    pub content: String,
}

/// What the agent did, with the fields each action requires or allows. Unknown fields are
/// ignored (the schema allows them).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum Action {
    CallTool {
        tool_name: String,
        tool_params: Map<String, Value>,
        /// Any JSON (`null` reads as absent).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tool_output: Option<Value>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        summary: Option<String>,
    },
    CallMultipleTools {
        tool_names: Vec<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tool_outputs: Option<Vec<Value>>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        summary: Option<String>,
    },
    FinalAnswer {
        summary: String,
    },
    ProvideInstructions {
        instructions: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        summary: Option<String>,
    },
    HitlPause {
        reason: String,
    },
    /// Its required `metadata` is [`Answer::metadata`], shared with Name Discovery.
    Branch,
    /// The spec gives `error` no shape: both fields are optional.
    Error {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
    },
}

impl Action {
    /// The `action` string.
    pub fn name(&self) -> &'static str {
        match self {
            Action::CallTool { .. } => ACTIONS[0],
            Action::CallMultipleTools { .. } => ACTIONS[1],
            Action::FinalAnswer { .. } => ACTIONS[2],
            Action::ProvideInstructions { .. } => ACTIONS[3],
            Action::HitlPause { .. } => ACTIONS[4],
            Action::Branch => ACTIONS[5],
            Action::Error { .. } => ACTIONS[6],
        }
    }
}

/// `metadata`: the agent's identity (Name Discovery) and, for `branch`, the branch's details.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Metadata {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Anything else (a branch's `reason`, …).
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// A whole answer: the action and the identity fields any answer may carry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "RawAnswer", into = "RawAnswer")]
pub struct Answer {
    pub action: Action,
    pub name: Option<String>,
    pub agent_name: Option<String>,
    /// Required when the action is `branch`.
    pub metadata: Option<Metadata>,
}

#[derive(Serialize, Deserialize)]
struct RawAnswer {
    #[serde(flatten)]
    action: Action,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    agent_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    metadata: Option<Metadata>,
}

impl TryFrom<RawAnswer> for Answer {
    type Error = String;
    fn try_from(raw: RawAnswer) -> Result<Answer, String> {
        if raw.action == Action::Branch && raw.metadata.is_none() {
            return Err("missing field `metadata` (branch requires it)".into());
        }
        Ok(Answer {
            action: raw.action,
            name: raw.name,
            agent_name: raw.agent_name,
            metadata: raw.metadata,
        })
    }
}

impl From<Answer> for RawAnswer {
    fn from(a: Answer) -> RawAnswer {
        RawAnswer {
            action: a.action,
            name: a.name,
            agent_name: a.agent_name,
            metadata: a.metadata,
        }
    }
}

/// Where Name Discovery looks, in the spec's priority order.
const NAME_SOURCES: [&str; 5] = [
    "name",
    "agent_name",
    "metadata.name",
    "metadata.agent_name",
    "metadata.model",
];

/// The agent's name and the field it came from (`name`, `agent_name`, `metadata.name`,
/// `metadata.agent_name` or `metadata.model`), in the spec's priority. Values that are not
/// strings, or are blank, are passed over.
pub fn discover_name(answer: &Value) -> Option<(String, &'static str)> {
    NAME_SOURCES.into_iter().find_map(|source| {
        let value = match source.split_once('.') {
            Some((outer, inner)) => answer.get(outer)?.get(inner)?,
            None => answer.get(source)?,
        };
        let text = value.as_str()?;
        (!text.trim().is_empty()).then(|| (text.to_string(), source))
    })
}

/// Whether a task_description is governance feedback (a refused tool call), in any form a
/// harness sends it: the spec's `GOVERNANCE ERROR: …` text, alone or inside something else (an
/// older reference harness's `{'error': 'GOVERNANCE ERROR: …'}`), or a `policy_violation`
/// status as a quoted value: the spec's `"status": "policy_violation"`, the reference harness's
/// `{'status': 'policy_violation', 'violation': 'Amount 100 exceeds limit of 50'}` (the repr of
/// the dict its tool sandbox returns, sent alone as the task), or inside `Tools returned: […]`.
pub fn governance_feedback(task: &str) -> bool {
    task.contains("GOVERNANCE ERROR")
        || task.contains("'policy_violation'")
        || task.contains("\"policy_violation\"")
}

/// What governance feedback says about the call it refused, as far as its words tell:
/// `Amount 100 exceeds maximum allowed limit of 50` (the spec) or `Amount 100 exceeds limit of
/// 50` (the reference harness's `violation`) give the parameter, the refused value and the
/// limit. The feedback names no tool: the call it refuses is the conversation's last one.
#[derive(Debug, Clone, PartialEq)]
pub struct Refusal {
    /// The parameter, lowercased (`amount`).
    pub param: String,
    /// The refused value as written (`100`), and as a number.
    pub value_text: String,
    pub value: f64,
    /// The limit: the number after `limit of` or `minimum of` (the words the spec and the
    /// kit's own harness use), else right after `exceeds` (`Amount 100 exceeds 50`).
    pub limit: Option<f64>,
}

impl Refusal {
    /// The refusal `task` carries, when it is governance feedback that names a parameter and
    /// its value (`WORD NUMBER`, the first such pair).
    pub fn of(task: &str) -> Option<Refusal> {
        if !governance_feedback(task) {
            return None;
        }
        let tokens: Vec<&str> = task.split_whitespace().collect();
        let (at, param, value_text, value) = tokens.windows(2).enumerate().find_map(|(i, w)| {
            let param = word(w[0])?;
            let (text, value) = number(w[1])?;
            Some((i + 1, param, text, value))
        })?;
        let after = |words: &[&str]| {
            tokens[at + 1..]
                .windows(words.len() + 1)
                .find(|w| w[..words.len()] == *words)
                .and_then(|w| number(w[words.len()]))
                .map(|(_, n)| n)
        };
        let limit = after(&["limit", "of"])
            .or_else(|| after(&["minimum", "of"]))
            .or_else(|| after(&["exceeds"]));
        Some(Refusal {
            param,
            value_text,
            value,
            limit,
        })
    }

    /// Whether `params` (a call's tool_params) hold the refused value under the parameter's
    /// name (any case; a number, or a string holding one).
    pub fn refuses(&self, params: &Value) -> bool {
        self.key_in(params).is_some_and(|k| {
            let v = &params[k.as_str()];
            v.as_f64()
                .or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))
                == Some(self.value)
        })
    }

    /// The key of `params` that is the refused parameter (its name in any case).
    pub fn key_in(&self, params: &Value) -> Option<String> {
        params
            .as_object()?
            .keys()
            .find(|k| k.to_ascii_lowercase() == self.param)
            .cloned()
    }
}

/// A token that is a name (`Amount`, `'Amount`): letters, digits and `_`, starting with a
/// letter, once quotes and punctuation around it are gone. Lowercased.
fn word(token: &str) -> Option<String> {
    let w = token.trim_matches(|c: char| !(c.is_alphanumeric() || c == '_'));
    let starts = w.chars().next().is_some_and(char::is_alphabetic);
    (starts && w.chars().all(|c| c.is_alphanumeric() || c == '_')).then(|| w.to_ascii_lowercase())
}

/// A token that is a number (`100`, `$100`, `50.`, `50'}`): the number and its text.
fn number(token: &str) -> Option<(String, f64)> {
    let n = token
        .trim_start_matches(|c: char| !(c.is_ascii_digit() || c == '-'))
        .trim_end_matches(|c: char| !c.is_ascii_digit());
    let value: f64 = n.parse().ok().filter(|v: &f64| v.is_finite())?;
    Some((n.to_string(), value))
}

/// Everything wrong with an answer: the schema's findings (each names its field), made plainer
/// where the schema's words are not enough, plus the rules a schema does not say: a tool to run
/// must have a name, and `call_multiple_tools` must name at least one tool. An empty list means
/// the harness can act on the answer.
pub fn check_answer(answer: &Value) -> Vec<Finding> {
    let mut findings = schemas().validate(RESPONSE_SCHEMA, answer);
    for f in &mut findings {
        if f.path == "$" && f.message == "required field \"action\" is missing" {
            f.message = format!(
                "required field \"action\" is missing: an answer says what the agent did, one of {}",
                ACTIONS.join(", ")
            );
        }
    }
    match answer.get("action").and_then(Value::as_str) {
        Some("call_tool") => {
            if let Some(name) = answer.get("tool_name").and_then(Value::as_str) {
                if name.trim().is_empty() {
                    findings.push(finding(
                        "tool_name",
                        "is empty: the harness cannot run a tool without a name",
                    ));
                }
            }
        }
        Some("call_multiple_tools") => {
            if let Some(names) = answer.get("tool_names").and_then(Value::as_array) {
                if names.is_empty() {
                    findings.push(finding(
                        "tool_names",
                        "is empty: call_multiple_tools names no tool to run",
                    ));
                }
                for (i, name) in names.iter().enumerate() {
                    if name.as_str().is_some_and(|n| n.trim().is_empty()) {
                        findings.push(finding(
                            format!("tool_names[{i}]"),
                            "is empty: the harness cannot run a tool without a name",
                        ));
                    }
                }
            }
        }
        _ => {}
    }
    findings
}

/// INFO notes where the known reference harness (MultiAgentEval) reads an answer differently from
/// the spec: it reads `prompt` (not `reason`) for `hitl_pause`, and a `branches` list for
/// `branch`. The spec stays the contract; the notes say how to work with both. (The harness's
/// side of the difference, how it sends a policy violation, is
/// `execute_task::harness::REFERENCE_HARNESS_NOTE`.)
pub fn reference_harness_notes(answer: &Value) -> Vec<String> {
    let has = |key: &str| answer.get(key).is_some_and(|v| !v.is_null());
    let mut notes = Vec::new();
    match answer.get("action").and_then(Value::as_str) {
        Some("hitl_pause") => match (has("reason"), has("prompt")) {
            (true, false) => notes.push(
                "hitl_pause carries `reason` (the spec) but no `prompt`: the reference harness \
                 reads `prompt`, add both to work with both"
                    .to_string(),
            ),
            (false, true) => notes.push(
                "hitl_pause carries `prompt` (the reference harness) but no `reason`: the spec \
                 requires `reason`, add both to work with both"
                    .to_string(),
            ),
            _ => {}
        },
        Some("branch") => {
            let branches = answer.get("branches").is_some_and(Value::is_array);
            match (has("metadata"), branches) {
                (true, false) => notes.push(
                    "branch carries `metadata` (the spec) but no `branches` list: the reference \
                     harness reads `branches`, add both to work with both"
                        .to_string(),
                ),
                (false, true) => notes.push(
                    "branch carries a `branches` list (the reference harness) but no `metadata`: \
                     the spec requires `metadata`, add both to work with both"
                        .to_string(),
                ),
                _ => {}
            }
        }
        _ => {}
    }
    notes
}

/// Whether a Content-Type labels an answer JSON (`application/json`, any parameters).
pub fn labelled_json(content_type: &str) -> bool {
    content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .eq_ignore_ascii_case("application/json")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn messages(answer: &Value) -> Vec<String> {
        check_answer(answer).iter().map(|f| f.to_string()).collect()
    }

    #[test]
    fn every_governance_form_names_the_refused_value_and_the_limit() {
        let refusal = |param: &str, value: f64, limit: f64| Refusal {
            param: param.into(),
            value_text: value.to_string(),
            value,
            limit: Some(limit),
        };
        for (task, expected) in [
            // The spec's text.
            (
                "GOVERNANCE ERROR: Amount 100 exceeds maximum allowed limit of 50. Please adjust.",
                refusal("amount", 100.0, 50.0),
            ),
            // The reference harness: the repr of its sandbox's dict, sent as the task.
            (
                "{'status': 'policy_violation', 'violation': 'Amount 100 exceeds limit of 50'}",
                refusal("amount", 100.0, 50.0),
            ),
            // The same in JSON, and inside a batch's results.
            (
                r#"Tools returned: [{"status": "policy_violation", "violation": "Amount $75 exceeds limit of 50"}]"#,
                refusal("amount", 75.0, 50.0),
            ),
            // An older form, and the kit's own harness's words for a minimum.
            (
                "{'error': 'GOVERNANCE ERROR: Amount 100 exceeds maximum allowed limit of 50.'}",
                refusal("amount", 100.0, 50.0),
            ),
            (
                "GOVERNANCE ERROR: Quantity 1 is not above the allowed minimum of 2. Please adjust.",
                refusal("quantity", 1.0, 2.0),
            ),
        ] {
            assert_eq!(Refusal::of(task), Some(expected), "{task}");
        }
        let floats = Refusal::of(
            "{'status': 'policy_violation', 'violation': 'Amount 100.0 exceeds limit of 50'}",
        )
        .unwrap();
        assert_eq!(floats.value_text, "100.0");
        // Not feedback at all, or feedback that names no value.
        assert_eq!(
            Refusal::of("Refund 100 to the policy_violation desk."),
            None
        );
        assert_eq!(Refusal::of("{'status': 'policy_violation'}"), None);
        let r = Refusal::of("GOVERNANCE ERROR: Amount 100 exceeds maximum allowed limit of 50.")
            .unwrap();
        assert!(r.refuses(&json!({"Amount": "100", "id": 1})));
        assert!(!r.refuses(&json!({"amount": 50})));
        assert!(!r.refuses(&json!({"total": 100})));
    }

    #[test]
    fn discover_name_follows_the_spec_priority() {
        let full = json!({"action": "final_answer", "summary": "s", "name": "n",
            "agent_name": "an", "metadata": {"name": "mn", "agent_name": "man", "model": "mm"}});
        let expected = [
            ("n", "name"),
            ("an", "agent_name"),
            ("mn", "metadata.name"),
            ("man", "metadata.agent_name"),
            ("mm", "metadata.model"),
        ];
        // Remove the winner one level at a time: the next level wins.
        let mut answer = full.clone();
        for (value, source) in expected {
            assert_eq!(
                discover_name(&answer),
                Some((value.to_string(), source)),
                "{answer}"
            );
            match source.split_once('.') {
                Some((_, inner)) => answer["metadata"].as_object_mut().unwrap().remove(inner),
                None => answer.as_object_mut().unwrap().remove(source),
            };
        }
        assert_eq!(discover_name(&answer), None, "{answer}");
        assert_eq!(discover_name(&json!("a string")), None);
        assert_eq!(discover_name(&json!({"metadata": "x"})), None);
    }

    #[test]
    fn discover_name_passes_over_blank_and_non_strings() {
        let answer =
            json!({"name": "  ", "agent_name": 7, "metadata": {"name": null, "model": "gpt-x"}});
        assert_eq!(
            discover_name(&answer),
            Some(("gpt-x".to_string(), "metadata.model"))
        );
    }

    #[test]
    fn each_action_valid_passes() {
        for answer in [
            json!({"action": "call_tool", "tool_name": "get_customer_details",
                "tool_params": {"customer_id": "cust_123"}, "tool_output": {"x": 1},
                "summary": "Identified customer Jane Doe on 100 Mbps plan."}),
            json!({"action": "call_tool", "tool_name": "t", "tool_params": {}}),
            json!({"action": "call_multiple_tools",
                "tool_names": ["run_line_test", "run_remote_speed_test"],
                "tool_outputs": [{}, {}], "summary": "Remote diagnostics complete."}),
            json!({"action": "call_multiple_tools", "tool_names": ["a"]}),
            json!({"action": "final_answer", "summary": "The issue is resolved."}),
            json!({"action": "provide_instructions", "instructions": "Use Ethernet.",
                "summary": "Guided."}),
            json!({"action": "provide_instructions", "instructions": "Use Ethernet."}),
            json!({"action": "hitl_pause",
                "reason": "Requesting manual credit override beyond $500 limit."}),
            json!({"action": "branch", "metadata": {"reason": "Testing path A"}}),
            json!({"action": "error"}),
            json!({"action": "error", "error": "e", "message": "m", "extra": [1]}),
            json!({"action": "final_answer", "summary": "s", "name": "n", "agent_name": "a",
                "metadata": {"model": "m", "other": 1}}),
        ] {
            assert_eq!(messages(&answer), Vec::<String>::new(), "{answer}");
            let typed: Result<Answer, _> = serde_json::from_value(answer.clone());
            assert!(typed.is_ok(), "{answer}: {typed:?}");
        }
    }

    #[test]
    fn each_action_invalid_names_the_field() {
        let cases = [
            (
                json!({"action": "call_tool", "tool_params": {}}),
                "$: required field \"tool_name\" is missing",
            ),
            (
                json!({"action": "call_tool", "tool_name": "t"}),
                "$: required field \"tool_params\" is missing",
            ),
            (
                json!({"action": "call_tool", "tool_name": "t", "tool_params": [1]}),
                "tool_params: [1] is not of type",
            ),
            (
                json!({"action": "call_tool", "tool_name": 5, "tool_params": {}}),
                "tool_name: 5 is not of type",
            ),
            (
                json!({"action": "call_tool", "tool_name": " ", "tool_params": {}}),
                "tool_name: is empty",
            ),
            (
                json!({"action": "call_multiple_tools"}),
                "$: required field \"tool_names\" is missing",
            ),
            (
                json!({"action": "call_multiple_tools", "tool_names": ["a", 2]}),
                "tool_names[1]: 2 is not of type",
            ),
            (
                json!({"action": "call_multiple_tools", "tool_names": []}),
                "tool_names: is empty",
            ),
            (
                json!({"action": "call_multiple_tools", "tool_names": ["a"], "tool_outputs": {}}),
                "tool_outputs: {} is not of type",
            ),
            (
                json!({"action": "final_answer"}),
                "$: required field \"summary\" is missing",
            ),
            (
                json!({"action": "final_answer", "summary": ["x"]}),
                "summary: [\"x\"] is not of type",
            ),
            (
                json!({"action": "provide_instructions", "summary": "s"}),
                "$: required field \"instructions\" is missing",
            ),
            (
                json!({"action": "hitl_pause", "prompt": "p"}),
                "$: required field \"reason\" is missing",
            ),
            (
                json!({"action": "branch", "branches": []}),
                "$: required field \"metadata\" is missing",
            ),
            (
                json!({"action": "branch", "metadata": "path A"}),
                "metadata: \"path A\" is not of type",
            ),
            (
                json!({"action": "error", "error": {"code": 1}}),
                "error: {\"code\":1} is not of type",
            ),
            (
                json!({"action": "final_answer", "summary": "s", "metadata": {"model": 4}}),
                "metadata.model: 4 is not of type",
            ),
            (
                json!({"action": "final_answer", "summary": "s", "name": false}),
                "name: false is not of type",
            ),
            (json!([1]), "$: [1] is not of type"),
        ];
        for (answer, expected) in cases {
            let got = messages(&answer);
            assert!(
                got.iter().any(|m| m.starts_with(expected)),
                "{answer}: expected {expected:?} in {got:?}"
            );
            let typed: Result<Answer, _> = serde_json::from_value(answer.clone());
            // The typed view refuses what the schema refuses, except the semantic rules.
            if !expected.contains("is empty") {
                assert!(typed.is_err(), "{answer}: the Rust type accepts it");
            }
        }
    }

    #[test]
    fn unknown_and_missing_actions_say_what_is_allowed() {
        let list = "call_tool, call_multiple_tools, final_answer, provide_instructions, \
                    hitl_pause, branch, error";
        assert_eq!(
            messages(&json!({"action": "foo", "summary": "s"})),
            vec![format!("action: \"foo\" is not one of {list}")]
        );
        assert_eq!(
            messages(&json!({"summary": "s"})),
            vec![format!(
                "$: required field \"action\" is missing: an answer says what the agent did, one of {list}"
            )]
        );
        let got = messages(&json!({"action": 3}));
        assert_eq!(got, vec![format!("action: 3 is not one of {list}")]);
    }

    #[test]
    fn notes_on_the_reference_harness() {
        let spec_hitl = json!({"action": "hitl_pause", "reason": "r"});
        assert_eq!(
            reference_harness_notes(&spec_hitl),
            vec!["hitl_pause carries `reason` (the spec) but no `prompt`: the reference harness reads `prompt`, add both to work with both"]
        );
        let its_hitl = json!({"action": "hitl_pause", "prompt": "p"});
        assert!(reference_harness_notes(&its_hitl)[0].contains("the spec requires `reason`"));
        let both = json!({"action": "hitl_pause", "reason": "r", "prompt": "p"});
        assert!(reference_harness_notes(&both).is_empty());
        let spec_branch = json!({"action": "branch", "metadata": {"reason": "A"}});
        assert!(reference_harness_notes(&spec_branch)[0].contains("reads `branches`"));
        let its_branch = json!({"action": "branch", "branches": [{"id": 1}]});
        assert!(reference_harness_notes(&its_branch)[0].contains("requires `metadata`"));
        let both = json!({"action": "branch", "metadata": {}, "branches": []});
        assert!(reference_harness_notes(&both).is_empty());
        assert!(reference_harness_notes(&json!({"action": "final_answer"})).is_empty());
        assert!(reference_harness_notes(&json!(null)).is_empty());
    }

    // ---- the Rust types and the schemas agree ---------------------------------------------

    fn schema_doc(id: &str) -> Value {
        let (_, _, text) = crate::schema::EMBEDDED
            .iter()
            .find(|(i, _, _)| *i == id)
            .expect("embedded");
        serde_json::from_str(text).expect("JSON")
    }

    /// The properties the response schema declares for `action` (its `then` branch), plus the
    /// top-level ones.
    fn declared(action: &str) -> Vec<String> {
        let doc = schema_doc(RESPONSE_SCHEMA);
        let mut out: Vec<String> = doc["properties"]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect();
        for rule in doc["allOf"].as_array().unwrap() {
            if rule["if"]["properties"]["action"]["const"] == action {
                out.extend(
                    rule["then"]["properties"]
                        .as_object()
                        .unwrap()
                        .keys()
                        .cloned(),
                );
            }
        }
        for k in ["name", "agent_name", "model"] {
            out.push(format!("metadata.{k}"));
        }
        out.sort();
        out.dedup();
        out
    }

    fn required(action: &str) -> Vec<String> {
        let doc = schema_doc(RESPONSE_SCHEMA);
        let mut out = vec!["action".to_string()];
        for rule in doc["allOf"].as_array().unwrap() {
            if rule["if"]["properties"]["action"]["const"] == action {
                if let Some(r) = rule["then"]["required"].as_array() {
                    out.extend(r.iter().map(|v| v.as_str().unwrap().to_string()));
                }
            }
        }
        out
    }

    fn full_answers() -> Vec<Answer> {
        let metadata = Metadata {
            name: Some("mn".into()),
            agent_name: Some("man".into()),
            model: Some("mm".into()),
            other: Map::from_iter([("reason".to_string(), json!("Testing path A"))]),
        };
        let actions = vec![
            Action::CallTool {
                tool_name: "get_customer_details".into(),
                tool_params: Map::from_iter([("customer_id".to_string(), json!("cust_123"))]),
                tool_output: Some(json!({"name": "Jane Doe"})),
                summary: Some("Identified customer".into()),
            },
            Action::CallMultipleTools {
                tool_names: vec!["run_line_test".into(), "run_remote_speed_test".into()],
                tool_outputs: Some(vec![json!({}), json!({"down": 90})]),
                summary: Some("Remote diagnostics complete.".into()),
            },
            Action::FinalAnswer {
                summary: "Resolved.".into(),
            },
            Action::ProvideInstructions {
                instructions: "Connect via Ethernet.".into(),
                summary: Some("Guided".into()),
            },
            Action::HitlPause {
                reason: "Requesting manual credit override beyond $500 limit.".into(),
            },
            Action::Branch,
            Action::Error {
                error: Some("backend down".into()),
                message: Some("cannot continue".into()),
            },
        ];
        actions
            .into_iter()
            .map(|action| Answer {
                action,
                name: Some("n".into()),
                agent_name: Some("an".into()),
                metadata: Some(metadata.clone()),
            })
            .collect()
    }

    fn both_verdicts(value: &Value) -> (bool, Result<Answer, String>) {
        (
            schemas().validate(RESPONSE_SCHEMA, value).is_empty(),
            serde_json::from_value::<Answer>(value.clone()).map_err(|e| e.to_string()),
        )
    }

    /// For each action, a full answer (every field the schema declares for it) serialized from
    /// the Rust type is valid and round-trips; without each required field both refuse, without
    /// each optional field both accept, and a number in place of each string both refuse.
    #[test]
    fn answer_types_and_schema_agree() {
        let mut problems = Vec::new();
        let answers = full_answers();
        assert_eq!(answers.len(), ACTIONS.len());
        for answer in answers {
            let action = answer.action.name();
            let value = serde_json::to_value(&answer).unwrap();
            let findings = schemas().validate(RESPONSE_SCHEMA, &value);
            if !findings.is_empty() {
                problems.push(format!(
                    "{action}: the full example is invalid: {findings:?}"
                ));
            }
            match serde_json::from_value::<Answer>(value.clone()) {
                Ok(back) if back == answer => {}
                other => problems.push(format!("{action}: no round trip: {other:?}")),
            }
            // The example exercises every declared field.
            let mut present: Vec<String> = value.as_object().unwrap().keys().cloned().collect();
            for k in value["metadata"].as_object().unwrap().keys() {
                present.push(format!("metadata.{k}"));
            }
            for field in declared(action) {
                if !present.contains(&field) {
                    problems.push(format!("{action}: the example lacks {field}"));
                }
            }
            let required = required(action);
            for field in declared(action) {
                let mut without = value.clone();
                match field.split_once('.') {
                    Some((outer, inner)) => without[outer].as_object_mut().unwrap().remove(inner),
                    None => without.as_object_mut().unwrap().remove(&field),
                };
                let (schema_ok, typed) = both_verdicts(&without);
                let must = required.contains(&field);
                if must && (schema_ok || typed.is_ok()) {
                    problems.push(format!(
                        "{action}: without required {field}: schema ok {schema_ok}, type {typed:?}"
                    ));
                }
                let both_accept = schema_ok && typed.is_ok();
                if !must && !both_accept {
                    problems.push(format!(
                        "{action}: without optional {field}: schema ok {schema_ok}, type {typed:?}"
                    ));
                }
                // A number where a string (or object, or array) belongs.
                let current = match field.split_once('.') {
                    Some((outer, inner)) => value[outer][inner].clone(),
                    None => value[&field].clone(),
                };
                if field == "tool_output" || field == "action" {
                    continue;
                }
                let mut wrong = value.clone();
                match field.split_once('.') {
                    Some((outer, inner)) => wrong[outer][inner] = json!(42),
                    None => wrong[&field] = json!(42),
                }
                let (schema_ok, typed) = both_verdicts(&wrong);
                if schema_ok || typed.is_ok() {
                    problems.push(format!(
                        "{action}: {field}: 42 in place of {current}: schema ok {schema_ok}, type {typed:?}"
                    ));
                }
            }
        }
        // Unknown actions: both refuse.
        let (schema_ok, typed) = both_verdicts(&json!({"action": "foo", "summary": "s"}));
        if schema_ok || typed.is_ok() {
            problems.push("action foo: accepted".into());
        }
        assert!(problems.is_empty(), "{}", problems.join("\n"));
    }

    #[test]
    fn request_type_and_schema_agree() {
        let request = Request {
            task_description: "Identify the customer".into(),
            turn: 2,
            conversation_history: vec![HistoryTurn {
                role: "user".into(),
                content: "Identify the customer".into(),
            }],
        };
        let value = serde_json::to_value(&request).unwrap();
        assert!(schemas().validate(REQUEST_SCHEMA, &value).is_empty());
        assert_eq!(
            serde_json::from_value::<Request>(value.clone()).unwrap(),
            request
        );
        let doc = schema_doc(REQUEST_SCHEMA);
        let mut problems = Vec::new();
        let mut pointers: Vec<String> = doc["required"]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| format!("/{}", k.as_str().unwrap()))
            .collect();
        // Every property is required but the history, which the spec marks optional.
        assert_eq!(
            pointers.len() + 1,
            doc["properties"].as_object().unwrap().len()
        );
        let optional = "/conversation_history";
        pointers.push(optional.into());
        let item = &doc["properties"]["conversation_history"]["items"];
        assert_eq!(
            item["required"].as_array().unwrap().len(),
            item["properties"].as_object().unwrap().len()
        );
        pointers.extend([
            "/conversation_history/0/role".into(),
            "/conversation_history/0/content".into(),
        ]);
        for pointer in &pointers {
            let (parent, key) = pointer.rsplit_once('/').unwrap();
            for replacement in [None, Some(json!(1.5))] {
                let mut bad = value.clone();
                let obj = bad.pointer_mut(parent).unwrap().as_object_mut().unwrap();
                match &replacement {
                    None => {
                        obj.remove(key);
                    }
                    Some(r) => {
                        obj.insert(key.to_string(), r.clone());
                    }
                }
                let schema_ok = schemas().validate(REQUEST_SCHEMA, &bad).is_empty();
                let type_ok = serde_json::from_value::<Request>(bad.clone()).is_ok();
                // Left out, the optional member is accepted by both; anything else refused.
                let accepted = *pointer == optional && replacement.is_none();
                if schema_ok != accepted || type_ok != accepted {
                    problems.push(format!(
                        "{pointer} {replacement:?}: schema ok {schema_ok}, type ok {type_ok}"
                    ));
                }
            }
        }
        // The range is the schema's alone: the Rust type holds any u32.
        let zero = json!({"task_description": "t", "turn": 0, "conversation_history": []});
        assert!(!schemas().validate(REQUEST_SCHEMA, &zero).is_empty());
        assert!(problems.is_empty(), "{}", problems.join("\n"));
    }
}
