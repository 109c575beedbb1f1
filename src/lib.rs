//! agent-tck: a conformance test kit and mock agent simulator for agent protocols.
//!
//! The binary is a thin layer over this library (see `main.rs`): integration tests drive the same
//! `probe::run` and `mock` servers in-process.

pub mod cli;
pub mod mock;
pub mod probe;
pub mod protocol;
pub mod report;
pub mod schema;
pub mod selftest;
pub mod text;
pub mod transport;

/// The tool's version, printed in every report.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
