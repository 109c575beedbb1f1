//! A fleet of external agents against a real agent server (`agent-tck mock fleet` with `protocol:
//! connector`): the fleet serves an inputUrl per external agent, and drives the server as its
//! users would — creates sessions through the create endpoint, attaches WebSocket clients, sends
//! user messages — while each agent acknowledges and calls back as its behaviour says. Then it
//! judges the server ([`judge`], whose `run` runs it): the forwards, the callbacks' answers, what was
//! broadcast to whom, and the session ids the create endpoint takes.
//!
//! ```yaml
//! protocol: connector
//! connector:
//!   url: ${AGENT_SERVER_URL:-http://127.0.0.1:3000}   # the agent server; --platform-url wins
//!   listen: 127.0.0.1:9400          # the inputUrls (this is the default): http://127.0.0.1:9400/agents/NAME/input
//!   agents:
//!     - { name: steady, agent-id: ext-steady, behavior: conforming, sessions: 2 }
//!     - { name: slow, agent-id: ext-slow, behavior: slow-ack }
//! ```
//!
//! The server's configuration must name each agent's inputUrl: the fleet prints the agent
//! definitions (`definitions`; `--write-config FILE` writes them, `--print-config` only prints),
//! and before it drives, it waits for the server to know its agent ids (`ready`).
//!
//! - `file`: the fleet file and its parse; `behavior`: what each agent does;
//! - `definitions`: what the server is to be configured with; `ready`: the wait for it;
//! - `inputs`: the inputUrls the server forwards to, and the callbacks they send;
//! - `books`: what happened; `drive`: the users' side (sessions, WebSocket clients, messages);
//! - `session_api`: the server's session operations, which both sides call;
//! - `judge`: the verdicts.

mod behavior;
mod books;
mod definitions;
mod drive;
mod file;
mod inputs;
pub mod judge;
pub mod ready;
pub mod record;
mod session_api;

pub use behavior::{Behavior, BehaviorError, HUGE_DEFAULT};
pub use books::{Books, Call, CallbackKind, Carried, Forward, Said, SentCallback};
pub use definitions::{Definitions, DefinitionsError};
pub use drive::{exercise, Drive, Revive};
pub use file::{AgentFault, Fleet, FleetAgent, FleetFileError, DEFAULT_LISTEN};
pub use inputs::{head_under, payload_problems, serve, Inputs, ServeError, Served};
pub use ready::Readiness;
pub use session_api::session_call;
