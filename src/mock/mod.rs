//! The mock role: we are the agents. Generic over protocols: a protocol plugs in through
//! [`protocol::AgentProtocol`] (its endpoints, its conforming [`Responder`], its content
//! behaviours and its platform observer). The engine has the behaviour catalogue (`behavior`)
//! and the encoding layer (`encoding`), one mock agent (`agent`) and a fleet of them (`fleet`)
//! on a raw HTTP/1.1 engine (`http1`) that can also fault below HTTP, a line server for stdio and
//! sockets, the journal, the shared platform checks (`observe`), the driver that registers and
//! triggers, and the session that ties them together.

pub mod agent;
pub mod applied;
pub mod args;
pub mod behavior;
pub mod body;
pub mod command;
pub mod decision;
pub mod driver;
pub mod encoding;
pub mod expect;
pub mod fleet;
pub mod http1;
pub mod injection;
pub mod journal;
pub mod line_journal;
pub mod line_server;
pub mod linger;
pub mod observe;
pub mod peer_end;
pub mod profile;
pub mod protocol;
pub mod reach;
pub mod recording;
pub mod session;
#[cfg(test)]
pub(crate) mod stub;
pub mod timeline;

#[cfg(test)]
mod handler_tests;

use bytes::Bytes;

pub use body::Body;

/// What an agent answers to one request.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    pub status: u16,
    pub content_type: &'static str,
    pub body: Bytes,
}

impl Reply {
    pub fn json(status: u16, value: &impl serde::Serialize) -> Reply {
        // Most answers are under 1 KiB: one allocation instead of a run of doublings.
        let mut body = Vec::with_capacity(1024);
        if serde_json::to_writer(&mut body, value).is_err() {
            body.clear();
        }
        Reply {
            status,
            content_type: "application/json",
            body: Bytes::from(body),
        }
    }

    /// A JSON answer whose body is still to be written (see [`Answer::Json`]).
    pub fn json_placeholder(status: u16) -> Reply {
        Reply {
            status,
            content_type: "application/json",
            body: Bytes::new(),
        }
    }

    /// A JSON error body `{"error": message}`.
    pub fn error(status: u16, message: impl Into<String>) -> Reply {
        Reply::json(status, &serde_json::json!({ "error": message.into() }))
    }
}

/// An answer as a responder gives it: a reply as it is, or a JSON answer as its value, for a
/// content behaviour to bend before it is serialized (once).
pub enum Answer {
    Reply(Reply),
    Json(u16, serde_json::Value),
}

/// Produces answers for one protocol's endpoints. `endpoint` is the path without its leading
/// slash (`analyze`); `body` is the request body as received (its JSON value parsed once, on
/// first use, and its members when the quick schema check admitted it: see [`Body`]).
pub trait Responder: Send + Sync + 'static {
    fn respond_body(&self, endpoint: &str, body: &Body<'_>) -> Reply;

    /// The same, from the body's bytes alone.
    fn respond(&self, endpoint: &str, body: &[u8]) -> Reply {
        self.respond_body(endpoint, &Body::new(body))
    }

    /// The answer as a JSON value when it is one, for a content behaviour to bend; by default
    /// the reply as it is (the behaviour then reads the bytes back).
    fn respond_value(&self, endpoint: &str, body: &Body<'_>) -> Answer {
        Answer::Reply(self.respond_body(endpoint, body))
    }
}
