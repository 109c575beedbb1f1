//! The journal of the agent standard's mock agents (`mock agent --protocol agent-standard
//! --journal FILE`): one JSON line when a run starts and one when it has printed its result, from
//! every mock process of an orchestration, appended to the same file. `probe orchestration`
//! reads it back.
//!
//! ```json
//! {"event":"start","run":"4242-1764000000000000","agent":"architect","mode":"plan","at_us":1764000000000000,"approved":false,"task":"…"}
//! {"event":"end","run":"4242-1764000000000000","agent":"architect","mode":"plan","at_us":1764000000120000,"status":"needs_approval","next_agents":[]}
//! ```
//!
//! Times are microseconds since the Unix epoch on the machine's clock, the one clock every mock
//! of the orchestration shares. A line is written with one `write` on a file opened for
//! appending, so lines of concurrent runs do not interleave.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Event {
    Start,
    End,
}

/// A next agent as a result named it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Next {
    pub agent: String,
    pub can_parallel: bool,
}

/// One line of the journal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Line {
    pub event: Event,
    /// The run's id: the process id and its start time (a pid alone is reused).
    pub run: String,
    pub agent: String,
    pub mode: String,
    pub at_us: u64,
    /// Start: the orchestrator said the plan was approved (`approved: true` on stdin, or
    /// `--approved`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub approved: bool,
    /// Start: the task given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
    /// End: the result's status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// End: the result's next_agents.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub next_agents: Vec<Next>,
}

/// Microseconds since the Unix epoch, now.
pub fn now_us() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}

/// Why a journal could not be written (a run error: the mock agent's run cannot be recorded) or
/// read (a usage error: the file `probe orchestration --journal` names).
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    #[error("{0}")]
    Encode(serde_json::Error),
    #[error("--journal {}: {cause}", path.display())]
    Write {
        path: PathBuf,
        cause: std::io::Error,
    },
    #[error("--journal {}: {cause}", path.display())]
    Read {
        path: PathBuf,
        cause: std::io::Error,
    },
}

impl crate::error::LayerError for JournalError {
    fn class(&self) -> crate::error::Class {
        use crate::error::Class;
        match self {
            JournalError::Encode(_) | JournalError::Write { .. } => Class::Run,
            JournalError::Read { .. } => Class::Usage,
        }
    }
}

/// Appends `line` to the journal at `path` (created when missing) in one write.
pub fn append(path: &Path, line: &Line) -> Result<(), JournalError> {
    let mut text = serde_json::to_string(line).map_err(JournalError::Encode)?;
    text.push('\n');
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .and_then(|mut f| f.write_all(text.as_bytes()))
        .map_err(|cause| JournalError::Write {
            path: path.to_path_buf(),
            cause,
        })
}

/// A journal read: its lines, each with where it is (`FILE:LINE`), and the lines that are not
/// journal lines (a run killed mid-write, a stray write), each with why.
#[derive(Debug, Clone, Default)]
pub struct Read {
    pub lines: Vec<(String, Line)>,
    pub bad: Vec<String>,
}

/// Reads a journal (blank lines are skipped). Only a file that cannot be read is an error.
pub fn read(path: &Path) -> Result<Read, JournalError> {
    let text = std::fs::read(path).map_err(|cause| JournalError::Read {
        path: path.to_path_buf(),
        cause,
    })?;
    let mut read = Read::default();
    for (i, l) in String::from_utf8_lossy(&text).lines().enumerate() {
        if l.trim().is_empty() {
            continue;
        }
        let at = format!("{}:{}", path.display(), i + 1);
        match serde_json::from_str(l) {
            Ok(line) => read.lines.push((at, line)),
            Err(e) => read.bad.push(format!("{at}: not a journal line: {e}")),
        }
    }
    Ok(read)
}
