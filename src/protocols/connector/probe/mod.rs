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
use crate::judge::tape::Tape;
use crate::judge::{Message, Party};
use crate::mock::http1;
use crate::probe::args::Common;
use crate::probe::checks::Check;
use crate::probe::plugin::DriverRules;
use crate::probe::Suite as LoadedSuite;
use crate::report::{CaseResult, Evidence, Report};
use crate::text::{excerpt, Redactor};
use crate::transport::http::{self, BaseUrl, Limits, Request};
use crate::transport::liveness::{self, Watch};

mod across;
mod callbacks;
mod forward;

pub(crate) use across::{judge_across, Heard};
pub(crate) use forward::Forward;
use forward::{none_acknowledged, send_forward, text_of};

/// The built-in cases.
pub const SUITE: (&str, &str) = (
    "suites/connector.yaml",
    include_str!("../../../../suites/connector.yaml"),
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
    /// `--record` could not write, or `--replay` does not hold what the run asked.
    #[error("{0}")]
    Tape(String),
}

impl From<crate::judge::tape::TapeError> for ProbeError {
    fn from(e: crate::judge::tape::TapeError) -> Self {
        ProbeError::Tape(e.to_string())
    }
}

impl crate::error::LayerError for ProbeError {
    fn class(&self) -> crate::error::Class {
        use crate::error::Class;
        match self {
            ProbeError::Suite(_) | ProbeError::NotOneRule { .. } => Class::Usage,
            ProbeError::Listen(_) | ProbeError::Tape(_) => Class::Run,
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
    /// Where the exchanges are recorded, or replayed from.
    tape: Option<Arc<Tape>>,
    /// The callback endpoint itself (a replay plays the recorded callbacks to it).
    listening: BaseUrl,
}

impl Run<'_> {
    /// What the rules judged across the run read.
    fn heard(&self) -> Heard<'_> {
        Heard {
            forwards: &self.forwards,
            listener: &self.listener,
            reply_timeout: self.s.reply_timeout,
            died: self.watch.outages().first().map(|o| o.from),
            ended: None,
        }
    }

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
        self.play_callbacks(self.forwards.len() - 1);
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
    let (running, mut run) = Run::start(settings).await?;
    let mut cases = Vec::new();
    let mut later = Later::default();
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
        if let Some(case) = run.forward_case(&name, &args, case, &mut later).await {
            on_case(&case);
            cases.push(case);
        }
    }
    let waited = run.await_callbacks(&later).await;
    run.record_callbacks();
    if let Some(tape) = &run.tape {
        tape.finish()?;
    }
    for (name, mut case, forwarding) in std::mem::take(&mut later.across) {
        let judging = Instant::now();
        if !run.skip_unreachable(&mut case) {
            judge_across(
                &run.heard(),
                &name,
                &mut case,
                &later.isolated,
                later.second.as_deref(),
                later.flooded.as_ref().map(|(s, _)| s.as_str()),
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

impl<'a> Run<'a> {
    /// The callback endpoint listening, and the run that gives its URLs, its tape open.
    async fn start(settings: &'a Settings) -> Result<(http1::Running, Run<'a>), ProbeError> {
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
        let tape = Tape::open(&settings.common.tape)?;
        if let Some(tape) = &tape {
            // The forwards carry the callback endpoint's address, another in each run, and the
            // time each message was written.
            tape.volatile(regex::escape(base.trim_end_matches('/')));
            tape.volatile(r#""createdAt":"[^"]*""#);
        }
        let listening =
            BaseUrl::parse(&running.url()).map_err(|e| ProbeError::Listen(e.to_string()))?;
        let run = Run {
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
            )
            .taped(tape.clone(), Party::Agent(super::NAME.to_string())),
            tape,
            listening,
        };
        Ok((running, run))
    }
}

/// What the forwarding cases leave to be judged once the callbacks are in.
#[derive(Default)]
struct Later {
    /// The cases, with the time their forwards took.
    across: Vec<(String, CaseResult, Duration)>,
    /// The twenty sessions forwarded at once.
    isolated: Vec<String>,
    /// The session sent two messages.
    second: Option<String>,
    /// The session whose callback endpoint fails, and when its forward ended.
    flooded: Option<(String, Instant)>,
}

impl Run<'_> {
    /// Runs the forwards of rule `name` for `case`: the case judged on them, or None when it
    /// is judged later, on the callbacks (kept in `later`).
    async fn forward_case(
        &mut self,
        name: &str,
        args: &Value,
        mut case: CaseResult,
        later: &mut Later,
    ) -> Option<CaseResult> {
        let t0 = Instant::now();
        let sent_before = self.forwards.len();
        let deferred = match name {
            "forward" => {
                let kind = args["text"].as_str().unwrap_or("plain").to_string();
                let session = self.session(None);
                let extra = kind == "extra-fields";
                let i = self
                    .forward(&kind, &session, &text_of(&kind), extra, false)
                    .await;
                self.verdict_of(&[i], &mut case);
                false
            }
            "session_ids" => {
                let mut all = Vec::new();
                for id in [
                    "a".to_string(),
                    "s".repeat(128),
                    format!("tck_-{}_-", self.s.common.seed % 1000),
                ] {
                    let session = self.session(Some(id));
                    let what = "an edge session id";
                    all.push(self.forward(what, &session, "hello", false, false).await);
                }
                self.verdict_of(&all, &mut case);
                false
            }
            "isolation" => {
                let (sessions, all) = self.forward_at_once().await;
                let judged = self.own_forwards(&all, &mut case, false);
                if judged {
                    later.isolated = sessions;
                }
                judged
            }
            "second_message" => {
                let session = self.session(None);
                let a = self
                    .forward("the first message", &session, "first", false, false)
                    .await;
                tokio::time::sleep(Duration::from_millis(100)).await;
                let b = self
                    .forward("the second message", &session, "second", false, false)
                    .await;
                let judged = self.own_forwards(&[a, b], &mut case, true);
                if judged {
                    later.second = Some(session);
                }
                judged
            }
            "no_flood" => {
                let session = self.session(None);
                let what = "a message whose callback endpoint fails";
                let i = self.forward(what, &session, "hello", false, true).await;
                let judged = self.own_forwards(&[i], &mut case, true);
                if judged {
                    later.flooded = Some((session, Instant::now()));
                }
                judged
            }
            _ => {
                later.across.push((name.to_string(), case, Duration::ZERO));
                return None;
            }
        };
        if deferred {
            later.across.push((name.to_string(), case, t0.elapsed()));
            return None;
        }
        self.check_reachable(sent_before, &mut case);
        case.set_duration(t0.elapsed());
        Some(case)
    }

    /// Twenty sessions forwarded at once, as twenty users would: the sessions, and their
    /// forwards' indexes.
    async fn forward_at_once(&mut self) -> (Vec<String>, Vec<usize>) {
        let settings = self.s;
        let sessions: Vec<String> = (0..20).map(|_| self.session(None)).collect();
        let targets: Vec<String> = sessions
            .iter()
            .map(|s| self.listener.give(s, false))
            .collect();
        let sends = sessions.iter().zip(&targets).map(|(session, target)| {
            let callback = format!("{}{target}", self.base.trim_end_matches('/'));
            let payload = model::input(
                session,
                &settings.agent_id,
                &callback,
                &format!("message for {session}"),
            );
            let watch = &self.watch;
            async move {
                send_forward(settings, watch, "one of twenty at once", session, &payload).await
            }
        });
        let mut all = Vec::new();
        for forward in futures::future::join_all(sends).await {
            self.forwards.push(forward);
            self.play_callbacks(self.forwards.len() - 1);
            all.push(self.forwards.len() - 1);
        }
        (sessions, all)
    }

    /// Waits for the callbacks: every answered forward's session (the failing one apart) has
    /// one, or the reply timeout passed; the failing session is watched a while for retries.
    /// Returns when the wait began.
    async fn await_callbacks(&self, later: &Later) -> Instant {
        let waited = Instant::now();
        let expected: Vec<String> = self
            .forwards
            .iter()
            .filter(|f| !f.failing && f.acknowledged())
            .map(|f| f.session.clone())
            .collect();
        let watch_flood = Duration::from_secs(3).min(self.s.reply_timeout);
        self.play_strays().await;
        loop {
            let missing = expected.iter().any(|s| {
                self.listener.callbacks(s).is_empty() && self.listener.refused(s).is_empty()
            });
            let flood_done = later
                .flooded
                .as_ref()
                .is_none_or(|(_, t)| t.elapsed() >= watch_flood);
            if (!missing && flood_done) || waited.elapsed() >= self.s.reply_timeout {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        // A moment more for stray callbacks that follow the right ones.
        tokio::time::sleep(Duration::from_millis(200)).await;
        waited
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
