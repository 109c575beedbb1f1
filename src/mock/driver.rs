//! Driving a real platform with the fleet: register its agents (`POST {platform}{agents path}`,
//! the body the protocol's [`PlatformApi`] writes), trigger deliberations with a configurable
//! request, check each answer, and deregister on the way out. Every step becomes report cases.
//! The paths, the registration body and the trigger's default body are the protocol's: this
//! file knows no platform's API.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use serde::Deserialize;
use serde_json::{json, Value};
use tokio::sync::Semaphore;

use super::agent::MockAgent;
pub use super::expect::{Condition, Expect};
use super::observe::{note_cut, Tally};
use super::protocol::{AgentProtocol, PlatformApi};
use crate::report::{CaseResult, Evidence, Level};
use crate::transport::http::{self, BaseUrl, Limits, Request};
use crate::transport::liveness::{self, Watch};

/// The case that names a platform that went down while the fleet drove it.
pub const PLATFORM_ALIVE: &str = "platform.alive";

/// The `platform:` section of a fleet file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlatformSpec {
    /// The platform's base URL.
    pub url: String,
    /// Bearer token for the platform's API (prefer `token_env`).
    #[serde(default)]
    pub token: Option<String>,
    /// Environment variable holding the bearer token.
    #[serde(default)]
    pub token_env: Option<String>,
    /// The platform's per-endpoint agent timeout (to judge slow agents and deadlines).
    #[serde(default = "default_timeout")]
    pub timeout: String,
    #[serde(default)]
    pub register: Option<RegisterSpec>,
    #[serde(default)]
    pub trigger: Option<TriggerSpec>,
}

fn default_timeout() -> String {
    "120s".into()
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RegisterSpec {
    /// Default: the protocol's [`PlatformApi::agents_path`].
    #[serde(default)]
    pub path: Option<String>,
    /// `DELETE {path}/{name}` for each registered agent on exit.
    #[serde(default = "yes")]
    pub deregister: bool,
    #[serde(default = "sync")]
    pub mode: String,
}

fn yes() -> bool {
    true
}
fn sync() -> String {
    "sync".into()
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TriggerSpec {
    #[serde(default = "post")]
    pub method: String,
    /// Default: the protocol's [`PlatformApi::trigger_path`].
    #[serde(default)]
    pub path: Option<String>,
    /// A JSON body; in its strings `{{ n }}` becomes the trigger's number and `{{ task }}` a
    /// generated task text. Default: the protocol's [`PlatformApi::trigger_body`].
    #[serde(default)]
    pub body: Option<Value>,
    #[serde(default = "one")]
    pub count: usize,
    #[serde(default = "one")]
    pub concurrency: usize,
    /// Added to the platform's timeouts: a deliberation must end within both (its calls in
    /// sequence, each bounded by the timeout, hence N × timeout + margin; N is the protocol's
    /// [`PlatformApi::calls_in_sequence`]).
    #[serde(default = "margin")]
    pub margin: String,
    /// How long the fleet waits for a deliberation's answer, in place of N × timeout + margin:
    /// a run whose deliberations are stuck ends then (the deadline case fails) instead of
    /// waiting out a platform that waits minutes for a hung agent (`--deliberation-deadline`).
    #[serde(default)]
    pub deadline: Option<String>,
    #[serde(default)]
    pub expect: Expect,
}

fn post() -> String {
    "POST".into()
}
fn one() -> usize {
    1
}
fn margin() -> String {
    "30s".into()
}

/// What is wrong with a fleet file's `platform:` section, or with the protocol it would drive:
/// a usage error (nothing was run).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlatformSpecError {
    #[error("platform: the {protocol} protocol has no platform API that a fleet can drive")]
    NoApi { protocol: &'static str },
    /// A setting that does not read (`field`: its path in the fleet file).
    #[error("{field}: {cause}")]
    Setting { field: &'static str, cause: String },
    #[error("platform.token_env: the environment variable {var} is not set")]
    TokenEnvUnset { var: String },
    #[error("platform.trigger: count and concurrency must be at least 1")]
    NoTriggers,
    /// A condition of `platform.trigger.expect.json` that does not read.
    #[error(transparent)]
    Expectation(#[from] super::expect::ExpectError),
}

impl crate::error::LayerError for PlatformSpecError {
    fn class(&self) -> crate::error::Class {
        crate::error::Class::Usage
    }
}

/// Validated driver settings.
pub struct Driver {
    pub base: BaseUrl,
    token: Option<String>,
    pub timeout: Duration,
    pub register: Option<Register>,
    pub trigger: Option<Trigger>,
    /// The protocol's platform API: the registration body, and the paths the cases name.
    api: &'static PlatformApi,
    /// Whether the platform is still there ([`crate::transport::liveness`]).
    watch: Watch,
}

/// `platform.register`, its path resolved.
#[derive(Debug, Clone)]
pub struct Register {
    pub path: String,
    pub deregister: bool,
    pub mode: String,
}

/// `platform.trigger`, its path and body resolved and its conditions parsed.
#[derive(Debug, Clone)]
pub struct Trigger {
    pub spec: TriggerSpec,
    pub path: String,
    pub body: Value,
    pub conditions: Vec<Condition>,
    /// How long one deliberation may take.
    pub deadline: Duration,
    /// How long one may take by the spec: the platform's timeout for each call in sequence,
    /// plus the margin. A deadline set shorter is the run's own: it running out while the
    /// platform still waits for an agent within its timeout is not the platform's failure.
    pub bound: Duration,
    /// Where [`Trigger::deadline`] comes from, for the cases' messages.
    pub deadline_why: String,
}

impl Driver {
    /// `token_override`: the `--platform-token` flag (wins over the file). `protocol`: the
    /// protocol the fleet's agents speak, whose platform API is driven.
    pub fn new(
        spec: &PlatformSpec,
        token_override: Option<String>,
        protocol: &dyn AgentProtocol,
    ) -> Result<Driver, PlatformSpecError> {
        let api = protocol
            .platform_api()
            .ok_or_else(|| PlatformSpecError::NoApi {
                protocol: protocol.name(),
            })?;
        let setting =
            |field: &'static str| move |cause: String| PlatformSpecError::Setting { field, cause };
        let base = BaseUrl::parse(&spec.url).map_err(|e| setting("platform.url")(e.to_string()))?;
        let token = match (token_override, &spec.token, &spec.token_env) {
            (Some(t), _, _) => Some(t),
            (None, Some(t), _) => Some(t.clone()),
            (None, None, Some(var)) => Some(
                std::env::var(var)
                    .map_err(|_| PlatformSpecError::TokenEnvUnset { var: var.clone() })?,
            ),
            _ => None,
        };
        let timeout = crate::units::parse_duration(&spec.timeout)
            .map_err(|e| setting("platform.timeout")(e.to_string()))?;
        let trigger = match &spec.trigger {
            None => None,
            Some(t) => {
                let conditions = t.expect.conditions()?;
                let margin = crate::units::parse_duration(&t.margin)
                    .map_err(|e| setting("platform.trigger.margin")(e.to_string()))?;
                if t.count == 0 || t.concurrency == 0 {
                    return Err(PlatformSpecError::NoTriggers);
                }
                let (deadline, deadline_why) = match &t.deadline {
                    Some(text) => {
                        let deadline = crate::units::parse_duration(text)
                            .map_err(|e| setting("platform.trigger.deadline")(e.to_string()))?;
                        let why = format!(
                            "the deliberation deadline set by platform.trigger.deadline or --deliberation-deadline: {text}, in place of platform.timeout {} × {} + margin {}",
                            humantime::format_duration(timeout),
                            api.calls_in_sequence,
                            t.margin
                        );
                        (deadline, why)
                    }
                    None => (
                        timeout * api.calls_in_sequence + margin,
                        format!(
                            "the deliberation deadline: platform.timeout {} × {} + margin {}",
                            humantime::format_duration(timeout),
                            api.calls_in_sequence,
                            t.margin
                        ),
                    ),
                };
                Some(Trigger {
                    bound: timeout * api.calls_in_sequence + margin,
                    spec: t.clone(),
                    path: t.path.clone().unwrap_or_else(|| api.trigger_path.into()),
                    body: t.body.clone().unwrap_or_else(api.trigger_body),
                    conditions,
                    deadline,
                    deadline_why,
                })
            }
        };
        let register = spec.register.as_ref().map(|r| Register {
            path: r.path.clone().unwrap_or_else(|| api.agents_path.into()),
            deregister: r.deregister,
            mode: r.mode.clone(),
        });
        let watch = Watch::http(
            format!("the platform at {base}"),
            Instant::now(),
            &base.host,
            base.port,
        );
        Ok(Driver {
            base,
            token,
            timeout,
            register,
            trigger,
            api,
            watch,
        })
    }

    /// Where agents register by default (the protocol's), for the hints of the cases.
    pub fn agents_path(&self) -> &'static str {
        self.api.agents_path
    }

    /// The token, for redaction.
    pub fn secret(&self) -> Option<&str> {
        self.token.as_deref()
    }

    fn request(&self, method: &str, path: &str, body: Option<&Value>) -> Request {
        let mut headers = vec![("accept".to_string(), "application/json".to_string())];
        if body.is_some() {
            headers.push(("content-type".into(), "application/json".into()));
        }
        if let Some(t) = &self.token {
            headers.push(("authorization".into(), format!("Bearer {t}")));
        }
        Request {
            method: method.into(),
            path: path.into(),
            headers,
            body: body
                .map(|b| Bytes::from(serde_json::to_vec(b).unwrap_or_default()))
                .unwrap_or_default(),
        }
    }

    /// Sends to the platform; an error says it is the platform's (the client's messages speak
    /// of an agent) and which deadline ran out (`deadline_why`), or that the platform's death
    /// cut the request ([`Failure::Cut`]).
    async fn send(
        &self,
        request: &Request,
        deadline: Duration,
        deadline_why: &str,
    ) -> Result<http::Response, Failure> {
        let limits = Limits {
            deadline,
            ..Limits::default()
        };
        let (result, broke) = liveness::send(&self.watch, &self.base, request, limits).await;
        if let Some(why) = broke.and_then(|at| self.watch.cut(at, PLATFORM_ALIVE)) {
            return Err(Failure::Cut(why));
        }
        result.map_err(|e| platform_error(e, deadline_why))
    }

    /// When the platform went down, if it did (so far).
    pub fn went_down_at(&self) -> Option<Instant> {
        self.watch.went_down_at()
    }

    /// At the run's end: the case naming the platform's death (checked once more now), when
    /// it went down while the fleet drove it; `last_request`: the last request the fleet got
    /// from it.
    pub async fn alive_case(&self, last_request: Option<String>) -> Option<CaseResult> {
        self.watch.at_end().await;
        if !self.watch.went_down() {
            return None;
        }
        // Only a platform that went down has a last request worth telling.
        if let Some(last) = last_request {
            self.watch.heard(last);
        }
        self.watch.case(PLATFORM_ALIVE, "driver", "Error Handling")
    }

    /// Registers each agent with its URL from `urls`, adding each name registered to `ok` as it
    /// goes (so that a run interrupted halfway still deregisters those); returns the case.
    pub async fn register(
        &self,
        agents: &[MockAgent],
        urls: &[String],
        ok: &mut Vec<String>,
    ) -> Option<CaseResult> {
        let spec = self.register.as_ref()?;
        let started = Instant::now();
        let (mut failures, mut cut) = (Vec::new(), Vec::new());
        for (agent, url) in agents.iter().zip(urls) {
            let p = &agent.profile;
            let mut body = (self.api.registration)(p, url, &spec.mode);
            if let Some(k) = &p.api_key {
                body["api_key"] = json!(k);
            }
            let answer = self
                .send(
                    &self.request("POST", &spec.path, Some(&body)),
                    REGISTRATION_DEADLINE,
                    "the registration deadline",
                )
                .await;
            match answer {
                Ok(r) if (200..300).contains(&r.status) => ok.push(p.name.clone()),
                Err(Failure::Cut(why)) => cut.push(format!("{}: {why}", p.name)),
                Ok(r) => failures.push(format!(
                    "{}: {} {}{}",
                    p.name,
                    r.status,
                    registration_hint(r.status, self.api.url_member, url),
                    crate::text::excerpt(&r.body, 300)
                )),
                Err(e) => failures.push(format!("{}: {e}", p.name)),
            }
        }
        let mut case = self.register_case();
        case.set_duration(started.elapsed());
        if failures.is_empty() {
            case.pass_noting(
                Evidence::new(ok.len() as u64, "registrations"),
                format!(
                    "{} registered at {}{}",
                    crate::text::count(ok.len() as u64, "agents"),
                    self.base.join(&spec.path),
                    not_judged(&cut)
                ),
                || not_judged_at_all(&cut, "the fleet has no agent to register"),
            );
        } else {
            case.fail_on(
                Evidence::new((agents.len() - cut.len()) as u64, "registrations"),
                format!(
                    "{} of {} refused:\n  {}",
                    failures.len(),
                    crate::text::count(agents.len() as u64, "registrations"),
                    first_lines(&failures)
                ),
            );
        }
        Some(case)
    }

    fn register_case(&self) -> CaseResult {
        CaseResult::new(
            "platform.register",
            "driver",
            Level::Must,
            &format!(
                "every agent of the fleet registers (POST {{platform}}{})",
                self.api.agents_path
            ),
            "Registration",
        )
    }

    /// The driver's cases that `cases` lacks (the run ended before they were judged, e.g. on
    /// Ctrl-C), each skipped for `why`: the report says what was not reached.
    pub fn not_reached(&self, cases: &[CaseResult], why: &str) -> Vec<CaseResult> {
        let mut missing = Vec::new();
        if self.register.is_some() {
            missing.push(self.register_case());
        }
        if self.trigger.is_some() {
            missing.extend(trigger_cases());
        }
        missing
            .into_iter()
            .filter(|m| !cases.iter().any(|c| c.id == m.id))
            .map(|mut m| {
                m.skip(why);
                m
            })
            .collect()
    }

    /// The deregistration's case (when the file asks for one), skipped for `why`.
    pub fn deregister_skipped(&self, why: &str) -> Option<CaseResult> {
        self.register.as_ref().filter(|s| s.deregister)?;
        let mut case = self.deregister_case();
        case.skip(why);
        Some(case)
    }

    fn deregister_case(&self) -> CaseResult {
        CaseResult::new(
            "platform.deregister",
            "driver",
            Level::Should,
            &format!(
                "every registered agent deregisters on exit (DELETE {{platform}}{}/NAME)",
                self.api.agents_path
            ),
            "Registration",
        )
    }

    /// `DELETE {path}/{name}` for each registered agent (skipped when none was).
    pub async fn deregister(&self, names: &[String]) -> Option<CaseResult> {
        let spec = self.register.as_ref().filter(|s| s.deregister)?;
        let mut case = self.deregister_case();
        if names.is_empty() {
            case.skip("nothing was registered, so nothing to deregister");
            return Some(case);
        }
        let started = Instant::now();
        let (mut failures, mut cut) = (Vec::new(), Vec::new());
        for name in names {
            let path = format!("{}/{name}", spec.path.trim_end_matches('/'));
            match self
                .send(
                    &self.request("DELETE", &path, None),
                    REGISTRATION_DEADLINE,
                    "the registration deadline",
                )
                .await
            {
                Ok(r) if (200..300).contains(&r.status) => {}
                Err(Failure::Cut(why)) => cut.push(format!("{name}: {why}")),
                Ok(r) => failures.push(format!("{name}: {}", r.status)),
                Err(e) => failures.push(format!("{name}: {e}")),
            }
        }
        case.set_duration(started.elapsed());
        let judged = names.len() - cut.len();
        let evidence = Evidence::new(judged as u64, "registered agents");
        if failures.is_empty() {
            case.pass_noting(
                evidence,
                format!(
                    "{} deregistered{}",
                    crate::text::count(judged as u64, "agents"),
                    not_judged(&cut)
                ),
                || not_judged_at_all(&cut, ""),
            );
        } else {
            case.fail_on(evidence, format!("refused: {}", failures.join("; ")));
        }
        Some(case)
    }

    /// Sends the trigger `count` times (`concurrency` at once); returns its cases.
    /// `waiting`: the agents' requests the platform is waiting for, within its own timeout, at
    /// the moment it is called (asked when a deadline shorter than the spec's runs out).
    pub async fn trigger(&self, seed: u64, waiting: &(dyn Fn() -> Vec<String> + Sync)) -> Triggers {
        let Some(trigger) = &self.trigger else {
            return Triggers::default();
        };
        let Trigger {
            spec,
            path,
            body,
            conditions,
            deadline,
            bound,
            deadline_why,
        } = trigger;
        let deadline_why = deadline_why.as_str();
        let started = Instant::now();
        let gate = Arc::new(Semaphore::new(spec.concurrency));
        let runs = (0..spec.count).map(|n| {
            let gate = gate.clone();
            async move {
                let _permit = gate.acquire().await;
                let body = fill(body, n, seed);
                let t0 = Instant::now();
                let request = self.request(&spec.method, path, Some(&body));
                let send = self.send(&request, *deadline, deadline_why);
                tokio::pin!(send);
                // What the platform was waiting for when the run's own deadline, shorter than
                // the spec's, ran out: asked at that moment, before the trigger's connection
                // is dropped (a platform may then drop its calls to agents too).
                let mut within = Vec::new();
                let answer = tokio::select! {
                    biased;
                    _ = tokio::time::sleep_until((t0 + *deadline).into()), if deadline < bound => {
                        within = waiting();
                        send.await
                    }
                    answer = &mut send => answer,
                };
                if !matches!(answer, Err(Failure::Silent(_) | Failure::Late(_))) {
                    within.clear();
                }
                Triggered {
                    n,
                    started: t0,
                    elapsed: t0.elapsed(),
                    answer,
                    within,
                }
            }
        });
        let results = futures::future::join_all(runs).await;
        let target = self.base.join(path);
        let why = ShortDeadline {
            deadline: *deadline,
            bound: *bound,
            timeout: self.timeout,
        };
        let mut cases = judge_triggers(spec, conditions, &why, &target, &results);
        for c in &mut cases {
            c.set_duration(started.elapsed());
        }
        let overdue = || {
            results
                .iter()
                .filter(|r| matches!(r.answer, Err(Failure::Silent(_) | Failure::Late(_))))
        };
        Triggers {
            cases: cases.into(),
            overdue: overdue().count(),
            // When the first trigger was abandoned: from then on, the platform may drop what
            // it was doing for it (its calls to agents), and that is the run's doing.
            abandoned: overdue().map(|r| r.started + *deadline).min(),
        }
    }

    /// What ended a run whose triggers are done, in a few words: the deliberation deadline
    /// when `overdue` triggers ran it out, else the end of the triggers.
    pub fn end_of_triggers(&self, overdue: usize) -> String {
        match &self.trigger {
            Some(t) if overdue > 0 => format!(
                "the deliberation deadline of {}{}",
                humantime::format_duration(t.deadline),
                if t.spec.deadline.is_some() {
                    ", set by --deliberation-deadline or platform.trigger.deadline"
                } else {
                    ""
                }
            ),
            _ => "the end of the triggers".to_string(),
        }
    }

    /// Whether the trigger's cases say the platform answered every trigger (so every
    /// deliberation they began is over).
    pub fn all_answered(cases: &[CaseResult]) -> bool {
        let passed = |id: &str| cases.iter().any(|c| c.id == id && c.passed());
        passed("platform.trigger") && passed("platform.deliberation-deadline")
    }

    /// The trigger's cases, skipped for `why` (nothing registered: a deliberation would test
    /// nothing).
    pub fn trigger_skipped(&self, why: &str) -> Vec<CaseResult> {
        if self.trigger.is_none() {
            return Vec::new();
        }
        trigger_cases()
            .into_iter()
            .map(|mut c| {
                c.skip(why);
                c
            })
            .collect()
    }
}

/// The trigger's cases, and how many triggers the deliberation deadline ran out on.
#[derive(Default)]
pub struct Triggers {
    pub cases: Vec<CaseResult>,
    pub overdue: usize,
    /// When the deadline first ran out (a moment before the fleet closed that trigger).
    pub abandoned: Option<Instant>,
}

/// One trigger: its number, how long it took, and how it ended.
struct Triggered {
    n: usize,
    started: Instant,
    elapsed: Duration,
    answer: Result<http::Response, Failure>,
    /// When the deadline ran out shorter than the spec's: the agents' requests the platform
    /// was still waiting for within its own timeout.
    within: Vec<String>,
}

/// The deliberation deadline, against the spec's bound.
struct ShortDeadline {
    deadline: Duration,
    bound: Duration,
    /// The platform's timeout for each agent call.
    timeout: Duration,
}

impl ShortDeadline {
    /// Trigger `n`, cut by the deadline after `elapsed` while the platform waited for `within`.
    fn describe(&self, n: usize, elapsed: Duration, within: &[String]) -> String {
        let more = match within.len() {
            0..=3 => String::new(),
            k => format!(" and {} more", k - 3),
        };
        format!(
            "#{n}: the deliberation deadline {} ran out after {:.1} s while the platform was still waiting, within its own timeout {}, for {}{more}; the spec lets a deliberation take {}",
            humantime::format_duration(self.deadline),
            elapsed.as_secs_f64(),
            humantime::format_duration(self.timeout),
            within[..within.len().min(3)].join(", "),
            humantime::format_duration(self.bound),
        )
    }
}

/// The trigger's four cases, judged on what each trigger got.
fn judge_triggers(
    spec: &TriggerSpec,
    conditions: &[Condition],
    short: &ShortDeadline,
    target: &str,
    results: &[Triggered],
) -> [CaseResult; 4] {
    let deadline = short.deadline;
    let [mut reached, mut deadline_case, mut no5xx, mut expect_case] = trigger_cases();
    let (mut unreachable, mut silent, mut late) = (Vec::new(), Vec::new(), Vec::new());
    // Triggers the platform's death cut: no evidence of how it answers (platform.alive says it).
    let mut died = Vec::new();
    let (mut errors, mut unmet, mut latencies) = (Vec::new(), Vec::new(), Vec::new());
    // Triggers whose deadline, the run's own, ran out while the platform still waited for an
    // agent within its timeout: not the platform's failure, not judged.
    let mut cut = Tally::default();
    // Those whose deadline ran out on the platform's account.
    let mut overdue = Vec::new();
    let mut below_500 = 0u64;
    for Triggered {
        n,
        elapsed,
        answer,
        within,
        ..
    } in results
    {
        let took = format!("{:.1} s", elapsed.as_secs_f64());
        if !within.is_empty() {
            cut.check(false, || short.describe(*n, *elapsed, within));
        }
        if let Err(Failure::Silent(e) | Failure::Late(e)) = answer {
            if within.is_empty() {
                overdue.push(format!("#{n}: {e} (waited {took})"));
            }
        }
        match answer {
            Err(Failure::Unreachable(e)) => unreachable.push(format!("#{n}: {e} (after {took})")),
            Err(Failure::Silent(e)) => silent.push(format!("#{n}: {e} (waited {took})")),
            Err(Failure::Late(e)) => late.push(format!("#{n}: {e} (waited {took})")),
            Err(Failure::Cut(e)) => died.push(format!("#{n}: {e}")),
            Ok(r) => {
                latencies.push(*elapsed);
                if r.status >= 500 {
                    errors.push(format!(
                        "#{n}: {} {}",
                        r.status,
                        crate::text::excerpt(&r.body, 200)
                    ));
                } else {
                    // A 5xx is platform.no-5xx's finding; judging its body too would report it twice.
                    below_500 += 1;
                    unmet.extend(
                        expectations(spec, conditions, r)
                            .into_iter()
                            .map(|u| format!("#{n}: {u}")),
                    );
                }
            }
        }
    }
    let sent = results.len();
    let answered = latencies.len();
    // A trigger with no answer head within the deadline tells nothing of whether the platform
    // answers at all: that wait is the deadline case's failure, and this case says what it saw.
    let headed = answered + late.len();
    let silent_note = || {
        format!(
            "{} of {} got no answer head within the deliberation deadline {} (see platform.deliberation-deadline):\n  {}",
            silent.len(),
            crate::text::count(sent as u64, "triggers"),
            humantime::format_duration(deadline),
            silent.join("\n  ")
        )
    };
    let mut note = format!(
        "{} sent to {target}; {headed} got an HTTP answer",
        crate::text::count(sent as u64, "triggers")
    );
    if !silent.is_empty() {
        note = format!("{note}; {}", silent_note());
    }
    note.push_str(&not_judged(&died));
    settle(
        &mut reached,
        Evidence::new((headed + unreachable.len()) as u64, "triggers"),
        &unreachable,
        note,
        || not_judged_at_all(&died, &format!("not judged: {}", silent_note())),
    );
    latencies.sort();
    settle(
        &mut deadline_case,
        Evidence::new((answered + overdue.len()) as u64, "triggered deliberations"),
        &overdue,
        format!(
            "{answered} of {sent} answered within {}; {}",
            humantime::format_duration(deadline),
            latency_summary(&latencies)
        ),
        || {
            not_judged_at_all(
                &died,
                "no trigger reached the platform (see platform.trigger), so no deliberation ran",
            )
        },
    );
    note_cut(&mut deadline_case, &cut, "deliberations");
    let unanswered = || {
        if answered == 0 && !died.is_empty() {
            return not_judged_at_all(&died, "");
        }
        format!(
            "no trigger got a whole answer ({} unreachable, {} without an answer head, {} late): see platform.trigger and platform.deliberation-deadline",
            unreachable.len(),
            silent.len(),
            late.len()
        )
    };
    settle(
        &mut no5xx,
        Evidence::new(answered as u64, "deliberation answers"),
        &errors,
        format!(
            "{}, none 5xx",
            crate::text::count(answered as u64, "answers")
        ),
        unanswered,
    );
    settle(
        &mut expect_case,
        Evidence::new(below_500, "deliberation answers below 500"),
        &unmet,
        format!(
            "{} met every expectation",
            crate::text::count(below_500, "answers")
        ),
        || {
            if answered == 0 {
                unanswered()
            } else {
                format!("every answer was a 5xx ({answered}, see platform.no-5xx): the expectations are judged on answers below 500")
            }
        },
    );
    [reached, deadline_case, no5xx, expect_case]
}

/// The trigger's cases, not judged yet.
fn trigger_cases() -> [CaseResult; 4] {
    let reached = CaseResult::new(
        "platform.trigger",
        "deliberation",
        Level::Must,
        "each trigger reaches the platform and gets an HTTP answer (a connection, no reset)",
        "fleet file: platform.trigger",
    );
    let deadline_case = CaseResult::new("platform.deliberation-deadline",
            "deliberation",
            Level::Must,
            "each triggered deliberation is answered within 3 × the platform's timeout plus a margin, even with hanging and slow agents",
            "Timeouts (agents that do not answer are excluded, not waited for)",
        );
    let no5xx = CaseResult::new("platform.no-5xx",
            "deliberation",
            Level::Must,
            "each triggered deliberation is answered without a 5xx, despite malformed or hostile agents",
            "Error Handling (the platform never crashes because of a single agent failure)",
        );
    let expect_case = CaseResult::new(
        "platform.trigger-expect",
        "deliberation",
        Level::Must,
        "each deliberation's answer meets the fleet file's expectations (status, JSON conditions)",
        "fleet file: platform.trigger.expect",
    );
    [reached, deadline_case, no5xx, expect_case]
}

/// Why a request to the platform got no answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// The deadline ran out before any answer head came.
    Silent(String),
    /// The deadline ran out while the answer's body was arriving.
    Late(String),
    /// No answer at all: no connection, a reset, not HTTP.
    Unreachable(String),
    /// Cut by the platform's death (the skip message, naming the case that reports it): no
    /// evidence of how the platform answers.
    Cut(String),
}

/// ` (N not judged: …)` after a note, for the requests the platform's death cut.
fn not_judged(cut: &[String]) -> String {
    match cut {
        [] => String::new(),
        [one] => format!(" (1 not judged: {one})"),
        [first, ..] => format!(" ({} not judged, the first: {first})", cut.len()),
    }
}

/// The skip message of a case none of whose requests was judged: the platform's death, when it
/// cut them, else `otherwise`.
fn not_judged_at_all(cut: &[String], otherwise: &str) -> String {
    match cut.first() {
        Some(first) => match first.split_once(": not judged: ") {
            Some((_, why)) => format!("not judged: {why}"),
            None => first.clone(),
        },
        None => otherwise.to_string(),
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Silent(m) | Failure::Late(m) | Failure::Unreachable(m) | Failure::Cut(m) => {
                f.write_str(m)
            }
        }
    }
}

/// The HTTP client's error, told of the platform rather than of an agent.
fn platform_error(e: http::Error, deadline_why: &str) -> Failure {
    match e {
        http::Error::Connect { addr, reason } => Failure::Unreachable(format!(
            "platform unreachable: cannot connect to {addr}: {reason}"
        )),
        http::Error::Timeout { deadline, phase } => {
            let why = format!(
                "no complete answer within {} ({deadline_why}): {phase}",
                humantime::format_duration(deadline)
            );
            // The client's words for how far the exchange got (transport::http::Progress): a
            // body arriving means a head came.
            if phase.starts_with("body") {
                Failure::Late(why)
            } else {
                Failure::Silent(why)
            }
        }
        http::Error::Reset { phase } => {
            Failure::Unreachable(format!("connection reset by the platform {phase}"))
        }
        other => Failure::Unreachable(format!("the platform: {other}")),
    }
}

/// How long a registration or deregistration may take.
const REGISTRATION_DEADLINE: Duration = Duration::from_secs(30);

/// What a refused registration likely means; `url_member`: where the registration says the
/// agent's URL, `url` the URL sent. A 400 is most often a platform's guard against server-side
/// request forgery, which refuses loopback, private, link-local and `*.internal` addresses (and
/// names that resolve to them).
fn registration_hint(status: u16, url_member: &str, url: &str) -> Cow<'static, str> {
    match status {
        409 => "(name taken) ".into(),
        400 | 422 => format!(
            "(refused: the platform may not accept {url_member} {url} — a loopback, private or *.internal address? \
             give the fleet an address the platform accepts with advertise: or --advertise, and listen on it \
             with host: or --host, e.g. --host 0.0.0.0) "
        )
        .into(),
        401 | 403 => "(the platform token is missing or wrong) ".into(),
        _ => "".into(),
    }
}

fn expectations(spec: &TriggerSpec, conditions: &[Condition], r: &http::Response) -> Vec<String> {
    let mut unmet = Vec::new();
    let status_ok = if spec.expect.status.is_empty() {
        (200..300).contains(&r.status)
    } else {
        spec.expect.status.contains(&r.status)
    };
    if !status_ok {
        unmet.push(format!(
            "status {} (expected {})",
            r.status,
            if spec.expect.status.is_empty() {
                "2xx".to_string()
            } else {
                format!("{:?}", spec.expect.status)
            }
        ));
    }
    if !conditions.is_empty() {
        match serde_json::from_slice::<Value>(&r.body) {
            Ok(v) => unmet.extend(conditions.iter().filter_map(|c| c.violation(&v))),
            Err(e) => unmet.push(format!("the answer is not JSON: {e}")),
        }
    }
    unmet
}

/// Passes `case` on `evidence` when no problem was found (noting `ok`), else fails it listing the
/// first problems.
fn settle(
    case: &mut CaseResult,
    evidence: Evidence,
    problems: &[String],
    ok: String,
    unexercised: impl FnOnce() -> String,
) {
    if problems.is_empty() {
        case.pass_noting(evidence, ok, unexercised);
    } else {
        case.fail_on(evidence, listing(problems));
    }
}

/// `N problems:` (`1 problem:`) and the first ten, a line each.
fn listing(problems: &[String]) -> String {
    format!(
        "{}:\n  {}",
        crate::text::count(problems.len() as u64, "problems"),
        first_lines(problems)
    )
}

/// The first ten of `lines`, joined as an indented list.
fn first_lines(lines: &[String]) -> String {
    lines
        .iter()
        .take(10)
        .cloned()
        .collect::<Vec<_>>()
        .join("\n  ")
}

fn latency_summary(sorted: &[Duration]) -> String {
    if sorted.is_empty() {
        return "no latency".into();
    }
    let at = |q: f64| sorted[((sorted.len() - 1) as f64 * q).round() as usize];
    format!(
        "latency p50 {} ms, max {} ms",
        at(0.5).as_millis(),
        sorted[sorted.len() - 1].as_millis()
    )
}

/// The trigger body with `{{ n }}` and `{{ task }}` filled in.
fn fill(body: &Value, n: usize, seed: u64) -> Value {
    match body {
        Value::String(s) => {
            let mut s = s.replace("{{ n }}", &n.to_string());
            if s.contains("{{ task }}") {
                let task =
                    crate::content::Content::new(seed, &format!("trigger/{n}")).task_content();
                s = s.replace("{{ task }}", &task);
            }
            Value::String(s)
        }
        Value::Array(a) => Value::Array(a.iter().map(|v| fill(v, n, seed)).collect()),
        Value::Object(o) => Value::Object(
            o.iter()
                .map(|(k, v)| (k.clone(), fill(v, n, seed)))
                .collect(),
        ),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_protocol_without_a_platform_api_cannot_be_driven() {
        let spec: PlatformSpec = serde_saphyr::from_str("url: http://platform:8000\n").unwrap();
        let e = Driver::new(&spec, None, &crate::mock::stub::STUB)
            .err()
            .unwrap();
        assert_eq!(e, PlatformSpecError::NoApi { protocol: "stub" });
        assert_eq!(
            e.to_string(),
            "platform: the stub protocol has no platform API that a fleet can drive"
        );
        assert_eq!(
            crate::error::Error::from(e).shown(),
            (
                crate::error::Class::Usage,
                "platform: the stub protocol has no platform API that a fleet can drive".into()
            )
        );
    }

    #[test]
    fn trigger_bodies_are_filled() {
        let body = fill(
            &json!({"content": "{{ task }}", "title": "run {{ n }}"}),
            4,
            1,
        );
        assert_eq!(body["title"], "run 4");
        assert!(!body["content"].as_str().unwrap().contains("{{"));
    }

    fn spec() -> TriggerSpec {
        serde_saphyr::from_str("expect: { json: [\"status == completed\"] }").unwrap()
    }

    fn answer(status: u16, body: &str) -> Result<http::Response, Failure> {
        Ok(http::Response {
            status,
            headers: Vec::new(),
            body: Bytes::from(body.to_string()),
            body_exceeded: false,
            elapsed: Duration::from_millis(5),
        })
    }

    fn judged(results: Vec<(usize, Duration, Result<http::Response, Failure>)>) -> [CaseResult; 4] {
        let spec = spec();
        let conditions = vec![Condition::parse("status == completed").unwrap()];
        let results: Vec<Triggered> = results
            .into_iter()
            .map(|(n, elapsed, answer)| Triggered {
                n,
                started: Instant::now(),
                elapsed,
                answer,
                within: Vec::new(),
            })
            .collect();
        let short = ShortDeadline {
            deadline: Duration::from_secs(9),
            bound: Duration::from_secs(9),
            timeout: Duration::from_secs(3),
        };
        judge_triggers(&spec, &conditions, &short, "http://p/t", &results)
    }

    /// Each trigger case judges only what reached it, and says so.
    #[test]
    fn trigger_cases_are_judged_on_what_each_trigger_got() {
        use crate::report::Status::{Fail, Pass, Skip};
        let took = Duration::from_millis(20);
        let ok = r#"{"status":"completed"}"#;
        let [reached, deadline, no5xx, expect] = judged(vec![
            (0, took, answer(200, ok)),
            (1, took, answer(503, "down")),
        ]);
        assert_eq!((reached.status, deadline.status), (Pass, Pass));
        assert_eq!(no5xx.status, Fail, "{}", no5xx.message);
        assert!(no5xx.message.contains("#1: 503 down"), "{}", no5xx.message);
        // The 5xx is no-5xx's finding: the expectations judge the other answer only.
        assert_eq!(expect.status, Pass, "{}", expect.message);
        assert_eq!(expect.evidence.as_ref().map(|e| e.judged), Some(1));

        let silent =
            Failure::Silent("no complete answer within 9s: no response head received".into());
        let [reached, deadline, no5xx, expect] =
            judged(vec![(0, Duration::from_secs(9), Err(silent))]);
        assert_eq!(reached.status, Skip);
        assert!(
            reached
                .message
                .contains("1 of 1 trigger got no answer head")
                && reached.message.contains("(waited 9.0 s)"),
            "{}",
            reached.message
        );
        assert_eq!(deadline.status, Fail);
        assert_eq!((no5xx.status, expect.status), (Skip, Skip));
        assert!(
            no5xx.message.contains("1 without an answer head"),
            "{}",
            no5xx.message
        );

        let refused = Failure::Unreachable("platform unreachable: cannot connect".into());
        let [reached, deadline, ..] = judged(vec![(0, took, Err(refused))]);
        assert_eq!(reached.status, Fail, "{}", reached.message);
        assert_eq!(reached.evidence.as_ref().map(|e| e.judged), Some(1));
        assert_eq!(deadline.status, Skip);

        let [_, _, _, expect] = judged(vec![(0, took, answer(500, "x"))]);
        assert_eq!(expect.status, Skip);
        assert!(
            expect.message.contains("every answer was a 5xx"),
            "{}",
            expect.message
        );
    }

    /// `1 problem:`, `2 problems:` (issue 39, point 13).
    #[test]
    fn a_listing_counts_its_problems_in_their_number() {
        assert_eq!(listing(&["a: 500".into()]), "1 problem:\n  a: 500");
        assert_eq!(
            listing(&["a: 500".into(), "b: 502".into()]),
            "2 problems:\n  a: 500\n  b: 502"
        );
    }
}
