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

/// `eprintln!` that ignores a closed stderr (`2>&1 | head`, a harness that closed the pipe):
/// a note that cannot be shown is no reason to panic (see [`outln!`]).
#[macro_export]
macro_rules! errln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

/// `eprint!` that ignores a closed stderr (see [`errln!`]).
#[macro_export]
macro_rules! err {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = write!(std::io::stderr(), $($arg)*);
    }};
}

// The layers, from the bottom: shared helpers (`text`, `base64`, `units`, `content`, `jsonpath`, `json_out`,
// `json_skim`, `phrases`, `sanitization`, `schema`, `scratch`, `specs`, `error`), the engines (`transport`, `report`, `judge`,
// `probe`, `mock`, `proxy`), the protocols that plug into them (`protocols`, one folder each, listed in its
// registry), and on top what reads the registry: the command line (`cli`), the self-test
// (`selftest`), the multi-target probe (`targets`) and the fuzz targets (`fuzz`). A module imports
// only from its own layer or below; a test (`tests/tck/layers.rs`) holds the crate to it.
pub mod base64;
pub mod content;
pub mod error;
#[doc(hidden)]
pub mod fuzz;
pub mod json_out;
pub mod json_skim;
pub mod jsonpath;
pub mod phrases;
pub mod sanitization;
pub mod schema;
pub mod scratch;
pub mod specs;
pub mod targets;
pub mod text;
pub mod units;

pub mod judge;
pub mod mock;
pub mod probe;
pub mod proxy;
pub mod report;
pub mod transport;

pub mod protocols;

pub mod cli;
pub mod explain;
pub mod selftest;

/// The tool's version, printed in every report.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
