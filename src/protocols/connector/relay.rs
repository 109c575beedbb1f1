//! The connector behind `agent-tck proxy`: between a real agent server and real external
//! agents. The server's forward to an agent's proxy URL goes on with its `callbackUrl` pointing
//! at the proxy (`http://HOST:PORT/callbacks/NAME/…`, the original kept by session); the agent's
//! callbacks there go on to the original URL, and the server's answer back to the agent.
//!
//! Both parties are judged by the rules the kit already has, fed these exchanges: the server by
//! the fleet's ([`super::fleet::judge::between`]: the forwards' payload, once, the 5 s timeout,
//! its answers to the callbacks), each agent by the probe's ([`super::probe::judge_across`]:
//! its acknowledgements, its callbacks to the URL it was given, their method and body, within
//! the reply timeout), under its own name.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::fleet::{
    head_under, judge::between, Behavior, Books, CallbackKind, Forward as ServerForward,
    SentCallback,
};
use super::listener::{Heard as Whose, Listener};
use super::model::{callback_path, FORWARD_TIMEOUT};
use super::probe::{judge_across, Forward, Heard};
use super::reference::origin_and_rest;
use bytes::Bytes;

use crate::mock::http1::{Fault, Plan, Request, Response};
use crate::probe::checks::Check;
use crate::proxy::relay::{CallsBack, Came, Destination, Relay, Relayed, Way};
use crate::report::{CaseResult, Evidence, Level};
use crate::transport::http;

/// The connector as `agent-tck proxy` relays it.
pub struct ConnectorRelay;

impl CallsBack for ConnectorRelay {
    fn relay(
        &self,
        agents: &[(String, Vec<String>)],
        reply_timeout: Duration,
        seed: u64,
    ) -> Result<Box<dyn Relay>, String> {
        let mut bent = HashMap::new();
        for (name, faults) in agents {
            bent.insert(name.clone(), Bent::of(name, faults)?);
        }
        let agents = agents
            .iter()
            .map(|(name, _)| (name.clone(), Agent::default()))
            .collect();
        Ok(Box::new(Between {
            bent,
            seed,
            base: Instant::now(),
            reply_timeout,
            state: Mutex::new(State {
                agents,
                books: Books::default(),
                slow: HashSet::new(),
            }),
        }))
    }
}

/// What the proxy bends of one agent's traffic (`--fault NAME=BEHAVIOUR[@PATH][:P%]`): the
/// fleet's behaviours that bend an exchange rather than make one, each on the exchanges whose
/// path (the agent's, after `/agents/NAME` or `/callbacks/NAME`) starts with PATH, on its
/// share of them. The first that falls on an exchange bends it.
#[derive(Debug, Default)]
struct Bent {
    faults: Vec<Bend>,
}

#[derive(Debug)]
struct Bend {
    what: Bends,
    at: Option<String>,
    share: f64,
}

#[derive(Debug)]
enum Bends {
    /// An acknowledgement: slow-ack, error-ack, fault:….
    Ack(Behavior),
    /// A callback's body: empty-callback, whitespace-callback.
    Callback(CallbackKind),
}

impl Bent {
    fn of(name: &str, faults: &[String]) -> Result<Bent, String> {
        let mut bent = Bent::default();
        for item in faults.iter().flat_map(|f| f.split(',')).map(str::trim) {
            let wrong = |why: String| format!("{name}={item}: {why}");
            let (rest, share) = crate::proxy::share::split(item).map_err(wrong)?;
            let (behaviour, at) = match rest.split_once('@') {
                Some((b, at)) if at.starts_with('/') => (b, Some(at.to_string())),
                Some((_, at)) => {
                    return Err(wrong(format!(
                        "@{at}: a path the agent is sent to or calls back at, starting with /"
                    )))
                }
                None => (rest, None),
            };
            let what = match Behavior::parse(behaviour).map_err(|e| wrong(e.to_string()))? {
                b @ (Behavior::SlowAck(_) | Behavior::ErrorAck(_) | Behavior::Fault(_)) => {
                    Bends::Ack(b)
                }
                Behavior::EmptyCallback => Bends::Callback(CallbackKind::Empty),
                Behavior::WhitespaceCallback => Bends::Callback(CallbackKind::Whitespace),
                _ => return Err(wrong(
                    "not a fault the proxy puts on real traffic: it bends an acknowledgement (slow-ack[:DUR], error-ack[:STATUS], fault:reset|close|garbage|hang) or a callback's body (empty-callback, whitespace-callback), each [@PATH][:P%]".into(),
                )),
            };
            bent.faults.push(Bend { what, at, share });
        }
        Ok(bent)
    }

    /// The fault that falls on exchange `seq` at `path` (the agent's), of those `pick` takes.
    fn on<'b, T>(
        &'b self,
        seed: u64,
        seq: u64,
        path: &str,
        pick: impl Fn(&'b Bends) -> Option<T>,
    ) -> Option<T> {
        self.faults.iter().enumerate().find_map(|(i, f)| {
            let meant = f.at.as_deref().is_none_or(|at| path.starts_with(at));
            let what = pick(&f.what)?;
            (meant && crate::proxy::share::drawn(seed, seq, i, f.share)).then_some(what)
        })
    }
}

/// Whether an acknowledgement bent by `ack` is held past the server's 5 s.
fn held_past_5s(ack: &Behavior) -> bool {
    match ack {
        Behavior::SlowAck(d) => *d > FORWARD_TIMEOUT,
        Behavior::Fault(fault) => *fault == Fault::Hang,
        _ => false,
    }
}

/// The status of the head the server meets for an acknowledgement of `status` bent by `ack`.
fn head_met(ack: &Behavior, status: u16) -> u16 {
    match ack {
        Behavior::ErrorAck(s) => *s,
        Behavior::Fault(fault) => head_under(fault, status),
        _ => status,
    }
}

/// The path of an exchange as its agent sees it: the target at the proxy without the route
/// (`/agents/NAME`, `/callbacks/NAME`) and the query.
fn agent_path<'t>(target: &'t str, agent: &str) -> &'t str {
    let path = target.split('?').next().unwrap_or(target);
    let rest = ["/agents/", "/callbacks/"]
        .iter()
        .find_map(|route| path.strip_prefix(route)?.strip_prefix(agent))
        .unwrap_or(path);
    if rest.is_empty() {
        "/"
    } else {
        rest
    }
}

/// The rules of the probe that judge an agent's traffic (run across every forward, once the
/// callbacks are in), in the order the report lists them.
const AGENT_RULES: [&str; 6] = [
    "ack_within_5s",
    "callback_arrives",
    "callback_exact_url",
    "callback_method",
    "callback_not_empty",
    "callback_raw_text",
];

/// How much under its 5 s a server's give-up may read at the proxy and still be its 5 s.
const EARLY: Duration = Duration::from_millis(250);

/// The case that judges each acknowledgement's status (the probe's `forward.*` cases judge
/// the ones it sends itself).
pub const ACKNOWLEDGED: (&str, &str, &str) = (
    "forward.acknowledged",
    "every forward the agent server makes is acknowledged 2xx before the server gives up (judged behind the proxy)",
    "2) Forward user input to inputUrl",
);

impl Agent {
    /// When it went down, since the run started, and how: the first forward whose connection
    /// broke (refused, reset, closed) after one it answered, when it answered none after it.
    /// A connection that broke while the agent stayed up is its own failure, judged as such.
    fn died(&self) -> Option<(Duration, String)> {
        let last_answer = self.forwards.iter().rposition(|f| f.status.is_some())?;
        self.forwards[last_answer + 1..]
            .iter()
            .find_map(|f| Some((f.broke_at?, f.error.clone().unwrap_or_default())))
    }
}

/// One agent as the probe's rules see it.
#[derive(Default)]
struct Agent {
    forwards: Vec<Forward>,
    /// Its sessions: the callback URL each was given, its callbacks.
    listener: Listener,
    /// Each session's callbackUrl as the server gave it.
    given: HashMap<String, String>,
    /// The forwards (their index) whose payload broke the document: the server's fault
    /// (platform.forward-schema), so the agent's refusal of them is not judged.
    malformed: HashSet<usize>,
    /// The forwards the server gave up on before its 5 s: the agent's answer was not yet due.
    early: HashSet<usize>,
}

struct State {
    agents: BTreeMap<String, Agent>,
    /// The server's forwards and its answers to the callbacks, as the fleet's rules read them.
    books: Books,
    /// The forwards (their index in `books`) that their agent acknowledged late, or never.
    slow: HashSet<usize>,
}

struct Between {
    /// Each agent's faults, and the seed that draws their shares.
    bent: HashMap<String, Bent>,
    seed: u64,
    /// The clock the records' times are read on (they are times since the run started).
    base: Instant,
    reply_timeout: Duration,
    state: Mutex<State>,
}

/// What a redirect notes: the session, the server's callbackUrl, and the target the agent was
/// given on the proxy.
fn note(session: &str, url: &str, target: &str) -> Value {
    json!({"session": session, "url": url, "target": target})
}

impl Relay for Between {
    fn redirect(&self, _agent: &str, body: &[u8], back: &str) -> Option<(Vec<u8>, Value)> {
        let mut payload: Value = serde_json::from_slice(body).ok()?;
        let session = payload["sessionId"].as_str()?.to_string();
        let url = payload["callbackUrl"].as_str()?.to_string();
        let (_, rest) = origin_and_rest(&url)?;
        let proxied = format!("{back}{rest}");
        let (_, target) = origin_and_rest(&proxied)?;
        let note = note(&session, &url, target);
        payload["callbackUrl"] = Value::String(proxied.clone());
        Some((serde_json::to_vec(&payload).ok()?, note))
    }

    fn given(&self, agent: &str, note: &Value) {
        let (Some(session), Some(url), Some(target)) = (
            note["session"].as_str(),
            note["url"].as_str(),
            note["target"].as_str(),
        ) else {
            return;
        };
        let Ok(mut state) = self.state.lock() else {
            return;
        };
        if let Some(a) = state.agents.get_mut(agent) {
            a.listener.give_as(session, false, |_| target.to_string());
            a.given.insert(session.to_string(), url.to_string());
        }
    }

    fn destination(&self, agent: Option<&str>, target: &str) -> Option<Destination> {
        let path = target.split('?').next().unwrap_or(target);
        let session = Listener::session_of(path)?;
        let state = self.state.lock().ok()?;
        let (name, a) = match agent {
            Some(name) => (name, state.agents.get(name)?),
            // A callback built by the agent rather than the URL it was given reaches the
            // proxy's origin without the route: it is passed on all the same (the rules judge
            // it), to the server of whichever agent had that session.
            None => state
                .agents
                .iter()
                .find(|(_, a)| a.given.contains_key(&session))
                .map(|(n, a)| (n.as_str(), a))?,
        };
        let url = a.given.get(&session)?;
        let (origin, _) = origin_and_rest(url)?;
        let route = format!("/callbacks/{name}");
        let rest = target.strip_prefix(&route).unwrap_or(target);
        Some(Destination {
            agent: name.to_string(),
            origin: origin.to_string(),
            target: if rest.is_empty() {
                "/".into()
            } else {
                rest.into()
            },
        })
    }

    fn bend_answer(&self, agent: &str, seq: u64, target: &str, plan: &mut Plan) {
        match self.ack(agent, seq, target) {
            Some(Behavior::SlowAck(after)) => plan.ttfb = *after,
            Some(Behavior::ErrorAck(status)) => {
                plan.response = Response::json_error(
                    *status,
                    "the external agent is failing (agent-tck proxy --fault)",
                )
            }
            Some(Behavior::Fault(fault)) => plan.fault = fault.clone(),
            _ => {}
        }
    }

    fn bend_callback(&self, agent: &str, seq: u64, target: &str, body: Bytes) -> Bytes {
        match self.callback(agent, seq, target) {
            Some(CallbackKind::Empty) => Bytes::new(),
            Some(CallbackKind::Whitespace) => Bytes::from_static(b"  \n\t \r\n "),
            _ => body,
        }
    }

    fn heard(&self, relayed: &Relayed, body: &[u8]) {
        let Ok(mut state) = self.state.lock() else {
            return;
        };
        let request = self.request(relayed, body);
        match relayed.way {
            Way::Forward => self.forwarded(&mut state, relayed, &request),
            Way::Callback => self.called_back(&mut state, relayed, &request),
        }
    }

    fn cases(&self, ended: Duration) -> Vec<CaseResult> {
        let Ok(state) = self.state.lock() else {
            return Vec::new();
        };
        let slow = |f: &ServerForward| {
            state
                .books
                .forwards
                .iter()
                .position(|g| std::ptr::eq(g, f))
                .is_some_and(|i| state.slow.contains(&i))
        };
        let mut cases = between(&state.books, &slow);
        for (name, agent) in &state.agents {
            cases.extend(self.agent_cases(name, agent, ended));
        }
        cases
    }
}

impl Between {
    /// The acknowledgement fault that falls on forward `seq` to `agent` at `target`.
    fn ack(&self, agent: &str, seq: u64, target: &str) -> Option<&Behavior> {
        let path = agent_path(target, agent);
        self.bent.get(agent)?.on(self.seed, seq, path, |w| match w {
            Bends::Ack(b) => Some(b),
            Bends::Callback(_) => None,
        })
    }

    /// The body fault that falls on callback `seq` from `agent` at `target`.
    fn callback(&self, agent: &str, seq: u64, target: &str) -> Option<CallbackKind> {
        let path = agent_path(target, agent);
        self.bent.get(agent)?.on(self.seed, seq, path, |w| match w {
            Bends::Callback(kind) => Some(*kind),
            Bends::Ack(_) => None,
        })
    }

    /// The request as it came to the proxy, for the rules that read one.
    fn request(&self, relayed: &Relayed, body: &[u8]) -> Request {
        let mut headers = crate::mock::http1::Headers::default();
        if let Some(t) = &relayed.content_type {
            headers.push("content-type", t);
        }
        let unspecified = std::net::SocketAddr::from(([0, 0, 0, 0], 0));
        Request {
            method: relayed.method.clone(),
            target: relayed.target.clone(),
            headers,
            body: bytes::Bytes::copy_from_slice(body),
            close: false,
            received: self.base + relayed.at(),
            peer: unspecified,
            local: unspecified,
            left: None,
        }
    }

    /// A forward: the agent's acknowledgement (the probe's record of a forward), and the
    /// server's request (the fleet's).
    fn forwarded(&self, state: &mut State, relayed: &Relayed, request: &Request) {
        let Some(name) = relayed.agent.as_deref() else {
            return;
        };
        let payload: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
        let session = payload["sessionId"].as_str().unwrap_or("").to_string();
        let waited = relayed.waited();
        let ended_at = relayed.at() + waited;
        let mut forward = Forward {
            what: format!("the forward at +{:.1} s", relayed.at().as_secs_f64()),
            session: session.clone(),
            status: None,
            said: String::new(),
            elapsed: waited,
            error: None,
            failing: false,
            unreachable: None,
            broke_at: None,
            ended_at,
        };
        let mut status = 0;
        // The server's clock starts before the forward's last byte reaches the proxy: a give-up
        // at its 5 s reads a little under them here.
        let early = matches!(relayed.came, Came::Left) && waited + EARLY < FORWARD_TIMEOUT;
        let slow = match &relayed.came {
            Came::Answer {
                status: s, said, ..
            } => {
                forward.status = Some(*s);
                forward.said = said.clone();
                status = *s;
                waited > FORWARD_TIMEOUT
            }
            Came::Failed { error } => {
                if let http::Error::Connect { addr, reason } = error {
                    forward.unreachable = Some(format!("cannot connect to {addr}: {reason}"));
                }
                if matches!(
                    error,
                    http::Error::Connect { .. }
                        | http::Error::Reset { .. }
                        | http::Error::Closed { .. }
                ) {
                    forward.broke_at = Some(ended_at);
                }
                forward.error = Some(error.to_string());
                matches!(error, http::Error::Timeout { .. })
            }
            Came::Left => {
                forward.error = Some(format!(
                    "no acknowledgement when the agent server gave up, {:.1} s after the forward",
                    waited.as_secs_f64()
                ));
                // Slower than the server waited (its clock started before the forward's last
                // byte reached the proxy, so this wait reads a little under its 5 s).
                true
            }
            // The run's end cut it: nothing to judge either party by.
            Came::Stopped | Came::Nowhere => return,
        };
        let mut problems = super::fleet::payload_problems(request, &payload);
        match payload["callbackUrl"].as_str() {
            Some(url) if !session.is_empty() => {
                let path = origin_and_rest(url).map_or(url, |(_, rest)| rest);
                let path = path.split('?').next().unwrap_or(path);
                if !path.ends_with(&callback_path(&session)) {
                    problems.push(format!(
                        "callbackUrl {url:?} is not the session's callback endpoint (…{})",
                        callback_path(&session)
                    ));
                }
            }
            _ => {}
        }
        let malformed = !problems.is_empty();
        // The server is judged on what it met: the acknowledgement as the faults bent it.
        let bent = self.ack(name, relayed.seq, &relayed.target);
        let slow = slow || bent.is_some_and(held_past_5s);
        let status = bent.map_or(status, |b| head_met(b, status));
        let mut server = ServerForward::received(name, request, &payload, problems, status);
        server.ack = relayed.delivered;
        if slow {
            state.slow.insert(state.books.forwards.len());
        }
        state.books.forwards.push(server);
        let Some(agent) = state.agents.get_mut(name) else {
            return;
        };
        if malformed {
            agent.malformed.insert(agent.forwards.len());
        }
        if early {
            agent.early.insert(agent.forwards.len());
        }
        agent.forwards.push(forward);
    }

    /// A callback: the agent's (the probe's record of a callback), and the server's answer
    /// to it (the fleet's record of a callback sent).
    fn called_back(&self, state: &mut State, relayed: &Relayed, request: &Request) {
        // A callback the proxy could tie to no agent was answered 404 and judges no one.
        let Some(agent) = relayed.agent.as_deref().and_then(|n| state.agents.get(n)) else {
            return;
        };
        let Whose::Given { session, .. } = agent.listener.heard(request, request.received) else {
            return;
        };
        // A callback with another method than POST breaks the agent's rule (callback.method):
        // the server's answer to it (405, likely) is not its answer to a callback.
        if relayed.method != "POST" {
            return;
        }
        let (status, error) = match &relayed.came {
            Came::Answer { status, .. } => (Some(*status), None),
            Came::Failed { error } => (None, Some(error.to_string())),
            // The agent left, or the run ended, before the server answered: not the server's
            // doing.
            Came::Left | Came::Stopped | Came::Nowhere => return,
        };
        // The server is judged on the body it met (the agent on the one it sent).
        let bent = self.callback(agent_name(relayed), relayed.seq, &relayed.target);
        let body = &request.body;
        let kind = if let Some(kind) = bent {
            kind
        } else if body.is_empty() {
            CallbackKind::Empty
        } else if body.iter().all(u8::is_ascii_whitespace) {
            CallbackKind::Whitespace
        } else {
            CallbackKind::Text
        };
        state.books.callbacks.push(SentCallback {
            agent: relayed.agent.clone().unwrap_or_default(),
            session,
            kind,
            digest: crate::text::fnv1a(&String::from_utf8_lossy(body)),
            len: body.len(),
            marker: String::new(),
            canary: None,
            answers: String::new(),
            sent: request.received,
            status,
            answered: Some(request.received + relayed.waited()),
            error,
            cut_mid_body: false,
            broke_at: None,
        });
    }

    /// Agent `name`'s cases, as the probe names them, under its name.
    fn agent_cases(&self, name: &str, agent: &Agent, ended: Duration) -> Vec<CaseResult> {
        let mut cases = vec![alive_case(agent), acknowledged_case(agent)];
        let heard = Heard {
            forwards: &agent.forwards,
            listener: &agent.listener,
            reply_timeout: self.reply_timeout,
            died: agent.died().map(|(at, _)| at),
            ended: Some(ended),
        };
        if let Ok(suite) = super::probe::suite() {
            for spec in suite.cases() {
                let rule = match spec.checks.first() {
                    Some(Check::Rule(call)) if AGENT_RULES.contains(&call.name.as_str()) => {
                        call.name.clone()
                    }
                    _ => continue,
                };
                let mut case = spec.case();
                if agent.forwards.is_empty() {
                    case.skip(no_forward(name));
                } else {
                    judge_across(&heard, &rule, &mut case, &[], None, None);
                }
                cases.push(case);
            }
        }
        for case in &mut cases {
            case.id = format!("{name}/{}", case.id);
            case.group = format!("agent {name}");
            case.precondition = false;
        }
        cases
    }
}

fn agent_name(relayed: &Relayed) -> &str {
    relayed.agent.as_deref().unwrap_or("")
}

fn no_forward(name: &str) -> String {
    format!(
        "no forward reached agent {name} through the proxy: give the agent server the proxy's inputUrl for {name} (printed at start) and send a message on one of its sessions"
    )
}

/// The agent went down mid-run: named once, when, and after what.
fn alive_case(agent: &Agent) -> CaseResult {
    let mut case = CaseResult::new(
        "agent.alive",
        "agent",
        Level::Must,
        "the agent stays up for the whole run",
        "Request Format",
    );
    let answered = agent.forwards.iter().filter(|f| f.status.is_some()).count() as u64;
    match &agent.died() {
        Some((at, why)) => case.fail_on(
            Evidence::new(agent.forwards.len() as u64, "forwards"),
            format!(
                "the agent went down at {:.2} s, after answering {}: {why}; the forwards and callbacks due after it are not judged",
                at.as_secs_f64(),
                crate::text::count(answered, "forwards")
            ),
        ),
        None => case.pass(Evidence::new(answered, "forwards answered"), || {
            "no forward was answered: nothing shows the agent up".into()
        }),
    }
    case
}

/// Each forward acknowledged 2xx; those after the agent went down are its death's, named once
/// by agent.alive, and those whose payload broke the document, or that the server gave up on
/// before its 5 s, the server's.
fn acknowledged_case(agent: &Agent) -> CaseResult {
    let (id, title, section) = ACKNOWLEDGED;
    let mut case = CaseResult::new(id, "forward", Level::Must, title, section);
    let died = agent.died().map(|(at, _)| at);
    let judged: Vec<&Forward> = agent
        .forwards
        .iter()
        .enumerate()
        .filter(|(i, _)| !agent.malformed.contains(i) && !agent.early.contains(i))
        .map(|(_, f)| f)
        .filter(|f| died.is_none_or(|d| f.broke_at.is_none_or(|b| b < d)))
        .collect();
    let bad: Vec<String> = judged
        .iter()
        .filter(|f| !f.acknowledged())
        .map(|f| f.unacknowledged())
        .collect();
    let evidence = Evidence::new(judged.len() as u64, "forwards");
    if bad.is_empty() {
        let malformed = agent.malformed.len();
        case.pass(evidence, || {
            if malformed > 0 {
                format!(
                    "each of the {} broke the document (see platform.forward-schema): the agent's answer to them is not judged; a server whose forwards follow it exercises this case",
                    crate::text::count(malformed as u64, "forwards")
                )
            } else if !agent.early.is_empty() {
                format!(
                    "the server gave up on each of the {} before its 5 s: no acknowledgement was due yet",
                    crate::text::count(agent.early.len() as u64, "forwards")
                )
            } else {
                "no forward was answered before the agent went down (see agent.alive)".into()
            }
        });
    } else {
        let shown: Vec<&str> = bad.iter().take(3).map(String::as_str).collect();
        case.fail_on(
            evidence,
            format!(
                "{} of {} not acknowledged: {}",
                bad.len(),
                crate::text::count(judged.len() as u64, "forwards"),
                shown.join("; ")
            ),
        );
    }
    case
}
