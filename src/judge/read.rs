//! What reading (or writing) a recording gives: its entries and whether the file was cut, or
//! what is wrong with it, naming the file and the place. Shared by both formats
//! ([`super::record`]'s JSON lines, [`super::har`]).

use std::path::PathBuf;

use super::Entry;

/// A recording that cannot be read (or written).
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}:{line}: not a recorded exchange: {source}", path.display())]
    Line {
        path: PathBuf,
        line: usize,
        source: serde_json::Error,
    },
    #[error("{}: entry {entry} of the HAR: {why}", path.display())]
    Entry {
        path: PathBuf,
        entry: usize,
        why: String,
    },
}

/// A recording as read: its entries, and whether it was cut before its close (a HAR whose
/// writer was killed: every entry it finished is there, the events told after the first
/// exchange are lost). JSON lines are never cut: each line is whole or an error.
#[derive(Debug)]
pub struct Read {
    pub entries: Vec<Entry>,
    pub cut: bool,
}
