//! The mock Librarian's two halves that the reference server does not have: a **script** of
//! decisions and faults for successive `/agent/request` calls, and the **judge** of the client
//! that talks to it (`agent-tck mock librarian`: the kit certifies an agent client).
//!
//! Script steps, cycled over the valid requests to /agent/request (an invalid one takes no step:
//! the rules answer it): `decide` (the document's rules decide), `approve`, `reject`,
//! `escalate:DUR` (ESCALATED at /agent/status, APPROVED once DUR has passed), `clarify`,
//! `429:SECS` (Retry-After SECS), `500`, `malformed-json`, `slow:DUR` (decided, then answered
//! after DUR), `reset` (the connection reset before an answer). A step may name what it
//! answers: `APPROVAL create design docs/design/*: reject` (a request type, then any of an
//! action, a target_type and a target_path glob); a request takes, in turn, the steps that
//! answer it (a step that names nothing answers any request but a REPORT), whatever other
//! requests come between, and the rules decide a request no step answers.
//!
//! The judge's rules (group `client`), each skipped when the run gave it nothing to judge:
//! - `client.request-schema` (MUST): every /agent/request body valid, with its type's required
//!   fields;
//! - `client.bearer` (MUST): every request carries `Authorization: Bearer …`;
//! - `client.rate` (MUST): at most 60 requests a minute per agent;
//! - `client.backs-off` (MUST): after a 429, nothing before Retry-After has passed;
//! - `client.polling` (MUST): an escalated request's status polled no faster than once a second;
//! - `client.retries` (MUST): a request retried at most 3 times after failures (5xx, a reset, a
//!   body that is not JSON, a 429);
//! - `client.reports` (SHOULD): every approved APPROVAL reported (a REPORT with its request_id);
//! - `client.no-unchanged-resend` (SHOULD): a rejected request is not sent again unchanged;
//! - `client.resubmissions` (MUST): a rejected request (the same type, action and target) is
//!   resubmitted, fixed or not, at most 3 times (max_retry_attempts: the document calls the
//!   resubmission of a fixed request a retry);
//! - `client.content-size` (MUST): no request's content is over max_content_size (100 KB =
//!   102,400 bytes);
//! - `client.waits-for-human` (MUST): an escalated request is not REPORTed before the human
//!   decision ("Agent must wait for human decision").

use std::collections::{HashMap, HashSet, VecDeque};
use std::hash::{Hash, Hasher};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::model::{self, LIMITS};
use crate::mock::observe::Tally;
use crate::report::{CaseResult, Level};

/// Requests, ids and bodies the judge follows at most, each kind (memory stays bounded under
/// load; past it, new ones are not followed).
const TRACKED: usize = 100_000;

/// One step of a script.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    Decide,
    Approve,
    Reject,
    Escalate(Duration),
    Clarify,
    TooMany(u64),
    ServerError,
    Malformed,
    Slow(Duration),
    Reset,
}

/// A script step that does not read: the step as written, and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("script step {step:?}: {what}")]
pub struct StepError {
    pub step: String,
    pub what: String,
}

/// What is wrong with a script file. Each is a usage error: nothing has been served yet.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScriptError {
    /// Not YAML, or not a script's shape: `FILE:LINE:COLUMN: what` where the parser says.
    #[error("{0}")]
    Yaml(String),
    /// A step, at `FILE:LINE` (the first line that holds it) or the file.
    #[error("{at}: {error}")]
    Step { at: String, error: StepError },
    #[error("{file}: `decisions` is empty")]
    Empty { file: String },
}

impl crate::error::LayerError for ScriptError {
    fn class(&self) -> crate::error::Class {
        crate::error::Class::Usage
    }
}

impl Step {
    pub fn parse(text: &str) -> Result<Step, StepError> {
        let wrong = |what: String| StepError {
            step: text.to_string(),
            what,
        };
        let (name, arg) = match text.trim().split_once(':') {
            Some((n, a)) => (n.trim(), Some(a.trim())),
            None => (text.trim(), None),
        };
        let duration = |a: Option<&str>, default: &str| {
            crate::units::parse_duration(a.unwrap_or(default)).map_err(|e| wrong(e.to_string()))
        };
        Ok(match name {
            "decide" => Step::Decide,
            "approve" => Step::Approve,
            "reject" => Step::Reject,
            "escalate" => Step::Escalate(duration(arg, "2s")?),
            "clarify" => Step::Clarify,
            "429" => Step::TooMany(
                arg.unwrap_or("2")
                    .parse()
                    .map_err(|_| wrong("429:SECS takes whole seconds".into()))?,
            ),
            "500" => Step::ServerError,
            "malformed-json" => Step::Malformed,
            "slow" => Step::Slow(duration(arg, "11s")?),
            "reset" => Step::Reset,
            _ => {
                return Err(wrong(
                    "expected decide, approve, reject, escalate:DUR, clarify, 429:SECS, 500, malformed-json, slow:DUR or reset".into()
                ))
            }
        })
    }
}

/// Which requests a script step answers: its type, and any of an action, a target_type and a
/// target_path glob.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selector {
    request_type: String,
    action: Option<String>,
    target_type: Option<String>,
    path: Option<String>,
}

impl Selector {
    /// `APPROVAL create design docs/design/*`; None when `text` does not start with a request
    /// type (it is then no selector: `escalate:3s` is a step).
    fn parse(text: &str) -> Result<Option<Selector>, String> {
        let mut words = text.split_whitespace();
        let Some(request_type) = words.next().filter(|w| model::REQUEST_TYPES.contains(w)) else {
            return Ok(None);
        };
        let mut selector = Selector {
            request_type: request_type.to_string(),
            action: None,
            target_type: None,
            path: None,
        };
        for word in words {
            let slot = if model::ACTIONS.contains(&word) {
                &mut selector.action
            } else if model::TARGET_TYPES.contains(&word) {
                &mut selector.target_type
            } else {
                &mut selector.path
            };
            if slot.replace(word.to_string()).is_some() {
                return Err(format!(
                    "{word:?} is a second action, target_type or path (expected TYPE [ACTION] \
                     [TARGET_TYPE] [PATH-GLOB])"
                ));
            }
        }
        Ok(Some(selector))
    }

    fn matches(&self, body: &Value) -> bool {
        let is = |key: &str, want: &Option<String>| {
            want.as_deref()
                .is_none_or(|w| crate::text::glob_match(w, body[key].as_str().unwrap_or("")))
        };
        body["request_type"] == self.request_type.as_str()
            && is("action", &self.action)
            && is("target_type", &self.target_type)
            && is("target_path", &self.path)
    }
}

/// A script: its steps, each with what it answers, cycled over successive valid requests.
#[derive(Debug, Clone, Default)]
pub struct Script {
    steps: Vec<(Option<Selector>, Step)>,
    /// For each set of steps that answer some request: how many such requests came.
    turns: HashMap<Vec<usize>, usize>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct ScriptFile {
    decisions: Vec<String>,
}

impl Script {
    /// Steps that answer any request but a REPORT, in turn.
    pub fn new(steps: Vec<Step>) -> Script {
        Script {
            steps: steps.into_iter().map(|s| (None, s)).collect(),
            turns: HashMap::new(),
        }
    }

    /// `decisions: [approve, "429:2", "APPROVAL create design: reject", …]`; errors name the
    /// file, the line and the step.
    pub fn parse(source: &str, text: &str) -> Result<Script, ScriptError> {
        let file: ScriptFile = serde_saphyr::from_str(text)
            .map_err(|e| ScriptError::Yaml(crate::text::yaml_error(source, &e.to_string())))?;
        let at = |step: &str| {
            text.lines()
                .position(|l| l.contains(step.trim()))
                .map(|n| format!("{source}:{}", n + 1))
                .unwrap_or_else(|| source.to_string())
        };
        let steps = file
            .decisions
            .iter()
            .map(|s| Self::step(s).map_err(|error| ScriptError::Step { at: at(s), error }))
            .collect::<Result<Vec<_>, _>>()?;
        if steps.is_empty() {
            return Err(ScriptError::Empty {
                file: source.to_string(),
            });
        }
        Ok(Script {
            steps,
            turns: HashMap::new(),
        })
    }

    /// One step, with what it answers when it names it (`SELECTOR: STEP`).
    fn step(text: &str) -> Result<(Option<Selector>, Step), StepError> {
        if let Some((head, step)) = text.split_once(':') {
            if let Some(selector) = Selector::parse(head).map_err(|what| StepError {
                step: text.to_string(),
                what,
            })? {
                return Ok((Some(selector), Step::parse(step.trim())?));
            }
        }
        Ok((None, Step::parse(text)?))
    }

    /// The step for a valid request `body`: the steps that answer it, in turn (so that each
    /// kind of request sees its own steps in order, whatever comes between); `decide` when none
    /// does.
    pub fn step_for(&mut self, body: &Value) -> Step {
        let answering: Vec<usize> = self
            .steps
            .iter()
            .enumerate()
            .filter(|(_, (selector, _))| match selector {
                Some(s) => s.matches(body),
                None => body["request_type"] != "REPORT",
            })
            .map(|(i, _)| i)
            .collect();
        if answering.is_empty() {
            return Step::Decide;
        }
        let turn = self.turns.entry(answering.clone()).or_insert(0);
        let step = self.steps[answering[*turn % answering.len()]].1.clone();
        *turn += 1;
        step
    }
}

/// What the mock answered to one request, for the judge.
#[derive(Debug, Clone, Default)]
pub struct Answered {
    pub status: u16,
    /// The LibrarianResponse's status and request_id, when there was one.
    pub decision: Option<String>,
    pub request_id: Option<String>,
    pub retry_after: Option<u64>,
    /// A failure the client may retry (5xx, a reset, a body that is not JSON, a 429).
    pub retryable: bool,
    /// An escalation: when its human decides (None: not known, as behind a proxy, where a
    /// status that shows the decision tells it: [`ClientJudge::decided`]).
    pub decided_at: Option<Instant>,
    /// When the answer went out (None: now).
    pub at: Option<Instant>,
}

/// How a request's `Authorization` stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bearer {
    Missing,
    Sent,
    /// A bearer that is not the key the kit was told for the client (`proxy --agent-key`).
    NotTheKey,
}

/// One request from a client, as the judge is told it.
pub struct ClientSent<'a> {
    /// Who the judge holds to account for it.
    pub who: &'a str,
    pub method: &'a str,
    pub path: &'a str,
    pub bearer: Bearer,
    /// The body, when it is JSON; and as it came.
    pub body: Option<&'a Value>,
    pub raw: &'a [u8],
    /// When it came.
    pub at: Instant,
}

/// Where the judge sits, for what its skips say would exercise a rule: the mock Librarian
/// (which scripts the server's answers: `--script`) or a proxy before a real one (which
/// scripts nothing: the real server and client must do it).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Seat {
    #[default]
    Mock,
    Proxy,
}

/// What exercises each `client.*` rule behind a proxy, in the order [`ClientJudge::cases`]
/// draws them.
const BEHIND_PROXY: [&str; 11] = [
    "the client made no POST /agent/request through the proxy",
    "no request of this client came through the proxy",
    "the client made no POST /agent/request through the proxy",
    "the server answered this client no 429 that it went on after",
    "the server escalated none of this client's requests whose status it then polled twice",
    "the server answered this client no failure (5xx, a reset, malformed JSON, 429)",
    "the server approved none of this client's APPROVALs",
    "the server rejected none of this client's requests",
    "no rejected request of this client's was resubmitted",
    "the client sent no request with content (an APPROVAL, a QUERY)",
    "the server escalated none of this client's requests",
];

/// The judge of a client.
#[derive(Default)]
pub struct ClientJudge {
    state: Mutex<JudgeState>,
    seat: Seat,
}

#[derive(Default)]
struct JudgeState {
    schema: Tally,
    bearer: Tally,
    rate: Tally,
    backs_off: Tally,
    polling: Tally,
    retries: Tally,
    reports: Tally,
    resend: Tally,
    resubmissions: Tally,
    content: Tally,
    /// REPORTs of an escalated request before its human decided.
    premature: Tally,
    /// Escalations answered: each an occasion to wait for the human.
    escalations: u64,
    /// Escalated request ids not decided yet → when their human decides (None: not known).
    awaiting: HashMap<String, Option<Instant>>,
    /// Rejected requests (by what they ask: who, type, action, target) → how often each was
    /// resubmitted since.
    chains: HashMap<String, u32>,
    /// What the request in flight per agent asks, for on_answer.
    last_ask: HashMap<String, String>,
    requests: u64,
    /// Failures answered to /agent/request (5xx, a reset, a body that is not JSON, a 429):
    /// each an occasion to retry, the evidence of `client.retries`.
    failures: u64,
    /// Per agent: request times in the last minute; when a 429 lets it come back.
    windows: HashMap<String, VecDeque<Instant>>,
    not_before: HashMap<String, (Instant, u64)>,
    /// Escalated request ids → the last poll of their status.
    escalated: HashMap<String, Option<Instant>>,
    /// Approved APPROVALs not reported yet, and those reported.
    unreported: Vec<String>,
    /// Rejected bodies (by hash), and how often each body was sent after a retryable failure.
    rejected: HashSet<u64>,
    sends: HashMap<u64, u32>,
    /// Hash of the request in flight per agent, for on_answer.
    last_hash: HashMap<String, u64>,
    /// Requests agent-tck's probe marked as its own tests (`x-agent-tck-case`), set aside:
    /// "CASE at PATH" → how many.
    marked: std::collections::BTreeMap<String, u64>,
}

/// The parts of [`ClientJudge::on_request`], in the order it judges them.
impl JudgeState {
    /// `client.backs-off`: a request from `who` after a 429 came no sooner than its Retry-After.
    fn judge_back_off(&mut self, who: &str, method: &str, path: &str, now: Instant) {
        if let Some((until, secs)) = self.not_before.remove(who) {
            let early = until.saturating_duration_since(now);
            self.backs_off.check(early.is_zero(), || {
                format!(
                    "{who}: {method} {path} came {:.1} s after a 429 with Retry-After: {secs}",
                    secs as f64 - early.as_secs_f64()
                )
            });
        }
    }

    /// `client.polling`: a poll of an escalated request's status came no faster than once a
    /// second.
    fn judge_poll(&mut self, who: &str, id: &str, now: Instant) {
        if let Some(last) = self.escalated.get(id).copied() {
            if let Some(last) = last {
                let gap = now.duration_since(last);
                // A little slack under a second for timer jitter.
                self.polling.check(gap >= Duration::from_millis(900), || {
                    format!(
                        "{who}: {id} polled again after {} ms (no faster than once a second)",
                        gap.as_millis()
                    )
                });
            }
            self.escalated.insert(id.to_string(), Some(now));
        }
    }

    /// `client.rate`: `who`'s requests in the last minute, this one counted. False when `who`
    /// is one agent too many to track (the request is then not judged further).
    fn judge_rate(&mut self, who: &str, now: Instant) -> bool {
        if self.windows.len() >= TRACKED && !self.windows.contains_key(who) {
            return false;
        }
        let window = self.windows.entry(who.to_string()).or_default();
        while window
            .front()
            .is_some_and(|t| now.duration_since(*t) >= Duration::from_secs(60))
        {
            window.pop_front();
        }
        window.push_back(now);
        // Enough to tell "over the limit": the window never holds more than one past it.
        if window.len() > LIMITS.per_minute as usize + 1 {
            window.pop_front();
        }
        let in_minute = window.len();
        self.rate
            .check(in_minute <= LIMITS.per_minute as usize, || {
                format!(
                    "{who}: {in_minute} requests within a minute (rate_limit: 60/minute per agent)"
                )
            });
        true
    }

    /// `client.request-schema` and `client.content-size` of a JSON request body.
    fn judge_content(&mut self, who: &str, body: &Value) {
        let findings = crate::schema::schemas().validate(model::REQUEST_SCHEMA, body);
        self.schema.check(findings.is_empty(), || {
            format!("{who}: {}", crate::schema::findings_message(&findings))
        });
        if let Some(content) = body["content"].as_str() {
            let bytes = content.len();
            self.content.check(bytes <= LIMITS.max_content, || {
                format!(
                    "{who}: content of {bytes} bytes (max_content_size: 100 KB = {} bytes)",
                    LIMITS.max_content
                )
            });
        }
    }

    /// `client.resubmissions`: how often a rejected ask was made again; and the ask in flight,
    /// for on_answer.
    fn judge_resubmission(&mut self, who: &str, body: &Value) {
        let ask = ask_of(who, body);
        if let Some(n) = self.chains.get_mut(&ask) {
            *n += 1;
            let n = *n;
            self.resubmissions.check(n <= LIMITS.max_retries, || {
                format!(
                    "{who}: a rejected {} resubmitted {n} times (max_retry_attempts: 3)",
                    body["request_type"].as_str().unwrap_or("request")
                )
            });
        }
        if self.last_ask.len() < TRACKED || self.last_ask.contains_key(who) {
            self.last_ask.insert(who.to_string(), ask);
        }
    }

    /// A REPORT: `client.waits-for-human` when its request still awaited a human, and
    /// `client.reports` when it reports an approval not reported yet.
    fn judge_report(&mut self, who: &str, body: &Value, now: Instant) {
        if let Some(id) = body["request_id"].as_str() {
            match self.awaiting.get(id).copied() {
                Some(Some(at)) => {
                    let early = at.saturating_duration_since(now);
                    self.premature.check(early.is_zero(), || {
                        format!(
                            "{who}: REPORTed {id} while it awaited a human decision \
                             (ESCALATED), {:.1} s before it",
                            early.as_secs_f64()
                        )
                    });
                }
                Some(None) => self.premature.check(false, || {
                    format!(
                        "{who}: REPORTed {id} while it awaited a human decision (ESCALATED; \
                         no status of it had shown a decision yet)"
                    )
                }),
                None => {}
            }
            let before = self.unreported.len();
            self.unreported.retain(|r| r != id);
            if self.unreported.len() < before {
                self.reports.check(true, String::new);
            }
        }
    }

    /// `client.retries`: how often the same body (by `hash`) was sent; and the hash in flight,
    /// for on_answer.
    fn judge_sends(&mut self, who: &str, hash: u64) {
        if self.sends.len() >= TRACKED && !self.sends.contains_key(&hash) {
            return;
        }
        let sends = self.sends.entry(hash).or_insert(0);
        *sends += 1;
        let sends = *sends;
        self.retries.check(sends <= 1 + LIMITS.max_retries, || {
            format!("{who}: the same request sent {sends} times (max_retry_attempts: 3)")
        });
        self.last_hash.insert(who.to_string(), hash);
    }
}

/// What a request asks for, whatever its wording: who, its type, action and target (and the
/// request a REPORT reports). A fixed request resubmitted after a rejection asks for the same.
fn ask_of(who: &str, body: &Value) -> String {
    let field = |k: &str| body[k].as_str().unwrap_or("");
    format!(
        "{who} {} {} {} {} {}",
        field("request_type"),
        field("action"),
        field("target_type"),
        field("target_path"),
        field("request_id")
    )
}

/// A body's hash without what changes from one send to the next (timestamp, session).
fn body_hash(body: &Value) -> u64 {
    let mut v = body.clone();
    if let Some(o) = v.as_object_mut() {
        o.remove("timestamp");
        o.remove("session_id");
    }
    let mut h = std::collections::hash_map::DefaultHasher::new();
    v.to_string().hash(&mut h);
    h.finish()
}

impl ClientJudge {
    /// A judge of a client behind a proxy (its skips say what the real parties must do).
    pub fn behind_proxy() -> ClientJudge {
        ClientJudge {
            seat: Seat::Proxy,
            ..ClientJudge::default()
        }
    }

    /// One request from the client: who (the token or, without one, the agent_id), where, and
    /// the body when it is JSON.
    pub fn on_request(&self, sent: &ClientSent<'_>) {
        let Ok(mut s) = self.state.lock() else { return };
        let ClientSent {
            who,
            method,
            path,
            bearer,
            body,
            raw,
            at: now,
        } = *sent;
        s.requests += 1;
        s.bearer.check(bearer == Bearer::Sent, || match bearer {
            Bearer::NotTheKey => format!(
                "{who}: {method} {path}: a bearer token that is not the key given for it (--agent-key)"
            ),
            _ => format!("{method} {path}: no Authorization: Bearer token"),
        });
        s.judge_back_off(who, method, path, now);
        if let Some(id) = path.strip_prefix("/agent/status/") {
            s.judge_poll(who, id, now);
            return;
        }
        if path != "/agent/request" || method != "POST" {
            return;
        }
        if !s.judge_rate(who, now) {
            return;
        }
        let Some(body) = body else {
            s.schema.check(false, || {
                format!(
                    "{who}: a body that is not JSON: {}",
                    crate::text::excerpt(raw, 80)
                )
            });
            return;
        };
        s.judge_content(who, body);
        s.judge_resubmission(who, body);
        let hash = body_hash(body);
        // Judged once something was rejected: before, no request can be a resend of one.
        if !s.rejected.is_empty() {
            let fresh = !s.rejected.contains(&hash);
            s.resend.check(fresh, || {
                format!("{who}: a rejected request sent again unchanged")
            });
        }
        if body["request_type"] == "REPORT" {
            s.judge_report(who, body, now);
        }
        s.judge_sends(who, hash);
    }

    /// A request agent-tck's probe marked as its own test of `case` (header `x-agent-tck-case`):
    /// counted, not judged as the client's, nor is its answer.
    pub fn on_marked(&self, case: &str, method: &str, path: &str) {
        const KINDS: usize = 100;
        let Ok(mut s) = self.state.lock() else { return };
        s.requests += 1;
        // A lookup's path holds its request id: the endpoint is enough.
        let path = if path.starts_with("/agent/status/") {
            "/agent/status/{id}"
        } else {
            path
        };
        let key = format!("{} at {method} {path}", crate::text::excerpt_str(case, 80));
        if let Some(n) = s.marked.get_mut(&key) {
            *n += 1;
        } else if s.marked.len() < KINDS {
            s.marked.insert(key, 1);
        }
    }

    /// What the mock answered to `who`'s last request.
    pub fn on_answer(&self, who: &str, path: &str, body: Option<&Value>, answered: &Answered) {
        let Ok(mut s) = self.state.lock() else { return };
        let now = answered.at.unwrap_or_else(Instant::now);
        if let Some(secs) = answered.retry_after {
            s.not_before
                .insert(who.to_string(), (now + Duration::from_secs(secs), secs));
        }
        if path != "/agent/request" {
            return;
        }
        let hash = s.last_hash.get(who).copied();
        s.failures += u64::from(answered.retryable);
        if let Some(ask) = s.last_ask.get(who).cloned() {
            match answered.decision.as_deref() {
                // A rejection starts (or goes on with) a chain of resubmissions.
                Some("rejected") if s.chains.len() < TRACKED => {
                    s.chains.entry(ask).or_insert(0);
                }
                Some(_) => {
                    s.chains.remove(&ask);
                }
                None => {}
            }
        }
        if !answered.retryable {
            // Only failures count towards retries: a request answered is not retried.
            if let Some(h) = hash {
                s.sends.insert(h, 0);
            }
        }
        match (answered.decision.as_deref(), &answered.request_id) {
            (Some("rejected"), _) if s.rejected.len() < TRACKED => {
                if let Some(h) = hash {
                    s.rejected.insert(h);
                }
            }
            (Some("escalated"), Some(id)) if s.escalated.len() < TRACKED => {
                s.escalated.insert(id.clone(), None);
                s.escalations += 1;
                s.awaiting.insert(id.clone(), answered.decided_at);
            }
            (Some("approved"), Some(id))
                if body.is_some_and(|b| b["request_type"] == "APPROVAL")
                    && s.unreported.len() < TRACKED =>
            {
                s.unreported.push(id.clone());
            }
            _ => {}
        }
    }

    /// An escalated request now decided: polls of it are no longer judged.
    pub fn decided(&self, id: &str) {
        if let Ok(mut s) = self.state.lock() {
            s.escalated.remove(id);
            s.awaiting.remove(id);
        }
    }

    pub fn requests(&self) -> u64 {
        self.state.lock().map(|s| s.requests).unwrap_or(0)
    }

    /// The verdicts on the client.
    pub fn cases(&self) -> Vec<CaseResult> {
        let Ok(s) = self.state.lock() else {
            return Vec::new();
        };
        let mut reports = s.reports.clone();
        for id in &s.unreported {
            reports.check(false, || {
                format!("{id} was approved and never reported (a REPORT with its request_id)")
            });
        }
        // Every failure answered was an occasion to retry; the sends past 3 retries break it.
        let retries = Tally {
            checked: s.failures.max(s.retries.broken),
            ..s.retries.clone()
        };
        // Every escalation was an occasion to wait; the early REPORTs break it.
        let waits = Tally {
            checked: s.escalations.max(s.premature.broken),
            ..s.premature.clone()
        };
        let g = "client";
        // What would exercise each rule: the mock's own hint, or behind a proxy (which
        // scripts nothing) what the real server and client must do.
        let hint = |i: usize, mock: &str| match self.seat {
            Seat::Mock => mock.to_string(),
            Seat::Proxy => BEHIND_PROXY[i].to_string(),
        };
        let mut cases = vec![
            s.schema.judged("client.request-schema", g, Level::Must, "every /agent/request body is a valid AgentRequest, with its type's required fields", "Request Message Format; Validation Rules: REQUIRED_FIELDS", "requests to /agent/request", &hint(0, "the client made no POST /agent/request; have it ask for something")),
            s.bearer.judged("client.bearer", g, Level::Must, "every request carries Authorization: Bearer TOKEN", "REST API Endpoints: auth: Bearer token (agent-specific)", "requests", &hint(1, "no request reached the mock Librarian")),
            s.rate.judged("client.rate", g, Level::Must, "at most 60 requests a minute per agent", "REST API Endpoints: rate_limit: 60/minute per agent", "requests to /agent/request", &hint(2, "the client made no POST /agent/request; have it ask for something")),
            s.backs_off.judged("client.backs-off", g, Level::Must, "after a 429, the client waits at least Retry-After before its next request", "Troubleshooting: Rate limit exceeded (back off, check rate limit headers)", "requests after a 429", &hint(3, "the client sent nothing after a 429; add a `429:SECS` step to --script and have the client go on after it")),
            s.polling.judged("client.polling", g, Level::Must, "an escalated request's status is polled no faster than once a second", "Common Operations: 4. Escalation Handling (poll status)", "polls of an escalated request", &hint(4, "no escalated request's status was polled twice; add an `escalate:DUR` step to --script, for a client that polls GET /agent/status/{id}")),
            retries.judged("client.retries", g, Level::Must, "a failed request is retried at most 3 times", "Protocol Settings: limits.max_retry_attempts", "failures answered (5xx, reset, malformed JSON, 429)", &hint(5, "the mock answered no request with a failure; add a `500`, `reset`, `malformed-json` or `429:SECS` step to --script")),
            reports.judged("client.reports", g, Level::Should, "every approved APPROVAL is reported: a REPORT with its request_id", "Common Operations: 1. Agent Requesting Approval (report_completion)", "approved APPROVALs", &hint(6, "no APPROVAL was approved; have the client ask for approval (the `approve` step, or `decide` for a valid APPROVAL, approves it)")),
            s.resend.judged("client.no-unchanged-resend", g, Level::Should, "a rejected request is fixed before it is sent again, not resent unchanged", "Common Operations: 3. Handling Rejection", "requests after a rejection", &hint(7, "no request was rejected; add a `reject` step to --script")),
            s.resubmissions.judged("client.resubmissions", g, Level::Must, "a rejected request is resubmitted (fixed or not) at most 3 times", "Common Operations: 3. Handling Rejection (retry_response); Protocol Settings: limits.max_retry_attempts", "resubmissions after a rejection", &hint(8, "no rejected request was resubmitted; add a `reject` step to --script (`APPROVAL: reject` for every APPROVAL) and have the client fix and resubmit it")),
            s.content.judged("client.content-size", g, Level::Must, "no request's content is over max_content_size (100 KB = 102,400 bytes)", "Protocol Settings: limits.max_content_size", "requests with content", &hint(9, "the client sent no request with content; have it ask for something (an APPROVAL, a QUERY)")),
            waits.judged("client.waits-for-human", g, Level::Must, "an escalated request is not REPORTed before the human decision", "Common Operations: 4. Escalation Handling (Agent must wait for human decision)", "escalations", &hint(10, "no request was escalated; add an `escalate:DUR` step to --script for the client's APPROVAL")),
        ];
        if s.requests == 0 {
            let why = match self.seat {
                Seat::Mock => "not judged: no request reached the mock Librarian; point the agent client at the URL it printed and have it make requests",
                Seat::Proxy => "not judged: no request of this client came through the proxy; point it at the proxy's URL in place of the server's and have it make requests",
            };
            for c in &mut cases {
                c.skip(why);
            }
        }
        if !s.marked.is_empty() {
            let mut case = CaseResult::new("client.probe-requests", g, Level::May, "requests agent-tck's probe marked as its own tests (x-agent-tck-case), set aside: not judged as the client's", "agent-tck (a probe's negative cases: a body that breaks the rules, no token, content over the limit, a burst past the rate limit)");
            let total: u64 = s.marked.values().sum();
            let kinds: Vec<String> = s.marked.iter().map(|(k, n)| format!("{k} ({n})")).collect();
            case.pass_noting(
                crate::report::Evidence::new(total, "requests marked as the probe's"),
                format!(
                    "{} set aside: {}",
                    crate::text::count(total, "marked requests"),
                    kinds.join(", ")
                ),
                String::new,
            );
            cases.push(case);
        }
        cases
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::Status;

    fn case<'c>(cases: &'c [CaseResult], id: &str) -> Option<&'c CaseResult> {
        cases.iter().find(|c| c.id == id)
    }

    /// The probe's marked requests are counted by case and endpoint, not judged; the client's
    /// own bad request beside them still fails its case; with none marked, the case is absent.
    #[test]
    fn marked_requests_are_set_aside_and_counted_by_case() {
        let judge = ClientJudge::default();
        for _ in 0..2 {
            judge.on_marked(
                "fields.approval-without-rationale",
                "POST",
                "/agent/request",
            );
        }
        judge.on_marked("status.no-leak", "GET", "/agent/status/req-000007");
        let cases = judge.cases();
        assert!(cases.iter().all(|c| c.status != Status::Fail), "{cases:#?}");
        let aside = case(&cases, "client.probe-requests").unwrap();
        assert_eq!(aside.status, Status::Pass);
        assert_eq!(aside.level, Level::May);
        assert_eq!(
            aside.message,
            "3 marked requests set aside: fields.approval-without-rationale at POST \
             /agent/request (2), status.no-leak at GET /agent/status/{id} (1)"
        );

        let body = serde_json::json!({"request_type": "APPROVAL", "agent_id": "a"});
        let sent = ClientSent {
            who: "token #1",
            method: "POST",
            path: "/agent/request",
            bearer: Bearer::Sent,
            body: Some(&body),
            raw: b"{}",
            at: Instant::now(),
        };
        judge.on_request(&sent);
        let cases = judge.cases();
        let schema = case(&cases, "client.request-schema").unwrap();
        assert_eq!(schema.status, Status::Fail, "{schema:#?}");
        assert!(schema.message.starts_with("1 of 1 "), "{}", schema.message);

        let none = ClientJudge::default();
        none.on_request(&sent);
        assert!(case(&none.cases(), "client.probe-requests").is_none());
    }
}
