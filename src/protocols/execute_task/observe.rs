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
//! - `harness.history`: the history keeps the earlier turns and grows by the previous exchange;
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

impl State {
    fn on_request(&mut self, seen: &Seen<'_>, limit: u32, stated: bool) {
        self.common.on_request(seen);
        let agent = self.agents.entry(seen.agent.to_string()).or_default();
        if agent.pending_bad.take().is_some() {
            self.after_bad.check(true, String::new);
        }
        let answer = answer_seen(seen);
        if answer.bad.is_some() {
            agent.pending_bad = answer.bad.clone();
        }
        let Some(body) = seen.body.value() else {
            return;
        };
        let task = body
            .get("task_description")
            .and_then(Value::as_str)
            .unwrap_or("");
        self.requests += 1;
        self.note_form(seen.agent, task);
        let Some(turn) = body.get("turn").and_then(Value::as_u64) else {
            self.no_turn += 1;
            self.turnless(seen.agent, task, answer, limit, stated);
            return;
        };
        let agent = self.agents.entry(seen.agent.to_string()).or_default();
        let turn = u32::try_from(turn).unwrap_or(u32::MAX);
        let empty = Vec::new();
        let history = body
            .get("conversation_history")
            .and_then(Value::as_array)
            .unwrap_or(&empty);
        let name = seen.agent;
        let first_task = match history.first() {
            Some(entry) => hash_of(&entry.get("content").and_then(Value::as_str).unwrap_or("")),
            None => hash_of(&task),
        };

        // Which conversation this continues: the one whose first task opens this history, at
        // the turn before; with no history to tell by, the latest at the turn before. A request
        // whose history opens with a task never seen joins a conversation in its middle (the
        // crafted single exchanges of a probe look like that too): followed from here, not
        // judged on what came before.
        let continued = if turn <= 1 {
            None
        } else {
            let at = |c: &Conversation| c.turn + 1 == turn;
            if history.is_empty() {
                agent.conversations.iter().rposition(at)
            } else {
                agent
                    .conversations
                    .iter()
                    .rposition(|c| at(c) && c.first_task == first_task)
            }
        };

        // The turn limit, on the conversations followed from their start.
        let from_start = turn == 1 || continued.is_some_and(|i| agent.conversations[i].from_start);
        if from_start {
            self.over_limit.check(turn <= limit, || {
                format!(
                    "{name}: turn {turn}, past {} {limit}",
                    if stated {
                        "--expect-max-turns"
                    } else {
                        "any sensible limit:"
                    }
                )
            });
            if !stated {
                self.over_default.check(turn <= DEFAULT_LIMIT, || {
                    format!("{name}: turn {turn}, past the spec's default limit of {DEFAULT_LIMIT}")
                });
            }
        }
        match (turn, continued) {
            (0, _) => self.turns.check(false, || {
                format!("{name}: turn 0 (turns start at 1): {}", excerpt_str(task, 80))
            }),
            (1, _) => self.turns.check(history.is_empty(), || {
                format!(
                    "{name}: turn 1 with {} history entries (a first turn has none: does the turn go up?)",
                    history.len()
                )
            }),
            (_, Some(_)) => self.turns.check(true, String::new),
            (_, None) => {
                self.joined += 1;
                // The same conversation at another turn: the turn did not go up by one (a
                // retry of the same turn is not judged).
                if let Some(c) = agent
                    .conversations
                    .iter()
                    .rev()
                    .find(|c| c.first_task == first_task && c.turn != turn && !history.is_empty())
                {
                    let before = c.turn;
                    self.turns.check(false, || {
                        format!("{name}: turn {turn} followed turn {before} of the same conversation (the turn goes up by one)")
                    });
                }
            }
        }

        if let Some(i) = continued {
            let previous = &agent.conversations[i];
            // The history: the earlier turns kept, the previous exchange added.
            let kept = history.len() >= previous.history_len
                && history_hash(history, previous.history_len) == previous.history_hash;
            let grew = history.len() > previous.history_len;
            self.history.check(kept && grew, || {
                if !kept {
                    format!(
                        "{name}: turn {turn}'s history ({} entries) does not start with turn {}'s ({} entries): earlier turns were dropped or changed",
                        history.len(),
                        turn - 1,
                        previous.history_len
                    )
                } else {
                    format!(
                        "{name}: turn {turn}'s history has {} entries, as turn {}'s had: the previous exchange is not in it",
                        history.len(),
                        turn - 1
                    )
                }
            });
            // What follows the mock's last answer.
            let last = previous.answer.clone();
            let after = last.action.clone();
            self.loop_ends.check(!last.ends_loop(), || {
                format!(
                    "{name}: turn {turn} came after {after} at turn {} (the loop ends there)",
                    turn - 1
                )
            });
            if last.calls_tools() {
                let broken = missing_result(task, &last.tools)
                    .map(|why| format!("{name} turn {turn}: {why}"));
                self.tool_results
                    .check(broken.is_none(), || broken.unwrap_or_default());
            }
            let c = &mut agent.conversations[i];
            c.turn = turn;
            c.history_len = history.len();
            c.history_hash = history_hash(history, history.len());
            c.answer = answer;
        } else {
            let old = if agent.conversations.len() >= CONVERSATIONS {
                agent.conversations.pop_front()
            } else {
                None
            };
            agent.conversations.push_back(Conversation {
                first_task,
                from_start: turn == 1,
                turn,
                history_len: history.len(),
                history_hash: history_hash(history, history.len()),
                answer,
            });
            if let Some(old) = old {
                self.let_go(&old);
            }
        }
    }

    /// Notes a task_description in the reference harness's forms (a Python dict's repr).
    fn note_form(&mut self, agent: &str, task: &str) {
        if !python_repr(task) {
            return;
        }
        self.dict_forms += 1;
        if self.dict_repr.len() < crate::mock::observe::EXAMPLES {
            let what = if governance_feedback(task) {
                "a policy violation as a Python dict's repr, not the spec's `GOVERNANCE ERROR: …` text"
            } else {
                "a Python dict's repr where JSON or text was expected"
            };
            self.dict_repr
                .push(format!("{agent}: {what}: {}", excerpt_str(task, 160)));
        }
    }

    /// A request without `turn`: it continues the agent's chain when it carries the result of
    /// the tool the mock called last (judged as a tool result and counted against the turn
    /// limit), else it starts a chain.
    fn turnless(&mut self, name: &str, task: &str, answer: AnswerSeen, limit: u32, stated: bool) {
        let Some(agent) = self.agents.get_mut(name) else {
            return;
        };
        let carried = agent
            .chains
            .iter()
            .enumerate()
            .filter(|(_, c)| {
                c.answer.calls_tools() && missing_result(task, &c.answer.tools).is_none()
            })
            .min_by_key(|(_, c)| c.requests)
            .map(|(i, _)| i);
        let Some(i) = carried else {
            let old = (agent.chains.len() >= CONVERSATIONS)
                .then(|| agent.chains.pop_front())
                .flatten();
            agent.chains.push_back(Chain {
                requests: 1,
                answer,
            });
            if let Some(old) = old {
                self.let_go_chain(&old);
            }
            return;
        };
        let chain = &mut agent.chains[i];
        chain.requests += 1;
        chain.answer = answer;
        let requests = chain.requests;
        self.tool_results.check(true, String::new);
        self.over_limit.check(requests <= limit, || {
            format!(
                "{name}: request {requests} of a conversation followed by its tool results (no `turn`), past {} {limit}",
                if stated { "--expect-max-turns" } else { "any sensible limit:" }
            )
        });
        if !stated {
            self.over_default.check(requests <= DEFAULT_LIMIT, || {
                format!("{name}: request {requests} of a conversation followed by its tool results (no `turn`), past the spec's default limit of {DEFAULT_LIMIT}")
            });
        }
    }

    /// A chain no longer followed: whether the harness had to end it.
    fn let_go_chain(&mut self, c: &Chain) {
        if c.requests > 1 && c.answer.keeps_going() {
            self.left_to_harness += 1;
            self.longest_left = self.longest_left.max(c.requests);
        }
    }

    /// A conversation no longer followed: whether the harness had to end it.
    fn let_go(&mut self, c: &Conversation) {
        if c.from_start && c.turn > 1 && c.answer.keeps_going() {
            self.left_to_harness += 1;
            self.longest_left = self.longest_left.max(c.turn);
        }
    }
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
        if (hang || !delayed.is_zero()) && s.waiting.len() < WAITING {
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
                        "{name}: {what}: the harness gave up only after {waited_s:.1} s (expected within {expect} + 1 s)"
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
        // Bad answers the harness never followed up: it ended the scenario cleanly.
        for agent in s.agents.values_mut() {
            if agent.pending_bad.take().is_some() {
                s.after_bad.check(true, String::new);
            }
        }
        // Answers still held back: a harness still waiting past its deadline.
        let limit = self.expect.timeout + GRACE;
        let expect = humantime::format_duration(self.expect.timeout);
        for delay in s.waiting.values() {
            let waited = now.saturating_duration_since(delay.received);
            if waited > limit {
                s.deadline.check(false, || {
                    format!(
                        "{}: {}: the harness was still waiting after {:.1} s, when the mock stopped (expected to give up within {expect} + 1 s)",
                        delay.agent,
                        delay.what(),
                        waited.as_secs_f64()
                    )
                });
            }
        }
        s.waiting
            .retain(|_, d| now.saturating_duration_since(d.received) <= limit);
        let (mut left, mut longest) = (s.left_to_harness, s.longest_left);
        let open = s.agents.values().flat_map(|a| {
            let chain = a.chains.iter().map(|c| (c.requests, &c.answer));
            let followed = a.conversations.iter().filter(|c| c.from_start);
            chain.chain(followed.map(|c| (c.turn, &c.answer)))
        });
        for (turns, answer) in open {
            if turns > 1 && answer.keeps_going() {
                left += 1;
                longest = longest.max(turns);
            }
        }
        let total = s.common.total();
        let mut cases = s.common.cases(
            "POST /execute_task: Request Body; Local Subprocess Protocol; Socket Protocol",
            served,
        );
        let followed = "a request that continues a conversation followed from an earlier one (its turn one more, its history opening with the same task)";
        cases.push(s.turns.judged(
            "harness.turns",
            GROUP,
            Level::Must,
            "turn 1 opens a conversation with an empty history; each next request is the next turn",
            "POST /execute_task: Request Body (turn); Multi-turn Flow",
            "requests with a turn",
            &s.unfollowed("a request at turn 1, or the next turn of a conversation followed"),
        ));
        cases.push(s.history.judged(
            "harness.history",
            GROUP,
            Level::Must,
            "conversation_history keeps the earlier turns and grows by the previous exchange",
            "POST /execute_task: Request Body (conversation_history); Multi-turn Flow",
            "turns that continue a conversation",
            &s.unfollowed(followed),
        ));
        let mut tool_results = s.tool_results.judged(
            "harness.tool-results",
            GROUP,
            Level::Must,
            "after call_tool or call_multiple_tools, the next task_description carries each tool's result (or an error naming it, or a GOVERNANCE ERROR)",
            "Multi-turn Flow; Policy Violations (Governance feedback)",
            "turns after a tool call",
            &s.unfollowed("a request that follows one the mock answered with a tool call"),
        );
        if s.no_turn > 0 && tool_results.passed() {
            let one = s.no_turn == 1;
            tool_results.message = format!(
                "{} came without `turn`: {} followed by the tool results {}, so a missing result there reads as a new conversation, not as a failure",
                crate::text::count(s.no_turn, "requests"),
                if one { "it was" } else { "they were" },
                if one { "it carries" } else { "they carry" }
            );
        }
        cases.push(tool_results);
        cases.push(s.loop_ends.judged(
            "harness.loop-ends",
            GROUP,
            Level::Must,
            "nothing follows final_answer, provide_instructions or error in a conversation",
            "Multi-turn Flow (the loop ends when the agent sends final_answer, provide_instructions, error)",
            "turns that continue a conversation",
            &s.unfollowed(followed),
        ));
        let never_ends = "no conversation was left to the harness's limit (the mock ended each one, or none was followed past its first request): serve --behavior never-finishes to test it";
        let mut limit = s.over_limit.judged(
            "harness.turn-limit",
            GROUP,
            Level::Must,
            &format!(
                "against an agent that never finishes, the harness stops at a turn limit ({})",
                match self.expect.max_turns {
                    Some(n) => format!("--expect-max-turns {n}"),
                    None => format!("any: a conversation past turn {NO_LIMIT_TURNS} has none"),
                }
            ),
            "Multi-turn Flow (the max turn limit)",
            "requests of conversations followed from their start",
            &s.unfollowed(never_ends),
        );
        exercised(&mut limit, left, longest, never_ends);
        cases.push(limit);
        if self.expect.max_turns.is_none() {
            let mut default = s.over_default.judged(
                "harness.turn-limit-default",
                GROUP,
                Level::Should,
                "the turn limit is the spec's default, 5, unless configured (say --expect-max-turns N)",
                "Multi-turn Flow (the max turn limit, default: 5)",
                "requests of conversations followed from their start",
                &s.unfollowed(never_ends),
            );
            exercised(&mut default, left, longest, never_ends);
            if default.passed() {
                // Stopping at 5 or before is what a harness whose limit is configured (a
                // scenario's max_turns, a flag) does too: nothing here says the default was in
                // force, so the default itself was not judged (a stop past 5 still fails).
                default.skip(format!(
                    "{}: within the spec's default of {DEFAULT_LIMIT}, but a limit configured to \
                     {longest} (a scenario's max_turns, a flag of the harness) looks the same \
                     from the agent's side, so the default was not judged; harness.turn-limit \
                     judges the limit configured (say it with --expect-max-turns N)",
                    default.message
                ));
            }
            cases.push(default);
        }
        let mut deadline = s.deadline.judged(
            "harness.deadline",
            GROUP,
            Level::Must,
            &format!(
                "against a slow or hanging agent, the harness gives up within --expect-timeout ({}) + 1 s",
                humantime::format_duration(self.expect.timeout)
            ),
            "Multi-turn Flow (a harness must not wait forever for an agent)",
            "slow or hanging answers",
            "serve --behavior hang or slow:DUR to test the harness's deadline",
        );
        s.explain_deadline(&mut deadline);
        cases.push(deadline);
        cases.push(s.after_bad.judged(
            "harness.after-bad-answer",
            GROUP,
            Level::Must,
            "after a malformed, oversized or wrong-schema answer, the harness goes on or ends cleanly (never a half-written request)",
            "Response Body (one action per answer); Local Subprocess Protocol",
            "bad answers",
            "serve --behavior malformed-json, oversized-body or unknown-action to test it",
        ));
        cases.push(s.forms_case());
        skip_all_if_none(&mut cases, total, served);
        cases.extend(s.common.probe_case());
        cases
    }
}

impl State {
    /// `harness.deadline`'s message when nothing broke it: what the harness gave up on, and
    /// the waits it did not end itself (ended from outside: not judged; ended by a close no
    /// process could be found for: counted, saying so).
    fn explain_deadline(&self, deadline: &mut CaseResult) {
        if !deadline.passed() && deadline.status != crate::report::Status::Skip {
            return;
        }
        let outside = self.first_outside.as_ref().map(|first| {
            if self.ended_outside == 1 {
                first.clone()
            } else {
                format!(
                    "{first} (and {} more so ended)",
                    crate::text::count(self.ended_outside - 1, "waits")
                )
            }
        });
        let given_up = self.deadline.checked - self.unattributed;
        if self.deadline.checked == 0 {
            if let Some(outside) = outside {
                deadline.skip(format!(
                    "not judged: {outside}; that is no giving-up of its own (a harness gives up by closing the connection or stdin and living on, or by signalling the agent itself). Run it without an outside limit shorter than --expect-timeout + 1 s to judge it"
                ));
            }
            return;
        }
        let mut parts = Vec::new();
        if given_up > 0 {
            parts.push(format!(
                "the harness gave up on {given_up} (the longest wait {:.1} s)",
                self.longest_wait.as_secs_f64()
            ));
        }
        if let Some(why) = &self.first_unattributed {
            parts.push(format!(
                "{} ended within the bound by a close the mock cannot credit to the harness or to anyone else ({why}): counted, as no wait passed the bound",
                crate::text::count(self.unattributed, "waits")
            ));
        }
        if let Some(outside) = outside {
            parts.push(format!("not counted: {outside}"));
        }
        deadline.message = parts.join("; ");
    }

    /// Why a rule on followed conversations judged nothing: `need` (what would exercise it),
    /// and what the requests in hand lacked (no `turn`, joined in the middle).
    fn unfollowed(&self, need: &str) -> String {
        let mut lacked = Vec::new();
        if self.no_turn > 0 {
            let one = self.no_turn == 1;
            lacked.push(format!(
                "{} of the {} {} no `turn` (a field of the spec's Request Body; platform.request-schema names it), so {} followed only by the tool results {}: send `turn` (1, then one more per request) to follow conversations by it",
                self.no_turn,
                crate::text::count(self.requests, "requests"),
                if one { "carries" } else { "carry" },
                if one { "it is" } else { "they are" },
                if one { "it carries" } else { "they carry" }
            ));
        }
        if self.joined > 0 {
            lacked.push(format!(
                "{} joined a conversation in its middle (a turn past 1 with no earlier turn seen: a per-turn stdio process sees one request; run the mock with --json so that its processes fold one report, or use a persistent process)",
                crate::text::count(self.joined, "requests")
            ));
        }
        if lacked.is_empty() {
            format!("{need} exercises this")
        } else {
            format!("{need} exercises this; {}", lacked.join("; "))
        }
    }

    /// `harness.reference-forms`: every request's task_description looked at.
    fn forms_case(&self) -> CaseResult {
        let mut forms = CaseResult::new(
            "harness.reference-forms",
            GROUP,
            Level::May,
            "where the harness used the reference harness's forms rather than the spec's (INFO)",
            "Policy Violations (Governance feedback)",
        );
        let note = if self.dict_repr.is_empty() {
            "nothing to note: no task_description in the reference harness's forms".to_string()
        } else {
            format!(
                "{} in the reference harness's forms, e.g.\n{}",
                crate::text::count(self.dict_forms, "task_descriptions"),
                self.dict_repr.join("\n")
            )
        };
        forms.pass_noting(
            Evidence::new(self.requests, "task_descriptions"),
            note,
            || "no request with a JSON body: no task_description to look at".to_string(),
        );
        forms
    }
}

/// A turn-limit case that passed without a conversation left to the harness tested nothing.
fn exercised(case: &mut CaseResult, left: u64, longest: u32, never_ends: &str) {
    if !case.passed() {
        return;
    }
    if left == 0 {
        case.skip(never_ends);
    } else {
        case.message = format!(
            "{} the agent never ended, the longest stopped at turn {longest}",
            crate::text::count(left, "conversations")
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mock::decision::Decision;
    use crate::mock::journal::AuthSeen;
    use crate::mock::Body;
    use crate::report::Status;
    use serde_json::json;

    #[test]
    fn tool_results_in_every_form_a_harness_may_send() {
        let spec = "Tool 'lookup' returned: {\"ok\": true}. Continue.";
        assert_eq!(tool_result(spec, "lookup", true), Ok(()));
        assert_eq!(
            tool_result("Tool 'lookup' is not available. Continue.", "lookup", true),
            Ok(())
        );
        assert_eq!(
            tool_result(
                "GOVERNANCE ERROR: Amount 100 exceeds maximum allowed limit of 50. Please adjust.",
                "refund",
                true
            ),
            Ok(())
        );
        for dict in [
            "{'status': 'policy_violation', 'message': 'Amount 100 exceeds 50'}",
            "{'error': 'GOVERNANCE ERROR: Amount 100 exceeds maximum allowed limit of 50.'}",
        ] {
            assert_eq!(tool_result(dict, "refund", true), Ok(()));
            assert!(python_repr(dict), "{dict}");
        }
        assert!(!python_repr("Tool 'x' returned: {\"a\": 1}. Continue."));
        assert!(!python_repr("GOVERNANCE ERROR: Amount 100 exceeds 50."));
        let err = tool_result("Please continue with the task.", "lookup", true).unwrap_err();
        assert!(err.contains("does not name it"), "{err}");
    }

    /// Feeds one request (and the mock's answer to it) to the observer.
    fn request(
        o: &HarnessObserver,
        seq: u64,
        turn: u64,
        task: &str,
        history: Value,
        answer: Value,
    ) {
        let body = json!({"task_description": task, "turn": turn, "conversation_history": history});
        feed(o, seq, body, answer);
    }

    /// Feeds one request body (and the mock's answer to it) to the observer.
    fn feed(o: &HarnessObserver, seq: u64, body: Value, answer: Value) {
        let answer = answer.to_string();
        o.on_request(&Seen {
            seq,
            agent: "a",
            expects_key: false,
            endpoint: "execute_task",
            auth: AuthSeen::None,
            key_print: 0,
            task: "",
            body: &Body::new(body.to_string().as_bytes()),
            schema_findings: &[],
            decision: &Decision::default(),
            answer: answer.as_bytes(),
            at: std::time::Instant::now(),
        });
    }

    fn status(o: &HarnessObserver, id: &str) -> (Status, String) {
        let c = o
            .cases(Served::OneAgent)
            .into_iter()
            .find(|c| c.id == id)
            .unwrap();
        (c.status, c.message)
    }

    #[test]
    fn a_loop_past_five_turns_breaks_the_default_limit_and_a_dict_is_noted() {
        let o = HarnessObserver::new(PlatformExpect::timeout(Duration::from_secs(5)));
        let call = json!({"action": "call_tool", "tool_name": "refund", "tool_params": {}});
        let mut history: Vec<Value> = Vec::new();
        let mut task = "Refund ord_1.".to_string();
        for turn in 1..=7 {
            request(&o, turn, turn, &task, json!(history), call.clone());
            history.push(json!({"role": "user", "content": task}));
            history.push(json!({"role": "assistant", "content": call.to_string()}));
            task = if turn == 1 {
                "{'status': 'policy_violation', 'message': 'too much'}".into()
            } else {
                "Tool 'refund' returned: {}. Continue.".into()
            };
        }
        let (s, m) = status(&o, "harness.turn-limit-default");
        assert_eq!(s, Status::Fail, "{m}");
        assert!(
            m.contains("turn 6, past the spec's default limit of 5"),
            "{m}"
        );
        // No limit stated: 7 turns is not yet "no limit at all".
        assert_eq!(status(&o, "harness.turn-limit").0, Status::Pass);
        let (s, m) = status(&o, "harness.reference-forms");
        assert_eq!(s, Status::Pass);
        assert!(
            m.contains("a policy violation as a Python dict's repr"),
            "{m}"
        );
        for id in [
            "harness.turns",
            "harness.history",
            "harness.tool-results",
            "harness.loop-ends",
        ] {
            assert_eq!(status(&o, id).0, Status::Pass, "{id}: {}", status(&o, id).1);
        }
    }

    /// A harness that stops a never-ending agent at 5 without the user saying its limit: its
    /// own max_turns of 5 and the default look the same, so the default is not judged.
    #[test]
    fn a_stop_at_five_does_not_tell_the_default_from_a_configured_limit() {
        let o = HarnessObserver::new(PlatformExpect::timeout(Duration::from_secs(5)));
        let call = json!({"action": "call_tool", "tool_name": "refund", "tool_params": {}});
        let mut history: Vec<Value> = Vec::new();
        let mut task = "Refund ord_1.".to_string();
        for turn in 1..=5 {
            request(&o, turn, turn, &task, json!(history), call.clone());
            history.push(json!({"role": "user", "content": task}));
            history.push(json!({"role": "assistant", "content": call.to_string()}));
            task = "Tool 'refund' returned: {}. Continue.".into();
        }
        let (s, m) = status(&o, "harness.turn-limit-default");
        assert_eq!(s, Status::Skip, "{m}");
        assert!(
            m.starts_with("1 conversation the agent never ended, the longest stopped at turn 5: within the spec's default of 5, but a limit configured to 5")
                && m.contains("the default was not judged"),
            "{m}"
        );
        assert_eq!(status(&o, "harness.turn-limit").0, Status::Pass);
    }

    #[test]
    fn a_turn_after_a_final_answer_breaks_the_loop_end() {
        let o = HarnessObserver::new(PlatformExpect::timeout(Duration::from_secs(5)));
        let done = json!({"action": "final_answer", "summary": "ok"});
        request(&o, 0, 1, "Say hi.", json!([]), done.clone());
        let history = json!([{"role": "user", "content": "Say hi."}, {"role": "assistant", "content": done.to_string()}]);
        request(&o, 1, 2, "Continue.", history, done);
        let (s, m) = status(&o, "harness.loop-ends");
        assert_eq!(s, Status::Fail, "{m}");
        assert!(
            m.contains("turn 2 came after final_answer at turn 1"),
            "{m}"
        );
    }

    /// Two conversations without `turn`, side by side, each 5 requests long: counted apart (the
    /// shortest chain goes on), so neither runs past the limit of 5.
    #[test]
    fn turnless_conversations_side_by_side_are_counted_apart() {
        let expect = PlatformExpect {
            timeout: Duration::from_secs(5),
            max_turns: Some(5),
        };
        let o = HarnessObserver::new(expect);
        let call = json!({"action": "call_tool", "tool_name": "lookup_order", "tool_params": {}});
        let result = "Tool 'lookup_order' returned: {}. Continue.";
        let mut seq = 0;
        for n in 0..5 {
            for first in ["Look up A-1.", "Look up B-2."] {
                let task = if n == 0 { first } else { result };
                feed(&o, seq, json!({ "task_description": task }), call.clone());
                seq += 1;
            }
        }
        let (s, m) = status(&o, "harness.turn-limit");
        assert_eq!(s, Status::Pass, "{m}");
        assert!(
            m.contains("2 conversations the agent never ended, the longest stopped at turn 5"),
            "{m}"
        );
        // A sixth request in one of them is past the limit.
        feed(&o, seq, json!({ "task_description": result }), call);
        let (s, m) = status(&o, "harness.turn-limit");
        assert_eq!(s, Status::Fail, "{m}");
        assert!(m.contains("request 6 of a conversation"), "{m}");
    }
}
