//! The journal: every request every mock receives, as JSON lines (`--journal PATH`).
//!
//! Two records per request, joined by `seq`: `"event": "request"` when it arrives (what came,
//! what the agent decided) and `"event": "answer"` when the answer is over (what was actually
//! sent, when). A hung request therefore leaves its first record even if the process is killed.
//! Records go through a bounded channel to one writer task: under load, handlers wait for room
//! rather than drop a record or grow memory. Bodies are capped (`body_cap` bytes) and the cap is
//! recorded.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use serde::Serialize;
use serde_json::Value;
use tokio::io::AsyncWriteExt;
use tokio::sync::mpsc;

use super::decision::Decision;
use super::http1::Delivered;

/// How a request's Authorization compared with what the agent was registered with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AuthSeen {
    /// The right bearer key.
    Ok,
    /// A key is expected and none came.
    Missing,
    /// A key came and it is not the agent's.
    Wrong,
    /// No key is expected and none came.
    None,
    /// No key is expected and one came anyway.
    Unexpected,
    /// Whether a key is expected is not known (a proxy told no key of the agent behind it):
    /// the bearer rules are not judged on it.
    Unknown,
}

#[derive(Debug, Serialize)]
pub struct RequestRecord<'a> {
    pub seq: u64,
    pub event: &'static str,
    /// Milliseconds since the fleet started.
    pub t_ms: f64,
    pub agent: &'a str,
    pub endpoint: &'a str,
    pub method: &'a str,
    pub path: &'a str,
    pub peer: String,
    pub auth: AuthSeen,
    /// The request's id (the member the protocol names), under the journal's own name for it.
    #[serde(rename = "task_id", skip_serializing_if = "Option::is_none")]
    pub id: Option<&'a str>,
    pub body_bytes: usize,
    /// The body: JSON when it parsed and fits the cap, else a (lossy, capped) string.
    pub body: Value,
    pub body_capped: bool,
    pub decision: &'a Decision,
}

#[derive(Debug, Serialize)]
pub struct AnswerRecord {
    pub seq: u64,
    pub event: &'static str,
    pub t_ms: f64,
    pub outcome: super::http1::Outcome,
    pub bytes: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ttfb_ms: Option<f64>,
    pub total_ms: f64,
}

/// Why `--journal` failed: its file could not be created (a usage error: the path is the
/// user's) or written (a run error: the disk filled, the file went away).
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    #[error("--journal {path}: cannot create: {cause}")]
    Create { path: String, cause: std::io::Error },
    #[error("--journal: cannot write: {cause}")]
    Write { cause: std::io::Error },
}

impl crate::error::LayerError for JournalError {
    fn class(&self) -> crate::error::Class {
        use crate::error::Class;
        match self {
            JournalError::Create { .. } => Class::Usage,
            JournalError::Write { .. } => Class::Run,
        }
    }
}

pub struct Journal {
    /// Taken (and so dropped) by `close`: the writer ends once every sender is gone.
    tx: Mutex<Option<mpsc::Sender<String>>>,
    writer: Mutex<Option<tokio::task::JoinHandle<std::io::Result<u64>>>>,
    seq: AtomicU64,
    started: Instant,
    pub body_cap: usize,
}

/// Records in flight to the writer at most.
const BACKLOG: usize = 4096;

impl Journal {
    /// A journal that numbers requests but writes nothing.
    pub fn off(started: Instant) -> Journal {
        Journal {
            tx: Mutex::new(None),
            writer: Mutex::new(None),
            seq: AtomicU64::new(0),
            started,
            body_cap: 0,
        }
    }

    /// Creates (truncates) `path` and starts the writer.
    pub async fn create(
        path: &Path,
        body_cap: usize,
        started: Instant,
    ) -> Result<Journal, JournalError> {
        let file = tokio::fs::File::create(path)
            .await
            .map_err(|cause| JournalError::Create {
                path: path.display().to_string(),
                cause,
            })?;
        let (tx, mut rx) = mpsc::channel::<String>(BACKLOG);
        let writer = tokio::spawn(async move {
            let mut out = tokio::io::BufWriter::with_capacity(256 * 1024, file);
            let mut lines = 0u64;
            while let Some(line) = rx.recv().await {
                out.write_all(line.as_bytes()).await?;
                out.write_all(b"\n").await?;
                lines += 1;
                // Flush when idle, so a reader (tail -f) sees records promptly.
                if rx.is_empty() {
                    out.flush().await?;
                }
            }
            out.flush().await?;
            Ok(lines)
        });
        Ok(Journal {
            tx: Mutex::new(Some(tx)),
            writer: Mutex::new(Some(writer)),
            seq: AtomicU64::new(0),
            started,
            body_cap,
        })
    }

    pub fn is_on(&self) -> bool {
        self.sender().is_some()
    }

    fn sender(&self) -> Option<mpsc::Sender<String>> {
        self.tx.lock().ok().and_then(|tx| tx.clone())
    }

    pub fn next_seq(&self) -> u64 {
        self.seq.fetch_add(1, Ordering::Relaxed) + 1
    }

    pub fn t_ms(&self, at: Instant) -> f64 {
        at.saturating_duration_since(self.started).as_secs_f64() * 1e3
    }

    /// Writes one record (waits for room; never drops).
    pub async fn write(&self, record: &impl Serialize) {
        let Some(tx) = self.sender() else { return };
        if let Ok(line) = serde_json::to_string(record) {
            let _ = tx.send(line).await;
        }
    }

    pub async fn answer(&self, seq: u64, delivered: &Delivered) {
        if !self.is_on() {
            return;
        }
        self.write(&AnswerRecord {
            seq,
            event: "answer",
            t_ms: self.t_ms(Instant::now()),
            outcome: delivered.outcome,
            bytes: delivered.bytes,
            ttfb_ms: delivered.ttfb.map(|d| d.as_secs_f64() * 1e3),
            total_ms: delivered.total.as_secs_f64() * 1e3,
        })
        .await;
    }

    /// The body as recorded: parsed JSON when it fits under the cap, else a capped string.
    pub fn body_value(&self, body: &[u8], parsed: Option<&Value>) -> (Value, bool) {
        if body.len() <= self.body_cap {
            if let Some(v) = parsed {
                return (v.clone(), false);
            }
            return (
                Value::String(String::from_utf8_lossy(body).into_owned()),
                false,
            );
        }
        let cut = crate::text::excerpt(&body[..self.body_cap], self.body_cap);
        (Value::String(cut), true)
    }

    /// Stops taking records, writes what is queued and closes the file; returns the line count.
    pub async fn close(&self) -> Result<u64, JournalError> {
        if let Ok(mut tx) = self.tx.lock() {
            tx.take();
        }
        let writer = self.writer.lock().ok().and_then(|mut w| w.take());
        match writer {
            Some(w) => w
                .await
                .unwrap_or_else(|e| Err(std::io::Error::other(e.to_string())))
                .map_err(|cause| JournalError::Write { cause }),
            None => Ok(0),
        }
    }
}

#[cfg(test)]
mod journal_errors {
    use super::*;

    #[deadline::test]
    async fn a_journal_that_cannot_be_created_is_a_usage_error_naming_the_path() {
        let path = Path::new("/nonexistent-dir/j.jsonl");
        let e = Journal::create(path, 0, Instant::now())
            .await
            .err()
            .unwrap();
        assert!(
            matches!(&e, JournalError::Create { path, .. } if path == "/nonexistent-dir/j.jsonl")
        );
        assert!(
            matches!(crate::error::Error::from(e).shown(), (crate::error::Class::Usage, m)
                if m.starts_with("--journal /nonexistent-dir/j.jsonl: cannot create: ")),
        );
        let write = JournalError::Write {
            cause: std::io::Error::other("disk full"),
        };
        assert_eq!(
            crate::error::Error::from(write).shown(),
            (
                crate::error::Class::Run,
                "--journal: cannot write: disk full".into()
            )
        );
    }
}
