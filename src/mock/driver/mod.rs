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
mod triggers;
use triggers::*;
pub use triggers::{Failure, Triggers};

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

#[cfg(test)]
mod tests;
