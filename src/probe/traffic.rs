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

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde_json::Value;

use super::checks::Check;
use super::exchange::AuthMode;
use super::outcome::Outcome;
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
const LATENCY_TITLE: &str = "each answer came within --timeout";
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
}

impl Default for TrafficLimits {
    /// As the probe's defaults.
    fn default() -> TrafficLimits {
        TrafficLimits {
            max_body: super::runner::DEFAULT_MAX_BODY,
            max_field: super::runner::DEFAULT_MAX_FIELD,
            timeout: super::runner::DEFAULT_TIMEOUT,
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
    /// The JSON body the platform sent, when it was JSON.
    pub request: Option<Value>,
    /// What came back, or why nothing did.
    pub result: Result<Response, Error>,
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
}

impl LiveCase {
    /// Whether an answer to traffic exchange `exchange` is judged by this case.
    fn judges(&self, exchange: &str) -> bool {
        match &self.on {
            Some(on) => on == exchange,
            None => self.reads.iter().any(|r| r == exchange),
        }
    }
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
}

/// The latest answer of an agent to one traffic exchange.
struct Latest {
    /// Kept only for the exchanges a case across exchanges reads.
    outcome: Option<Arc<Outcome>>,
    /// Why it cannot be read (None: it can).
    unreadable: Option<String>,
}

/// What the judge holds of one agent.
#[derive(Default)]
struct AgentState {
    /// Per live case, then the latency case.
    tallies: Vec<Tally>,
    /// Per live case, its verdict on the latest answer it was considered on (for the needs).
    last: Vec<Option<Step>>,
    /// By traffic exchange.
    latest: HashMap<String, Latest>,
    /// Answers to a traffic exchange.
    judged_answers: u64,
    /// Answers to a method and path that has none.
    unjudged_answers: u64,
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
    /// The live position of each live case, by its place in the suite and by its id.
    by_index: HashMap<usize, usize>,
    by_id: HashMap<String, usize>,
    /// The suite's case that judges time, if it has one (its place in the suite).
    latency: Option<usize>,
    /// The traffic exchanges whose latest answer is kept whole.
    kept: HashSet<String>,
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
        let live: Vec<LiveCase> = order
            .iter()
            .filter_map(|id| {
                let index = suite.cases().iter().position(|c| &c.id.value == id)?;
                live_case(&suite, index)
            })
            .collect();
        let by_index: HashMap<usize, usize> =
            live.iter().enumerate().map(|(i, c)| (c.index, i)).collect();
        let by_id = live
            .iter()
            .enumerate()
            .map(|(i, c)| (suite.cases()[c.index].id.value.clone(), i))
            .collect();
        let latency = (0..suite.cases().len()).find(|i| {
            !by_index.contains_key(i)
                && suite.cases()[*i]
                    .checks
                    .iter()
                    .any(|k| k.judges_latency(protocol))
        });
        let kept = live.iter().flat_map(|c| c.reads.iter().cloned()).collect();
        TrafficJudge {
            suite,
            limits,
            live,
            by_index,
            by_id,
            latency,
            kept,
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
            ..AgentState::default()
        }));
        agents.insert(name.to_string(), Arc::clone(&state));
        state
    }

    /// Judges one answer by the cases of its method and path's traffic exchange (none: it is
    /// counted as unjudged), then its time.
    pub fn judge(&self, answer: LiveAnswer<'_>) {
        let state = self.agent(answer.agent);
        // One agent's answers are judged one at a time (its needs across exchanges read its
        // latest answers); different agents' in parallel.
        let mut state = lock(&state);
        let Some(exchange) = self.suite.traffic_exchange(answer.method, answer.path) else {
            state.unjudged_answers += 1;
            return;
        };
        state.judged_answers += 1;
        let task = task_of(answer.request.as_ref());
        let latency = latency_step(&answer.result, answer.elapsed, self.limits.timeout);
        let outcome = Arc::new(Outcome::new(
            AuthMode::Default,
            answer.request,
            answer.result,
        ));
        let unreadable = outcome.unreadable(self.limits.max_body);
        state.latest.insert(
            exchange.to_string(),
            Latest {
                outcome: self.kept.contains(exchange).then(|| Arc::clone(&outcome)),
                unreadable,
            },
        );
        let seen = Seen {
            at: answer.at,
            path: answer.path,
            task: task.as_deref(),
        };
        let exchanges: HashMap<String, Arc<Outcome>> = state
            .latest
            .iter()
            .filter_map(|(name, l)| Some((name.clone(), Arc::clone(l.outcome.as_ref()?))))
            .chain([(exchange.to_string(), Arc::clone(&outcome))])
            .collect();
        let refused = refusal(&outcome.result);
        for (i, case) in self.live.iter().enumerate() {
            if !case.judges(exchange) {
                continue;
            }
            let spec = &self.suite.cases()[case.index];
            let (step, message) = match &refused {
                Some(why) => (Step::Unjudged, why.clone()),
                None => self.judge_case(spec, case, &outcome, &exchanges, &state),
            };
            record(&mut state.tallies[i], &step, message, &seen);
            state.last[i] = Some(step);
        }
        if let Some((step, message)) = latency {
            let i = self.live.len();
            record(&mut state.tallies[i], &step, message, &seen);
        }
    }

    /// One case on one answer: its step and, for a failure or a skip, why.
    fn judge_case(
        &self,
        spec: &CaseSpec,
        case: &LiveCase,
        outcome: &Outcome,
        exchanges: &HashMap<String, Arc<Outcome>>,
        state: &AgentState,
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
                let i = *self.by_id.get(need)?;
                Some(state.last[i].as_ref().map_or(Status::Skip, Step::status))
            },
            |need| {
                let on = self.suite.case(need)?.exchange.as_ref()?;
                let x = &self.suite.file.exchanges[on];
                let traffic = self.suite.traffic_exchange(&x.method, &x.path)?;
                match state.latest.get(traffic) {
                    Some(latest) => latest.unreadable.clone(),
                    None => Some(format!("no {} answer came through", x.path)),
                }
            },
        );
        if let Some(why) = need {
            return (Step::Unjudged, why);
        }
        let ctx = Ctx {
            protocol: self.suite.protocol,
            outcome: case.on.as_ref().map(|_| outcome),
            exchanges,
            reachable: None,
            max_body: self.limits.max_body,
            max_field: self.limits.max_field,
            status_judged: spec.checks.iter().any(Check::judges_status),
            live: true,
        };
        match settle_checks(spec, &ctx) {
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
                        Some(on) => Triggers::One(self.path_of(on)),
                        None => {
                            Triggers::Several(case.reads.iter().map(|r| self.path_of(r)).collect())
                        }
                    };
                    (&state.tallies[i], triggers)
                } else {
                    continue;
                };
                let mut case = spec.case();
                case.id = format!("{agent}/{}", spec.id.value);
                case.group = format!("agent {agent}");
                case.precondition = false;
                self.settle(&mut case, &agent, tally, triggers);
                out.push(case);
            }
        }
        out
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
                if !matches!(triggers, Triggers::One(_)) {
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
            let why = match &tally.last_unjudged {
                Some(why) => format!(
                    "none of {agent}'s {} was judged: {}",
                    count(tally.unjudged, &answers),
                    unskipped(why)
                ),
                None => format!("no {} from {agent} came through", triggers.one_answer()),
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
}

impl Triggers {
    /// What the case counts: `/vote answers`, `answers`.
    fn answers(&self) -> String {
        match self {
            Triggers::One(path) => format!("{path} answers"),
            Triggers::Any | Triggers::Several(_) => "answers".into(),
        }
    }

    /// `/vote answer`, `/analyze, /challenge or /vote answer`, `answer`.
    fn one_answer(&self) -> String {
        match self {
            Triggers::Any => "answer".into(),
            Triggers::One(path) => format!("{path} answer"),
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

/// Whether suite case `index` judges live traffic, and how.
fn live_case(suite: &Suite, index: usize) -> Option<LiveCase> {
    let spec = &suite.cases()[index];
    let probes_own = spec.requires == Some(Requirement::ApiKey)
        || spec
            .checks
            .iter()
            .any(|c| matches!(c, Check::Reachable | Check::Refused));
    if probes_own {
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
        None if reads.is_empty() => return None,
        None => None,
    };
    Some(LiveCase { index, on, reads })
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
    task: Option<&'a str>,
}

fn record(tally: &mut Tally, step: &Step, message: String, seen: &Seen<'_>) {
    match step {
        Step::Held => tally.judged += 1,
        Step::Broken => {
            tally.judged += 1;
            tally.failed += 1;
            if tally.examples.len() < EXAMPLES {
                tally.examples.push(Example {
                    at: seen.at,
                    path: seen.path.to_string(),
                    task: seen.task.map(str::to_string),
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

/// The request's task, to find the answer again in the platform's logs: its `task_id` (or
/// `id`), cut short.
fn task_of(request: Option<&Value>) -> Option<String> {
    let request = request?;
    let id = ["task_id", "id"]
        .iter()
        .find_map(|k| request.get(*k).filter(|v| !v.is_null()))?;
    let text = match id {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    Some(excerpt_str(&text, 40))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::content::Content;
    use crate::mock::Responder;
    use crate::probe::template::{self, Fill, RunValues};
    use crate::protocols::roundtable::reference::ReferenceAgent;

    const TIMEOUT: Duration = Duration::from_secs(10);

    fn roundtable() -> TrafficJudge {
        TrafficJudge::new(
            crate::protocols::roundtable::suite().unwrap(),
            TrafficLimits {
                timeout: TIMEOUT,
                ..TrafficLimits::default()
            },
        )
    }

    /// The request the probe's suite sends as `exchange`: what a platform sends there.
    fn request(judge: &TrafficJudge, exchange: &str) -> Value {
        let mut fill = Fill {
            run: &RunValues::new(7),
            content: Content::new(7, exchange),
            protocol: judge.suite.protocol,
        };
        template::render(
            judge.suite.file.exchanges[exchange].body.as_ref().unwrap(),
            &mut fill,
        )
        .unwrap()
    }

    fn response(status: u16, body: impl Into<bytes::Bytes>) -> Response {
        Response {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            body: body.into(),
            body_exceeded: false,
            elapsed: Duration::from_millis(40),
        }
    }

    /// The reference agent `name`'s answer to `request` at `endpoint`.
    fn reference(name: &str, endpoint: &str, request: &Value) -> Response {
        let reply =
            ReferenceAgent::new(name, 0).respond(endpoint, &serde_json::to_vec(request).unwrap());
        response(reply.status, reply.body)
    }

    /// `agent` answered `endpoint` with `result`, `at_s` seconds into the run, in 40 ms.
    fn tell(
        judge: &TrafficJudge,
        agent: &str,
        endpoint: &str,
        result: Result<Response, Error>,
        at_s: u64,
    ) {
        judge.judge(LiveAnswer {
            agent,
            method: "POST",
            path: &format!("/{endpoint}"),
            request: Some(request(judge, endpoint)),
            result,
            at: Duration::from_secs(at_s),
            elapsed: Duration::from_millis(40),
        });
    }

    /// `agent` took part in one deliberation, answering as the reference agent `name` does.
    fn deliberate_as(judge: &TrafficJudge, agent: &str, name: &str) {
        for (i, endpoint) in ["analyze", "challenge", "vote"].into_iter().enumerate() {
            let answer = reference(name, endpoint, &request(judge, endpoint));
            tell(judge, agent, endpoint, Ok(answer), i as u64 + 1);
        }
    }

    fn case<'a>(cases: &'a [CaseResult], id: &str) -> &'a CaseResult {
        cases
            .iter()
            .find(|c| c.id == id)
            .unwrap_or_else(|| panic!("no case {id} in {:?}", ids(cases)))
    }

    fn ids(cases: &[CaseResult]) -> Vec<&str> {
        cases.iter().map(|c| c.id.as_str()).collect()
    }

    fn failed(cases: &[CaseResult]) -> Vec<(&str, &str)> {
        cases
            .iter()
            .filter(|c| c.status == Status::Fail)
            .map(|c| (c.id.as_str(), c.message.as_str()))
            .collect()
    }

    /// The reference agent's answers hold every live case, each on the one answer it judged;
    /// the probe's own cases (a connection, a key, deliberate and crafted requests) are not
    /// among them.
    #[test]
    fn conforming_answers_pass_on_evidence() {
        let judge = roundtable();
        deliberate_as(&judge, "alpha", "alpha");
        let cases = judge.cases();
        assert_eq!(failed(&cases), Vec::<(&str, &str)>::new());
        for id in [
            "analyze.response",
            "analyze.field-length",
            "challenge.response",
            "challenge.known-targets",
            "vote.response",
            "agent.name-consistent",
        ] {
            let c = case(&cases, &format!("alpha/{id}"));
            assert_eq!(c.status, Status::Pass, "{id}: {}", c.message);
            assert_eq!(c.evidence.as_ref().unwrap().judged, 1, "{id}");
            assert_eq!(c.group, "agent alpha");
        }
        // The reference agent approved: no dissent to judge, and the skip says so.
        assert_eq!(
            case(&cases, "alpha/vote.dissent-reason").message,
            "none of alpha's 1 /vote answer was judged: nothing to judge: the agent approved: there is no dissent whose reason to judge"
        );
        let vote = case(&cases, "alpha/vote.response");
        assert_eq!(vote.evidence, Some(Evidence::new(1, "/vote answers")));
        assert_eq!(vote.level, Level::Must);
        assert_eq!(vote.spec, "Error Handling; Timeouts; Response Size Limits");
        let latency = case(&cases, "alpha/agent.latency");
        assert_eq!(latency.status, Status::Pass, "{}", latency.message);
        assert_eq!(latency.evidence, Some(Evidence::new(3, "answers")));
        assert_eq!(latency.title, LATENCY_TITLE);
        for probes_own in [
            "agent.reachable",
            "auth.missing-key",
            "http.not-json",
            "analyze.unicode",
            "vote.trade-offs-minority",
        ] {
            assert!(
                !ids(&cases).contains(&format!("alpha/{probes_own}").as_str()),
                "{probes_own}"
            );
        }
    }

    /// A 500 is one failure, of the response case; the cases that read the answer are not
    /// judged on it and say why, and the other endpoints' cases go on.
    #[test]
    fn a_500_fails_its_response_case_once() {
        let judge = roundtable();
        let analyze = request(&judge, "analyze");
        judge.judge(LiveAnswer {
            agent: "alpha",
            method: "POST",
            path: "/analyze",
            request: Some(analyze.clone()),
            result: Ok(response(500, "upstream exploded")),
            at: Duration::from_millis(3_200),
            elapsed: Duration::from_millis(40),
        });
        tell(
            &judge,
            "alpha",
            "analyze",
            Ok(reference("alpha", "analyze", &analyze)),
            4,
        );
        tell(
            &judge,
            "alpha",
            "vote",
            Ok(reference("alpha", "vote", &request(&judge, "vote"))),
            5,
        );
        let cases = judge.cases();
        let task = analyze["task_id"].as_str().unwrap();
        let response = case(&cases, "alpha/analyze.response");
        assert_eq!(
            response.message,
            format!("alpha broke it in 1 of 2 /analyze answers; first at +3.2 s (task {task}): answered 500; expected 200; body: upstream exploded")
        );
        assert_eq!(
            response.evidence,
            Some(Evidence::new(2, "/analyze answers"))
        );
        assert_eq!(failed(&cases).len(), 1, "{:?}", failed(&cases));
        let content_type = case(&cases, "alpha/analyze.content-type");
        assert_eq!(content_type.status, Status::Pass);
        assert_eq!(
            content_type.message,
            "1 /analyze answer not judged: it needs analyze.response, which failed with no answer to read (answered 500)"
        );
        assert_eq!(case(&cases, "alpha/vote.response").status, Status::Pass);
    }

    /// A refusal of the platform's credentials is not judged against the agent (a platform that
    /// sends no key is the platform rules' to blame); its time still is.
    #[test]
    fn a_refusal_of_the_platforms_key_is_not_the_agents_failure() {
        let judge = roundtable();
        let body = r#"{"error":"missing Authorization: Bearer <key>"}"#;
        tell(&judge, "alpha", "analyze", Ok(response(401, body)), 1);
        let cases = judge.cases();
        assert_eq!(failed(&cases), Vec::<(&str, &str)>::new());
        let analyze = case(&cases, "alpha/analyze.response");
        assert_eq!(analyze.status, Status::Skip);
        assert_eq!(
            analyze.message,
            "none of alpha's 1 /analyze answer was judged: the agent refused the platform's credentials (401): the key the platform sent is judged by the platform rules, not by this answer"
        );
        assert_eq!(case(&cases, "alpha/agent.latency").status, Status::Pass);
    }

    /// A NUL the agent repeats from what the platform sent it is the platform's (which
    /// forwarded it unstripped), not the agent's; one of the agent's own is the agent's.
    #[test]
    fn a_phrase_repeated_from_the_request_is_the_senders() {
        let judge = roundtable();
        let mut sent = request(&judge, "challenge");
        sent["other_analyses"][0]["observations"][0]["finding"] = "spilled\u{0}NUL".into();
        let with_nul = |request: &Value| {
            let mut answer: Value =
                serde_json::from_slice(&reference("alpha", "challenge", request).body).unwrap();
            answer["challenges"][0]["counter_evidence"] = "it said spilled\u{0}NUL".into();
            response(200, serde_json::to_vec(&answer).unwrap())
        };
        for (agent, request) in [
            ("alpha", sent.clone()),
            ("beta", request(&judge, "challenge")),
        ] {
            judge.judge(LiveAnswer {
                agent,
                method: "POST",
                path: "/challenge",
                result: Ok(with_nul(&request)),
                request: Some(request),
                at: Duration::from_secs(1),
                elapsed: Duration::from_millis(40),
            });
        }
        let cases = judge.cases();
        let echoed = case(&cases, "alpha/challenge.sanitization");
        assert_eq!(echoed.status, Status::Pass, "{}", echoed.message);
        let own = case(&cases, "beta/challenge.sanitization");
        assert_eq!(own.status, Status::Fail, "{}", own.message);
        assert!(
            own.message.contains("challenges[0].counter_evidence"),
            "{}",
            own.message
        );
    }

    /// Only the 500: the dependent cases skip, saying why, and judged nothing.
    #[test]
    fn cases_held_back_by_a_failed_need_skip_saying_so() {
        let judge = roundtable();
        tell(&judge, "alpha", "vote", Ok(response(500, "no")), 1);
        let cases = judge.cases();
        assert_eq!(case(&cases, "alpha/vote.response").status, Status::Fail);
        let dissent = case(&cases, "alpha/vote.dissent-reason");
        assert_eq!(dissent.status, Status::Skip);
        assert_eq!(
            dissent.message,
            "none of alpha's 1 /vote answer was judged: it needs vote.response, which failed with no answer to read (answered 500)"
        );
    }

    /// A case held back on every answer says what holds it back now: the latest reason.
    #[test]
    fn a_skip_says_what_holds_the_case_back_at_the_end() {
        let judge = roundtable();
        tell(&judge, "beta", "challenge", Ok(response(500, "no")), 1);
        for endpoint in ["vote", "analyze"] {
            let answer = reference("beta", endpoint, &request(&judge, endpoint));
            tell(&judge, "beta", endpoint, Ok(answer), 2);
        }
        let cases = judge.cases();
        assert_eq!(
            case(&cases, "beta/agent.name-consistent").message,
            "none of beta's 3 answers was judged: it needs challenge.response, which failed with no answer to read (answered 500)"
        );
    }

    /// A dissent with no reason breaks vote.dissent-reason on a real /vote answer (the probe
    /// provokes it with a request of its own; traffic holds the platform's).
    #[test]
    fn a_dissent_without_a_reason_fails_dissent_reason() {
        let judge = roundtable();
        let vote = request(&judge, "vote");
        let mut answer: Value =
            serde_json::from_slice(&reference("beta", "vote", &vote).body).unwrap();
        answer["approve"] = Value::Bool(false);
        answer.as_object_mut().unwrap().remove("dissent_reason");
        let body = serde_json::to_vec(&answer).unwrap();
        tell(&judge, "beta", "vote", Ok(response(200, body)), 2);
        tell(
            &judge,
            "beta",
            "vote",
            Ok(reference("beta", "vote", &vote)),
            3,
        );
        let cases = judge.cases();
        let dissent = case(&cases, "beta/vote.dissent-reason");
        assert_eq!(dissent.status, Status::Fail, "{}", dissent.message);
        assert!(
            dissent
                .message
                .starts_with("beta broke it in 1 of 1 /vote answers; first at +2.0 s (task "),
            "{}",
            dissent.message
        );
        assert!(
            dissent.message.ends_with(
                "dissent_reason: is missing, but approve is false: a dissent must say why"
            ),
            "{}",
            dissent.message
        );
        // The approval gave it nothing to judge: counted apart, and no pass is claimed on it.
        assert_eq!(dissent.evidence, Some(Evidence::new(1, "/vote answers")));
        assert_eq!(case(&cases, "beta/vote.response").status, Status::Pass);
    }

    /// An agent with no /vote answer has its /vote cases skipped, saying so; one the run has
    /// but never heard from, all of them; answers to a path with no traffic exchange are
    /// judged by nothing.
    #[test]
    fn an_agent_with_no_vote_answers_has_skips_that_say_so() {
        let judge = roundtable();
        tell(
            &judge,
            "beta",
            "analyze",
            Ok(reference("beta", "analyze", &request(&judge, "analyze"))),
            1,
        );
        judge.expect("gamma");
        judge.judge(LiveAnswer {
            agent: "delta",
            method: "GET",
            path: "/health",
            request: None,
            result: Ok(response(200, "{}")),
            at: Duration::ZERO,
            elapsed: Duration::from_millis(5),
        });
        let cases = judge.cases();
        let vote = case(&cases, "beta/vote.response");
        assert_eq!(vote.status, Status::Skip);
        assert_eq!(vote.message, "no /vote answer from beta came through");
        assert_eq!(case(&cases, "beta/analyze.response").status, Status::Pass);
        let names = case(&cases, "beta/agent.name-consistent");
        assert_eq!(names.status, Status::Skip);
        assert_eq!(
            names.message,
            "none of beta's 1 answer was judged: no /challenge answer came through yet"
        );
        assert_eq!(
            case(&cases, "gamma/agent.name-consistent").message,
            "no /analyze, /challenge or /vote answer from gamma came through"
        );
        assert_eq!(
            case(&cases, "gamma/agent.latency").message,
            "no answer from gamma came through"
        );
        assert!(cases
            .iter()
            .filter(|c| c.id.starts_with("gamma/"))
            .all(|c| c.status == Status::Skip));
        assert_eq!(
            judge.unjudged_agents(),
            vec![Unjudged {
                agent: "delta".into(),
                answers: 1
            }]
        );
        assert_eq!(case(&cases, "delta/analyze.response").status, Status::Skip);
    }

    /// An answer past --timeout, or none within it, breaks the latency case; one within it
    /// holds it. The answer itself is still judged by its own cases.
    #[test]
    fn a_slow_answer_fails_latency() {
        let judge = roundtable();
        let vote = request(&judge, "vote");
        for (agent, elapsed) in [("alpha", 9_000), ("beta", 12_500)] {
            judge.judge(LiveAnswer {
                agent,
                method: "POST",
                path: "/vote",
                request: Some(vote.clone()),
                result: Ok(reference(agent, "vote", &vote)),
                at: Duration::from_secs(1),
                elapsed: Duration::from_millis(elapsed),
            });
        }
        judge.judge(LiveAnswer {
            agent: "gamma",
            method: "POST",
            path: "/vote",
            request: Some(vote.clone()),
            result: Err(Error::Timeout {
                deadline: TIMEOUT,
                phase: "no response head received".into(),
            }),
            at: Duration::from_secs(1),
            elapsed: TIMEOUT,
        });
        let cases = judge.cases();
        assert_eq!(case(&cases, "alpha/agent.latency").status, Status::Pass);
        let slow = case(&cases, "beta/agent.latency");
        assert_eq!(slow.status, Status::Fail);
        assert!(
            slow.message
                .starts_with("beta broke it in 1 of 1 answers; first at +1.0 s (/vote, task ")
                && slow
                    .message
                    .ends_with("answered in 12s 500ms, over --timeout (10s)"),
            "{}",
            slow.message
        );
        assert_eq!(case(&cases, "beta/vote.response").status, Status::Pass);
        let none = case(&cases, "gamma/agent.latency");
        assert_eq!(none.status, Status::Fail);
        assert!(
            none.message.contains("no complete answer within 10s"),
            "{}",
            none.message
        );
    }

    /// agent_name is compared across an agent's latest /analyze, /challenge and /vote answers.
    #[test]
    fn names_that_differ_across_exchanges_fail_name_consistency() {
        let judge = roundtable();
        let analyze = request(&judge, "analyze");
        tell(
            &judge,
            "alpha",
            "analyze",
            Ok(reference("alpha", "analyze", &analyze)),
            1,
        );
        tell(
            &judge,
            "alpha",
            "challenge",
            Ok(reference(
                "alpha",
                "challenge",
                &request(&judge, "challenge"),
            )),
            2,
        );
        tell(
            &judge,
            "alpha",
            "vote",
            Ok(reference("alpha-v2", "vote", &request(&judge, "vote"))),
            3,
        );
        let cases = judge.cases();
        let names = case(&cases, "alpha/agent.name-consistent");
        assert_eq!(names.status, Status::Fail, "{}", names.message);
        assert!(
            names
                .message
                .starts_with("alpha broke it in 1 of 1 answers; first at +3.0 s (/vote, task "),
            "{}",
            names.message
        );
        assert!(names.message.contains("alpha-v2"), "{}", names.message);
        // Before the vote, the first two answers left it nothing to compare.
        assert_eq!(names.evidence, Some(Evidence::new(1, "answers")));
    }

    /// Each agent is judged and reported on its own, in the order of their names.
    #[test]
    fn two_agents_are_reported_separately() {
        let judge = roundtable();
        tell(&judge, "beta", "vote", Ok(response(500, "down")), 1);
        deliberate_as(&judge, "alpha", "alpha");
        let cases = judge.cases();
        assert_eq!(case(&cases, "alpha/vote.response").status, Status::Pass);
        let beta = case(&cases, "beta/vote.response");
        assert_eq!(beta.status, Status::Fail);
        assert_eq!(beta.group, "agent beta");
        assert!(
            beta.message.starts_with("beta broke it"),
            "{}",
            beta.message
        );
        let first_beta = cases
            .iter()
            .position(|c| c.id.starts_with("beta/"))
            .unwrap();
        assert!(cases[..first_beta]
            .iter()
            .all(|c| c.id.starts_with("alpha/")));
        assert!(cases[first_beta..]
            .iter()
            .all(|c| c.id.starts_with("beta/")));
        // Suite order within an agent, the judge's own latency case first.
        let alpha: Vec<&str> = ids(&cases[..first_beta]);
        assert_eq!(alpha[0], "alpha/agent.latency");
        let at = |id: &str| alpha.iter().position(|c| *c == id).unwrap();
        assert!(at("alpha/agent.name-consistent") < at("alpha/analyze.response"));
        assert!(at("alpha/analyze.response") < at("alpha/vote.response"));
    }

    /// Answers judged from several threads at once are each counted once.
    #[test]
    fn answers_from_several_threads_are_each_counted() {
        fn shared<T: Send + Sync>(_: &T) {}
        let judge = roundtable();
        shared(&judge);
        let vote = request(&judge, "vote");
        let answer = reference("alpha", "vote", &vote);
        std::thread::scope(|s| {
            for agent in ["alpha", "beta", "alpha", "beta"] {
                let (judge, answer) = (&judge, answer.clone());
                s.spawn(move || {
                    for at in 0..25 {
                        tell(judge, agent, "vote", Ok(answer.clone()), at);
                    }
                });
            }
        });
        let cases = judge.cases();
        for agent in ["alpha", "beta"] {
            let vote = case(&cases, &format!("{agent}/vote.response"));
            assert_eq!(vote.evidence, Some(Evidence::new(50, "/vote answers")));
        }
    }

    /// Memory is bounded: past EXAMPLES failures only the counts grow.
    #[test]
    fn failures_past_the_examples_are_counted_not_kept() {
        let judge = roundtable();
        for at in 1..=5 {
            tell(&judge, "alpha", "vote", Ok(response(503, "busy")), at);
        }
        let cases = judge.cases();
        let vote = case(&cases, "alpha/vote.response");
        assert!(
            vote.message
                .starts_with("alpha broke it in 5 of 5 /vote answers; first at +1.0 s"),
            "{}",
            vote.message
        );
        assert_eq!(
            vote.message.matches("; then at ").count(),
            EXAMPLES - 1,
            "{}",
            vote.message
        );
        assert!(!vote.message.contains("+4.0 s"), "{}", vote.message);
        assert_eq!(
            vote.message.matches("answered 503").count(),
            1,
            "{}",
            vote.message
        );
        assert!(
            vote.message
                .ends_with("; then at +3.0 s (task 3688ff6f5f4d): the same"),
            "{}",
            vote.message
        );
        let state = judge.agent("alpha");
        assert!(lock(&state)
            .tallies
            .iter()
            .all(|t| t.examples.len() <= EXAMPLES));
    }

    /// execute_task: first-turn judges each real answer, and the suite's own time case
    /// (protocol.within-timeout) judges each answer's time: no case of the judge's own.
    #[test]
    fn execute_task_reuses_its_time_case() {
        let judge = TrafficJudge::new(
            crate::protocols::execute_task::rules::suite().unwrap(),
            TrafficLimits {
                timeout: TIMEOUT,
                ..TrafficLimits::default()
            },
        );
        for (elapsed, answer) in [
            (
                1,
                r#"{"action":"final_answer","summary":"cust_123 is on the Pro plan"}"#,
            ),
            (11, r#"{"action":"dance"}"#),
        ] {
            judge.judge(LiveAnswer {
                agent: "solo",
                method: "POST",
                path: "/execute_task",
                request: Some(request(&judge, "first-turn")),
                result: Ok(response(200, answer)),
                at: Duration::from_secs(2),
                elapsed: Duration::from_secs(elapsed),
            });
        }
        let cases = judge.cases();
        assert_eq!(
            ids(&cases),
            ["solo/protocol.first-turn", "solo/protocol.within-timeout"]
        );
        let first = case(&cases, "solo/protocol.first-turn");
        assert_eq!(first.status, Status::Fail);
        assert!(
            first
                .message
                .starts_with("solo broke it in 1 of 2 /execute_task answers; first at +2.0 s: "),
            "{}",
            first.message
        );
        let time = case(&cases, "solo/protocol.within-timeout");
        assert_eq!(time.status, Status::Fail);
        assert_eq!(time.evidence, Some(Evidence::new(2, "answers")));
    }

    /// The suite loader holds the markings to what the judge can use.
    #[test]
    fn the_loader_refuses_traffic_markings_it_cannot_use() {
        let (file, text) = crate::protocols::roundtable::SUITE;
        let load = |text: &str| {
            crate::probe::Suite::parse(file, text, &crate::protocols::roundtable::rules::Suite)
                .map(drop)
                .unwrap_err()
                .to_string()
        };
        let twice = text.replacen(
            "  analyze-minimal:\n    path: /analyze\n",
            "  analyze-minimal:\n    path: /analyze\n    traffic: true\n",
            1,
        );
        assert_ne!(twice, text);
        let e = load(&twice);
        assert!(
            e.contains(
                "exchanges analyze and analyze-minimal are both traffic: true for POST /analyze"
            ),
            "{e}"
        );
        let own = text.replacen("    # In traffic: every real /vote answer.\n    traffic: true\n", "", 1).replacen(
            "    exchange: vote\n    needs_answer: [vote.response]\n    checks: [{content_type",
            "    exchange: vote\n    traffic: true\n    needs_answer: [vote.response]\n    checks: [{content_type",
            1,
        );
        assert_ne!(own, text);
        let e = load(&own);
        assert!(e.contains("case vote.content-type: traffic: true: its exchange vote is the traffic one already"), "{e}");
        let none = text.replacen(
            "    exchange: health\n",
            "    exchange: health\n    traffic: true\n",
            1,
        );
        assert_ne!(none, text);
        let e = load(&none);
        assert!(
            e.contains(
                "case http.health: traffic: true: no exchange is traffic: true for GET /health"
            ),
            "{e}"
        );
    }
}
