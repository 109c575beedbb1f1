//! The verdicts of a connector fleet run ([`super`]): what the agent server did with the
//! sessions, the forwards, the callbacks and the broadcasts, one case per rule of the document.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use super::{
    Behavior, Books, CallbackKind, Carried, Drive, Fleet, Forward, Revive, Said, SentCallback,
};
use crate::mock::http1::{Fault, Outcome};
use crate::mock::observe::Tally;
use crate::protocols::connector::model::FORWARD_TIMEOUT;
use crate::protocols::connector::ws::Inbound;
use crate::report::{CaseResult, Evidence, Level, Report, RunInfo, Status};
use crate::text::Redactor;
use crate::units::{format_duration, percentile};

const SPEC: &str = "external-agents-async-connector.md";

/// How long after the 5 s a server may take to give up on a slow acknowledgement.
const GIVE_UP_MARGIN: Duration = Duration::from_secs(2);

/// How long after a forward failed its error message may take to reach the client.
const ERROR_MARGIN: Duration = Duration::from_secs(3);

fn ms(d: Duration) -> String {
    format_duration(d)
}

fn status(s: Option<u16>, error: &Option<String>) -> String {
    match (s, error) {
        (Some(s), _) => format!("HTTP {s}"),
        (None, Some(e)) => format!("no answer ({})", crate::text::shorten(e, 120)),
        (None, None) => "no answer".into(),
    }
}

/// The sessions the server created (only they can be forwarded to or called back).
fn created(d: &Drive) -> std::collections::BTreeSet<&str> {
    d.creates
        .iter()
        .filter(|c| c.status.is_some_and(|s| (200..300).contains(&s)))
        .map(|c| c.session.as_str())
        .collect()
}

/// A client's messages that carry the callback `cb`'s text (its marker, or for a text without
/// one its digest).
fn copies<'a>(messages: &'a [Inbound], cb: &SentCallback) -> Vec<&'a Inbound> {
    messages
        .iter()
        .filter(|m| m.is_text())
        .filter(|m| {
            m.digest == cb.digest
                || (!cb.marker.is_empty()
                    && m.text.as_deref().is_some_and(|t| {
                        t.contains(&format!("({})", cb.marker))
                            || t.starts_with(&format!("({}) ", cb.marker))
                    }))
        })
        .collect()
}

/// Runs the fleet against the server and judges it.
pub async fn run(fleet: &Fleet, served: super::Served, strict: bool, seed: u64) -> Report {
    let info = RunInfo::start(
        "mock",
        crate::protocols::connector::NAME,
        fleet.target(),
        seed,
        strict,
    );
    let started = Instant::now();
    let (drive, books) = super::exercise(fleet, served).await;
    let mut report = judge(fleet, &drive, &books, info);
    // Every case is judged over the whole exchange (sessions, messages, callbacks, the wait
    // for broadcasts): that is how long its evidence took.
    let took = started.elapsed();
    for case in &mut report.cases {
        case.set_duration(took);
    }
    report
}

pub fn judge(fleet: &Fleet, d: &Drive, b: &Books, info: RunInfo) -> Report {
    let mut cases = vec![
        reached(fleet, d, b),
        session_create(d),
        session_ids(d),
        session_revive(d),
        ws_attach(d),
    ];
    let skip_forwards = b.forwards.is_empty();
    let mut forward_cases = vec![
        forward_schema(b),
        forward_once(fleet, d, b),
        forward_timeout(fleet, b),
        error_message(d, b),
    ];
    if skip_forwards {
        for c in &mut forward_cases {
            c.skip("no forward reached the fleet (see platform.reached-fleet): a server that forwards its users' messages to the fleet's inputUrls exercises this case");
        }
    }
    cases.extend(forward_cases);
    cases.extend([
        delivered(d, b),
        isolated(d, b),
        callback_refusals(
            b,
            Refusal {
                id: "platform.callback-empty",
                title: "an empty or whitespace-only callback body gets 400 (never a 5xx)",
                kinds: &[CallbackKind::Empty, CallbackKind::Whitespace],
                expected: 400,
                of: "empty or whitespace-only callbacks",
                behaviors: "empty-callback or whitespace-callback",
            },
        ),
        callback_refusals(
            b,
            Refusal {
                id: "platform.callback-unknown-session",
                title: "a callback to an unknown or deleted session gets 404 (never a 5xx)",
                kinds: &[CallbackKind::UnknownSession, CallbackKind::DeletedSession],
                expected: 404,
                of: "callbacks to unknown or deleted sessions",
                behaviors: "callback-to-unknown-session or callback-to-deleted-session",
            },
        ),
        callback_no_5xx(b),
        callback_huge(d, b),
        injection(d, b),
        latency(fleet, d, b),
    ]);
    let mut report = info.report(cases, &Redactor::new(Vec::new()));
    report.notes.push(
        "INFO: the public implementation (kcosr/assistant agent-server, protocol 5) differs from the document: hello {protocolVersion: 5, subscriptions: [{sessionId}]} and text_input {sessionId, text} instead of hello {sessionId} and user_message {text}; a failed forward's error goes to the sending connection only (type error, code external_agent_error) rather than into the chat. `ws: assistant-v5` in the fleet file drives that server.".into(),
    );
    report
}

fn reached(fleet: &Fleet, d: &Drive, b: &Books) -> CaseResult {
    let mut c = CaseResult::new(
        "platform.reached-fleet",
        "forward",
        Level::Must,
        "user messages sent over the WebSocket are forwarded to the agents' inputUrls",
        SPEC,
    );
    let created = created(d);
    let on_created = b
        .said
        .iter()
        .filter(|s| created.contains(s.session.as_str()))
        .count();
    if on_created == 0 {
        // Nothing the server could have forwarded: the cause is judged where it is.
        c.skip(format!(
            "no user message was sent on a session the server created ({} of {} session(s) created, {} message(s) sent; see platform.session-create and platform.ws-attach): a server whose configuration names the fleet's agents and inputUrls (printed above) exercises this case",
            created.len(),
            fleet.agents.iter().map(|a| a.sessions.len()).sum::<usize>(),
            b.said.len(),
        ));
    } else if b.forwards.is_empty() {
        c.fail(format!(
            "no forward reached the fleet ({} user message(s) sent by {} WebSocket client(s) of {} session(s) created): does the server's configuration name the fleet's inputUrls (printed above), can it reach them, and is the WebSocket dialect right (ws: {})?",
            b.said.len(),
            d.clients,
            created.len(),
            match fleet.dialect {
                crate::protocols::connector::ws::Dialect::Document => "document",
                crate::protocols::connector::ws::Dialect::AssistantV5 => "assistant-v5",
            }
        ));
    } else {
        c.pass_noting(
            Evidence::new(b.forwards.len() as u64, "forwards that reached the fleet"),
            format!("{on_created} user message(s) on created sessions"),
            String::new,
        );
    }
    c
}

fn session_create(d: &Drive) -> CaseResult {
    let mut t = Tally::default();
    for call in &d.creates {
        let ok = call.status.is_some_and(|s| (200..300).contains(&s))
            && call.body["ok"] == true
            && call.body["result"]["sessionId"].as_str() == Some(call.session.as_str());
        t.check(ok, || {
            format!(
                "create {}: {}{}",
                call.session,
                status(call.status, &call.error),
                if call.body.is_null() {
                    String::new()
                } else {
                    format!(" {}", crate::text::shorten(&call.body.to_string(), 200))
                }
            )
        });
    }
    t.judged(
        "platform.session-create",
        "sessions",
        Level::Must,
        "POST /api/plugins/sessions/operations/create {agentId, sessionId} answers 201 {ok: true, result: {sessionId}}",
        SPEC,
        "session creations",
        "the fleet created no session (give an agent `sessions: N`)",
    )
}

fn session_ids(d: &Drive) -> CaseResult {
    let mut t = Tally::default();
    for (what, call, refused) in &d.id_checks {
        let s = call.status.unwrap_or(0);
        let ok = if *refused {
            (400..500).contains(&s)
        } else {
            (200..300).contains(&s)
                && call.body["result"]["sessionId"].as_str() == Some(call.session.as_str())
        };
        t.check(ok, || {
            format!(
                "{what}: {} (expected {})",
                status(call.status, &call.error),
                if *refused {
                    "a 4xx refusal"
                } else {
                    "2xx with the session"
                }
            )
        });
    }
    let mut c = t.judged(
        "platform.session-ids",
        "sessions",
        Level::Must,
        "the create endpoint refuses empty, over-128-character, `../x`, spaced and non-ASCII ids, attaches the same id idempotently and refuses it for another agent",
        SPEC,
        "create calls",
        "the fleet has no agent to create sessions for",
    );
    if c.status == Status::Pass
        && !d
            .id_checks
            .iter()
            .any(|(w, _, _)| w.contains("another agent"))
    {
        c.message = "one agent id in the fleet: the other-agent rule was not tried (give a second agent another agent-id to try it)".into();
    }
    c
}

fn ws_attach(d: &Drive) -> CaseResult {
    let mut t = Tally::default();
    for e in &d.connect_errors {
        t.check(false, || e.clone());
    }
    for _ in 0..d.clients.saturating_sub(d.not_ready.len()) {
        t.check(true, String::new);
    }
    for s in &d.not_ready {
        t.check(false, || {
            format!("{s}: no session_ready within 5s after hello")
        });
    }
    t.judged(
        "platform.ws-attach",
        "sessions",
        Level::Must,
        "a WebSocket client of /ws that says hello {sessionId} is told session_ready",
        SPEC,
        "WebSocket clients",
        "no WebSocket client was started (each session gets `clients: N`)",
    )
}

fn forward_schema(b: &Books) -> CaseResult {
    let mut t = Tally::default();
    for f in &b.forwards {
        t.check(f.problems.is_empty(), || {
            format!("to {}: {}", f.agent, f.problems.join("; "))
        });
    }
    t.judged(
        "platform.forward-schema",
        "forward",
        Level::Must,
        "each forward is POST application/json {sessionId, agentId, callbackUrl (back at the server, the id percent-encoded), message {type: user, text, createdAt ISO 8601}}",
        SPEC,
        "forwards",
        "a server that forwards its users' messages to the fleet's inputUrls exercises it",
    )
}

fn behavior_of<'a>(fleet: &'a Fleet, session: &str) -> Option<&'a Behavior> {
    fleet
        .agents
        .iter()
        .find(|a| a.sessions.iter().any(|s| s == session))
        .map(|a| &a.behavior)
}

fn forward_once(fleet: &Fleet, d: &Drive, b: &Books) -> CaseResult {
    let created = created(d);
    let mut t = Tally::default();
    // Forwards known by their values only (wrong field names): forwards all the same.
    let mut malformed = 0;
    let mut first_of: BTreeMap<&str, Instant> = BTreeMap::new();
    for said in &b.said {
        first_of.entry(&said.session).or_insert(said.at);
    }
    for said in &b.said {
        if !created.contains(said.session.as_str()) {
            continue;
        }
        // The fleet deletes a session of this agent after its first message.
        if behavior_of(fleet, &said.session) == Some(&Behavior::DeletedSession)
            && first_of.get(said.session.as_str()) != Some(&said.at)
        {
            continue;
        }
        let carried: Vec<Carried> = b
            .forwards
            .iter()
            .filter_map(|f| f.carries(&said.session, &said.text))
            .collect();
        let n = carried.len();
        malformed += carried.iter().filter(|c| **c == Carried::Malformed).count();
        t.check(n == 1, || {
            if n == 0 {
                never_forwarded(fleet, b, said)
            } else {
                format!(
                    "{:?} to {}: forwarded {n} times (the document: no retries)",
                    said.text, said.session
                )
            }
        });
    }
    let mut c = t.judged(
        "platform.forward-once",
        "forward",
        Level::Must,
        "each user message is forwarded exactly once (no retry, even after a failure)",
        SPEC,
        "user messages on created sessions",
        "see platform.session-create and platform.ws-attach: a message is sent on a session the server created, by a client it attached",
    );
    if malformed > 0 && c.status != Status::Skip {
        let note = format!("{malformed} forward(s) arrived malformed, their session id and text under other field names (see platform.forward-schema), and were counted by those values");
        c.message = if c.message.is_empty() {
            note
        } else {
            format!("{}; {note}", c.message)
        };
    }
    c
}

/// Why no forward was found for `said`: none reached its agent, or some did without its
/// session id and text anywhere in them.
fn never_forwarded(fleet: &Fleet, b: &Books, said: &Said) -> String {
    let agent = fleet
        .agents
        .iter()
        .find(|a| a.sessions.contains(&said.session))
        .map_or("", |a| a.name.as_str());
    let to_agent = b.forwards.iter().filter(|f| f.agent == agent).count();
    if to_agent == 0 {
        format!(
            "{:?} to {}: never forwarded (no forward reached agent {agent})",
            said.text, said.session
        )
    } else {
        format!(
            "{:?} to {}: no forward carried it ({to_agent} forward(s) reached agent {agent}, none with this session id and text anywhere in it: see platform.forward-schema)",
            said.text, said.session
        )
    }
}

fn forward_timeout(fleet: &Fleet, b: &Books) -> CaseResult {
    let mut t = Tally::default();
    for f in &b.forwards {
        let slow = fleet
            .agents
            .iter()
            .find(|a| a.name == f.agent)
            .is_some_and(|a| {
                matches!(
                    a.behavior,
                    Behavior::SlowAck(_) | Behavior::Fault(Fault::Hang)
                )
            });
        // An acknowledgement the fleet cut short at its own end judges nothing.
        let Some(ack) = f.ack.filter(|a| slow && a.outcome != Outcome::Shutdown) else {
            continue;
        };
        let gave_up = matches!(ack.outcome, Outcome::PeerGone | Outcome::Hung);
        t.check(
            gave_up && ack.total <= FORWARD_TIMEOUT + GIVE_UP_MARGIN,
            || {
                if gave_up {
                    format!("to {}: gave up after {}", f.agent, ms(ack.total))
                } else {
                    format!(
                        "to {}: waited {} for the acknowledgement (no 5 s timeout)",
                        f.agent,
                        ms(ack.total)
                    )
                }
            },
        );
    }
    t.judged(
        "platform.forward-timeout",
        "forward",
        Level::Must,
        "a forward whose acknowledgement is slow is given up at 5 s",
        SPEC,
        "slow acknowledgements",
        "serve an agent with slow-ack or fault:hang to exercise it",
    )
}

/// What the wire showed the server of a forward's acknowledgement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Wire {
    /// A whole 2xx head: an acknowledgement, whether the body followed or a FIN cut it
    /// (`fault:close`; the document counts only a non-2xx or a timeout as a failure).
    Acknowledged { cut: bool },
    /// No acknowledgement: a non-2xx status, no HTTP head at all (reset, garbage), or no answer
    /// before the server gave up.
    Failed,
    /// Not known: the fleet cut the answer short at its own end, or an RST followed the head
    /// (it may discard the head before the server reads it).
    Unknown,
}

fn wire(f: &super::Forward) -> Wire {
    let Some(ack) = f.ack else {
        return Wire::Unknown;
    };
    let two = (200..300).contains(&f.status);
    match ack.outcome {
        Outcome::Shutdown => Wire::Unknown,
        Outcome::Complete if two => Wire::Acknowledged { cut: false },
        Outcome::Closed if two => Wire::Acknowledged { cut: true },
        Outcome::Reset if f.status != 0 => Wire::Unknown,
        _ => Wire::Failed,
    }
}

/// Whether an error reached the sender (client 0) of `said`, and to how many other clients of
/// its session, between the message and `ERROR_MARGIN` after its last forward ended.
fn error_seen(d: &Drive, b: &Books, said: &Said, forwards: &[&Forward]) -> Option<(bool, usize)> {
    let clients = d.seen.get(&said.session)?;
    // The last attempt: after a retry, the error follows it.
    let ended = forwards
        .iter()
        .map(|f| f.at + f.ack.map_or(FORWARD_TIMEOUT, |a| a.total))
        .max()
        .unwrap_or(said.at);
    let window = |m: &&Inbound| m.at >= said.at && m.at <= ended + ERROR_MARGIN;
    let is_error = |m: &Inbound| {
        m.is_error() || (m.is_text() && !b.callbacks.iter().any(|c| c.digest == m.digest))
    };
    let shows = |c: &Vec<Inbound>| c.iter().filter(window).any(&is_error);
    let at_sender = clients.first().is_some_and(shows);
    let others = clients.iter().skip(1).filter(|c| shows(c)).count();
    Some((at_sender, others))
}

fn error_message(d: &Drive, b: &Books) -> CaseResult {
    let mut t = Tally::default();
    let (mut elsewhere, mut sender_only) = (0, 0);
    // Acknowledged with a 2xx head cut before its body: no error is due; whether one was shown.
    let (mut cut, mut cut_shown) = (0, 0);
    for said in &b.said {
        let forwards: Vec<&Forward> = b
            .forwards
            .iter()
            .filter(|f| f.carries(&said.session, &said.text).is_some())
            .collect();
        let wires: Vec<Wire> = forwards.iter().map(|f| wire(f)).collect();
        let Some((at_sender, others)) = error_seen(d, b, said, &forwards) else {
            continue;
        };
        if wires.contains(&Wire::Acknowledged { cut: true }) && !wires.contains(&Wire::Failed) {
            cut += 1;
            cut_shown += usize::from(at_sender);
        }
        if wires.is_empty() || wires.iter().any(|w| *w != Wire::Failed) {
            continue;
        }
        if at_sender {
            if others > 0 {
                elsewhere += 1;
            } else {
                sender_only += 1;
            }
        }
        t.check(at_sender, || {
            format!(
                "{:?} to {} (agent {}): no error message reached the client within {} of the failed forward",
                said.text,
                said.session,
                forwards[0].agent,
                ms(ERROR_MARGIN)
            )
        });
    }
    let mut c = t.judged(
        "platform.error-message",
        "forward",
        Level::Must,
        "after a non-2xx, failed or slow acknowledgement, an error message reaches the session's client",
        SPEC,
        "messages whose forward failed on the wire",
        "serve an agent with error-ack, fault:reset, fault:garbage, fault:hang or slow-ack to exercise it (fault:close sends a whole 200 head, which is an acknowledgement)",
    );
    if c.status == Status::Pass {
        c.message = format!(
            "the error reached the session's other clients too for {elsewhere}, the sending client only for {sender_only}"
        );
    }
    if cut > 0 {
        if !c.message.is_empty() {
            c.message.push_str("; ");
        }
        c.message.push_str(&format!(
            "{cut} message(s) acknowledged with a 200 head and a FIN before the body (fault:close): an acknowledgement, so no error is due (the server showed one for {cut_shown}: a client that reads the body may call it cut short, which the document does not rule on)"
        ));
    }
    c
}

fn delivered(d: &Drive, b: &Books) -> CaseResult {
    let mut t = Tally::default();
    for cb in b.callbacks.iter().filter(|c| c.kind == CallbackKind::Text) {
        let Some(clients) = d.seen.get(&cb.session) else {
            continue;
        };
        let accepted = cb.status.is_some_and(|s| (200..300).contains(&s));
        let counts: Vec<usize> = clients.iter().map(|m| copies(m, cb).len()).collect();
        t.check(accepted && counts.iter().all(|&n| n == 1), || {
            if accepted {
                format!(
                    "{} to {}: broadcast {counts:?} time(s) to its {} client(s) (expected once each)",
                    cb.marker,
                    cb.session,
                    clients.len()
                )
            } else {
                format!(
                    "{} to {} (agent {}): {} (expected 200)",
                    cb.marker,
                    cb.session,
                    cb.agent,
                    status(cb.status, &cb.error)
                )
            }
        });
    }
    t.judged(
        "platform.callback-delivered",
        "callbacks",
        Level::Must,
        "a callback's raw text is answered 200 and reaches each WebSocket client of its session exactly once",
        SPEC,
        "text callbacks to sessions with clients",
        "an agent that is forwarded a message and calls back (conforming, markdown, injection, many-callbacks) exercises it, on a session with WebSocket clients",
    )
}

fn isolated(d: &Drive, b: &Books) -> CaseResult {
    let mut t = Tally::default();
    for (session, clients) in &d.seen {
        for (i, messages) in clients.iter().enumerate() {
            for cb in &b.callbacks {
                if cb.kind != CallbackKind::Text && cb.kind != CallbackKind::Huge {
                    continue;
                }
                let n = copies(messages, cb).len();
                if &cb.session == session {
                    continue;
                }
                t.check(n == 0, || {
                    format!(
                        "{} of session {} reached client {i} of session {session}",
                        cb.marker, cb.session
                    )
                });
            }
        }
    }
    t.judged(
        "platform.broadcast-isolated",
        "callbacks",
        Level::Must,
        "a callback's text reaches its own session's clients only",
        SPEC,
        "(callback, other session's client) pairs",
        "two sessions with WebSocket clients and a text callback to one of them exercise it",
    )
}

/// A callback the server must refuse: which, with what status, and what would send one.
struct Refusal<'a> {
    id: &'a str,
    title: &'a str,
    kinds: &'a [CallbackKind],
    expected: u16,
    /// The callbacks, as a plural noun phrase.
    of: &'a str,
    /// The behaviours that send them.
    behaviors: &'a str,
}

fn callback_refusals(b: &Books, r: Refusal<'_>) -> CaseResult {
    let Refusal {
        id,
        title,
        kinds,
        expected,
        of,
        behaviors,
    } = r;
    let mut t = Tally::default();
    for cb in b.callbacks.iter().filter(|c| kinds.contains(&c.kind)) {
        t.check(cb.status == Some(expected), || {
            format!(
                "{:?} callback for {} (agent {}): {} (expected {expected})",
                cb.kind,
                cb.session,
                cb.agent,
                status(cb.status, &cb.error)
            )
        });
    }
    t.judged(
        id,
        "callbacks",
        Level::Must,
        title,
        SPEC,
        of,
        &format!("serve an agent with {behaviors} to exercise it"),
    )
}

/// A body's size for a reader: `33554432 bytes (32 MiB)`.
fn size(n: usize) -> String {
    match n {
        n if n >= 1 << 20 => format!("{n} bytes ({:.0} MiB)", n as f64 / f64::from(1 << 20)),
        n if n >= 1 << 10 => format!("{n} bytes ({:.0} KiB)", n as f64 / 1024.0),
        n => format!("{n} bytes"),
    }
}

fn kind_name(kind: CallbackKind) -> &'static str {
    match kind {
        CallbackKind::Text => "a text",
        CallbackKind::Huge => "a huge",
        CallbackKind::Empty => "an empty",
        CallbackKind::Whitespace => "a whitespace-only",
        CallbackKind::UnknownSession => "an unknown session's",
        CallbackKind::DeletedSession => "a deleted session's",
    }
}

/// A server error to a callback, of any size or body, is a crash; so is no answer at all,
/// unless the connection broke while the body was still going out (a refusal without a
/// status: the answer, had there been one, was read alongside the upload).
fn callback_no_5xx(b: &Books) -> CaseResult {
    let mut t = Tally::default();
    for cb in b.callbacks.iter().filter(|c| !c.cut_mid_body) {
        t.check(cb.status.is_some_and(|s| s < 500), || {
            format!(
                "{} callback of {} to {} (agent {}): {}",
                kind_name(cb.kind),
                size(cb.len),
                cb.session,
                cb.agent,
                status(cb.status, &cb.error)
            )
        });
    }
    t.judged(
        "platform.callback-no-5xx",
        "callbacks",
        Level::Must,
        "every callback, whatever its size or body, gets an answer below 500 (a connection closed while the body still went out is a refusal, judged by platform.callback-huge)",
        SPEC,
        "callbacks",
        "no callback was sent: an agent that is forwarded a message and calls back exercises it",
    )
}

/// What a server did with one huge callback it answered below 500: Ok(note) when it refused or
/// bounded it, Err(note) when it took it whole.
fn huge_outcome(d: &Drive, cb: &SentCallback) -> Result<String, String> {
    let bytes = size(cb.len);
    match cb.status {
        Some(s) if (200..300).contains(&s) => {
            let longest = d
                .seen
                .get(&cb.session)
                .into_iter()
                .flatten()
                .flat_map(|m| copies(m, cb))
                .map(|m| m.text_len)
                .max();
            match longest {
                Some(n) if n < cb.len => Ok(format!(
                    "{bytes} accepted (HTTP {s}), bounded to {n} bytes when broadcast"
                )),
                Some(n) => Err(format!(
                    "{bytes} accepted (HTTP {s}) and broadcast whole ({n} bytes): no bound"
                )),
                None => Ok(format!("{bytes} accepted (HTTP {s}), not broadcast")),
            }
        }
        Some(s) => Ok(format!("{bytes} refused with HTTP {s}")),
        None => Ok(format!(
            "{bytes} refused without a status: {}",
            cb.error.as_deref().unwrap_or("no answer")
        )),
    }
}

fn callback_huge(d: &Drive, b: &Books) -> CaseResult {
    let mut c = CaseResult::new(
        "platform.callback-huge",
        "callbacks",
        Level::Should,
        "a huge callback body is refused or bounded before it is broadcast, not taken whole (a 5xx to it is judged by platform.callback-no-5xx)",
        SPEC,
    );
    let huge: Vec<&SentCallback> = b
        .callbacks
        .iter()
        .filter(|c| c.kind == CallbackKind::Huge)
        .collect();
    // A 5xx or a silence after the whole body is platform.callback-no-5xx's.
    let crashed = |cb: &&SentCallback| cb.status.map_or(!cb.cut_mid_body, |s| s >= 500);
    let judged: Vec<&SentCallback> = huge.iter().copied().filter(|cb| !crashed(cb)).collect();
    if judged.is_empty() {
        c.skip(if huge.is_empty() {
            "no huge callback to judge: serve an agent with huge-callback to exercise it".to_string()
        } else {
            format!(
                "each of the {} huge callback(s) got a server error or no answer (see platform.callback-no-5xx): nothing to judge a bound by; a server that answers them below 500 exercises it",
                huge.len()
            )
        });
        return c;
    }
    let evidence = Evidence::new(judged.len() as u64, "huge callbacks answered below 500");
    let (mut held, mut unbounded) = (Vec::new(), Vec::new());
    for cb in judged {
        match huge_outcome(d, cb) {
            Ok(note) => held.push(note),
            Err(note) => unbounded.push(note),
        }
    }
    if unbounded.is_empty() {
        c.pass_noting(evidence, held.join("; "), String::new);
    } else {
        c.fail_on(evidence, unbounded.join("; "));
    }
    c
}

/// A deleted session created again: revived, attached, and called back (see `fleet::revive`).
fn session_revive(d: &Drive) -> CaseResult {
    let mut c = CaseResult::new(
        "platform.session-revive",
        "sessions",
        Level::Must,
        "a deleted session created again (same agent) is revived: created, attached, and a callback to it answered 200 and broadcast",
        SPEC,
    );
    let Some(r) = &d.revive else {
        c.skip("the fleet has no agent to create a session for: give the fleet an agent");
        return c;
    };
    let ok = |call: &super::Call| call.status.is_some_and(|s| (200..300).contains(&s));
    let answer = |call: &super::Call| {
        let body = if call.body.is_null() {
            String::new()
        } else {
            format!(" {}", crate::text::shorten(&call.body.to_string(), 160))
        };
        format!("{}{body}", status(call.status, &call.error))
    };
    let session = &r.session;
    match r.calls.as_slice() {
        [first, ..] if !ok(first) => c.skip(format!(
            "creating {session} answered {} (see platform.session-create): nothing to delete and revive; a create endpoint that creates the fleet's sessions exercises this case",
            answer(first)
        )),
        [_, delete, ..] if !ok(delete) => c.skip(format!(
            "deleting {session} (POST /api/plugins/sessions/operations/delete {{sessionId}}) answered {}: nothing to revive; a server that deletes sessions there exercises this case",
            answer(delete)
        )),
        [_, _, again] => revived(&mut c, r, again, ok(again), &answer(again)),
        _ => c.skip(format!("the revival of {session} was not tried to its end")),
    }
    c
}

/// Judges a revival whose create, delete and second create were made.
fn revived(c: &mut CaseResult, r: &Revive, again: &super::Call, created: bool, answer: &str) {
    let session = &r.session;
    let evidence = Evidence::new(1, "deleted sessions created again");
    let named = again.body["result"]["sessionId"].as_str() == Some(session.as_str());
    let fault = if !created || !named {
        Some(format!(
            "creating the deleted session {session} again answered {answer}: not revived (the document: \"If session is deleted: revive (idempotent attach)\"; expected 2xx {{ok: true, result: {{sessionId}}}})"
        ))
    } else if let Some(why) = &r.not_attached {
        Some(format!("{session} was created again ({answer}), but a WebSocket client could not attach to it: {why}"))
    } else {
        match &r.callback {
            None => Some(format!("{session}: no callback was sent")),
            Some(Err(e)) => Some(format!("a callback to the revived session {session}: no answer ({})", e.message)),
            Some(Ok(s)) if !(200..300).contains(s) => Some(format!(
                "a callback to the revived session {session} was answered {s} (expected 200: a revived session takes callbacks again)"
            )),
            Some(Ok(_)) if r.broadcasts != 1 => Some(format!(
                "the callback to the revived session {session} was answered 2xx and shown to its client {} time(s) (expected once)",
                r.broadcasts
            )),
            Some(Ok(_)) => None,
        }
    };
    match fault {
        Some(message) => c.fail_on(evidence, message),
        None => c.pass_noting(
            evidence,
            format!("{session}: created, deleted, created again ({answer}), attached; its callback answered 2xx and shown once"),
            String::new,
        ),
    }
}

fn injection(d: &Drive, b: &Books) -> CaseResult {
    let mut c = CaseResult::new(
        "platform.injection-as-text",
        "callbacks",
        Level::May,
        "prompt-injection text in a callback is delivered as text, verbatim (INFO: where its canaries were seen)",
        SPEC,
    );
    let sent: Vec<&SentCallback> = b.callbacks.iter().filter(|c| c.canary.is_some()).collect();
    if sent.is_empty() {
        c.skip("no injection callback to judge: serve an agent with injection to exercise it");
        return c;
    }
    let mut seen = 0;
    let mut notes = Vec::new();
    let mut altered = Vec::new();
    for cb in sent {
        let canary = cb.canary.as_deref().unwrap_or("");
        let copies: Vec<&Inbound> = d
            .seen
            .get(&cb.session)
            .into_iter()
            .flatten()
            .flat_map(|m| copies(m, cb))
            .collect();
        let verbatim = copies.iter().filter(|m| m.digest == cb.digest).count();
        seen += copies.len();
        if copies.len() > verbatim {
            altered.push(format!(
                "{canary}: {} of {} broadcast(s) altered (escaped or stripped)",
                copies.len() - verbatim,
                copies.len()
            ));
        }
        let forwarded = b
            .forwards
            .iter()
            .filter(|f| f.text.as_deref().is_some_and(|t| t.contains(canary)))
            .count();
        notes.push(format!("{canary}: seen in {} broadcast(s), {verbatim} verbatim; in {forwarded} later forward(s)", copies.len()));
    }
    let evidence = Evidence::new(seen as u64, "broadcasts of injection callbacks");
    if altered.is_empty() {
        c.pass_noting(evidence, notes.join("; "), || {
            format!(
                "no injection callback was broadcast to a client (see platform.callback-delivered): {}",
                notes.join("; ")
            )
        });
    } else {
        c.fail_on(
            evidence,
            format!("{}; {}", altered.join("; "), notes.join("; ")),
        );
    }
    c
}

fn latency(fleet: &Fleet, d: &Drive, b: &Books) -> CaseResult {
    let mut c = CaseResult::new(
        "platform.broadcast-latency",
        "callbacks",
        Level::May,
        "the time from a callback to its broadcast, and from a user message to the broadcast of its answer (p50, p99)",
        SPEC,
    );
    let mut hop: Vec<Duration> = Vec::new();
    let mut round: Vec<Duration> = Vec::new();
    for cb in b.callbacks.iter().filter(|c| c.kind == CallbackKind::Text) {
        let said = b
            .said
            .iter()
            .find(|s| s.session == cb.session && s.text.trim() == cb.answers);
        for messages in d.seen.get(&cb.session).into_iter().flatten() {
            if let Some(m) = copies(messages, cb).first() {
                hop.push(m.at.saturating_duration_since(cb.sent));
                if let Some(said) = said {
                    round.push(m.at.saturating_duration_since(said.at));
                }
            }
        }
    }
    if hop.is_empty() {
        c.skip("no callback was broadcast to a client: an agent that calls back (conforming, markdown, many-callbacks) on a session with WebSocket clients exercises it");
        return c;
    }
    let evidence = Evidence::new(hop.len() as u64, "broadcasts timed");
    let figures = |times: &mut Vec<Duration>| {
        times.sort();
        format!(
            "p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
            percentile(times, 0.5).as_secs_f64() * 1000.0,
            percentile(times, 0.99).as_secs_f64() * 1000.0,
            times.last().copied().unwrap_or_default().as_secs_f64() * 1000.0
        )
    };
    let note = format!(
        "callback → broadcast: {}; user message → forward → callback → broadcast: {} (the agents wait {} before calling back)",
        figures(&mut hop),
        figures(&mut round),
        ms(fleet.reply_after)
    );
    c.pass_noting(evidence, note, String::new);
    c
}
