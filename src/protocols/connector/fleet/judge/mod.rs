//! The verdicts of a connector fleet run ([`super`]): what the agent server did with the
//! sessions, the forwards, the callbacks and the broadcasts, one case per rule of the document:
//! one module per group (`sessions`, `forwards`, `callbacks`, `broadcasts`); the shared
//! helpers and the report here.

use std::time::{Duration, Instant};

use super::{Books, CallbackKind, Drive, Fleet, SentCallback};
use crate::protocols::connector::ws::Inbound;
use crate::report::{CaseResult, Report, RunInfo};
use crate::text::Redactor;
use crate::units::format_duration;

mod awaiting;
mod broadcasts;
mod callbacks;
mod forwards;
mod liveness;
mod sessions;

use awaiting::awaiting_callback;
use broadcasts::{delivered, injection, isolated, latency};
use callbacks::{callback_answered, callback_huge, callback_no_5xx, callback_refusals, Refusal};
pub(super) use forwards::{error_due, shows_error, wire, Wire};
use forwards::{
    error_message, forward_not_repeated, forward_once, forward_schema, forward_timeout,
    forward_timeout_of, reached,
};
use sessions::{session_create, session_ids, session_revive, ws_attach};

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

/// No session call of the run got an HTTP answer (creates, the id checks, the revival): the
/// server is down, or not at the URL. Its first error.
fn server_down(d: &Drive) -> Option<String> {
    let revive = d.revive.iter().flat_map(|r| r.calls.iter());
    let mut calls = d
        .creates
        .iter()
        .chain(d.id_checks.iter().map(|(_, c, _)| c))
        .chain(revive)
        .peekable();
    calls.peek()?;
    let mut first = None;
    for c in calls {
        if c.status.is_some() {
            return None;
        }
        first = first.or(c.error.clone());
    }
    Some(first.unwrap_or_else(|| "no answer".into()))
}

/// The one wording of a server that is down: `platform.session-create`'s failure, and the
/// reason every other case is skipped.
fn down(fleet: &Fleet) -> String {
    format!("the agent server at {} is down", fleet.target())
}

/// One failure, where it is (`platform.session-create`: the server is down, with its first
/// error), and every other case a skip that says why it was not judged: the same words whether
/// the drive or the wait before it found no server.
pub fn mark_server_down(fleet: &Fleet, cases: &mut [CaseResult], error: &str) {
    let down = down(fleet);
    for c in cases {
        if c.id == "platform.session-create" {
            c.status = crate::report::Status::Fail;
            c.message = format!(
                "{down}: no session call was answered ({}): is it running, and is connector.url (or --platform-url) its address?",
                crate::text::shorten(error, 120)
            );
        } else {
            c.skip(format!(
                "not judged: {down} (see platform.session-create); a server answering at {} exercises this case",
                fleet.target()
            ));
        }
    }
}

/// Runs the fleet against the server and judges it.
pub async fn run(fleet: &Fleet, served: super::Served, strict: bool, seed: u64) -> Report {
    // Without a recording, nothing is written and nothing can fail to be.
    run_recording(fleet, served, strict, seed, None).await.0
}

/// [`run`], what the run saw recorded to `record` ([`super::record`]): [`rejudge`] gives its
/// verdicts again.
pub async fn run_recorded(
    fleet: &Fleet,
    served: super::Served,
    strict: bool,
    seed: u64,
    record: &std::path::Path,
) -> Result<Report, crate::judge::record::RecordError> {
    let (report, written) = run_recording(fleet, served, strict, seed, Some(record)).await;
    written.map(|()| report)
}

/// Judges a recording of a run of `fleet` again, with no server and no fleet: the cases its
/// report had.
pub fn rejudge(
    fleet: &Fleet,
    strict: bool,
    entries: &[crate::judge::Entry],
) -> Result<Vec<CaseResult>, crate::judge::replay::ReplayError> {
    let (drive, books) = super::record::read(entries)?;
    let info = RunInfo::start(
        "mock",
        crate::protocols::connector::NAME,
        fleet.target(),
        0,
        strict,
    );
    Ok(judge(fleet, &drive, &books, info).cases)
}

async fn run_recording(
    fleet: &Fleet,
    served: super::Served,
    strict: bool,
    seed: u64,
    record: Option<&std::path::Path>,
) -> (Report, Result<(), crate::judge::record::RecordError>) {
    let info = RunInfo::start(
        "mock",
        crate::protocols::connector::NAME,
        fleet.target(),
        seed,
        strict,
    )
    .made_by(format!(
        "mock fleet ({})",
        crate::protocols::connector::NAME
    ));
    let started = Instant::now();
    let (drive, books) = super::exercise(fleet, served).await;
    fleet.watch.at_end().await;
    let written = match record {
        Some(path) => {
            let outages = fleet.watch.outages().len();
            super::record::write(&drive, &books, outages, started, path)
        }
        None => Ok(()),
    };
    let mut report = judge(fleet, &drive, &books, info);
    // Every case is judged over the whole exchange (sessions, messages, callbacks, the wait
    // for broadcasts): that is how long its evidence took.
    let took = started.elapsed();
    for case in &mut report.cases {
        case.set_duration(took);
    }
    (report, written)
}

/// The server's cases a party between it and its agents can judge (a proxy): it sees the
/// forwards and the answers to the callbacks, not the users' side (sessions, WebSocket
/// clients, broadcasts). `slow` says which forwards the agent acknowledged late or never.
pub fn between(b: &Books, slow: &dyn Fn(&super::Forward) -> bool) -> Vec<CaseResult> {
    let mut cases = vec![
        forward_schema(b),
        forward_not_repeated(b),
        forward_timeout_of(
            b,
            slow,
            "an agent that acknowledges a forward after 5 s, or never, exercises it (or --fault NAME=slow-ack)",
        ),
        callback_answered(b),
        callback_refusals(b, EMPTY),
        callback_no_5xx(b),
    ];
    for c in &mut cases {
        c.group = "platform".into();
        // Between real parties, the proxy's faults give the server what no agent did.
        if c.id == EMPTY.id && c.status == crate::report::Status::Skip {
            c.message = "no empty or whitespace-only callback to judge: an agent that sends one, or the proxy's --fault NAME=empty-callback on a real one, exercises it".into();
        }
    }
    cases
}

/// The refusal of an empty callback.
const EMPTY: Refusal<'static> = Refusal {
    id: "platform.callback-empty",
    title: "an empty or whitespace-only callback body gets 400 (never a 5xx)",
    kinds: &[CallbackKind::Empty, CallbackKind::Whitespace],
    expected: 400,
    of: "empty or whitespace-only callbacks",
    behaviors: "empty-callback or whitespace-callback",
};

pub fn judge(fleet: &Fleet, d: &Drive, b: &Books, info: RunInfo) -> Report {
    let cut = liveness::without_the_death(fleet, b);
    let b = cut.as_ref().map_or(b, |(books, _)| books);
    let mut cases = vec![
        reached(fleet, d, b),
        session_create(d),
        session_ids(d),
        session_revive(d),
        ws_attach(fleet, d),
    ];
    let skip_forwards = b.forwards.is_empty();
    let mut forward_cases = vec![
        forward_schema(b),
        forward_once(fleet, d, b),
        forward_timeout(fleet, b),
        error_message(d, b),
        awaiting_callback(fleet, d, b),
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
        callback_refusals(b, EMPTY),
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
    if let Some(error) = server_down(d) {
        mark_server_down(fleet, &mut cases, &error);
    }
    if let Some(alive) = liveness::alive_case(fleet) {
        cases.insert(0, alive);
    }
    let mut report = info.report(cases, &Redactor::new(Vec::new()));
    if let Some((_, note)) = cut {
        let calls = liveness::calls_cut(fleet, d);
        let note = format!(
            "{note}, {}, {}",
            crate::text::count(calls as u64, "session calls"),
            crate::text::count(d.connect_cut as u64, "WebSocket handshakes")
        );
        // A case left with nothing to judge may have lost it to the death: say so beside why.
        for case in &mut report.cases {
            if case.status == crate::report::Status::Skip {
                case.message.push_str(&format!(" ({note})"));
            }
        }
        report.notes.push(note);
    }
    match (&d.detection, d.dialect) {
        (Some(found), _) => report.notes.push(format!("INFO: {}", found.said())),
        (None, Some(dialect)) if fleet.detect => report.notes.push(format!(
            "INFO: WebSocket dialect: not detected (no session was created to try it on); the run spoke {}",
            dialect.name()
        )),
        _ => {}
    }
    report.notes.push(
        "INFO: the public implementation (kcosr/assistant agent-server, protocol 5) differs from the document: hello {protocolVersion: 5, subscriptions: [{sessionId}]} and text_input {sessionId, text} instead of hello {sessionId} and user_message {text}; a failed forward's error goes to the sending connection only (type error, code external_agent_error) rather than into the chat. `ws: auto` (the default) finds its dialect; `ws: assistant-v5` in the fleet file forces it.".into(),
    );
    report
}
