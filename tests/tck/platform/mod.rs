//! A small reference round-table platform, and variants of it that each break one rule of the
//! spec (`../shared/specs/roundtable-external-agent-protocol.md`).
//!
//! The mock fleet plays the agents against a real platform and judges, from what the platform
//! sends them, whether it follows the spec. To test the fleet we need a platform whose behaviour
//! we know: [`Variant::Conforming`] follows every rule the fleet judges, and each other variant
//! breaks exactly one of them (the tests below prove both halves: each deviation shows under its
//! variant and under no other).
//!
//! The platform registers agents (`/api/v1/agents`) and runs one deliberation per
//! `POST /api/v1/round-table/tasks`, synchronously: /analyze to every participant at once, then
//! /challenge to those whose analysis was usable (each with the *other* usable analyses), then
//! /vote on a synthesis. It calls agents with the kit's bounded client, so a deadline and a byte
//! cap hold on every exchange, and every agent failure ends as an exclusion with a reason, never
//! a panic or a 5xx.
//!
//! `api` holds the HTTP routes, `deliberation` the three phases; `tests` the platform's own
//! tests (its fixtures, then the conforming platform, registration, and the variants).

mod api;
mod deliberation;
mod tests;

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::stub_server::{self as server, Running};
use agent_tck::phrases::PhraseSet;
use agent_tck::protocols::roundtable::model::AnalyzeRequest;
use agent_tck::transport::http::{send, BaseUrl, Limits, Request};
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Path, State};
use axum::http::{header, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, post};
use axum::{Json, Router};
use futures::future::join_all;
use serde::Deserialize;
use serde_json::{json, Map, Value};

use api::router;

/// Largest agent answer the platform reads (spec: Response Size Limits).
const MAX_BODY: usize = 5_000_000;
/// Longest string the platform forwards, in characters (spec: Response Size Limits).
const MAX_CHARS: usize = 50_000;
/// Lists the platform keeps at most so many items of; the excess is dropped silently.
const LIST_CAPS: [(&str, usize); 5] = [
    ("observations", 100),
    ("recommendations", 100),
    ("challenges", 100),
    ("concessions", 100),
    ("conditions", 20),
];
/// The "deadline" of [`Variant::NoTimeout`]: a year is no deadline for any test, and unlike
/// `Duration::MAX` it cannot overflow anyone's clock arithmetic.
const NO_DEADLINE: Duration = Duration::from_secs(365 * 24 * 3600);
/// How long [`Platform::stop`] lets deliberations in flight finish.
const STOP_GRACE: Duration = Duration::from_secs(1);
/// Largest request the platform's own API accepts (a task's content may be long).
const MAX_REQUEST: usize = 8 * 1024 * 1024;

/// Which platform to play: the conforming one, or one that breaks exactly one rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    Conforming,
    /// Waits for agents without a deadline: a hanging agent hangs the deliberation.
    NoTimeout,
    /// An agent answering 200 with invalid JSON makes the task endpoint answer 500.
    CrashOnInvalidJson,
    /// Forwards NUL characters from agent answers to other agents.
    NoNulStripping,
    /// Forwards strings longer than 50,000 characters untruncated.
    NoTruncation,
    /// An agent whose /analyze failed still appears in the others' /challenge `other_analyses`,
    /// as an empty analysis under its registered name.
    KeepsFailedAgents,
    /// Sends each agent its own analysis in `other_analyses`.
    OwnAnalysisInChallenge,
    /// Never sends `Authorization`, even to agents registered with an api_key.
    NoBearer,
    /// Omits `task_id` from /challenge requests.
    NoTaskId,
    /// Never challenges: /analyze only, then answers the task as completed.
    NeverChallenges,
    /// Calls an agent that timed out again, up to three times in the phase.
    RetriesTimeouts,
    /// Drops the whole challenge phase when any agent's /analyze failed, and goes on to /vote.
    DropsChallengeAfterFailure,
    /// Python's json module as KangaKode/aiscaffold uses it: its parser takes a bare `NaN` in an
    /// agent's answer, and its HTTP client (httpx, `allow_nan=False`) then refuses to serialise
    /// any request that carries the analysis — every /challenge (each holds the others'
    /// analyses) fails before it is sent, and the deliberation goes on to /vote.
    NanBreaksItsClient,
    /// Dies after its first challenge phase, as a process killed then would: nothing listens at
    /// its address any more and every open connection drops (it is served through a relay that
    /// dies, [`crate::support::relay`]).
    DiesAfterChallenge,
}

impl Variant {
    /// The variants whose deviation the platform's own tests below pin down, each against the
    /// others. The deliberation-shape variants ([`Variant::SHAPES`]) are left out: those
    /// scenarios read a /challenge that they never send; `evidence_roundtable.rs` judges them.
    pub const ALL: [Variant; 9] = [
        Variant::Conforming,
        Variant::NoTimeout,
        Variant::CrashOnInvalidJson,
        Variant::NoNulStripping,
        Variant::NoTruncation,
        Variant::KeepsFailedAgents,
        Variant::OwnAnalysisInChallenge,
        Variant::NoBearer,
        Variant::NoTaskId,
    ];

    /// Variants that change which calls a deliberation makes.
    pub const SHAPES: [Variant; 3] = [
        Variant::NeverChallenges,
        Variant::RetriesTimeouts,
        Variant::DropsChallengeAfterFailure,
    ];

    /// A short kebab-case name, for messages.
    pub fn name(self) -> &'static str {
        match self {
            Variant::Conforming => "conforming",
            Variant::NoTimeout => "no-timeout",
            Variant::CrashOnInvalidJson => "crash-on-invalid-json",
            Variant::NoNulStripping => "no-nul-stripping",
            Variant::NoTruncation => "no-truncation",
            Variant::KeepsFailedAgents => "keeps-failed-agents",
            Variant::OwnAnalysisInChallenge => "own-analysis-in-challenge",
            Variant::NoBearer => "no-bearer",
            Variant::NoTaskId => "no-task-id",
            Variant::NeverChallenges => "never-challenges",
            Variant::RetriesTimeouts => "retries-timeouts",
            Variant::DropsChallengeAfterFailure => "drops-challenge-after-failure",
            Variant::NanBreaksItsClient => "nan-breaks-its-client",
            Variant::DiesAfterChallenge => "dies-after-challenge",
        }
    }
}

#[derive(Debug, Clone)]
pub struct PlatformConfig {
    pub variant: Variant,
    /// Total deadline of each agent exchange (the spec's 120 s, configurable).
    pub agent_timeout: Duration,
    /// Refuse agents whose base_url host is loopback (`localhost`, 127.0.0.0/8, ::1, 0.0.0.0).
    pub refuse_loopback: bool,
    /// Guard against server-side request forgery as KangaKode/aiscaffold's `validate_url` does:
    /// refuse a base_url whose host is `localhost`, `metadata.google.internal`, any
    /// `*.internal` name, a loopback, private or link-local address, or a name that resolves
    /// to one (a name that does not resolve passes, as there).
    pub refuse_private: bool,
    /// Never answers a deregistration (`DELETE /api/v1/agents/NAME`): a platform that hangs as
    /// the fleet leaves.
    pub hang_deregistration: bool,
    /// When set, every `/api/v1/*` request needs `Authorization: Bearer <admin_token>`.
    pub admin_token: Option<String>,
    /// Calls a phase's agents one after another, in the task's order (its `agents` list, else
    /// registration order), rather than all at once: the order in which calls reach agents is
    /// then known, as a test that depends on it needs.
    pub one_at_a_time: bool,
}

impl Default for PlatformConfig {
    fn default() -> Self {
        PlatformConfig {
            variant: Variant::Conforming,
            agent_timeout: Duration::from_secs(120),
            refuse_loopback: false,
            refuse_private: false,
            hang_deregistration: false,
            admin_token: None,
            one_at_a_time: false,
        }
    }
}

/// A running platform on a loopback port the OS picked.
pub struct Platform {
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    shared: Arc<Shared>,
    server: Running,
}

/// Starts a platform on 127.0.0.1, port 0.
pub async fn start(config: PlatformConfig) -> Platform {
    let shared = Arc::new(Shared::new(config));
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, 0));
    let server = server::spawn(addr, router(shared.clone()))
        .await
        .expect("bind a loopback port");
    let url = if shared.variant() == Variant::DiesAfterChallenge {
        let relay = crate::support::relay(server.addr, crate::support::Death::Never).await;
        let die = shared.die.clone();
        tokio::spawn(async move {
            die.notified().await;
            relay.kill.notify_one();
        });
        relay.url
    } else {
        server.url()
    };
    Platform {
        url,
        shared,
        server,
    }
}

impl Platform {
    /// Stops the server. Deliberations in flight get [`STOP_GRACE`] to finish; a
    /// [`Variant::NoTimeout`] one may never finish, so after the grace its task is left to the
    /// runtime, which drops it when the test ends.
    pub async fn stop(self) {
        let _ = tokio::time::timeout(STOP_GRACE, self.server.stop()).await;
    }

    /// The names of the registered agents, in registration order.
    pub fn registered(&self) -> Vec<String> {
        self.shared
            .agents()
            .iter()
            .map(|a| a.name.clone())
            .collect()
    }

    /// The base URL `name` is registered with, once it is: waits for the registration (a fleet
    /// registers its agents as it starts), at most `within`.
    pub async fn base_url_of(&self, name: &str, within: Duration) -> Option<String> {
        let mut changed = self.shared.registrations.subscribe();
        let find = || {
            self.shared
                .agents()
                .iter()
                .find(|a| a.name == name)
                .map(|a| a.base_url.clone())
        };
        tokio::time::timeout(within, async {
            loop {
                if let Some(url) = find() {
                    return Some(url);
                }
                changed.changed().await.ok()?;
            }
        })
        .await
        .ok()
        .flatten()
    }

    /// Registers agent `name` at `url` (with `key`, when given): the status the platform
    /// answered (201: registered).
    pub async fn register(&self, name: &str, url: &str, key: Option<&str>) -> u16 {
        let mut body = json!({"name": name, "domain": "general review", "base_url": url});
        if let Some(key) = key {
            body["api_key"] = json!(key);
        }
        self.api("/api/v1/agents", &body).await.0
    }

    /// Runs one deliberation of `content` over every registered agent: the platform's status
    /// and answer.
    pub async fn deliberate(&self, content: &str) -> (u16, Value) {
        self.api("/api/v1/round-table/tasks", &json!({"content": content}))
            .await
    }

    /// POSTs `body` to the platform's own API, with the kit's bounded client (a minute at
    /// most: a deliberation of agents that hang takes 3 × their timeout).
    async fn api(&self, path: &str, body: &Value) -> (u16, Value) {
        let request = Request {
            method: "POST".into(),
            path: path.into(),
            headers: vec![("content-type".into(), "application/json".into())],
            body: Bytes::from(serde_json::to_vec(body).expect("JSON")),
        };
        let base = BaseUrl::parse(&self.url).expect("the platform's URL");
        let limits = Limits {
            deadline: Duration::from_secs(60),
            ..Limits::default()
        };
        match send(&base, &request, limits).await {
            Ok(r) => (
                r.status,
                serde_json::from_slice(&r.body).unwrap_or(Value::Null),
            ),
            Err(e) => panic!("the platform did not answer {path}: {e}"),
        }
    }

    /// How many deregistrations reached the platform so far (answered or not).
    pub fn deregistrations_seen(&self) -> usize {
        self.shared.deregistrations.load(Ordering::Relaxed)
    }

    /// How many prompt-injection patterns the scan found in agent answers so far (the spec's
    /// "scanned for prompt injection patterns (logged if detected)": counted, never altered).
    pub fn injections_flagged(&self) -> usize {
        self.shared.injections_flagged.load(Ordering::Relaxed)
    }
}

/// A registered agent.
#[derive(Debug, Clone)]
struct Agent {
    name: String,
    domain: String,
    base_url: String,
    base: BaseUrl,
    api_key: Option<String>,
    capabilities: Vec<String>,
    mode: String,
}

impl Agent {
    /// What the API shows of an agent: everything but its api_key.
    fn public(&self) -> Value {
        json!({
            "name": self.name,
            "domain": self.domain,
            "base_url": self.base_url,
            "capabilities": self.capabilities,
            "mode": self.mode,
        })
    }
}

/// State shared by the handlers.
struct Shared {
    config: PlatformConfig,
    agents: Mutex<Vec<Agent>>,
    injections: &'static PhraseSet,
    injections_flagged: AtomicUsize,
    deregistrations: AtomicUsize,
    /// Bumped at each registration (for [`Platform::base_url_of`] to wait on).
    registrations: tokio::sync::watch::Sender<usize>,
    next_task: AtomicU64,
    /// Kills the relay a [`Variant::DiesAfterChallenge`] platform is served through.
    die: Arc<tokio::sync::Notify>,
}

impl Shared {
    fn new(config: PlatformConfig) -> Shared {
        let clock = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        Shared {
            config,
            agents: Mutex::new(Vec::new()),
            injections: injection_patterns(),
            injections_flagged: AtomicUsize::new(0),
            deregistrations: AtomicUsize::new(0),
            registrations: tokio::sync::watch::Sender::new(0),
            next_task: AtomicU64::new(clock),
            die: Arc::new(tokio::sync::Notify::new()),
        }
    }

    fn variant(&self) -> Variant {
        self.config.variant
    }

    /// The registry. A handler cannot panic while holding it, but a poisoned lock would still
    /// hold valid data, so poisoning is ignored rather than spread.
    fn agents(&self) -> MutexGuard<'_, Vec<Agent>> {
        self.agents.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A fresh task id: 16 hex digits of a per-platform counter started at the clock.
    fn task_id(&self) -> String {
        format!("{:016x}", self.next_task.fetch_add(1, Ordering::Relaxed))
    }

    /// The agents of a task: the named ones (each once, in the order given), or all registered.
    fn participants(&self, names: Option<&[String]>) -> Result<Vec<Agent>, String> {
        let agents = self.agents();
        let Some(names) = names else {
            return Ok(agents.clone());
        };
        let mut out: Vec<Agent> = Vec::new();
        for name in names {
            let agent = agents
                .iter()
                .find(|a| &a.name == name)
                .ok_or_else(|| format!("unknown agent: {name}"))?;
            if !out.iter().any(|a| a.name == agent.name) {
                out.push(agent.clone());
            }
        }
        Ok(out)
    }

    /// The bounds of one agent exchange.
    fn limits(&self) -> Limits {
        let deadline = match self.variant() {
            Variant::NoTimeout => NO_DEADLINE,
            _ => self.config.agent_timeout,
        };
        Limits {
            deadline,
            max_body: MAX_BODY,
            ..Limits::default()
        }
    }

    /// The key sent as `Authorization: Bearer`, if the agent registered one.
    fn bearer<'a>(&self, agent: &'a Agent) -> Option<&'a str> {
        match self.variant() {
            Variant::NoBearer => None,
            _ => agent.api_key.as_deref(),
        }
    }

    /// Makes a usable answer safe to forward (spec: Response Sanitization): NUL characters
    /// stripped from every string (object keys too), every string cut to [`MAX_CHARS`], the lists
    /// of [`LIST_CAPS`] cut to their cap; then the prompt-injection scan, which only counts.
    fn sanitize(&self, agent: &str, endpoint: &str, mut answer: Value) -> Value {
        let strip_nul = self.variant() != Variant::NoNulStripping;
        let truncate = self.variant() != Variant::NoTruncation;
        visit_strings(&mut answer, &mut |s| {
            if strip_nul && s.contains('\0') {
                s.retain(|c| c != '\0');
            }
            if truncate {
                truncate_chars(s, MAX_CHARS);
            }
        });
        for (field, cap) in LIST_CAPS {
            if let Some(Value::Array(items)) = answer.get_mut(field) {
                items.truncate(cap);
            }
        }
        self.scan(agent, endpoint, &mut answer);
        answer
    }

    /// Counts (and logs) prompt-injection patterns in an answer, leaving it as it is.
    fn scan(&self, agent: &str, endpoint: &str, answer: &mut Value) {
        let mut found = 0;
        visit_strings(answer, &mut |s| found += self.injections.scan("", s).len());
        if found > 0 {
            self.injections_flagged.fetch_add(found, Ordering::Relaxed);
            eprintln!(
                "platform: {found} prompt-injection pattern(s) in {agent}'s /{endpoint} answer (logged, not altered)"
            );
        }
    }
}

/// The prompt-injection patterns of the built-in suite's `analyze.sanitization` case: the probe
/// and the platform share one definition of what an injection looks like.
fn injection_patterns() -> &'static PhraseSet {
    agent_tck::sanitization::patterns().expect("the shared patterns load")
}

/// Calls `f` on every string in `value`, object keys included.
fn visit_strings(value: &mut Value, f: &mut impl FnMut(&mut String)) {
    match value {
        Value::String(s) => f(s),
        Value::Array(items) => items.iter_mut().for_each(|item| visit_strings(item, f)),
        Value::Object(map) => {
            *map = std::mem::take(map)
                .into_iter()
                .map(|(mut key, mut item)| {
                    f(&mut key);
                    visit_strings(&mut item, f);
                    (key, item)
                })
                .collect();
        }
        _ => {}
    }
}

/// Keeps the first `max` characters of `s`.
fn truncate_chars(s: &mut String, max: usize) {
    if let Some((at, _)) = s.char_indices().nth(max) {
        s.truncate(at);
    }
}
