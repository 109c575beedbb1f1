//! `agent-tck proxy --stdio "CMD"`: the proxy as the harness's agent command. The harness starts
//! it as it would start its agent; it starts the real agent (CMD, split and run directly as every
//! command of the kit's is, in a process group of its own) and relays bytes both ways, unchanged:
//! our stdin to the agent's stdin, the agent's stdout to our stdout (nothing else is written
//! there), the agent's stderr straight to ours. One process sees one conversation (a harness
//! starts its agent command once per task, or once per turn).
//!
//! On the way, each line is judged as the HTTP proxy judges a request and its answer: a line of
//! the harness's (ended by a newline, or by the end of input: the per-turn framing) is a request,
//! told to the protocol's platform observer once the agent's answer came; the agent's next line
//! is its answer, judged by the traffic suite (`TrafficJudge`), bent by the `--fault`s first
//! when some are given (the agent judged on what it sent, the harness on what it received).
//! With request faults (`--fault stdio=request:…`) the harness's lines are bent on their way to
//! the agent ([`Bender`]): the harness is judged on the line it sent, the agent's answer by the
//! cases of bent requests. Lines
//! are paired in order, as a harness that reads a line per request pairs them: a line the agent
//! writes before any request is the answer to the next one.
//!
//! How it ends: the harness's end of input closes the agent's stdin; the agent's exit and end of
//! output end the run, and the proxy exits with the agent's status (the harness sees the agent's
//! behaviour unchanged; the verdicts are in the reports). An answer not come by the deadline
//! (the larger of `--timeout` and `--platform-timeout`) is the agent's hang: its process group is
//! ended (TERM, then KILL) and the agent rules say so. A signal to the proxy (SIGTERM, SIGINT:
//! the harness gave up, or was ended) ends the agent's group too, and the reports say what was
//! still awaited. The engine names no protocol: the protocol's line endpoint is its own.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::process::ExitStatus;
use std::time::{Duration, Instant};

use bytes::Bytes;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;

use super::bend::{Bent, RequestFault, Requests, What};
use super::forward::Given;
use super::handler::left_unanswered;
use super::report::{by_party, reached_case, report_of};
use super::settings::{settings_context, RecordedAgent, RunSettings, SETTINGS_EVENT};
use crate::error::Error;
use crate::judge::record::Recorder;
use crate::judge::Message;
use crate::mock::agent::{MockAgent, Profile};
use crate::mock::applied::Applied;
use crate::mock::behavior::Item;
use crate::mock::body::Body;
use crate::mock::decision::Decision;
use crate::mock::http1::{Delivered, Fault, Outcome};
use crate::mock::journal::AuthSeen;
use crate::mock::protocol::{
    AgentProtocol, Answered, Endpoint, PlatformExpect, PlatformObserver, RunEnd, Seen, Served,
};
use crate::mock::recording::{Recorded, Recording};
use crate::probe::outcome::Sent;
use crate::probe::traffic::{LiveAnswer, TrafficJudge, TrafficLimits};
use crate::probe::Suite;
use crate::report::Report;
use crate::text::Redactor;
use crate::transport::http;
use crate::transport::stdio::{status_text, Relayed, StdioConfig, StdioMode, DEFAULT_KILL_GRACE};

/// The agent's name in the reports (`stdio/protocol.first-turn`, the suite `agent stdio`).
pub const AGENT: &str = "stdio";

/// Bytes of a line kept for judging; a longer one passes through whole and is judged as an
/// answer over `--max-body` (its first bytes kept).
const READ_CHUNK: usize = 64 * 1024;

/// How long after the agent's exit its stdout may stay open (something it forked holds it).
const STRAY_GRACE: Duration = Duration::from_millis(200);

/// Everything a stdio proxy run needs, checked.
pub struct StdioSettings {
    pub protocol: &'static dyn AgentProtocol,
    pub suite: Suite,
    /// The agent's command as given (split already: `argv`); never recorded nor reported whole
    /// (it may hold a token): the reports name its program only.
    pub argv: Vec<String>,
    pub faults: Vec<Item>,
    /// `--fault stdio=request:…`: the harness's request lines bent on their way to the agent.
    pub requests: Vec<RequestFault>,
    pub expect: PlatformExpect,
    pub limits: TrafficLimits,
    /// This process's own recording file (see `--record` under `--stdio`).
    pub record: Option<PathBuf>,
    pub seed: u64,
    pub strict: bool,
    /// A line per exchange, on stderr.
    pub log: bool,
    /// Masked in every report (`--agent-key stdio=KEY`).
    pub secrets: Vec<String>,
}

/// How a stdio proxy run ended: its report, and the agent's exit status (None: it never
/// started, or could not be reaped).
pub struct StdioEnd {
    pub report: Report,
    pub status: Option<ExitStatus>,
}

/// What the reader tasks hand the relay.
enum Input {
    Harness(Bytes),
    /// A request line of the harness's, whole, as it came (with request faults, the task that
    /// writes the agent's stdin splits the lines itself: see [`Bender`]), and how it was bent.
    HarnessLine {
        line: Vec<u8>,
        newline: bool,
        bent: Option<Bent>,
        at: Instant,
    },
    HarnessEnd,
    Agent(Bytes),
    AgentEnd,
}

/// A request of the harness's, not answered yet.
struct Pending {
    seq: u64,
    received: Instant,
    line: Bytes,
    /// How the proxy bent it on its way to the agent.
    bent: Option<Bent>,
}

/// The harness's request lines bent on their way to the agent (`--fault stdio=request:…`), by
/// the task that writes the agent's stdin: it then passes lines on whole, not bytes as they
/// come. A line over `--max-body` passes through as it comes, unbent.
struct Bender {
    requests: Requests,
    protocol: &'static dyn AgentProtocol,
    endpoint: &'static Endpoint,
}

impl Bender {
    fn bend(&self, line: &[u8]) -> Option<Bent> {
        if line.iter().all(u8::is_ascii_whitespace) {
            return None;
        }
        self.requests
            .bend(self.protocol, self.endpoint, AGENT, line)
    }
}

/// An answer line as it came (its first `max_body` bytes when longer).
struct Line {
    bytes: Bytes,
    /// Longer than `max_body`: it was passed through as it came, not held.
    over: bool,
    /// It ended with a newline (the last line of the output may not: per-turn framing).
    newline: bool,
    at: Instant,
}

/// Splits a stream into lines, keeping at most `cap` bytes of one.
struct Splitter {
    buf: Vec<u8>,
    cap: usize,
    over: bool,
}

/// What [`Splitter::push`] gives: whole lines (their newline taken off), and bytes of an
/// over-long line to pass on at once (an agent's answer is relayed as it comes past the cap).
enum Piece {
    Line {
        bytes: Vec<u8>,
        over: bool,
        newline: bool,
    },
    Through(Vec<u8>),
}

impl Splitter {
    fn new(cap: usize) -> Splitter {
        Splitter {
            buf: Vec::new(),
            cap,
            over: false,
        }
    }

    fn push(&mut self, mut chunk: &[u8], out: &mut Vec<Piece>) {
        while !chunk.is_empty() {
            match chunk.iter().position(|&b| b == b'\n') {
                Some(i) => {
                    self.take(&chunk[..i], out);
                    if self.over {
                        out.push(Piece::Through(b"\n".to_vec()));
                    }
                    out.push(Piece::Line {
                        bytes: std::mem::take(&mut self.buf),
                        over: std::mem::replace(&mut self.over, false),
                        newline: true,
                    });
                    chunk = &chunk[i + 1..];
                }
                None => {
                    self.take(chunk, out);
                    chunk = &[];
                }
            }
        }
    }

    /// Part of a line: kept, or (past the cap) passed on.
    fn take(&mut self, part: &[u8], out: &mut Vec<Piece>) {
        if self.over {
            out.push(Piece::Through(part.to_vec()));
            return;
        }
        if self.buf.len() + part.len() <= self.cap {
            self.buf.extend_from_slice(part);
            return;
        }
        // Past the cap: what is held goes out, and the rest as it comes.
        self.over = true;
        let room = self.cap - self.buf.len();
        self.buf.extend_from_slice(&part[..room]);
        out.push(Piece::Through(self.buf.clone()));
        out.push(Piece::Through(part[room..].to_vec()));
    }

    /// The end of the stream: the last line, when it has no newline.
    fn finish(&mut self) -> Option<Piece> {
        (!self.buf.is_empty() || self.over).then(|| Piece::Line {
            bytes: std::mem::take(&mut self.buf),
            over: std::mem::replace(&mut self.over, false),
            newline: false,
        })
    }
}

/// An answer on its way to the harness: bytes due at a moment (None: never, a hang fault).
struct Outgoing {
    bytes: Vec<u8>,
    due: Option<tokio::time::Instant>,
    /// The exchange it ends, told to the observer once written.
    told: Option<Told>,
}

/// What `on_answer` needs of an exchange.
struct Told {
    seq: u64,
    received: Instant,
}

/// The relay and its judges.
struct Relay {
    protocol: &'static dyn AgentProtocol,
    endpoint: &'static str,
    schema: Option<&'static str>,
    observer: Box<dyn PlatformObserver>,
    traffic: TrafficJudge,
    faults: MockAgent,
    applied: Applied,
    recorded: Option<Recorded>,
    started: Instant,
    deadline: Duration,
    log: bool,
    /// `--max-body`: the longest line held whole.
    max_body: usize,
    seq: u64,
    requests: u64,
    pending: VecDeque<Pending>,
    /// Answer lines that came before their request.
    early: VecDeque<Line>,
    outbox: VecDeque<Outgoing>,
    /// Answers held by a hang fault: never written, told at the end.
    held: Vec<Told>,
    /// `--fault stdio=request:…`, shared with the task that writes the agent's stdin.
    bender: Option<std::sync::Arc<Bender>>,
}

impl Relay {
    /// A request line of the harness's (`bent`: as the proxy passed it on).
    fn request(&mut self, line: Vec<u8>, by_newline: bool, at: Instant, bent: Option<Bent>) {
        if line.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        let body = Body::checked(&line, self.schema);
        if !by_newline && body.admitted().is_none() && body.value().is_none() {
            // The harness's input ended in the middle of a request (it died writing it): the
            // harness's fault, and nothing the agent owes an answer to.
            let what = format!(
                "{} without a newline, not a whole JSON request, then the end of input: {}",
                crate::text::count(line.len() as u64, "bytes"),
                crate::text::excerpt(&line, 80)
            );
            self.observer.on_incomplete(AGENT, self.endpoint, &what);
            return;
        }
        self.seq += 1;
        let pending = Pending {
            seq: self.seq,
            received: at,
            line: Bytes::from(line),
            bent,
        };
        match self.early.pop_front() {
            Some(answer) => self.answer(pending, answer),
            None => self.pending.push_back(pending),
        }
    }

    /// Bytes of the harness's as they came (no request faults): each whole line a request.
    fn harness_chunk(&mut self, chunk: &[u8], requests: &mut Splitter, pieces: &mut Vec<Piece>) {
        let at = Instant::now();
        requests.push(chunk, pieces);
        for piece in pieces.drain(..) {
            if let Piece::Line { bytes, .. } = piece {
                self.request(bytes, true, at, None);
            }
        }
    }

    /// An answer line of the agent's: the oldest request's.
    fn agent_line(&mut self, line: Line) {
        match self.pending.pop_front() {
            Some(pending) => self.answer(pending, line),
            None => self.early.push_back(line),
        }
    }

    /// The agent answered `pending` with `line`: judged, bent by the faults, put on its way.
    fn answer(&mut self, pending: Pending, line: Line) {
        let waited = line.at.saturating_duration_since(pending.received);
        let response = http::Response {
            status: 200,
            headers: vec![("content-type".into(), "application/json".into())],
            body: line.bytes.clone(),
            body_exceeded: line.over,
            elapsed: waited,
        };
        let body = Body::checked(&pending.line, self.schema).on_channel(0);
        // An over-long line went through as it came: no fault bends it.
        let (bytes, due, decision) = if line.over {
            let decision = Decision {
                status: 200,
                ttfb_ms: ms_u64(waited),
                unusable: Some("an answer line over --max-body".into()),
                ..Decision::default()
            };
            (Vec::new(), None, decision)
        } else {
            let given = Given::of(&response);
            let (plan, mut decision) = self.faults.shape(self.endpoint, &body, &given);
            decision.ttfb_ms += ms_u64(waited);
            if !given.is_json() {
                decision
                    .unusable
                    .get_or_insert_with(|| "answered a line that is not JSON".into());
            }
            let due = match plan.fault {
                Fault::Hang | Fault::Blackhole => None,
                _ => Some(tokio::time::Instant::now() + plan.ttfb + plan.body_delay),
            };
            let mut bytes = plan.response.body.to_vec();
            // The line's end as the agent wrote it: a per-turn answer may have none.
            if line.newline {
                bytes.push(b'\n');
            }
            (bytes, due, decision)
        };
        self.applied.record(0, &decision.applied);
        self.judge_answer(&pending, &body, Ok(response), waited);
        let told = self.tell_request(&pending, &body, &decision, &bytes);
        self.record_answer(
            pending.seq,
            &pending,
            json!({
                "status": 200,
                "message": Message::masked([("content-type", "application/json")], &line.bytes),
                "body_exceeded": line.over,
                "elapsed_ms": crate::judge::time::ms(waited),
            }),
        );
        if line.over {
            // Written already; over as it is.
            if let Some(told) = told {
                self.tell_answer(&told, Outcome::Complete, line.bytes.len() as u64, None);
            }
            return;
        }
        match due {
            Some(due) => self.outbox.push_back(Outgoing {
                bytes,
                due: Some(due),
                told,
            }),
            None => self.held.extend(told),
        }
    }

    /// The request told to the platform observer, with the answer planned for it (None: the
    /// request is not the protocol's: not JSON).
    fn tell_request(
        &mut self,
        pending: &Pending,
        body: &Body<'_>,
        decision: &Decision,
        answer: &[u8],
    ) -> Option<Told> {
        let findings = body.findings("the request is not JSON")?;
        self.requests += 1;
        let id = self
            .protocol
            .request_id_field()
            .and_then(|field| body.str_member(field));
        self.observer.on_request(&Seen {
            seq: pending.seq,
            agent: AGENT,
            expects_key: false,
            endpoint: self.endpoint,
            auth: AuthSeen::None,
            key_print: 0,
            task: id.as_deref().unwrap_or(""),
            body,
            schema_findings: &findings,
            decision,
            answer,
            at: pending.received,
        });
        Some(Told {
            seq: pending.seq,
            received: pending.received,
        })
    }

    fn tell_answer(&self, told: &Told, outcome: Outcome, bytes: u64, ended: Option<&str>) {
        let total = told.received.elapsed();
        let end = ended.map(|what| crate::mock::peer_end::PeerEnd::Ended {
            what: what.to_string(),
        });
        self.observer.on_answer(&Answered {
            seq: told.seq,
            agent: AGENT,
            endpoint: self.endpoint,
            task: "",
            received: told.received,
            delivered: &Delivered {
                outcome,
                bytes,
                ttfb: (bytes > 0).then_some(total),
                total,
            },
            ended: end.as_ref(),
            at: Instant::now(),
        });
        // The harness may kill its agent command at any moment: each exchange is on disk as it
        // ends.
        if let Some(recorded) = &self.recorded {
            recorded.flush();
        }
        if self.log {
            crate::errln!(
                "agent-tck proxy: {AGENT} /{} {} ms {outcome:?}",
                self.endpoint,
                total.as_millis()
            );
        }
    }

    /// The agent's answer judged by the agent rules; the answer to a line the proxy bent by the
    /// cases of bent requests only, and one it held on the time the agent took once it had it.
    fn judge_answer(
        &self,
        pending: &Pending,
        body: &Body<'_>,
        result: Result<http::Response, http::Error>,
        waited: Duration,
    ) {
        let path = format!("/{}", self.endpoint);
        let failed = result.is_err();
        let answer = |request: Sent, elapsed: Duration| LiveAnswer {
            answer_json: None,
            agent: AGENT,
            method: "POST",
            path: &path,
            task: None,
            request,
            result,
            at: pending.received.saturating_duration_since(self.started),
            elapsed,
        };
        match pending.bent.as_ref().map(|b| (b, &b.what)) {
            Some((bent, What::Body(sent, _))) => {
                let judged = self.traffic.judge_bent(
                    answer(Sent::Bytes(sent.clone()), waited),
                    bent.name,
                    RequestFault::refusal_holds(bent.name),
                );
                if let (false, Some(bender)) = (judged, &self.bender) {
                    bender.requests.unjudged(&bent.source);
                }
            }
            Some((_, What::Hold(held))) => {
                // The agent had the line for the time after the hold: an answer that did not
                // come is its failure only once that reached --timeout (the proxy's hold may
                // have used up the harness's wait).
                let own = waited.saturating_sub(*held);
                if failed && own < self.traffic.timeout() {
                    return;
                }
                self.traffic
                    .judge(answer(body.value().cloned().into(), own))
            }
            _ => self
                .traffic
                .judge(answer(body.value().cloned().into(), waited)),
        }
    }

    fn record_answer(&self, seq: u64, pending: &Pending, agent: serde_json::Value) {
        if let Some(recorded) = &self.recorded {
            recorded.attach(seq, |exchange| {
                exchange.method = Some("POST".into());
                exchange.request = Message::masked([], &pending.line);
                exchange.context["agent_answer"] = agent;
                if let Some(bent) = &pending.bent {
                    exchange.context["forwarded"] = super::bend::recorded(bent, std::iter::empty());
                }
            });
        }
    }

    /// Requests still unanswered when the relay ends: `why` says what ended it. `hung`: the
    /// agent's deadline passed (its failure); else the run ended or the harness left first (the
    /// agent judged late only if it was already past `--timeout`).
    fn unanswered(&mut self, why: &str, hung: bool) {
        let now = Instant::now();
        for pending in std::mem::take(&mut self.pending) {
            let waited = now.saturating_duration_since(pending.received);
            let body = Body::checked(&pending.line, self.schema).on_channel(0);
            let deadline = self.deadline;
            let hang = || http::Error::Timeout {
                deadline,
                phase: format!(
                    "no answer line in {:.1} s: the agent hung, and {why}",
                    waited.as_secs_f64()
                ),
            };
            let result = if hung {
                Some(Err(hang()))
            } else {
                left_unanswered(waited, self.traffic.timeout()).map(Err)
            };
            let decision = Decision {
                status: 0,
                ttfb_ms: ms_u64(waited),
                unusable: Some(format!(
                    "{AGENT} had not answered when {why}, after {} ms",
                    waited.as_millis()
                )),
                ..Decision::default()
            };
            if let Some(result) = result {
                self.judge_answer(&pending, &body, result, waited);
            }
            // As the HTTP proxy records an answer the platform left before (`left_ms`): judged
            // again as it was live, late only past --timeout.
            let value = if hung {
                json!({
                    "error": hang(),
                    "elapsed_ms": crate::judge::time::ms(waited),
                })
            } else {
                json!({ "left_ms": crate::judge::time::ms(waited) })
            };
            let outcome = if hung {
                Outcome::Shutdown
            } else {
                Outcome::PeerGone
            };
            self.unanswered_told(&pending, &body, &decision, value, outcome);
        }
        for told in std::mem::take(&mut self.held) {
            self.tell_answer(&told, Outcome::Hung, 0, None);
        }
        for out in std::mem::take(&mut self.outbox) {
            if let Some(told) = out.told {
                self.tell_answer(&told, Outcome::Shutdown, 0, None);
            }
        }
    }

    /// A request that got no answer told to the observer, the recording given what the agent
    /// did (before the exchange is written: telling its answer writes it).
    fn unanswered_told(
        &mut self,
        pending: &Pending,
        body: &Body<'_>,
        decision: &Decision,
        agent: serde_json::Value,
        outcome: Outcome,
    ) {
        let told = self.tell_request(pending, body, decision, b"");
        self.record_answer(pending.seq, pending, agent);
        if let Some(told) = told {
            self.tell_answer(&told, outcome, 0, None);
        }
    }

    /// When the oldest request's deadline passes.
    fn next_deadline(&self) -> Option<tokio::time::Instant> {
        self.pending
            .front()
            .map(|p| tokio::time::Instant::from_std(p.received + self.deadline))
    }
}

fn ms_u64(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// The settings a recording keeps (never the command: it may hold a token).
fn run_settings(settings: &StdioSettings) -> RunSettings {
    RunSettings {
        protocol: settings.protocol.name().to_string(),
        platform_timeout_ms: crate::judge::time::ms(settings.expect.timeout),
        timeout_ms: crate::judge::time::ms(settings.limits.timeout),
        max_body: settings.limits.max_body,
        max_field: settings.limits.max_field,
        seed: settings.seed,
        max_turns: settings.expect.max_turns,
        transport: Some(super::settings::STDIO.into()),
        agents: vec![RecordedAgent {
            name: AGENT.to_string(),
            faults: settings.faults.iter().map(|i| i.source.clone()).collect(),
            requests: settings.requests.iter().map(|f| f.source.clone()).collect(),
        }],
    }
}

/// Runs the agent and relays until it ended (or `stop` came); the report and its exit status.
pub async fn run(
    settings: StdioSettings,
    stop: impl std::future::Future<Output = String> + Send,
) -> Result<StdioEnd, Error> {
    let started = Instant::now();
    let started_at = crate::report::now_rfc3339();
    let endpoint = settings.protocol.line_endpoint().ok_or_else(|| {
        Error::usage(format!(
            "--stdio: {} agents are not served over stdio",
            settings.protocol.name()
        ))
    })?;
    let schema = settings
        .protocol
        .endpoint(endpoint)
        .and_then(|e| e.request_schema);
    let observer = crate::mock::observe::observer_for(settings.protocol, &settings.expect);
    let (observer, recorded): (Box<dyn PlatformObserver>, _) = match &settings.record {
        Some(path) => {
            let recorder =
                Recorder::create(path).map_err(|e| Error::run(format!("--record: {e}")))?;
            let (recording, recorded) = Recording::wrap_recorder(observer, recorder, started);
            let mut context = settings_context(&run_settings(&settings));
            // Where this conversation stands among the others of a recording directory.
            context["started_unix_ms"] = json!(unix_ms());
            recorded.event(SETTINGS_EVENT, 0.0, context);
            recorded.flush();
            (
                Box::new(recording) as Box<dyn PlatformObserver>,
                Some(recorded),
            )
        }
        None => (observer, None),
    };
    let traffic = TrafficJudge::new(settings.suite, settings.limits);
    traffic.expect(AGENT);
    let program = settings.argv.first().cloned().unwrap_or_default();
    let mut relay = Relay {
        protocol: settings.protocol,
        endpoint,
        schema,
        observer,
        traffic,
        faults: MockAgent::new(
            settings.protocol,
            Profile::served(AGENT, None),
            settings.faults,
            settings.seed,
        ),
        applied: Applied::default(),
        recorded,
        started,
        deadline: settings.limits.timeout.max(settings.expect.timeout),
        log: settings.log,
        max_body: settings.limits.max_body,
        seq: 0,
        requests: 0,
        pending: VecDeque::new(),
        early: VecDeque::new(),
        outbox: VecDeque::new(),
        held: Vec::new(),
        bender: None,
    };
    if !settings.requests.is_empty() {
        let Some(at) = settings.protocol.endpoint(endpoint) else {
            return Err(Error::usage(format!(
                "--fault {AGENT}=request:…: {} has no line endpoint to bend",
                settings.protocol.name()
            )));
        };
        relay.bender = Some(std::sync::Arc::new(Bender {
            requests: Requests::new(settings.requests, AGENT, settings.seed),
            protocol: settings.protocol,
            endpoint: at,
        }));
    }
    let config = StdioConfig::new(String::new(), StdioMode::Persistent);
    let (status, why) = match Relayed::spawn(&settings.argv, &config) {
        Ok((agent, stdin, stdout)) => relay.pump(agent, stdin, stdout, stop).await,
        Err(e) => {
            crate::errln!("agent-tck proxy: {e}");
            (None, format!("the agent could not start: {e}"))
        }
    };
    let at = Instant::now();
    relay.observer.on_run_end(&RunEnd {
        at,
        after: at - started,
        why: why.clone(),
        abandoned: false,
    });
    let mut cases = vec![reached_case(relay.requests)];
    cases.extend(relay.observer.cases_at(Served::Proxy, Instant::now()));
    cases.extend(relay.traffic.cases());
    cases.extend(relay.applied.case(std::iter::once(&relay.faults)));
    if let Some(bender) = &relay.bender {
        cases.extend(super::bend::bent_case([(AGENT, &bender.requests)]));
    }
    by_party(&mut cases);
    if let Some(recorded) = relay.recorded.take() {
        recorded.close().map_err(|e| Error::run(e.to_string()))?;
        if let Some(path) = &settings.record {
            crate::errln!("agent-tck proxy: wrote {}", path.display());
        }
    }
    let shown = std::path::Path::new(&program)
        .file_name()
        .map_or(program.clone(), |n| n.to_string_lossy().into_owned());
    let mut report = report_of(
        settings.protocol.name(),
        format!("the harness and the agent `{shown}` on its stdin and stdout"),
        (settings.seed, settings.strict),
        cases,
        &Redactor::new(settings.secrets.clone()),
    );
    report.started_at = started_at;
    report.duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    report.notes.push(format!("the relay ended: {why}"));
    Ok(StdioEnd { report, status })
}

/// This process's conversation as a file name: its start (UTC, to the millisecond) and pid, so
/// that a directory lists conversations in the order they started.
pub fn conversation_name() -> String {
    let now = crate::report::now_rfc3339();
    let stamp: String = now
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '.')
        .collect();
    format!("{stamp}-{}", std::process::id())
}

fn unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// Reads `from` into `to` until its end, each chunk as it comes.
async fn read_into<R: tokio::io::AsyncRead + Unpin>(
    mut from: R,
    to: mpsc::UnboundedSender<Input>,
    chunk: fn(Bytes) -> Input,
    end: Input,
) {
    let mut buf = vec![0u8; READ_CHUNK];
    loop {
        match from.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if to.send(chunk(Bytes::copy_from_slice(&buf[..n]))).is_err() {
                    return;
                }
            }
        }
    }
    let _ = to.send(end);
}

impl Relay {
    /// The relay proper: until the agent ended and its output is all passed on, the deadline
    /// killed it, or `stop` came. The agent's exit status, and why the relay ended.
    async fn pump(
        &mut self,
        mut agent: Relayed,
        stdin: tokio::process::ChildStdin,
        stdout: tokio::process::ChildStdout,
        stop: impl std::future::Future<Output = String> + Send,
    ) -> (Option<ExitStatus>, String) {
        let (tx, mut rx) = mpsc::unbounded_channel();
        // The harness's bytes go to the agent as they come, by a task of their own: an agent
        // that does not read its stdin blocks that task, never the relay of its output. The
        // relay is told each chunk before it is written (its request's time is when it came).
        let to_agent = {
            let tx = tx.clone();
            let bender = self.bender.clone();
            let max_body = self.max_body;
            tokio::spawn(async move {
                let mut to = ToAgent {
                    stdin: Some(stdin),
                    tx,
                };
                let mut ours = tokio::io::stdin();
                let mut buf = vec![0u8; READ_CHUNK];
                let mut lines = Splitter::new(max_body);
                let mut pieces = Vec::new();
                loop {
                    match ours.read(&mut buf).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => {
                            let chunk = &buf[..n];
                            let Some(bender) = &bender else {
                                if !to.relay(chunk).await {
                                    return;
                                }
                                continue;
                            };
                            lines.push(chunk, &mut pieces);
                            for piece in pieces.drain(..) {
                                if !to.bent(piece, bender).await {
                                    return;
                                }
                            }
                        }
                    }
                }
                if let (Some(bender), Some(last)) = (&bender, lines.finish()) {
                    if !to.bent(last, bender).await {
                        return;
                    }
                }
                // Our end of input is the agent's.
                drop(to.stdin.take());
                let _ = to.tx.send(Input::HarnessEnd);
            })
        };
        let from_agent = tokio::spawn(read_into(stdout, tx, Input::Agent, Input::AgentEnd));
        let mut out = tokio::io::stdout();
        let mut requests = Splitter::new(self.max_body);
        let mut answers = Splitter::new(self.max_body);
        let mut pieces = Vec::new();
        let (mut agent_open, mut inputs_over) = (true, false);
        let mut status: Option<ExitStatus> = None;
        let mut exited_at: Option<tokio::time::Instant> = None;
        let mut input_ended: Option<tokio::time::Instant> = None;
        tokio::pin!(stop);
        let far = || tokio::time::Instant::now() + Duration::from_secs(86_400);
        let why = loop {
            if !agent_open && status.is_some() && self.outbox.is_empty() {
                break format!(
                    "the agent exited ({}) and its output was all passed on",
                    status.map_or_else(String::new, status_text)
                );
            }
            let deadline = self
                .next_deadline()
                .or(input_ended.map(|at| at + self.deadline))
                .unwrap_or_else(far);
            let due = match self.outbox.front() {
                Some(Outgoing { due: Some(at), .. }) => *at,
                _ => far(),
            };
            let stray = exited_at.map_or_else(far, |at| at + STRAY_GRACE);
            tokio::select! {
                biased;
                why = &mut stop => {
                    // What the harness sent before it gave up counts, though the relay had not
                    // split it into requests yet (the agent is given it right after).
                    while let Ok(input) = rx.try_recv() {
                        match input {
                            Input::Harness(chunk) => {
                                self.harness_chunk(&chunk, &mut requests, &mut pieces);
                            }
                            Input::HarnessLine {
                                line,
                                newline,
                                bent,
                                at,
                            } => self.request(line, newline, at, bent),
                            _ => {}
                        }
                    }
                    self.unanswered(&format!("{why} ended the proxy"), false);
                    break format!("{why} ended the proxy (the harness gave up, or was ended)");
                }
                input = rx.recv(), if !inputs_over => match input {
                    Some(Input::Harness(chunk)) => {
                        self.harness_chunk(&chunk, &mut requests, &mut pieces);
                    }
                    Some(Input::HarnessLine { line, newline, bent, at }) => {
                        self.request(line, newline, at, bent);
                    }
                    Some(Input::HarnessEnd) => {
                        input_ended = Some(tokio::time::Instant::now());
                        if let Some(Piece::Line { bytes, .. }) = requests.finish() {
                            self.request(bytes, false, Instant::now(), None);
                        }
                    }
                    Some(Input::Agent(chunk)) => {
                        let at = Instant::now();
                        answers.push(&chunk, &mut pieces);
                        if let Err(why) = self.pass_on(&mut out, &mut pieces, at).await {
                            self.unanswered(&why, false);
                            break why;
                        }
                    }
                    Some(Input::AgentEnd) => {
                        agent_open = false;
                        let at = Instant::now();
                        pieces.extend(answers.finish());
                        if let Err(why) = self.pass_on(&mut out, &mut pieces, at).await {
                            self.unanswered(&why, false);
                            break why;
                        }
                        if !self.pending.is_empty() {
                            // Nothing more will come: what is awaited never will.
                            let how = match status {
                                Some(s) => format!("the agent exited ({})", status_text(s)),
                                None => "the agent closed its stdout".to_string(),
                            };
                            self.closed_unanswered(&how);
                        }
                    }
                    // Both readers are done (each said so before it ended).
                    None => inputs_over = true,
                },
                exited = agent.child.wait(), if status.is_none() => {
                    status = exited.ok();
                    exited_at = Some(tokio::time::Instant::now());
                }
                () = tokio::time::sleep_until(stray), if agent_open && exited_at.is_some() => {
                    // Something the agent forked holds its stdout: the agent is over.
                    let cleanup = agent.end(DEFAULT_KILL_GRACE).await;
                    self.closed_unanswered("the agent exited; something it started held its stdout");
                    break format!(
                        "the agent exited ({}) but something it started held its stdout: its group was ended with {}",
                        status.map_or_else(String::new, status_text),
                        cleanup.signalled.join(" then ")
                    );
                }
                () = tokio::time::sleep_until(deadline) => {
                    let waiting = !self.pending.is_empty();
                    let cleanup = agent.end(DEFAULT_KILL_GRACE).await;
                    let signals = if cleanup.signalled.is_empty() {
                        "it had ended".to_string()
                    } else {
                        format!("ended with {}", cleanup.signalled.join(" then "))
                    };
                    let what = format!(
                        "the proxy ended the agent's process group at the deadline ({}: --timeout or --platform-timeout, the larger; {signals})",
                        humantime::format_duration(self.deadline)
                    );
                    if waiting {
                        self.unanswered(&what, true);
                    }
                    status = status.or(agent.child.try_wait().ok().flatten());
                    // What it wrote before it was ended still goes out.
                    pieces.extend(answers.finish());
                    let _ = self.pass_on(&mut out, &mut pieces, Instant::now()).await;
                    break if waiting {
                        format!("no answer came within the deadline: {what}")
                    } else {
                        format!("the agent did not exit within the deadline after the end of its input: {what}")
                    };
                }
                () = tokio::time::sleep_until(due) => {
                    if let Err(why) = self.write_due(&mut out).await {
                        self.unanswered(&why, false);
                        break why;
                    }
                }
            }
        };
        // Whatever way it ended, nothing of the agent's outlives the relay.
        let cleanup = agent.end(DEFAULT_KILL_GRACE).await;
        status = status.or(agent.child.try_wait().ok().flatten());
        if !cleanup.signalled.is_empty() {
            crate::errln!(
                "agent-tck proxy: the agent's process group was ended with {}",
                cleanup.signalled.join(" then ")
            );
        }
        to_agent.abort();
        from_agent.abort();
        let _ = out.flush().await;
        (status, why)
    }

    /// Answer lines (and over-long bytes) on their way out, then what is due written.
    async fn pass_on(
        &mut self,
        out: &mut tokio::io::Stdout,
        pieces: &mut Vec<Piece>,
        at: Instant,
    ) -> Result<(), String> {
        for piece in pieces.drain(..) {
            match piece {
                Piece::Through(bytes) => {
                    // An over-long line: after what is queued before it, at once.
                    self.flush_outbox(out, true).await?;
                    write_out(out, &bytes).await?;
                }
                Piece::Line {
                    bytes,
                    over,
                    newline,
                } => self.agent_line(Line {
                    bytes: Bytes::from(bytes),
                    over,
                    newline,
                    at,
                }),
            }
        }
        self.write_due(out).await
    }

    /// Writes the answers that are due, in order (one not due yet holds back the ones after).
    async fn write_due(&mut self, out: &mut tokio::io::Stdout) -> Result<(), String> {
        self.flush_outbox(out, false).await
    }

    async fn flush_outbox(&mut self, out: &mut tokio::io::Stdout, all: bool) -> Result<(), String> {
        let now = tokio::time::Instant::now();
        while let Some(head) = self.outbox.front() {
            if !all && head.due.is_none_or(|at| at > now) {
                break;
            }
            let Some(next) = self.outbox.pop_front() else {
                break;
            };
            if let Some(at) = next.due {
                tokio::time::sleep_until(at).await;
            }
            let written = write_out(out, &next.bytes).await;
            if let Some(told) = &next.told {
                let outcome = if written.is_ok() {
                    Outcome::Complete
                } else {
                    Outcome::PeerGone
                };
                self.tell_answer(told, outcome, next.bytes.len() as u64, None);
            }
            written?;
        }
        Ok(())
    }

    /// The agent's output ended with requests unanswered: each is an answer that never came.
    fn closed_unanswered(&mut self, how: &str) {
        let now = Instant::now();
        for pending in std::mem::take(&mut self.pending) {
            let waited = now.saturating_duration_since(pending.received);
            let body = Body::checked(&pending.line, self.schema).on_channel(0);
            let error = http::Error::Other(format!(
                "no answer line: {how}, {} ms after the request",
                waited.as_millis()
            ));
            self.judge_answer(&pending, &body, Err(error.clone()), waited);
            let decision = Decision {
                status: 0,
                ttfb_ms: ms_u64(waited),
                unusable: Some(format!("no answer: {error}")),
                ..Decision::default()
            };
            let value = json!({"error": error, "elapsed_ms": crate::judge::time::ms(waited)});
            self.unanswered_told(&pending, &body, &decision, value, Outcome::Complete);
        }
    }
}

/// The task's side of the agent's stdin: the harness's bytes go to the agent, the relay is told
/// of them first (a request's time is when it came). An agent that closed its stdin: the rest
/// is read and judged, not written (its exit or its output says what happened).
struct ToAgent {
    stdin: Option<tokio::process::ChildStdin>,
    tx: mpsc::UnboundedSender<Input>,
}

impl ToAgent {
    /// Bytes as they came; false: the relay is gone.
    async fn relay(&mut self, chunk: &[u8]) -> bool {
        let chunk = Bytes::copy_from_slice(chunk);
        if self.tx.send(Input::Harness(chunk.clone())).is_err() {
            return false;
        }
        self.write(&chunk).await;
        true
    }

    /// A piece of the harness's lines, bent as a request fault says; false: the relay is gone.
    async fn bent(&mut self, piece: Piece, bender: &Bender) -> bool {
        let (line, over, newline) = match piece {
            // An over-long line, as it comes.
            Piece::Through(bytes) => {
                self.write(&bytes).await;
                return true;
            }
            Piece::Line {
                bytes,
                over,
                newline,
            } => (bytes, over, newline),
        };
        // An over-long line went through already: told as a request, not bent.
        let bent = (!over).then(|| bender.bend(&line)).flatten();
        let (mut out, held) = match bent.as_ref().map(|b| &b.what) {
            Some(What::Body(sent, _)) => (sent.to_vec(), None),
            Some(What::Hold(held)) => (line.clone(), Some(*held)),
            _ => (line.clone(), None),
        };
        let input = Input::HarnessLine {
            line,
            newline,
            bent,
            at: Instant::now(),
        };
        if self.tx.send(input).is_err() {
            return false;
        }
        if over {
            return true;
        }
        if let Some(held) = held {
            tokio::time::sleep(held).await;
        }
        if newline {
            out.push(b'\n');
        }
        self.write(&out).await;
        true
    }

    async fn write(&mut self, bytes: &[u8]) {
        if let Some(pipe) = self.stdin.as_mut() {
            if pipe.write_all(bytes).await.is_err() || pipe.flush().await.is_err() {
                self.stdin = None;
            }
        }
    }
}

/// Writes to our stdout: what fails is the harness gone (it closed its end).
async fn write_out(out: &mut tokio::io::Stdout, bytes: &[u8]) -> Result<(), String> {
    let written = async {
        out.write_all(bytes).await?;
        out.flush().await
    };
    written
        .await
        .map_err(|e| format!("the harness closed the proxy's stdout ({e})"))
}
