//! agent-tck: a conformance test kit and mock agent simulator for agent protocols.
//!
//! The binary is a thin layer over this library (see `main.rs`): integration tests drive the same
//! `probe::run` and `mock` servers in-process.

/// `println!` that ignores a closed stdout (a reader such as `head` that went away): the run goes
/// on to write its report files and exit with its own status instead of panicking.
#[macro_export]
macro_rules! outln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout(), $($arg)*);
    }};
}

/// `print!` that ignores a closed stdout (see [`outln!`]).
#[macro_export]
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = write!(std::io::stdout(), $($arg)*);
    }};
}

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
