//! What happened, as the fleet recorded it: the forwards that reached its agents, the callbacks
//! it sent, the user messages and the session calls.

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::mock::http1::Delivered;

/// A forward that reached an agent of the fleet.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Forward {
    pub agent: String,
    #[serde(with = "crate::judge::time::serde_instant")]
    pub at: Instant,
    pub session: Option<String>,
    pub text: Option<String>,
    /// What is wrong with it (schema, ids, callbackUrl, Content-Type).
    pub problems: Vec<String>,
    /// The payload's short strings, wherever they are: a forward whose field names are wrong
    /// is still known by its session id and text.
    pub strings: Vec<String>,
    /// How our acknowledgement ended (None: not yet).
    pub ack: Option<Delivered>,
    /// The status of the head we planned to send (0: a fault before any head).
    pub status: u16,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum CallbackKind {
    /// A text that must be broadcast.
    Text,
    Huge,
    Empty,
    Whitespace,
    UnknownSession,
    DeletedSession,
}

impl Forward {
    /// Whether it carries the user message `text` of `session`: in the document's fields, or
    /// (`malformed`) only somewhere in the payload.
    pub fn carries(&self, session: &str, text: &str) -> Option<Carried> {
        let text = text.trim();
        if self.session.as_deref() == Some(session) && self.text.as_deref() == Some(text) {
            Some(Carried::InPlace)
        } else if self.strings.iter().any(|s| s == session)
            && self.strings.iter().any(|s| s == text)
        {
            Some(Carried::Malformed)
        } else {
            None
        }
    }
}

/// Where a forward carried a user message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Carried {
    /// In `sessionId` and `message.text`.
    InPlace,
    /// Elsewhere in the payload (wrong field names).
    Malformed,
}

/// The strings of `value` up to `MAX_STRING` bytes, at most `MAX_STRINGS` of them, at most
/// eight levels deep.
pub(super) fn strings_of(value: &Value) -> Vec<String> {
    const MAX_STRINGS: usize = 64;
    const MAX_STRING: usize = 4096;
    fn walk(v: &Value, depth: usize, out: &mut Vec<String>) {
        if out.len() >= MAX_STRINGS || depth > 8 {
            return;
        }
        match v {
            Value::String(s) if s.len() <= MAX_STRING => out.push(s.trim().to_string()),
            Value::Array(items) => items.iter().for_each(|i| walk(i, depth + 1, out)),
            Value::Object(members) => members.values().for_each(|m| walk(m, depth + 1, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(value, 0, &mut out);
    out
}

/// A callback the fleet sent.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct SentCallback {
    pub agent: String,
    pub session: String,
    pub kind: CallbackKind,
    pub digest: u64,
    pub len: usize,
    /// A marker in the text, to find its broadcast (`tck-reply-N`).
    pub marker: String,
    pub canary: Option<String>,
    /// The text of the user message it answers.
    pub answers: String,
    #[serde(with = "crate::judge::time::serde_instant")]
    pub sent: Instant,
    pub status: Option<u16>,
    #[serde(with = "crate::judge::time::serde_instant::option")]
    pub answered: Option<Instant>,
    pub error: Option<String>,
    /// No answer, and the connection broke before the whole body went out.
    pub cut_mid_body: bool,
    /// When it broke (refused, reset, closed), since the server's watch began.
    pub broke_at: Option<Duration>,
}

/// A user message the fleet sent.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Said {
    pub session: String,
    pub text: String,
    #[serde(with = "crate::judge::time::serde_instant")]
    pub at: Instant,
}

/// A create or delete call and its answer.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Call {
    pub what: String,
    pub session: String,
    pub status: Option<u16>,
    pub body: Value,
    pub error: Option<String>,
    /// When it broke (refused, reset, closed), since the server's watch began.
    pub broke_at: Option<Duration>,
}

#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct Books {
    pub forwards: Vec<Forward>,
    pub callbacks: Vec<SentCallback>,
    pub said: Vec<Said>,
    /// Forwards past the bound, counted.
    pub dropped: u64,
}

/// How long a callback may take to be answered (a huge one included).
pub(super) const CALLBACK_DEADLINE: Duration = Duration::from_secs(30);

/// Most forwards and callbacks recorded.
pub(super) const KEPT: usize = 100_000;
