//! The verdicts of a connector fleet run ([`super::fleet`]): what the agent server did with the
//! sessions, the forwards, the callbacks and the broadcasts, one case per rule of the document.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use super::fleet::{Behavior, Books, CallbackKind, Drive, Fleet, SentCallback};
use super::model::FORWARD_TIMEOUT;
use super::ws::Inbound;
use crate::mock::http1::{Fault, Outcome};
use crate::mock::observe::Tally;
use crate::report::{CaseResult, Level, Report, RunInfo, Status};
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
pub async fn run(fleet: &Fleet, served: super::fleet::Served, strict: bool, seed: u64) -> Report {
    let info = RunInfo::start("mock", super::NAME, fleet.target(), seed, strict);
    let (drive, books) = super::fleet::exercise(fleet, served).await;
    judge(fleet, &drive, &books, info)
}

pub fn judge(fleet: &Fleet, d: &Drive, b: &Books, info: RunInfo) -> Report {
    let mut cases = vec![
        reached(fleet, d, b),
        session_create(d),
        session_ids(d),
        ws_attach(fleet, d),
    ];
    let skip_forwards = b.forwards.is_empty();
    let mut forward_cases = vec![
        forward_schema(b),
        forward_once(fleet, d, b),
        forward_timeout(fleet, b),
        error_message(fleet, d, b),
    ];
    if skip_forwards {
        for c in &mut forward_cases {
            c.skip("no forward reached the fleet (see platform.reached-fleet)");
        }
    }
    cases.extend(forward_cases);
    cases.extend([
        delivered(d, b),
        isolated(d, b),
        callback_refusals(
            b,
            "platform.callback-empty",
            "an empty or whitespace-only callback body gets 400 (never a 5xx)",
            &[CallbackKind::Empty, CallbackKind::Whitespace],
            |s| s == 400,
            "400",
        ),
        callback_refusals(
            b,
            "platform.callback-unknown-session",
            "a callback to an unknown or deleted session gets 404 (never a 5xx)",
            &[CallbackKind::UnknownSession, CallbackKind::DeletedSession],
            |s| s == 404,
            "404",
        ),
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
    if b.forwards.is_empty() {
        c.fail(format!(
            "no forward reached the fleet ({} user message(s) sent by {} WebSocket client(s) of {} session(s) created): does the server's configuration name the fleet's inputUrls (printed above), can it reach them, and is the WebSocket dialect right (ws: {})?",
            b.said.len(),
            d.clients,
            created(d).len(),
            match fleet.dialect {
                super::ws::Dialect::Document => "document",
                super::ws::Dialect::AssistantV5 => "assistant-v5",
            }
        ));
    } else {
        c.message = format!(
            "{} forward(s) of {} user message(s)",
            b.forwards.len(),
            b.said.len()
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
    t.case(
        "platform.session-create",
        "sessions",
        Level::Must,
        "POST /api/plugins/sessions/operations/create {agentId, sessionId} answers 201 {ok: true, result: {sessionId}}",
        SPEC,
        "session creation(s)",
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
    let mut c = t.case(
        "platform.session-ids",
        "sessions",
        Level::Must,
        "the create endpoint refuses empty, over-128-character, `../x`, spaced and non-ASCII ids, attaches the same id idempotently and refuses it for another agent",
        SPEC,
        "create call(s)",
    );
    if c.status == Status::Pass
        && !d
            .id_checks
            .iter()
            .any(|(w, _, _)| w.contains("another agent"))
    {
        c.message
            .push_str(" (one agent id in the fleet: the other-agent rule was not tried)");
    }
    c
}

fn ws_attach(fleet: &Fleet, d: &Drive) -> CaseResult {
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
    let _ = fleet;
    t.case(
        "platform.ws-attach",
        "sessions",
        Level::Must,
        "a WebSocket client of /ws that says hello {sessionId} is told session_ready",
        SPEC,
        "WebSocket client(s)",
    )
}

fn forward_schema(b: &Books) -> CaseResult {
    let mut t = Tally::default();
    for f in &b.forwards {
        t.check(f.problems.is_empty(), || {
            format!("to {}: {}", f.agent, f.problems.join("; "))
        });
    }
    t.case(
        "platform.forward-schema",
        "forward",
        Level::Must,
        "each forward is POST application/json {sessionId, agentId, callbackUrl (back at the server, the id percent-encoded), message {type: user, text, createdAt ISO 8601}}",
        SPEC,
        "forward(s)",
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
        let n = b
            .forwards
            .iter()
            .filter(|f| {
                f.session.as_deref() == Some(&said.session)
                    && f.text.as_deref() == Some(said.text.trim())
            })
            .count();
        t.check(n == 1, || {
            if n == 0 {
                format!("{:?} to {}: never forwarded", said.text, said.session)
            } else {
                format!(
                    "{:?} to {}: forwarded {n} times (the document: no retries)",
                    said.text, said.session
                )
            }
        });
    }
    t.case(
        "platform.forward-once",
        "forward",
        Level::Must,
        "each user message is forwarded exactly once (no retry, even after a failure)",
        SPEC,
        "user message(s)",
    )
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
    t.case(
        "platform.forward-timeout",
        "forward",
        Level::Must,
        "a forward whose acknowledgement is slow is given up at 5 s",
        SPEC,
        "slow acknowledgement(s) (serve an agent with slow-ack or fault:hang to test it)",
    )
}

/// Whether the server saw a forward fail: our answer was not 2xx, or did not get through.
/// Unknown (None) when the fleet itself cut the acknowledgement short at its end.
fn failed(f: &super::fleet::Forward) -> Option<bool> {
    match f.ack {
        Some(a) if a.outcome == Outcome::Shutdown => None,
        Some(a) => Some(a.outcome != Outcome::Complete || !(200..300).contains(&f.status)),
        None => None,
    }
}

fn error_message(fleet: &Fleet, d: &Drive, b: &Books) -> CaseResult {
    let mut t = Tally::default();
    let mut elsewhere = 0;
    let mut sender_only = 0;
    for said in &b.said {
        let forwards: Vec<_> = b
            .forwards
            .iter()
            .filter(|f| {
                f.session.as_deref() == Some(&said.session)
                    && f.text.as_deref() == Some(said.text.trim())
            })
            .collect();
        let verdicts: Option<Vec<bool>> = forwards.iter().map(|f| failed(f)).collect();
        if forwards.is_empty() || !verdicts.is_some_and(|v| v.iter().all(|&failed| failed)) {
            continue;
        }
        let Some(clients) = d.seen.get(&said.session) else {
            continue;
        };
        // The last failure: after a retry, the error follows the last attempt.
        let failed_at = forwards
            .iter()
            .map(|f| f.at + f.ack.map_or(FORWARD_TIMEOUT, |a| a.total))
            .max()
            .unwrap_or(said.at);
        let window = |m: &&Inbound| m.at >= said.at && m.at <= failed_at + ERROR_MARGIN;
        let is_error = |m: &Inbound| {
            m.is_error() || (m.is_text() && !b.callbacks.iter().any(|c| c.digest == m.digest))
        };
        let at_sender = clients
            .first()
            .is_some_and(|c| c.iter().filter(window).any(&is_error));
        let others = clients
            .iter()
            .skip(1)
            .filter(|c| c.iter().filter(window).any(&is_error))
            .count();
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
    let _ = fleet;
    let mut c = t.case(
        "platform.error-message",
        "forward",
        Level::Must,
        "after a non-2xx, failed or slow acknowledgement, an error message reaches the session's client",
        SPEC,
        "failed forward(s) (serve an agent with error-ack, fault or slow-ack to test it)",
    );
    if c.status == Status::Pass {
        c.message.push_str(&format!(
            "; the error reached the session's other clients too for {elsewhere}, the sending client only for {sender_only}"
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
    t.case(
        "platform.callback-delivered",
        "callbacks",
        Level::Must,
        "a callback's raw text is answered 200 and reaches each WebSocket client of its session exactly once",
        SPEC,
        "callback(s)",
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
    t.case(
        "platform.broadcast-isolated",
        "callbacks",
        Level::Must,
        "a callback's text reaches its own session's clients only",
        SPEC,
        "(callback, other session's client) pair(s)",
    )
}

fn callback_refusals(
    b: &Books,
    id: &str,
    title: &str,
    kinds: &[CallbackKind],
    ok: impl Fn(u16) -> bool,
    expected: &str,
) -> CaseResult {
    let mut t = Tally::default();
    for cb in b.callbacks.iter().filter(|c| kinds.contains(&c.kind)) {
        t.check(cb.status.is_some_and(&ok), || {
            format!(
                "{:?} callback for {} (agent {}): {} (expected {expected})",
                cb.kind,
                cb.session,
                cb.agent,
                status(cb.status, &cb.error)
            )
        });
    }
    t.case(
        id,
        "callbacks",
        Level::Must,
        title,
        SPEC,
        "such callback(s)",
    )
}

fn callback_huge(d: &Drive, b: &Books) -> CaseResult {
    let mut c = CaseResult::new(
        "platform.callback-huge",
        "callbacks",
        Level::Should,
        "a huge callback body is refused (4xx) or bounded before it is broadcast (never a 5xx)",
        SPEC,
    );
    let huge: Vec<&SentCallback> = b
        .callbacks
        .iter()
        .filter(|c| c.kind == CallbackKind::Huge)
        .collect();
    if huge.is_empty() {
        c.skip("no huge callback to judge (serve an agent with huge-callback to test it)");
        return c;
    }
    let mut said = Vec::new();
    let mut bad = Vec::new();
    for cb in huge {
        match cb.status {
            Some(s) if (400..500).contains(&s) => {
                said.push(format!("{} bytes refused with HTTP {s}", cb.len))
            }
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
                    Some(n) if n < cb.len => said.push(format!(
                        "{} bytes accepted, bounded to {n} bytes when broadcast",
                        cb.len
                    )),
                    Some(n) => bad.push(format!(
                        "{} bytes accepted and broadcast whole ({n} bytes): no bound",
                        cb.len
                    )),
                    None => said.push(format!("{} bytes accepted, not broadcast", cb.len)),
                }
            }
            _ => bad.push(format!(
                "{} bytes: {}",
                cb.len,
                status(cb.status, &cb.error)
            )),
        }
    }
    if bad.is_empty() {
        c.message = said.join("; ");
    } else {
        c.fail(bad.join("; "));
    }
    c
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
        c.skip("no injection callback to judge (serve an agent with injection to test it)");
        return c;
    }
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
    if altered.is_empty() {
        c.message = notes.join("; ");
    } else {
        c.fail(format!("{}; {}", altered.join("; "), notes.join("; ")));
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
        c.skip("no callback was broadcast");
        return c;
    }
    let figures = |times: &mut Vec<Duration>| {
        times.sort();
        format!(
            "p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
            percentile(times, 0.5).as_secs_f64() * 1000.0,
            percentile(times, 0.99).as_secs_f64() * 1000.0,
            times.last().copied().unwrap_or_default().as_secs_f64() * 1000.0
        )
    };
    c.message = format!(
        "callback → broadcast, {} broadcast(s): {}; user message → forward → callback → broadcast: {} (the agents wait {} before calling back)",
        hop.len(),
        figures(&mut hop),
        figures(&mut round),
        ms(fleet.reply_after)
    );
    c
}
