//! The mock role's verdicts on an execute_task harness: what a harness did with the agents the
//! mock played for it, over HTTP, stdio and sockets alike (the engine feeds every request and
//! every answer the same way, whatever carried it).
//!
//! A harness sends no conversation id, so conversations are followed by what the spec does
//! give: a request at turn 1 starts one; a request at turn t continues the agent's conversation
//! that was at turn t-1 (the one whose first task opens this request's history, when several
//! were). A conversation joined in the middle (the mock started late, or a per-turn stdio
//! process without `--json`, which sees one request) is followed from there, without a verdict
//! on what came before it. A request without `turn` is followed by the tool result it carries
//! (a `Chain`): tool results and the turn limit, by count, are judged on those; the rules that
//! need the turn say how many requests lacked it.
//!
//! The rules (group `harness`):
//! - `harness.turns`: turn 1 starts a conversation with an empty history; each next request is
//!   the next turn;
//! - `harness.history`: the history, when sent, keeps the earlier turns and grows by the previous exchange;
//! - `harness.tool-results`: after call_tool or call_multiple_tools, the next task_description
//!   carries each tool's result (`Tool 'NAME' returned: …. Continue.`), an error naming it, or
//!   governance feedback (`GOVERNANCE ERROR: …`, also inside the reference harness's dict);
//! - `harness.loop-ends`: nothing follows final_answer, provide_instructions or error;
//! - `harness.turn-limit` / `harness.turn-limit-default`: against an agent that never finishes,
//!   the harness stops at a limit (`--expect-max-turns N`, or some limit: [`NO_LIMIT_TURNS`]),
//!   5 unless configured (SHOULD: fails past 5; a stop at 5 or before skips, since a limit
//!   configured to it, such as a scenario's `max_turns: 5`, cannot be told from the default);
//! - `harness.deadline`: against a slow or hanging agent, the harness gives up (closes the
//!   connection or stdin) within `--expect-timeout` + 1 s;
//! - `harness.after-bad-answer`: after a malformed, oversized or wrong-schema answer the harness
//!   goes on or ends cleanly, never with a half-written request;
//! - `harness.reference-forms` (INFO): every request's task_description in the reference
//!   harness's forms (a Python dict's repr) rather than the spec's.

use std::collections::{HashMap, VecDeque};
use std::hash::{Hash, Hasher};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::model::{check_answer, governance_feedback};
use crate::mock::http1::Outcome;
use crate::mock::observe::{skip_all_if_none, Common, Tally};
use crate::mock::peer_end::PeerEnd;
use crate::mock::protocol::{Answered, PlatformExpect, PlatformObserver, Seen, Served};
use crate::report::{CaseResult, Evidence, Level};
use crate::text::excerpt_str;
mod cases;
mod follow;
mod verdicts;
use verdicts::*;

/// A turn past this is a harness without a turn limit, when the user states none.
pub const NO_LIMIT_TURNS: u32 = 100;

/// The spec's default turn limit.
const DEFAULT_LIMIT: u32 = super::scenario::DEFAULT_MAX_TURNS;

/// Conversations followed per agent (the oldest is let go first).
const CONVERSATIONS: usize = 64;

/// Delayed answers awaited at once (beyond this, one is not judged rather than memory grown).
const WAITING: usize = 100_000;

/// Grace on top of the expected timeout before a harness is said to wait too long.
const GRACE: Duration = Duration::from_secs(1);

const GROUP: &str = "harness";

/// The observer `mock agent --protocol execute-task` and execute-task fleets judge a harness by.
pub struct HarnessObserver {
    expect: PlatformExpect,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    common: Common,
    agents: HashMap<String, AgentState>,
    turns: Tally,
    history: Tally,
    tool_results: Tally,
    loop_ends: Tally,
    after_bad: Tally,
    deadline: Tally,
    /// Requests over the turn limit (MUST: the stated one or NO_LIMIT_TURNS; SHOULD: 5).
    over_limit: Tally,
    over_default: Tally,
    /// Conversations of more than one turn the mock kept going (no ending action): the harness
    /// had to end them, by its limit.
    left_to_harness: u64,
    longest_left: u32,
    /// Requests with a JSON body (each one's task_description is looked at for its form).
    requests: u64,
    /// Of them, requests without `turn`: followed by their tool results only (see `Chain`).
    no_turn: u64,
    /// Requests at a turn past 1 that continued no conversation followed (joined in the middle).
    joined: u64,
    /// Requests that continued a conversation followed without `conversation_history` (the
    /// spec's Request Body marks it optional): their history not judged.
    no_history: u64,
    /// Requests in the reference harness's forms rather than the spec's (INFO): how many, and
    /// a few examples.
    dict_forms: u64,
    dict_repr: Vec<String>,
    /// seq → what the mock planned, for answers it delays.
    waiting: HashMap<u64, Delay>,
    /// The longest a harness waited before giving up, and how many gave up.
    gave_up: u64,
    longest_wait: Duration,
    /// Waits the harness did not end itself, within the bound: what ended the first one, and
    /// how many (not evidence either way: see [`PeerEnd`]).
    ended_outside: u64,
    first_outside: Option<String>,
    /// Waits ended within the bound by a close no process could be found for: counted as
    /// giving up (the wait did not pass the bound, whoever ended it); why, and how many.
    unattributed: u64,
    first_unattributed: Option<String>,
}

#[derive(Default)]
struct AgentState {
    conversations: VecDeque<Conversation>,
    /// The last bad answer, until the harness's next move says how it took it.
    pending_bad: Option<String>,
    /// The conversations followed without `turn`, when requests carry none (the oldest is let
    /// go first).
    chains: VecDeque<Chain>,
}

/// A conversation followed without `turn` (nor, maybe, a history): an agent's requests, each
/// carrying the result of the tool the mock called in the one before. A request that carries no
/// such result starts a new chain (it may be the harness's next conversation: with nothing to
/// number them, a missing result cannot be told from a new task). When several chains could go
/// on (conversations side by side, the same tool called in each), the shortest does: a count
/// never runs past a conversation's own length by taking another's requests.
struct Chain {
    requests: u32,
    answer: AnswerSeen,
}

struct Conversation {
    /// Hash of the first task_description (as it opens the history later).
    first_task: u64,
    /// Followed from turn 1 (not joined in the middle): its turns say how far the loop went.
    from_start: bool,
    turn: u32,
    history_len: usize,
    history_hash: u64,
    /// What the mock answered last.
    answer: AnswerSeen,
}

#[derive(Default, Clone)]
struct AnswerSeen {
    action: String,
    tools: Vec<String>,
    bad: Option<String>,
}

impl AnswerSeen {
    fn ends_loop(&self) -> bool {
        self.bad.is_none()
            && matches!(
                self.action.as_str(),
                "final_answer" | "provide_instructions" | "error"
            )
    }

    fn calls_tools(&self) -> bool {
        self.bad.is_none() && !self.tools.is_empty()
    }

    /// The harness, not the agent, must end the loop after this answer.
    fn keeps_going(&self) -> bool {
        self.bad.is_none()
            && matches!(
                self.action.as_str(),
                "call_tool" | "call_multiple_tools" | "branch"
            )
    }
}

struct Delay {
    agent: String,
    planned: Duration,
    hang: bool,
    received: std::time::Instant,
}

impl Delay {
    fn what(&self) -> String {
        if self.hang {
            "a hanging answer".to_string()
        } else {
            format!("an answer delayed {} ms", self.planned.as_millis())
        }
    }
}

impl HarnessObserver {
    pub fn new(expect: PlatformExpect) -> HarnessObserver {
        HarnessObserver {
            expect,
            state: Mutex::new(State::default()),
        }
    }

    fn limit(&self) -> u32 {
        self.expect.max_turns.unwrap_or(NO_LIMIT_TURNS)
    }
}

fn hash_of(value: &impl Hash) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    value.hash(&mut h);
    h.finish()
}

/// Hash of the first `n` history entries (each as compact JSON).
fn history_hash(history: &[Value], n: usize) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    for entry in &history[..n.min(history.len())] {
        entry.to_string().hash(&mut h);
    }
    h.finish()
}

/// Largest planned answer read back (a conforming one is a few hundred bytes; reading an
/// oversized one would delay the answer it judges).
const READ_BACK: usize = 64 * 1024;

/// What the mock answered, read back from the bytes it planned.
fn answer_seen(seen: &Seen<'_>) -> AnswerSeen {
    let mut a = AnswerSeen::default();
    // A hang or a black hole sends no answer at all: not a bad one (the deadline judges those).
    match &seen.decision.unusable {
        Some(why) if why.starts_with("never") => return a,
        Some(why) => {
            a.bad = Some(format!("an unusable answer ({why})"));
            return a;
        }
        None if seen.answer.len() > READ_BACK => return a,
        None => {}
    }
    let parsed = serde_json::from_slice::<Value>(seen.answer);
    match parsed {
        Ok(v) => {
            a.action = v
                .get("action")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            if let Some(t) = v.get("tool_name").and_then(Value::as_str) {
                a.tools.push(t.to_string());
            }
            if let Some(list) = v.get("tool_names").and_then(Value::as_array) {
                a.tools
                    .extend(list.iter().filter_map(Value::as_str).map(str::to_string));
            }
            let findings = check_answer(&v);
            if !findings.is_empty() {
                a.bad = Some(format!(
                    "a wrong-schema answer ({})",
                    crate::schema::findings_message(&findings)
                ));
            }
        }
        Err(_) => a.bad = Some("an answer that is not JSON".into()),
    }
    a
}

/// Judges the task_description that follows a call of `tool` (`single`: the only tool of the
/// turn): the spec's form, an error naming the tool, or governance feedback in any form (the
/// text or the reference harness's dict: [`note_form`](State::note_form) notes the dict); Err
/// says why it carries no result.
fn tool_result(task: &str, tool: &str, single: bool) -> Result<(), String> {
    let spec_form = format!("Tool '{tool}' returned: ");
    if single && task.starts_with(&spec_form) && task.trim_end().ends_with("Continue.") {
        return Ok(());
    }
    if governance_feedback(task) || task.contains(tool) {
        return Ok(());
    }
    Err(format!(
        "after the agent called {tool}, the next task_description does not name it (the spec: \
         \"Tool '{tool}' returned: {{…}}. Continue.\"): {}",
        excerpt_str(task, 200)
    ))
}

/// Why `task` does not carry the result of every tool in `tools` (None: it does).
fn missing_result(task: &str, tools: &[String]) -> Option<String> {
    let single = tools.len() == 1;
    tools
        .iter()
        .find_map(|tool| tool_result(task, tool, single).err())
}

/// Whether `task` holds a Python dict's repr (`{'error': …}`): a key in single quotes right
/// after a brace or a comma, then `': `.
fn python_repr(task: &str) -> bool {
    task.match_indices("{'").any(|(i, _)| {
        let rest = &task[i + 2..];
        rest.find("': ")
            .is_some_and(|j| rest[..j].chars().all(|c| c.is_alphanumeric() || c == '_'))
    })
}

impl PlatformObserver for HarnessObserver {
    fn on_request(&self, seen: &Seen<'_>) {
        let delayed = Duration::from_millis(seen.decision.ttfb_ms + seen.decision.body_ms);
        let hang = seen
            .decision
            .unusable
            .as_deref()
            .is_some_and(|u| u.starts_with("never"));
        let Ok(mut s) = self.state.lock() else { return };
        s.on_request(seen, self.limit(), self.expect.max_turns.is_some());
        // Only an answer held to the harness's timeout or past it exercises its giving up: one
        // that came sooner was waited for as it should be, and says nothing of the deadline
        // (a real agent behind the proxy is never without some delay).
        let outlasts = delayed >= self.expect.timeout;
        if (hang || outlasts) && s.waiting.len() < WAITING {
            s.waiting.insert(
                seen.seq,
                Delay {
                    agent: seen.agent.to_string(),
                    planned: delayed,
                    hang,
                    received: seen.at,
                },
            );
        }
    }

    fn on_answer(&self, answered: &Answered<'_>) {
        let Ok(mut s) = self.state.lock() else { return };
        let Some(delay) = s.waiting.remove(&answered.seq) else {
            return;
        };
        let d = answered.delivered;
        let limit = self.expect.timeout + GRACE;
        let waited = d.total;
        let what = delay.what();
        let (name, expect) = (delay.agent, humantime::format_duration(self.expect.timeout));
        let waited_s = waited.as_secs_f64();
        match (d.outcome, answered.ended) {
            // Its process ended (killed from outside, or it exited): no giving-up to credit;
            // a wait already past the bound broke the rule whoever ended it.
            (Outcome::Hung | Outcome::PeerGone, Some(PeerEnd::Ended { what: how })) => {
                if waited > limit {
                    s.deadline.check(false, || {
                        format!(
                            "{name}: {what}: the harness was still waiting after {waited_s:.1} s, past the bound (expected to give up within {expect} + 1 s), when {how}"
                        )
                    });
                } else {
                    s.ended_outside += 1;
                    s.first_outside
                        .get_or_insert_with(|| format!("{how}, {waited_s:.1} s into its wait for {what}"));
                }
            }
            // Nobody to credit the close to: a wait past the bound broke the rule whoever ended
            // it; one within it is counted, and the verdict says so.
            (Outcome::Hung | Outcome::PeerGone, Some(PeerEnd::Unknown { why })) => {
                s.longest_wait = s.longest_wait.max(waited);
                s.deadline.check(waited <= limit, || {
                    format!(
                        "{name}: {what}: the harness waited {waited_s:.1} s, then its side ended (whether it gave up or was ended, the mock cannot tell: {why}) (expected to give up within {expect} + 1 s)"
                    )
                });
                if waited <= limit {
                    s.unattributed += 1;
                    s.first_unattributed.get_or_insert_with(|| why.clone());
                }
            }
            (Outcome::Hung | Outcome::PeerGone, _) => {
                s.gave_up += 1;
                s.longest_wait = s.longest_wait.max(waited);
                s.deadline.check(waited <= limit, || {
                    format!(
                        "{name}: {what}: the harness gave up only after {waited_s:.2} s (expected within {expect} + 1 s)"
                    )
                });
            }
            (Outcome::Shutdown, _) if waited <= limit => {}
            (Outcome::Shutdown, _) => s.deadline.check(false, || {
                format!(
                    "{name}: {what}: the harness was still waiting after {waited_s:.1} s, when the mock stopped (expected to give up within {expect} + 1 s)"
                )
            }),
            _ => {
                s.longest_wait = s.longest_wait.max(waited);
                s.deadline.check(waited <= limit, || {
                    format!(
                        "{name}: {what}: the harness waited {waited_s:.1} s for it (expected to give up within {expect} + 1 s)"
                    )
                });
            }
        }
    }

    fn on_incomplete(&self, agent: &str, endpoint: &str, what: &str) {
        let Ok(mut s) = self.state.lock() else { return };
        // After a bad answer it is that rule's failure; otherwise the shared one's.
        match s.agents.get_mut(agent).and_then(|a| a.pending_bad.take()) {
            Some(bad) => s.after_bad.check(false, || {
                format!(
                    "{agent}: after {}, a half-written request: {what}",
                    excerpt_str(&bad, 120)
                )
            }),
            None => s.common.on_incomplete(agent, endpoint, what),
        }
    }

    fn on_probe_request(&self, _agent: &str, endpoint: &str, case: &str) {
        if let Ok(mut s) = self.state.lock() {
            s.common.on_probe_request(endpoint, case);
        }
    }

    fn cases_at(&self, served: Served, now: Instant) -> Vec<CaseResult> {
        let Ok(mut guard) = self.state.lock() else {
            return Vec::new();
        };
        let s = &mut *guard;
        let expect = humantime::format_duration(self.expect.timeout).to_string();
        s.settle(now, self.expect.timeout + GRACE, &expect);
        let total = s.common.total();
        let mut cases = s.common.cases(
            "POST /execute_task: Request Body; Local Subprocess Protocol; Socket Protocol",
            served,
        );
        s.loop_cases(&mut cases);
        s.limit_cases(self.expect.max_turns, served, &mut cases);
        s.answer_cases(self.expect.timeout, served, &mut cases);
        cases.push(s.forms_case());
        skip_all_if_none(&mut cases, total, served);
        cases.extend(s.common.probe_case());
        cases
    }
}

#[cfg(test)]
mod tests;
