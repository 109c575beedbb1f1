//! A connector fleet run recorded, and judged again from the recording with no server and no
//! fleet running: the verdicts are a function of what the run saw ([`Drive`], [`Books`]), so
//! the same record gives the same verdicts.
//!
//! Each forward the server sent an agent of the fleet, each callback an agent sent the server,
//! each user message and each session call is one [`Exchange`] (who to whom, when, the status),
//! what the rules read of it in its `context`; what the driver saw besides (each WebSocket
//! client's messages, the handshakes that failed, the dialect) is one `drive` event. Instants
//! are milliseconds from the run's start ([`crate::judge::time::based`]).
//!
//! A run whose server went down is judged with its liveness watch (which outages it saw):
//! that is not recorded yet, so such a recording is refused rather than judged otherwise.

use std::path::Path;
use std::time::Instant;

use serde_json::{json, Value};

use super::{Books, Call, Drive, Forward, Said, SentCallback};
use crate::judge::record::{RecordError, Recorder};
use crate::judge::replay::ReplayError;
use crate::judge::time::{based, ms_since};
use crate::judge::{Answer, Entry, Event, Exchange, Message, Party};

/// Writes what a run saw to `path`, its instants counted from `base`. `outages`: how many
/// times the server went down (recorded, so that a judging offline can refuse such a run).
pub fn write(
    drive: &Drive,
    books: &Books,
    outages: usize,
    base: Instant,
    path: &Path,
) -> Result<(), RecordError> {
    let mut recorder = Recorder::create(path)?;
    let mut seq = 0;
    let mut write = |mut e: Exchange, recorder: &mut Recorder| {
        seq += 1;
        e.seq = seq;
        recorder.write(&e)
    };
    based(base, || -> Result<(), RecordError> {
        for f in &books.forwards {
            write(forward(f, base), &mut recorder)?;
        }
        for c in &books.callbacks {
            write(callback(c, base), &mut recorder)?;
        }
        for s in &books.said {
            write(said(s, base), &mut recorder)?;
        }
        for c in &drive.creates {
            write(call(c, "create", Value::Null), &mut recorder)?;
        }
        for (what, c, refused) in &drive.id_checks {
            let check = json!({"what": what, "refused": refused});
            write(call(c, "id-check", check), &mut recorder)?;
        }
        let end = books
            .forwards
            .iter()
            .map(|f| ms_since(base, f.at))
            .fold(0.0, f64::max);
        recorder.write_event(&Event {
            event: "drive".into(),
            at_ms: end,
            context: json!({
                "drive": drive_without_calls(drive)?,
                "dropped": books.dropped,
                "outages": outages,
            }),
        })
    })?;
    recorder.finish()
}

/// The driver's view, its session calls left out (each is an exchange of its own).
fn drive_without_calls(drive: &Drive) -> Result<Value, RecordError> {
    let mut value = serde_json::to_value(drive).map_err(|e| RecordError::Io {
        path: "(the driver's view)".into(),
        source: std::io::Error::other(e),
    })?;
    if let Some(members) = value.as_object_mut() {
        members.remove("creates");
        members.remove("id_checks");
    }
    Ok(value)
}

fn exchange(from: Party, to: Party, endpoint: &str, at: Instant, base: Instant) -> Exchange {
    Exchange {
        seq: 0,
        from,
        to,
        method: Some("POST".into()),
        endpoint: endpoint.into(),
        case: None,
        request: Message::default(),
        answer: Answer::Cut,
        sent_ms: ms_since(base, at),
        answered_ms: None,
        context: Value::Null,
    }
}

fn status_answer(status: Option<u16>, error: &Option<String>) -> Answer {
    match (status, error) {
        (Some(s), _) => Answer::Delivered {
            status: Some(s),
            message: Message::default(),
        },
        (None, Some(what)) => Answer::Failed { what: what.clone() },
        (None, None) => Answer::TimedOut,
    }
}

fn forward(f: &Forward, base: Instant) -> Exchange {
    let mut e = exchange(
        Party::Server,
        Party::Agent(f.agent.clone()),
        &format!("/agents/{}/input", f.agent),
        f.at,
        base,
    );
    e.request.text = f.text.clone();
    e.answer = status_answer(Some(f.status), &None);
    e.answered_ms = f.ack.map(|a| e.sent_ms + crate::judge::time::ms(a.total));
    e.context = json!({ "forward": f });
    e
}

fn callback(c: &SentCallback, base: Instant) -> Exchange {
    let mut e = exchange(
        Party::Agent(c.agent.clone()),
        Party::Server,
        "callback",
        c.sent,
        base,
    );
    e.answer = status_answer(c.status, &c.error);
    e.answered_ms = c.answered.map(|at| ms_since(base, at));
    e.context = json!({ "callback": c });
    e
}

fn said(s: &Said, base: Instant) -> Exchange {
    let mut e = exchange(
        Party::Client(s.session.clone()),
        Party::Server,
        "user_message",
        s.at,
        base,
    );
    e.method = None;
    e.request.text = Some(s.text.clone());
    e.context = json!({ "said": s });
    e
}

fn call(c: &Call, kind: &str, check: Value) -> Exchange {
    let mut e = Exchange {
        seq: 0,
        from: Party::Client("fleet".into()),
        to: Party::Server,
        method: None,
        endpoint: c.what.clone(),
        case: None,
        request: Message::default(),
        answer: status_answer(c.status, &c.error),
        sent_ms: 0.0,
        answered_ms: None,
        context: json!({ "call": c, "kind": kind }),
    };
    if !check.is_null() {
        e.context["check"] = check;
    }
    e
}

/// What a recording holds: the driver's view and the books, their instants rebuilt from a base
/// of now.
pub fn read(entries: &[Entry]) -> Result<(Drive, Books), ReplayError> {
    based(Instant::now(), || read_based(entries))
}

fn read_based(entries: &[Entry]) -> Result<(Drive, Books), ReplayError> {
    let mut books = Books::default();
    let (mut creates, mut id_checks) = (Vec::new(), Vec::new());
    let mut drive: Option<Drive> = None;
    for entry in entries {
        match entry {
            Entry::Exchange(e) => {
                let wrong = |what: String| ReplayError::Exchange { seq: e.seq, what };
                let c = &e.context;
                let take = |key: &str| -> Result<Value, ReplayError> { Ok(c[key].clone()) };
                let parse = |key: &str| {
                    take(key).and_then(|v| {
                        if v.is_null() {
                            return Err(wrong(format!("its context has no {key}")));
                        }
                        Ok(v)
                    })
                };
                let bad = |key: &str, err: serde_json::Error| wrong(format!("its {key}: {err}"));
                if c.get("forward").is_some() {
                    let f =
                        serde_json::from_value(parse("forward")?).map_err(|e| bad("forward", e))?;
                    books.forwards.push(f);
                } else if c.get("callback").is_some() {
                    let cb = serde_json::from_value(parse("callback")?)
                        .map_err(|e| bad("callback", e))?;
                    books.callbacks.push(cb);
                } else if c.get("said").is_some() {
                    let s = serde_json::from_value(parse("said")?).map_err(|e| bad("said", e))?;
                    books.said.push(s);
                } else if c.get("call").is_some() {
                    let call: Call =
                        serde_json::from_value(parse("call")?).map_err(|e| bad("call", e))?;
                    match c["check"].as_object() {
                        Some(check) => id_checks.push((
                            check["what"].as_str().unwrap_or_default().to_string(),
                            call,
                            check["refused"].as_bool().unwrap_or_default(),
                        )),
                        None => creates.push(call),
                    }
                } else {
                    return Err(wrong("it is none of a connector fleet's exchanges".into()));
                }
            }
            Entry::Event(e) if e.event == "drive" => {
                let wrong = |what: String| ReplayError::Event {
                    event: e.event.clone(),
                    what,
                };
                if e.context["outages"].as_u64().unwrap_or(0) > 0 {
                    return Err(wrong(
                        "the server went down during the run: its liveness is not recorded, so the run cannot be judged again".into(),
                    ));
                }
                books.dropped = e.context["dropped"].as_u64().unwrap_or(0);
                let mut value = e.context["drive"].clone();
                let Some(members) = value.as_object_mut() else {
                    return Err(wrong("its drive is not an object".into()));
                };
                members.insert("creates".into(), json!([]));
                members.insert("id_checks".into(), json!([]));
                drive = Some(
                    serde_json::from_value(value)
                        .map_err(|err| wrong(format!("its drive: {err}")))?,
                );
            }
            Entry::Event(_) => {}
        }
    }
    let mut drive = drive.ok_or_else(|| ReplayError::Missing("`drive` event".into()))?;
    drive.creates = creates;
    drive.id_checks = id_checks;
    Ok((drive, books))
}

/// `#[serde(with)]` for a revived session's callback: its status, or what happened instead.
pub mod revived {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use crate::protocols::connector::upload::Unanswered;
    use crate::transport::liveness::Reply;

    #[derive(Serialize, Deserialize)]
    #[serde(rename_all = "kebab-case")]
    enum Callback {
        Answered(u16),
        Unanswered {
            message: String,
            cut_mid_body: bool,
            reply: String,
        },
    }

    const REPLIES: [(Reply, &str); 4] = [
        (Reply::Answered, "answered"),
        (Reply::Refused, "refused"),
        (Reply::Broken, "broken"),
        (Reply::Silent, "silent"),
    ];

    type Field = Option<Result<u16, Unanswered>>;

    pub fn serialize<S: Serializer>(callback: &Field, s: S) -> Result<S::Ok, S::Error> {
        let mirror = callback.as_ref().map(|c| match c {
            Ok(status) => Callback::Answered(*status),
            Err(u) => Callback::Unanswered {
                message: u.message.clone(),
                cut_mid_body: u.cut_mid_body,
                reply: REPLIES
                    .iter()
                    .find(|(r, _)| *r == u.reply)
                    .map_or("answered", |(_, w)| w)
                    .to_string(),
            },
        });
        mirror.serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Field, D::Error> {
        let mirror = Option::<Callback>::deserialize(d)?;
        Ok(mirror.map(|c| match c {
            Callback::Answered(status) => Ok(status),
            Callback::Unanswered {
                message,
                cut_mid_body,
                reply,
            } => Err(Unanswered {
                message,
                cut_mid_body,
                reply: REPLIES
                    .iter()
                    .find(|(_, w)| *w == reply)
                    .map_or(Reply::Answered, |(r, _)| *r),
            }),
        }))
    }
}
