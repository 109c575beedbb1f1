//! The fleet's exchanges with the Librarian, as the rules judge them: each client's request and
//! the server's answer (an [`Exchange`]), and what each tells ([`Outcome::of`]) — the same
//! function live and from a recording, so that judging a run's recording again gives its
//! verdicts.
//!
//! Beyond the wire, an exchange's `context` holds what the transport saw and a recording
//! cannot rebuild: when the connection broke (`broke_at_ms`, for liveness), whether the
//! server's death cut it (`cut`), and a 429's come-back header as it was spelled.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::{Client, Fleet, Outcome, Unserved};
use crate::judge::record::{RecordError, Recorder};
use crate::judge::replay::ReplayError;
use crate::judge::time::{duration, instant, ms, ms_since};
use crate::judge::{Answer, Entry, Event, Exchange, Message, Party};
use crate::protocols::librarian::answers::asked_as;
use crate::protocols::librarian::model;
use crate::report::CaseResult;

/// The `check` of the GET /agent/capabilities before the clients run, and after.
pub const BEFORE: &str = "capabilities-before";
pub const AFTER: &str = "capabilities-after";

/// What a run gathered: every exchange, and what the server's liveness said.
pub struct Ran {
    /// The instant the exchanges' offsets count from.
    pub base: Instant,
    pub before: Exchange,
    /// Each client's exchanges, in the order it sent them (the fleet file's order of clients).
    pub clients: Vec<Vec<Exchange>>,
    pub after: Option<Exchange>,
    /// The alive case, when the server went down, and why that leaves the after-check
    /// unjudged.
    pub alive: Option<(CaseResult, String)>,
}

/// `(when sent, when answered, the run's start)`.
type Times = (Instant, Instant, Instant);

fn exchange(who: &str, method: &str, endpoint: &str, request: Message, times: Times) -> Exchange {
    let (sent, answered, base) = times;
    Exchange {
        seq: 0,
        from: Party::Client(who.to_string()),
        to: Party::Server,
        method: Some(method.into()),
        endpoint: endpoint.into(),
        case: None,
        request,
        answer: Answer::Cut,
        sent_ms: ms_since(base, sent),
        answered_ms: Some(ms_since(base, answered)),
        context: json!({}),
    }
}

fn delivered(status: u16, body: &[u8], headers: &[(String, String)]) -> Answer {
    Answer::Delivered {
        status: Some(status),
        message: Message::masked(headers.iter().map(|(n, v)| (n.as_str(), v.as_str())), body),
    }
}

/// A client's POST /agent/request and what came of it.
pub fn of_request(
    who: &str,
    request: Message,
    result: Result<super::HttpAnswer, String>,
    times: Times,
    broke_at: Option<Duration>,
) -> Exchange {
    let mut e = exchange(who, "POST", "/agent/request", request, times);
    match result {
        Ok((status, body, headers)) => {
            if status == 429 {
                e.context["come_back"] =
                    json!(model::says_when_to_return(&headers).map(|(n, v)| format!("{n}: {v}")));
            }
            e.answer = delivered(status, &body, &headers);
        }
        Err(what) => e.answer = Answer::Failed { what },
    }
    if let Some(at) = broke_at {
        e.context["broke_at_ms"] = json!(ms(at));
    }
    e
}

/// A GET /agent/capabilities (`check`: [`BEFORE`] or [`AFTER`]) and what came of it.
pub fn of_capabilities(
    who: &str,
    check: &str,
    result: Result<super::HttpAnswer, Unserved>,
    times: Times,
) -> Exchange {
    let mut e = exchange(who, "GET", "/agent/capabilities", Message::default(), times);
    e.context["check"] = json!(check);
    match result {
        Ok((status, body, headers)) => e.answer = delivered(status, &body, &headers),
        Err(Unserved::Down(what)) => {
            e.context["down"] = json!(true);
            e.answer = Answer::Failed { what };
        }
        Err(Unserved::Other(what)) => e.answer = Answer::Failed { what },
    }
    e
}

/// What a GET /agent/capabilities says of the server: 200, or what came instead.
pub fn unserved(e: &Exchange) -> Result<(), Unserved> {
    match &e.answer {
        Answer::Delivered {
            status: Some(200), ..
        } => Ok(()),
        Answer::Delivered {
            status: Some(s), ..
        } => Err(Unserved::Other(format!("answered {s}"))),
        Answer::Failed { what } if e.context["down"] == json!(true) => {
            Err(Unserved::Down(what.clone()))
        }
        Answer::Failed { what } => Err(Unserved::Other(what.clone())),
        _ => Err(Unserved::Other("no answer".into())),
    }
}

/// Marks the exchange the server's death cut (`cut_at`: whether a break at that moment of the
/// run is one): it is no answer of the server's, and is not judged.
pub fn mark_cut(e: &mut Exchange, cut_at: impl Fn(Duration) -> bool) {
    if broke_at(e).is_some_and(cut_at) {
        e.context["cut"] = json!(true);
    }
}

fn broke_at(e: &Exchange) -> Option<Duration> {
    e.context["broke_at_ms"].as_f64().map(duration)
}

impl Outcome {
    /// What exchange `e` of client `c` tells, its instants rebuilt from `base`.
    pub fn of(e: &Exchange, c: &Client, base: Instant) -> Outcome {
        let asked = serde_json::from_slice::<Value>(&e.request.body()).ok();
        let sent = instant(base, e.sent_ms);
        let elapsed =
            instant(base, e.answered_ms.unwrap_or(e.sent_ms)).saturating_duration_since(sent);
        let mut o = Outcome {
            permitted: asked.as_ref().and_then(|a| c.permits.allow(a)),
            status: None,
            decision: None,
            elapsed,
            error: None,
            sent,
            judged: None,
            come_back: None,
        };
        match &e.answer {
            Answer::Delivered {
                status: Some(status),
                message,
            } => {
                let status = *status;
                let json = serde_json::from_slice::<Value>(&message.body()).ok();
                // Every answer is judged as the probe judges it, against what was asked.
                o.judged = model::judge_answer(asked.as_ref(), status, json.as_ref())
                    .map(|j| (asked_as(asked.as_ref()), j));
                o.come_back =
                    (status == 429).then(|| e.context["come_back"].as_str().map(str::to_string));
                o.decision =
                    json.and_then(|v| v.get("status").and_then(Value::as_str).map(str::to_string));
                o.status = Some(status);
            }
            Answer::Failed { what } => o.error = Some(what.clone()),
            Answer::Delivered { status: None, .. } | Answer::TimedOut | Answer::Cut => {
                o.error = Some("no answer in time".into())
            }
        }
        o
    }
}

/// Each client's outcomes, and how many exchanges the server's death cut (not judged).
pub fn outcomes(fleet: &Fleet, ran: &Ran) -> (Vec<Vec<Outcome>>, usize) {
    let mut cut = 0;
    let results = fleet
        .clients
        .iter()
        .zip(&ran.clients)
        .map(|(c, exchanges)| {
            exchanges
                .iter()
                .filter(|e| {
                    let judged = e.context["cut"] != json!(true);
                    cut += usize::from(!judged);
                    judged
                })
                .map(|e| Outcome::of(e, c, ran.base))
                .collect()
        })
        .collect();
    (results, cut)
}

/// Writes what a run gathered to `path`: the exchanges in the order they were sent, numbered
/// so; the liveness's verdict, when the server went down, as an `alive` event.
pub fn write(ran: &Ran, path: &Path) -> Result<(), RecordError> {
    let mut all: Vec<&Exchange> = std::iter::once(&ran.before)
        .chain(ran.clients.iter().flatten())
        .chain(&ran.after)
        .collect();
    // Stable: a client's requests sent at one instant keep their order.
    all.sort_by(|a, b| a.sent_ms.total_cmp(&b.sent_ms));
    let mut recorder = Recorder::create(path)?;
    for (n, e) in all.into_iter().enumerate() {
        let mut e = e.clone();
        e.seq = n as u64 + 1;
        recorder.write(&e)?;
    }
    if let Some((case, why)) = &ran.alive {
        let at_ms = ran
            .clients
            .iter()
            .flatten()
            .filter_map(|e| e.answered_ms)
            .fold(0.0, f64::max);
        recorder.write_event(&Event {
            event: "alive".into(),
            at_ms,
            context: json!({"case": case, "why": why}),
        })?;
    }
    recorder.finish()
}

/// What a recording of a run of `fleet` gathered.
pub fn read(fleet: &Fleet, entries: &[Entry]) -> Result<Ran, ReplayError> {
    let (mut before, mut after, mut alive) = (None, None, None);
    let mut clients: Vec<Vec<Exchange>> = vec![Vec::new(); fleet.clients.len()];
    for entry in entries {
        match entry {
            Entry::Exchange(e) => match e.context["check"].as_str() {
                Some(BEFORE) => before = Some(e.clone()),
                Some(AFTER) => after = Some(e.clone()),
                _ => {
                    let Party::Client(who) = &e.from else {
                        return Err(ReplayError::Exchange {
                            seq: e.seq,
                            what: "it is not from a client of the fleet".into(),
                        });
                    };
                    let i = fleet
                        .clients
                        .iter()
                        .position(|c| &c.name == who)
                        .ok_or_else(|| ReplayError::Exchange {
                            seq: e.seq,
                            what: format!("its client {who:?} is not one of the fleet file's"),
                        })?;
                    clients[i].push(e.clone());
                }
            },
            Entry::Event(e) if e.event == "alive" => {
                let case = serde_json::from_value(e.context["case"].clone()).map_err(|err| {
                    ReplayError::Event {
                        event: e.event.clone(),
                        what: format!("its case: {err}"),
                    }
                })?;
                let why = e.context["why"].as_str().unwrap_or_default().to_string();
                alive = Some((case, why));
            }
            Entry::Event(_) => {}
        }
    }
    for exchanges in &mut clients {
        exchanges.sort_by_key(|e| e.seq);
    }
    Ok(Ran {
        base: Instant::now(),
        before: before.ok_or_else(|| {
            ReplayError::Missing(format!(
                "GET /agent/capabilities before the fleet ({BEFORE})"
            ))
        })?,
        clients,
        after,
        alive,
    })
}
