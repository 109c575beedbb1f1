//! The platform's exchanges with the mock's agents, recorded as they are judged, and judged
//! again from the recording with no mock and no platform running.
//!
//! [`Recording`] wraps a protocol's [`PlatformObserver`]: it hands every call on unchanged and
//! writes what the call said — each request and its answer as one [`Exchange`], the run's
//! moments (its end, the triggers answered, the verdicts drawn) as [`Event`]s. [`rejudge`] feeds
//! a recording to a fresh observer in the order the live one was told, its instants rebuilt
//! from a base plus the recorded offsets, and draws the verdicts at the recorded moment: the
//! same rules fed the same exchanges give the same verdicts.
//!
//! What an observer reads beyond the wire goes in each exchange's `context`: the agent's
//! decision and planned answer, the request's schema findings, how its Authorization compared
//! with the agent's key (the key itself is never recorded), how the answer ended.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::{json, Value};

use super::body::Body;
use super::decision::Decision;
use super::http1::{Delivered, Outcome};
use super::journal::AuthSeen;
use super::peer_end::PeerEnd;
use super::protocol::{AgentProtocol, Answered, PlatformObserver, RunEnd, Seen, Served};
use crate::judge::record::{RecordError, Recorder};
pub use crate::judge::replay::ReplayError;
use crate::judge::time::{duration, instant, ms, ms_since};
use crate::judge::{Answer, Entry, Event, Exchange, Message, Party};
use crate::report::CaseResult;
use crate::schema::Finding;

/// An observer that records what it is told, then tells its inner observer.
pub struct Recording {
    inner: Box<dyn PlatformObserver>,
    base: Instant,
    state: Arc<Mutex<Written>>,
}

/// The recording's side the caller keeps, to close it once the run is judged.
pub struct Recorded {
    state: Arc<Mutex<Written>>,
}

struct Written {
    recorder: Recorder,
    /// How many calls the observer was told so far: each call's place, so that a judging
    /// offline tells them in the same order (an exchange is written when its answer is over,
    /// after requests that came later).
    calls: u64,
    /// Requests whose answer is not over yet, by their number.
    open: HashMap<u64, Exchange>,
    /// The first write that failed: the run goes on, and closing says it.
    failed: Option<RecordError>,
    /// Each bearer key's fingerprint as recorded: its order of first use (1, 2, …; 0 for no
    /// key). The observer only tells callers apart by it, and a fingerprint of a short key can
    /// be reversed by trying keys, so the recording holds neither the key nor its hash.
    callers: HashMap<u64, u64>,
}

impl Written {
    /// The caller's number in this recording for a key's fingerprint.
    fn caller(&mut self, key_print: u64) -> u64 {
        if key_print == 0 {
            return 0;
        }
        let next = self.callers.len() as u64 + 1;
        *self.callers.entry(key_print).or_insert(next)
    }

    fn next(&mut self) -> u64 {
        self.calls += 1;
        self.calls
    }

    fn write(&mut self, exchange: &Exchange) {
        if self.failed.is_none() {
            self.failed = self.recorder.write(exchange).err();
        }
    }

    fn event(&mut self, event: &str, at_ms: f64, mut context: Value) {
        context["order"] = json!(self.next());
        let event = Event {
            event: event.to_string(),
            at_ms,
            context,
        };
        if self.failed.is_none() {
            self.failed = self.recorder.write_event(&event).err();
        }
    }
}

impl Recording {
    /// Records to `path` what `inner` is told, instants counted from `base` (the run's start).
    pub fn wrap(
        inner: Box<dyn PlatformObserver>,
        path: &Path,
        base: Instant,
    ) -> Result<(Recording, Recorded), RecordError> {
        Ok(Recording::wrap_recorder(
            inner,
            Recorder::create(path)?,
            base,
        ))
    }

    /// The same, writing with `recorder` (one that names the parties' URLs, say).
    pub fn wrap_recorder(
        inner: Box<dyn PlatformObserver>,
        recorder: Recorder,
        base: Instant,
    ) -> (Recording, Recorded) {
        let state = Arc::new(Mutex::new(Written {
            recorder,
            calls: 0,
            open: HashMap::new(),
            failed: None,
            callers: HashMap::new(),
        }));
        let recorded = Recorded {
            state: state.clone(),
        };
        (Recording { inner, base, state }, recorded)
    }

    /// Runs `call` on the inner observer with the recording's lock held, and `write` with
    /// the call's place: the order written is the order the inner observer was told.
    fn told(&self, call: impl FnOnce(&dyn PlatformObserver), write: impl FnOnce(&mut Written)) {
        match self.state.lock() {
            Ok(mut written) => {
                call(&*self.inner);
                write(&mut written);
            }
            Err(_) => call(&*self.inner),
        }
    }

    fn ms(&self, at: Instant) -> f64 {
        ms_since(self.base, at)
    }
}

impl Recorded {
    /// Writes an event of the producer's own (one no observer reads: a proxy's settings), in
    /// its place among the calls.
    pub fn event(&self, event: &str, at_ms: f64, context: Value) {
        if let Ok(mut written) = self.state.lock() {
            written.event(event, at_ms, context);
        }
    }

    /// Adds to the exchange of request `seq`, while its answer is not over, what its producer
    /// knew beside what the observer was told (a proxy: the method, the header fields, what
    /// the real agent answered).
    pub fn attach(&self, seq: u64, add: impl FnOnce(&mut Exchange)) {
        if let Ok(mut written) = self.state.lock() {
            if let Some(exchange) = written.open.get_mut(&seq) {
                add(exchange);
            }
        }
    }

    /// Flushes what is written so far to the file (a producer that may be killed any moment,
    /// as `proxy --stdio` is by its harness, keeps each exchange on disk as it ends).
    pub fn flush(&self) {
        if let Ok(mut written) = self.state.lock() {
            if written.failed.is_none() {
                written.failed = written.recorder.flush().err();
            }
        }
    }

    /// Writes the requests never answered (their answer cut by the run's end) and closes the
    /// file: the first error of the whole recording, if a write failed.
    pub fn close(self) -> Result<(), RecordError> {
        let Ok(mut written) = self.state.lock() else {
            return Ok(());
        };
        let mut open: Vec<Exchange> = written.open.drain().map(|(_, e)| e).collect();
        open.sort_by_key(|e| e.seq);
        for exchange in &open {
            written.write(exchange);
        }
        match written.failed.take() {
            Some(e) => Err(e),
            None => written.recorder.finish(),
        }
    }
}

impl PlatformObserver for Recording {
    fn on_request(&self, seen: &Seen<'_>) {
        self.told(
            |o| o.on_request(seen),
            |w| {
                let order = w.next();
                let exchange = Exchange {
                    seq: seen.seq,
                    from: Party::Platform,
                    to: Party::Agent(seen.agent.to_string()),
                    method: None,
                    endpoint: seen.endpoint.to_string(),
                    case: None,
                    request: Message::masked([], seen.body.bytes),
                    answer: Answer::Cut,
                    sent_ms: self.ms(seen.at),
                    answered_ms: None,
                    context: json!({
                        "order": [order, null],
                        "seen": seen_context(seen, w.caller(seen.key_print)),
                    }),
                };
                w.open.insert(seen.seq, exchange);
            },
        );
    }

    fn on_answer(&self, answered: &Answered<'_>) {
        self.told(
            |o| o.on_answer(answered),
            |w| {
                let order = w.next();
                let mut exchange = w
                    .open
                    .remove(&answered.seq)
                    .unwrap_or_else(|| unseen(answered, self.ms(answered.received)));
                exchange.context["order"][1] = json!(order);
                exchange.context["answered"] =
                    answered_context(answered, self.ms(answered.received));
                exchange.answer = wire_answer(answered.delivered, exchange.context.get("seen"));
                exchange.answered_ms = Some(self.ms(answered.at));
                w.write(&exchange);
            },
        );
    }

    fn on_incomplete(&self, agent: &str, endpoint: &str, what: &str) {
        let at = self.ms(Instant::now());
        self.told(
            |o| o.on_incomplete(agent, endpoint, what),
            |w| {
                let context = json!({"agent": agent, "endpoint": endpoint, "what": what});
                w.event("incomplete", at, context);
            },
        );
    }

    fn on_triggers_answered(&self, at: Instant) {
        self.told(
            |o| o.on_triggers_answered(at),
            |w| w.event("triggers-answered", self.ms(at), Value::Null),
        );
    }

    fn on_run_end(&self, end: &RunEnd) {
        self.told(
            |o| o.on_run_end(end),
            |w| {
                let context = json!({
                    "after_ms": ms(end.after),
                    "why": end.why,
                    "abandoned": end.abandoned,
                });
                w.event("run-end", self.ms(end.at), context);
            },
        );
    }

    fn waiting_within_timeout(&self, at: Instant) -> Vec<String> {
        self.inner.waiting_within_timeout(at)
    }

    fn on_probe_request(&self, agent: &str, endpoint: &str, case: &str) {
        let at = self.ms(Instant::now());
        self.told(
            |o| o.on_probe_request(agent, endpoint, case),
            |w| {
                let context = json!({"agent": agent, "endpoint": endpoint, "case": case});
                w.event("probe-request", at, context);
            },
        );
    }

    fn cases_at(&self, served: Served, now: Instant) -> Vec<CaseResult> {
        let mut cases = Vec::new();
        self.told(
            |o| cases = o.cases_at(served, now),
            |w| {
                let served = match served {
                    Served::Fleet => "fleet",
                    Served::OneAgent => "one-agent",
                    Served::Proxy => "proxy",
                };
                w.event("judged", self.ms(now), json!({"served": served}));
            },
        );
        cases
    }
}

/// What an observer reads of a request beyond its body.
fn seen_context(seen: &Seen<'_>, caller: u64) -> Value {
    let findings: Vec<Value> = seen
        .schema_findings
        .iter()
        .map(|f| json!({"path": f.path, "message": f.message}))
        .collect();
    json!({
        "expects_key": seen.expects_key,
        "auth": seen.auth,
        "key_print": caller,
        "task": seen.task,
        "channel": seen.body.channel(),
        "findings": findings,
        "decision": seen.decision,
        "planned": Message::masked([], seen.answer),
    })
}

/// An answer to a request the observer was not told of (a probe's own, /health, an unknown
/// endpoint): only its answer is judged.
fn unseen(answered: &Answered<'_>, received_ms: f64) -> Exchange {
    Exchange {
        seq: answered.seq,
        from: Party::Platform,
        to: Party::Agent(answered.agent.to_string()),
        method: None,
        endpoint: answered.endpoint.to_string(),
        case: None,
        request: Message::default(),
        answer: Answer::Cut,
        sent_ms: received_ms,
        answered_ms: None,
        context: json!({"order": [null, null]}),
    }
}

fn answered_context(answered: &Answered<'_>, received_ms: f64) -> Value {
    let d = answered.delivered;
    json!({
        "agent": answered.agent,
        "endpoint": answered.endpoint,
        "task": answered.task,
        "received_ms": received_ms,
        "outcome": d.outcome.word(),
        "bytes": d.bytes,
        "ttfb_ms": d.ttfb.map(ms),
        "total_ms": ms(d.total),
        "ended": answered.ended.map(peer_end_value),
    })
}

/// The answer as the platform met it on the wire.
fn wire_answer(delivered: &Delivered, seen: Option<&Value>) -> Answer {
    let planned = || {
        seen.and_then(|s| serde_json::from_value(s["planned"].clone()).ok())
            .unwrap_or_default()
    };
    let status = seen
        .and_then(|s| s["decision"]["status"].as_u64())
        .and_then(|s| u16::try_from(s).ok());
    match delivered.outcome {
        Outcome::Complete => Answer::Delivered {
            status,
            message: planned(),
        },
        Outcome::Reset => Answer::Failed {
            what: "the agent reset the connection, as planned".into(),
        },
        Outcome::Closed => Answer::Failed {
            what: "the agent closed the connection early, as planned".into(),
        },
        Outcome::Hung | Outcome::PeerGone => Answer::Failed {
            what: "the platform left before the answer was over".into(),
        },
        Outcome::Shutdown => Answer::Cut,
    }
}

fn peer_end_value(end: &PeerEnd) -> Value {
    match end {
        PeerEnd::GaveUp => json!({"by": "gave-up"}),
        PeerEnd::Ended { what } => json!({"by": "ended", "what": what}),
        PeerEnd::Unknown { why } => json!({"by": "unknown", "why": why}),
    }
}

fn peer_end_of(value: &Value) -> Option<PeerEnd> {
    let text = |key: &str| value[key].as_str().map(str::to_string);
    match value["by"].as_str()? {
        "gave-up" => Some(PeerEnd::GaveUp),
        "ended" => Some(PeerEnd::Ended {
            what: text("what")?,
        }),
        "unknown" => Some(PeerEnd::Unknown { why: text("why")? }),
        _ => None,
    }
}

/// The outcome spelled `word` ([`Outcome::word`]).
pub fn outcome_named(word: &str) -> Option<Outcome> {
    [
        Outcome::Complete,
        Outcome::Reset,
        Outcome::Closed,
        Outcome::Hung,
        Outcome::PeerGone,
        Outcome::Shutdown,
    ]
    .into_iter()
    .find(|o| o.word() == word)
}

/// One call the live observer was told, in its place.
enum Call<'a> {
    Request(&'a Exchange),
    Answer(&'a Exchange),
    Event(&'a Event),
}

/// Judges the recorded `entries` again with `observer` (a fresh one, of the protocol and
/// expectations the run had): each call told in the order the live observer was told, the
/// verdicts drawn at the recorded moment.
pub fn rejudge(
    entries: &[Entry],
    observer: &dyn PlatformObserver,
) -> Result<Vec<CaseResult>, ReplayError> {
    let (served, now) = tell(entries, observer, Instant::now(), Apart::default(), None)?.ok_or_else(|| {
        ReplayError::Missing(
            "`judged` event: the run ended before its verdicts were drawn, so there is no moment to judge it at".into(),
        )
    })?;
    Ok(observer.cases_at(served, now))
}

/// How one recording of several told to one observer is kept apart from the others (the
/// conversations of `proxy --stdio`, a process and a file each): its requests' numbers and
/// channels shifted past the others'.
#[derive(Debug, Clone, Copy, Default)]
pub struct Apart {
    pub seq: u64,
    pub channel: u64,
}

/// Tells `observer` the calls of `entries` in the order the live observer was told them, its
/// instants from `base`; the moment (and the way) its verdicts were drawn, when it says.
/// `protocol`: the requests' protocol, whose request schemas judge each JSON request again (a
/// recording made before a schema changed is judged by the schema of now, as its other rules
/// are); None: the findings the recording kept.
pub fn tell(
    entries: &[Entry],
    observer: &dyn PlatformObserver,
    base: Instant,
    apart: Apart,
    protocol: Option<&dyn AgentProtocol>,
) -> Result<Option<(Served, Instant)>, ReplayError> {
    let mut calls: Vec<(u64, Call<'_>)> = Vec::new();
    for entry in entries {
        match entry {
            Entry::Exchange(e) => {
                let order = |i: usize| e.context["order"][i].as_u64();
                calls.extend(order(0).map(|n| (n, Call::Request(e))));
                calls.extend(order(1).map(|n| (n, Call::Answer(e))));
            }
            Entry::Event(e) => {
                let order = e.context["order"]
                    .as_u64()
                    .ok_or_else(|| ReplayError::Event {
                        event: e.event.clone(),
                        what: "it has no order".into(),
                    })?;
                calls.push((order, Call::Event(e)));
            }
        }
    }
    calls.sort_by_key(|(order, _)| *order);
    let mut judged = None;
    for (_, call) in calls {
        match call {
            Call::Request(e) => tell_request(observer, e, base, apart, protocol)?,
            Call::Answer(e) => tell_answer(observer, e, base, apart)?,
            Call::Event(e) if e.event == "judged" => {
                let served = match e.context["served"].as_str() {
                    Some("one-agent") => Served::OneAgent,
                    Some("proxy") => Served::Proxy,
                    _ => Served::Fleet,
                };
                judged = Some((served, instant(base, e.at_ms)));
            }
            Call::Event(e) => tell_event(observer, e, base)?,
        }
    }
    Ok(judged)
}

fn tell_request(
    observer: &dyn PlatformObserver,
    e: &Exchange,
    base: Instant,
    apart: Apart,
    protocol: Option<&dyn AgentProtocol>,
) -> Result<(), ReplayError> {
    let wrong = |what: &str| ReplayError::Exchange {
        seq: e.seq,
        what: format!("its context's {what} is missing or not what a request's is"),
    };
    let seen = &e.context["seen"];
    let Party::Agent(agent) = &e.to else {
        return Err(wrong("agent (the exchange is not to an agent)"));
    };
    let auth: AuthSeen = serde_json::from_value(seen["auth"].clone()).map_err(|_| wrong("auth"))?;
    let decision: Decision =
        serde_json::from_value(seen["decision"].clone()).map_err(|_| wrong("decision"))?;
    let planned: Message =
        serde_json::from_value(seen["planned"].clone()).map_err(|_| wrong("planned"))?;
    let findings = seen["findings"]
        .as_array()
        .ok_or_else(|| wrong("findings"))?
        .iter()
        .map(|f| {
            Some(Finding {
                path: f["path"].as_str()?.to_string(),
                message: f["message"].as_str()?.to_string(),
            })
        })
        .collect::<Option<Vec<Finding>>>()
        .ok_or_else(|| wrong("findings"))?;
    let bytes = e.request.body();
    // A JSON request judged again by its schema of now; one that is not JSON keeps its finding.
    let schema = protocol
        .and_then(|p| p.endpoint(&e.endpoint))
        .and_then(|endpoint| endpoint.request_schema);
    // The body checked as live (the observer is given it so, parsed once).
    let mut body = Body::checked(&bytes, schema);
    let findings = match body.value() {
        Some(_) => body.findings("the request is not JSON").unwrap_or(findings),
        None => findings,
    };
    if let Some(channel) = seen["channel"].as_u64() {
        body = body.on_channel(channel + apart.channel);
    }
    observer.on_request(&Seen {
        seq: e.seq + apart.seq,
        agent,
        expects_key: seen["expects_key"]
            .as_bool()
            .ok_or_else(|| wrong("expects_key"))?,
        endpoint: &e.endpoint,
        auth,
        key_print: seen["key_print"]
            .as_u64()
            .ok_or_else(|| wrong("key_print"))?,
        task: seen["task"].as_str().ok_or_else(|| wrong("task"))?,
        body: &body,
        schema_findings: &findings,
        decision: &decision,
        answer: &planned.body(),
        at: instant(base, e.sent_ms),
    });
    Ok(())
}

fn tell_answer(
    observer: &dyn PlatformObserver,
    e: &Exchange,
    base: Instant,
    apart: Apart,
) -> Result<(), ReplayError> {
    let wrong = |what: &str| ReplayError::Exchange {
        seq: e.seq,
        what: format!("its context's answered.{what} is missing or not what an answer's is"),
    };
    let a = &e.context["answered"];
    let text = |key: &str| a[key].as_str().ok_or_else(|| wrong(key));
    let number = |key: &str| a[key].as_f64().ok_or_else(|| wrong(key));
    let outcome = outcome_named(text("outcome")?).ok_or_else(|| wrong("outcome"))?;
    let delivered = Delivered {
        outcome,
        bytes: a["bytes"].as_u64().ok_or_else(|| wrong("bytes"))?,
        ttfb: a["ttfb_ms"].as_f64().map(duration),
        total: duration(number("total_ms")?),
    };
    let ended = match &a["ended"] {
        Value::Null => None,
        end => Some(peer_end_of(end).ok_or_else(|| wrong("ended"))?),
    };
    let answered_ms = e.answered_ms.ok_or_else(|| wrong("answered_ms"))?;
    observer.on_answer(&Answered {
        seq: e.seq + apart.seq,
        agent: text("agent")?,
        endpoint: text("endpoint")?,
        task: text("task")?,
        received: instant(base, number("received_ms")?),
        delivered: &delivered,
        ended: ended.as_ref(),
        at: instant(base, answered_ms),
    });
    Ok(())
}

fn tell_event(
    observer: &dyn PlatformObserver,
    e: &Event,
    base: Instant,
) -> Result<(), ReplayError> {
    let wrong = |what: &str| ReplayError::Event {
        event: e.event.clone(),
        what: format!("its context's {what} is missing or wrong"),
    };
    let c = &e.context;
    let text = |key: &str| c[key].as_str().ok_or_else(|| wrong(key));
    let at = instant(base, e.at_ms);
    match e.event.as_str() {
        "incomplete" => observer.on_incomplete(text("agent")?, text("endpoint")?, text("what")?),
        "probe-request" => {
            observer.on_probe_request(text("agent")?, text("endpoint")?, text("case")?)
        }
        "triggers-answered" => observer.on_triggers_answered(at),
        "run-end" => observer.on_run_end(&RunEnd {
            at,
            after: c["after_ms"]
                .as_f64()
                .map(duration)
                .ok_or_else(|| wrong("after_ms"))?,
            why: text("why")?.to_string(),
            abandoned: c["abandoned"].as_bool().ok_or_else(|| wrong("abandoned"))?,
        }),
        // An event of another producer's: no rule of the observer's reads it.
        _ => {}
    }
    Ok(())
}
