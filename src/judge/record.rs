//! A file of recorded exchanges, in the order they ended, with the run's [`Event`]s among
//! them. Two formats: JSON lines, one [`Exchange`] a line (an event is a line with an `event`
//! member), and HAR 1.2 when the file's name ends in `.har` ([`super::har`]), for the tools that
//! read HAR. Reading tells them by their content. A line that does not parse is an error naming
//! the file and the line.

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};

use super::har::{self, HarWriter, Kind, Urls};
pub use super::read::{Read, RecordError};
use super::{Entry, Event, Exchange};

/// Writes exchanges as they end: JSON lines, or HAR when the file's name ends in `.har`.
pub struct Recorder(Format);

enum Format {
    Lines {
        path: PathBuf,
        out: std::io::BufWriter<std::fs::File>,
    },
    Har(HarWriter),
}

impl Recorder {
    /// A recording to `path`: HAR 1.2 when its name ends in `.har` (in any case), each party
    /// at [`har::default_url`]; JSON lines otherwise.
    pub fn create(path: &Path) -> Result<Recorder, RecordError> {
        Recorder::create_with_urls(path, Box::new(har::default_url))
    }

    /// As [`Recorder::create`], a HAR's URLs made of `urls(party asked)` and the endpoint
    /// (`http://127.0.0.1:8700/agents/alpha` + `/analyze`). JSON lines hold no URL.
    pub fn create_with_urls(path: &Path, urls: Urls) -> Result<Recorder, RecordError> {
        if is_har(path) {
            return HarWriter::create(path, urls).map(|w| Recorder(Format::Har(w)));
        }
        let file = std::fs::File::create(path).map_err(|source| RecordError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Ok(Recorder(Format::Lines {
            path: path.to_path_buf(),
            out: std::io::BufWriter::new(file),
        }))
    }

    pub fn write(&mut self, exchange: &Exchange) -> Result<(), RecordError> {
        match &mut self.0 {
            Format::Lines { path, out } => line(path, out, exchange),
            Format::Har(har) => har.write(exchange),
        }
    }

    /// Writes an event of the run (a HAR keeps it for its close).
    pub fn write_event(&mut self, event: &Event) -> Result<(), RecordError> {
        match &mut self.0 {
            Format::Lines { path, out } => line(path, out, event),
            Format::Har(har) => har.write_event(event),
        }
    }

    /// Flushes what is buffered (JSON lines are whole after it; a HAR's entries are flushed
    /// as written, and it is whole after [`Recorder::finish`]).
    pub fn flush(&mut self) -> Result<(), RecordError> {
        match &mut self.0 {
            Format::Lines { path, out } => out.flush().map_err(|source| RecordError::Io {
                path: path.clone(),
                source,
            }),
            Format::Har(har) => har.flush(),
        }
    }

    /// Closes the recording at the run's end: a HAR's tail written (with the run's events),
    /// JSON lines flushed. A recorder dropped without it leaves a HAR that reads as cut.
    pub fn finish(&mut self) -> Result<(), RecordError> {
        match &mut self.0 {
            Format::Lines { .. } => self.flush(),
            Format::Har(har) => har.finish(),
        }
    }
}

fn line(
    path: &Path,
    out: &mut std::io::BufWriter<std::fs::File>,
    value: &impl serde::Serialize,
) -> Result<(), RecordError> {
    let io = |source| RecordError::Io {
        path: path.to_path_buf(),
        source,
    };
    serde_json::to_writer(&mut *out, value)
        .map_err(std::io::Error::from)
        .map_err(io)?;
    out.write_all(b"\n").map_err(io)
}

/// Whether `path` names a HAR file (`.har`, in any case).
fn is_har(path: &Path) -> bool {
    path.extension()
        .is_some_and(|ext| ext.eq_ignore_ascii_case("har"))
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

/// Every entry of a recording, exchanges and events, in order (of a cut HAR, what it holds).
pub fn read_entries(path: &Path) -> Result<Vec<Entry>, RecordError> {
    read_recording(path).map(|read| read.entries)
}

/// A recording in either format, told by its content: our own HAR by its head line, any
/// other HAR by opening with a `log` member, else JSON lines.
pub fn read_recording(path: &Path) -> Result<Read, RecordError> {
    let io = |source| RecordError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut reader = std::io::BufReader::new(std::fs::File::open(path).map_err(io)?);
    let peek = reader.fill_buf().map_err(io)?.to_vec();
    let mut first = String::new();
    reader.read_line(&mut first).map_err(io)?;
    if first.is_empty() {
        // Nothing at all: a HAR's writer killed before it wrote its head.
        return Ok(Read {
            entries: Vec::new(),
            cut: is_har(path),
        });
    }
    match har::kind(&first, &peek) {
        Kind::Ours => har::read_ours(path, &first, reader),
        Kind::Whole => har::read_whole(path, std::fs::File::open(path).map_err(io)?),
        Kind::Lines => {
            let mut entries = Vec::new();
            let first = std::iter::once(Ok(first.trim_end_matches(['\n', '\r']).to_string()));
            for (i, line) in first.chain(reader.lines()).enumerate() {
                let line = line.map_err(io)?;
                if line.trim().is_empty() {
                    continue;
                }
                entries.push(entry(&line).map_err(|source| RecordError::Line {
                    path: path.to_path_buf(),
                    line: i + 1,
                    source,
                })?);
            }
            Ok(Read {
                entries,
                cut: false,
            })
        }
    }
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
