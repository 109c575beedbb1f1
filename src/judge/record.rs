//! A file of recorded exchanges: JSON lines, one [`Exchange`] a line, in the order they ended,
//! with the run's [`Event`]s among them (a line with an `event` member). A line that does not
//! parse is an error naming the file and the line.

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};

use super::{Entry, Event, Exchange};

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
}

/// Writes exchanges as they end, one a line.
pub struct Recorder {
    path: PathBuf,
    out: std::io::BufWriter<std::fs::File>,
}

impl Recorder {
    pub fn create(path: &Path) -> Result<Recorder, RecordError> {
        let file = std::fs::File::create(path).map_err(|source| RecordError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Ok(Recorder {
            path: path.to_path_buf(),
            out: std::io::BufWriter::new(file),
        })
    }

    pub fn write(&mut self, exchange: &Exchange) -> Result<(), RecordError> {
        self.line(exchange)
    }

    /// Writes an event of the run.
    pub fn write_event(&mut self, event: &Event) -> Result<(), RecordError> {
        self.line(event)
    }

    fn line(&mut self, value: &impl serde::Serialize) -> Result<(), RecordError> {
        let io = |source| RecordError::Io {
            path: self.path.clone(),
            source,
        };
        serde_json::to_writer(&mut self.out, value)
            .map_err(std::io::Error::from)
            .map_err(io)?;
        self.out.write_all(b"\n").map_err(io)
    }

    /// Flushes what is buffered (the file is whole after it).
    pub fn flush(&mut self) -> Result<(), RecordError> {
        self.out.flush().map_err(|source| RecordError::Io {
            path: self.path.clone(),
            source,
        })
    }
}

/// Every exchange of a recording, in order (its events left out).
pub fn read(path: &Path) -> Result<Vec<Exchange>, RecordError> {
    Ok(read_entries(path)?
        .into_iter()
        .filter_map(|entry| match entry {
            Entry::Exchange(exchange) => Some(exchange),
            Entry::Event(_) => None,
        })
        .collect())
}

/// Every line of a recording, exchanges and events, in order.
pub fn read_entries(path: &Path) -> Result<Vec<Entry>, RecordError> {
    let file = std::fs::File::open(path).map_err(|source| RecordError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let mut out = Vec::new();
    for (i, line) in std::io::BufReader::new(file).lines().enumerate() {
        let line = line.map_err(|source| RecordError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        if line.trim().is_empty() {
            continue;
        }
        out.push(entry(&line).map_err(|source| RecordError::Line {
            path: path.to_path_buf(),
            line: i + 1,
            source,
        })?);
    }
    Ok(out)
}

/// One line: an event when it has an `event` member, else an exchange.
fn entry(line: &str) -> Result<Entry, serde_json::Error> {
    let value: serde_json::Value = serde_json::from_str(line)?;
    if value.get("event").is_some() {
        serde_json::from_value(value).map(Entry::Event)
    } else {
        serde_json::from_value(value).map(Entry::Exchange)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::{Answer, Message, Party};

    #[test]
    fn a_recording_reads_back_as_written_and_a_bad_line_is_named() {
        let dir = std::env::temp_dir().join(format!("tck-record-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("run.jsonl");
        let exchange = Exchange {
            seq: 1,
            from: Party::Platform,
            to: Party::Agent("alpha".into()),
            method: Some("POST".into()),
            endpoint: "/analyze".into(),
            case: None,
            request: Message::masked([("authorization", "Bearer k")], b"{\"a\":1}"),
            answer: Answer::Delivered {
                status: Some(200),
                message: Message::masked([], b"\xff"),
            },
            sent_ms: 1.5,
            answered_ms: Some(3.25),
            context: serde_json::Value::Null,
        };
        let mut recorder = Recorder::create(&path).unwrap();
        let event = Event {
            event: "run-end".into(),
            at_ms: 4.0,
            context: serde_json::json!({"why": "Ctrl-C"}),
        };
        recorder.write(&exchange).unwrap();
        recorder.write_event(&event).unwrap();
        recorder.flush().unwrap();
        assert_eq!(read(&path).unwrap(), vec![exchange.clone()]);
        assert_eq!(
            read_entries(&path).unwrap(),
            vec![Entry::Exchange(exchange), Entry::Event(event)]
        );
        std::fs::write(&path, "\n{\"seq\": 1}\n").unwrap();
        let e = read(&path).unwrap_err().to_string();
        assert!(e.contains("run.jsonl:2: not a recorded exchange"), "{e}");
        std::fs::write(&path, "{\"event\": \"run-end\"}\nnot json\n").unwrap();
        let e = read_entries(&path).unwrap_err().to_string();
        assert!(e.contains("run.jsonl:1: not a recorded exchange"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
