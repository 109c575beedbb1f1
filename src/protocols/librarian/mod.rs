//! The Librarian agent communication protocol (specs/librarian-agent-communication-protocol.md):
//! agents ask a governance server for approval, context and validation over REST. The platform
//! is the server here and the agents its clients, so the roles turn around: to certify a
//! Librarian the kit is an agent client (`probe`), and its reference Librarian (`reference`) is
//! what the probe is tested against.
//!
//! - `model`: schemas' ids, the document's fields, limits and states, the rules both roles use;
//! - `rules`: the suite's rule vocabulary (`suites/librarian.yaml`);
//! - `probe`: `probe librarian`, each case a small scenario of requests;
//! - `reference`: a conforming Librarian on the kit's HTTP engine, with switchable flaws;
//! - `proxied`: the judge of real clients and a real Librarian behind `agent-tck proxy`;
//! - `commands`: flags, case listing, self-test.

pub(crate) mod answers;
pub mod behaviors;
pub mod catalogue;
pub mod commands;
pub mod fleet;
pub mod mock;
pub mod model;
pub mod probe;
pub mod proxied;
pub mod reference;
pub mod registry;
pub mod rules;

pub use commands::LibrarianProtocol;

/// The registry key, and the report's `protocol`.
pub const NAME: &str = "librarian";
