//! The conforming execute_task agent (specs/execute-task-agent-api.md): a scripted agent that a
//! harness author can point a harness at. It answers each turn from a script of actions (by
//! default: call a tool, then a final answer), identifies itself with `agent_name`, and reacts
//! to the harness as the spec asks: after governance feedback (`GOVERNANCE ERROR: …`, or the
//! reference harness's `{'status': 'policy_violation', …}`) it repeats its last call with the
//! offending parameter lowered (or raised) to the limit the message names. The last call is the
//! history's, else the channel's, else the scripted call that holds the refused value.
//!
//! When the request says where it is (its `turn`, or its history), it answers from that alone, so
//! the same agent serves HTTP, stdio (persistent or a process per turn) and sockets. When it
//! says neither (a harness that sends only `task_description`), it follows the conversation by
//! the channel the request came on and by what the text carries (see `conversation`).

use serde_json::{json, Map, Value};

use std::sync::Arc;

use crate::mock::{Answer, Body, Reply, Responder};
use crate::protocols::execute_task::conversation::{stated_turn, Conversations, Progress, Said};
use crate::protocols::execute_task::model::Refusal;
use crate::protocols::execute_task::scenario::{Ending, Expect, Op, Policy, Scenario};

/// One scripted answer.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    Call { tool: String, params: Value },
    CallMany(Vec<(String, Value)>),
    Final,
    Instructions,
    Hitl,
    Branch,
}

#[derive(Debug, Clone)]
pub struct TaskAgent {
    pub name: String,
    /// The script for a task no scenario matches.
    pub script: Vec<Step>,
    /// Scripts by the first task_description of a scenario.
    pub scenarios: Vec<(String, Vec<Step>)>,
    /// Where each channel's conversation is, for requests that don't say.
    conversations: Arc<Conversations>,
}

/// The script that passes a scenario's expectations: the tools it expects called (all at once
/// when it expects call_multiple_tools), a first call over a governance limit (so that the
/// agent shows it retries within it), then the first ending it accepts.
pub fn script_for(scenario: &Scenario) -> Vec<Step> {
    let mut called = Vec::new();
    let mut many = false;
    let mut ending = Step::Final;
    let mut ending_set = false;
    for e in &scenario.expect {
        match &e.expect {
            Expect::Called(tool) => called.push(tool.clone()),
            Expect::Used(action) if action == "call_multiple_tools" => many = true,
            Expect::AskedHuman(true) if !ending_set => {
                ending = Step::Hitl;
                ending_set = true;
            }
            Expect::EndsWith(list) if !ending_set => {
                ending = match list.first() {
                    Some(Ending::HitlPause) => Step::Hitl,
                    Some(Ending::ProvideInstructions) => Step::Instructions,
                    Some(Ending::Branch) => Step::Branch,
                    _ => Step::Final,
                };
                ending_set = true;
            }
            _ => {}
        }
    }
    let params = |tool: &str| {
        let mut params = json!({"customer_id": "cust_123"});
        if let Some(policy) = scenario.tools.get(tool).and_then(|t| t.policy.as_ref()) {
            params[&policy.param] = json!(over_the_limit(policy));
        }
        params
    };
    let mut script: Vec<Step> = if many && !called.is_empty() {
        vec![Step::CallMany(
            called.iter().map(|t| (t.clone(), params(t))).collect(),
        )]
    } else {
        called
            .iter()
            .map(|t| Step::Call {
                tool: t.clone(),
                params: params(t),
            })
            .collect()
    };
    script.push(ending);
    script
}

/// A value that breaks the policy (the harness answers with a GOVERNANCE ERROR).
fn over_the_limit(policy: &Policy) -> f64 {
    let step = policy.limit.abs().max(1.0);
    match policy.op {
        Op::Le | Op::Lt | Op::Eq => policy.limit + step,
        Op::Ge | Op::Gt => policy.limit - step,
        Op::Ne => policy.limit,
    }
}

impl TaskAgent {
    /// The default script: one tool call, then a final answer.
    pub fn new(name: impl Into<String>) -> TaskAgent {
        TaskAgent {
            name: name.into(),
            scenarios: Vec::new(),
            conversations: Arc::default(),
            script: vec![
                Step::Call {
                    tool: "lookup_order".into(),
                    params: json!({"order_id": "A-1001"}),
                },
                Step::Final,
            ],
        }
    }

    /// An agent that knows these scenarios' tasks and follows the script of each.
    pub fn with_scenarios(name: impl Into<String>, scenarios: &[Scenario]) -> TaskAgent {
        let mut agent = TaskAgent::new(name);
        agent.scenarios = scenarios
            .iter()
            .map(|s| (s.task.clone(), script_for(s)))
            .collect();
        agent
    }

    /// The script for the conversation: the scenario whose task opened it, else the default.
    fn script(&self, task: &str, history: &[Value]) -> &[Step] {
        let opening = history
            .first()
            .and_then(|t| t.get("content"))
            .and_then(Value::as_str)
            .unwrap_or(task);
        self.scenario_script(opening).unwrap_or(&self.script)
    }

    fn scenario_script(&self, task: &str) -> Option<&[Step]> {
        self.scenarios
            .iter()
            .find(|(t, _)| t == task)
            .map(|(_, s)| s.as_slice())
    }

    /// The answer for one parsed request, read alone.
    pub fn answer(&self, request: &Value) -> Value {
        self.answer_on(request, None)
    }

    /// The answer for one parsed request that came on `channel` (its id and the request's
    /// bytes), when the transport gives one.
    pub fn answer_on(&self, request: &Value, channel: Option<(u64, &[u8])>) -> Value {
        let task = request
            .get("task_description")
            .and_then(Value::as_str)
            .unwrap_or("");
        let history = request
            .get("conversation_history")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        let mut answer = match stated_turn(request) {
            // The call a governance error refuses: the history's last, else the script's.
            Some(turn) => governance_retry(
                task,
                last_call(history).or_else(|| self.refused_call(task).map(|(_, _, c)| c)),
            )
            .unwrap_or_else(|| {
                let step = self
                    .script(task, history)
                    .get(turn as usize - 1)
                    .unwrap_or(&Step::Final);
                step_answer(step, task)
            }),
            None => {
                let before = channel.and_then(|(id, bytes)| self.conversations.before(id, bytes));
                let (answer, after) = self.unnumbered(task, before.as_ref());
                if let Some((id, bytes)) = channel {
                    self.conversations.record(id, bytes, before, after);
                }
                answer
            }
        };
        if let Some(map) = answer.as_object_mut() {
            map.insert("agent_name".into(), Value::String(self.name.clone()));
        }
        answer
    }

    /// The answer to a request that says neither its turn nor its history, and where it leaves
    /// the conversation: `before` is where the channel's conversation was (None: no channel, or
    /// nothing on it yet).
    fn unnumbered(&self, task: &str, before: Option<&Progress>) -> (Value, Progress) {
        let said = Said::of(task);
        // A text that follows an open call on this channel is its result, whatever its words.
        let ongoing = before.filter(|p| said.continues() || p.open);
        let new_task =
            self.scenario_script(task).is_some() || (ongoing.is_none() && !said.continues());
        if let Some(p) = ongoing.filter(|_| !new_task) {
            if let Some(retry) = governance_retry(task, p.last_call.clone()) {
                let progress = Progress {
                    last_call: Some(retry.clone()),
                    open: true,
                    ..p.clone()
                };
                return (retry, progress);
            }
        }
        // Governance feedback on no channel we know (a process or a connection per turn, as the
        // reference harness opens them, with no history): the scripted call it refuses, found
        // by the parameter and value the feedback names, is retried within the limit.
        if ongoing.is_none() && said == Said::Governance {
            if let Some((opening, index, call)) = self.refused_call(task) {
                if let Some(retry) = governance_retry(task, Some(call)) {
                    let progress = Progress {
                        opening,
                        answered: index + 1,
                        last_call: Some(retry.clone()),
                        open: true,
                    };
                    return (retry, progress);
                }
            }
        }
        let (opening, index) = match ongoing {
            _ if new_task => (task.to_string(), 0),
            Some(p) => (p.opening.clone(), p.answered),
            // A result on no channel we know (a process per turn, a connection per turn): the
            // step after the call it answers, in the first script that has that call; past
            // every script, the final answer (a conforming agent finishes).
            None => self.place_of(&said),
        };
        let script = self.scenario_script(&opening).unwrap_or(&self.script);
        let step = script.get(index).unwrap_or(&Step::Final);
        let answer = step_answer(step, task);
        let progress = Progress {
            // Past every script (usize::MAX) stays past it.
            answered: index.saturating_add(1),
            last_call: match step {
                Step::Call { .. } => Some(answer.clone()),
                _ => ongoing.and_then(|p| p.last_call.clone()),
            },
            open: matches!(step, Step::Call { .. } | Step::CallMany(_) | Step::Hitl),
            opening,
        };
        (answer, progress)
    }

    /// The scripted call governance feedback `task` refuses, when nothing remembers the last
    /// call: the first call of the default script, then of the scenarios' scripts, whose
    /// parameter holds the refused value. Its script (by its opening task), index and answer.
    fn refused_call(&self, task: &str) -> Option<(String, usize, Value)> {
        let refusal = Refusal::of(task)?;
        let scripts = std::iter::once((String::new(), self.script.as_slice())).chain(
            self.scenarios
                .iter()
                .map(|(opening, script)| (opening.clone(), script.as_slice())),
        );
        scripts.into_iter().find_map(|(opening, script)| {
            script.iter().enumerate().find_map(|(i, step)| match step {
                Step::Call { params, .. } if refusal.refuses(params) => {
                    Some((opening.clone(), i, step_answer(step, &opening)))
                }
                _ => None,
            })
        })
    }

    /// The script (by its opening task) and step a result continues, from its words alone.
    fn place_of(&self, said: &Said) -> (String, usize) {
        if let Some(i) = step_after(said, &self.script) {
            return (String::new(), i);
        }
        self.scenarios
            .iter()
            .find_map(|(task, script)| Some((task.clone(), step_after(said, script)?)))
            .unwrap_or((String::new(), usize::MAX))
    }
}

/// The index of the step after the one `said` (a tool result) answers, in `script`.
fn step_after(said: &Said, script: &[Step]) -> Option<usize> {
    let answers = |step: &Step| match (said, step) {
        (Said::ToolResult(name), Step::Call { tool, .. }) => tool == name,
        (Said::ToolResult(name), Step::CallMany(calls)) => calls.iter().any(|(t, _)| t == name),
        (Said::ToolResults, Step::CallMany(_)) => true,
        _ => false,
    };
    script.iter().rposition(answers).map(|i| i + 1)
}

fn step_answer(step: &Step, task: &str) -> Value {
    let seen = crate::text::excerpt_str(task, 80);
    match step {
        Step::Call { tool, params } => json!({
            "action": "call_tool", "tool_name": tool, "tool_params": params,
            "summary": format!("Calling {tool} for: {seen}"),
        }),
        Step::CallMany(calls) => json!({
            "action": "call_multiple_tools",
            "tool_names": calls.iter().map(|(t, _)| t.clone()).collect::<Vec<_>>(),
            "tool_outputs": calls.iter().map(|(_, p)| json!({"requested_with": p})).collect::<Vec<_>>(),
            "summary": "Running the diagnostics together.",
        }),
        Step::Final => json!({
            "action": "final_answer",
            "summary": format!("Done. Last input: {seen}"),
        }),
        Step::Instructions => json!({
            "action": "provide_instructions",
            "instructions": "Please restart the router and run a speed test over Ethernet.",
            "summary": "Guided the user through a local check.",
        }),
        Step::Hitl => json!({
            "action": "hitl_pause",
            "reason": "Requesting a manual override beyond my limit.",
            "prompt": "Requesting a manual override beyond my limit.",
        }),
        Step::Branch => json!({
            "action": "branch",
            "metadata": {"reason": "Testing an alternative resolution path"},
            "branches": [{"reason": "Testing an alternative resolution path"}],
        }),
    }
}

/// After governance feedback (`GOVERNANCE ERROR: Amount 100 exceeds maximum allowed limit of 50.
/// Please adjust.`, or the reference harness's `{'status': 'policy_violation', 'violation':
/// 'Amount 100 exceeds limit of 50'}`): the last call again, with the named parameter set to the
/// limit. None when the feedback names no parameter, value and limit, or when the last call
/// does not hold the refused value (it is not the call refused).
fn governance_retry(task: &str, last_call: Option<Value>) -> Option<Value> {
    let refusal = Refusal::of(task)?;
    let limit = refusal.limit?;
    let last_call = last_call?;
    let tool = last_call.get("tool_name")?.as_str()?.to_string();
    let mut params = last_call
        .get("tool_params")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_else(Map::new);
    let params_value = Value::Object(params.clone());
    if !refusal.refuses(&params_value) {
        return None;
    }
    let key = refusal.key_in(&params_value)?;
    params.insert(key, json!(limit));
    Some(json!({
        "action": "call_tool", "tool_name": tool, "tool_params": params,
        "summary": format!("Adjusted to the allowed limit of {limit}."),
    }))
}

/// The most recent assistant turn of the history that was a call_tool.
pub fn last_call(history: &[Value]) -> Option<Value> {
    history.iter().rev().find_map(|turn| {
        let content = turn.get("content")?.as_str()?;
        let answer: Value = serde_json::from_str(content).ok()?;
        (answer.get("action")?.as_str()? == "call_tool").then_some(answer)
    })
}

impl Responder for TaskAgent {
    fn respond_body(&self, endpoint: &str, body: &Body<'_>) -> Reply {
        match self.respond_value(endpoint, body) {
            Answer::Reply(reply) => reply,
            Answer::Json(status, value) => Reply::json(status, &value),
        }
    }

    /// The request is read once: the body's value is shared with the engine's checks.
    fn respond_value(&self, endpoint: &str, body: &Body<'_>) -> Answer {
        let json = |status, value: Value| Answer::Json(status, value);
        match endpoint {
            "execute_task" => {
                let Some(request) = body.value() else {
                    let e = serde_json::from_slice::<Value>(body.bytes)
                        .err()
                        .map(|e| e.to_string())
                        .unwrap_or_default();
                    return Answer::Reply(Reply::error(
                        400,
                        format!("/execute_task: the body is not JSON: {e}"),
                    ));
                };
                if request
                    .get("task_description")
                    .is_some_and(Value::is_string)
                {
                    let channel = body.channel().map(|id| (id, body.bytes));
                    json(200, self.answer_on(request, channel))
                } else {
                    Answer::Reply(Reply::error(
                        400,
                        "/execute_task: task_description (a string) is required",
                    ))
                }
            }
            "health" => json(200, json!({"status": "ok", "agent_name": self.name})),
            other => Answer::Reply(Reply::error(404, format!("no endpoint /{other}"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(task: &str, turn: u64, history: Value) -> Value {
        json!({"task_description": task, "turn": turn, "conversation_history": history})
    }

    #[test]
    fn the_default_script_calls_a_tool_then_answers() {
        let agent = TaskAgent::new("scripted");
        let first = agent.answer(&request("Identify the customer", 1, json!([])));
        assert_eq!(first["action"], "call_tool");
        assert_eq!(first["agent_name"], "scripted");
        let second = agent.answer(&request(
            "Tool 'lookup_order' returned: {}. Continue.",
            2,
            json!([]),
        ));
        assert_eq!(second["action"], "final_answer");
        // Past the script: a final answer, whatever the turn.
        assert_eq!(
            agent.answer(&request("x", 9, json!([])))["action"],
            "final_answer"
        );
    }

    #[test]
    fn a_governance_error_gets_the_last_call_again_within_the_limit() {
        let agent = TaskAgent::new("a");
        let call = json!({"action": "call_tool", "tool_name": "apply_refund", "tool_params": {"amount": 100, "order": "o1"}});
        let history = json!([
            {"role": "user", "content": "Process a $100 refund"},
            {"role": "assistant", "content": call.to_string()},
        ]);
        let retry = agent.answer(&request(
            "GOVERNANCE ERROR: Amount 100 exceeds maximum allowed limit of 50. Please adjust.",
            2,
            history,
        ));
        assert_eq!(retry["tool_name"], "apply_refund");
        assert_eq!(retry["tool_params"], json!({"amount": 50.0, "order": "o1"}));
    }

    #[test]
    fn scripts_follow_each_shipped_scenario() {
        let scenarios = Scenario::builtin();
        let script = |id: &str| script_for(scenarios.iter().find(|s| s.id == id).unwrap());
        assert_eq!(script("credit-override"), [Step::Hitl]);
        assert!(
            matches!(&script("wifi-diagnostics")[0], Step::CallMany(calls) if calls.len() == 2)
        );
        match &script("refund-policy")[0] {
            Step::Call { tool, params } => {
                assert_eq!(tool, "apply_refund");
                assert_eq!(params["amount"], 100.0, "over the limit of 50 first");
            }
            other => panic!("{other:?}"),
        }
        let agent = TaskAgent::with_scenarios("a", &scenarios);
        let refund = scenarios.iter().find(|s| s.id == "refund-policy").unwrap();
        let first = agent.answer(&request(&refund.task, 1, json!([])));
        assert_eq!(first["tool_name"], "apply_refund");
        // Later turns find the scenario by the history's first message.
        let history = json!([{"role": "user", "content": refund.task}]);
        let third = agent.answer(&request(
            "Tool 'apply_refund' returned: {}. Continue.",
            3,
            history,
        ));
        assert_eq!(third["action"], "final_answer");
    }

    /// A harness that sends only the task text: its answer over channel `channel`.
    fn unnumbered(agent: &TaskAgent, channel: Option<u64>, task: &str) -> Value {
        let request = json!({"task_description": task});
        let bytes = request.to_string();
        agent.answer_on(&request, channel.map(|id| (id, bytes.as_bytes())))
    }

    #[test]
    fn without_a_turn_a_tool_result_continues_the_conversation() {
        let agent = TaskAgent::with_scenarios("a", &Scenario::builtin());
        // A process or a connection per turn: the words alone.
        assert_eq!(
            unnumbered(&agent, None, "Identify the customer")["action"],
            "call_tool"
        );
        let after = unnumbered(&agent, None, "Executed lookup_order");
        assert_eq!(after["action"], "final_answer");
        assert_eq!(after["agent_name"], "a");
        // One channel: what it answered there, whatever the result's words.
        assert_eq!(
            unnumbered(&agent, Some(7), "Identify the customer")["action"],
            "call_tool"
        );
        assert_eq!(
            unnumbered(&agent, Some(7), "{'status': 'success'}")["action"],
            "final_answer"
        );
        // After the final answer, a new text is a new task.
        assert_eq!(
            unnumbered(&agent, Some(7), "Find order B-2")["action"],
            "call_tool"
        );
    }

    #[test]
    fn without_a_turn_a_scenario_runs_its_script_on_its_channel() {
        let scenarios = Scenario::builtin();
        let agent = TaskAgent::with_scenarios("a", &scenarios);
        let refund = scenarios.iter().find(|s| s.id == "refund-policy").unwrap();
        let first = unnumbered(&agent, Some(1), &refund.task);
        assert_eq!(first["tool_name"], "apply_refund");
        assert_eq!(first["tool_params"]["amount"], 100.0);
        let retry = unnumbered(
            &agent,
            Some(1),
            "GOVERNANCE ERROR: Amount 100 exceeds maximum allowed limit of 50. Please adjust.",
        );
        assert_eq!(retry["tool_name"], "apply_refund");
        assert_eq!(retry["tool_params"]["amount"], 50.0);
        let done = unnumbered(&agent, Some(1), "Executed apply_refund");
        assert_eq!(done["action"], "final_answer");
        // The same request again (a retry) gets the same answer.
        assert_eq!(unnumbered(&agent, Some(1), "Executed apply_refund"), done);
    }

    /// The reference harness: no turn, no history, a process or connection per turn (no
    /// channel), and a policy violation as its sandbox dict's repr.
    #[test]
    fn a_dict_on_no_channel_retries_the_scripted_call_within_the_limit() {
        let scenarios = Scenario::builtin();
        let agent = TaskAgent::with_scenarios("a", &scenarios);
        let refund = scenarios.iter().find(|s| s.id == "refund-policy").unwrap();
        for channel in [None, Some(3)] {
            let first = unnumbered(&agent, channel, &refund.task);
            assert_eq!(first["tool_params"]["amount"], 100.0);
            let dict =
                "{'status': 'policy_violation', 'violation': 'Amount 100.0 exceeds limit of 50'}";
            let retry = unnumbered(&agent, channel, dict);
            assert_eq!(
                (
                    retry["tool_name"].as_str(),
                    retry["tool_params"]["amount"].as_f64()
                ),
                (Some("apply_refund"), Some(50.0)),
                "{channel:?}: {retry}"
            );
            let done = unnumbered(&agent, channel, "Executed apply_refund");
            assert_eq!(done["action"], "final_answer", "{channel:?}");
        }
        // With a turn and no history, the script's call too.
        let dict = json!({"task_description": "{'status': 'policy_violation', 'violation': 'Amount 100.0 exceeds limit of 50'}", "turn": 2});
        assert_eq!(agent.answer(&dict)["tool_params"]["amount"], 50.0);
        // Feedback about a value no call holds is no retry: the conversation goes on.
        let other = unnumbered(
            &agent,
            None,
            "{'status': 'policy_violation', 'violation': 'Amount 999 exceeds limit of 50'}",
        );
        assert_eq!(other["action"], "final_answer", "{other}");
    }

    #[test]
    fn a_history_without_a_turn_numbers_the_turn() {
        let agent = TaskAgent::new("a");
        let history = json!([
            {"role": "user", "content": "Identify the customer"},
            {"role": "assistant", "content": "{\"action\":\"call_tool\"}"},
        ]);
        let request = json!({"task_description": "Executed x", "conversation_history": history});
        assert_eq!(agent.answer(&request)["action"], "final_answer");
    }

    #[test]
    fn bad_requests_are_refused_with_a_reason() {
        let agent = TaskAgent::new("a");
        assert_eq!(agent.respond("execute_task", b"nope").status, 400);
        assert_eq!(agent.respond("execute_task", b"{\"turn\":1}").status, 400);
        assert_eq!(agent.respond("health", b"").status, 200);
    }
}
