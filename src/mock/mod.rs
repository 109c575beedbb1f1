//! The mock role: we are the agents. The conforming reference agent ([`Responder`]); the
//! behaviour catalogue (`behavior`) and its mutations of conforming answers (`mutate`); one
//! mock agent (`agent`) and a fleet of them (`fleet`) on a raw HTTP/1.1 engine (`http1`) that can
//! also fault below HTTP; the journal, the observer that judges the platform, the driver that
//! registers and triggers, and the session that ties them together.

pub mod agent;
pub mod behavior;
pub mod driver;
pub mod fleet;
pub mod http1;
pub mod injection;
pub mod journal;
pub mod line_server;
pub mod matrix;
pub mod mutate;
pub mod mutate_task;
pub mod observe;
pub mod reference;
pub mod server;
pub mod session;
pub mod task_agent;

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
