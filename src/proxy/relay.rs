//! The proxy between a platform and agents that answer later, by calling the platform back at
//! a URL the platform's request gave them ([`CallsBack`]). Each request of the platform's to
//! an agent (`/agents/NAME/…`) is passed on with that URL replaced by one of the proxy's own
//! (`http://HOST:PORT/callbacks/NAME/…`, [`Relay::redirect`]); each callback that comes there is
//! passed on to the URL the platform gave ([`Relay::destination`]) and the platform's answer
//! written back to the agent. Every exchange, both ways, is told to the protocol's [`Relay`],
//! which judges both parties from them: the same [`Relayed`] records, live or read back from a
//! recording, give the same verdicts.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use super::forward::{self, Forwarded};
use super::report::{by_party, reached_case, report_of};
use crate::error::Error;
use crate::judge::record::Recorder;
use crate::judge::{Answer, Entry, Event, Exchange, Message, Party};
use crate::mock::http1::{self, Delivered, Fault, Handler, Plan, Request, Response, ServerLimits};
use crate::report::{CaseResult, Report};
use crate::text::Redactor;
use crate::transport::http::{self, BaseUrl};
use crate::transport::pool::Pool;

/// A protocol whose agents answer later by calling the platform back at a URL the platform's
/// request gave them: the proxy stands between them both ways.
pub trait CallsBack: Sync {
    /// The relay of one run, for `agents` (each its name and the `--fault`s put on it, as
    /// written); a callback may take `reply_timeout` to come. A fault it does not know is an
    /// error that says which it knows.
    fn relay(
        &self,
        agents: &[(String, Vec<String>)],
        reply_timeout: Duration,
        seed: u64,
    ) -> Result<Box<dyn Relay>, String>;
}

/// What the proxy asks of a protocol between a platform and agents that call back, and tells
/// it.
pub trait Relay: Send + Sync {
    /// The platform's request `body` to `agent` as it is to go on: the URL it gives the agent to
    /// call back at replaced by one under `back` (the proxy's route for the agent's callbacks,
    /// `http://HOST:PORT/callbacks/NAME`), and a note of what was given, which the proxy hands
    /// to [`Relay::given`] at once (and records, for a recording judged again). None: the
    /// request carries no such URL and goes on as it came.
    fn redirect(&self, agent: &str, body: &[u8], back: &str) -> Option<(Vec<u8>, Value)>;

    /// What [`Relay::redirect`] noted for `agent`: the relay keeps it to route the callbacks.
    fn given(&self, agent: &str, note: &Value);

    /// Where a callback that came to the proxy at `target` is to be passed on: the agent it is
    /// from and the platform's URL (origin, then path and query). `agent` is the agent whose
    /// route it came under, None when it came elsewhere. None: nowhere (the proxy answers 404).
    fn destination(&self, agent: Option<&str>, target: &str) -> Option<Destination>;

    /// The agent's answer to forward `seq` (at `target`, the proxy's path), as the platform is
    /// to meet it: bent by the agent's faults, if one falls on it (the agent is judged on the
    /// answer as it came).
    fn bend_answer(&self, agent: &str, seq: u64, target: &str, plan: &mut Plan);

    /// The body of callback `seq` (at `target`), as the platform is to meet it: bent by the
    /// agent's faults, if one falls on it (the agent is judged on the callback as it came).
    fn bend_callback(
        &self,
        agent: &str,
        seq: u64,
        target: &str,
        body: bytes::Bytes,
    ) -> bytes::Bytes;

    /// An exchange the proxy relayed (or refused), both ways, once it is over; `body` is the
    /// request's body as it came.
    fn heard(&self, relayed: &Relayed, body: &[u8]);

    /// The verdicts on both parties, the run having ended `ended` after it started.
    fn cases(&self, ended: Duration) -> Vec<CaseResult>;
}

/// Where a callback goes on to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Destination {
    /// The agent it is from.
    pub agent: String,
    /// The platform's origin (`http://host:port`).
    pub origin: String,
    /// The path and query on it.
    pub target: String,
}

/// Which way an exchange went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Way {
    /// The platform to an agent.
    Forward,
    /// An agent back to the platform.
    Callback,
}

/// What the other side made of a relayed request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "came")]
pub enum Came {
    /// An answer: its status, Content-Type and the first bytes of its body.
    Answer {
        status: u16,
        content_type: Option<String>,
        said: String,
    },
    /// The exchange failed (refused, reset, timed out).
    Failed { error: http::Error },
    /// The asker left before the answer came (it gave up).
    Left,
    /// The run ended first.
    Stopped,
    /// Not passed on: the proxy knew no destination for it (answered 404).
    Nowhere,
}

/// One exchange the proxy relayed, as the relay judges it (and a recording keeps it).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Relayed {
    pub seq: u64,
    pub way: Way,
    /// The agent it was to (a forward) or from (a callback); None: a callback whose agent is
    /// not known.
    pub agent: Option<String>,
    pub method: String,
    /// The path and query it came to the proxy at.
    pub target: String,
    pub content_type: Option<String>,
    /// When its last byte came, in ms since the run started.
    pub at_ms: f64,
    pub came: Came,
    /// How long the other side took (to answer, or until it was given up on), in ms.
    pub waited_ms: f64,
    /// How the proxy's answer reached the asker (None: not known).
    pub delivered: Option<Delivered>,
}

impl Relayed {
    pub fn at(&self) -> Duration {
        crate::judge::time::duration(self.at_ms)
    }

    pub fn waited(&self) -> Duration {
        crate::judge::time::duration(self.waited_ms)
    }
}

/// The event that holds what a redirect gave an agent, in a recording.
pub const GIVEN_EVENT: &str = "callback-given";

/// Everything a relayed proxy run needs, checked.
pub struct RelaySettings {
    pub protocol: &'static str,
    pub calls_back: &'static dyn CallsBack,
    /// Each agent's name, real URL and `--fault`s (as written).
    pub agents: Vec<(String, BaseUrl, Vec<String>)>,
    pub listen: SocketAddr,
    /// How long a callback may take to come.
    pub reply_timeout: Duration,
    /// How long the proxy waits for either side's answer at most.
    pub deadline: Duration,
    pub duration: Option<Duration>,
    pub record: Option<PathBuf>,
    pub seed: u64,
    pub strict: bool,
    pub log: bool,
}

/// The relaying proxy's handler.
pub struct RelayHandler {
    agents: HashMap<String, Pool>,
    names: Vec<String>,
    /// The platform's origins the callbacks go on to, with their open connections.
    platforms: Mutex<HashMap<String, Arc<Pool>>>,
    pub relay: Box<dyn Relay>,
    /// `http://HOST:PORT`, the proxy's own origin.
    origin: String,
    deadline: Duration,
    started: Instant,
    stop: CancellationToken,
    recorder: Mutex<Option<Recorder>>,
    log: bool,
    seq: AtomicU64,
    /// Requests of the platform's to its agents.
    pub forwards: AtomicU64,
    /// Requests that came to the proxy otherwise (the agents' callbacks, and strays).
    pub callbacks: AtomicU64,
    /// Exchanges not yet over (told to the relay when they are).
    pub open: AtomicU64,
}

/// What [`Handler::finish`] needs of an exchange.
pub struct Pending {
    relayed: Relayed,
    request: Message,
    body: bytes::Bytes,
}

/// The proxy's route for an agent's callbacks.
const CALLBACKS: &str = "/callbacks/";

impl RelayHandler {
    fn ms(&self, at: Instant) -> f64 {
        crate::judge::time::ms_since(self.started, at)
    }

    /// The route `prefix` NAME … of `target`: the agent and the rest of the target.
    fn routed<'t>(&self, target: &'t str, prefix: &str) -> Option<(&str, &'t str)> {
        let rest = target.strip_prefix(prefix)?;
        let end = rest.find(['/', '?']).unwrap_or(rest.len());
        let name = self.names.iter().find(|n| **n == rest[..end])?;
        Some((name.as_str(), &rest[end..]))
    }

    fn platform(&self, origin: &str) -> Option<Arc<Pool>> {
        let mut platforms = self.platforms.lock().ok()?;
        if let Some(pool) = platforms.get(origin) {
            return Some(pool.clone());
        }
        let pool = Arc::new(Pool::new(BaseUrl::parse(origin).ok()?));
        platforms.insert(origin.to_string(), pool.clone());
        Some(pool)
    }

    /// Records what a redirect gave an agent, among the exchanges, in the order it came.
    fn record_given(&self, agent: &str, note: &Value, at: Instant) {
        let Ok(mut recorder) = self.recorder.lock() else {
            return;
        };
        if let Some(recorder) = recorder.as_mut() {
            let event = Event {
                event: GIVEN_EVENT.into(),
                at_ms: self.ms(at),
                context: json!({"agent": agent, "note": note}),
            };
            if let Err(e) = recorder.write_event(&event) {
                crate::errln!("--record: {e}");
            }
        }
    }

    /// Passes `request` on: a forward to agent `agent` (its body redirected), or a callback to
    /// its destination.
    async fn pass_on(
        &self,
        pool: &Pool,
        target: &str,
        request: &Request,
        body: bytes::Bytes,
    ) -> Forwarded {
        forward::forward(
            pool,
            &request.method,
            target,
            request.headers.iter(),
            body,
            self.deadline,
            request.left.as_ref(),
            &self.stop,
        )
        .await
    }
}

/// What the asker meets, and what it was, for how the other side answered.
fn answered(forwarded: &Forwarded) -> (Plan, Came) {
    match forwarded {
        Forwarded::Came(Ok(response)) => {
            let mut plan = Plan::immediate(Response::new(
                response.status,
                "application/json",
                response.body.clone(),
            ));
            forward::restore_headers(&mut plan, response);
            let content_type = response
                .headers
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case("content-type"))
                .map(|(_, v)| v.clone());
            let came = Came::Answer {
                status: response.status,
                content_type,
                said: crate::text::excerpt(&response.body, 120),
            };
            (plan, came)
        }
        Forwarded::Came(Err(e)) => (forward::failed_plan(e), Came::Failed { error: e.clone() }),
        // Nothing to write: the asker is gone, or the run is ending.
        Forwarded::PlatformLeft | Forwarded::Stopped => (
            Plan {
                fault: Fault::Hang,
                ..Plan::immediate(Response::new(502, "text/plain", ""))
            },
            if matches!(forwarded, Forwarded::Stopped) {
                Came::Stopped
            } else {
                Came::Left
            },
        ),
    }
}

impl Handler for RelayHandler {
    type Note = Pending;

    fn waits(&self) -> bool {
        true
    }

    async fn handle(&self, request: Request) -> (Plan, Pending) {
        let seq = self.seq.fetch_add(1, Ordering::Relaxed) + 1;
        self.open.fetch_add(1, Ordering::Relaxed);
        let recorded = Message::masked(request.headers.iter(), &request.body);
        let relayed = |way, agent: Option<&str>, came, waited: Duration| Relayed {
            seq,
            way,
            agent: agent.map(str::to_string),
            method: request.method.clone(),
            target: request.target.clone(),
            content_type: request.header("content-type").map(str::to_string),
            at_ms: self.ms(request.received),
            came,
            waited_ms: crate::judge::time::ms(waited),
            delivered: None,
        };
        let pending = |relayed: Relayed| Pending {
            relayed,
            request: recorded.clone(),
            body: request.body.clone(),
        };
        if let Some((agent, rest)) = self.routed(&request.target, "/agents/") {
            self.forwards.fetch_add(1, Ordering::Relaxed);
            let back = format!("{}{CALLBACKS}{agent}", self.origin);
            let body = match self.relay.redirect(agent, &request.body, &back) {
                Some((body, note)) => {
                    self.relay.given(agent, &note);
                    self.record_given(agent, &note, request.received);
                    bytes::Bytes::from(body)
                }
                None => request.body.clone(),
            };
            let target = if rest.is_empty() { "/" } else { rest };
            let forwarded = self
                .pass_on(&self.agents[agent], target, &request, body)
                .await;
            let (mut plan, came) = answered(&forwarded);
            // Nothing is written to a platform that left, nor at the run's end.
            if matches!(came, Came::Answer { .. } | Came::Failed { .. }) {
                self.relay
                    .bend_answer(agent, seq, &request.target, &mut plan);
            }
            let waited = request.received.elapsed();
            return (
                plan,
                pending(relayed(Way::Forward, Some(agent), came, waited)),
            );
        }
        self.callbacks.fetch_add(1, Ordering::Relaxed);
        let under = self
            .routed(&request.target, CALLBACKS)
            .map(|(agent, _)| agent);
        let destination = self.relay.destination(under, &request.target);
        let pool = destination.as_ref().and_then(|d| self.platform(&d.origin));
        let (Some(to), Some(pool)) = (destination, pool) else {
            let plan = Plan::immediate(Response::json_error(
                404,
                &format!(
                    "nothing at {} behind this proxy: the platform calls /agents/{{{}}}/…, the agents call back at the URLs they were given",
                    request.path(),
                    self.names.join(",")
                ),
            ));
            let agent = under;
            return (
                plan,
                pending(relayed(Way::Callback, agent, Came::Nowhere, Duration::ZERO)),
            );
        };
        let body = self
            .relay
            .bend_callback(&to.agent, seq, &request.target, request.body.clone());
        let forwarded = self.pass_on(&pool, &to.target, &request, body).await;
        let (plan, came) = answered(&forwarded);
        let waited = request.received.elapsed();
        (
            plan,
            pending(relayed(Way::Callback, Some(&to.agent), came, waited)),
        )
    }

    async fn finish(&self, pending: Pending, delivered: Delivered) {
        let mut relayed = pending.relayed;
        // Told to the relay before it counts as over: whoever waits for `open` to reach 0
        // finds it judged.
        let _over = Over(&self.open);
        relayed.delivered = Some(delivered);
        if self.log {
            let way = match relayed.way {
                Way::Forward => "forward to",
                Way::Callback => "callback from",
            };
            let came = match &relayed.came {
                Came::Answer { status, .. } => format!("answered {status}"),
                Came::Failed { error } => format!("failed: {error}"),
                Came::Left => "the asker left first".into(),
                Came::Stopped => "cut by the run's end".into(),
                Came::Nowhere => "nowhere to pass it on (404)".into(),
            };
            crate::outln!(
                "{way} {} {} {} ms: {came}",
                relayed.agent.as_deref().unwrap_or("an unknown agent"),
                relayed.target,
                relayed.waited_ms as u64,
            );
        }
        self.relay.heard(&relayed, &pending.body);
        if let Ok(mut recorder) = self.recorder.lock() {
            if let Some(recorder) = recorder.as_mut() {
                if let Err(e) = recorder.write(&exchange_of(&relayed, pending.request)) {
                    crate::errln!("--record: {e}");
                }
            }
        }
    }
}

/// Counts an exchange over when dropped.
struct Over<'a>(&'a AtomicU64);

impl Drop for Over<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A relayed exchange as a recording keeps it: the wire as the HAR's readers see it, and the
/// record the relay judged in its context.
fn exchange_of(relayed: &Relayed, request: Message) -> Exchange {
    let agent = Party::Agent(relayed.agent.clone().unwrap_or_default());
    let (from, to) = match relayed.way {
        Way::Forward => (Party::Platform, agent),
        Way::Callback => (agent, Party::Platform),
    };
    let answer = match &relayed.came {
        Came::Answer { status, .. } => Answer::Delivered {
            status: Some(*status),
            message: Message::default(),
        },
        Came::Failed { error } => Answer::Failed {
            what: error.to_string(),
        },
        Came::Left => Answer::TimedOut,
        Came::Stopped => Answer::Cut,
        Came::Nowhere => Answer::Delivered {
            status: Some(404),
            message: Message::default(),
        },
    };
    Exchange {
        seq: relayed.seq,
        from,
        to,
        method: Some(relayed.method.clone()),
        endpoint: relayed.target.clone(),
        case: None,
        request,
        answer,
        sent_ms: relayed.at_ms,
        answered_ms: Some(relayed.at_ms + relayed.waited_ms),
        context: json!({ "relayed": relayed }),
    }
}

/// Feeds `relay` a recording of a relayed run, as the live proxy fed it: what was given to
/// the agents and each exchange, in the order they were written. Returns how many forwards
/// it held, and when it ended (ms since the start).
pub fn feed(relay: &dyn Relay, entries: &[Entry]) -> Result<(u64, f64), String> {
    let mut forwards = 0;
    let mut last: f64 = 0.0;
    for entry in entries {
        match entry {
            Entry::Event(e) if e.event == GIVEN_EVENT => {
                let agent = e.context["agent"].as_str().unwrap_or("");
                relay.given(agent, &e.context["note"]);
                last = last.max(e.at_ms);
            }
            Entry::Event(e) => last = last.max(e.at_ms),
            Entry::Exchange(x) => {
                let relayed: Relayed = serde_json::from_value(x.context["relayed"].clone())
                    .map_err(|e| format!("exchange {}: its relayed record is wrong: {e}", x.seq))?;
                forwards += u64::from(relayed.way == Way::Forward);
                last = last.max(relayed.at_ms + relayed.waited_ms);
                relay.heard(&relayed, &x.request.body());
            }
        }
    }
    Ok((forwards, last))
}

/// The event a relayed run's recording ends with (its verdicts drawn then): the one a proxy's
/// recording cut before its close lacks ([`super::judge::close_cut`]).
pub const END_EVENT: &str = "judged";

/// Both parties' verdicts, the run having ended `ended` after it started with `forwards`
/// requests of the platform's to its agents.
fn verdicts(relay: &dyn Relay, forwards: u64, ended: Duration) -> Vec<CaseResult> {
    let mut cases = vec![reached_case(forwards)];
    cases.extend(relay.cases(ended));
    by_party(&mut cases);
    cases
}

/// A relayed run's recording judged again: `relay` fed it as the live proxy was, the
/// verdicts drawn where it ends.
pub fn judge(relay: &dyn Relay, entries: &[Entry]) -> Result<Vec<CaseResult>, String> {
    let (forwards, ended_ms) = feed(relay, entries)?;
    Ok(verdicts(
        relay,
        forwards,
        crate::judge::time::duration(ended_ms),
    ))
}

/// A relayed proxy being served.
pub struct RelayRunning {
    pub handler: Arc<RelayHandler>,
    pub addr: SocketAddr,
    server: http1::Running,
    started: Instant,
    started_at: String,
    settings: (&'static str, u64, bool, Option<Duration>, Option<PathBuf>),
}

impl RelayRunning {
    /// Each agent's proxy URL and real URL.
    pub fn routes(&self) -> Vec<(String, String)> {
        let mut routes: Vec<(String, String)> = self
            .handler
            .agents
            .iter()
            .map(|(name, pool)| {
                (
                    format!("http://{}/agents/{name}", self.addr),
                    pool.base().to_string(),
                )
            })
            .collect();
        routes.sort();
        routes
    }

    /// Serves until `stop` completes or `--duration` passes; then reports.
    pub async fn until(
        self,
        stop: impl std::future::Future<Output = String> + Send,
    ) -> Result<Report, Error> {
        let why = tokio::select! {
            why = stop => why,
            why = super::run::after(self.settings.3) => why,
        };
        self.end(why).await
    }

    /// Ends the run (`why`: Ctrl-C, `--duration 10m`) and draws the verdicts.
    pub async fn end(self, why: String) -> Result<Report, Error> {
        let (protocol, seed, strict, _, record) = self.settings;
        self.handler.stop.cancel();
        self.server.stop().await;
        let handler = &self.handler;
        let ended = self.started.elapsed();
        let recorder = handler.recorder.lock().ok().and_then(|mut r| r.take());
        if let Some(mut recorder) = recorder {
            let event = Event {
                event: END_EVENT.into(),
                at_ms: crate::judge::time::ms(ended),
                context: json!({ "why": why }),
            };
            recorder
                .write_event(&event)
                .and_then(|()| recorder.finish())
                .map_err(|e| Error::run(format!("--record: {e}")))?;
            if let Some(path) = &record {
                crate::errln!("wrote {}", path.display());
            }
        }
        let forwards = handler.forwards.load(Ordering::Relaxed);
        let cases = verdicts(handler.relay.as_ref(), forwards, ended);
        let target = format!(
            "the platform and the {} behind http://{}/agents/",
            crate::text::count(handler.names.len() as u64, "agents"),
            self.addr
        );
        let mut report = report_of(
            protocol,
            target,
            (seed, strict),
            cases,
            &Redactor::new(Vec::new()),
        );
        report.started_at = self.started_at.clone();
        report.duration_ms = u64::try_from(ended.as_millis()).unwrap_or(u64::MAX);
        report.notes.push(format!("the run ended: {why}"));
        Ok(report)
    }
}

/// Binds `settings.listen` and starts relaying.
pub async fn start(settings: RelaySettings) -> Result<RelayRunning, Error> {
    let started = Instant::now();
    let started_at = crate::report::now_rfc3339();
    let (listener, addr) = http1::bind(settings.listen).await?;
    let names: Vec<String> = settings.agents.iter().map(|(n, ..)| n.clone()).collect();
    let faulted: Vec<(String, Vec<String>)> = settings
        .agents
        .iter()
        .map(|(n, _, f)| (n.clone(), f.clone()))
        .collect();
    let relay = settings
        .calls_back
        .relay(&faulted, settings.reply_timeout, settings.seed)
        .map_err(|e| Error::usage(format!("--fault {e}")))?;
    let recorder = match &settings.record {
        Some(path) => {
            let urls = Box::new(move |party: &Party| match party {
                Party::Agent(name) => format!("http://{addr}/agents/{name}"),
                other => crate::judge::har::default_url(other),
            });
            let mut recorder = Recorder::create_with_urls(path, urls)
                .map_err(|e| Error::run(format!("--record: {e}")))?;
            let event = Event {
                event: super::settings::SETTINGS_EVENT.into(),
                at_ms: 0.0,
                context: super::settings::settings_context(&super::settings::RunSettings {
                    protocol: settings.protocol.to_string(),
                    platform_timeout_ms: 0.0,
                    timeout_ms: crate::judge::time::ms(settings.reply_timeout),
                    max_body: 0,
                    max_field: 0,
                    seed: settings.seed,
                    max_turns: None,
                    transport: Some(super::settings::HTTP.into()),
                    agents: faulted
                        .iter()
                        .map(|(name, faults)| super::settings::RecordedAgent {
                            name: name.clone(),
                            faults: faults.clone(),
                            requests: Vec::new(),
                        })
                        .collect(),
                }),
            };
            recorder
                .write_event(&event)
                .map_err(|e| Error::run(format!("--record: {e}")))?;
            Some(recorder)
        }
        None => None,
    };
    let handler = Arc::new(RelayHandler {
        agents: settings
            .agents
            .into_iter()
            .map(|(name, base, _)| (name, Pool::new(base)))
            .collect(),
        relay,
        names,
        platforms: Mutex::new(HashMap::new()),
        origin: format!("http://{addr}"),
        deadline: settings.deadline,
        started,
        stop: CancellationToken::new(),
        recorder: Mutex::new(recorder),
        log: settings.log,
        seq: AtomicU64::new(0),
        forwards: AtomicU64::new(0),
        callbacks: AtomicU64::new(0),
        open: AtomicU64::new(0),
    });
    let server = http1::Running::on(listener, handler.clone(), ServerLimits::default())?;
    Ok(RelayRunning {
        handler,
        addr,
        server,
        started,
        started_at,
        settings: (
            settings.protocol,
            settings.seed,
            settings.strict,
            settings.duration,
            settings.record,
        ),
    })
}
