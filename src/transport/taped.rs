//! How the transports' results go on tape and come back from it ([`crate::judge::tape`]): an
//! HTTP response or error, a line answer or error, and what a silent agent wrote at the end of
//! its input (whether a peer was there goes on tape in `liveness`). What an [`Answer`] alone
//! does not say (a typed error, a body cut at the cap, a line's number) rides in the exchange's
//! context, so a replay gives the very value the live transport gave.

use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{json, Value};

use super::http::{self, Response};
use super::lines::{AfterSilence, LineAnswer, LineError};
use crate::judge::tape::{Call, Taped};
use crate::judge::{Answer, Exchange, Message, Party};

/// The request of an HTTP call, as recorded (secrets masked).
pub fn http_call(to: Party, request: &http::Request) -> Call {
    Call {
        to,
        method: Some(request.method.clone()),
        endpoint: request.path.clone(),
        request: Message::masked(
            request
                .headers
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str())),
            &request.body,
        ),
    }
}

/// A line sent to `endpoint` (`stdin`, `a socket`), as recorded.
pub fn line_call(to: Party, endpoint: &str, line: &[u8]) -> Call {
    Call {
        to,
        method: None,
        endpoint: endpoint.to_string(),
        request: Message::masked([], line),
    }
}

fn typed<T: Serialize>(key: &str, value: &T) -> Value {
    json!({ key: serde_json::to_value(value).unwrap_or(Value::Null) })
}

fn untyped<T: DeserializeOwned>(exchange: &Exchange, key: &str) -> Option<T> {
    serde_json::from_value(exchange.context.get(key)?.clone()).ok()
}

fn delivered(status: Option<u16>, message: Message) -> Answer {
    Answer::Delivered { status, message }
}

impl Taped for Result<Response, http::Error> {
    fn to_tape(&self) -> (Answer, Value, Option<Duration>) {
        match self {
            Ok(r) => (
                delivered(
                    Some(r.status),
                    Message::masked(
                        r.headers.iter().map(|(k, v)| (k.as_str(), v.as_str())),
                        &r.body,
                    ),
                ),
                json!({ "body_exceeded": r.body_exceeded }),
                Some(r.elapsed),
            ),
            Err(e) => {
                let answer = match e {
                    http::Error::Timeout { .. } => Answer::TimedOut,
                    other => Answer::Failed {
                        what: other.to_string(),
                    },
                };
                (answer, typed("http_error", e), None)
            }
        }
    }

    fn from_tape(exchange: &Exchange, elapsed: Duration) -> Option<Self> {
        match &exchange.answer {
            Answer::Delivered {
                status: Some(status),
                message,
            } => Some(Ok(Response {
                status: *status,
                headers: message.headers.clone(),
                body: message.body().into(),
                body_exceeded: exchange.context["body_exceeded"].as_bool().unwrap_or(false),
                elapsed,
            })),
            _ => untyped(exchange, "http_error").map(Err),
        }
    }

    fn unmatched(why: String) -> Self {
        Err(http::Error::Other(why))
    }
}

impl Taped for Result<LineAnswer, LineError> {
    fn to_tape(&self) -> (Answer, Value, Option<Duration>) {
        match self {
            Ok(a) => (
                delivered(None, Message::masked([], &a.text)),
                json!({ "line_no": a.line_no }),
                Some(a.elapsed),
            ),
            Err(e) => {
                let answer = match e {
                    LineError::Timeout { .. } => Answer::TimedOut,
                    other => Answer::Failed {
                        what: other.to_string(),
                    },
                };
                (answer, typed("line_error", e), None)
            }
        }
    }

    fn from_tape(exchange: &Exchange, elapsed: Duration) -> Option<Self> {
        match &exchange.answer {
            Answer::Delivered {
                status: None,
                message,
            } => Some(Ok(LineAnswer {
                text: message.body().into(),
                line_no: exchange.context["line_no"].as_u64()?,
                elapsed,
            })),
            _ => untyped(exchange, "line_error").map(Err),
        }
    }

    fn unmatched(why: String) -> Self {
        Err(LineError::Io(why))
    }
}

impl Taped for AfterSilence {
    fn to_tape(&self) -> (Answer, Value, Option<Duration>) {
        (
            delivered(None, Message::default()),
            typed("after_silence", self),
            None,
        )
    }

    fn from_tape(exchange: &Exchange, _: Duration) -> Option<Self> {
        untyped(exchange, "after_silence")
    }

    fn unmatched(_: String) -> Self {
        AfterSilence::AtEof(0)
    }
}

/// A note the transport wrote for a reader at the end (a stdio agent's cleanup), replayed as
/// it was.
pub struct Note(pub Option<String>);

impl Taped for Note {
    fn to_tape(&self) -> (Answer, Value, Option<Duration>) {
        (
            delivered(
                None,
                Message::masked([], self.0.as_deref().unwrap_or("").as_bytes()),
            ),
            json!({ "note": self.0.is_some() }),
            None,
        )
    }

    fn from_tape(exchange: &Exchange, _: Duration) -> Option<Self> {
        let Answer::Delivered { message, .. } = &exchange.answer else {
            return None;
        };
        let some = exchange.context["note"].as_bool()?;
        Some(Note(some.then(|| message.text.clone().unwrap_or_default())))
    }

    fn unmatched(_: String) -> Self {
        Note(None)
    }
}

/// A connection attempt (the reachability cases): how long it took, or why it failed.
impl Taped for Result<Duration, http::Error> {
    fn to_tape(&self) -> (Answer, Value, Option<Duration>) {
        match self {
            Ok(took) => (
                delivered(None, Message::masked([], b"connected")),
                Value::Null,
                Some(*took),
            ),
            Err(e) => (
                Answer::Failed {
                    what: e.to_string(),
                },
                typed("http_error", e),
                None,
            ),
        }
    }

    fn from_tape(exchange: &Exchange, elapsed: Duration) -> Option<Self> {
        match &exchange.answer {
            Answer::Delivered { status: None, .. } => Some(Ok(elapsed)),
            _ => untyped(exchange, "http_error").map(Err),
        }
    }

    fn unmatched(why: String) -> Self {
        Err(http::Error::Other(why))
    }
}

/// The endpoint a connection attempt is recorded at.
pub const CONNECT: &str = "(connect)";

/// A check's finding (`connected in 3 ms`) or why it failed, as told to a reader: a socket's
/// connection, a program's presence.
impl Taped for Result<String, String> {
    fn to_tape(&self) -> (Answer, Value, Option<Duration>) {
        match self {
            Ok(note) => (
                delivered(None, Message::masked([], note.as_bytes())),
                Value::Null,
                None,
            ),
            Err(why) => (Answer::Failed { what: why.clone() }, Value::Null, None),
        }
    }

    fn from_tape(exchange: &Exchange, _: Duration) -> Option<Self> {
        match &exchange.answer {
            Answer::Delivered { message, .. } => Some(Ok(message.text.clone().unwrap_or_default())),
            Answer::Failed { what } => Some(Err(what.clone())),
            _ => None,
        }
    }

    fn unmatched(why: String) -> Self {
        Err(why)
    }
}
