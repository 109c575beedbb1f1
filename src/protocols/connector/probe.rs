//! `agent-tck probe connector`: the kit plays the agent server — it forwards user messages to
//! the external agent's inputUrl and listens for the callbacks itself (`listener`) — and runs
//! the cases of `suites/connector.yaml`: first the forwards, then (once the callbacks are in, or
//! --reply-timeout has passed) the cases judged across them.

use std::net::SocketAddr;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use bytes::Bytes;
use serde_json::{json, Value};

use super::listener::Listener;
use super::model::{self, FORWARD_TIMEOUT};
use crate::mock::http1;
use crate::probe::args::Common;
use crate::probe::checks::Check;
use crate::probe::plugin::DriverRules;
use crate::probe::Suite as LoadedSuite;
use crate::report::{CaseResult, Evidence, Report};
use crate::text::{excerpt, Redactor};
use crate::transport::http::{self, BaseUrl, Limits, Request};
use crate::transport::liveness::{self, Watch};

/// The built-in cases.
pub const SUITE: (&str, &str) = (
    "suites/connector.yaml",
    include_str!("../../../suites/connector.yaml"),
);

const TEXTS: [&str; 4] = ["plain", "unicode-markdown", "large", "extra-fields"];
const RULES: [&str; 11] = [
    "forward",
    "session_ids",
    "isolation",
    "second_message",
    "no_flood",
    "ack_within_5s",
    "callback_arrives",
    "callback_exact_url",
    "callback_method",
    "callback_not_empty",
    "callback_raw_text",
];

/// The suite's rule vocabulary: `forward` takes `text:`, the others nothing.
fn validate(name: &str, args: &Value) -> Result<(), String> {
    match (name, args) {
        ("forward", a) => match a.get("text").and_then(Value::as_str) {
            Some(t) if TEXTS.contains(&t) => Ok(()),
            _ => Err(format!(
                "forward: needs `text:`, one of {}",
                TEXTS.join(", ")
            )),
        },
        (_, Value::Null) => Ok(()),
        (name, _) => Err(format!("{name}: takes no parameters")),
    }
}

pub(crate) static RULE_NAMES: DriverRules = DriverRules::new(&RULES, validate, "probe connector");

/// Why a connector probe could not run (a callback that does not come, or comes wrong, is a
/// failed case, not an error).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProbeError {
    /// The built-in suite does not load: its cases, as the command was given them, are wrong
    /// (a usage error, as a suite file's would be; nothing was sent).
    #[error("{0}")]
    Suite(String),
    /// A case of the built-in suite that is not one rule: the same.
    #[error("case {case}: a connector case runs one rule")]
    NotOneRule { case: String },
    /// The callback endpoint could not listen (`--callback-listen`): the run cannot go on.
    #[error("{0}")]
    Listen(String),
}

impl crate::error::LayerError for ProbeError {
    fn class(&self) -> crate::error::Class {
        use crate::error::Class;
        match self {
            ProbeError::Suite(_) | ProbeError::NotOneRule { .. } => Class::Usage,
            ProbeError::Listen(_) => Class::Run,
        }
    }
}

/// The built-in suite, loaded once.
pub fn suite() -> Result<LoadedSuite, ProbeError> {
    static LOADED: OnceLock<Result<LoadedSuite, String>> = OnceLock::new();
    LOADED
        .get_or_init(|| {
            LoadedSuite::parse(SUITE.0, SUITE.1, &RULE_NAMES).map_err(|e| e.to_string())
        })
        .clone()
        .map_err(ProbeError::Suite)
}

/// Validated settings of one run.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The inputUrl: its origin and its path.
    pub input: (BaseUrl, String),
    pub agent_id: String,
    /// Where the kit's callback endpoint listens.
    pub listen: SocketAddr,
    /// The base URL given to the agent (default: the bound address).
    pub callback_base: Option<String>,
    /// How long a callback may take to arrive.
    pub reply_timeout: Duration,
    /// How long the kit waits for an acknowledgement (the 5 s rule is judged apart).
    pub timeout: Duration,
    pub max_body: usize,
    pub common: Common,
}

impl Settings {
    pub fn wants(&self, id: &str) -> bool {
        self.common.wants(id)
    }
}

/// The first few of `problems` (three), the rest counted: `a; b; c (and 17 more)`.
fn a_few(problems: &[String]) -> String {
    const SHOWN: usize = 3;
    let shown: Vec<&str> = problems.iter().take(SHOWN).map(String::as_str).collect();
    match problems.len().saturating_sub(SHOWN) {
        0 => shown.join("; "),
        more => format!("{} (and {more} more)", shown.join("; ")),
    }
}

/// One forward: its session, when it went, what came back.
struct Forward {
    what: String,
    session: String,
    status: Option<u16>,
    /// An excerpt of the answer's body (what a non-2xx said).
    said: String,
    elapsed: Duration,
    error: Option<String>,
    /// Its callback endpoint answers 500 (the no-flood case).
    failing: bool,
    /// Nothing listened at the inputUrl: why the connection failed.
    unreachable: Option<String>,
    /// When it broke (refused, reset, closed), since the run started: the agent's act, or its
    /// death's ([`crate::transport::liveness`]).
    broke_at: Option<Duration>,
    /// When it ended, since the run started.
    ended_at: Duration,
}

impl Forward {
    /// Acknowledged: answered 2xx. Any other status (a 404 from a server without the route
    /// included) is no acknowledgement, and nothing follows from it.
    fn acknowledged(&self) -> bool {
        self.status.is_some_and(|s| (200..300).contains(&s))
    }

    /// How a forward that was not acknowledged went, for a failure message.
    fn unacknowledged(&self) -> String {
        match (&self.status, &self.error) {
            (Some(s), _) if self.said.is_empty() => format!(
                "{} ({}): answered {s}, not an acknowledgement (a 2xx)",
                self.what, self.session
            ),
            (Some(s), _) => format!(
                "{} ({}): answered {s} {}, not an acknowledgement (a 2xx)",
                self.what, self.session, self.said
            ),
            (None, Some(e)) => format!("{} ({}): {e}", self.what, self.session),
            _ => format!("{} ({}): no answer", self.what, self.session),
        }
    }
}

/// What the forwards got instead of an acknowledgement, counted (`30 answered 404`), for a
/// case that had none to judge.
fn none_acknowledged(forwards: &[Forward]) -> String {
    if forwards.is_empty() {
        return "no forward was sent in this run: run it with a case that forwards (forward.*, isolation.sessions, resilience.*)".into();
    }
    let mut answers: std::collections::BTreeMap<String, usize> = Default::default();
    for f in forwards {
        let key = match f.status {
            Some(s) => format!("answered {s}"),
            None => "got no answer".into(),
        };
        *answers.entry(key).or_default() += 1;
    }
    let counted: Vec<String> = answers.iter().map(|(k, n)| format!("{n} {k}")).collect();
    format!(
        "none of the {} was acknowledged 2xx ({}): a non-2xx answer is no acknowledgement; an inputUrl that answers the forwarded message 2xx exercises this case",
        crate::text::count(forwards.len() as u64, "forwards"),
        counted.join(", ")
    )
}

/// The case that names an external agent that went down mid-run.
const ALIVE: &str = "agent.alive";

/// The rules that forward messages (the others judge what those forwards brought).
const FORWARDING: [&str; 5] = [
    "forward",
    "session_ids",
    "isolation",
    "second_message",
    "no_flood",
];

/// An inputUrl where nothing listens: found by the first case whose forwards all failed to
/// connect, which fails saying so; every case after it is a skip naming it.
struct Unreachable {
    /// The case that failed for it.
    case: String,
    /// When the agent went down mid-run instead: the skip message of every case after.
    why: Option<String>,
}

struct Run<'a> {
    s: &'a Settings,
    listener: Arc<Listener>,
    base: String,
    forwards: Vec<Forward>,
    n: u64,
    unreachable: Option<Unreachable>,
    /// Whether the external agent is still there.
    watch: Watch,
}

impl Run<'_> {
    /// The inputUrl, as given.
    fn input_url(&self) -> String {
        format!("{}{}", self.s.input.0, self.s.input.1)
    }

    /// When every forward from `from` on failed to connect (and none before was found so):
    /// fails `case` as the run's one reachability failure and remembers it.
    fn check_reachable(&mut self, from: usize, case: &mut CaseResult) {
        let sent = &self.forwards[from.min(self.forwards.len())..];
        if self.unreachable.is_some() || sent.is_empty() {
            return;
        }
        let Some(first) = sent[0].unreachable.clone() else {
            return;
        };
        if sent.iter().any(|f| f.unreachable.is_none()) {
            return;
        }
        // An agent that answered before and is gone now went down: one failure names it
        // (agent.alive), and this case and the rest are not judged.
        let indexes: Vec<usize> = (from.min(self.forwards.len())..self.forwards.len()).collect();
        if let Some(why) = self.cut(&indexes) {
            case.skip(why.clone());
            self.unreachable = Some(Unreachable {
                case: case.id.clone(),
                why: Some(why),
            });
            return;
        }
        case.fail_on(
            Evidence::new(sent.len() as u64, "forwards"),
            format!(
                "the agent is unreachable at {}: {first}: is it running, and is --input-url its address? The cases after this one are skipped",
                self.input_url()
            ),
        );
        self.unreachable = Some(Unreachable {
            case: case.id.clone(),
            why: None,
        });
    }

    /// Skips `case` when the agent was found unreachable; true when it did.
    fn skip_unreachable(&self, case: &mut CaseResult) -> bool {
        let Some(u) = &self.unreachable else {
            return false;
        };
        if let Some(why) = &u.why {
            case.skip(why.clone());
            return true;
        }
        case.skip(format!(
            "not judged: the agent is unreachable at {} (see {}); an agent listening at its inputUrl exercises this case",
            self.input_url(),
            u.case
        ));
        true
    }

    fn session(&mut self, id: Option<String>) -> String {
        self.n += 1;
        id.unwrap_or_else(|| format!("tck-{}-{}", self.s.common.seed % 100_000, self.n))
    }

    /// Forwards `text` for `session` (its callback URL given now), as the server would.
    async fn forward(
        &mut self,
        what: &str,
        session: &str,
        text: &str,
        extra: bool,
        failing: bool,
    ) -> usize {
        let target = self.listener.give(session, failing);
        let callback = format!("{}{target}", self.base.trim_end_matches('/'));
        let mut payload = model::input(session, &self.s.agent_id, &callback, text);
        if extra {
            payload["activeArtifact"] = json!({"type": "note", "id": "n-1", "name": "Notes"});
            payload["message"]["tck"] = json!({"unknown": true});
        }
        let mut forward = send_forward(self.s, &self.watch, what, session, &payload).await;
        forward.failing = failing;
        self.forwards.push(forward);
        self.forwards.len() - 1
    }

    /// The skip message of a case one of whose forwards broke as the agent died.
    fn cut(&self, indexes: &[usize]) -> Option<String> {
        let times = indexes.iter().filter_map(|&i| self.forwards[i].broke_at);
        self.watch.first_cut(times, ALIVE)
    }

    /// Passes `case` when every forward of `indexes` was acknowledged 2xx; fails it naming
    /// each that was not, and what it got.
    fn verdict_of(&self, indexes: &[usize], case: &mut CaseResult) {
        if let Some(why) = self.cut(indexes) {
            case.skip(why);
            return;
        }
        let forwards: Vec<&Forward> = indexes.iter().map(|&i| &self.forwards[i]).collect();
        let evidence = Evidence::new(forwards.len() as u64, "forwards");
        let bad: Vec<String> = forwards
            .iter()
            .filter(|f| !f.acknowledged())
            .map(|f| f.unacknowledged())
            .collect();
        if bad.is_empty() {
            let ms: Vec<String> = forwards
                .iter()
                .map(|f| format!("{} ms", f.elapsed.as_millis()))
                .collect();
            case.pass_noting(
                evidence,
                format!("acknowledged 2xx ({})", ms.join(", ")),
                || "no forward was sent".into(),
            );
        } else if bad.len() == 1 {
            case.fail_on(evidence, bad.join(""));
        } else {
            // Twenty forwards answered alike read best as a count and a few of them.
            let message = format!(
                "{} of {} forwards were not acknowledged: {}",
                bad.len(),
                forwards.len(),
                a_few(&bad)
            );
            case.fail_on(evidence, message);
        }
    }

    /// Judges the forwards a case sent for its own rule (`indexes`); true when they were all
    /// acknowledged, and the rule is to be judged once the callbacks are in. A forward that was
    /// not acknowledged is a failure `forward.*` reports, and leaves the rule nothing to judge:
    /// the case is a skip saying so. With `all_needed` false (twenty sessions at once), some
    /// acknowledged and others not is a fault of the rule itself (forwards refused under load),
    /// which fails the case naming them.
    fn own_forwards(&self, indexes: &[usize], case: &mut CaseResult, all_needed: bool) -> bool {
        if let Some(why) = self.cut(indexes) {
            case.skip(why);
            return false;
        }
        let failed: Vec<String> = indexes
            .iter()
            .map(|&i| &self.forwards[i])
            .filter(|f| !f.acknowledged())
            .map(Forward::unacknowledged)
            .collect();
        if failed.is_empty() {
            self.verdict_of(indexes, case);
            return true;
        }
        if all_needed || failed.len() == indexes.len() {
            case.skip(format!(
                "{} of its {} not acknowledged, a failure the forward.* cases report ({}): nothing to judge this rule by; an inputUrl that acknowledges the forwarded messages 2xx exercises it",
                failed.len(),
                crate::text::count(indexes.len() as u64, "forwards"),
                a_few(&failed)
            ));
        } else {
            self.verdict_of(indexes, case);
        }
        false
    }
}

/// POSTs `payload` to the inputUrl as the server would (JSON, the acknowledgement awaited
/// [`ack_deadline`]), and says how it went.
async fn send_forward(
    s: &Settings,
    watch: &Watch,
    what: &str,
    session: &str,
    payload: &Value,
) -> Forward {
    let (base, path) = &s.input;
    let request = Request {
        method: "POST".into(),
        path: path.clone(),
        headers: vec![(
            "content-type".into(),
            "application/json; charset=utf-8".into(),
        )],
        body: Bytes::from(payload.to_string()),
    };
    let limits = Limits {
        deadline: ack_deadline(s),
        max_body: s.max_body,
        ..Limits::default()
    };
    let started = Instant::now();
    let (result, broke_at) = liveness::send(watch, base, &request, limits).await;
    Forward {
        broke_at,
        ended_at: watch.now(),
        what: what.to_string(),
        session: session.to_string(),
        status: result.as_ref().ok().map(|r| r.status),
        said: result
            .as_ref()
            .map(|r| excerpt(&r.body, 120))
            .unwrap_or_default(),
        elapsed: started.elapsed(),
        unreachable: match &result {
            Err(http::Error::Connect { addr, reason }) => {
                Some(format!("cannot connect to {addr}: {reason}"))
            }
            _ => None,
        },
        error: result.err().map(transport_error),
        failing: false,
    }
}

/// What the transport said, with where a deadline came from (the transport can only name
/// --timeout; the kit's own bound on an acknowledgement is the server's 5 s and 2 s more).
fn transport_error(error: http::Error) -> String {
    match error {
        http::Error::Timeout { deadline, phase } => {
            let whence = if deadline < FORWARD_TIMEOUT + ACK_GRACE {
                "--timeout"
            } else {
                "the server's 5 s timeout and 2 s of grace, to tell a slow acknowledgement from none"
            };
            format!(
                "no complete answer within {} ({whence}): {phase}",
                humantime::format_duration(deadline)
            )
        }
        other => other.to_string(),
    }
}

/// How long the kit waits for an acknowledgement: the server's 5 s and 2 s more, to tell a
/// slow agent (`forward.within-5s`) from one that never answers (cut there, as everywhere).
fn ack_deadline(s: &Settings) -> Duration {
    s.timeout.min(FORWARD_TIMEOUT + ACK_GRACE)
}

/// How long past the server's 5 s the kit waits for an acknowledgement.
const ACK_GRACE: Duration = Duration::from_secs(2);

fn text_of(kind: &str) -> String {
    match kind {
        "unicode-markdown" => "# Überblick 🔐\n\n- 认证模块 *prüfen*\n- راجع الفاتورة — סקור\n\n```rust\nfn main() {}\n```".into(),
        "large" => {
            let line = "A long message from the user, repeated to reach one hundred kilobytes. ";
            line.repeat(100 * 1024 / line.len() + 1)[..100 * 1024].to_string()
        }
        _ => "hello".into(),
    }
}

/// Runs the suite.
pub async fn run(
    settings: &Settings,
    on_case: &(dyn Fn(&CaseResult) + Send + Sync),
) -> Result<Report, ProbeError> {
    let suite = suite()?;
    let info = settings.common.run_info(
        super::NAME,
        format!("{}{}", settings.input.0, settings.input.1),
    );
    let listener = Arc::new(Listener::default());
    // Callbacks over --max-body are refused (413) by the engine, and the listener told why.
    let limits = http1::ServerLimits {
        max_body: settings.max_body,
    };
    let running = http1::spawn_with(listener.clone(), settings.listen, limits)
        .await
        .map_err(|e| ProbeError::Listen(e.to_string()))?;
    let base = settings
        .callback_base
        .clone()
        .unwrap_or_else(|| running.url());
    let (input, _) = &settings.input;
    let mut run = Run {
        s: settings,
        listener,
        base,
        forwards: Vec::new(),
        n: 0,
        unreachable: None,
        watch: Watch::http(
            format!(
                "the external agent at {}{}",
                settings.input.0, settings.input.1
            ),
            Instant::now(),
            &input.host,
            input.port,
        ),
    };
    let mut cases = Vec::new();
    // The cases judged once the callbacks are in, with the time their forwards took.
    let mut across: Vec<(String, CaseResult, Duration)> = Vec::new();
    let mut isolated: Vec<String> = Vec::new();
    let mut second: Option<String> = None;
    let mut flooded: Option<(String, Instant)> = None;
    for spec in suite.cases() {
        if !settings.wants(&spec.id.value) {
            continue;
        }
        let (name, args) = match spec.checks.first() {
            Some(Check::Rule(call)) => (call.name.clone(), call.args.clone()),
            _ => {
                return Err(ProbeError::NotOneRule {
                    case: spec.id.value.clone(),
                })
            }
        };
        let mut case = spec.case();
        if FORWARDING.contains(&name.as_str()) && run.skip_unreachable(&mut case) {
            on_case(&case);
            cases.push(case);
            continue;
        }
        let t0 = Instant::now();
        let sent_before = run.forwards.len();
        match name.as_str() {
            "forward" => {
                let kind = args["text"].as_str().unwrap_or("plain").to_string();
                let session = run.session(None);
                let i = run
                    .forward(
                        &kind,
                        &session,
                        &text_of(&kind),
                        kind == "extra-fields",
                        false,
                    )
                    .await;
                run.verdict_of(&[i], &mut case);
            }
            "session_ids" => {
                let mut all = Vec::new();
                for id in [
                    "a".to_string(),
                    "s".repeat(128),
                    format!("tck_-{}_-", settings.common.seed % 1000),
                ] {
                    let session = run.session(Some(id));
                    all.push(
                        run.forward("an edge session id", &session, "hello", false, false)
                            .await,
                    );
                }
                run.verdict_of(&all, &mut case);
            }
            "isolation" => {
                let sessions: Vec<String> = (0..20).map(|_| run.session(None)).collect();
                let mut all = Vec::new();
                // Forwards at once, as twenty users would.
                let targets: Vec<String> = sessions
                    .iter()
                    .map(|s| run.listener.give(s, false))
                    .collect();
                let sends = sessions.iter().zip(&targets).map(|(session, target)| {
                    let callback = format!("{}{target}", run.base.trim_end_matches('/'));
                    let payload = model::input(
                        session,
                        &settings.agent_id,
                        &callback,
                        &format!("message for {session}"),
                    );
                    let watch = &run.watch;
                    async move {
                        send_forward(settings, watch, "one of twenty at once", session, &payload)
                            .await
                    }
                });
                for forward in futures::future::join_all(sends).await {
                    run.forwards.push(forward);
                    all.push(run.forwards.len() - 1);
                }
                if run.own_forwards(&all, &mut case, false) {
                    isolated = sessions;
                    across.push((name.clone(), case, t0.elapsed()));
                    continue;
                }
            }
            "second_message" => {
                let session = run.session(None);
                let a = run
                    .forward("the first message", &session, "first", false, false)
                    .await;
                tokio::time::sleep(Duration::from_millis(100)).await;
                let b = run
                    .forward("the second message", &session, "second", false, false)
                    .await;
                if run.own_forwards(&[a, b], &mut case, true) {
                    second = Some(session);
                    across.push((name.clone(), case, t0.elapsed()));
                    continue;
                }
            }
            "no_flood" => {
                let session = run.session(None);
                let i = run
                    .forward(
                        "a message whose callback endpoint fails",
                        &session,
                        "hello",
                        false,
                        true,
                    )
                    .await;
                if run.own_forwards(&[i], &mut case, true) {
                    flooded = Some((session, Instant::now()));
                    across.push((name.clone(), case, t0.elapsed()));
                    continue;
                }
            }
            _ => {
                across.push((name.clone(), case, Duration::ZERO));
                continue;
            }
        }
        run.check_reachable(sent_before, &mut case);
        case.set_duration(t0.elapsed());
        on_case(&case);
        cases.push(case);
    }
    // The callbacks: every answered forward's session (the failing one apart) has one, or the
    // reply timeout passed; the failing session is watched a while for retries.
    let waited = Instant::now();
    let expected: Vec<String> = run
        .forwards
        .iter()
        .filter(|f| !f.failing && f.acknowledged())
        .map(|f| f.session.clone())
        .collect();
    let watch_flood = Duration::from_secs(3).min(settings.reply_timeout);
    loop {
        let missing = expected
            .iter()
            .any(|s| run.listener.callbacks(s).is_empty() && run.listener.refused(s).is_empty());
        let flood_done = flooded
            .as_ref()
            .is_none_or(|(_, t)| t.elapsed() >= watch_flood);
        if (!missing && flood_done) || waited.elapsed() >= settings.reply_timeout {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // A moment more for stray callbacks that follow the right ones.
    tokio::time::sleep(Duration::from_millis(200)).await;
    for (name, mut case, forwarding) in across {
        let judging = Instant::now();
        if !run.skip_unreachable(&mut case) {
            judge_across(
                &run,
                &name,
                &mut case,
                &isolated,
                second.as_deref(),
                flooded.as_ref().map(|(s, _)| s.as_str()),
            );
        }
        // Its forwards, the wait for the callbacks, and its own judgement.
        case.set_duration(forwarding + judging.duration_since(waited) + judging.elapsed());
        on_case(&case);
        cases.push(case);
    }
    running.stop().await;
    run.watch.at_end().await;
    cases.extend(run.watch.case(ALIVE, "agent", "Request Format"));
    Ok(info.report(cases, &Redactor::new(Vec::<String>::new())))
}

/// Judges `case` over `n` things of `of`: passed with none of `problems`, failed naming the
/// first few, skipped saying `unexercised` with nothing to judge.
fn over(
    case: &mut CaseResult,
    n: usize,
    of: &str,
    problems: &[String],
    note: String,
    unexercised: impl FnOnce() -> String,
) {
    let evidence = Evidence::new(n as u64, of);
    if problems.is_empty() {
        case.pass_noting(evidence, note, unexercised);
    } else {
        let message = format!("{} of {n} {of}: {}", problems.len(), a_few(problems));
        case.fail_on(evidence, message);
    }
}

/// Why a run had nothing to judge a case about callbacks by.
fn no_callbacks(run: &Run<'_>, answered: usize, timeout: &str) -> String {
    if answered == 0 {
        none_acknowledged(&run.forwards)
    } else {
        format!(
            "no callback came within {timeout} for the {answered} acknowledged sessions (see callback.arrives): an agent that POSTs its answer to the callbackUrl it was given exercises this case"
        )
    }
}

fn judge_across(
    run: &Run<'_>,
    rule: &str,
    case: &mut CaseResult,
    isolated: &[String],
    second: Option<&str>,
    flooded: Option<&str>,
) {
    let timeout = humantime::format_duration(run.s.reply_timeout).to_string();
    // A session whose agent died before its callback was due is no evidence either way.
    let died = run.watch.outages().first().map(|o| o.from);
    let cut_short = |f: &Forward| {
        died.is_some_and(|d| f.ended_at + run.s.reply_timeout > d)
            && run.listener.callbacks(&f.session).is_empty()
    };
    let answered: Vec<&Forward> = run
        .forwards
        .iter()
        .filter(|f| !f.failing && f.acknowledged() && !cut_short(f))
        .collect();
    let mut sessions: Vec<&str> = answered.iter().map(|f| f.session.as_str()).collect();
    sessions.sort();
    sessions.dedup();
    let all_callbacks: Vec<(String, super::listener::Callback)> = sessions
        .iter()
        .flat_map(|s| {
            run.listener
                .callbacks(s)
                .into_iter()
                .map(move |c| (s.to_string(), c))
        })
        .collect();
    let unexercised = || no_callbacks(run, sessions.len(), &timeout);
    let callbacks = |problems: Vec<String>, note: String, case: &mut CaseResult| {
        over(
            case,
            all_callbacks.len(),
            "callbacks",
            &problems,
            note,
            unexercised,
        )
    };
    match rule {
        "ack_within_5s" => {
            // Only an acknowledgement (2xx) is timed: a 404 at once is no acknowledgement.
            let acked: Vec<&Forward> = run.forwards.iter().filter(|f| f.acknowledged()).collect();
            let late: Vec<String> = acked
                .iter()
                .filter(|f| f.elapsed > FORWARD_TIMEOUT)
                .map(|f| format!("{} acknowledged after {:.1} s (the server gives up at 5 s, and never retries)", f.what, f.elapsed.as_secs_f64()))
                .collect();
            over(
                case,
                acked.len(),
                "forwards acknowledged 2xx",
                &late,
                String::new(),
                || none_acknowledged(&run.forwards),
            );
        }
        "callback_arrives" => {
            let missing: Vec<String> = sessions
                .iter()
                .filter(|s| run.listener.callbacks(s).is_empty())
                .map(|s| match run.listener.refused(s).first() {
                    Some(why) => format!(
                        "{s}: its callback was refused unread, {why} (raise --max-body to take it)"
                    ),
                    None => format!("{s}: no callback within {timeout}"),
                })
                .collect();
            over(
                case,
                sessions.len(),
                "acknowledged sessions",
                &missing,
                String::new(),
                || none_acknowledged(&run.forwards),
            );
        }
        "callback_exact_url" => {
            let wrong: Vec<String> = all_callbacks
                .iter()
                .filter(|(_, c)| !c.exact)
                .map(|(s, c)| {
                    format!(
                        "{s}: to {}, given {}: {}",
                        c.path,
                        c.given,
                        url_difference(&c.given, &c.path)
                    )
                })
                .collect();
            callbacks(wrong, String::new(), case);
        }
        "callback_method" => {
            let wrong: Vec<String> = all_callbacks
                .iter()
                .filter(|(_, c)| c.method != "POST")
                .map(|(s, c)| {
                    format!(
                        "{s}: {} {} (the document: POST; the kit's endpoint answered 405)",
                        c.method, c.path
                    )
                })
                .collect();
            callbacks(wrong, String::new(), case);
        }
        "callback_not_empty" => {
            let empty: Vec<String> = all_callbacks
                .iter()
                .filter(|(_, c)| c.body.iter().all(u8::is_ascii_whitespace))
                .map(|(s, c)| match c.body.len() {
                    0 => format!("{s}: an empty body"),
                    n => format!("{s}: a whitespace-only body ({n} bytes)"),
                })
                .collect();
            callbacks(empty, String::new(), case);
        }
        "callback_raw_text" => {
            let wrapped: Vec<String> = all_callbacks
                .iter()
                .filter(|(_, c)| {
                    serde_json::from_slice::<Value>(&c.body).is_ok_and(|v| v.is_object())
                })
                .map(|(s, c)| {
                    format!(
                        "{s}: a JSON envelope, not raw text: {}",
                        excerpt(&c.body, 80)
                    )
                })
                .collect();
            let mut types: Vec<String> = all_callbacks
                .iter()
                .map(|(_, c)| c.content_type.clone().unwrap_or_else(|| "(none)".into()))
                .collect();
            types.sort();
            types.dedup();
            callbacks(wrapped, format!("Content-Type: {}", types.join(", ")), case);
        }
        "isolation" => judge_isolation(run, case, isolated),
        "second_message" => {
            let Some(session) = second else {
                case.skip("the second message was not sent (resilience.second-message did not run its forwards)");
                return;
            };
            let n = run.listener.callbacks(session).len();
            if n >= 2 {
                case.pass(
                    Evidence::new(n as u64, "callbacks for two messages on one session"),
                    String::new,
                );
            } else {
                case.fail_on(
                    Evidence::new(2, "messages on one session"),
                    format!(
                        "{} for two messages on one session within {timeout}",
                        crate::text::count(n as u64, "callbacks")
                    ),
                );
            }
        }
        "no_flood" => judge_flood(run, case, flooded),
        _ => case.skip(format!("no rule {rule}")),
    }
}

/// Twenty sessions forwarded at once: each called back at its own URL, and no callback to a
/// session never given.
fn judge_isolation(run: &Run<'_>, case: &mut CaseResult, isolated: &[String]) {
    let evidence = Evidence::new(isolated.len() as u64, "sessions forwarded at once");
    let stray = run.listener.stray();
    let unanswered: Vec<String> = isolated
        .iter()
        .filter(|s| run.listener.callbacks(s).is_empty())
        .map(|s| format!("{s}: no callback"))
        .collect();
    if !stray.is_empty() {
        case.fail_on(
            evidence,
            format!(
                "{} to a session never given (answered 404), e.g. {}",
                crate::text::count(stray.len() as u64, "callbacks"),
                stray[0]
            ),
        );
    } else if !unanswered.is_empty() {
        case.fail_on(
            evidence,
            format!(
                "{} of {} got no callback at their own URL, e.g. {}",
                unanswered.len(),
                crate::text::count(isolated.len() as u64, "sessions"),
                unanswered[0]
            ),
        );
    } else {
        case.pass_noting(
            evidence,
            "each answered at its own URL; none to a session never given",
            || "no session was forwarded".into(),
        );
    }
}

/// What differs between the URL given (`given`: path and query) and the one a callback came to.
fn url_difference(given: &str, got: &str) -> String {
    let split = |u: &str| -> (String, Option<String>) {
        match u.split_once('?') {
            Some((p, q)) => (p.to_string(), Some(q.to_string())),
            None => (u.to_string(), None),
        }
    };
    let ((gp, gq), (p, q)) = (split(given), split(got));
    let mut said = Vec::new();
    if p != gp {
        said.push(if gp.ends_with(&p) {
            format!("the path lost its prefix `{}`", &gp[..gp.len() - p.len()])
        } else if super::listener::percent_decode(&p) == super::listener::percent_decode(&gp) {
            "the path is encoded differently".to_string()
        } else {
            format!("the path `{p}` is not `{gp}`")
        });
    }
    match (gq, q) {
        (Some(g), None) => said.push(format!("the query string `?{g}` was dropped")),
        (Some(g), Some(q)) if g != q => {
            said.push(format!("the query string is `?{q}`, not `?{g}`"))
        }
        (None, Some(q)) => said.push(format!("a query string `?{q}` was added")),
        _ => {}
    }
    if said.is_empty() {
        "they differ".into()
    } else {
        said.join(", and ")
    }
}

/// A session whose callback endpoint answers 500: each callback (told apart by its body) is
/// tried at most five times; many callbacks, each retried a few times, are no flood.
fn judge_flood(run: &Run<'_>, case: &mut CaseResult, flooded: Option<&str>) {
    let attempts = flooded
        .map(|s| run.listener.callbacks(s))
        .unwrap_or_default();
    // The attempts of each callback, in the order its first came.
    let mut by_body: Vec<(&[u8], Vec<Instant>)> = Vec::new();
    for a in &attempts {
        match by_body.iter_mut().find(|(b, _)| *b == a.body.as_slice()) {
            Some((_, times)) => times.push(a.at),
            None => by_body.push((&a.body, vec![a.at])),
        }
    }
    let Some((_, most)) = by_body.iter().max_by_key(|(_, t)| t.len()) else {
        let watched = Duration::from_secs(3).min(run.s.reply_timeout);
        case.skip(format!(
            "the agent made no callback within {} to the session whose endpoint answers 500: no retry to count; an agent that calls back (and retries a 5xx) exercises this case",
            humantime::format_duration(watched)
        ));
        return;
    };
    let gaps: Vec<String> = most
        .windows(2)
        .map(|w| format!("{} ms", w[1].duration_since(w[0]).as_millis()))
        .collect();
    let spacing = if gaps.is_empty() {
        String::new()
    } else {
        format!(", {} apart", gaps.join(", "))
    };
    let evidence = Evidence::new(
        by_body.len() as u64,
        format!(
            "callbacks to an endpoint answering 500 ({} attempts)",
            attempts.len()
        ),
    );
    let floods = by_body.iter().filter(|(_, t)| t.len() > 5).count();
    if floods > 0 {
        case.fail_on(
            evidence,
            format!(
                "{floods} of {} tried more than 5 times at a failing endpoint; the most, {} attempts of one callback{spacing}: more than a few retries, a flood",
                crate::text::count(by_body.len() as u64, "callbacks"),
                most.len()
            ),
        );
    } else {
        case.pass_noting(
            evidence,
            format!(
                "{}, at most {} each{spacing}",
                crate::text::count(by_body.len() as u64, "callbacks"),
                crate::text::count(most.len() as u64, "attempts")
            ),
            String::new,
        );
    }
}

/// Every case id.
pub fn case_ids() -> Result<Vec<String>, ProbeError> {
    Ok(suite()?.ids())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{Class, Error};

    #[test]
    fn the_built_in_suite_loads_and_errors_are_classed_by_type() {
        assert_eq!(case_ids().unwrap().len(), suite().unwrap().ids().len());
        assert!(!case_ids().unwrap().is_empty());
        assert_eq!(
            Error::from(ProbeError::NotOneRule {
                case: "forward.plain".into()
            })
            .shown(),
            (
                Class::Usage,
                "case forward.plain: a connector case runs one rule".into()
            )
        );
        assert_eq!(
            Error::from(ProbeError::Suite("suites/connector.yaml:3: bad".into())).shown(),
            (Class::Usage, "suites/connector.yaml:3: bad".into())
        );
        assert_eq!(
            Error::from(ProbeError::Listen(
                "cannot listen on 127.0.0.1:1: taken".into()
            ))
            .shown(),
            (Class::Run, "cannot listen on 127.0.0.1:1: taken".into())
        );
    }
}
