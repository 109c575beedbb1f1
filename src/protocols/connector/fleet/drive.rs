//! Driving the agent server as its users would: sessions created through the create endpoint,
//! WebSocket clients attached, user messages sent; a deleted session created again; the session
//! ids the create endpoint must refuse.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::json;

use crate::mock::http1::Fault;
use crate::protocols::connector::model::{self, FORWARD_TIMEOUT};
use crate::protocols::connector::ws;
use crate::transport::http::BaseUrl;
use crate::transport::liveness::Reply;

use super::behavior::Behavior;
use super::books::{Books, Call, Said, CALLBACK_DEADLINE};
use super::file::Fleet;
use super::inputs::Served;
use super::session_api::session_call;

/// What the driver saw besides the inputs' books.
#[derive(Default, serde::Serialize, serde::Deserialize)]
pub struct Drive {
    pub creates: Vec<Call>,
    /// The session-id probes of the create endpoint: (what, call, expected to be refused).
    pub id_checks: Vec<(String, Call, bool)>,
    /// Per session, its clients' messages (client 0 is the one that speaks).
    pub seen: BTreeMap<String, Vec<Vec<ws::Inbound>>>,
    /// Clients that could not connect, and why.
    pub connect_errors: Vec<String>,
    /// Clients whose handshake the server's death cut (not judged: see `platform.alive`).
    pub connect_cut: usize,
    /// Clients that got no session_ready.
    pub not_ready: Vec<String>,
    pub clients: usize,
    /// A session created, deleted and created again, then called back.
    pub revive: Option<Revive>,
    /// The WebSocket dialect the run was driven with.
    pub dialect: Option<ws::Dialect>,
    /// With `ws: auto`, the dialects tried (None: not tried, no session was created).
    pub detection: Option<Detection>,
}

/// The dialects `ws: auto` tried on one session, in order, and whether each was told
/// session_ready.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Detection {
    pub session: String,
    pub tried: Vec<(ws::Dialect, bool)>,
}

impl Detection {
    pub fn answered(&self) -> Option<ws::Dialect> {
        self.tried.iter().find(|(_, ok)| *ok).map(|(d, _)| *d)
    }

    /// What it found, in words (the console line and the report's note).
    pub fn said(&self) -> String {
        let ready = crate::units::format_duration(READY);
        let unanswered = |d: ws::Dialect| {
            format!(
                "{} ({}) got no session_ready within {ready}",
                d.name(),
                d.hello_words()
            )
        };
        match self.answered() {
            Some(d) => {
                let before: Vec<String> = self
                    .tried
                    .iter()
                    .take_while(|(_, ok)| !ok)
                    .map(|(d, _)| unanswered(*d))
                    .collect();
                let mut line = format!(
                    "WebSocket dialect: {} ({}) answered on {}; the run speaks it",
                    d.name(),
                    d.hello_words(),
                    self.session
                );
                if !before.is_empty() {
                    line.push_str(&format!(
                        " ({}; `ws: {}` in the fleet file skips the try)",
                        before.join(", "),
                        d.name()
                    ));
                }
                line
            }
            None => format!(
                "WebSocket dialect: neither answered on {}: {} (see platform.ws-attach; the fleet file's `ws:` forces one)",
                self.session,
                self.tried
                    .iter()
                    .map(|(d, _)| unanswered(*d))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }
}

/// Whether a client of `session` speaking `dialect` is told session_ready (or, as protocol 5
/// says it, subscribed).
async fn answers(url: &str, session: &str, dialect: ws::Dialect) -> bool {
    let Ok(client) = ws::Client::connect(url, session, dialect, READY).await else {
        return false;
    };
    let ok = client.wait_for(READY, is_ready).await;
    client.close().await;
    ok
}

fn is_ready(m: &ws::Inbound) -> bool {
    m.kind == "session_ready" || m.kind == "subscribed"
}

/// `ws: auto`: tries the fleet's first dialect on `session`, then the other (a fresh connection
/// each: a server takes one hello per connection).
async fn detect(fleet: &Fleet, session: &str) -> Detection {
    let url = ws::ws_url(&fleet.server);
    let mut tried = Vec::new();
    for dialect in [fleet.dialect, fleet.dialect.other()] {
        let ok = answers(&url, session, dialect).await;
        tried.push((dialect, ok));
        if ok {
            break;
        }
    }
    Detection {
        session: session.to_string(),
        tried,
    }
}

/// What became of a deleted session created again (the document: "If session is deleted:
/// revive (idempotent attach)"), and of a callback to it.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct Revive {
    pub session: String,
    /// create, delete, create again: as far as they went.
    pub calls: Vec<Call>,
    /// Why its WebSocket client was not attached, if it was not.
    pub not_attached: Option<String>,
    /// The callback to it: its status, or what happened instead.
    #[serde(with = "super::record::revived")]
    pub callback: Option<Result<u16, crate::protocols::connector::upload::Unanswered>>,
    /// How many times its client was shown the callback's text.
    pub broadcasts: usize,
}

/// Runs the fleet against the server (its verdicts: [`super::judge::run`]): what the
/// driver saw, and the inputs' books.
pub async fn exercise(fleet: &Fleet, served: Served) -> (Drive, Books) {
    let drive = drive(fleet, &served).await;
    // Callbacks still on their way get a moment, then the inputs stop.
    served.inputs.tracker.close();
    let _ = tokio::time::timeout(Duration::from_secs(15), served.inputs.tracker.wait()).await;
    served.running.stop().await;
    let books = served
        .inputs
        .books
        .lock()
        .map(|mut b| std::mem::take(&mut *b))
        .unwrap_or_default();
    (drive, books)
}

/// How a WebSocket handshake ended, as far as the server's presence goes: refused or cut
/// (the connection's words), no handshake in time (silent), or refused by an HTTP answer (the
/// server was there).
fn handshake_reply(result: &Result<ws::Client, ws::WsError>) -> Reply {
    match result {
        Ok(_) => Reply::Answered,
        Err(ws::WsError::NoHandshake { .. }) => Reply::Silent,
        Err(ws::WsError::Handshake { cause, .. }) => {
            let cause = cause.to_ascii_lowercase();
            if cause.contains("refused") {
                Reply::Refused
            } else if ["reset", "closed", "broken pipe", "eof"]
                .iter()
                .any(|w| cause.contains(w))
            {
                Reply::Broken
            } else {
                Reply::Answered
            }
        }
        Err(ws::WsError::Send { .. }) => Reply::Broken,
    }
}

/// WebSocket handshakes in flight at once.
pub(super) const CONNECTS_AT_ONCE: usize = 256;

/// How long a session's clients may take to be told `session_ready`.
pub(super) const READY: Duration = Duration::from_secs(5);

pub(super) async fn drive(fleet: &Fleet, served: &Served) -> Drive {
    let mut d = Drive {
        id_checks: session_id_checks(fleet).await,
        ..Drive::default()
    };
    let mut sessions = Vec::new();
    for agent in &fleet.agents {
        for s in &agent.sessions {
            sessions.push((agent.clone(), s.clone()));
        }
    }
    let creates = futures::future::join_all(sessions.iter().map(|(agent, s)| {
        session_call(
            &fleet.watch,
            &fleet.server,
            "create",
            s,
            json!({"agentId": agent.agent_id, "sessionId": s}),
        )
    }))
    .await;
    d.creates = creates;
    let first_created = d
        .creates
        .iter()
        .find(|c| c.status.is_some_and(|s| (200..300).contains(&s)))
        .map(|c| c.session.clone());
    if let (true, Some(session)) = (fleet.detect, first_created) {
        let found = detect(fleet, &session).await;
        crate::outln!("{}", found.said());
        d.detection = Some(found);
    }
    let dialect = d
        .detection
        .as_ref()
        .and_then(Detection::answered)
        .unwrap_or(fleet.dialect);
    d.dialect = Some(dialect);
    d.revive = revive(fleet, dialect).await;
    let clients = connect(fleet, &sessions, dialect, &mut d).await;
    say(fleet, served, &clients).await;
    await_forwards(fleet, served, &d, &clients).await;
    // Broadcasts come `settle` after the last callback; a failed forward's error message is
    // judged within its margin, so the clients stay until it came or the margin passed.
    tokio::time::sleep(fleet.settle.max(Duration::from_secs(1))).await;
    errors_awaited(served, &clients).await;
    for (s, cs) in clients {
        let mut all = Vec::new();
        for c in cs {
            all.push(c.messages());
            c.close().await;
        }
        d.seen.insert(s, all);
    }
    d
}

/// Attaches `fleet.clients` WebSocket clients to each session and waits for each to be told
/// session_ready: the clients by session; those that failed, and those never ready, in `d`.
async fn connect(
    fleet: &Fleet,
    sessions: &[(super::FleetAgent, String)],
    dialect: ws::Dialect,
    d: &mut Drive,
) -> BTreeMap<String, Vec<ws::Client>> {
    let url = ws::ws_url(&fleet.server);
    let jobs: Vec<String> = sessions
        .iter()
        .flat_map(|(_, s)| std::iter::repeat_n(s.clone(), fleet.clients))
        .collect();
    let mut clients: BTreeMap<String, Vec<ws::Client>> = BTreeMap::new();
    // A few hundred handshakes at a time: thousands at once overflow a server's accept backlog.
    let connected: Vec<(String, Result<ws::Client, ws::WsError>, bool)> =
        futures::stream::iter(jobs.into_iter().map(|s| {
            let url = url.clone();
            let watch = &fleet.watch;
            async move {
                const WHAT: &str = "a WebSocket handshake";
                let sent = watch.sent(WHAT);
                let c = ws::Client::connect(&url, &s, dialect, READY).await;
                let reply = handshake_reply(&c);
                let ended = watch.ended(WHAT, sent, reply).await;
                let cut = reply.broke() && watch.cut(ended, "platform.alive").is_some();
                (s, c, cut)
            }
        }))
        .buffer_unordered(CONNECTS_AT_ONCE)
        .collect()
        .await;
    for (s, c, cut) in connected {
        match c {
            Ok(c) => clients.entry(s).or_default().push(c),
            Err(_) if cut => d.connect_cut += 1,
            Err(e) => d.connect_errors.push(e.to_string()),
        }
    }
    d.clients = clients.values().map(Vec::len).sum();
    let ready = clients.iter().flat_map(|(s, cs)| {
        cs.iter().enumerate().map(move |(i, c)| async move {
            let ok = c.wait_for(READY, is_ready).await;
            (!ok).then(|| format!("{s} client {i}"))
        })
    });
    d.not_ready = futures::future::join_all(ready)
        .await
        .into_iter()
        .flatten()
        .collect();
    clients
}

/// The user messages, a round at a time: every session's first client speaks.
async fn say(fleet: &Fleet, served: &Served, clients: &BTreeMap<String, Vec<ws::Client>>) {
    let silent: std::collections::BTreeSet<&str> = fleet
        .agents
        .iter()
        .filter(|a| a.behavior == Behavior::NeverCallback)
        .flat_map(|a| a.sessions.iter().map(String::as_str))
        .collect();
    for round in 0..fleet.messages {
        // Never-callback sessions' messages of this round, whose acknowledgement is awaited.
        let mut unanswered = Vec::new();
        for (s, cs) in clients {
            let text = format!("Hello from agent-tck, message {} to {s}", round + 1);
            if let Some(c) = cs.first() {
                if c.say(&text).await.is_ok() {
                    if silent.contains(s.as_str()) {
                        unanswered.push((s.clone(), text.clone()));
                    }
                    if let Ok(mut b) = served.inputs.books.lock() {
                        b.said.push(Said {
                            session: s.clone(),
                            text,
                            at: Instant::now(),
                        });
                    }
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        if round + 1 < fleet.messages {
            acknowledged(served, &unanswered).await;
        }
    }
}

/// Waits for the forwards to end (a slow ack up to its own delay), the callbacks to be
/// answered — bounded in all.
async fn await_forwards(
    fleet: &Fleet,
    served: &Served,
    d: &Drive,
    clients: &BTreeMap<String, Vec<ws::Client>>,
) {
    let slowest = fleet
        .agents
        .iter()
        .map(|a| match a.behavior {
            Behavior::SlowAck(d) => d,
            Behavior::Fault(Fault::Hang) => FORWARD_TIMEOUT * 2,
            _ => Duration::ZERO,
        })
        .max()
        .unwrap_or_default();
    let until = Instant::now()
        + (FORWARD_TIMEOUT + slowest).min(Duration::from_secs(60))
        + fleet.reply_after;
    // A forward per message is awaited too (a busy server may not have sent it yet): one per
    // message of a created session, one per session whose agent deletes it after the first.
    let created: std::collections::BTreeSet<&str> = d
        .creates
        .iter()
        .filter(|c| c.status.is_some_and(|s| (200..300).contains(&s)))
        .map(|c| c.session.as_str())
        .collect();
    let expected: usize = fleet
        .agents
        .iter()
        .flat_map(|a| a.sessions.iter().map(move |s| (a, s)))
        .filter(|(_, s)| created.contains(s.as_str()) && clients.contains_key(s.as_str()))
        .map(|(a, _)| {
            if a.behavior == Behavior::DeletedSession {
                1
            } else {
                fleet.messages
            }
        })
        .sum();
    loop {
        let busy = served
            .inputs
            .books
            .lock()
            .map(|b| b.forwards.len() < expected || b.forwards.iter().any(|f| f.ack.is_none()))
            .unwrap_or(false)
            || !served.inputs.tracker.is_empty();
        if !busy || Instant::now() >= until {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Waits until the first client of each session whose forward failed was shown an error after
/// it, or until the error was due ([`super::judge::error_due`]): on a busy machine an error may
/// come after `settle`, and closing the clients then would fail a server that was in time.
async fn errors_awaited(served: &Served, clients: &BTreeMap<String, Vec<ws::Client>>) {
    use super::judge::{error_due, shows_error, wire, Wire};
    loop {
        let waiting = served.inputs.books.lock().is_ok_and(|b| {
            b.forwards.iter().any(|f| {
                let Some(session) = f.session.as_deref() else {
                    return false;
                };
                let Some(sender) = clients.get(session).and_then(|cs| cs.first()) else {
                    return false;
                };
                wire(f) == Wire::Failed
                    && Instant::now() < error_due(f)
                    && !sender
                        .messages()
                        .iter()
                        .any(|m| m.at >= f.at && shows_error(m, &b))
            })
        });
        if !waiting {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Waits (at most the forward timeout and a margin) until each of `messages` (session, text) was
/// forwarded and acknowledged: the next message on a never-callback session is then one on a
/// session awaiting a callback, whatever the load (what `platform.awaiting-callback` judges).
async fn acknowledged(served: &Served, messages: &[(String, String)]) {
    let until = Instant::now() + FORWARD_TIMEOUT + Duration::from_secs(2);
    while Instant::now() < until {
        let done = served.inputs.books.lock().is_ok_and(|b| {
            messages.iter().all(|(s, text)| {
                b.forwards
                    .iter()
                    .any(|f| f.ack.is_some() && f.carries(s, text).is_some())
            })
        });
        if done {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Creates a session for the first agent, deletes it, creates it again, attaches a client and
/// calls back to it as its agent would (at the document's path on the server), as far as each
/// step succeeds.
pub(super) async fn revive(fleet: &Fleet, dialect: ws::Dialect) -> Option<Revive> {
    let first = fleet.agents.first()?;
    let session = format!("{}-revive", first.sessions[0]);
    let mut r = Revive {
        session: session.clone(),
        ..Revive::default()
    };
    let create = json!({"agentId": first.agent_id, "sessionId": session});
    for (what, body) in [
        ("create", create.clone()),
        ("delete", json!({"sessionId": session})),
        ("create", create),
    ] {
        let call = session_call(&fleet.watch, &fleet.server, what, &session, body).await;
        let ok = call.status.is_some_and(|s| (200..300).contains(&s));
        r.calls.push(call);
        if !ok {
            return Some(r);
        }
    }
    let client =
        match ws::Client::connect(&ws::ws_url(&fleet.server), &session, dialect, READY).await {
            Ok(c) => c,
            Err(e) => {
                r.not_attached = Some(e.to_string());
                return Some(r);
            }
        };
    if !client.wait_for(READY, is_ready).await {
        r.not_attached = Some(format!(
            "no session_ready within {}",
            crate::units::format_duration(READY)
        ));
        client.close().await;
        return Some(r);
    }
    let marker = format!("(tck-revive-{session})");
    // At the server the fleet reaches (not the callback base, which may name it otherwise).
    let path = format!("{}{}", fleet.server.prefix, model::callback_path(&session));
    let base = BaseUrl {
        prefix: String::new(),
        ..fleet.server.clone()
    };
    let text = format!("Revived, thank you.\n\n{marker}");
    r.callback = Some(
        crate::protocols::connector::upload::post(&base, &path, text.into(), CALLBACK_DEADLINE)
            .await,
    );
    let shown =
        |m: &ws::Inbound| m.is_text() && m.text.as_deref().is_some_and(|t| t.contains(&marker));
    if matches!(r.callback, Some(Ok(200..=299))) && client.wait_for(READY, shown).await {
        // A second copy would follow the first closely.
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    r.broadcasts = client.messages().iter().filter(|m| shown(m)).count();
    client.close().await;
    Some(r)
}

/// The session ids the create endpoint must refuse, and the attach rules: (what, call, refused?).
pub(super) async fn session_id_checks(fleet: &Fleet) -> Vec<(String, Call, bool)> {
    let Some(first) = fleet.agents.first() else {
        return Vec::new();
    };
    let mut checks = Vec::new();
    let bad = [
        ("an empty id", String::new()),
        ("a 129-character id", "x".repeat(129)),
        ("`../x`", "../x".to_string()),
        ("an id with a space", "tck bad id".to_string()),
        ("a non-ASCII id", "tck-é".to_string()),
    ];
    for (what, id) in bad {
        let call = session_call(
            &fleet.watch,
            &fleet.server,
            "create",
            &id,
            json!({"agentId": first.agent_id, "sessionId": id}),
        )
        .await;
        checks.push((what.to_string(), call, true));
    }
    // The same id twice with the same agent attaches; with another agent it is refused.
    let probe = format!("{}-attach", first.sessions[0]);
    for n in 0..2 {
        let call = session_call(
            &fleet.watch,
            &fleet.server,
            "create",
            &probe,
            json!({"agentId": first.agent_id, "sessionId": probe}),
        )
        .await;
        let what = if n == 0 {
            "a new id"
        } else {
            "the same id again, same agent (attach)"
        };
        checks.push((what.to_string(), call, false));
    }
    if let Some(other) = fleet.agents.iter().find(|a| a.agent_id != first.agent_id) {
        let call = session_call(
            &fleet.watch,
            &fleet.server,
            "create",
            &probe,
            json!({"agentId": other.agent_id, "sessionId": probe}),
        )
        .await;
        checks.push(("the same id for another agent".to_string(), call, true));
    }
    checks
}
