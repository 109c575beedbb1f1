//! The multi-turn harness of the execute_task protocol: agent-tck plays the evaluation harness
//! and drives an agent through a [`Scenario`], whatever carries the bytes (HTTP, stdio, a
//! socket: each transport implements [`Exchanger`]).
//!
//! The loop, as the spec's "Multi-turn Flow" says:
//!
//! - each request is `{task_description, turn, conversation_history}`, `turn` from 1;
//! - `call_tool`: the sandbox runs the tool and the next task_description is
//!   `Tool 'NAME' returned: {compact JSON}. Continue.`; a tool the scenario makes fail gives
//!   `Tool 'NAME' failed: MESSAGE. Continue.`; a tool the sandbox lacks gives
//!   `Tool 'X' is not available (available: a, b). Continue.` and the loop goes on;
//! - a call whose parameters break the tool's policy does not run; the next task_description is
//!   exactly the spec's governance text, `GOVERNANCE ERROR: Amount 100 exceeds maximum allowed
//!   limit of 50. Please adjust.` (see [`REFERENCE_HARNESS_NOTE`] for how the reference harness
//!   differs);
//! - `call_multiple_tools`: each tool in order, one sentence each as above, then ` Continue.`
//!   The spec gives this action no parameters: each tool runs with `{}`, or with item i of
//!   `tool_params` when the agent sends `tool_params` as a list (an extension; extra fields are
//!   allowed);
//! - `final_answer`, `provide_instructions` and `error` end the loop, as does the turn limit
//!   (the scenario's `max_turns`, 5 by default, or the caller's override);
//! - `hitl_pause` ends the loop (`on_hitl: stop`) or a human approves (`continue`: the next
//!   task_description is `A human approved: continue.`); `branch` is followed (`on_branch:
//!   follow`: the next task_description says a checkpoint was created and the loop goes on,
//!   along the first of `branches` if the agent listed some) or ends the loop (`stop`);
//! - an answer that is not a valid action (not JSON, or any finding of `check_answer`) ends the
//!   loop with [`End::BadAnswer`]; a transport failure with [`End::Transport`].
//!
//! `conversation_history` grows by two entries per turn: `{role: "user", content: <the
//! task_description sent>}` and `{role: "assistant", content: <the answer as compact JSON>}`.
//! The spec names the shape `{role, content}` but not the roles; these are the usual chat roles.

use std::future::Future;

use serde_json::{json, Value};

use super::scenario::{Ending, Expect, Expectation, OnBranch, OnHitl, Scenario, ToolResult};
use crate::protocols::execute_task::model::{check_answer, discover_name};
use crate::schema::finding;
use crate::schema::Finding;
use crate::text::{excerpt, excerpt_str};

/// The INFO note a report carries about policy violations. The spec stays the contract.
pub const REFERENCE_HARNESS_NOTE: &str = "On a policy violation, the reference harness \
(MultiAgentEval) sends the agent its environment message as a Python dict rendered as a string \
(with \"status\": \"policy_violation\"), not the spec's text \"GOVERNANCE ERROR: Amount 100 \
exceeds maximum allowed limit of 50. Please adjust.\" agent-tck sends the spec's text. An agent \
that must work with both should recognize either form.";

/// Longest tool name we echo back to the agent, in characters (the name is the agent's).
const ECHO_CHARS: usize = 100;

/// Most findings an [`End::BadAnswer`] message lists (the turn's record keeps them all).
const MAX_LISTED: usize = 5;

mod judge;

pub use judge::judge;

/// What the loop needs from a transport: send one request (as JSON), get the answer's raw bytes or
/// why there was none.
pub trait Exchanger {
    fn exchange(
        &mut self,
        request: &Value,
    ) -> impl Future<Output = Result<Vec<u8>, NoAnswer>> + Send;
}

/// Why an exchange got no answer, in the transport's words. It is the agent's doing, so it ends
/// the scenario as a failed turn, never the command.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct NoAnswer(pub String);

/// An expectation judged on a transcript, with the message that cites the turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Held {
    Met(String),
    Missed(String),
}

impl Held {
    /// Why the expectation was missed; None when it was met.
    pub fn missed(self) -> Option<String> {
        match self {
            Held::Met(_) => None,
            Held::Missed(why) => Some(why),
        }
    }
}

/// Everything that happened in one run of a scenario.
#[derive(Debug, Clone, PartialEq)]
pub struct Transcript {
    pub turns: Vec<TurnRecord>,
    pub end: End,
    /// The agent's name, from the first answer that gave one, and the field it came from.
    pub name: Option<(String, &'static str)>,
}

/// One turn: what we sent, what came back, what we made of it.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnRecord {
    pub turn: u32,
    pub request: Value,
    /// The parsed answer, or why there is none (a transport error, not JSON).
    pub answer: Result<Value, String>,
    /// `check_answer`'s findings (for an answer that is not JSON: one finding saying so).
    pub findings: Vec<Finding>,
    /// The tools the answer asked for, in order, and what the sandbox did.
    pub tool_results: Vec<ToolCall>,
}

impl TurnRecord {
    /// The answer's `action`, if the answer is an object with a string action.
    pub fn action(&self) -> Option<&str> {
        self.answer.as_ref().ok()?.get("action")?.as_str()
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    pub tool: String,
    pub params: Value,
    pub outcome: ToolOutcome,
}

#[derive(Debug, Clone, PartialEq)]
pub enum ToolOutcome {
    /// The tool ran and returned this.
    Returned(Value),
    /// The tool ran and failed with this message.
    Error(String),
    /// The sandbox has no such tool.
    Unknown,
    /// The call broke the tool's policy and did not run; the governance error sent.
    PolicyViolation(String),
}

impl ToolCall {
    /// Whether the tool actually ran (returned or failed).
    pub fn ran(&self) -> bool {
        matches!(
            self.outcome,
            ToolOutcome::Returned(_) | ToolOutcome::Error(_)
        )
    }

    /// The sentence telling the agent what happened (without ` Continue.`).
    fn sentence(&self, available: &[&str]) -> String {
        let name = excerpt_str(&self.tool, ECHO_CHARS);
        match &self.outcome {
            ToolOutcome::Returned(v) => format!("Tool '{name}' returned: {v}."),
            ToolOutcome::Error(m) => format!("Tool '{name}' failed: {m}."),
            ToolOutcome::Unknown if available.is_empty() => {
                format!("Tool '{name}' is not available (no tools are available).")
            }
            ToolOutcome::Unknown => format!(
                "Tool '{name}' is not available (available: {}).",
                available.join(", ")
            ),
            ToolOutcome::PolicyViolation(m) => m.clone(),
        }
    }
}

/// How the loop ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum End {
    /// As `ends_with` names it: an action of the agent's, or the turn limit.
    Reached(Ending),
    /// The answer was not a valid action; what was wrong, with the turn.
    BadAnswer(String),
    /// The transport failed; its message, with the turn.
    Transport(String),
}

impl End {
    /// As `ends_with` names it; `None` for a bad answer or a transport failure.
    pub fn ending(&self) -> Option<Ending> {
        match self {
            End::Reached(ending) => Some(*ending),
            End::BadAnswer(_) | End::Transport(_) => None,
        }
    }

    /// Whether the agent ended the loop by an action of its own.
    pub fn by_agent(&self) -> bool {
        matches!(self, End::Reached(e) if *e != Ending::MaxTurns)
    }
}

impl std::fmt::Display for End {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            End::BadAnswer(m) => write!(f, "a bad answer ({m})"),
            End::Transport(m) => write!(f, "a transport failure ({m})"),
            End::Reached(Ending::MaxTurns) => write!(f, "the turn limit"),
            End::Reached(ending) => f.write_str(ending.as_str()),
        }
    }
}

/// Runs the tool in the scenario's sandbox.
fn run_tool(scenario: &Scenario, tool: &str, params: Value) -> ToolCall {
    let outcome = match scenario.tools.get(tool) {
        None => ToolOutcome::Unknown,
        Some(spec) => match spec.policy.as_ref().and_then(|p| p.violation(&params)) {
            Some(message) => ToolOutcome::PolicyViolation(message),
            None => match &spec.result {
                ToolResult::Returns(v) => ToolOutcome::Returned(v.clone()),
                ToolResult::Fails(m) => ToolOutcome::Error(m.clone()),
            },
        },
    };
    ToolCall {
        tool: tool.to_string(),
        params,
        outcome,
    }
}

/// What follows a turn: another task_description, or the end.
enum Next {
    Task(String),
    End(End),
}

/// Drives `agent` through `scenario`. Never fails: whatever the agent does ends up in the
/// transcript. `max_turns_override` replaces the scenario's `max_turns`.
pub async fn run_scenario<E: Exchanger + Send>(
    scenario: &Scenario,
    agent: &mut E,
    max_turns_override: Option<u32>,
) -> Transcript {
    let max_turns = max_turns_override.unwrap_or(scenario.max_turns);
    let available = scenario.tool_names();
    let mut task = scenario.task.clone();
    let mut history: Vec<Value> = Vec::new();
    let mut transcript = Transcript {
        turns: Vec::new(),
        end: End::Reached(Ending::MaxTurns),
        name: None,
    };
    for turn in 1..=max_turns {
        let request = json!({
            "task_description": task,
            "turn": turn,
            "conversation_history": history,
        });
        let mut record = TurnRecord {
            turn,
            request: request.clone(),
            answer: Err(String::new()),
            findings: Vec::new(),
            tool_results: Vec::new(),
        };
        let bytes = match agent.exchange(&request).await {
            Ok(bytes) => bytes,
            Err(e) => {
                record.answer = Err(format!("transport: {e}"));
                transcript.turns.push(record);
                transcript.end = End::Transport(format!("turn {turn}: {e}"));
                return transcript;
            }
        };
        let answer: Value = match parse_answer(&bytes) {
            Ok(v) => v,
            Err(why) => {
                record.findings = vec![finding("$", why.clone())];
                record.answer = Err(why.clone());
                transcript.turns.push(record);
                transcript.end = End::BadAnswer(format!("turn {turn}: {why}"));
                return transcript;
            }
        };
        if transcript.name.is_none() {
            transcript.name = discover_name(&answer);
        }
        record.findings = check_answer(&answer);
        if !record.findings.is_empty() {
            transcript.end = End::BadAnswer(format!("turn {turn}: {}", listed(&record.findings)));
            record.answer = Ok(answer);
            transcript.turns.push(record);
            return transcript;
        }
        history.push(json!({"role": "user", "content": task}));
        history.push(json!({"role": "assistant", "content": answer.to_string()}));

        let next = next_step(scenario, &answer, turn, &available, &mut record);
        record.answer = Ok(answer);
        transcript.turns.push(record);
        match next {
            Next::End(end) => {
                transcript.end = end;
                return transcript;
            }
            Next::Task(text) => task = text,
        }
    }
    transcript.end = End::Reached(Ending::MaxTurns);
    transcript
}

/// What follows the answer of turn `turn`: the next turn's task (the tools it called run, into
/// `record`), or the end.
fn next_step(
    scenario: &Scenario,
    answer: &Value,
    turn: u32,
    available: &[&str],
    record: &mut TurnRecord,
) -> Next {
    match answer["action"].as_str().unwrap_or_default() {
        "call_tool" => {
            let tool = answer["tool_name"].as_str().unwrap_or_default();
            let params = answer.get("tool_params").cloned().unwrap_or(json!({}));
            let call = run_tool(scenario, tool, params);
            let sentence = call.sentence(available);
            let text = match call.outcome {
                ToolOutcome::PolicyViolation(_) => sentence,
                _ => format!("{sentence} Continue."),
            };
            record.tool_results.push(call);
            Next::Task(text)
        }
        "call_multiple_tools" => {
            let names = answer["tool_names"].as_array().cloned().unwrap_or_default();
            let listed = answer.get("tool_params").and_then(Value::as_array);
            let mut sentences = Vec::new();
            for (i, name) in names.iter().enumerate() {
                let params = listed
                    .and_then(|l| l.get(i))
                    .filter(|p| p.is_object())
                    .cloned()
                    .unwrap_or(json!({}));
                let call = run_tool(scenario, name.as_str().unwrap_or_default(), params);
                sentences.push(call.sentence(available));
                record.tool_results.push(call);
            }
            Next::Task(format!("{} Continue.", sentences.join(" ")))
        }
        "final_answer" => Next::End(End::Reached(Ending::FinalAnswer)),
        "provide_instructions" => Next::End(End::Reached(Ending::ProvideInstructions)),
        "error" => Next::End(End::Reached(Ending::Error)),
        "hitl_pause" => match scenario.on_hitl {
            OnHitl::Stop => Next::End(End::Reached(Ending::HitlPause)),
            OnHitl::Continue => Next::Task("A human approved: continue.".to_string()),
        },
        "branch" => match scenario.on_branch {
            OnBranch::Stop => Next::End(End::Reached(Ending::Branch)),
            OnBranch::Follow => Next::Task(
                match answer
                    .get("branches")
                    .and_then(Value::as_array)
                    .and_then(|b| b.first())
                {
                    Some(first) => format!(
                        "Checkpoint created: continue along the first branch, {}.",
                        excerpt_str(&first.to_string(), 500)
                    ),
                    None => "Checkpoint created: continue along the new branch.".to_string(),
                },
            ),
        },
        // check_answer refused every other action.
        other => Next::End(End::BadAnswer(format!(
            "turn {turn}: unexpected action {other:?}"
        ))),
    }
}

/// An answer's bytes as JSON, or why they are not.
fn parse_answer(bytes: &[u8]) -> Result<Value, String> {
    serde_json::from_slice(bytes).map_err(|e| {
        if bytes.iter().all(u8::is_ascii_whitespace) {
            "the answer is empty".to_string()
        } else {
            format!("not JSON ({e}): {}", excerpt(bytes, 200))
        }
    })
}

/// The first few findings, the rest counted.
fn listed(findings: &[Finding]) -> String {
    let mut why: Vec<String> = findings
        .iter()
        .take(MAX_LISTED)
        .map(|f| f.to_string())
        .collect();
    if findings.len() > MAX_LISTED {
        why.push(format!("and {} more", findings.len() - MAX_LISTED));
    }
    why.join("; ")
}

#[cfg(test)]
mod tests;
