//! What the mock engine needs of a protocol whose agents it plays: its endpoints, a conforming
//! agent, the content behaviours that bend that agent's answers, and the checks it draws on a
//! platform from the requests it receives. A protocol folder implements [`AgentProtocol`]; the
//! engine (fleet, behaviours, observer, line server) never names a protocol.

use std::time::{Duration, Instant};

use serde_json::Value;

use super::decision::Decision;
use super::http1::Delivered;
use super::journal::AuthSeen;
use super::peer_end::PeerEnd;
use super::profile::Profile;
use super::{Body, Responder};
use crate::report::CaseResult;
use crate::schema::Finding;

/// An endpoint an agent serves, as the last segment of its path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Endpoint {
    pub name: &'static str,
    pub method: &'static str,
    /// Behaviours without `@ENDPOINT` apply here (false for /health: it stays conforming unless
    /// an item names it).
    pub misbehaves_by_default: bool,
    /// Bearer auth is required here when the agent has a key (false for /health, which platforms
    /// poll without credentials).
    pub needs_key: bool,
    /// The schema a platform's request must meet (`PROTOCOL/ENDPOINT.request`), if any.
    pub request_schema: Option<&'static str>,
}

impl Endpoint {
    /// A protocol message: POST, misbehaving by default, behind the agent's key, its request
    /// checked against `request_schema`.
    pub const fn post(name: &'static str, request_schema: Option<&'static str>) -> Endpoint {
        Endpoint {
            name,
            method: "POST",
            misbehaves_by_default: true,
            needs_key: true,
            request_schema,
        }
    }

    /// GET /health: open, conforming unless a behaviour names it.
    pub const fn health() -> Endpoint {
        Endpoint {
            name: "health",
            method: "GET",
            misbehaves_by_default: false,
            needs_key: false,
            request_schema: None,
        }
    }
}

/// A protocol's agents' behaviours (content behaviours: a misbehaviour of the protocol's own
/// answers; a transport's quirks) are of the one behaviour type, with the mutation a content
/// behaviour applies.
pub use super::behavior::kind::{Behavior as ContentBehavior, Mutating, Mutation};

/// How and when a run ended on its own account (not the platform's): a deadline of the kit's,
/// Ctrl-C, the end of the triggers.
#[derive(Debug, Clone)]
pub struct RunEnd {
    pub at: Instant,
    /// Since the run started.
    pub after: Duration,
    /// What ended it, in a few words: "--deliberation-deadline 20s", "Ctrl-C", "the end of the
    /// triggers".
    pub why: String,
    /// It abandoned a request to the platform (a trigger at its deadline, or on Ctrl-C): from
    /// `at` on, the platform may drop its own calls to the agents because of it, and such a
    /// close is the run's doing too.
    pub abandoned: bool,
}

impl RunEnd {
    /// "the run ended at +20.0 s (--deliberation-deadline 20s)".
    pub fn describe(&self) -> String {
        format!(
            "the run ended at +{:.1} s ({})",
            self.after.as_secs_f64(),
            self.why
        )
    }
}

/// What the user says the platform under test does (`--platform-timeout`, `--expect-max-turns`):
/// what an observer judges it against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlatformExpect {
    /// How long the platform waits for an answer before it gives up.
    pub timeout: Duration,
    /// The platform's turn limit, for protocols with turns (None: not stated).
    pub max_turns: Option<u32>,
}

impl PlatformExpect {
    pub fn timeout(timeout: Duration) -> PlatformExpect {
        PlatformExpect {
            timeout,
            max_turns: None,
        }
    }
}

/// What the platform's requests reach, as the verdicts name it: a fleet of mock agents (`mock
/// fleet`), or one (`mock agent`, which is not a fleet).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Served {
    Fleet,
    OneAgent,
    /// Real agents behind `agent-tck proxy`.
    Proxy,
}

impl Served {
    /// `the fleet`, `the mock agent`.
    pub fn name(self) -> &'static str {
        match self {
            Served::Fleet => "the fleet",
            Served::OneAgent => "the mock agent",
            Served::Proxy => "the proxy",
        }
    }

    /// How a hint says to give an agent behaviour `b` here: `serve --behavior hang`; behind
    /// the proxy, whose agents are real, `--fault NAME=hang on an agent`.
    pub fn with_behavior(self, b: &str) -> String {
        match self {
            Served::Proxy => format!("--fault NAME={b} on an agent"),
            Served::Fleet | Served::OneAgent => format!("serve --behavior {b}"),
        }
    }

    /// What the platform is to be pointed at: `the fleet's agents`, `the mock agent`.
    pub fn agents(self) -> &'static str {
        match self {
            Served::Fleet => "the fleet's agents",
            Served::OneAgent => "the mock agent",
            Served::Proxy => "the proxy's URLs for its agents",
        }
    }
}

/// One request an agent received (after routing), with what the agent decided to answer.
pub struct Seen<'a> {
    /// The request's number in the session (the same in [`Answered`]).
    pub seq: u64,
    /// The agent's name.
    pub agent: &'a str,
    /// Whether the agent was registered with a key (and so expects it as a bearer token).
    pub expects_key: bool,
    pub endpoint: &'a str,
    pub auth: AuthSeen,
    /// A fingerprint (FNV-1a) of the bearer key the request carried, 0 when none: it tells
    /// apart callers at one agent's URL (several registrations may share it, each with its own
    /// key). Never shown: it is derived from a secret.
    pub key_print: u64,
    /// The request's id (the protocol's [`AgentProtocol::request_id_field`]; empty when it has
    /// none), as in its [`Answered`].
    pub task: &'a str,
    /// The body: its JSON value on demand (`body.value()`), its members when the quick check
    /// admitted it.
    pub body: &'a Body<'a>,
    /// Where the body breaks its endpoint's request schema (validated before any lock is taken:
    /// it is the costly part, and every worker thread may be there at once).
    pub schema_findings: &'a [Finding],
    pub decision: &'a Decision,
    /// The answer's body as planned (a hang or a fault may keep it from being delivered).
    pub answer: &'a [u8],
    pub at: Instant,
}

/// An answer that is over, however it went.
pub struct Answered<'a> {
    /// The request's number, as in its [`Seen`].
    pub seq: u64,
    pub agent: &'a str,
    pub endpoint: &'a str,
    /// The request's id (empty when it has none).
    pub task: &'a str,
    /// When the request arrived.
    pub received: Instant,
    pub delivered: &'a Delivered,
    /// Who ended the wait, when the peer's side ended it and the server could tell (None: it
    /// did not look, or the answer went out).
    pub ended: Option<&'a PeerEnd>,
    /// When the observer is told (the answer is over): the rules read the time from here,
    /// never from the clock, so that a judging offline finds the same.
    pub at: Instant,
}

/// Judges a platform from what reaches the fleet.
pub trait PlatformObserver: Send + Sync {
    /// One request an agent received.
    fn on_request(&self, seen: &Seen<'_>);

    /// An answer is over.
    fn on_answer(&self, answered: &Answered<'_>) {
        let _ = answered;
    }

    /// A request that never arrived whole: the platform closed the connection (or stdin) in
    /// the middle of it. `what` says how much came.
    fn on_incomplete(&self, agent: &str, endpoint: &str, what: &str);

    /// The fleet file's driver sent its triggers and the platform answered every one: the
    /// deliberations they began are over, so what a protocol follows per deliberation (which
    /// phases each agent was called at) can be judged whole. `at`: when.
    fn on_triggers_answered(&self, at: Instant) {
        let _ = at;
    }

    /// The run is ending for a reason of its own (`end.why`): the answers still open are about
    /// to be cut by the fleet's shutdown. Those are the run's act, not the platform's: no rule
    /// counts them as a failure or a giving-up, and the cases they leave unjudged say why.
    fn on_run_end(&self, end: &RunEnd) {
        let _ = end;
    }

    /// The requests the platform was still waiting for at `at`, while its own timeout for
    /// them had not run out: each a few words ("beta /analyze, open 20.0 s of the platform's
    /// 2m"). A deadline of the run's that ran out meanwhile is the run's, not the platform's.
    fn waiting_within_timeout(&self, at: Instant) -> Vec<String> {
        let _ = at;
        Vec::new()
    }

    /// A request agent-tck's probe marked as its own deliberate test (header
    /// `x-agent-tck-case: CASE`): not the platform's doing, so not judged as such; reported.
    fn on_probe_request(&self, agent: &str, endpoint: &str, case: &str);

    /// The verdicts drawn now ([`PlatformObserver::cases_at`]).
    fn cases(&self, served: Served) -> Vec<CaseResult> {
        self.cases_at(served, Instant::now())
    }

    /// The verdicts, as report cases, drawn at `now` (what is still open is judged as open
    /// until then); `served` is what the platform's requests reached (a fleet, or one mock
    /// agent), as the verdicts name it.
    fn cases_at(&self, served: Served, now: Instant) -> Vec<CaseResult>;
}

/// The members of a protocol's answers that the encoding layer bends (`malformed`,
/// `invalid-utf8`): named by the protocol, so that the engine knows no answer's fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AnswerFields {
    /// Who answers: `duplicate-keys` writes it twice, the second time with an impostor's name.
    pub identity: &'static str,
    /// String members, most telling first: `invalid-utf8` breaks the first one present.
    pub text: &'static [&'static str],
    /// A number `nan` writes as the bare token `NaN` (the first one, depth first; else a new
    /// top-level member).
    pub number: &'static str,
}

/// How a platform of the protocol is driven from a fleet file's `platform:` section: where
/// agents register and deliberations are triggered, and what a registration says. The fleet
/// file may override the paths and the trigger's body; the engine's driver knows no platform's
/// API of its own.
pub struct PlatformApi {
    /// Where agents register (`POST`), and deregister (`DELETE {path}/NAME`).
    pub agents_path: &'static str,
    /// Where a trigger is sent by default.
    pub trigger_path: &'static str,
    /// The trigger's default body (its strings may hold `{{ n }}` and `{{ task }}`).
    pub trigger_body: fn() -> Value,
    /// The registration body of one agent, served at `url`, in registration mode `mode`
    /// (without its key: the driver adds `api_key` when the agent has one).
    pub registration: fn(agent: &Profile, url: &str, mode: &str) -> Value,
    /// The registration's member that holds the agent's URL (a refusal's hint names it).
    pub url_member: &'static str,
    /// How many times the platform's per-call timeout one triggered deliberation may take
    /// (its calls in sequence): its deadline is that many timeouts plus the trigger's margin.
    pub calls_in_sequence: u32,
}

/// A protocol as the mock engine sees it.
pub trait AgentProtocol: Send + Sync + 'static {
    /// The registry key.
    fn name(&self) -> &'static str;

    /// The endpoints, in the order reports list them.
    fn endpoints(&self) -> &'static [Endpoint];

    /// The endpoint a line of a line transport (stdio, TCP and Unix sockets) is a request to,
    /// when the protocol is served over them too.
    fn line_endpoint(&self) -> Option<&'static str> {
        None
    }

    /// The request member that identifies a request (the journal's and observers' task), if
    /// the protocol's requests carry one.
    fn request_id_field(&self) -> Option<&'static str> {
        None
    }

    /// The answer members the encoding layer bends.
    fn answer_fields(&self) -> &'static AnswerFields;

    /// How a platform of the protocol is driven (registration, triggers), if the kit can drive
    /// one.
    fn platform_api(&self) -> Option<&'static PlatformApi> {
        None
    }

    /// The conforming agent `name`, its content seeded by `seed`.
    fn reference(&self, name: &str, seed: u64) -> Box<dyn Responder>;

    /// The protocol's content behaviours.
    fn behaviors(&self) -> &'static [ContentBehavior];

    /// What the fleet judges of a platform from the requests it receives, when the protocol
    /// has rules of its own. None: the rules every protocol shares (`observe::SchemaObserver`).
    fn observer(&self, expect: &PlatformExpect) -> Option<Box<dyn PlatformObserver>> {
        let _ = expect;
        None
    }

    /// The endpoint named `name`.
    fn endpoint(&self, name: &str) -> Option<&'static Endpoint> {
        self.endpoints().iter().find(|e| e.name == name)
    }

    /// Its content behaviour named `name`.
    fn behavior(&self, name: &str) -> Option<&'static ContentBehavior> {
        self.behaviors().iter().find(|b| b.name == name)
    }
}
