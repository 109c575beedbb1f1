//! The round table's platform rules, judged from the requests the fleet's agents receive:
//! /challenge never sends an agent its own analysis nor a failed agent's; strings forwarded from
//! an agent that sent NUL characters or over-long fields arrive sanitized and truncated;
//! injection payloads are not forwarded; a deliberation goes through its phases (every agent
//! with a usable analysis is challenged, and votes unless it timed out); an agent that failed a
//! phase is not called again in it; the platform gives up on an agent at its timeout; and the
//! latency it adds between phases (besides the rules every protocol shares, [`Common`]).
//!
//! Every rule judges only what exercised it: strings from an agent that sent no NUL say nothing
//! of NUL stripping, a payload never forwarded says nothing of injection filtering. With nothing
//! to judge, a case is a skip that names the behaviour (or deliberation) that would exercise it.
//!
//! The observer keeps compact state: counts, a few examples per rule, per task its phases, and
//! per (task, agent) what each phase's call planned. It is fed synchronously by the fleet's
//! request handler with the full request body (the journal may hold a capped copy).

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

// Looked up on every request: a fast hash, not SipHash (the keys are FNV hashes already).
use foldhash::HashMap as FastMap;
use serde_json::Value;

use crate::jsonpath::strings;
use crate::mock::decision::Decision;
use crate::mock::http1::{Delivered, Outcome};
use crate::mock::injection;
use crate::mock::journal::AuthSeen;
use crate::mock::observe::{note_cut, skip_all_if_none, Common, Tally, EXAMPLES};
use crate::mock::protocol::{Answered, PlatformObserver, RunEnd, Seen, Served};
use crate::report::{CaseResult, Evidence, Level, Status};
mod follow;
mod forwarded;
mod phases;
use forwarded::*;
use phases::*;

/// Tasks and canaries tracked at most: a fleet serving for days must not grow without bound.
/// Past it, new ones are not followed (and the verdicts say so).
const MAX_TRACKED: usize = 100_000;
/// Most (task, agent) seats the books hold.
const MAX_SEATS: usize = 4 * MAX_TRACKED;
/// Answers planned to outlast the platform's timeout, awaited at once (past it, one is not
/// judged rather than memory grown).
const MAX_WAITING: usize = 100_000;
/// The platform's per-field limit (Response Size Limits).
pub const MAX_FIELD_CHARS: usize = 50_000;

/// How long the platform's recent closes of requests are kept, in case the run's end turns out
/// to have caused them, and how many at most.
const RECENT: Duration = Duration::from_secs(60);
const MAX_RECENT: usize = 10_000;

/// How long past its timeout a platform may take to give up on an agent (and, with no request,
/// to start a deliberation's next phase): 1 s and 5 % of the timeout (7 s at the spec's 120 s),
/// for the scheduling and clock slack of a platform that gives up at its timeout.
pub fn grace(timeout: Duration) -> Duration {
    Duration::from_secs(1) + timeout / 20
}

/// A payload that came back in a request to another agent.
#[derive(Debug, Clone)]
struct Reappearance {
    canary: String,
    payload: String,
    family: String,
    from: String,
    to: String,
    endpoint: String,
}

/// A payload an agent placed in an answer.
#[derive(Debug, Clone)]
struct Canary {
    payload: String,
    family: String,
    from: String,
    /// The (task, agent) seat whose /analyze answer carried it (None: another phase's answer).
    analysis: Option<(Key, Key)>,
}

/// A task id or an agent name as the books key it: its 64-bit FNV-1a. The books hold a few
/// hundred thousand keys of a few bytes each, pre-sized, so that a fleet's memory stays flat
/// under a platform that sends a new task with every request (two of 400,000 keys colliding:
/// about 4 in 10^9).
type Key = u64;

fn key(text: &str) -> Key {
    crate::text::fnv1a(text)
}

/// Who a request was a call to, as the books key it. Mostly the agent its path names; but a
/// request the fleet refused for its credentials (401: no key, or a key that is not the agent's)
/// was not a call to that agent as registered: another agent registered at the same URL with
/// its own key (or none) made it, or the platform called the agent wrongly (platform.bearer
/// judges that). Its seat is that caller's, told apart by the key it carried, so that the
/// refusal is never the agent failing, whichever of the two calls came first.
struct Caller {
    key: Key,
    /// Refused for its credentials: with no key (false: with a key not the agent's).
    refused: Option<bool>,
}

impl Caller {
    fn of(seen: &Seen<'_>) -> Caller {
        let refused = match seen.auth {
            _ if seen.decision.status != 401 => None,
            AuthSeen::Missing => Some(true),
            AuthSeen::Wrong => Some(false),
            _ => None,
        };
        let key = match refused {
            None => key(seen.agent),
            // A key no agent name can have (names hold no NUL).
            Some(_) => key(&format!(
                "{}\0{:?}\0{:x}",
                seen.agent, seen.auth, seen.key_print
            )),
        };
        Caller { key, refused }
    }

    /// How messages name it.
    fn name(&self, agent: &str) -> String {
        match self.refused {
            None => agent.to_string(),
            Some(no_key) => format!(
                "another agent registered at {agent}'s URL ({})",
                credentials(agent, no_key)
            ),
        }
    }
}

/// What a request refused for its credentials carried.
fn credentials(agent: &str, no_key: bool) -> String {
    if no_key {
        "no key".to_string()
    } else {
        format!("a key that is not {agent}'s")
    }
}

/// The phases a task goes through, in order: their index in a task's books.
const PHASES: [&str; 3] = ["analyze", "challenge", "vote"];
const ANALYZE: usize = 0;
const CHALLENGE: usize = 1;
const VOTE: usize = 2;

fn phase_index(endpoint: &str) -> Option<usize> {
    PHASES.iter().position(|p| *p == endpoint)
}

/// When a task's phase started and when the platform's wait for it could have ended, in
/// microseconds since the observer started (`u64::MAX`: the phase has not begun).
#[derive(Debug, Clone, Copy)]
struct Phase {
    first_request: u64,
    /// The latest moment an answer of this phase was complete, or (for an answer that never
    /// came or came too late) when the platform's timeout for it ran out.
    wait_ended: u64,
}

impl Phase {
    const NOT_BEGUN: Phase = Phase {
        first_request: u64::MAX,
        wait_ended: u64::MAX,
    };

    fn begun(&self) -> bool {
        self.first_request != u64::MAX
    }
}

/// A task id as messages show it: its first bytes, inline (no allocation per task).
#[derive(Debug, Clone, Copy)]
struct ShortId {
    len: u8,
    more: bool,
    bytes: [u8; 22],
}

impl ShortId {
    fn new(text: &str) -> ShortId {
        let mut end = text.len().min(22);
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        let mut bytes = [0; 22];
        bytes[..end].copy_from_slice(&text.as_bytes()[..end]);
        ShortId {
            len: end as u8,
            more: end < text.len(),
            bytes,
        }
    }
}

impl std::fmt::Display for ShortId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let text = std::str::from_utf8(&self.bytes[..usize::from(self.len)]).unwrap_or("?");
        write!(f, "{text}{}", if self.more { "…" } else { "" })
    }
}

/// One task's books.
#[derive(Debug, Clone, Copy)]
struct Task {
    id: ShortId,
    phases: [Phase; 3],
    /// Agents whose (first) /analyze answer conformed, and those whose answer failed.
    clean: u16,
    failed: u16,
    /// Agents called in it (at any phase).
    agents: u16,
    /// The latest request of the task, µs since the observer started.
    last_request: u64,
    /// A request of it was still open when the fleet stopped: the run cut it short, and what
    /// the platform would have done next is unknown.
    cut: bool,
    /// The platform held a request of it past its timeout (platform.gives-up): it was stuck
    /// there, so whether it would have gone on is not judged.
    stuck: bool,
}

impl Task {
    fn new(id: &str) -> Task {
        Task {
            id: ShortId::new(id),
            phases: [Phase::NOT_BEGUN; 3],
            clean: 0,
            failed: 0,
            agents: 0,
            last_request: 0,
            cut: false,
            stuck: false,
        }
    }

    /// The latest thing the platform did or waited for in this task.
    fn last_activity(&self) -> u64 {
        self.phases
            .iter()
            .filter(|p| p.begun())
            .map(|p| p.wait_ended)
            .fold(self.last_request, u64::max)
    }
}

/// What an agent planned to answer, as the platform (waiting its timeout) could use it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
enum Planned {
    #[default]
    Nothing,
    /// The reference answer, on time: no behaviour applied.
    Clean,
    /// Usable within the timeout, though a behaviour applied (slow, NUL bytes, a payload…).
    Usable,
    /// Unusable: an error status, malformed JSON, a reset…
    Failed,
    /// No answer within the platform's timeout (a hang, or slower than it).
    TimedOut,
}

impl Planned {
    fn of(decision: &Decision, timeout: Duration) -> Planned {
        let late = Duration::from_millis(decision.ttfb_ms + decision.body_ms) >= timeout;
        let never = decision
            .unusable
            .as_deref()
            .is_some_and(|why| why.starts_with("never"));
        match &decision.unusable {
            _ if late || never => Planned::TimedOut,
            Some(_) => Planned::Failed,
            None if decision.applied.is_empty() => Planned::Clean,
            None => Planned::Usable,
        }
    }

    fn failed(self) -> bool {
        matches!(self, Planned::Failed | Planned::TimedOut)
    }
}

/// How the first call's answer ended, as the platform saw it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
enum End {
    /// Not over yet (or not followed: past [`MAX_WAITING`] open requests).
    #[default]
    Open,
    /// Over by the platform's act or ours as planned: delivered, refused, reset, given up on.
    Ended,
    /// Cut by the fleet's own end: the platform never saw it fail.
    Cut,
}

/// One phase's calls to one agent in one task.
#[derive(Debug, Clone, Copy, Default)]
struct Call {
    /// How many (saturating).
    n: u8,
    /// What the first call's answer planned.
    first_answer: Planned,
    /// How it ended: only an answer that ended is a failure the platform knew of.
    first_end: End,
    /// The first and the latest call, ms since the observer started.
    first_ms: u32,
    last_ms: u32,
}

/// One agent's part in one task.
#[derive(Debug, Clone, Copy, Default)]
struct Seat {
    calls: [Call; 3],
    /// Its /analyze answer held a NUL character, a string over the per-field limit.
    sent_nul: bool,
    sent_long: bool,
    /// Another agent was sent its analysis (in other_analyses or the synthesis' key findings).
    forwarded: bool,
}

/// A request of a phase whose answer is not over yet.
#[derive(Clone, Copy)]
struct Wait {
    task: Key,
    agent: Key,
    phase: usize,
    received: Instant,
    /// Its answer was planned to outlast the platform's timeout (platform.gives-up judges it).
    outlasts: bool,
    /// It is the seat's first call in the phase (platform.failed-not-recalled needs its end).
    first: bool,
}

#[derive(Default)]
struct State {
    common: Common,
    own_analysis: Tally,
    failed_excluded: Tally,
    nul: Tally,
    field_length: Tally,
    /// Agents whose forwarded strings the NUL and length rules judged.
    nul_sources: HashSet<Key>,
    long_sources: HashSet<Key>,
    /// For each seat whose /analyze answer held a string over the limit: that string's
    /// [`Long`] hashes, to tell a platform that cut it there and appended a marker
    /// ("… [truncated]") from one that forwarded it whole (bounded by the seats).
    long_prefixes: FastMap<(Key, Key), Long>,
    /// Agents whose /analyze answer held a NUL, an over-long string (bounded by the fleet).
    nul_senders: HashSet<Key>,
    long_senders: HashSet<Key>,
    gave_up: Tally,
    /// Answers planned to outlast the platform's timeout that the run's own end cut before
    /// that timeout came: how many, and a few in words.
    gave_up_cut: Tally,
    /// Every phase request still open, by its number (bounded by [`MAX_WAITING`]).
    waiting: FastMap<u64, Wait>,
    /// Requests the platform closed within its timeout, lately, and when: a platform drops its
    /// calls to agents when the fleet abandons a trigger (its deadline, Ctrl-C), a moment
    /// before the session says the run ended. Those that came after the run's end are its
    /// doing, not the platform's giving up.
    recent_closes: std::collections::VecDeque<(Instant, Wait)>,
    tasks: FastMap<Key, Task>,
    seats: FastMap<(Key, Key), Seat>,
    /// Agent names by key (bounded by the fleet: only its agents' names are routed here).
    names: FastMap<Key, String>,
    /// (agent, phase) that received a request without a task_id: its calls cannot be told
    /// apart by task, so whether a phase's call came is not judged for it.
    idless: HashSet<(Key, usize)>,
    canaries: HashMap<String, Canary>,
    reappeared: Vec<Reappearance>,
    reappeared_seen: HashSet<(String, String)>,
    /// When the driver said every triggered deliberation was answered (µs since the start).
    triggers_answered: Option<u64>,
    /// How the run ended, when the session said (else an answer it cut is told as cut "when
    /// the fleet stopped").
    run_end: Option<RunEnd>,
    /// Tasks or canaries not followed because MAX_TRACKED was reached.
    untracked: u64,
    /// Requests refused for their credentials, by agent and what they carried (no key: true):
    /// how many (bounded by the fleet: two entries per agent).
    refused: std::collections::BTreeMap<(String, bool), u64>,
}

impl State {
    fn name(&self, agent: Key) -> &str {
        self.names.get(&agent).map_or("?", String::as_str)
    }

    fn task_id(&self, task: Key) -> String {
        self.tasks
            .get(&task)
            .map_or_else(|| "?".to_string(), |t| t.id.to_string())
    }
}

pub struct Observer {
    /// The platform's per-endpoint timeout, to judge whether a slow answer was usable.
    pub platform_timeout: Duration,
    /// The origin of the books' times.
    started: Instant,
    state: Mutex<State>,
    /// Whether any answer carried an injection payload (then every request body is scanned).
    canaries_placed: AtomicBool,
}

/// What an /analyze answer carries that sanitization must handle when it is forwarded.
#[derive(Debug, Clone, Copy, Default)]
struct Carries {
    nul: bool,
    /// A string over the limit.
    long: Option<Long>,
}

/// A string over the per-field limit an agent sent, as hashes: of its first
/// [`MAX_FIELD_CHARS`] characters, and of the whole string.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Long {
    prefix: u64,
    whole: u64,
}

impl Carries {
    /// Read from the planned answer bytes, only when a behaviour applied (a reference answer
    /// carries neither): a NUL is a `\u0000` escape in JSON; a string over the limit needs an
    /// answer at least that long, and only then is it parsed.
    fn of(seen: &Seen<'_>) -> Carries {
        if seen.decision.applied.is_empty() {
            return Carries::default();
        }
        let answer = seen.answer;
        let long = if answer.len() > MAX_FIELD_CHARS {
            serde_json::from_slice::<Value>(answer)
                .ok()
                .and_then(|v| strings(&v).iter().find_map(|(_, s)| long_prefix(s)))
        } else {
            None
        };
        Carries {
            nul: has_nul_escape(answer),
            long,
        }
    }
}

/// `text`'s hashes when it has more than [`MAX_FIELD_CHARS`] characters.
fn long_prefix(text: &str) -> Option<Long> {
    let (cut, _) = text.char_indices().nth(MAX_FIELD_CHARS)?;
    Some(Long {
        prefix: crate::text::fnv1a(&text[..cut]),
        whole: crate::text::fnv1a(text),
    })
}

/// Whether JSON text holds a `\u0000` escape (not an escaped backslash followed by `u0000`).
fn has_nul_escape(json: &[u8]) -> bool {
    memchr::memmem::find_iter(json, b"\\u0000").any(|at| {
        let backslashes = json[..at].iter().rev().take_while(|&&b| b == b'\\').count();
        backslashes % 2 == 0
    })
}

impl PlatformObserver for Observer {
    fn on_request(&self, seen: &Seen<'_>) {
        let (name, endpoint, task, decision) =
            (seen.agent, seen.endpoint, seen.task, seen.decision);
        // The body is parsed (when it must be: /challenge and /vote, or a scan for payloads)
        // before the lock is taken: it is the costly part, and every worker may be here at once.
        let body = (endpoint != "analyze" || self.canaries_placed.load(Ordering::Relaxed))
            .then(|| seen.body.value())
            .flatten();
        let phase = phase_index(endpoint);
        let planned = Planned::of(decision, self.platform_timeout);
        let carries = match phase {
            Some(ANALYZE) if !planned.failed() => Carries::of(seen),
            _ => Carries::default(),
        };
        let caller = Caller::of(seen);
        let Ok(mut s) = self.state.lock() else { return };
        s.common.on_request(seen);
        if let Some(no_key) = caller.refused {
            *s.refused.entry((name.to_string(), no_key)).or_default() += 1;
        }
        if let Some(i) = phase {
            let first = if task.is_empty() {
                s.idless.insert((caller.key, i));
                false
            } else {
                self.book(&mut s, seen, i, planned, carries, &caller)
            };
            if s.waiting.len() < MAX_WAITING {
                let wait = Wait {
                    task: key(task),
                    agent: caller.key,
                    phase: i,
                    received: seen.at,
                    outlasts: planned == Planned::TimedOut,
                    first,
                };
                s.waiting.insert(seen.seq, wait);
            } else {
                s.untracked += 1;
            }
        }
        for placed in &decision.injected {
            if s.canaries.len() >= MAX_TRACKED {
                s.untracked += 1;
                break;
            }
            let canary = Canary {
                payload: placed.payload.clone(),
                family: placed.family.clone(),
                from: name.to_string(),
                analysis: (phase == Some(ANALYZE) && !task.is_empty())
                    .then(|| (key(task), key(name))),
            };
            s.canaries.insert(placed.canary.clone(), canary);
            self.canaries_placed.store(true, Ordering::Relaxed);
        }
        let Some(body) = body else { return };
        scan_canaries(&mut s, name, endpoint, body);
        match endpoint {
            "challenge" => check_challenge(&mut s, name, task, body),
            "vote" => {
                if let Some(findings) = body
                    .pointer("/synthesis/key_findings")
                    .and_then(Value::as_array)
                {
                    for (i, finding) in findings.iter().enumerate() {
                        let from = name_of(finding);
                        let at = Forward {
                            task,
                            from: &from,
                            receiver: name,
                            endpoint: "vote",
                            field: "synthesis.key_findings",
                            index: i,
                        };
                        check_forwarded(&mut s, &at, finding);
                    }
                }
            }
            _ => {}
        }
    }

    /// The verdicts, as report cases.
    fn cases_at(&self, served: Served, now: Instant) -> Vec<CaseResult> {
        let Ok(mut guard) = self.state.lock() else {
            return Vec::new();
        };
        let s = &mut *guard;
        self.settle_waiting(s, now);
        let total = s.common.total();
        let mut cases = s
            .common
            .cases("POST /analyze, /challenge, /vote: Request", served);
        cases.extend([
            s.own_analysis.judged(
                "platform.challenge-not-own",
                "challenge",
                Level::Must,
                "/challenge other_analyses never holds the receiving agent's own analysis",
                "POST /challenge (the platform sends other agents' analyses)",
                "/challenge requests",
                &format!("no /challenge request with other_analyses reached {}: run a deliberation past /analyze with at least two agents whose analyses are usable", served.name()),
            ),
            s.failed_excluded.judged(
                "platform.challenge-no-failed",
                "challenge",
                Level::Must,
                "/challenge other_analyses holds no agent whose /analyze failed (timed out, errored, refused, malformed, oversized)",
                "Error Handling; Timeouts (excluded from the round table)",
                "/challenge requests in tasks where an agent's /analyze failed",
                "no /challenge request came in a task where an agent's /analyze failed: add an agent that fails /analyze (behaviour hang@analyze, http-error@analyze or malformed-json@analyze) and run a deliberation past /analyze",
            ),
            sanitized(
                &s.nul,
                &s.nul_sources,
                &s.nul_senders,
                [
                    "platform.nul-stripped",
                    "strings forwarded from one agent to others carry no NUL characters",
                    "Response Sanitization (stripped of null bytes)",
                    "NUL characters",
                    "null-bytes",
                ],
            ),
            sanitized(
                &s.field_length,
                &s.long_sources,
                &s.long_senders,
                [
                    "platform.field-truncated",
                    "strings forwarded from one agent to others are at most 50,000 characters",
                    "Response Size Limits (per-field 50,000 characters)",
                    "a string over 50,000 characters",
                    "oversized-field",
                ],
            ),
            self.phases_case(s, now),
            self.retries_case(s, now, served),
            self.gives_up_case(s),
            injection_case(s),
            latency_case(s),
        ]);
        skip_all_if_none(&mut cases, total, served);
        if let Some(note) = refusals_note(s) {
            for case in cases
                .iter_mut()
                .filter(|c| BLAMED_BY_REFUSALS.contains(&c.id.as_str()))
            {
                if !case.message.is_empty() {
                    case.message.push('\n');
                }
                case.message.push_str(&note);
            }
        }
        cases.extend(s.common.probe_case());
        if s.untracked > 0 {
            for case in &mut cases {
                case.message.push_str(&format!(
                    "\n(past {MAX_TRACKED} tasks or payloads, {} were not followed)",
                    s.untracked
                ));
            }
        }
        cases
    }

    fn on_probe_request(&self, _agent: &str, endpoint: &str, case: &str) {
        if let Ok(mut s) = self.state.lock() {
            s.common.on_probe_request(endpoint, case);
        }
    }

    fn on_incomplete(&self, agent: &str, endpoint: &str, what: &str) {
        if let Ok(mut s) = self.state.lock() {
            s.common.on_incomplete(agent, endpoint, what);
        }
    }

    fn on_run_end(&self, end: &RunEnd) {
        let Ok(mut guard) = self.state.lock() else {
            return;
        };
        let s = &mut *guard;
        if s.run_end.is_some() {
            return;
        }
        s.run_end = Some(end.clone());
        let recent = std::mem::take(&mut s.recent_closes);
        if !end.abandoned {
            return;
        }
        // Closes that came after the end, before the session said so: taken back from the
        // verdicts (each was a giving-up within the limit, counted as held, or a first answer
        // that ended) and told as cut.
        for (at, wait) in recent {
            if at < end.at {
                continue;
            }
            if wait.outlasts {
                s.gave_up.checked = s.gave_up.checked.saturating_sub(1);
            }
            self.cut(s, &wait, end.at);
        }
    }

    fn waiting_within_timeout(&self, at: Instant) -> Vec<String> {
        let Ok(s) = self.state.lock() else {
            return Vec::new();
        };
        let limit = self.limit();
        let mut open: Vec<(Duration, String)> = s
            .waiting
            .values()
            .map(|w| (at.saturating_duration_since(w.received), w))
            .filter(|(open, _)| *open <= limit)
            .map(|(open, w)| {
                let words = format!(
                    "{}'s /{} (task {}), open {:.1} s",
                    s.name(w.agent),
                    PHASES[w.phase],
                    s.task_id(w.task),
                    open.as_secs_f64()
                );
                (open, words)
            })
            .collect();
        // The longest waits first: those the platform is nearest to giving up.
        open.sort_by_key(|(open, _)| std::cmp::Reverse(*open));
        open.into_iter().map(|(_, words)| words).collect()
    }

    fn on_triggers_answered(&self, at: Instant) {
        let now = self.micros(at);
        if let Ok(mut s) = self.state.lock() {
            s.triggers_answered = Some(now);
        }
    }

    fn on_answer(&self, answered: &Answered<'_>) {
        let (endpoint, task, received, delivered) = (
            answered.endpoint,
            answered.task,
            answered.received,
            answered.delivered,
        );
        let Ok(mut guard) = self.state.lock() else {
            return;
        };
        let s = &mut *guard;
        if let Some(wait) = s.waiting.remove(&answered.seq) {
            let now = answered.at;
            let within = delivered.total <= self.limit();
            // The platform closed it within its time: it gave up, or it dropped its work
            // because the run ended (a trigger abandoned at the deadline, Ctrl-C).
            let closed = within && matches!(delivered.outcome, Outcome::PeerGone | Outcome::Hung);
            let after_end = s
                .run_end
                .as_ref()
                .is_some_and(|e| e.abandoned && now >= e.at);
            if (within && delivered.outcome == Outcome::Shutdown) || (closed && after_end) {
                self.cut(s, &wait, now);
            } else {
                if wait.outlasts {
                    self.judge_wait(s, &wait, delivered);
                }
                if wait.first {
                    if let Some(seat) = s.seats.get_mut(&(wait.task, wait.agent)) {
                        seat.calls[wait.phase].first_end = match delivered.outcome {
                            Outcome::Shutdown => End::Cut,
                            _ => End::Ended,
                        };
                    }
                }
                // Kept only until the session says how the run ended.
                if closed && s.run_end.is_none() {
                    let recent = &mut s.recent_closes;
                    while recent
                        .front()
                        .is_some_and(|(at, _)| now.duration_since(*at) > RECENT)
                        || recent.len() >= MAX_RECENT
                    {
                        recent.pop_front();
                    }
                    recent.push_back((now, wait));
                }
            }
        }
        let deadline = received + self.platform_timeout;
        let ended = if delivered.outcome == Outcome::Complete {
            (received + delivered.total).min(deadline)
        } else {
            deadline
        };
        let ended = self.micros(ended);
        let Some(i) = phase_index(endpoint) else {
            return;
        };
        if let Some(t) = s.tasks.get_mut(&key(task)) {
            t.cut |= delivered.outcome == Outcome::Shutdown;
            let phase = &mut t.phases[i];
            if phase.begun() {
                phase.wait_ended = phase.wait_ended.max(ended);
            }
        }
    }
}

#[cfg(test)]
mod tests;
