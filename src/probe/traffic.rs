//! The probe's cases judging answers the kit did not ask for: a real agent's answers to a real
//! platform, seen by `agent-tck proxy` or read back from its recording by `agent-tck judge`.
//!
//! The rules are the suite's, not copies: a suite marks the exchange that stands for the
//! platform's requests to a method and path (`traffic: true`), and each real answer there is
//! judged by that exchange's cases, settled by the probe's own [`settle_checks`] and held back by
//! the probe's own [`unmet_need`], one answer at a time. A case judges live traffic when
//!
//! - its exchange is a traffic one, or the case says `traffic: true` itself (a rule on any answer
//!   to its exchange's method and path, which the probe provokes with a request of its own), or it
//!   has no exchange and every exchange its checks read is a traffic one (`agent.name-consistent`,
//!   judged on each answer with the agent's latest answers to the others);
//! - it needs no `--api-key`, no connection of its own (`reachable`) and no deliberate request
//!   (`refused`): those are the probe's alone.
//!
//! A need on a case that is not judged in traffic is met there (the answer came, so the agent
//! was reached); a need on one that is holds the case back on each answer where the needed case
//! did not pass (or, for `needs_answer:`, left no answer to read), and that answer's failure is
//! counted once, by the needed case. Each answer's time is judged too: by the suite's case whose
//! rule judges latency if it has one (execute_task's `within_timeout`), else by a case of the
//! judge's own, [`LATENCY_ID`].
//!
//! Memory is bounded whatever the traffic: per agent and case, counters and at most
//! [`EXAMPLES`] failures; per agent and traffic exchange, the latest answer only (kept whole
//! only for the exchanges a case across exchanges reads).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use super::checks::Check;
use super::exchange::AuthMode;
use super::outcome::{Outcome, Sent};
use super::plugin::Ctx;
use super::runner::{settle_checks, unmet_need, Settled};
use super::suite::{CaseSpec, Requirement};
use super::Suite;
use crate::report::{CaseResult, Evidence, Level, Status};
use crate::text::{count, excerpt_str};
use crate::transport::http::{Error, Response};
use crate::transport::liveness::offset;
use crate::units::format_duration;

/// The judge's own latency case, for a suite with no case whose rule judges time.
pub const LATENCY_ID: &str = "agent.latency";
/// `agent.latency`'s title.
pub const LATENCY_TITLE: &str = "each answer came within --timeout";
const LATENCY_SPEC: &str = "Timeouts";

/// Failures kept per agent and case, as examples for the message.
pub const EXAMPLES: usize = 3;

/// The bounds answers are judged under (the probe's flags of the same names).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TrafficLimits {
    /// `--max-body`: an answer's body past it breaks `max_body`.
    pub max_body: usize,
    /// `--max-field`: a string past it breaks `max_field`.
    pub max_field: usize,
    /// `--timeout`: an answer slower than it (or none within it) breaks the latency case.
    pub timeout: Duration,
    /// Whether the answers carry HTTP header fields (the agents speak HTTP): cases that read
    /// them (a Content-Type) are judged only then.
    pub labelled: bool,
}

impl Default for TrafficLimits {
    /// As the probe's defaults.
    fn default() -> TrafficLimits {
        TrafficLimits {
            max_body: super::runner::DEFAULT_MAX_BODY,
            max_field: super::runner::DEFAULT_MAX_FIELD,
            timeout: super::runner::DEFAULT_TIMEOUT,
            labelled: true,
        }
    }
}

/// One answer of a real agent to a real request.
pub struct LiveAnswer<'a> {
    /// The agent's name (as the run knows it).
    pub agent: &'a str,
    pub method: &'a str,
    /// The endpoint's path as the suite writes it: `/analyze`.
    pub path: &'a str,
    /// The body the platform sent (read as JSON only if a case asks).
    pub request: Sent,
    /// The request's id (the member its protocol names: a round table's task), when it has
    /// one: to find the answer again in the platform's logs.
    pub task: Option<&'a str>,
    /// What came back, or why nothing did.
    pub result: Result<Response, Error>,
    /// The answer's body as a JSON object, when the caller parsed it already (the proxy does,
    /// for its faults): not parsed again.
    pub answer_json: Option<crate::probe::outcome::Parsed>,
    /// When the request came, since the run started.
    pub at: Duration,
    /// How long the agent took to answer (or was waited for).
    pub elapsed: Duration,
}

/// A suite case judged in live traffic.
struct LiveCase {
    /// Its place in the suite.
    index: usize,
    /// The traffic exchange whose answers it judges (None: a case across exchanges, judged on
    /// each answer to any exchange it reads).
    on: Option<String>,
    /// The exchanges its checks read besides its own (all of them traffic ones).
    reads: Vec<String>,
    /// A case of no exchange marked `traffic: true`: judged on each answer to any traffic
    /// exchange, as that answer's own.
    every: bool,
    /// Its checks hold of a run once one answer holds them ([`Check::once_in_a_run`]).
    once: bool,
    /// The cases it needs (`needs:`, `needs_answer:`) that are judged in traffic too, with
    /// their live positions: looked up on every answer, in a list this short by name.
    live_needs: Vec<(String, usize)>,
}

impl LiveCase {
    /// Whether an answer to traffic exchange `exchange` is judged by this case.
    fn judges(&self, exchange: &str) -> bool {
        if self.every {
            return true;
        }
        match &self.on {
            Some(on) => on == exchange,
            None => self.reads.iter().any(|r| r == exchange),
        }
    }
}

/// A traffic exchange: the one that stands for the platform's requests to its method and path.
/// The judge looks an answer's up once, and keeps an agent's latest answers by its position.
struct Slot {
    name: String,
    method: String,
    path: String,
    /// The live cases that judge its answers, in judging order (positions in `live`).
    cases: Vec<usize>,
    /// Whether one of them reads other exchanges' answers: only then are the agent's latest
    /// answers gathered for an answer here.
    reads_others: bool,
    /// Whether a case across exchanges reads its answers: then the latest is kept whole.
    kept: bool,
}

/// What one answer did to one case.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Step {
    Held,
    Broken,
    /// Not judged on that answer (why is told beside it).
    Unjudged,
}

impl Step {
    /// As the needs read it ([`unmet_need`]).
    fn status(&self) -> Status {
        match self {
            Step::Held => Status::Pass,
            Step::Broken => Status::Fail,
            Step::Unjudged => Status::Skip,
        }
    }
}

/// A failure, as the message shows it.
#[derive(Debug, Clone)]
struct Example {
    at: Duration,
    path: String,
    task: Option<String>,
    message: String,
}

/// One case's verdicts on one agent's answers.
#[derive(Debug, Default, Clone)]
struct Tally {
    /// Answers judged (held or broken).
    judged: u64,
    failed: u64,
    /// Answers it was not judged on, and why not, at the latest (what holds it back now).
    unjudged: u64,
    last_unjudged: Option<String>,
    /// The first failures (at most [`EXAMPLES`]).
    examples: Vec<Example>,
    /// What the first answer that held it said (for a case that holds once in a run).
    first_held: Option<String>,
}

/// The latest answer of an agent to one traffic exchange.
struct Latest {
    /// Kept only for the exchanges a case across exchanges reads.
    outcome: Option<Arc<Outcome>>,
    /// Why it cannot be read (None: it can).
    unreadable: Option<String>,
}

/// What one answer is judged against: the agent's state as it was when the answer came.
struct Before {
    /// Per live case, its step on the latest answer it was considered on.
    last: Vec<Option<Step>>,
    /// By traffic exchange (its slot): None when no answer came through there, else why its
    /// latest answer cannot be read (None: it can).
    unreadable: Vec<Option<Option<String>>>,
    /// The latest answers the cases across exchanges read, this one among them (empty when no
    /// case judging this answer reads another exchange's).
    exchanges: HashMap<String, Arc<Outcome>>,
}

/// What the judge holds of one agent.
#[derive(Default)]
struct AgentState {
    /// Per live case, then the latency case.
    tallies: Vec<Tally>,
    /// Per live case, its verdict on the latest answer it was considered on (for the needs).
    last: Vec<Option<Step>>,
    /// By traffic exchange (its slot): None until an answer came through there.
    latest: Vec<Option<Latest>>,
    /// Answers to a traffic exchange.
    judged_answers: u64,
    /// Answers to a method and path that has none.
    unjudged_answers: u64,
    /// Per case that judges only answers to bent requests ([`TrafficJudge::judge_bent`]).
    bent: Vec<Tally>,
    /// Whether the proxy bends some of its requests: those cases are reported for it.
    bending: bool,
}

/// An agent seen with no answer to a traffic exchange: none of its answers were judged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unjudged {
    pub agent: String,
    /// Its answers, to methods and paths the suite has no traffic exchange for.
    pub answers: u64,
}

/// Judges live answers by the suite's cases; shared by every connection of a run (`&self`).
pub struct TrafficJudge {
    suite: Suite,
    limits: TrafficLimits,
    /// The live cases, in the order an answer is judged: dependency layers, each in suite order.
    live: Vec<LiveCase>,
    /// The live position of each live case, by its place in the suite.
    by_index: HashMap<usize, usize>,
    /// The suite's case that judges time, if it has one (its place in the suite).
    latency: Option<usize>,
    /// The traffic exchanges, each with the live cases that judge its answers.
    slots: Vec<Slot>,
    /// The cases (their place in the suite) that judge only answers to bent requests: marked
    /// `bent:` and not judged on ordinary answers.
    bent_only: Vec<usize>,
    agents: Mutex<BTreeMap<String, Arc<Mutex<AgentState>>>>,
}

/// A lock that a panic elsewhere did not make useless: the counters stay readable.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl TrafficJudge {
    pub fn new(suite: Suite, limits: TrafficLimits) -> TrafficJudge {
        let protocol = suite.protocol;
        let ids = suite.ids();
        // Layers cannot fail on a loaded suite (it was checked for cycles); one that did would
        // judge in suite order.
        let order: Vec<String> = suite
            .layers(&ids)
            .map(|layers| layers.into_iter().flatten().collect())
            .unwrap_or(ids);
        let mut live: Vec<LiveCase> = order
            .iter()
            .filter_map(|id| {
                let index = suite.cases().iter().position(|c| &c.id.value == id)?;
                live_case(&suite, index, limits.labelled)
            })
            .collect();
        let by_index: HashMap<usize, usize> =
            live.iter().enumerate().map(|(i, c)| (c.index, i)).collect();
        let by_id: HashMap<String, usize> = live
            .iter()
            .enumerate()
            .map(|(i, c)| (suite.cases()[c.index].id.value.clone(), i))
            .collect();
        for case in &mut live {
            let spec = &suite.cases()[case.index];
            case.live_needs = spec
                .needs
                .iter()
                .chain(&spec.needs_answer)
                .filter_map(|need| Some((need.clone(), *by_id.get(need)?)))
                .collect();
        }
        let latency = (0..suite.cases().len()).find(|i| {
            !by_index.contains_key(i)
                && suite.cases()[*i]
                    .checks
                    .iter()
                    .any(|k| k.judges_latency(protocol))
        });
        let slots = suite
            .file
            .exchanges
            .iter()
            .filter(|(_, x)| x.traffic)
            .map(|(name, x)| {
                let cases: Vec<usize> = (0..live.len()).filter(|&i| live[i].judges(name)).collect();
                Slot {
                    reads_others: cases.iter().any(|&i| !live[i].reads.is_empty()),
                    kept: live.iter().any(|c| c.reads.contains(name)),
                    name: name.clone(),
                    method: x.method.clone(),
                    path: x.path.clone(),
                    cases,
                }
            })
            .collect();
        let bent_only = (0..suite.cases().len())
            .filter(|i| !suite.cases()[*i].bent.is_empty() && !by_index.contains_key(i))
            .collect();
        TrafficJudge {
            suite,
            limits,
            live,
            by_index,
            latency,
            slots,
            bent_only,
            agents: Mutex::new(BTreeMap::new()),
        }
    }

    /// `--timeout`: how long an agent may take to answer.
    pub fn timeout(&self) -> Duration {
        self.limits.timeout
    }

    /// An agent the run has: it is reported (its cases skipped, saying so) even when no answer
    /// of its came through.
    pub fn expect(&self, agent: &str) {
        self.agent(agent);
    }

    fn agent(&self, name: &str) -> Arc<Mutex<AgentState>> {
        let mut agents = lock(&self.agents);
        if let Some(a) = agents.get(name) {
            return Arc::clone(a);
        }
        let state = Arc::new(Mutex::new(AgentState {
            tallies: vec![Tally::default(); self.live.len() + 1],
            last: vec![None; self.live.len()],
            bent: vec![Tally::default(); self.bent_only.len()],
            latest: (0..self.slots.len()).map(|_| None).collect(),
            ..AgentState::default()
        }));
        agents.insert(name.to_string(), Arc::clone(&state));
        state
    }

    /// Judges one answer by the cases of its method and path's traffic exchange (none: it is
    /// counted as unjudged), then its time.
    pub fn judge(&self, answer: LiveAnswer<'_>) {
        let state = self.agent(answer.agent);
        let Some(at) = self.slot(answer.method, answer.path) else {
            lock(&state).unjudged_answers += 1;
            return;
        };
        let slot = &self.slots[at];
        let latency = latency_step(&answer.result, answer.elapsed, self.limits.timeout);
        let outcome = Arc::new(Outcome::parsed(
            AuthMode::Default,
            answer.request,
            answer.result,
            answer.answer_json,
        ));
        let unreadable = outcome.unreadable(self.limits.max_body);
        // The agent's state is held only to read what the cases need and, after, to record
        // their steps: judging under the lock put every answer of an agent in one queue, and
        // the waits on it were a tenth of the proxy's CPU under load. Answers that come at
        // once are judged side by side, each on what the agent had answered before it.
        let (before, replaced) = {
            let mut state = lock(&state);
            state.judged_answers += 1;
            let replaced = state.latest[at].replace(Latest {
                outcome: slot.kept.then(|| Arc::clone(&outcome)),
                unreadable,
            });
            let exchanges = if slot.reads_others {
                self.slots
                    .iter()
                    .zip(&state.latest)
                    .filter_map(|(s, l)| {
                        Some((s.name.clone(), Arc::clone(l.as_ref()?.outcome.as_ref()?)))
                    })
                    .chain([(slot.name.clone(), Arc::clone(&outcome))])
                    .collect()
            } else {
                HashMap::new()
            };
            let before = Before {
                last: state.last.clone(),
                unreadable: state
                    .latest
                    .iter()
                    .map(|l| l.as_ref().map(|l| l.unreadable.clone()))
                    .collect(),
                exchanges,
            };
            (before, replaced)
        };
        // The agent's previous answer there is freed outside the lock.
        drop(replaced);
        let Before {
            mut last,
            unreadable,
            exchanges,
        } = before;
        let refused = refusal(&outcome.result);
        let mut steps = Vec::with_capacity(slot.cases.len());
        for &i in &slot.cases {
            let case = &self.live[i];
            let spec = &self.suite.cases()[case.index];
            let (step, message) = match &refused {
                Some(why) => (Step::Unjudged, why.clone()),
                None => self.judge_case(spec, case, &outcome, &exchanges, &last, &unreadable),
            };
            last[i] = Some(step.clone());
            steps.push((i, step, message));
        }
        let seen = Seen {
            at: answer.at,
            path: answer.path,
            task: answer.task,
        };
        let mut state = lock(&state);
        for (i, step, message) in steps {
            record(&mut state.tallies[i], &step, message, &seen);
            state.last[i] = Some(step);
        }
        if let Some((step, message)) = latency {
            let i = self.live.len();
            record(&mut state.tallies[i], &step, message, &seen);
        }
    }

    /// The traffic exchange (its slot) that stands for requests to `method` and `path`.
    fn slot(&self, method: &str, path: &str) -> Option<usize> {
        self.slots
            .iter()
            .position(|s| s.path == path && s.method.eq_ignore_ascii_case(method))
    }

    /// An answer passed on unjudged (`why`): counted, unjudged, in each case that would have
    /// judged it; its latency, known without reading it, judged.
    pub fn pass_over(&self, answer: LiveAnswer<'_>, why: &str) {
        let state = self.agent(answer.agent);
        let mut state = lock(&state);
        let Some(at) = self.slot(answer.method, answer.path) else {
            state.unjudged_answers += 1;
            return;
        };
        state.judged_answers += 1;
        let seen = Seen {
            at: answer.at,
            path: answer.path,
            task: answer.task,
        };
        for &i in &self.slots[at].cases {
            record(
                &mut state.tallies[i],
                &Step::Unjudged,
                why.to_string(),
                &seen,
            );
        }
        if let Some((step, message)) =
            latency_step(&answer.result, answer.elapsed, self.limits.timeout)
        {
            let i = self.live.len();
            record(&mut state.tallies[i], &step, message, &seen);
        }
    }

    /// An agent whose requests the proxy bends (some of them): the cases that judge answers to
    /// bent requests are reported for it, skipped when none came.
    pub fn expect_bent(&self, agent: &str) {
        lock(&self.agent(agent)).bending = true;
    }

    /// Judges the answer to a request the proxy bent (`fault`: the behaviour's name) by the
    /// cases marked `bent: [fault]` at its method and path, and by no other: the rules of an
    /// answer to a valid request do not hold for a request the proxy broke. Their needs are not
    /// asked (the request was not the platform's: nothing the agent did before bears on it).
    /// With `refusal_holds` (a NUL, an injection: stripped or refused), a 4xx holds and another
    /// status that is not a 2xx is a failure on the input, whatever the case's checks say.
    /// Returns whether a case judged it (false: the suite marks none for that fault there).
    pub fn judge_bent(&self, answer: LiveAnswer<'_>, fault: &str, refusal_holds: bool) -> bool {
        let state = self.agent(answer.agent);
        let mut state = lock(&state);
        state.bending = true;
        let seen = Seen {
            at: answer.at,
            path: answer.path,
            task: answer.task,
        };
        let exchanges = &self.suite.file.exchanges;
        let judging: Vec<usize> = (0..self.suite.cases().len())
            .filter(|&i| {
                let spec = &self.suite.cases()[i];
                spec.bent.iter().any(|b| b == fault)
                    && spec
                        .exchange
                        .as_ref()
                        .and_then(|x| exchanges.get(x))
                        .is_some_and(|x| {
                            x.method.eq_ignore_ascii_case(answer.method) && x.path == answer.path
                        })
            })
            .collect();
        // The ordinary cases of its method and path say why they did not judge it.
        if let Some(at) = self.slot(answer.method, answer.path) {
            let by: Vec<&str> = judging
                .iter()
                .map(|&i| self.suite.cases()[i].id.value.as_str())
                .collect();
            let why = match by.as_slice() {
                [] => {
                    format!("it answered a request the proxy bent ({fault}), which no case judges")
                }
                by => format!(
                    "it answered a request the proxy bent ({fault}), which {} judges",
                    by.join(" and ")
                ),
            };
            for &i in &self.slots[at].cases {
                if !judging.contains(&self.live[i].index) {
                    record(&mut state.tallies[i], &Step::Unjudged, why.clone(), &seen);
                }
            }
        }
        if judging.is_empty() {
            return false;
        }
        let refused = refusal(&answer.result);
        let outcome = Outcome::parsed(AuthMode::Default, answer.request, answer.result, None);
        let none = HashMap::new();
        for index in judging {
            let spec = &self.suite.cases()[index];
            let (step, why) = match (&refused, &outcome.result) {
                (Some(why), _) => (Step::Unjudged, why.clone()),
                (None, Err(e)) => (Step::Broken, format!("no answer: {e}")),
                (None, Ok(r)) if refusal_holds && (400..500).contains(&r.status) => {
                    (Step::Held, String::new())
                }
                (None, Ok(r)) if refusal_holds && !(200..300).contains(&r.status) => (
                    Step::Broken,
                    format!(
                        "answered {}: a request it cannot take is refused with a 4xx, not failed on",
                        r.status
                    ),
                ),
                (None, Ok(_)) => {
                    let ctx = Ctx {
                        protocol: self.suite.protocol,
                        outcome: Some(&outcome),
                        exchanges: &none,
                        reachable: None,
                        max_body: self.limits.max_body,
                        max_field: self.limits.max_field,
                        status_judged: spec.checks.iter().any(Check::judges_status),
                        // The request was the kit's making, as the probe's are: a NUL or a
                        // payload the agent repeats from it is the agent's to have stripped.
                        live: false,
                        notes: false,
                    };
                    match settle_checks(spec, &ctx) {
                        Settled::Pass { .. } => (Step::Held, String::new()),
                        Settled::Fail(why) => (Step::Broken, why),
                        Settled::Skip(why) => (Step::Unjudged, why),
                    }
                }
            };
            let message = format!("to a request the proxy bent ({fault}): {why}");
            let tally = match self.by_index.get(&index) {
                Some(&i) => &mut state.tallies[i],
                None => match self.bent_only.iter().position(|&b| b == index) {
                    Some(j) => &mut state.bent[j],
                    None => continue,
                },
            };
            record(tally, &step, message, &seen);
        }
        true
    }

    /// One case on one answer: its step and, for a failure or a skip, why.
    fn judge_case(
        &self,
        spec: &CaseSpec,
        case: &LiveCase,
        outcome: &Outcome,
        exchanges: &HashMap<String, Arc<Outcome>>,
        last: &[Option<Step>],
        unreadable: &[Option<Option<String>>],
    ) -> (Step, String) {
        if let Some(missing) = case.reads.iter().find(|r| !exchanges.contains_key(*r)) {
            let path = &self.suite.file.exchanges[missing].path;
            return (Step::Unjudged, format!("no {path} answer came through yet"));
        }
        let need = unmet_need(
            spec,
            |need| {
                // A case not judged in traffic holds none back: the answer came. One that is,
                // and was not judged yet (its exchange unanswered), does.
                let (_, i) = case.live_needs.iter().find(|(n, _)| n == need)?;
                Some(last[*i].as_ref().map_or(Status::Skip, Step::status))
            },
            |need| {
                let on = self.suite.case(need)?.exchange.as_ref()?;
                let x = &self.suite.file.exchanges[on];
                match &unreadable[self.slot(&x.method, &x.path)?] {
                    Some(why) => why.clone(),
                    None => Some(format!("no {} answer came through", x.path)),
                }
            },
        );
        if let Some(why) = need {
            return (Step::Unjudged, why);
        }
        let ctx = Ctx {
            protocol: self.suite.protocol,
            outcome: (case.on.is_some() || case.every).then_some(outcome),
            exchanges,
            reachable: None,
            max_body: self.limits.max_body,
            max_field: self.limits.max_field,
            status_judged: spec.checks.iter().any(Check::judges_status),
            live: true,
            notes: case.once,
        };
        match settle_checks(spec, &ctx) {
            // What held is kept only where the verdict tells it (the first answer that held).
            Settled::Pass { note, .. } if case.once => (Step::Held, note),
            Settled::Pass { .. } => (Step::Held, String::new()),
            Settled::Fail(why) => (Step::Broken, why),
            Settled::Skip(why) => (Step::Unjudged, why),
        }
    }

    /// The agents seen whose every answer was to a method and path with no traffic exchange:
    /// nothing of theirs was judged (a platform that calls other endpoints, or a suite that
    /// marks none).
    pub fn unjudged_agents(&self) -> Vec<Unjudged> {
        let agents = lock(&self.agents);
        agents
            .iter()
            .filter_map(|(name, state)| {
                let state = lock(state);
                (state.judged_answers == 0 && state.unjudged_answers > 0).then(|| Unjudged {
                    agent: name.clone(),
                    answers: state.unjudged_answers,
                })
            })
            .collect()
    }

    /// The verdicts so far: per agent (by name), each live case in suite order (the judge's
    /// own latency case first), as `AGENT/CASE` in the group `agent AGENT`.
    pub fn cases(&self) -> Vec<CaseResult> {
        let agents: Vec<(String, Arc<Mutex<AgentState>>)> = lock(&self.agents)
            .iter()
            .map(|(n, s)| (n.clone(), Arc::clone(s)))
            .collect();
        let mut out = Vec::new();
        for (agent, state) in agents {
            let state = lock(&state);
            let latency = &state.tallies[self.live.len()];
            if self.latency.is_none() {
                let mut case = CaseResult::new(
                    &format!("{agent}/{LATENCY_ID}"),
                    &format!("agent {agent}"),
                    Level::Must,
                    LATENCY_TITLE,
                    LATENCY_SPEC,
                );
                self.settle(&mut case, &agent, latency, Triggers::Any);
                out.push(case);
            }
            for (index, spec) in self.suite.cases().iter().enumerate() {
                let (tally, triggers) = if self.latency == Some(index) {
                    (latency, Triggers::Any)
                } else if let Some(&i) = self.by_index.get(&index) {
                    let case = &self.live[i];
                    let triggers = match &case.on {
                        _ if case.every => Triggers::Any,
                        Some(on) => Triggers::One(self.path_of(on)),
                        None => {
                            Triggers::Several(case.reads.iter().map(|r| self.path_of(r)).collect())
                        }
                    };
                    (&state.tallies[i], triggers)
                } else if let Some(j) = self.bent_only.iter().position(|&b| b == index) {
                    if !state.bending {
                        continue;
                    }
                    let path = spec
                        .exchange
                        .as_ref()
                        .map_or_else(String::new, |x| self.path_of(x));
                    (&state.bent[j], Triggers::Bent(path, spec.bent.clone()))
                } else {
                    continue;
                };
                let mut case = spec.case();
                case.id = format!("{agent}/{}", spec.id.value);
                case.group = format!("agent {agent}");
                case.precondition = false;
                let once = self
                    .by_index
                    .get(&index)
                    .is_some_and(|&i| self.live[i].once);
                if once {
                    self.settle_once(&mut case, &agent, tally, triggers);
                } else {
                    self.settle(&mut case, &agent, tally, triggers);
                }
                out.push(case);
            }
        }
        out
    }

    /// The verdict of a case that holds once in a run: passed once an answer held it (what the
    /// first said, noted), failed when every answer judged broke it, else as any case.
    fn settle_once(&self, case: &mut CaseResult, agent: &str, tally: &Tally, triggers: Triggers) {
        let answers = triggers.answers();
        let judged = Evidence::new(tally.judged, &answers);
        if tally.judged > tally.failed {
            let note = tally.first_held.clone().unwrap_or_default();
            case.pass_noting(judged, note, String::new);
        } else if tally.judged > 0 {
            let why = tally.examples.first().map_or("", |e| e.message.as_str());
            case.fail_on(
                judged,
                format!(
                    "none of {agent}'s {} held it: {why}",
                    count(tally.judged, &answers)
                ),
            );
        } else {
            self.settle(case, agent, tally, triggers);
        }
    }

    fn path_of(&self, exchange: &str) -> String {
        self.suite.file.exchanges[exchange].path.clone()
    }

    /// A case's verdict from its tally.
    fn settle(&self, case: &mut CaseResult, agent: &str, tally: &Tally, triggers: Triggers) {
        let answers = triggers.answers();
        if tally.failed > 0 {
            // `1 of 1 /vote answers`: the count is of the whole, read as a plural.
            let mut message = format!(
                "{agent} broke it in {} of {} {answers}",
                tally.failed, tally.judged
            );
            for (n, e) in tally.examples.iter().enumerate() {
                let mut about = Vec::new();
                if !matches!(triggers, Triggers::One(_) | Triggers::Bent(..)) {
                    about.push(e.path.clone());
                }
                if let Some(task) = &e.task {
                    about.push(format!("task {task}"));
                }
                let about = if about.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", about.join(", "))
                };
                let when = if n == 0 { "first" } else { "then" };
                // A failure like the first is told by when and where only.
                let what = match n {
                    0 => e.message.as_str(),
                    _ if e.message == tally.examples[0].message => "the same",
                    _ => e.message.as_str(),
                };
                message.push_str(&format!("; {when} at {}{about}: {what}", offset(e.at)));
            }
            case.fail_on(Evidence::new(tally.judged, answers), message);
        } else if tally.judged > 0 {
            let note = match &tally.last_unjudged {
                Some(why) if tally.unjudged > 0 => format!(
                    "{} not judged: {}",
                    count(tally.unjudged, &answers),
                    unskipped(why)
                ),
                _ => String::new(),
            };
            case.pass_noting(Evidence::new(tally.judged, answers), note, String::new);
        } else {
            let why = match (&tally.last_unjudged, &triggers) {
                (None, Triggers::Bent(path, faults)) => format!(
                    "the proxy bent no {path} request to {agent} the way this case judges ({}): --fault {agent}=request:{}@{} would",
                    faults.join(", "),
                    faults.first().map_or("", String::as_str),
                    path.trim_start_matches('/')
                ),
                (Some(why), _) => format!(
                    "none of {agent}'s {} was judged: {}",
                    count(tally.unjudged, &answers),
                    unskipped(why)
                ),
                (None, _) => format!("no {} from {agent} came through", triggers.one_answer()),
            };
            case.skip(why);
        }
    }
}

/// Where a case's answers come from, for its messages.
enum Triggers {
    /// Every traffic exchange's (the latency case).
    Any,
    /// One path's.
    One(String),
    /// Any of these paths' (a case across exchanges).
    Several(Vec<String>),
    /// The answers to the requests to one path the proxy bent these ways.
    Bent(String, Vec<String>),
}

impl Triggers {
    /// What the case counts: `/vote answers`, `answers`.
    fn answers(&self) -> String {
        match self {
            Triggers::One(path) => format!("{path} answers"),
            Triggers::Bent(path, _) => format!("answers to bent {path} requests"),
            Triggers::Any | Triggers::Several(_) => "answers".into(),
        }
    }

    /// `/vote answer`, `/analyze, /challenge or /vote answer`, `answer`.
    fn one_answer(&self) -> String {
        match self {
            Triggers::Any => "answer".into(),
            Triggers::One(path) => format!("{path} answer"),
            Triggers::Bent(path, _) => format!("answer to a bent {path} request"),
            Triggers::Several(paths) => match paths.split_last() {
                Some((last, [])) => format!("{last} answer"),
                Some((last, rest)) => format!("{} or {last} answer", rest.join(", ")),
                None => "answer".into(),
            },
        }
    }
}

/// A skip reason as the middle of a sentence: without the probe's `skipped: ` (a case held
/// back by a need says `skipped: it needs …`).
fn unskipped(why: &str) -> &str {
    why.strip_prefix("skipped: ").unwrap_or(why)
}

/// Whether suite case `index` judges live traffic, and how. `labelled`: the answers carry
/// HTTP header fields (else a case that reads them has nothing to judge, and is left out).
fn live_case(suite: &Suite, index: usize, labelled: bool) -> Option<LiveCase> {
    let spec = &suite.cases()[index];
    let probes_own = spec.requires == Some(Requirement::ApiKey)
        || spec
            .checks
            .iter()
            .any(|c| matches!(c, Check::Reachable | Check::Refused));
    let unlabelled = !labelled && spec.checks.iter().any(|c| c.reads_headers(suite.protocol));
    if probes_own || unlabelled {
        return None;
    }
    let exchanges = &suite.file.exchanges;
    let traffic_of = |name: &str| {
        let x = exchanges.get(name)?;
        suite
            .traffic_exchange(&x.method, &x.path)
            .map(str::to_string)
    };
    let mut reads: Vec<String> = Vec::new();
    for name in spec
        .checks
        .iter()
        .flat_map(|c| c.extra_exchanges(suite.protocol))
    {
        // Only the traffic exchanges themselves: another exchange of the same path is a request
        // of the probe's own making, which traffic does not hold.
        if !exchanges.get(&name).is_some_and(|x| x.traffic) {
            return None;
        }
        if !reads.contains(&name) {
            reads.push(name);
        }
    }
    let on = match &spec.exchange {
        Some(own) if exchanges.get(own).is_some_and(|x| x.traffic) => Some(own.clone()),
        Some(own) if spec.traffic => Some(traffic_of(own)?),
        Some(_) => return None,
        None if reads.is_empty() && spec.traffic => {
            return Some(LiveCase {
                index,
                on: None,
                reads,
                every: true,
                once: spec.checks.iter().all(|c| c.once_in_a_run(suite.protocol)),
                live_needs: Vec::new(),
            })
        }
        None if reads.is_empty() => return None,
        None => None,
    };
    Some(LiveCase {
        index,
        on,
        reads,
        every: false,
        once: false,
        live_needs: Vec::new(),
    })
}

/// Why an answer is not the agent's to be judged on: it refused the platform's credentials
/// (401, 403). Whether it was right to depends on the key the platform sent, which the platform
/// rules judge (a platform that sends none is theirs to blame, not the agent that refused it).
fn refusal(result: &Result<Response, Error>) -> Option<String> {
    match result {
        Ok(r) if matches!(r.status, 401 | 403) => Some(format!(
            "the agent refused the platform's credentials ({}): the key the platform sent is judged by the platform rules, not by this answer",
            r.status
        )),
        _ => None,
    }
}

/// An answer's time against `timeout`: None when there is none to judge (the agent refused the
/// connection or cut it early: its response case says so).
fn latency_step(
    result: &Result<Response, Error>,
    elapsed: Duration,
    timeout: Duration,
) -> Option<(Step, String)> {
    let over = || {
        format!(
            "answered in {}, over --timeout ({})",
            format_duration(elapsed),
            format_duration(timeout)
        )
    };
    match result {
        Ok(_) if elapsed > timeout => Some((Step::Broken, over())),
        Ok(_) => Some((Step::Held, String::new())),
        Err(e @ Error::Timeout { .. }) => Some((Step::Broken, e.to_string())),
        Err(e) if elapsed > timeout => Some((
            Step::Broken,
            format!("no answer in {}: {e}", format_duration(elapsed)),
        )),
        Err(_) => None,
    }
}

/// Where an answer stood in the run, for a failure's example.
struct Seen<'a> {
    at: Duration,
    path: &'a str,
    /// The task as its request carried it: cut short only for a failure's example.
    task: Option<&'a str>,
}

fn record(tally: &mut Tally, step: &Step, message: String, seen: &Seen<'_>) {
    match step {
        Step::Held => {
            tally.judged += 1;
            if tally.first_held.is_none() && !message.is_empty() {
                tally.first_held = Some(message);
            }
        }
        Step::Broken => {
            tally.judged += 1;
            tally.failed += 1;
            if tally.examples.len() < EXAMPLES {
                tally.examples.push(Example {
                    at: seen.at,
                    path: seen.path.to_string(),
                    task: seen.task.map(|t| excerpt_str(t, 40)),
                    message,
                });
            }
        }
        Step::Unjudged => {
            tally.unjudged += 1;
            tally.last_unjudged = Some(message);
        }
    }
}
