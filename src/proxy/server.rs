//! The proxy before one server its clients call, for a protocol whose platform is that server
//! and whose agents are its clients: the roles of [`super::handler`] turned around. The clients
//! are given the proxy's URL in place of the server's (one URL for all of them: the proxy
//! stands where the server stood, and its paths are the server's); each request is passed on
//! to the real server as it came and its answer written back. The clients' requests are judged
//! by the protocol's client rules, the server's answers by its server rules, both through
//! [`ServerTraffic`], which the protocol gives ([`ProxiedServer`]) and which tells which
//! client sent a request (each client a party of the report). The engine names no protocol.
//!
//! A recording holds each exchange (from the client, by name, to the server), the order in
//! which the judge was told its request and its answer, and what the judge knew of the request
//! that the masked recording cannot show again (whether a bearer was the client's key): judged
//! offline ([`judge`]), the same calls in the same order give the live verdicts.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use super::forward::{self, Forwarded};
use super::report::{by_party, clients_reached_case, report_of, CLIENTS_REACHED};
use super::settings::{settings_context, RecordedAgent, RunSettings, SETTINGS_EVENT};
use crate::error::Error;
use crate::judge::record::{RecordError, Recorder};
use crate::judge::time::{instant, ms, ms_since};
use crate::judge::{Answer, Entry, Event, Exchange, Message, Party};
use crate::mock::http1::{self, Delivered, Fault, Handler, Plan, Request, Response, ServerLimits};
use crate::mock::recording::ReplayError;
use crate::report::{CaseResult, Report};
use crate::text::Redactor;
use crate::transport::http::BaseUrl;
use crate::transport::pool::Pool;

/// A protocol whose platform is a server its agents call: what the proxy needs of it to stand
/// before the server.
pub trait ProxiedServer: Send + Sync {
    /// A judge for one run; `keys`: each client's key by its name (`--agent-key NAME=KEY`),
    /// against which its bearer is judged.
    fn judge(&self, keys: &[(String, String)]) -> Box<dyn ServerTraffic>;
    /// A fault on the server's real answers, as `--fault NAME=FAULT` names it (the protocol's
    /// own words); Err: why it is no such fault, naming the ones there are.
    fn fault(&self, text: &str) -> Result<Box<dyn AnswerFault>, String>;
}

/// An answer as the proxy writes it back: the server's own, or a fault's in its place.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: bytes::Bytes,
    /// Written this much later than the server answered.
    pub delay: Duration,
    /// No answer at all: the connection reset.
    pub reset: bool,
}

/// A fault on a server's real answers.
pub trait AnswerFault: Send + Sync {
    /// What the client gets in place of `real`, the server's answer to a request at `path`;
    /// None: the answer goes as it came (the fault does not bend such an answer).
    fn bend(&self, path: &str, real: &Reply) -> Option<Reply>;
}

/// A fault of the run's: on the answers to which client (None: every one), at which path
/// (None: all), on what share of them, and as the user wrote it.
pub struct ServerFault {
    pub client: Option<String>,
    pub at: Option<String>,
    pub share: f64,
    pub fault: Box<dyn AnswerFault>,
    pub source: String,
}

/// One request of a client's, as it came.
pub struct ClientRequest<'a> {
    pub method: &'a str,
    /// The request target (path and query), as sent.
    pub target: &'a str,
    pub headers: Vec<(&'a str, &'a str)>,
    pub body: &'a [u8],
    /// When it came (its last byte).
    pub at: Instant,
    /// Judged offline: what the judge said of it live ([`ServerTraffic::on_request`]'s note).
    pub recorded: Option<&'a Value>,
}

/// What the server answered a request.
pub enum ServerAnswer<'a> {
    Came {
        status: u16,
        headers: &'a [(String, String)],
        body: &'a [u8],
    },
    /// No answer: what came instead (a refused connection, a reset, a timeout).
    Failed(String),
}

/// The judge of a run's traffic: the clients' requests by the client rules, the server's
/// answers by the server rules.
pub trait ServerTraffic: Send + Sync {
    /// A client's request: the name of the client that sent it (the party it is judged as),
    /// and a note of what the judge knew of it that the masked recording cannot show again.
    fn on_request(&self, request: &ClientRequest<'_>) -> (String, Value);
    /// The server's answer to `request` of `client`, at `at`; `given`: what the client got in
    /// its place, when a `--fault` bent it (the server is judged on its own answer, the client
    /// on what it got).
    fn on_answer(
        &self,
        request: &ClientRequest<'_>,
        client: &str,
        answer: &ServerAnswer<'_>,
        given: Option<&ServerAnswer<'_>>,
        at: Instant,
    );
    /// The verdicts: the server's (ids without `/`: the platform's party), each client's
    /// (`NAME/…`, group `agent NAME`: each its party).
    fn cases(&self) -> Vec<CaseResult>;
}

/// Everything a run before a server needs, checked.
pub struct ServerSettings {
    pub protocol: &'static str,
    pub proxied: &'static dyn ProxiedServer,
    pub server: BaseUrl,
    /// Each client's key, by name: the clients expected (reported even when silent).
    pub keys: Vec<(String, String)>,
    pub faults: Vec<ServerFault>,
    pub listen: std::net::SocketAddr,
    /// How long the proxy waits for the server's answer at most.
    pub timeout: Duration,
    pub duration: Option<Duration>,
    pub record: Option<std::path::PathBuf>,
    pub seed: u64,
    pub strict: bool,
    pub log: bool,
}

/// The recording, and the first write that failed (the run goes on; closing says it).
struct Written {
    recorder: Recorder,
    failed: Option<RecordError>,
}

/// The proxy's handler before a server.
pub struct ServerProxy {
    judge: Box<dyn ServerTraffic>,
    faults: Vec<ServerFault>,
    /// How many answers each fault bent.
    bent: Vec<AtomicU64>,
    seed: u64,
    pool: Pool,
    /// How many calls the judge was told so far, held while it is told: a recording keeps each
    /// call's place, for a judging offline in the same order.
    told: Mutex<u64>,
    written: Option<Mutex<Written>>,
    started: Instant,
    stop: CancellationToken,
    timeout: Duration,
    seq: AtomicU64,
    /// Requests that came through.
    pub requests: AtomicU64,
    /// Answers the server gave, and the first time it gave none after answering: when, after
    /// how many answers, what came instead (said once, in the report's notes).
    answers: AtomicU64,
    stopped_answering: Mutex<Option<String>>,
    log: bool,
}

/// What [`Handler::finish`] logs.
pub struct Note {
    client: String,
    line: String,
}

impl ServerProxy {
    /// The answer the client gets in place of `real` (the answer `seq` to `client` at `path`),
    /// when a fault bends it: the first fault for the client and the path, on its share of the
    /// answers (drawn from the seed and the request's number: the same run, the same choices).
    fn bend(&self, seq: u64, client: &str, path: &str, real: &Reply) -> Option<(Reply, &str)> {
        self.faults.iter().enumerate().find_map(|(i, f)| {
            let meant = f.client.as_deref().is_none_or(|c| c == client)
                && f.at.as_deref().is_none_or(|at| path.starts_with(at));
            if !meant || !super::share::drawn(self.seed, seq, i, f.share) {
                return None;
            }
            let bent = f.fault.bend(path, real)?;
            self.bent[i].fetch_add(1, Ordering::Relaxed);
            Some((bent, f.source.as_str()))
        })
    }

    /// How many answers each fault bent, with the fault as the user wrote it.
    fn bent_counts(&self) -> Vec<(String, u64)> {
        self.faults
            .iter()
            .zip(&self.bent)
            .map(|(f, n)| (f.source.clone(), n.load(Ordering::Relaxed)))
            .collect()
    }

    /// Tells the judge (`call`) with its place among the calls.
    fn tell<T>(&self, call: impl FnOnce() -> T) -> (T, u64) {
        match self.told.lock() {
            Ok(mut told) => {
                let got = call();
                *told += 1;
                (got, *told)
            }
            Err(_) => (call(), 0),
        }
    }

    fn write(&self, exchange: &Exchange) {
        let Some(written) = &self.written else { return };
        if let Ok(mut w) = written.lock() {
            if w.failed.is_none() {
                w.failed = w.recorder.write(exchange).err();
            }
        }
    }

    fn event(&self, event: &str, at_ms: f64, context: Value) {
        let Some(written) = &self.written else { return };
        if let Ok(mut w) = written.lock() {
            if w.failed.is_none() {
                let event = Event {
                    event: event.to_string(),
                    at_ms,
                    context,
                };
                w.failed = w.recorder.write_event(&event).err();
            }
        }
    }

    /// The first failure after answers came: the server stopped answering (said once).
    fn note_failure(&self, what: &str, at: Instant) {
        let answers = self.answers.load(Ordering::Relaxed);
        if answers == 0 {
            return;
        }
        if let Ok(mut stopped) = self.stopped_answering.lock() {
            stopped.get_or_insert_with(|| {
                format!(
                    "the server stopped answering {:.1} s into the run, after {}: {what}; \
                     the requests after it are the server's failures (fleet.no-5xx), not the \
                     clients'",
                    at.saturating_duration_since(self.started).as_secs_f64(),
                    crate::text::count(answers, "answers")
                )
            });
        }
    }
}

impl Handler for ServerProxy {
    type Note = Option<Note>;

    fn waits(&self) -> bool {
        true
    }

    async fn handle(&self, request: Request) -> (Plan, Option<Note>) {
        let seq = self.seq.fetch_add(1, Ordering::Relaxed) + 1;
        self.requests.fetch_add(1, Ordering::Relaxed);
        let asked = ClientRequest {
            method: &request.method,
            target: &request.target,
            headers: request.headers.iter().collect(),
            body: &request.body,
            at: request.received,
            recorded: None,
        };
        let ((client, note), asked_order) = self.tell(|| self.judge.on_request(&asked));
        let forwarded = forward::forward(
            &self.pool,
            &request.method,
            &request.target,
            request.headers.iter(),
            request.body.clone(),
            self.timeout,
            request.left.as_ref(),
            &self.stop,
        )
        .await;
        let at = Instant::now();
        let path = request.path();
        let real = match &forwarded {
            Forwarded::Came(Ok(r)) => Some(Reply {
                status: r.status,
                headers: r.headers.clone(),
                body: r.body.clone(),
                delay: Duration::ZERO,
                reset: false,
            }),
            _ => None,
        };
        let bent = real
            .as_ref()
            .and_then(|real| self.bend(seq, &client, path, real));
        let mut context = json!({"note": note});
        let (plan, answer, line) = match &forwarded {
            Forwarded::Came(Ok(response)) => {
                self.answers.fetch_add(1, Ordering::Relaxed);
                let answer = Answer::Delivered {
                    status: Some(response.status),
                    message: Message::masked(
                        response
                            .headers
                            .iter()
                            .map(|(n, v)| (n.as_str(), v.as_str())),
                        &response.body,
                    ),
                };
                let (plan, line) = match &bent {
                    Some((reply, source)) => {
                        context["fault"] = json!(source);
                        context["given"] = given_context(reply);
                        (
                            fault_plan(reply),
                            format!("{} (--fault {source})", reply.status),
                        )
                    }
                    None => {
                        let mut plan = Plan::immediate(Response::new(
                            response.status,
                            "application/json",
                            response.body.clone(),
                        ));
                        forward::restore_headers(&mut plan, response);
                        (plan, response.status.to_string())
                    }
                };
                (plan, answer, line)
            }
            Forwarded::Came(Err(e)) => {
                let what = e.to_string();
                self.note_failure(&what, at);
                let line = format!("no answer: {what}");
                (forward::failed_plan(e), Answer::Failed { what }, line)
            }
            Forwarded::PlatformLeft | Forwarded::Stopped => {
                // Nothing to write: the client is gone, or the run is ending; nothing of the
                // server's to judge either.
                let plan = Plan {
                    fault: Fault::Hang,
                    ..Plan::immediate(Response::new(502, "text/plain", ""))
                };
                (plan, Answer::Cut, "cut".to_string())
            }
        };
        let told = match &forwarded {
            Forwarded::Came(result) => {
                let answer = match result {
                    Ok(r) => ServerAnswer::Came {
                        status: r.status,
                        headers: &r.headers,
                        body: &r.body,
                    },
                    Err(e) => ServerAnswer::Failed(e.to_string()),
                };
                let given = bent.as_ref().map(|(reply, _)| given_answer(reply));
                let ((), n) = self.tell(|| {
                    self.judge
                        .on_answer(&asked, &client, &answer, given.as_ref(), at)
                });
                Some(n)
            }
            _ => None,
        };
        context["order"] = json!([asked_order, told]);
        self.write(&Exchange {
            seq,
            from: Party::Client(client.clone()),
            to: Party::Server,
            method: Some(request.method.clone()),
            endpoint: request.target.clone(),
            case: None,
            request: Message::masked(request.headers.iter(), &request.body),
            answer,
            sent_ms: ms_since(self.started, request.received),
            answered_ms: Some(ms_since(self.started, at)),
            context,
        });
        let line = format!("{} {} {line}", request.method, request.path());
        (plan, self.log.then_some(Note { client, line }))
    }

    async fn finish(&self, note: Option<Note>, delivered: Delivered) {
        if let Some(note) = note {
            crate::outln!(
                "{} {} {} ms {:?}",
                note.client,
                note.line,
                delivered.total.as_millis(),
                delivered.outcome
            );
        }
    }
}

/// The proxy's own case: how many answers each fault bent (`bent`: each fault as written, and
/// its count; none given: no case).
fn faults_case(bent: &[(String, u64)]) -> Option<CaseResult> {
    if bent.is_empty() {
        return None;
    }
    let mut case = CaseResult::new(
        "proxy.faults-applied",
        "proxy",
        crate::report::Level::May,
        "the --fault faults bent the server's real answers (the server is judged on its own \
         answers, each client on what it got)",
        "agent-tck (--fault)",
    );
    let total: u64 = bent.iter().map(|(_, n)| n).sum();
    let listed: Vec<String> = bent.iter().map(|(s, n)| format!("{s} ({n})")).collect();
    case.pass_noting(
        crate::report::Evidence::new(total, "answers bent"),
        format!(
            "{} bent: {}",
            crate::text::count(total, "answers"),
            listed.join(", ")
        ),
        || {
            format!(
                "not judged: no answer was bent ({}): no answer to the clients and paths they \
                 name came, or none such a fault bends",
                listed.join(", ")
            )
        },
    );
    Some(case)
}

/// What the client gets of a fault's reply, as the judge is told it.
fn given_answer(reply: &Reply) -> ServerAnswer<'_> {
    if reply.reset {
        ServerAnswer::Failed("the connection reset (--fault)".into())
    } else {
        ServerAnswer::Came {
            status: reply.status,
            headers: &reply.headers,
            body: &reply.body,
        }
    }
}

/// A fault's reply as the recording keeps it (beside the server's own answer).
fn given_context(reply: &Reply) -> Value {
    json!({
        "status": reply.status,
        "message": Message::masked(
            reply.headers.iter().map(|(n, v)| (n.as_str(), v.as_str())),
            &reply.body,
        ),
        "reset": reply.reset,
        "delay_ms": ms(reply.delay),
    })
}

/// A recorded fault's reply, as the live judge was told it.
fn recorded_given(context: &Value) -> Option<Reply> {
    let given = context.get("given")?;
    let message: Message = serde_json::from_value(given["message"].clone()).ok()?;
    Some(Reply {
        status: u16::try_from(given["status"].as_u64()?).ok()?,
        body: bytes::Bytes::from(message.body()),
        headers: message.headers,
        delay: crate::judge::time::duration(given["delay_ms"].as_f64().unwrap_or(0.0)),
        reset: given["reset"].as_bool().unwrap_or(false),
    })
}

/// The plan that writes a fault's reply.
fn fault_plan(reply: &Reply) -> Plan {
    let mut response = Response::new(reply.status, "application/json", reply.body.clone());
    response.headers = reply
        .headers
        .iter()
        .filter(|(n, _)| forward::passed_on(n))
        .map(|(n, v)| (n.clone().into(), v.clone().into()))
        .collect();
    let mut plan = Plan::immediate(response);
    plan.ttfb = reply.delay;
    if reply.reset {
        plan.fault = Fault::ResetBeforeHead;
    }
    plan
}

/// A proxy before a server, being served.
pub struct RunningServer {
    pub handler: std::sync::Arc<ServerProxy>,
    pub addr: std::net::SocketAddr,
    server: http1::Running,
    started_at: String,
    secrets: Vec<String>,
    protocol: &'static str,
    seed: u64,
    strict: bool,
    duration: Option<Duration>,
    record: Option<std::path::PathBuf>,
}

/// The settings a recording keeps, for `agent-tck judge` (never a key): the clients named by
/// `--agent-key` stand as its agents.
fn run_settings(settings: &ServerSettings) -> RunSettings {
    RunSettings {
        protocol: settings.protocol.to_string(),
        platform_timeout_ms: ms(settings.timeout),
        timeout_ms: ms(settings.timeout),
        max_body: forward::MAX_FORWARDED_BODY,
        max_field: 0,
        seed: settings.seed,
        max_turns: None,
        transport: Some(super::settings::HTTP.into()),
        agents: settings
            .keys
            .iter()
            .map(|(name, _)| RecordedAgent {
                name: name.clone(),
                faults: Vec::new(),
                requests: Vec::new(),
            })
            .collect(),
    }
}

/// Binds `settings.listen` and starts passing the clients' requests on to the server.
pub async fn start(settings: ServerSettings) -> Result<RunningServer, Error> {
    let started = Instant::now();
    let started_at = crate::report::now_rfc3339();
    let (listener, addr) = http1::bind(settings.listen).await?;
    let written = match &settings.record {
        Some(path) => {
            // A HAR names each exchange's URL: the proxy's, where the client sent it.
            let urls = Box::new(move |_: &Party| format!("http://{addr}"));
            let recorder = Recorder::create_with_urls(path, urls)
                .map_err(|e| Error::run(format!("--record: {e}")))?;
            Some(Mutex::new(Written {
                recorder,
                failed: None,
            }))
        }
        None => None,
    };
    let mut first = settings_context(&run_settings(&settings));
    first["faults"] = json!(settings
        .faults
        .iter()
        .map(|f| f.source.clone())
        .collect::<Vec<_>>());
    let bent = settings.faults.iter().map(|_| AtomicU64::new(0)).collect();
    let handler = std::sync::Arc::new(ServerProxy {
        judge: settings.proxied.judge(&settings.keys),
        faults: settings.faults,
        bent,
        seed: settings.seed,
        pool: Pool::new(settings.server.clone()),
        told: Mutex::new(0),
        written,
        started,
        stop: CancellationToken::new(),
        timeout: settings.timeout,
        seq: AtomicU64::new(0),
        requests: AtomicU64::new(0),
        answers: AtomicU64::new(0),
        stopped_answering: Mutex::new(None),
        log: settings.log,
    });
    handler.event(SETTINGS_EVENT, 0.0, first);
    let server = http1::Running::on(listener, handler.clone(), ServerLimits::default())?;
    Ok(RunningServer {
        handler,
        addr,
        server,
        started_at,
        secrets: settings.keys.iter().map(|(_, k)| k.clone()).collect(),
        protocol: settings.protocol,
        seed: settings.seed,
        strict: settings.strict,
        duration: settings.duration,
        record: settings.record,
    })
}

impl RunningServer {
    /// The URL the clients are to be given in place of the server's.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The real server's URL.
    pub fn server(&self) -> String {
        self.handler.pool.base().to_string()
    }

    /// Serves until `stop` completes or `--duration` passes; then stops and returns the report.
    pub async fn until(
        self,
        stop: impl std::future::Future<Output = String> + Send,
    ) -> Result<Report, Error> {
        let why = tokio::select! {
            why = stop => why,
            why = super::run::after(self.duration) => why,
        };
        self.end(why).await
    }

    /// Ends the run for `why`: what is still open is cut (the run's act, judged on neither
    /// side), and the verdicts are drawn.
    pub async fn end(self, why: String) -> Result<Report, Error> {
        let handler = &self.handler;
        handler.stop.cancel();
        self.server.stop().await;
        let elapsed = handler.started.elapsed();
        let requests = handler.requests.load(Ordering::Relaxed);
        let mut cases = drawn(requests, handler.judge.cases());
        cases.extend(faults_case(&handler.bent_counts()));
        handler.event("run-end", ms(elapsed), json!({"why": why}));
        handler.event("judged", ms(elapsed), json!({"served": "proxy"}));
        if let Some(written) = &handler.written {
            let mut w = written
                .lock()
                .map_err(|_| Error::run("--record: the recording's lock was poisoned"))?;
            match w.failed.take() {
                Some(e) => return Err(Error::run(format!("--record: {e}"))),
                None => w
                    .recorder
                    .finish()
                    .map_err(|e| Error::run(format!("--record: {e}")))?,
            }
            if let Some(path) = &self.record {
                crate::errln!("wrote {}", path.display());
            }
        }
        let target = format!(
            "the server at {} and its clients, through http://{}",
            handler.pool.base(),
            self.addr
        );
        let mut report = report_of(
            self.protocol,
            target,
            (self.seed, self.strict),
            cases,
            &Redactor::new(self.secrets.clone()),
        );
        report.started_at = self.started_at.clone();
        report.duration_ms = u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX);
        if let Some(stopped) = handler
            .stopped_answering
            .lock()
            .ok()
            .and_then(|s| s.clone())
        {
            report.notes.push(stopped);
        }
        Ok(report)
    }
}

/// The run's cases, each under its party: whether the clients came through the proxy, then the
/// judge's; with no request at all, every rule a skip that says so (not what would exercise it
/// once requests come).
fn drawn(requests: u64, judged: Vec<CaseResult>) -> Vec<CaseResult> {
    let mut cases = vec![clients_reached_case(requests)];
    cases.extend(judged.into_iter().map(|mut case| {
        if requests == 0 {
            case.skip(format!(
                "not judged: no request came through the proxy (see {CLIENTS_REACHED})"
            ));
        }
        case
    }));
    by_party(&mut cases);
    cases
}

/// Judges a recording of a run before a server again: each exchange's request and answer told
/// the judge in the order the live judge was told them, at the instants recorded.
pub fn judge(
    entries: &[Entry],
    proxied: &dyn ProxiedServer,
    settings: &RunSettings,
) -> Result<Vec<CaseResult>, ReplayError> {
    // The keys are not recorded: the clients named stand with none, and the recorded note says
    // how each bearer stood to its key.
    let keys: Vec<(String, String)> = settings
        .agents
        .iter()
        .map(|a| (a.name.clone(), String::new()))
        .collect();
    let judge = proxied.judge(&keys);
    let base = Instant::now();
    let exchanges: Vec<&Exchange> = entries
        .iter()
        .filter_map(|e| match e {
            Entry::Exchange(x) if x.to == Party::Server => Some(x),
            _ => None,
        })
        .collect();
    // (place, the exchange, whether it is its answer)
    let mut calls: Vec<(u64, &Exchange, bool)> = Vec::new();
    for x in &exchanges {
        let order = &x.context["order"];
        let wrong = || ReplayError::Exchange {
            seq: x.seq,
            what: "its order is missing or wrong".into(),
        };
        calls.push((order[0].as_u64().ok_or_else(wrong)?, x, false));
        if let Some(n) = order[1].as_u64() {
            calls.push((n, x, true));
        }
    }
    calls.sort_by_key(|(n, _, _)| *n);
    let mut clients: std::collections::HashMap<u64, String> = std::collections::HashMap::new();
    for (_, x, is_answer) in calls {
        let body = x.request.body();
        let asked = ClientRequest {
            method: x.method.as_deref().unwrap_or("POST"),
            target: &x.endpoint,
            headers: x
                .request
                .headers
                .iter()
                .map(|(n, v)| (n.as_str(), v.as_str()))
                .collect(),
            body: &body,
            at: instant(base, x.sent_ms),
            recorded: Some(&x.context["note"]),
        };
        if !is_answer {
            let (client, _) = judge.on_request(&asked);
            clients.insert(x.seq, client);
            continue;
        }
        let client = clients.get(&x.seq).cloned().unwrap_or_default();
        let at = instant(base, x.answered_ms.unwrap_or(x.sent_ms));
        match &x.answer {
            Answer::Delivered {
                status: Some(status),
                message,
            } => {
                let answered = message.body();
                let answer = ServerAnswer::Came {
                    status: *status,
                    headers: &message.headers,
                    body: &answered,
                };
                let given = recorded_given(&x.context);
                let given = given.as_ref().map(given_answer);
                judge.on_answer(&asked, &client, &answer, given.as_ref(), at);
            }
            Answer::Failed { what } => {
                let failed = ServerAnswer::Failed(what.clone());
                judge.on_answer(&asked, &client, &failed, None, at);
            }
            _ => {}
        }
    }
    let mut cases = drawn(exchanges.len() as u64, judge.cases());
    let faults: Vec<String> = entries
        .iter()
        .find_map(|e| match e {
            Entry::Event(ev) if ev.event == SETTINGS_EVENT => {
                serde_json::from_value(ev.context["faults"].clone()).ok()
            }
            _ => None,
        })
        .unwrap_or_default();
    let bent: Vec<(String, u64)> = faults
        .into_iter()
        .map(|f| {
            let n = exchanges
                .iter()
                .filter(|x| x.context["fault"].as_str() == Some(f.as_str()))
                .count() as u64;
            (f, n)
        })
        .collect();
    cases.extend(faults_case(&bent));
    Ok(cases)
}
