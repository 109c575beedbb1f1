//! The probe: we play the platform and judge an agent. A suite (YAML data, `suites/`) names
//! exchanges (request templates) and cases (checks on what came back); the runner sends each
//! exchange once, under the transport's bounds, and evaluates the cases in dependency order.
//! Generic over protocols: a protocol adds its rules and generators through
//! [`plugin::SuiteProtocol`].

pub mod args;
pub mod checks;
pub mod dupkeys;
pub mod exchange;
pub mod interrupt;
pub mod outcome;
pub mod plugin;
pub mod runner;
pub mod suite;
pub mod template;
pub mod traffic;

pub use runner::{run, ProbeSettings};
pub use suite::Suite;
