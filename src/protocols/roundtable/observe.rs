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

impl Observer {
    pub fn new(platform_timeout: Duration) -> Observer {
        // Sized for the most they hold: no rehash of a hundred thousand entries in the middle of
        // a request (a latency spike), and a fleet's memory reaches its level at once.
        let state = State {
            tasks: FastMap::with_capacity_and_hasher(MAX_TRACKED, Default::default()),
            seats: FastMap::with_capacity_and_hasher(MAX_SEATS, Default::default()),
            ..State::default()
        };
        Observer {
            platform_timeout,
            started: Instant::now(),
            state: Mutex::new(state),
            canaries_placed: AtomicBool::new(false),
        }
    }

    fn micros(&self, at: Instant) -> u64 {
        at.saturating_duration_since(self.started).as_micros() as u64
    }

    /// How long the platform may hold an agent's request: its timeout and the grace.
    fn limit(&self) -> Duration {
        self.platform_timeout + grace(self.platform_timeout)
    }

    /// Books a call of `phase` to `agent` in `task` (a task id the request carried); true when
    /// it is the agent's first call in that phase of the task.
    fn book(
        &self,
        s: &mut State,
        seen: &Seen<'_>,
        phase: usize,
        planned: Planned,
        carries: Carries,
        caller: &Caller,
    ) -> bool {
        let now = self.micros(seen.at);
        let task_key = key(seen.task);
        let agent_key = caller.key;
        s.names
            .entry(agent_key)
            .or_insert_with(|| caller.name(seen.agent));
        if s.tasks.len() >= MAX_TRACKED && !s.tasks.contains_key(&task_key) {
            s.untracked += 1;
            return false;
        }
        let seat_key = (task_key, agent_key);
        if s.seats.len() >= MAX_SEATS && !s.seats.contains_key(&seat_key) {
            s.untracked += 1;
            return false;
        }
        let task = s
            .tasks
            .entry(task_key)
            .or_insert_with(|| Task::new(seen.task));
        task.last_request = task.last_request.max(now);
        let p = &mut task.phases[phase];
        if !p.begun() {
            *p = Phase {
                first_request: now,
                wait_ended: now,
            };
        }
        let seat = s.seats.entry(seat_key).or_insert_with(|| {
            task.agents = task.agents.saturating_add(1);
            Seat::default()
        });
        let call = &mut seat.calls[phase];
        let ms = u32::try_from(now / 1000).unwrap_or(u32::MAX);
        let first = call.n == 0;
        if first {
            call.first_answer = planned;
            call.first_ms = ms;
            if phase == ANALYZE {
                seat.sent_nul = carries.nul;
                seat.sent_long = carries.long.is_some();
                task.clean = task
                    .clean
                    .saturating_add(u16::from(planned == Planned::Clean));
                // Only the fleet's agents' failures: another agent at one of their URLs has a
                // name at the platform the fleet does not know, so whether the platform left its
                // analysis out cannot be judged.
                let own = caller.refused.is_none();
                task.failed = task
                    .failed
                    .saturating_add(u16::from(own && planned.failed()));
            }
        }
        let call = &mut seat.calls[phase];
        call.n = call.n.saturating_add(1);
        call.last_ms = ms;
        if carries.nul {
            s.nul_senders.insert(agent_key);
        }
        if let (Some(prefix), true) = (carries.long, first && phase == ANALYZE) {
            s.long_prefixes.insert(seat_key, prefix);
        }
        if carries.long.is_some() {
            s.long_senders.insert(agent_key);
        }
        first
    }

    /// Judges how long the platform held a request whose answer outlasted its timeout.
    fn judge_wait(&self, s: &mut State, wait: &Wait, delivered: &Delivered) {
        let waited = delivered.total.as_secs_f64();
        let ok = delivered.total <= self.limit();
        if !ok {
            if let Some(task) = s.tasks.get_mut(&wait.task) {
                task.stuck = true;
            }
        }
        let expect = self.expectation();
        let who = format!(
            "{} /{} (task {})",
            s.name(wait.agent),
            PHASES[wait.phase],
            s.task_id(wait.task)
        );
        match delivered.outcome {
            // (Within the platform's time, the run's end cut it: see `on_answer`.)
            Outcome::Shutdown => s.gave_up.check(false, || {
                format!("{who}: the platform was still waiting after {waited:.1} s, when the mock stopped ({expect})")
            }),
            Outcome::Hung | Outcome::PeerGone => s.gave_up.check(ok, || {
                format!("{who}: the platform gave up only after {waited:.1} s ({expect})")
            }),
            _ => s.gave_up.check(ok, || {
                format!("{who}: the platform waited {waited:.1} s for the whole answer ({expect})")
            }),
        }
    }

    /// A request whose answer the run's own end cut before the platform's timeout came: not a
    /// giving-up, and its first call's failure is one the platform never saw.
    fn cut(&self, s: &mut State, wait: &Wait, now: Instant) {
        if wait.outlasts {
            let end = s.run_end.as_ref().map_or(now, |e| e.at);
            let words = self.cut_text(
                s,
                (wait.task, wait.agent, wait.phase),
                end.saturating_duration_since(wait.received),
                "hanging",
            );
            s.gave_up_cut.check(false, || words);
        }
        if wait.first {
            if let Some(seat) = s.seats.get_mut(&(wait.task, wait.agent)) {
                seat.calls[wait.phase].first_end = End::Cut;
            }
        }
    }

    fn cut_text(
        &self,
        s: &State,
        (task, agent, phase): (Key, Key, usize),
        open_for: Duration,
        doing: &str,
    ) -> String {
        let end = match &s.run_end {
            Some(end) => end.describe(),
            None => "the fleet stopped".to_string(),
        };
        format!(
            "{}'s /{} (task {}) was still {doing} when {end}, {:.1} s after the platform sent it; the platform's own timeout ({}) had not come",
            s.name(agent),
            PHASES[phase],
            s.task_id(task),
            open_for.as_secs_f64(),
            humantime::format_duration(self.platform_timeout)
        )
    }

    /// platform.gives-up: judged on the answers that outlasted the platform's timeout and
    /// ended (given up on, or held past it); those the run's own end cut before that timeout
    /// came are named, not judged.
    fn gives_up_case(&self, s: &State) -> CaseResult {
        let mut case = s.gave_up.judged(
            "platform.gives-up",
            "deliberation",
            Level::Must,
            &format!(
                "the platform gives up on an agent that does not answer within {}, closing the request's connection",
                self.timeout_words()
            ),
            "Timeouts (the platform waits 120 seconds, configurable, for each endpoint)",
            "answers that outlasted the platform's timeout",
            "no agent held an answer past the platform's timeout: add an agent with the hang behaviour (or slow:DUR beyond the timeout) and state the platform's timeout (platform.timeout, --platform-timeout)",
        );
        note_cut(
            &mut case,
            &s.gave_up_cut,
            "answers meant to outlast the platform's timeout",
        );
        case
    }

    fn expectation(&self) -> String {
        format!("expected to give up within {}", self.timeout_words())
    }

    /// The platform's timeout and the grace allowed past it, in words that cannot be read as
    /// one sum: "its timeout 2m (and 7s of grace)", not "(2m + 7s)" (which reads as 127 s).
    fn timeout_words(&self) -> String {
        format!(
            "its timeout {} (and {} of grace)",
            humantime::format_duration(self.platform_timeout),
            humantime::format_duration(grace(self.platform_timeout))
        )
    }
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
            self.retries_case(s, now),
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

impl Observer {
    /// Answers still held when the verdicts are drawn: a platform still waiting past its limit
    /// broke the rule; one within it is not judged.
    fn settle_waiting(&self, s: &mut State, now: Instant) {
        let limit = self.limit();
        let expect = self.expectation();
        let waits: Vec<Wait> = s.waiting.drain().map(|(_, w)| w).collect();
        for wait in waits.iter().filter(|w| w.outlasts) {
            // Still open, within the platform's time: the run's end cut it, as one that ended
            // with the fleet's shutdown.
            let open = now.saturating_duration_since(wait.received);
            if open <= limit {
                self.cut(s, wait, now);
                continue;
            }
            let who = format!(
                "{} /{} (task {})",
                s.name(wait.agent),
                PHASES[wait.phase],
                s.task_id(wait.task)
            );
            let waited = open.as_secs_f64();
            s.gave_up.check(false, || {
                format!("{who}: the platform was still waiting after {waited:.1} s, when the mock stopped ({expect})")
            });
        }
    }

    /// Whether the platform is done with `task`: the driver's triggers were all answered after
    /// its last request, or it has been idle past the platform's timeout and grace; and no
    /// request of it was cut short by the end of the run or held past the timeout.
    fn finished(&self, s: &State, task: &Task, now: u64) -> bool {
        let idle = self.limit().as_micros() as u64;
        !task.cut
            && !task.stuck
            && (s
                .triggers_answered
                .is_some_and(|at| task.last_request <= at)
                || now.saturating_sub(task.last_activity()) >= idle)
    }

    /// platform.phases-continue: in a finished deliberation with at least two conforming
    /// analyses, every agent whose analysis conformed was called at /challenge, and every agent
    /// called at /challenge that did not time out there was called at /vote.
    fn phases_case(&self, s: &State, now: Instant) -> CaseResult {
        let now = self.micros(now);
        let mut tally = Tally::default();
        // (task id, phase, agent, whether the task reached /vote) of every call that was due
        // and never came.
        let mut missing: Vec<(String, usize, String, bool)> = Vec::new();
        for (&(task_key, agent), seat) in &s.seats {
            let Some(task) = s.tasks.get(&task_key) else {
                continue;
            };
            let done = self.finished(s, task, now);
            let challenge_due = seat.calls[ANALYZE].first_answer == Planned::Clean
                && task.clean >= 2
                && (done || task.phases[VOTE].begun())
                && !s.idless.contains(&(agent, CHALLENGE));
            let vote_due = seat.calls[CHALLENGE].n > 0
                && seat.calls[CHALLENGE].first_answer != Planned::TimedOut
                && done
                && !s.idless.contains(&(agent, VOTE));
            for (due, phase) in [(challenge_due, CHALLENGE), (vote_due, VOTE)] {
                if !due {
                    continue;
                }
                let came = seat.calls[phase].n > 0;
                tally.checked += 1;
                if !came {
                    tally.broken += 1;
                    missing.push((
                        task.id.to_string(),
                        phase,
                        s.name(agent).to_string(),
                        task.phases[VOTE].begun(),
                    ));
                }
            }
        }
        missing.sort();
        tally.examples = missing_examples(&missing);
        let mut case = tally.judged(
            "platform.phases-continue",
            "deliberation",
            Level::Must,
            "every agent whose /analyze answer conformed is called at /challenge, and every agent called at /challenge that did not time out there is called at /vote (in a deliberation with at least two conforming analyses)",
            "Overview (Phase 1 analyze, Phase 2 challenge, Phase 3 vote); Error Handling (other agents continue the deliberation); Timeouts",
            "calls due to agents in finished deliberations",
            "no deliberation with two conforming analyses was seen whole: run one with at least two conforming agents, and let it end (a trigger the platform answers, or the platform's timeout of quiet before the fleet stops)",
        );
        let cut = s.tasks.values().filter(|t| t.cut).count();
        if cut > 0 && case.status == Status::Skip {
            let when = match &s.run_end {
                Some(end) => format!("when {}", end.describe()),
                None => "by the end of the run".to_string(),
            };
            case.message.push_str(&format!(
                " ({} {} cut short {when}, with a request still open)",
                crate::text::count(cut as u64, "tasks"),
                if cut == 1 { "was" } else { "were" }
            ));
        }
        case
    }
}

/// The cases a request refused for its credentials could have been taken for the agent's own
/// failure in (or, for platform.bearer, cannot be told apart in): each says how it was counted.
const BLAMED_BY_REFUSALS: [&str; 3] = [
    "platform.bearer",
    "platform.challenge-no-failed",
    "platform.failed-not-recalled",
];

/// How the requests refused for their credentials were counted, a line per agent and what they
/// carried; None when there were none.
fn refusals_note(s: &State) -> Option<String> {
    let lines: Vec<String> = s
        .refused
        .iter()
        .map(|((agent, no_key), &n)| {
            let with = credentials(agent, *no_key);
            let sent = if *no_key { "no key" } else { "a wrong key" };
            let (what, were, each) = if n == 1 {
                ("a request".to_string(), "was", "")
            } else {
                (format!("{n} requests"), "were", "each ")
            };
            format!(
                "{what} to {agent} with {with} {were} refused 401: {each}counted as a call to another agent registered at {agent}'s URL, not as {agent} failing; the fleet cannot tell this from the platform sending {agent} itself {sent}, which platform.bearer judges"
            )
        })
        .collect();
    (!lines.is_empty()).then(|| lines.join("\n"))
}

/// Up to [`EXAMPLES`] lines, one per task and phase: which agents never got the call, and how
/// the deliberation went on without them.
fn missing_examples(missing: &[(String, usize, String, bool)]) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for group in missing.chunk_by(|a, b| a.0 == b.0 && a.1 == b.1) {
        if lines.len() == EXAMPLES {
            break;
        }
        let (task, phase, went_on) = (&group[0].0, group[0].1, group[0].3);
        let agents: Vec<&str> = group.iter().map(|m| m.2.as_str()).collect();
        let why = match phase {
            CHALLENGE => "their /analyze answers conformed",
            _ => "they were challenged and did not time out",
        };
        let after = match (phase, went_on) {
            (CHALLENGE, true) => "the platform went on to /vote without them".to_string(),
            _ => format!("the deliberation ended after /{}", PHASES[phase - 1]),
        };
        lines.push(format!(
            "task {task}: /{} never came for {} ({why}); {after}",
            PHASES[phase],
            agents.join(", ")
        ));
    }
    lines
}

impl Observer {
    /// platform.failed-not-recalled: an agent whose first answer in a phase failed is excluded from
    /// that phase: one call per task and phase, the count and the times in the message. Judged in
    /// deliberations of two agents or more: a single agent sent one task's exchanges over and over
    /// is agent-tck's probe at work (one task_id per run), not a round table.
    ///
    /// Only a failure the platform saw counts: an answer the run's own end cut (the fleet's
    /// shutdown, before the platform's timeout for a hang) never failed as far as the platform
    /// knows, and whether it would call the agent again is not known; the case names those.
    fn retries_case(&self, s: &State, now: Instant) -> CaseResult {
        let mut tally = Tally::default();
        let mut recalled: Vec<(String, usize, String, Call)> = Vec::new();
        // (seat, phase, call) of each failed first answer the run's end cut.
        let mut cut: Vec<((Key, Key), usize, Call)> = Vec::new();
        for (&(task, agent), seat) in &s.seats {
            if s.tasks.get(&task).is_none_or(|t| t.agents < 2) {
                continue;
            }
            for (phase, call) in seat.calls.iter().enumerate() {
                if !call.first_answer.failed() {
                    continue;
                }
                if call.first_end != End::Ended {
                    cut.push(((task, agent), phase, *call));
                    continue;
                }
                tally.checked += 1;
                if call.n > 1 {
                    tally.broken += 1;
                    recalled.push((s.task_id(task), phase, s.name(agent).to_string(), *call));
                }
            }
        }
        recalled.sort_by(|a, b| (&a.0, a.1, &a.2).cmp(&(&b.0, b.1, &b.2)));
        tally.examples = recalled
        .iter()
        .take(EXAMPLES)
        .map(|(task, phase, agent, call)| {
            let how = match call.first_answer {
                Planned::TimedOut => "timed out",
                _ => "failed",
            };
            format!(
                "{agent} /{} (task {task}): called {}{} times, the first {:.1} s and the last {:.1} s after the fleet started, though its first answer {how}",
                PHASES[*phase],
                call.n,
                if call.n == u8::MAX { "+" } else { "" },
                f64::from(call.first_ms) / 1e3,
                f64::from(call.last_ms) / 1e3,
            )
        })
        .collect();
        let mut case = tally.judged(
        "platform.failed-not-recalled",
        "deliberation",
        Level::Must,
        "an agent whose answer failed in a phase (timed out, errored, malformed) is marked failed for that phase: it is not called again in that phase of the task",
        "Timeouts (marked as failed for that phase); Error Handling (excluded from this phase)",
        "failed answers, each an agent's first in a phase of a task",
        "no agent's answer failed in a deliberation of two agents or more: add an agent with a failing behaviour (hang, http-error, malformed-json) to a fleet and run a deliberation",
    );
        cut.sort_by_cached_key(|(seat, phase, _)| {
            (s.task_id(seat.0), *phase, s.name(seat.1).to_string())
        });
        let mut cuts = Tally::default();
        let end = s.run_end.as_ref().map(|e| self.micros(e.at));
        for (seat, phase, call) in &cut {
            let agent = s.name(seat.1);
            let sent = u64::from(call.first_ms) * 1000;
            let open_for =
                Duration::from_micros(end.unwrap_or_else(|| self.micros(now)).saturating_sub(sent));
            let doing = match call.first_answer {
                Planned::TimedOut => "hanging",
                _ => "being answered",
            };
            cuts.check(false, || {
                format!(
                    "{}, so whether it would call {agent} again is not known",
                    self.cut_text(s, (seat.0, seat.1, *phase), open_for, doing)
                )
            });
        }
        note_cut(&mut case, &cuts, "failed answers");
        case
    }
}

/// The name an other_analyses entry or a key finding gives (empty when none).
fn name_of(item: &Value) -> String {
    item.get("agent_name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string()
}

/// /challenge: never the receiver's own analysis, never a failed agent's; forwarded strings clean.
fn check_challenge(s: &mut State, receiver: &str, task: &str, body: &Value) {
    let Some(others) = body.get("other_analyses").and_then(Value::as_array) else {
        return;
    };
    // One verdict per request (the case counts /challenge requests), naming the first entry
    // that is the receiver's own.
    let own = others.iter().position(|o| name_of(o) == receiver);
    s.own_analysis.check(own.is_none(), || {
        format!(
            "{receiver} got its own analysis in other_analyses[{}] (task {task})",
            own.unwrap_or_default()
        )
    });
    let task_key = key(task);
    // Judged only where an agent failed /analyze: elsewhere there is no one to leave out.
    if s.tasks.get(&task_key).is_some_and(|t| t.failed > 0) {
        let failed: Vec<String> = others
            .iter()
            .enumerate()
            .filter_map(|(i, other)| {
                let named = name_of(other);
                s.seats
                    .get(&(task_key, key(&named)))
                    .is_some_and(|seat| seat.calls[ANALYZE].first_answer.failed())
                    .then(|| format!("other_analyses[{i}] from {named}"))
            })
            .collect();
        s.failed_excluded.check(failed.is_empty(), || {
            format!(
                "{receiver} got {}, whose /analyze failed (task {task})",
                failed.join(", ")
            )
        });
    }
    for (i, other) in others.iter().enumerate() {
        let from = name_of(other);
        let at = Forward {
            task,
            from: &from,
            receiver,
            endpoint: "challenge",
            field: "other_analyses",
            index: i,
        };
        check_forwarded(s, &at, other);
    }
}

/// An item one agent's analysis became in a request to another agent.
struct Forward<'a> {
    task: &'a str,
    /// The agent the item names as its author.
    from: &'a str,
    receiver: &'a str,
    endpoint: &'a str,
    field: &'a str,
    index: usize,
}

/// The strings of an item forwarded from `at.from`'s analysis: no NUL when that analysis held
/// one, none over 50,000 characters when it held such a string. Items from other agents say
/// nothing of sanitization and are not judged.
fn check_forwarded(s: &mut State, at: &Forward<'_>, item: &Value) {
    if at.from == at.receiver || at.from.is_empty() {
        return;
    }
    let from = key(at.from);
    let Some(seat) = s.seats.get_mut(&(key(at.task), from)) else {
        return;
    };
    seat.forwarded = true;
    let (nul, long) = (seat.sent_nul, seat.sent_long);
    let sent_prefix = s.long_prefixes.get(&(key(at.task), from)).copied();
    if !nul && !long {
        return;
    }
    if nul {
        s.nul_sources.insert(from);
    }
    if long {
        s.long_sources.insert(from);
    }
    for (path, text) in strings(item) {
        let place = || {
            format!(
                "{} /{}: {}[{}]{} from {} (task {})",
                at.receiver,
                at.endpoint,
                at.field,
                at.index,
                dotted(&path),
                at.from,
                at.task
            )
        };
        if nul {
            s.nul.check(!text.contains('\0'), || {
                format!("{}: a NUL character", place())
            });
        }
        if long {
            let chars = text.chars().count();
            s.field_length.check(chars <= MAX_FIELD_CHARS, || {
                format!("{}: {}", place(), over_limit(text, chars, sent_prefix))
            });
        }
    }
}

/// What a forwarded string of `chars` characters (over the limit) is: the agent's string
/// forwarded whole, or cut at the limit with a marker appended (its first [`MAX_FIELD_CHARS`]
/// characters are those the agent sent, the rest is not), or simply that many characters.
fn over_limit(text: &str, chars: usize, sent: Option<Long>) -> String {
    let extra = chars - MAX_FIELD_CHARS;
    let Some(sent) = sent else {
        return format!("{chars} characters");
    };
    if crate::text::fnv1a(text) == sent.whole {
        return format!("{chars} characters: the agent's string forwarded whole, not truncated");
    }
    match text.char_indices().nth(MAX_FIELD_CHARS) {
        Some((cut, _)) if sent.prefix == crate::text::fnv1a(&text[..cut]) && extra <= 200 => {
            format!(
                "50,000 characters (the agent's string, cut there) plus a {extra}-character marker {:?}: {chars} in all, over the limit (the marker counts)",
                crate::text::excerpt_str(&text[cut..], 60)
            )
        }
        _ => format!("{chars} characters"),
    }
}

/// A sanitization case (NUL stripping, field truncation): judged on the strings forwarded from
/// agents whose analyses needed it. `[id, title, spec, what the analyses held, the behaviour
/// that sends it]`.
fn sanitized(
    tally: &Tally,
    sources: &HashSet<Key>,
    senders: &HashSet<Key>,
    [id, title, spec, held, behaviour]: [&str; 5],
) -> CaseResult {
    let n = sources.len();
    let what = format!(
        "strings forwarded from {} whose analyses held {held}",
        crate::text::count(n as u64, "agents")
    );
    let unexercised = if senders.is_empty() {
        format!("no agent's analysis held {held}: add an agent with the {behaviour} behaviour and run a deliberation past /analyze")
    } else {
        format!(
            "{} sent {held} in their analyses, and the platform forwarded none of those analyses to another agent: run a deliberation past /analyze in which they take part",
            crate::text::count(senders.len() as u64, "agents")
        )
    };
    let mut case = tally.judged(
        id,
        "sanitization",
        Level::Must,
        title,
        spec,
        &what,
        &unexercised,
    );
    if case.status == Status::Skip {
        case.message = unexercised;
    }
    case
}

fn dotted(path: &str) -> String {
    if path.is_empty() || path.starts_with('[') {
        path.to_string()
    } else {
        format!(".{path}")
    }
}

/// Records canaries (placed by some agent) that arrive in a request to another agent.
fn scan_canaries(s: &mut State, receiver: &str, endpoint: &str, body: &Value) {
    if s.canaries.is_empty() {
        return;
    }
    for (_, text) in strings(body) {
        for canary in injection::find_canaries(text) {
            let Some(placed) = s.canaries.get(&canary) else {
                continue;
            };
            if placed.from == receiver
                || !s
                    .reappeared_seen
                    .insert((canary.clone(), receiver.to_string()))
            {
                continue;
            }
            let placed = placed.clone();
            s.reappeared.push(Reappearance {
                canary,
                payload: placed.payload,
                family: placed.family,
                from: placed.from,
                to: receiver.to_string(),
                endpoint: endpoint.to_string(),
            });
        }
    }
}

/// platform.injection-forwarded: judged on the payloads the platform had a chance to forward
/// (in an analysis it sent another agent) and on any that reappeared.
fn injection_case(s: &State) -> CaseResult {
    let mut case = CaseResult::new(
        "platform.injection-forwarded",
        "sanitization",
        Level::May,
        "prompt-injection payloads sent by one agent are not forwarded verbatim to others",
        "Response Sanitization (scanned for prompt injection patterns)",
    );
    let reappeared: HashSet<&str> = s.reappeared.iter().map(|r| r.canary.as_str()).collect();
    let judged = s
        .canaries
        .iter()
        .filter(|(canary, placed)| {
            reappeared.contains(canary.as_str())
                || placed
                    .analysis
                    .and_then(|seat| s.seats.get(&seat))
                    .is_some_and(|seat| seat.forwarded)
        })
        .count() as u64;
    let evidence = Evidence::new(
        judged,
        "injection payloads in analyses forwarded to other agents",
    );
    if s.reappeared.is_empty() {
        let sent = s.canaries.len();
        case.pass_noting(
            evidence,
            format!("{} in analyses the platform forwarded; none reappeared in a request to another agent", crate::text::count(judged, "payloads")),
            || if sent == 0 {
                "no agent of the fleet sent an injection payload: add an agent with the injection behaviour and run a deliberation past /analyze".into()
            } else {
                format!("{} sent, but the platform forwarded no analysis that carried one (no /challenge or /vote named the agents that sent them): run a deliberation past /analyze in which they take part", crate::text::count(sent as u64, "payloads"))
            },
        );
        return case;
    }
    let mut families: Vec<&str> = s.reappeared.iter().map(|r| r.family.as_str()).collect();
    families.sort();
    families.dedup();
    let mut message = format!(
        "forwarded unsanitized: {} of {} reappeared in requests to other agents (families: {})",
        reappeared.len(),
        crate::text::count(s.canaries.len() as u64, "payloads"),
        families.join(", ")
    );
    for r in s.reappeared.iter().take(10) {
        message.push_str(&format!(
            "\n  {} ({}, {}): from {} to {} in /{}",
            r.canary, r.payload, r.family, r.from, r.to, r.endpoint
        ));
    }
    case.fail_on(evidence, message);
    case
}

/// What the platform adds between phases: from the end of its wait for one phase's answers to
/// its first request of the next phase, per task (median and max over tasks).
fn latency_case(s: &State) -> CaseResult {
    let mut case = CaseResult::new(
        "platform.phase-latency",
        "deliberation",
        Level::May,
        "latency the platform adds between phases (from the last answer it waited for to its next request)",
        "Timeouts (informational)",
    );
    let mut lines = Vec::new();
    let mut measured = 0;
    // Each phase to the next one the task reached: a platform that skips /challenge (or whose
    // challenges all failed) goes from /analyze to /vote, and that is a transition too.
    for (i, j) in [(ANALYZE, CHALLENGE), (CHALLENGE, VOTE), (ANALYZE, VOTE)] {
        let (from, to) = (PHASES[i], PHASES[j]);
        let mut gaps: Vec<f64> = s
            .tasks
            .values()
            .filter(|t| {
                t.phases[i].begun()
                    && t.phases[j].begun()
                    && (i + 1..j).all(|between| !t.phases[between].begun())
            })
            .map(|t| {
                t.phases[j]
                    .first_request
                    .saturating_sub(t.phases[i].wait_ended) as f64
                    / 1e3
            })
            .collect();
        if gaps.is_empty() {
            continue;
        }
        measured += gaps.len() as u64;
        gaps.sort_by(f64::total_cmp);
        lines.push(format!(
            "{from} → {to}: median {:.1} ms, max {:.1} ms over {}",
            gaps[gaps.len() / 2],
            gaps[gaps.len() - 1],
            crate::text::count(gaps.len() as u64, "tasks")
        ));
    }
    case.pass_noting(
        Evidence::new(measured, "phase transitions"),
        lines.join("\n"),
        || "no task reached two of the phases (/analyze, /challenge, /vote): run a deliberation past /analyze (at least two agents with usable analyses)".into(),
    );
    case
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mock::Body;
    use serde_json::json;

    fn challenge(observer: &Observer, receiver: &str, others: &[&str]) {
        let body = json!({
            "task_id": "t",
            "content": "c",
            "other_analyses": others.iter().map(|n| json!({"agent_name": n, "domain": "d", "observations": []})).collect::<Vec<_>>(),
        });
        observer.on_request(&Seen {
            seq: 0,
            answer: b"{}",
            agent: receiver,
            expects_key: false,
            endpoint: "challenge",
            auth: AuthSeen::None,
            key_print: 0,
            task: "t",
            body: &Body::new(body.to_string().as_bytes()),
            schema_findings: &[],
            decision: &Decision::default(),
            at: Instant::now(),
        });
    }

    /// The case counts /challenge requests, as it says: one verdict per request, however many
    /// entries its other_analyses has.
    #[test]
    fn challenge_not_own_counts_requests() {
        let observer = Observer::new(Duration::from_secs(120));
        challenge(&observer, "a", &["b", "a", "c"]);
        challenge(&observer, "b", &["a", "c"]);
        let cases = observer.cases(Served::Fleet);
        let case = cases
            .iter()
            .find(|c| c.id == "platform.challenge-not-own")
            .unwrap();
        assert_eq!(case.status, Status::Fail);
        assert!(
            case.message
                .starts_with("1 of 2 /challenge requests break the rule, e.g.\n  a got its own analysis in other_analyses[1] (task t)"),
            "{}",
            case.message
        );
    }

    #[test]
    fn a_nul_escape_is_told_from_an_escaped_backslash() {
        assert!(has_nul_escape(br#"{"a":"x\u0000y"}"#));
        assert!(has_nul_escape(br#"{"a":"\\\u0000"}"#));
        assert!(!has_nul_escape(br#"{"a":"\\u0000"}"#));
        assert!(!has_nul_escape(br#"{"a":"u0000"}"#));
    }

    #[test]
    fn task_ids_are_kept_short_and_whole_characters() {
        assert_eq!(ShortId::new("a1b2c3").to_string(), "a1b2c3");
        let uuid = "3f2a9c1e-7b4d-4e8f-9a0b-1c2d3e4f5a6b";
        assert_eq!(ShortId::new(uuid).to_string(), "3f2a9c1e-7b4d-4e8f-9a0…");
        assert_eq!(
            ShortId::new(&"é".repeat(20)).to_string(),
            format!("{}…", "é".repeat(11))
        );
    }

    #[test]
    fn what_an_answer_planned_is_judged_against_the_timeout() {
        let timeout = Duration::from_secs(1);
        let plan = |applied: &[&str], ttfb_ms, unusable: Option<&str>| {
            let decision = Decision {
                applied: applied.iter().map(|s| s.to_string()).collect(),
                ttfb_ms,
                unusable: unusable.map(str::to_string),
                ..Decision::default()
            };
            Planned::of(&decision, timeout)
        };
        assert_eq!(plan(&[], 0, None), Planned::Clean);
        assert_eq!(plan(&["slow:10ms"], 10, None), Planned::Usable);
        assert_eq!(plan(&["slow:2s"], 2000, None), Planned::TimedOut);
        assert_eq!(plan(&["hang"], 0, Some("never answers")), Planned::TimedOut);
        assert_eq!(
            plan(&["http-error"], 0, Some("answered 500")),
            Planned::Failed
        );
    }

    /// A phase request from the platform to `agent` in task `t`, answered with `answer` planned
    /// by the behaviours `applied`.
    fn request(
        observer: &Observer,
        agent: &str,
        endpoint: &str,
        body: Value,
        answer: &[u8],
        applied: &[&str],
    ) {
        let decision = Decision {
            applied: applied.iter().map(|s| s.to_string()).collect(),
            ..Decision::default()
        };
        observer.on_request(&Seen {
            seq: 0,
            answer,
            agent,
            expects_key: false,
            endpoint,
            auth: AuthSeen::None,
            key_print: 0,
            task: "t",
            body: &Body::new(body.to_string().as_bytes()),
            schema_findings: &[],
            decision: &decision,
            at: Instant::now(),
        });
    }

    fn case(observer: &Observer, id: &str) -> CaseResult {
        observer
            .cases(Served::Fleet)
            .into_iter()
            .find(|c| c.id == id)
            .unwrap_or_else(|| panic!("no {id}"))
    }

    /// A platform that cuts an over-long string at 50,000 characters and appends its marker
    /// (" [truncated]", 12 characters) fails, told as that rather than as "50012 characters";
    /// one that cuts it at 50,000 passes; one that forwards it whole is told its length.
    #[test]
    fn a_truncation_marker_past_the_limit_is_named_as_one() {
        let long = format!("[fact] {}", "x".repeat(MAX_FIELD_CHARS));
        let analysis =
            json!({"agent_name": "big", "domain": "d", "observations": [{"evidence": long}]});
        let forwarded = |evidence: &str| {
            let observer = Observer::new(Duration::from_secs(120));
            request(
                &observer,
                "big",
                "analyze",
                json!({"task_id": "t"}),
                analysis.to_string().as_bytes(),
                &["oversized-field"],
            );
            let mut item = analysis.clone();
            item["observations"][0]["evidence"] = json!(evidence);
            request(
                &observer,
                "other",
                "challenge",
                json!({"task_id": "t", "other_analyses": [item]}),
                b"{}",
                &[],
            );
            case(&observer, "platform.field-truncated")
        };
        let cut: String = long.chars().take(MAX_FIELD_CHARS).collect();
        let marked = forwarded(&format!("{cut} [truncated]"));
        assert_eq!(marked.status, Status::Fail, "{}", marked.message);
        assert!(
            marked.message.contains(r#"other /challenge: other_analyses[0].observations[0].evidence from big (task t): 50,000 characters (the agent's string, cut there) plus a 12-character marker " [truncated]": 50012 in all, over the limit (the marker counts)"#),
            "{}",
            marked.message
        );
        let exact = forwarded(&cut);
        assert_eq!(exact.status, Status::Pass, "{}", exact.message);
        let whole = forwarded(&long);
        assert_eq!(whole.status, Status::Fail, "{}", whole.message);
        assert!(
            whole.message.contains("from big (task t): 50007 characters: the agent's string forwarded whole, not truncated"),
            "{}",
            whole.message
        );
    }

    /// /analyze then /vote, no /challenge (a platform that goes straight to the vote): one
    /// transition measured, not "no task reached two phases".
    #[test]
    fn phase_latency_counts_any_two_phases_a_task_reached() {
        let observer = Observer::new(Duration::from_secs(120));
        request(
            &observer,
            "a",
            "analyze",
            json!({"task_id": "t"}),
            b"{}",
            &[],
        );
        let skipped = case(&observer, "platform.phase-latency");
        assert_eq!(skipped.status, Status::Skip, "{}", skipped.message);
        assert!(
            skipped
                .message
                .starts_with("no task reached two of the phases (/analyze, /challenge, /vote)"),
            "{}",
            skipped.message
        );
        request(&observer, "a", "vote", json!({"task_id": "t"}), b"{}", &[]);
        let latency = case(&observer, "platform.phase-latency");
        assert_eq!(latency.status, Status::Pass, "{}", latency.message);
        assert!(
            latency.message.starts_with("analyze → vote: median ")
                && latency.message.ends_with(" over 1 task")
                && !latency.message.contains("challenge"),
            "{}",
            latency.message
        );
        // With /challenge between them, /analyze → /vote is not measured over it.
        request(
            &observer,
            "a",
            "challenge",
            json!({"task_id": "t"}),
            b"{}",
            &[],
        );
        let latency = case(&observer, "platform.phase-latency");
        assert!(
            !latency.message.contains("analyze → vote")
                && latency.message.contains("analyze → challenge")
                && latency.message.contains("challenge → vote"),
            "{}",
            latency.message
        );
    }

    /// A request to `agent` in task t carrying `auth` (its key fingerprinted `print`), answered
    /// `status` at once (401: the fleet's refusal for the credentials; 500: an error the agent's
    /// behaviour planned), the answer delivered whole. `body`: the request's.
    fn answered(
        observer: &Observer,
        seq: u64,
        (agent, endpoint, body): (&str, &str, Value),
        (auth, print): (AuthSeen, u64),
        status: u16,
    ) {
        let decision = Decision {
            status,
            unusable: match status {
                200 => None,
                401 => Some("refused: 401 wrong API key".into()),
                _ => Some(format!("answered {status}")),
            },
            applied: if status == 500 {
                vec!["http-error".into()]
            } else {
                Vec::new()
            },
            ..Decision::default()
        };
        let at = Instant::now();
        observer.on_request(&Seen {
            seq,
            answer: b"{}",
            agent,
            expects_key: auth != AuthSeen::None,
            endpoint,
            auth,
            key_print: print,
            task: "t",
            body: &Body::new(body.to_string().as_bytes()),
            schema_findings: &[],
            decision: &decision,
            at,
        });
        observer.on_answer(&Answered {
            seq,
            agent,
            endpoint,
            task: "t",
            received: at,
            delivered: &Delivered {
                outcome: Outcome::Complete,
                bytes: 2,
                ttfb: Some(Duration::ZERO),
                total: Duration::ZERO,
            },
            ended: None,
            at,
        });
    }

    /// Two impostors at alpha's URL, each with its own wrong key, called beside alpha (with its
    /// key) in either order: their refusals are not alpha failing, so gamma's getting alpha's
    /// analysis breaks no rule, and alpha was called once; the impostors count as agents that
    /// failed once each and were not called again.
    #[test]
    fn a_refusal_for_credentials_is_another_callers_whichever_call_came_first() {
        let analyze = |agent| (agent, "analyze", json!({"task_id": "t"}));
        let impostor = |n| (AuthSeen::Wrong, n);
        for alpha_first in [false, true] {
            let observer = Observer::new(Duration::from_secs(120));
            answered(&observer, 1, analyze("broken"), (AuthSeen::None, 0), 500);
            answered(&observer, 2, analyze("gamma"), (AuthSeen::None, 0), 200);
            let order = if alpha_first { [4, 3, 5] } else { [3, 4, 5] };
            answered(&observer, order[0], analyze("alpha"), impostor(1), 401);
            answered(
                &observer,
                order[1],
                analyze("alpha"),
                (AuthSeen::Ok, 7),
                200,
            );
            answered(&observer, order[2], analyze("alpha"), impostor(2), 401);
            let others = json!({"task_id": "t", "other_analyses": [{"agent_name": "alpha", "domain": "d", "observations": []}]});
            answered(
                &observer,
                6,
                ("gamma", "challenge", others),
                (AuthSeen::None, 0),
                200,
            );
            let no_failed = case(&observer, "platform.challenge-no-failed");
            assert_eq!(no_failed.status, Status::Pass, "{}", no_failed.message);
            assert!(
                no_failed.message.ends_with("2 requests to alpha with a key that is not alpha's were refused 401: each counted as a call to another agent registered at alpha's URL, not as alpha failing; the fleet cannot tell this from the platform sending alpha itself a wrong key, which platform.bearer judges"),
                "{}",
                no_failed.message
            );
            let recalled = case(&observer, "platform.failed-not-recalled");
            assert_eq!(recalled.status, Status::Pass, "{}", recalled.message);
            assert_eq!(
                recalled.evidence.map(|e| e.judged),
                Some(3),
                "broken and the two impostors"
            );
        }
    }

    /// A platform that calls one impostor (one wrong key) twice in a phase calls a failed agent
    /// again: it breaks the rule, the impostor named as what it is.
    #[test]
    fn a_caller_refused_twice_in_a_phase_was_called_again() {
        let observer = Observer::new(Duration::from_secs(120));
        let analyze = || ("alpha", "analyze", json!({"task_id": "t"}));
        answered(
            &observer,
            1,
            ("gamma", "analyze", json!({"task_id": "t"})),
            (AuthSeen::None, 0),
            200,
        );
        answered(&observer, 2, analyze(), (AuthSeen::Wrong, 1), 401);
        answered(&observer, 3, analyze(), (AuthSeen::Wrong, 1), 401);
        let recalled = case(&observer, "platform.failed-not-recalled");
        assert_eq!(recalled.status, Status::Fail, "{}", recalled.message);
        assert!(
            recalled.message.contains("\n  another agent registered at alpha's URL (a key that is not alpha's) /analyze (task t): called 2 times"),
            "{}",
            recalled.message
        );
    }

    /// The timeout and its grace are told apart, never as a sum: "(2m + 7s)" read as 127 s.
    #[test]
    fn the_timeout_and_its_grace_read_as_two_things() {
        let observer = Observer::new(Duration::from_secs(120));
        let gives_up = case(&observer, "platform.gives-up");
        assert_eq!(
            gives_up.title,
            format!(
                "the platform gives up on an agent that does not answer within its timeout 2m (and {} of grace), closing the request's connection",
                humantime::format_duration(grace(Duration::from_secs(120)))
            )
        );
        assert!(!gives_up.title.contains(" + "), "{}", gives_up.title);
        assert!(observer
            .expectation()
            .starts_with("expected to give up within its timeout 2m (and "));
    }

    /// A fleet without keys gives platform.bearer nothing to judge: the skip names the fleet
    /// file's field as the file takes it (`api_key:`; `key:` is refused as unknown).
    #[test]
    fn the_bearer_skip_names_the_field_the_fleet_file_takes() {
        let observer = Observer::new(Duration::from_secs(120));
        request(
            &observer,
            "a",
            "analyze",
            json!({"task_id": "t"}),
            b"{}",
            &[],
        );
        let bearer = case(&observer, "platform.bearer");
        assert_eq!(bearer.status, Status::Skip, "{}", bearer.message);
        assert!(
            bearer.message.contains("give an agent a key (`api_key: KEY` on an agent of the fleet file; `mock agent --api-key KEY`)"),
            "{}",
            bearer.message
        );
        // Followed, the hint loads; the old one (`key:`) did not.
        let with = |field: &str| {
            crate::mock::fleet::FleetFile::parse(
                "f.yaml",
                &format!("agents:\n  - {{ name: a, {field}: k }}\n"),
            )
        };
        assert!(with("api_key").is_ok());
        assert!(with("key").is_err());
    }

    /// With no request, every case is a skip that says why: none is left to the report model's
    /// fallbacks.
    #[test]
    fn with_nothing_seen_every_case_says_why_it_was_not_judged() {
        let observer = Observer::new(Duration::from_secs(120));
        for mut case in observer.cases(Served::Fleet) {
            assert_eq!(case.status, Status::Skip, "{}", case.id);
            case.settle();
            assert!(
                !case.message.starts_with(crate::report::NO_REASON)
                    && case.message.contains("no request reached the fleet"),
                "{}: {}",
                case.id,
                case.message
            );
        }
    }
}
