//! The mock role: we are the agents. Generic over protocols: a protocol plugs in through
//! [`protocol::AgentProtocol`] (its endpoints, its conforming [`Responder`], its content
//! behaviours and its platform observer). The engine has the behaviour catalogue (`behavior`)
//! and the encoding layer (`encoding`), one mock agent (`agent`) and a fleet of them (`fleet`)
//! on a raw HTTP/1.1 engine (`http1`) that can also fault below HTTP, a line server for stdio and
//! sockets, the journal, the shared platform checks (`observe`), the driver that registers and
//! triggers, and the session that ties them together.

pub mod agent;
pub mod args;
pub mod behavior;
pub mod decision;
pub mod driver;
pub mod encoding;
pub mod fleet;
pub mod http1;
pub mod injection;
pub mod journal;
pub mod line_server;
pub mod observe;
pub mod protocol;
pub mod server;
pub mod session;
#[cfg(test)]
pub(crate) mod stub;

use bytes::Bytes;

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

    /// A JSON error body `{"error": message}`.
    pub fn error(status: u16, message: impl Into<String>) -> Reply {
        Reply::json(status, &serde_json::json!({ "error": message.into() }))
    }
}

/// Produces answers for one protocol's endpoints. `endpoint` is the path without its leading
/// slash (`analyze`); `body` is the request body as received.
pub trait Responder: Send + Sync + 'static {
    fn respond(&self, endpoint: &str, body: &[u8]) -> Reply;

    /// The same, when the caller has parsed the body already (`parsed`: the body as JSON, if it
    /// is JSON): a responder may use it and skip a second parse.
    fn respond_parsed(
        &self,
        endpoint: &str,
        body: &[u8],
        parsed: Option<&serde_json::Value>,
    ) -> Reply {
        let _ = parsed;
        self.respond(endpoint, body)
    }
}
