//! The probe: we play the platform and judge an agent. A suite (YAML data, `suites/`) names
//! exchanges (request templates) and cases (checks on what came back); the runner sends each
//! exchange once, under the transport's bounds, and evaluates the cases in dependency order.

pub mod checks;
pub mod dupkeys;
pub mod harness;
pub mod path;
pub mod runner;
pub mod scenario;
pub mod suite;
pub mod task;
pub mod template;

pub use runner::{run, ProbeSettings};
pub use suite::Suite;
