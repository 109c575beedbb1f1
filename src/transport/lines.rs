//! What the line transports (`stdio`, `socket`) share: the answer and error types, and a bounded
//! line reader.
//!
//! The reader never holds more than `max_line + 1` bytes of one line (plus one read's worth of
//! bytes that follow a newline): a peer that sends an endless line costs us `max_line` bytes and
//! gets a `TooLong` that quotes how the line started. It is cancel-safe: bytes read before a
//! deadline fires stay in its buffer, so the timeout can say how far the peer got.

use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt};

/// What an agent that timed out without a byte wrote afterwards (`output_at_eof`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum AfterSilence {
    /// Bytes that came while its input was still open: a slow agent, not a buffering one.
    Late(usize),
    /// Bytes that came only once its input was ended (0: nothing at all).
    AtEof(usize),
}

/// One answer from a line-oriented agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineAnswer {
    /// The line without its newline (persistent stdio, sockets), or all of stdout (per-turn stdio).
    pub text: Bytes,
    /// 1-based index of this line on the stream since the process was spawned or the connection
    /// opened (always 1 for per-turn stdio).
    pub line_no: u64,
    /// Time from the start of the exchange to the answer.
    pub elapsed: Duration,
}

/// Why an exchange produced no answer. Each variant's text says what the agent did.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, serde::Serialize, serde::Deserialize)]
pub enum LineError {
    /// The agent could not be started (stdio): the text says which program and why.
    #[error("{0}")]
    Spawn(String),
    /// The deadline passed; `got` bytes of an incomplete answer had arrived.
    #[error(
        "no complete answer within {} (the deadline); {got} bytes of it received",
        humantime::format_duration(*deadline)
    )]
    Timeout { deadline: Duration, got: usize },
    /// The answer is longer than the cap; `start` quotes its first ~200 characters, escaped.
    #[error("the answer is longer than {limit} bytes (the cap); it starts: {start}")]
    TooLong { limit: usize, start: String },
    /// The agent process exited: before answering (persistent), or with a non-zero status
    /// (per-turn). `status` says how (`status 3, before answering`, `signal 9 (KILL), …`).
    #[error("the agent exited ({status}){}", stderr_note(stderr_tail))]
    Exited { status: String, stderr_tail: String },
    /// The agent closed its output (stdout, or the connection) without a complete line, and
    /// (stdio) did not exit.
    #[error(
        "the agent closed its output without sending a complete line{}",
        stderr_note(stderr_tail)
    )]
    Closed { stderr_tail: String },
    /// Anything else: cannot connect, connection reset, a read or write failed.
    #[error("{0}")]
    Io(String),
}

fn stderr_note(tail: &str) -> String {
    if tail.is_empty() {
        String::new()
    } else {
        format!("; stderr: {tail}")
    }
}

/// Largest read into the line buffer.
const CHUNK: usize = 64 * 1024;

/// How much of an over-long line the `TooLong` error quotes, in characters.
const START_CHARS: usize = 200;

/// Why a read produced no line.
#[derive(Debug)]
pub(crate) enum ReadFail {
    /// The line (or the whole output) passed the cap; the buffer has been cleared.
    TooLong(LineError),
    Io(std::io::Error),
}

/// A buffered, capped line reader over any byte stream.
#[derive(Debug)]
pub(crate) struct LineReader {
    buf: BytesMut,
    /// Bytes of `buf` already searched for a newline.
    scanned: usize,
    max_line: usize,
    /// Lines taken so far.
    lines: u64,
}

impl LineReader {
    pub(crate) fn new(max_line: usize) -> LineReader {
        LineReader {
            buf: BytesMut::new(),
            scanned: 0,
            max_line,
            lines: 0,
        }
    }

    /// Lines taken so far (the `line_no` of the last one).
    pub(crate) fn lines(&self) -> u64 {
        self.lines
    }

    /// Bytes buffered and not yet part of a returned line: an incomplete line, or a whole output.
    pub(crate) fn pending(&self) -> usize {
        self.buf.len()
    }

    /// Takes a complete line out of the buffer, if there is one.
    pub(crate) fn take_line(&mut self) -> Result<Option<Bytes>, ReadFail> {
        let from = self.scanned.min(self.buf.len());
        if let Some(i) = memchr::memchr(b'\n', &self.buf[from..]) {
            let end = from + i;
            if end > self.max_line {
                return Err(self.too_long());
            }
            let mut line = self.buf.split_to(end + 1);
            line.truncate(end);
            self.scanned = 0;
            self.lines += 1;
            return Ok(Some(line.freeze()));
        }
        self.scanned = self.buf.len();
        if self.buf.len() > self.max_line {
            return Err(self.too_long());
        }
        Ok(None)
    }

    /// Reads until a complete line is buffered and returns it; `None` at end of stream (an
    /// incomplete line stays in the buffer, see [`pending`](Self::pending)). Cancel-safe.
    pub(crate) async fn read_line<R>(&mut self, reader: &mut R) -> Result<Option<Bytes>, ReadFail>
    where
        R: AsyncRead + Unpin + ?Sized,
    {
        loop {
            if let Some(line) = self.take_line()? {
                return Ok(Some(line));
            }
            if self.read_some(reader).await? == 0 {
                return Ok(None);
            }
        }
    }

    /// Reads one chunk (at most up to one byte past the cap) and returns its length, 0 at end of
    /// stream. Fails with `TooLong` once more than `max_line` bytes are buffered. Cancel-safe.
    pub(crate) async fn read_some<R>(&mut self, reader: &mut R) -> Result<usize, ReadFail>
    where
        R: AsyncRead + Unpin + ?Sized,
    {
        if self.buf.len() > self.max_line {
            return Err(self.too_long());
        }
        let room = (self.max_line + 1 - self.buf.len()).min(CHUNK);
        self.buf.reserve(room);
        let n = reader
            .read_buf(&mut (&mut self.buf).limit(room))
            .await
            .map_err(ReadFail::Io)?;
        if self.buf.len() > self.max_line
            && memchr::memchr(b'\n', &self.buf[self.scanned..]).is_none()
        {
            return Err(self.too_long());
        }
        Ok(n)
    }

    /// Takes everything buffered (a per-turn output).
    pub(crate) fn take_all(&mut self) -> Bytes {
        self.scanned = 0;
        self.buf.split().freeze()
    }

    fn too_long(&mut self) -> ReadFail {
        let shown = self.buf.len().min(START_CHARS * 4);
        let start = crate::text::excerpt(&self.buf[..shown], START_CHARS);
        self.buf = BytesMut::new();
        self.scanned = 0;
        ReadFail::TooLong(LineError::TooLong {
            limit: self.max_line,
            start,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[deadline::test]
    async fn lines_split_and_cap() {
        let mut data: &[u8] = b"{\"a\":1}\n\nsecond\r\npartial";
        let mut r = LineReader::new(10);
        assert_eq!(
            r.read_line(&mut data).await.unwrap().unwrap(),
            &b"{\"a\":1}"[..]
        );
        assert_eq!(r.read_line(&mut data).await.unwrap().unwrap(), &b""[..]);
        assert_eq!(
            r.read_line(&mut data).await.unwrap().unwrap(),
            &b"second\r"[..]
        );
        assert_eq!(r.lines(), 3);
        assert!(r.read_line(&mut data).await.unwrap().is_none());
        assert_eq!(r.pending(), 7);

        // Exactly at the cap is fine; one byte over is not, with or without a newline after it.
        let mut data: &[u8] = b"0123456789\n0123456789A\n";
        let mut r = LineReader::new(10);
        assert_eq!(r.read_line(&mut data).await.unwrap().unwrap().len(), 10);
        match r.read_line(&mut data).await {
            Err(ReadFail::TooLong(LineError::TooLong { limit, start })) => {
                assert_eq!(limit, 10);
                assert!(start.starts_with("0123456789"), "{start}");
            }
            other => panic!("{other:?}"),
        }
        let endless = vec![b'\x1b'; 1_000_000];
        let mut data: &[u8] = &endless;
        let mut r = LineReader::new(1000);
        match r.read_line(&mut data).await {
            Err(ReadFail::TooLong(e)) => {
                let text = e.to_string();
                assert!(text.contains("\\x1b\\x1b"), "{text}");
                assert!(text.len() < 2000, "{text}");
            }
            other => panic!("{other:?}"),
        }
        // It stopped reading one byte past the cap.
        assert!(data.len() >= 1_000_000 - 1001);
    }
}
