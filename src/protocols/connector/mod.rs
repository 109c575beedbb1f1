//! The external agents' async connector (specs/external-agents-async-connector.md): an agent
//! server forwards user messages to an external agent's inputUrl, and the agent answers later
//! by POSTing raw text to a callback URL. To certify an external agent the kit plays the agent
//! server (`probe`: it forwards, and listens for the callbacks itself).
//!
//! - `model`: the payload, session ids, callback paths;
//! - `listener`: the kit's callback endpoint, recording every callback;
//! - `reference`: a conforming external agent with switchable flaws (what the probe is tested
//!   against);
//! - `rules`, `probe`, `commands`: the cases (`suites/connector.yaml`), their run, the command
//!   line and the self-test;
//! - `fleet`, `ws`: the other role — a fleet of external agents and WebSocket
//!   clients against a real agent server (`mock fleet` with `protocol: connector`), and its
//!   verdicts (`fleet::judge`); `upload`: a callback whose answer is read while its body goes out.

pub mod behaviors;
pub mod catalogue;
pub mod commands;
pub mod fleet;
pub mod listener;
pub mod model;
pub mod probe;
pub mod reference;
pub mod relay;
pub mod upload;
pub mod ws;

pub use commands::Connector;

/// The registry key, and the report's `protocol`.
pub const NAME: &str = "connector";
