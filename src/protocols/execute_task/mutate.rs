//! Misbehaviours of an execute_task agent, as mutations of a conforming answer, and their
//! catalogue. Each returns whether it changed the answer; none panics on odd shapes.

use serde_json::{json, Value};

use super::model::Refusal;
use super::reference::last_call;
use crate::mock::protocol::{Mutating, Mutation};

#[derive(Debug)]
pub(super) enum Edit {
    NeverFinishes,
    UnknownAction,
    MissingRequired,
    WrongType,
    IgnoresGovernance,
    NullBytes,
}

impl Mutation for Edit {
    fn apply(&self, answer: &mut Value, at: &mut Mutating<'_>) -> bool {
        match self {
            Edit::NeverFinishes => never_finishes(answer),
            Edit::UnknownAction => unknown_action(answer),
            Edit::MissingRequired => missing_required(answer),
            Edit::WrongType => wrong_type(answer),
            Edit::IgnoresGovernance => {
                let request: Value = serde_json::from_slice(at.request).unwrap_or(Value::Null);
                ignores_governance(answer, &request)
            }
            Edit::NullBytes => null_bytes(answer),
        }
    }
}

/// Always a tool call, so the harness's loop can only end at its turn limit.
pub fn never_finishes(answer: &mut Value) -> bool {
    let name = answer.get("agent_name").cloned();
    *answer = json!({
        "action": "call_tool",
        "tool_name": "lookup_order",
        "tool_params": {"order_id": "A-1001"},
        "summary": "Still gathering information.",
    });
    if let Some(name) = name {
        answer["agent_name"] = name;
    }
    true
}

/// An action the spec does not list.
pub fn unknown_action(answer: &mut Value) -> bool {
    set(answer, "action", json!("delegate_to_colleague"))
}

/// A call_tool without its tool_name.
pub fn missing_required(answer: &mut Value) -> bool {
    let Some(map) = answer.as_object_mut() else {
        return false;
    };
    map.insert("action".into(), json!("call_tool"));
    map.remove("tool_name");
    map.entry("tool_params")
        .or_insert(json!({"order_id": "A-1001"}));
    true
}

/// A field of the wrong type: `tool_params` as a string on a call, else `summary` as a number.
pub fn wrong_type(answer: &mut Value) -> bool {
    if answer.get("tool_params").is_some() {
        return set(answer, "tool_params", json!("order_id=A-1001"));
    }
    set(answer, "summary", json!(42))
}

/// After governance feedback, the previous (violating) call unchanged: the history's last call,
/// else (a harness that sends no history, such as the reference harness's
/// `{'status': 'policy_violation', 'violation': 'Amount 100 exceeds limit of 50'}`) the
/// conforming answer's retry with the refused value put back (the conforming agent found the
/// call on its channel or in its script).
pub fn ignores_governance(answer: &mut Value, request: &Value) -> bool {
    let task = request
        .get("task_description")
        .and_then(Value::as_str)
        .unwrap_or("");
    // Any form of the feedback: the spec's text, or the reference harness's dict.
    if !super::model::governance_feedback(task) {
        return false;
    }
    let history = request
        .get("conversation_history")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    let Some(mut call) = last_call(history).or_else(|| unadjusted(answer, task)) else {
        return false;
    };
    if let Some(name) = answer.get("agent_name") {
        call["agent_name"] = name.clone();
    }
    call["summary"] = json!("Retrying the same call.");
    *answer = call;
    true
}

/// The conforming retry `answer` with the value `task` refused put back: the refused call.
fn unadjusted(answer: &Value, task: &str) -> Option<Value> {
    let refusal = Refusal::of(task)?;
    if answer.get("action")?.as_str()? != "call_tool" {
        return None;
    }
    let key = refusal.key_in(answer.get("tool_params")?)?;
    let value: Value = serde_json::from_str(&refusal.value_text).ok()?;
    let mut call = answer.clone();
    call["tool_params"][key.as_str()] = value;
    Some(call)
}

/// A NUL character in the summary (and instructions).
pub fn null_bytes(answer: &mut Value) -> bool {
    let mut changed = false;
    for key in ["summary", "instructions", "reason"] {
        if let Some(Value::String(s)) = answer.get_mut(key) {
            s.push_str("\u{0} (after a NUL)");
            changed = true;
        }
    }
    changed
}

/// Payloads appended to the strings a harness shows or forwards: summary, instructions, reason,
/// and the string values of tool_params. Returns where each went (payload index).
pub fn inject(answer: &mut Value, payloads: &[String]) -> Vec<(String, usize)> {
    let mut placed = Vec::new();
    if payloads.is_empty() {
        return placed;
    }
    let mut next = 0;
    let mut put = |s: &mut String, path: String, placed: &mut Vec<(String, usize)>| {
        s.push(' ');
        s.push_str(&payloads[next % payloads.len()]);
        placed.push((path, next % payloads.len()));
        next += 1;
    };
    for key in ["summary", "instructions", "reason"] {
        if let Some(Value::String(s)) = answer.get_mut(key) {
            put(s, key.to_string(), &mut placed);
        }
    }
    if let Some(Value::Object(params)) = answer.get_mut("tool_params") {
        for (k, v) in params.iter_mut() {
            if let Value::String(s) = v {
                put(s, format!("tool_params.{k}"), &mut placed);
            }
        }
    }
    if placed.is_empty() {
        if let Some(map) = answer.as_object_mut() {
            let mut summary = String::from("Summary.");
            put(&mut summary, "summary".into(), &mut placed);
            map.insert("summary".into(), Value::String(summary));
        }
    }
    placed
}

fn set(answer: &mut Value, key: &str, value: Value) -> bool {
    match answer.as_object_mut() {
        Some(map) => {
            map.insert(key.into(), value);
            true
        }
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn final_answer() -> Value {
        json!({"action": "final_answer", "summary": "done", "agent_name": "a"})
    }

    #[test]
    fn each_mutation_breaks_what_it_says() {
        let mut a = final_answer();
        assert!(never_finishes(&mut a));
        assert_eq!(
            (a["action"].as_str(), a["agent_name"].as_str()),
            (Some("call_tool"), Some("a"))
        );
        let mut a = final_answer();
        assert!(unknown_action(&mut a));
        assert_eq!(a["action"], "delegate_to_colleague");
        let mut a = final_answer();
        assert!(missing_required(&mut a));
        assert_eq!(a["action"], "call_tool");
        assert!(a.get("tool_name").is_none());
        let mut a = final_answer();
        assert!(wrong_type(&mut a));
        assert!(
            !crate::protocols::execute_task::model::check_answer(&a).is_empty(),
            "{a}"
        );
        let mut a = final_answer();
        assert!(null_bytes(&mut a));
        assert!(a["summary"].as_str().unwrap().contains('\0'));
    }

    #[test]
    fn governance_is_ignored_only_after_a_governance_error() {
        let call = json!({"action": "call_tool", "tool_name": "apply_refund", "tool_params": {"amount": 100}});
        let history = json!([{"role": "assistant", "content": call.to_string()}]);
        let mut a = final_answer();
        let calm = json!({"task_description": "Tool 'x' returned: {}. Continue.", "conversation_history": history});
        assert!(!ignores_governance(&mut a, &calm));
        let error = json!({"task_description": "GOVERNANCE ERROR: Amount 100 exceeds maximum allowed limit of 50. Please adjust.", "conversation_history": history});
        assert!(ignores_governance(&mut a, &error));
        assert_eq!(a["tool_params"]["amount"], 100);
        // The reference harness's dict form is the same feedback.
        let mut a = final_answer();
        let dict = json!({"task_description": "{'error': 'GOVERNANCE ERROR: Amount 100 exceeds maximum allowed limit of 50.'}", "conversation_history": history});
        assert!(ignores_governance(&mut a, &dict));
        assert_eq!(a["tool_params"]["amount"], 100);
        // No history (the reference harness): the conforming retry, its value put back.
        let mut a = json!({"action": "call_tool", "tool_name": "apply_refund", "tool_params": {"amount": 50.0, "customer_id": "c"}, "agent_name": "a"});
        let bare = json!({"task_description": "{'status': 'policy_violation', 'violation': 'Amount 100.0 exceeds limit of 50'}"});
        assert!(ignores_governance(&mut a, &bare));
        assert_eq!(
            (
                &a["tool_params"]["amount"],
                &a["tool_params"]["customer_id"],
                &a["agent_name"]
            ),
            (&json!(100.0), &json!("c"), &json!("a"))
        );
        // Nothing to repeat: no history, and an answer that is no call.
        let mut a = final_answer();
        assert!(!ignores_governance(&mut a, &bare));
    }

    #[test]
    fn injection_lands_in_summary_and_tool_params() {
        let mut a = json!({"action": "call_tool", "tool_name": "t", "tool_params": {"q": "x", "n": 1}, "summary": "s"});
        let placed = inject(&mut a, &["P0".into(), "P1".into()]);
        let paths: Vec<&str> = placed.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(paths, ["summary", "tool_params.q"]);
        assert!(a["tool_params"]["q"].as_str().unwrap().ends_with("P1"));
        let mut bare = json!({"action": "branch", "metadata": {}});
        assert_eq!(inject(&mut bare, &["P".into()]).len(), 1);
    }
}
