//! A fleet of mock agents from a YAML file (presets in `mocks/`), served either under one port
//! with path prefixes (`http://HOST:PORT/agents/<name>/<endpoint>`) or on one port per agent.
//! One process holds thousands of agents: an agent is a few hundred bytes of state, and a
//! connection costs only while it is open.

use std::borrow::Cow;
use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use foldhash::HashMap as FastMap;
use serde::Deserialize;
use serde_saphyr::Spanned;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::agent::{MockAgent, Profile};
use super::behavior::{self, BehaviorError, For, Item};
use super::body::Body;
use super::decision::Decision;
use super::http1::{
    self, Delivered, Fault, Handler, ListenError, Outcome, Plan, Request, Response, ServerLimits,
};
use super::journal::{AuthSeen, Journal, RequestRecord};
use super::peer_end::{Peer, Source};
use super::protocol::{Answered, PlatformExpect, PlatformObserver, Seen};

/// Names agents may have (they become URL path segments and platform registrations).
pub fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// How agents are laid out on ports.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Layout {
    /// One port; agent `a` answers under `/agents/a/`.
    #[default]
    Shared,
    /// One port per agent, from `port` upwards (0: the OS picks each).
    PerAgent,
}

/// A fleet file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FleetFile {
    /// The protocol the agents speak (a key of the protocol registry); default: the round table.
    #[serde(default)]
    pub protocol: Option<Spanned<String>>,
    #[serde(default)]
    pub seed: Option<u64>,
    #[serde(default)]
    pub layout: Layout,
    #[serde(default = "loopback")]
    pub host: IpAddr,
    #[serde(default)]
    pub port: u16,
    /// The base URL the platform is told at registration (real platforms refuse loopback,
    /// private and `*.internal` ones): e.g. `http://agents.example.com:9000`, where the fleet
    /// must listen too; default: the bound address.
    #[serde(default)]
    pub advertise: Option<String>,
    /// The platform to drive (registration, triggers); without it the fleet only serves.
    #[serde(default)]
    pub platform: Option<super::driver::PlatformSpec>,
    pub agents: Vec<AgentSpec>,
}

fn loopback() -> IpAddr {
    IpAddr::V4(Ipv4Addr::LOCALHOST)
}

/// One agent, or (with `generate: N`) N of a kind whose name holds `{i}` (1..=N).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentSpec {
    pub name: Spanned<String>,
    #[serde(default)]
    pub generate: Option<usize>,
    #[serde(default = "general")]
    pub domain: String,
    #[serde(default)]
    pub capabilities: Vec<String>,
    /// Behaviour items (see `mock behaviors`): a list, or one string (itself a comma list);
    /// none: conforming.
    #[serde(default, deserialize_with = "one_or_many", alias = "behaviours")]
    pub behaviors: Vec<String>,
    /// false: behaviours apply to requests the agent finds invalid too (by default those are
    /// answered 400 at once, whatever the behaviours say).
    #[serde(default = "yes", alias = "strict-requests")]
    pub strict_requests: bool,
    /// The key the agent requires (`{i}` is replaced too); none: no Authorization expected.
    #[serde(default)]
    pub api_key: Option<String>,
}

fn general() -> String {
    "general review".into()
}

fn yes() -> bool {
    true
}

/// `behaviors: hang` as well as `behaviors: [hang]`.
fn one_or_many<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum OneOrMany {
        One(String),
        Many(Vec<String>),
    }
    Ok(match OneOrMany::deserialize(d)? {
        OneOrMany::One(s) => vec![s],
        OneOrMany::Many(list) => list,
    })
}

/// Why a fleet file does not load, or its agents cannot be made; each message starts with the
/// file (and the line, where there is one). A usage error: the file is to fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FleetFileError {
    #[error("{path}: cannot read: {cause}")]
    Read { path: String, cause: String },
    /// Its `${ENV}` substitution or its YAML.
    #[error(transparent)]
    Data(#[from] crate::text::DataFileError),
    #[error("{file}: `agents` is empty")]
    NoAgents { file: String },
    #[error("{file}: advertise: {cause}")]
    Advertise { file: String, cause: String },
    /// One agent entry (its behaviours, name or count) is wrong.
    #[error("{file}:{line}: agent {agent:?}: {why}")]
    Agent {
        file: String,
        line: u64,
        agent: String,
        why: String,
    },
}

impl crate::error::LayerError for FleetFileError {
    fn class(&self) -> crate::error::Class {
        crate::error::Class::Usage
    }
}

/// Most agents one fleet may hold.
pub const MAX_AGENTS: usize = 100_000;

impl FleetFile {
    pub fn from_file(path: &Path) -> Result<FleetFile, FleetFileError> {
        let text = std::fs::read_to_string(path).map_err(|e| FleetFileError::Read {
            path: path.display().to_string(),
            cause: e.to_string(),
        })?;
        FleetFile::parse(&path.display().to_string(), &text)
    }

    /// Parses, after `${ENV}` substitution (`text::substitute_env`); errors read `FILE:LINE:
    /// what is wrong`.
    pub fn parse(source: &str, text: &str) -> Result<FleetFile, FleetFileError> {
        let file: FleetFile = crate::text::read_yaml_with_env(source, text)?;
        if file.agents.is_empty() {
            return Err(FleetFileError::NoAgents {
                file: source.to_string(),
            });
        }
        if let Some(a) = &file.advertise {
            crate::transport::http::BaseUrl::parse(a).map_err(|e| FleetFileError::Advertise {
                file: source.to_string(),
                cause: e.to_string(),
            })?;
        }
        Ok(file)
    }

    /// Expands `generate`, parses behaviours, checks names; errors name the line. `at` is the
    /// protocol the file names (resolved by the caller from the registry).
    pub fn agents(
        &self,
        source: &str,
        seed: u64,
        at: For<'_>,
    ) -> Result<Vec<MockAgent>, FleetFileError> {
        let mut agents = Vec::new();
        let mut seen: HashMap<String, u64> = HashMap::new();
        for spec in &self.agents {
            let line = spec.name.referenced.line();
            let at_line = |why: String| FleetFileError::Agent {
                file: source.to_string(),
                line,
                agent: spec.name.value.clone(),
                why,
            };
            let items = parse_items(&spec.behaviors, at).map_err(|e| at_line(e.to_string()))?;
            let count = spec.generate.unwrap_or(1);
            if spec.generate.is_some() && !spec.name.value.contains("{i}") {
                return Err(at_line("with `generate`, the name must contain {i}".into()));
            }
            if agents.len() + count > MAX_AGENTS {
                return Err(at_line(format!(
                    "a fleet holds at most {MAX_AGENTS} agents"
                )));
            }
            for i in 1..=count {
                let name = spec.name.value.replace("{i}", &i.to_string());
                if !valid_name(&name) {
                    return Err(at_line(format!(
                        "the name {name:?} must match ^[A-Za-z][A-Za-z0-9_-]*$"
                    )));
                }
                if let Some(first) = seen.insert(name.clone(), line) {
                    return Err(at_line(format!(
                        "the name {name:?} is already used (line {first})"
                    )));
                }
                let profile = Profile {
                    name,
                    domain: spec.domain.clone(),
                    capabilities: spec.capabilities.clone(),
                    api_key: spec
                        .api_key
                        .as_ref()
                        .map(|k| k.replace("{i}", &i.to_string())),
                };
                let mut agent = MockAgent::new(at.protocol, profile, items.clone(), seed);
                agent.strict_requests = spec.strict_requests;
                agents.push(agent);
            }
        }
        Ok(agents)
    }
}

/// Behaviour strings (each may itself be a comma list) → items; none → conforming.
pub fn parse_items(texts: &[String], at: For<'_>) -> Result<Vec<Item>, BehaviorError> {
    let mut items = Vec::new();
    for text in texts {
        items.extend(behavior::parse_list(text, at)?);
    }
    if items.is_empty() {
        items = behavior::parse_list("conforming", at)?;
    }
    Ok(items)
}

/// Where each agent answers (looked up once per request: a fast hash, not SipHash).
enum Routes {
    /// `/agents/<name>/<endpoint>` on one port.
    Shared(FastMap<String, usize>),
    /// Local port → agent.
    PerAgent(FastMap<u16, usize>),
}

impl Routes {
    /// Each agent by its name, on one port.
    fn shared(agents: &[MockAgent]) -> Routes {
        Routes::Shared(
            agents
                .iter()
                .enumerate()
                .map(|(i, a)| (a.name().to_string(), i))
                .collect(),
        )
    }
}

/// The fleet as a request handler.
pub struct FleetHandler {
    pub agents: Vec<MockAgent>,
    routes: Routes,
    pub journal: Journal,
    pub observer: Box<dyn PlatformObserver>,
    /// A line per answered request on stdout (`mock agent` on a terminal).
    pub log_requests: std::sync::atomic::AtomicBool,
    /// Protocol requests (not /health, not a probe's marked ones) the platform sent.
    pub protocol_requests: std::sync::atomic::AtomicU64,
    /// Each answer's span, for the HTML report.
    pub timeline: super::timeline::Timeline,
    /// Which agents' content behaviours took effect (`agent.behaviors-applied`).
    pub applied: super::applied::Applied,
}

/// What a request's journal and observer records need once the answer is out.
pub struct Note {
    seq: u64,
    agent: Option<usize>,
    /// The protocol's own name for a known endpoint (no copy per request), else the path's.
    endpoint: Cow<'static, str>,
    task: String,
    received: Instant,
    /// For the request log (when it is on): the status planned and the behaviours applied.
    logged: Option<(u16, String)>,
    /// A request agent-tck's probe marked as its own deliberate test: not the platform's, so
    /// not on the platform's timeline.
    probe: bool,
    /// The caller's process, looked up as the answer is held back (a hang, a slow first byte):
    /// so that when the caller leaves, whether it gave up or was ended from outside can be told
    /// ([`super::peer_end`]).
    caller: Option<Box<Peer>>,
}

impl FleetHandler {
    fn new(
        agents: Vec<MockAgent>,
        routes: Routes,
        journal: Journal,
        observer: Box<dyn PlatformObserver>,
    ) -> FleetHandler {
        let lanes = agents
            .iter()
            .map(|a| {
                let behaviours: Vec<&str> = a.items.iter().map(|i| i.source.as_str()).collect();
                format!("{} [{}]", a.name(), behaviours.join(", "))
            })
            .collect();
        FleetHandler {
            timeline: super::timeline::Timeline::new(Instant::now(), lanes),
            agents,
            routes,
            journal,
            observer,
            log_requests: std::sync::atomic::AtomicBool::new(false),
            protocol_requests: std::sync::atomic::AtomicU64::new(0),
            applied: super::applied::Applied::default(),
        }
    }

    /// `agents` under `/agents/<name>/` of one port, not bound to any (the fuzz targets call
    /// [`Handler::handle`] directly).
    pub(crate) fn shared(
        agents: Vec<MockAgent>,
        journal: Journal,
        observer: Box<dyn PlatformObserver>,
    ) -> FleetHandler {
        let routes = Routes::shared(&agents);
        FleetHandler::new(agents, routes, journal, observer)
    }

    /// The agent a request is for, and the endpoint (path segment after the agent).
    fn route<'r>(&self, request: &'r Request) -> Option<(usize, &'r str)> {
        let path = request.path();
        match &self.routes {
            Routes::Shared(by_name) => {
                let rest = path.strip_prefix("/agents/")?;
                let (name, endpoint) = match rest.bytes().position(|b| b == b'/') {
                    Some(slash) => (&rest[..slash], &rest[slash + 1..]),
                    None => (rest, ""),
                };
                by_name.get(name).map(|&i| (i, endpoint))
            }
            Routes::PerAgent(by_port) => by_port
                .get(&request.local.port())
                .map(|&i| (i, path.trim_start_matches('/'))),
        }
    }

    /// How the request's `Authorization` field (`sent`) stands to the agent's key.
    fn auth(agent: &MockAgent, sent: Option<&str>) -> AuthSeen {
        let sent = sent.map(bearer_key);
        match (&agent.profile.api_key, sent) {
            (Some(k), Some(s)) if s == k => AuthSeen::Ok,
            (Some(_), Some(_)) => AuthSeen::Wrong,
            (Some(_), None) => AuthSeen::Missing,
            (None, None) => AuthSeen::None,
            (None, Some(_)) => AuthSeen::Unexpected,
        }
    }
}

/// What the fleet and the proxy read of a request before they answer it, each field found
/// once: its credentials, the probe's mark, the endpoint it is for, and its body (checked
/// against that endpoint's request schema).
pub(crate) struct Incoming<'r> {
    pub authorization: Option<&'r str>,
    /// The probe's `x-agent-tck-case`: a request it sends as a deliberate test.
    pub deliberate: Option<&'r str>,
    pub known: Option<&'static super::protocol::Endpoint>,
    pub body: Body<'r>,
}

impl<'r> Incoming<'r> {
    pub(crate) fn read(
        request: &'r Request,
        protocol: &dyn super::protocol::AgentProtocol,
        endpoint: &str,
    ) -> Incoming<'r> {
        let [authorization, deliberate] = request
            .headers
            .first_of(["authorization", crate::probe::exchange::DELIBERATE_HEADER]);
        let known = protocol.endpoint(endpoint);
        let body = Body::checked(&request.body, known.and_then(|e| e.request_schema))
            .on_channel(channel_of(request.peer));
        Incoming {
            authorization,
            deliberate,
            known,
            body,
        }
    }

    /// The request's id (the member the protocol names), when it has one.
    pub(crate) fn id<'b>(
        body: &'b Body<'_>,
        protocol: &dyn super::protocol::AgentProtocol,
    ) -> Option<Cow<'b, str>> {
        protocol
            .request_id_field()
            .and_then(|field| body.str_member(field))
    }
}

/// The key an `Authorization` field carries (`Bearer KEY`, or the bare key).
fn bearer_key(field: &str) -> &str {
    field.strip_prefix("Bearer ").unwrap_or(field).trim()
}

/// Whether a plan holds its answer back long enough for the caller to leave before it: a hang,
/// or a first byte a second or more away.
fn held_back(plan: &Plan) -> bool {
    plan.fault == Fault::Hang || plan.ttfb >= Duration::from_secs(1)
}

/// A keep-alive connection is one channel (see [`Body::on_channel`]): its peer address is unique
/// while it is open. Folded without allocating (this runs on every request).
fn channel_of(peer: SocketAddr) -> u64 {
    let ip = match peer.ip() {
        std::net::IpAddr::V4(ip) => u128::from(u32::from(ip)),
        std::net::IpAddr::V6(ip) => u128::from(ip),
    };
    ((ip as u64) ^ ((ip >> 64) as u64)).rotate_left(16) ^ u64::from(peer.port())
}

impl Handler for FleetHandler {
    type Note = Note;

    fn reads(&self, local: SocketAddr) -> bool {
        match &self.routes {
            Routes::PerAgent(by_port) => by_port
                .get(&local.port())
                .is_none_or(|&i| !self.agents[i].is_blackhole()),
            Routes::Shared(_) => true,
        }
    }

    async fn handle(&self, request: Request) -> (Plan, Note) {
        let seq = self.journal.next_seq();
        let Some((index, endpoint)) = self.route(&request) else {
            let plan = Plan::immediate(Response::json_error(
                404,
                &format!("no mock agent at {}", request.path()),
            ));
            let note = Note {
                seq,
                agent: None,
                endpoint: Cow::Borrowed(""),
                task: String::new(),
                received: request.received,
                logged: None,
                probe: false,
                caller: None,
            };
            return (plan, note);
        };
        let agent = &self.agents[index];
        // The two fields the fleet reads, found in one pass over the request's fields.
        let Incoming {
            authorization,
            deliberate,
            known,
            body,
        } = Incoming::read(&request, agent.protocol, endpoint);
        let auth = Self::auth(agent, authorization);
        // Read once, for the observer, the journal and the answer's note.
        let id = Incoming::id(&body, agent.protocol);
        let task = id.as_deref().unwrap_or("");
        let (plan, decision) = match known {
            None => refuse(404, format!("no endpoint /{endpoint}")),
            Some(e) if e.method != request.method => {
                refuse(405, format!("/{endpoint} takes {}", e.method))
            }
            Some(e) if e.needs_key && auth == AuthSeen::Missing => {
                refuse(401, "missing Authorization: Bearer <key>".into())
            }
            Some(e) if e.needs_key && auth == AuthSeen::Wrong => {
                refuse(401, "wrong API key".into())
            }
            Some(_) => agent.respond_body(endpoint, &body),
        };
        self.applied.record(index, &decision.applied);
        // The platform is judged on the protocol's own messages (not /health), and not on the
        // requests agent-tck's probe marks as its own deliberate tests.
        if let (Some(case), Some(_)) = (deliberate, known.and_then(|e| e.request_schema)) {
            self.observer.on_probe_request(agent.name(), endpoint, case);
        } else if let Some(findings) = body.findings("the body is not JSON") {
            self.protocol_requests
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            self.observer.on_request(&Seen {
                seq,
                agent: agent.name(),
                expects_key: agent.profile.api_key.is_some(),
                endpoint,
                auth,
                key_print: authorization.map_or(0, |sent| crate::text::fnv1a(bearer_key(sent))),
                task,
                body: &body,
                schema_findings: &findings,
                decision: &decision,
                answer: &plan.response.body,
                at: request.received,
            });
        }
        if self.journal.is_on() {
            let (body, body_capped) = self.journal.body_value(&request.body, body.value());
            self.journal
                .write(&RequestRecord {
                    seq,
                    event: "request",
                    t_ms: self.journal.t_ms(request.received),
                    agent: agent.name(),
                    endpoint,
                    method: &request.method,
                    path: request.path(),
                    peer: request.peer.to_string(),
                    auth,
                    id: id.as_deref(),
                    body_bytes: request.body.len(),
                    body,
                    body_capped,
                    decision: &decision,
                })
                .await;
        }
        let logged = self
            .log_requests
            .load(std::sync::atomic::Ordering::Relaxed)
            .then(|| (decision.status, decision.applied.join(",")));
        let note = Note {
            seq,
            agent: Some(index),
            endpoint: match known {
                Some(e) => Cow::Borrowed(e.name),
                None => Cow::Owned(endpoint.to_string()),
            },
            task: task.to_string(),
            received: request.received,
            logged,
            probe: deliberate.is_some(),
            caller: held_back(&plan).then(|| {
                let caller = Peer::new(Source::Tcp {
                    local: request.local,
                    peer: request.peer,
                });
                // While the caller is there: once it has left, nothing names it.
                let _ = caller.processes();
                Box::new(caller)
            }),
        };
        (plan, note)
    }

    fn incomplete(&self, local: SocketAddr, target: Option<&str>, what: &str) {
        // Routed as a whole request would be, when its head came; by port otherwise.
        let routed = match (target, &self.routes) {
            (Some(target), _) => {
                let path = target.split('?').next().unwrap_or(target);
                match &self.routes {
                    Routes::Shared(by_name) => path.strip_prefix("/agents/").and_then(|rest| {
                        let (name, endpoint) = rest.split_once('/').unwrap_or((rest, ""));
                        by_name.get(name).map(|&i| (i, endpoint.to_string()))
                    }),
                    Routes::PerAgent(by_port) => by_port
                        .get(&local.port())
                        .map(|&i| (i, path.trim_start_matches('/').to_string())),
                }
            }
            (None, Routes::PerAgent(by_port)) => {
                by_port.get(&local.port()).map(|&i| (i, String::new()))
            }
            (None, Routes::Shared(_)) => None,
        };
        let (agent, endpoint) = match &routed {
            Some((i, endpoint)) => (self.agents[*i].name(), endpoint.as_str()),
            None => ("(unknown agent)", ""),
        };
        let endpoint = if endpoint.is_empty() { "?" } else { endpoint };
        self.observer.on_incomplete(agent, endpoint, what);
    }

    async fn finish(&self, note: Note, delivered: Delivered) {
        if let Some(index) = note.agent {
            if note.probe {
                self.timeline.leave_out();
            } else {
                self.timeline
                    .record(index, note.endpoint.clone(), note.received, &delivered);
            }
            let left = matches!(delivered.outcome, Outcome::PeerGone | Outcome::Hung);
            let ended = match (&note.caller, left) {
                (Some(caller), true) => {
                    let started = tokio::time::Instant::from_std(self.timeline.started());
                    Some(caller.closed(started).await)
                }
                _ => None,
            };
            self.observer.on_answer(&Answered {
                seq: note.seq,
                agent: self.agents[index].name(),
                endpoint: &note.endpoint,
                task: &note.task,
                received: note.received,
                delivered: &delivered,
                ended: ended.as_ref(),
                at: std::time::Instant::now(),
            });
            self.journal.answer(note.seq, &delivered).await;
            if let Some((status, applied)) = &note.logged {
                crate::outln!(
                    "{} /{} {status} {} ms {:?}{}",
                    self.agents[index].name(),
                    note.endpoint,
                    delivered.total.as_millis(),
                    delivered.outcome,
                    if applied.is_empty() {
                        String::new()
                    } else {
                        format!(" [{applied}]")
                    }
                );
            }
        }
    }
}

/// The fleet refuses a request (no such endpoint, a missing or wrong key): no usable answer,
/// whoever caused it. A refusal for the credentials (401, with the request's `auth` in the
/// journal and the observer's [`Seen`]) was not a call to the agent as registered: the
/// round table's observer books it as another caller's (`roundtable::observe::Caller`).
fn refuse(status: u16, message: String) -> (Plan, Decision) {
    (
        Plan::immediate(Response::json_error(status, &message)),
        Decision {
            status,
            unusable: Some(format!("refused: {status} {message}")),
            ..Decision::default()
        },
    )
}

/// A fleet being served.
pub struct Served {
    pub handler: Arc<FleetHandler>,
    /// Each agent's base URL, as bound.
    pub urls: Vec<String>,
    /// The addresses listened on.
    pub addrs: Vec<SocketAddr>,
    stop: CancellationToken,
    tracker: TaskTracker,
}

impl Served {
    /// Stops accepting, ends every open exchange (hung ones too) and waits at most `grace`.
    pub async fn stop(&self, grace: Duration) {
        self.stop.cancel();
        self.tracker.close();
        let _ = tokio::time::timeout(grace, self.tracker.wait()).await;
    }
}

/// Binds and serves `agents`. `host`/`port`: where to listen (port 0: the OS picks).
pub async fn serve(
    agents: Vec<MockAgent>,
    layout: Layout,
    host: IpAddr,
    port: u16,
    journal: Journal,
    observer: Box<dyn PlatformObserver>,
) -> crate::error::Result<Served> {
    use crate::error::Error;
    let stop = CancellationToken::new();
    let tracker = TaskTracker::new();
    let mut listeners = Vec::new();
    let (routes, urls) = match layout {
        Layout::Shared => {
            let listener = bind(SocketAddr::new(host, port)).await?;
            let addr = listener.local_addr().map_err(ListenError::LocalAddr)?;
            let urls = agents
                .iter()
                .map(|a| format!("http://{addr}/agents/{}", a.name()))
                .collect();
            listeners.push(listener);
            (Routes::shared(&agents), urls)
        }
        Layout::PerAgent => {
            let mut by_port = FastMap::default();
            let mut urls = Vec::new();
            for (i, _) in agents.iter().enumerate() {
                let want = if port == 0 {
                    0
                } else {
                    port.checked_add(i as u16)
                        .ok_or_else(|| Error::usage("ports run past 65535"))?
                };
                let listener = bind(SocketAddr::new(host, want)).await?;
                let addr = listener.local_addr().map_err(ListenError::LocalAddr)?;
                by_port.insert(addr.port(), i);
                urls.push(format!("http://{addr}"));
                listeners.push(listener);
            }
            (Routes::PerAgent(by_port), urls)
        }
    };
    let addrs = listeners
        .iter()
        .filter_map(|l| l.local_addr().ok())
        .collect();
    let handler = Arc::new(FleetHandler::new(agents, routes, journal, observer));
    for listener in listeners {
        tracker.spawn(http1::serve(
            listener,
            handler.clone(),
            ServerLimits::default(),
            stop.clone(),
            tracker.clone(),
        ));
    }
    Ok(Served {
        handler,
        urls,
        addrs,
        stop,
        tracker,
    })
}

/// One agent on a loopback port the OS picks, no journal, judged by its protocol's observer
/// (`platform_timeout`: how long a platform waits for it): what the self-test and the matrices
/// serve.
pub async fn serve_one(
    agent: MockAgent,
    platform_timeout: Duration,
) -> crate::error::Result<Served> {
    let observer =
        super::observe::observer_for(agent.protocol, &PlatformExpect::timeout(platform_timeout));
    serve(
        vec![agent],
        Layout::PerAgent,
        IpAddr::V4(Ipv4Addr::LOCALHOST),
        0,
        Journal::off(Instant::now()),
        observer,
    )
    .await
}

/// Binds with a deep accept queue: a platform that opens thousands of connections at once
/// would overflow the default backlog (128), and the dropped SYNs come back a second later.
async fn bind(addr: SocketAddr) -> Result<TcpListener, ListenError> {
    let listen = || -> std::io::Result<TcpListener> {
        let socket = match addr {
            SocketAddr::V4(_) => tokio::net::TcpSocket::new_v4()?,
            SocketAddr::V6(_) => tokio::net::TcpSocket::new_v6()?,
        };
        socket.set_reuseaddr(true)?;
        socket.bind(addr)?;
        socket.listen(4096)
    };
    listen().map_err(|cause| ListenError::Bind { addr, cause })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mock::stub::STUB;

    #[test]
    fn fleet_file_errors_are_usage_errors_with_the_file_first() {
        let e = FleetFile::from_file(Path::new("/nonexistent/fleet.yaml")).unwrap_err();
        assert!(
            matches!(&e, FleetFileError::Read { path, .. } if path == "/nonexistent/fleet.yaml")
        );
        let e = crate::error::Error::from(e);
        assert!(
            matches!(e.shown(), (crate::error::Class::Usage, m) if m.starts_with("/nonexistent/fleet.yaml: cannot read: ")),
            "{e:?}"
        );
        let file =
            FleetFile::parse("f.yaml", "agents:\n  - { name: a, behaviors: nope }\n").unwrap();
        let e = file.agents("f.yaml", 1, at()).err().unwrap();
        assert!(
            matches!(&e, FleetFileError::Agent { line: 2, agent, .. } if agent == "a"),
            "{e:?}"
        );
        assert!(
            e.to_string()
                .starts_with("f.yaml:2: agent \"a\": unknown behaviour \"nope\" ("),
            "{e}"
        );
    }

    fn at() -> For<'static> {
        For {
            protocol: &STUB,
            others: &[],
        }
    }

    #[test]
    fn generated_agents_are_named_and_keyed_by_index() {
        let file = FleetFile::parse(
            "f.yaml",
            "agents:\n  - { name: \"a-{i}\", generate: 3, api_key: \"k{i}\" }\n  - { name: b }\n",
        )
        .unwrap();
        let agents = file.agents("f.yaml", 1, at()).unwrap();
        let names: Vec<&str> = agents.iter().map(|a| a.name()).collect();
        assert_eq!(names, ["a-1", "a-2", "a-3", "b"]);
        assert_eq!(agents[1].profile.api_key.as_deref(), Some("k2"));
    }

    #[test]
    fn behaviours_may_be_one_string_or_a_list() {
        let file = FleetFile::parse(
            "f.yaml",
            "agents:\n  - { name: a, behaviors: hang }\n  - { name: b, behaviors: \"slow:1s, flaky:p=0.5\" }\n  - { name: c, behaviors: [hang], strict-requests: false }\n",
        )
        .unwrap();
        let agents = file.agents("f.yaml", 1, at()).unwrap();
        let sources: Vec<Vec<&str>> = agents
            .iter()
            .map(|a| a.items.iter().map(|i| i.source.as_str()).collect())
            .collect();
        assert_eq!(
            sources,
            [vec!["hang"], vec!["slow:1s", "flaky:p=0.5"], vec!["hang"]]
        );
        let strict: Vec<bool> = agents.iter().map(|a| a.strict_requests).collect();
        assert_eq!(strict, [true, true, false]);
    }

    #[test]
    fn fleet_file_errors_name_the_file_the_line_and_the_agent() {
        let cases = [
            (
                "agents:\n  - { name: ok }\n  - { name: 9bad }\n",
                "f.yaml:3: agent \"9bad\": the name \"9bad\" must match",
            ),
            (
                "agents:\n  - { name: a }\n  - { name: a }\n",
                "f.yaml:3: agent \"a\": the name \"a\" is already used (line 2)",
            ),
            (
                "agents:\n  - { name: a, behaviors: [sloww] }\n",
                "f.yaml:2: agent \"a\": unknown behaviour \"sloww\"",
            ),
            (
                "agents:\n  - { name: a, generate: 2 }\n",
                "must contain {i}",
            ),
            ("agents:\n  - { name: a, colour: red }\n", "f.yaml:2"),
            ("agents: []\n", "`agents` is empty"),
        ];
        for (text, expected) in cases {
            let e = FleetFile::parse("f.yaml", text)
                .and_then(|f| f.agents("f.yaml", 1, at()).map(|_| ()))
                .unwrap_err();
            assert!(e.to_string().contains(expected), "{text}: {e}");
        }
    }
}
