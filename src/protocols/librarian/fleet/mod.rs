//! A fleet of agent clients against a real Librarian (`agent-tck mock fleet` with `protocol:
//! librarian`, or `--preset librarian-chaos`): each client has a behaviour and a rate, they all
//! run at once for a duration, and the fleet judges how the server held up — no 5xx, the right
//! refusal for each misbehaviour, the flood limited while well-behaved clients are not, those
//! answered within 10 s at p99, the server still answering at the end — with latency percentiles
//! per kind of client. Every answer any client gets is judged by the probe's rules
//! (`model::judge_answer`, `model::says_when_to_return`, shared, not copied): a 2xx is a
//! LibrarianResponse of the schema, answers meet the document's expectations (a rejection names
//! its violations), a 429 says when to come back — failures grouped per client.
//!
//! First the fleet asks GET /agent/capabilities: where nothing listens, the server is down, no
//! client is started, and `fleet.no-5xx` fails naming it (every other case skipped, saying so).
//! Until some client gets a LibrarianResponse the server has not answered as a Librarian: then
//! only `fleet.conforming-served` (and a 5xx, wherever) is judged; the refusals, the flood and
//! the latencies are skipped, saying so.
//!
//! ```yaml
//! protocol: librarian
//! librarian:
//!   url: ${LIBRARIAN_URL:-http://127.0.0.1:8000}   # --platform-url wins
//!   duration: 20s                                 # and/or requests: N (per client)
//!   clients:
//!     - { name: steady, agent: claude-3, token: "${TOKEN_1}", behavior: conforming, rate: 30/min }
//!     - { name: flood, agent: gemini-pro, token: "${TOKEN_2}", behavior: flood, rate: 600/min }
//! ```
//!
//! Behaviours: one table, `behaviors::CLIENT_BEHAVIORS` (what each client does, and the answer
//! the server must give it); `mock behaviors` lists them.
//!
//! Each client asks what its agent may do: with the server's registry (`registry:` in the file,
//! or `--registry`), its APPROVALs are for a target and an action the agent is allowed, and the
//! flood and the burst ask QUERYs only (a read). A refusal for authorization (401/403) is a right
//! answer to a request its agent may not make; without a registry it cannot be told from a wrong
//! one, and the case says how many such answers went unjudged, per client.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::behaviors::CLIENT_BEHAVIORS;
use super::model::{self, LIMITS};
use super::reference::Registered;
use super::registry::RegistryError;
use crate::judge::{Exchange, Message};
use crate::mock::observe::Tally;
use crate::report::{CaseResult, Evidence, Level, Report, RunInfo};
use crate::transport::http::{self, BaseUrl, Limits, Request};
use crate::transport::liveness::{self, Watch};
use crate::units::percentile;

mod exchanges;
mod send;
mod verdicts;
use send::*;
use verdicts::*;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct FleetFile {
    #[allow(dead_code)]
    protocol: String,
    #[serde(default)]
    seed: Option<u64>,
    librarian: Spec,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct Spec {
    url: String,
    #[serde(default = "default_duration")]
    duration: String,
    /// Stop each client after this many requests (and at `duration` in any case).
    #[serde(default)]
    requests: Option<usize>,
    /// The server's agent registry (config/agents.yaml in the Librarian protocol spec), for what each agent
    /// may do; `--registry` wins.
    #[serde(default)]
    registry: Option<String>,
    clients: Vec<ClientSpec>,
}

fn default_duration() -> String {
    "20s".into()
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct ClientSpec {
    name: String,
    agent: String,
    token: String,
    #[serde(alias = "behaviour")]
    behavior: String,
    /// `N/min` or `N/s`.
    #[serde(default)]
    rate: Option<String>,
    /// slow-upload: how long the body takes.
    #[serde(default)]
    trickle: Option<String>,
}

/// What a client's agent may do, as far as the fleet knows.
#[derive(Debug, Clone)]
enum Permits {
    /// No registry given: a refusal for authorization cannot be told from a wrong one.
    Unknown,
    /// The registry's entry of the agent.
    Agent(Registered),
    /// The registry does not name the agent: it may make no request.
    Unregistered,
}

impl Permits {
    fn of(agent: &str, registry: Option<&[Registered]>) -> Permits {
        match registry {
            None => Permits::Unknown,
            Some(r) => match r.iter().find(|a| a.id == agent) {
                Some(a) => Permits::Agent(a.clone()),
                None => Permits::Unregistered,
            },
        }
    }

    /// Whether the agent may make `request` (None: no registry says).
    fn allow(&self, request: &Value) -> Option<bool> {
        match self {
            Permits::Unknown => None,
            Permits::Agent(r) => Some(r.refuses(request).is_none()),
            Permits::Unregistered => Some(false),
        }
    }

    /// A target an APPROVAL of this agent may be for (the document's example, design, when it
    /// may), or None when it may change nothing.
    fn target(&self) -> Option<&'static str> {
        let Permits::Agent(r) = self else {
            return Some("design");
        };
        if r.lacks("create", "").is_some() {
            return None;
        }
        std::iter::once("design")
            .chain(model::TARGET_TYPES)
            .find(|t| !r.forbids(t))
    }

    /// A target this agent may not touch, if the registry limits it.
    fn forbidden_target(&self) -> Option<&'static str> {
        match self {
            Permits::Agent(r) => model::TARGET_TYPES.into_iter().find(|t| r.forbids(t)),
            _ => None,
        }
    }
}

/// A client, ready to run.
#[derive(Debug, Clone)]
struct Client {
    name: String,
    agent: String,
    token: String,
    behavior: String,
    every: Duration,
    trickle: Duration,
    permits: Permits,
    /// Another agent (of the registry, or of the fleet), in whose name a foreign-agent-id
    /// client speaks with its own token.
    other: Option<String>,
}

impl Client {
    /// How the examples name it.
    fn label(&self) -> String {
        format!("{} ({})", self.name, self.behavior)
    }
}

/// What one request got.
#[derive(Debug, Clone)]
struct Outcome {
    /// Whether the client's agent may make the request it sent (None: no registry says).
    permitted: Option<bool>,
    status: Option<u16>,
    decision: Option<String>,
    elapsed: Duration,
    error: Option<String>,
    /// When it was sent.
    sent: Instant,
    /// The answer judged by the probe's rules (`model::judge_answer`), with what was asked
    /// (`a QUERY`, `a body that is not JSON`); None: nothing to judge in it.
    judged: Option<(String, model::Judged)>,
    /// A 429's header that says when to come back (`Retry-After: 7`), if it had one; None for
    /// any other answer.
    come_back: Option<Option<String>>,
}

fn rate(text: &str) -> Result<Duration, String> {
    let (n, per) = text
        .split_once('/')
        .ok_or_else(|| format!("rate {text:?}: expected N/min or N/s"))?;
    let n: f64 = n
        .trim()
        .parse()
        .ok()
        .filter(|n: &f64| *n > 0.0)
        .ok_or_else(|| format!("rate {text:?}: {n:?} is not a positive number"))?;
    let unit = match per.trim() {
        "min" | "minute" => 60.0,
        "s" | "sec" | "second" => 1.0,
        other => return Err(format!("rate {text:?}: unit {other:?} (expected min or s)")),
    };
    Ok(Duration::from_secs_f64(unit / n))
}

/// What is wrong with a Librarian fleet file (or the registry it is given). Each is a usage
/// error: nothing has been sent yet.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FleetFileError {
    /// Not YAML, not a fleet's shape, or an `${ENV}` that is not set.
    #[error("{0}")]
    Yaml(String),
    /// A setting under `librarian:` (`url`, `duration`) that does not read.
    #[error("{file}: librarian.{key}: {cause}")]
    Setting {
        file: String,
        key: &'static str,
        cause: String,
    },
    #[error("{file}: librarian.registry: {cause}")]
    Registry { file: String, cause: RegistryError },
    #[error("{file}: librarian.clients is empty")]
    NoClients { file: String },
    #[error("{file}: librarian.requests must be at least 1")]
    NoRequests { file: String },
    /// One client's `behavior`, `rate` or `trickle`.
    #[error("{file}: client {client:?}: {what}")]
    Client {
        file: String,
        client: String,
        what: String,
    },
    #[error(
        "{file}: client {client:?}: foreign-agent-id speaks in another agent's name, and the \
         fleet (or its registry) names no agent but {agent}: add a client of another agent"
    )]
    NoOtherAgent {
        file: String,
        client: String,
        agent: String,
    },
}

impl crate::error::LayerError for FleetFileError {
    fn class(&self) -> crate::error::Class {
        crate::error::Class::Usage
    }
}

/// A fleet file parsed and checked: the clients, the duration, the server.
pub struct Fleet {
    base: BaseUrl,
    duration: Duration,
    requests: Option<usize>,
    clients: Vec<Client>,
    seed: Option<u64>,
    source: String,
    registry: Option<Vec<Registered>>,
}

impl Fleet {
    /// Parses (after `${ENV}` substitution); `url` overrides the file's. Errors name the file.
    pub fn parse(source: &str, text: &str, url: Option<&str>) -> Result<Fleet, FleetFileError> {
        let file: FleetFile = crate::text::read_yaml_with_env(source, text)
            .map_err(|e| FleetFileError::Yaml(e.to_string()))?;
        let spec = file.librarian;
        let setting = |key: &'static str, cause: &dyn std::fmt::Display| FleetFileError::Setting {
            file: source.to_string(),
            key,
            cause: cause.to_string(),
        };
        let base = BaseUrl::parse(url.unwrap_or(&spec.url)).map_err(|e| setting("url", &e))?;
        let duration =
            crate::units::parse_duration(&spec.duration).map_err(|e| setting("duration", &e))?;
        if spec.clients.is_empty() {
            return Err(FleetFileError::NoClients {
                file: source.to_string(),
            });
        }
        let mut clients = Vec::new();
        for c in spec.clients {
            let at = |what: String| FleetFileError::Client {
                file: source.to_string(),
                client: c.name.clone(),
                what,
            };
            if !CLIENT_BEHAVIORS.iter().any(|b| b.name == c.behavior) {
                let known: Vec<&str> = CLIENT_BEHAVIORS.iter().map(|b| b.name).collect();
                return Err(at(format!(
                    "behavior {:?} is not one of {}",
                    c.behavior,
                    known.join(", ")
                )));
            }
            let default_rate = if c.behavior == "flood" {
                "600/min"
            } else {
                "30/min"
            };
            let every = rate(c.rate.as_deref().unwrap_or(default_rate)).map_err(&at)?;
            let trickle = crate::units::parse_duration(c.trickle.as_deref().unwrap_or("3s"))
                .map_err(|e| at(format!("trickle: {e}")))?;
            clients.push(Client {
                name: c.name,
                agent: c.agent,
                token: c.token,
                behavior: c.behavior,
                every,
                trickle,
                permits: Permits::Unknown,
                other: None,
            });
        }
        if spec.requests == Some(0) {
            return Err(FleetFileError::NoRequests {
                file: source.to_string(),
            });
        }
        let registry = spec
            .registry
            .map(|path| {
                super::registry::read_registry(std::path::Path::new(&path), false).map_err(
                    |cause| FleetFileError::Registry {
                        file: source.to_string(),
                        cause,
                    },
                )
            })
            .transpose()?;
        let fleet = Fleet {
            base,
            duration,
            requests: spec.requests,
            clients,
            seed: file.seed,
            source: source.to_string(),
            registry: None,
        };
        fleet.with_registry(registry)
    }

    /// The server's registry (`--registry`, over the file's), for what each client's agent may
    /// do; None keeps the file's.
    pub fn with_registry(
        mut self,
        registry: Option<Vec<Registered>>,
    ) -> Result<Fleet, FleetFileError> {
        if registry.is_some() {
            self.registry = registry;
        }
        let registry = self.registry.as_deref();
        let agents: Vec<String> = match registry {
            Some(r) => r.iter().map(|a| a.id.clone()).collect(),
            None => self.clients.iter().map(|c| c.agent.clone()).collect(),
        };
        for c in &mut self.clients {
            c.permits = Permits::of(&c.agent, registry);
            // Another agent that may ask a QUERY, so that only the name is wrong.
            let may_read = |a: &&String| {
                Permits::of(a, registry).allow(&model::request(a, "QUERY", 0)) != Some(false)
            };
            c.other = agents
                .iter()
                .filter(|a| **a != c.agent)
                .find(may_read)
                .cloned();
            if c.behavior == "foreign-agent-id" && c.other.is_none() {
                return Err(FleetFileError::NoOtherAgent {
                    file: self.source.clone(),
                    client: c.name.clone(),
                    agent: c.agent.clone(),
                });
            }
        }
        Ok(self)
    }

    pub fn target(&self) -> String {
        self.base.to_string()
    }

    pub fn seed(&self) -> Option<u64> {
        self.seed
    }
}

/// The case that names a Librarian that went down while the fleet ran.
const ALIVE: &str = "librarian.alive";

/// Runs the fleet and judges the server.
pub async fn run(fleet: &Fleet, strict: bool, seed: u64) -> Report {
    let info = RunInfo::start("mock", super::NAME, fleet.target(), seed, strict)
        .made_by(format!("mock fleet ({})", super::NAME));
    let ran = gather(fleet).await;
    judge(fleet, info, &ran)
}

/// [`run`], every exchange of the run and what the server's liveness said recorded to
/// `record` (JSON lines, [`crate::judge::record`]): [`rejudge`] gives its verdicts again.
pub async fn run_recorded(
    fleet: &Fleet,
    strict: bool,
    seed: u64,
    record: &std::path::Path,
) -> Result<Report, crate::judge::record::RecordError> {
    let info = RunInfo::start("mock", super::NAME, fleet.target(), seed, strict)
        .made_by(format!("mock fleet ({})", super::NAME));
    let ran = gather(fleet).await;
    exchanges::write(&ran, record)?;
    Ok(judge(fleet, info, &ran))
}

/// Judges a recording of a run of `fleet` again, with no server: the cases its report had.
pub fn rejudge(
    fleet: &Fleet,
    strict: bool,
    entries: &[crate::judge::Entry],
) -> Result<Vec<CaseResult>, crate::judge::replay::ReplayError> {
    let ran = exchanges::read(fleet, entries)?;
    let info = RunInfo::start("mock", super::NAME, fleet.target(), 0, strict);
    Ok(judge(fleet, info, &ran).cases)
}

/// The conforming client that asks GET /agent/capabilities before and after the fleet.
fn asker(fleet: &Fleet) -> Option<&Client> {
    fleet.clients.iter().find(|c| c.behavior == "conforming")
}

/// Runs the clients: every exchange, and what the server's liveness said.
async fn gather(fleet: &Fleet) -> exchanges::Ran {
    let base = Instant::now();
    let asker = asker(fleet);
    // First, whether the server is there at all (as the round-table fleet does): a server that
    // is down is one failure, not every request of every client for the whole duration. With a
    // conforming client's token, the same request says whether it answered before the fleet:
    // "still answers" needs a "before". Without one, any client's token (as configured: a
    // wrong-token client spoils its own only when it sends) asks.
    let who = asker
        .or(fleet.clients.first())
        .map_or(("", ""), |c| (c.name.as_str(), c.token.as_str()));
    let before = capabilities(&fleet.base, who, exchanges::BEFORE, base).await;
    let first = exchanges::unserved(&before);
    let down = matches!(first, Err(Unserved::Down(_)));
    let watch = Watch::http(
        format!("the Librarian at {}", fleet.target()),
        Instant::now(),
        &fleet.base.host,
        fleet.base.port,
    );
    let mut clients: Vec<Vec<Exchange>> = if down {
        vec![Vec::new(); fleet.clients.len()]
    } else {
        let until = Instant::now() + fleet.duration;
        let runs = fleet.clients.iter().map(|c| {
            run_client(
                fleet.base.clone(),
                c.clone(),
                until,
                fleet.requests,
                &watch,
                base,
            )
        });
        futures::future::join_all(runs).await
    };
    watch.at_end().await;
    // What the server's death cut is no answer of its: not judged (the alive case names it).
    for exchange in clients.iter_mut().flatten() {
        exchanges::mark_cut(exchange, |at| watch.cut(at, ALIVE).is_some());
    }
    let after = match (asker, &first) {
        (Some(c), Ok(())) => {
            Some(capabilities(&fleet.base, (&c.name, &c.token), exchanges::AFTER, base).await)
        }
        _ => None,
    };
    let alive = watch
        .case(ALIVE, "fleet", "REST API Endpoints")
        .map(|case| {
            let why = watch
                .cut(watch.outages()[0].from, ALIVE)
                .unwrap_or_default();
            (case, why)
        });
    exchanges::Ran {
        base,
        before,
        clients,
        after,
        alive,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::{Answer, Party};
    use crate::report::Status;

    const FILE: &str = "protocol: librarian\nlibrarian:\n  url: http://127.0.0.1:1\n  requests: 2\n  clients:\n    - { name: steady, agent: a1, token: t1, behavior: conforming }\n    - { name: broken, agent: a2, token: t2, behavior: malformed-json }\n";

    #[test]
    fn a_rate_is_read_per_minute_or_per_second_and_a_wrong_one_named() {
        assert_eq!(rate("30/min"), Ok(Duration::from_secs(2)));
        assert_eq!(rate("4/s"), Ok(Duration::from_millis(250)));
        assert!(rate("fast").unwrap_err().contains("expected N/min or N/s"));
        assert!(rate("0/min").unwrap_err().contains("not a positive number"));
        assert!(rate("3/hour").unwrap_err().contains("unit \"hour\""));
    }

    /// An exchange of `who` that got `status`, sent `at` ms into the run, taking 5 ms.
    fn answered(who: &str, status: u16, at: f64, body: &str) -> Exchange {
        Exchange {
            seq: 0,
            from: Party::Client(who.into()),
            to: Party::Server,
            method: Some("POST".into()),
            endpoint: "/agent/request".into(),
            case: None,
            request: Message::masked([], b"{\"request_type\": \"QUERY\"}"),
            answer: Answer::Delivered {
                status: Some(status),
                message: Message::masked([], body.as_bytes()),
            },
            sent_ms: at,
            answered_ms: Some(at + 5.0),
            context: serde_json::json!({}),
        }
    }

    /// The judging is a function of the exchanges: a 500 to the malformed-JSON client fails
    /// fleet.no-5xx naming it, the server never having answered as a Librarian; a server whose
    /// capabilities check could not connect is down, and nothing else is judged.
    #[test]
    fn the_verdicts_are_drawn_from_the_exchanges_alone() {
        let fleet = Fleet::parse("f.yaml", FILE, None).unwrap();
        let mut before = answered("steady", 200, 0.0, "{}");
        before.context = serde_json::json!({"check": exchanges::BEFORE});
        let ran = exchanges::Ran {
            base: Instant::now(),
            before: before.clone(),
            clients: vec![
                vec![answered("steady", 404, 10.0, "{}")],
                vec![answered("broken", 500, 11.0, "oops")],
            ],
            after: None,
            alive: None,
        };
        let info = || RunInfo::start("mock", super::super::NAME, fleet.target(), 1, false);
        let report = judge(&fleet, info(), &ran);
        let no5xx = report.cases.iter().find(|c| c.id == DOWN_CASE).unwrap();
        assert_eq!(no5xx.status, Status::Fail, "{}", no5xx.message);
        assert!(
            no5xx
                .message
                .contains("broken (malformed-json): answered 500"),
            "{}",
            no5xx.message
        );
        let served = report
            .cases
            .iter()
            .find(|c| c.id == "fleet.conforming-served")
            .unwrap();
        assert_eq!(served.status, Status::Fail, "{}", served.message);
        // Down: its capabilities check could not connect.
        before.answer = Answer::Failed {
            what: "cannot connect to 127.0.0.1:1: refused".into(),
        };
        before.context["down"] = serde_json::json!(true);
        let down = exchanges::Ran {
            before,
            clients: vec![Vec::new(), Vec::new()],
            ..ran
        };
        let report = judge(&fleet, info(), &down);
        let no5xx = report.cases.iter().find(|c| c.id == DOWN_CASE).unwrap();
        assert!(no5xx.message.contains("is down"), "{}", no5xx.message);
        assert!(report
            .cases
            .iter()
            .filter(|c| c.id != DOWN_CASE)
            .all(|c| c.status == Status::Skip));
    }
}
