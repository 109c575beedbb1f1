//! The execute_task protocol over a socket ("Socket Protocol"): TCP or Unix, one JSON document
//! per line each way.
//!
//! Every exchange (connect, write, read) runs under one total deadline; the request is written
//! while the answer is read, so a peer that does not read cannot stall us past it. Answers are read
//! by the capped line reader shared with stdio. A persistent connection that failed an exchange
//! (timeout, over-long line, early answer) is out of step with our requests and is replaced before
//! the next one; one the peer closed between exchanges is replaced too ("reconnect once"). A
//! connection that closes *during* an exchange is an error, never a silent resend: the agent may
//! have acted on the request.

use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpStream, UnixStream};

use super::lines::{AfterSilence, LineReader, ReadFail};
pub use super::lines::{LineAnswer, LineError};

/// Where the agent listens.
#[derive(Debug, Clone)]
pub enum SocketAddrSpec {
    /// `host:port`.
    Tcp(String),
    Unix(PathBuf),
}

impl std::fmt::Display for SocketAddrSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SocketAddrSpec::Tcp(addr) => write!(f, "tcp {addr}"),
            SocketAddrSpec::Unix(path) => write!(f, "unix {}", path.display()),
        }
    }
}

/// How connections are used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SocketMode {
    /// One connection for many exchanges (what the spec describes).
    Persistent,
    /// A new connection per exchange, closed after the answer (what the known reference harness
    /// does).
    PerCall,
}

/// A socket agent speaking JSON lines.
#[derive(Debug)]
pub struct SocketAgent {
    addr: SocketAddrSpec,
    mode: SocketMode,
    max_line: usize,
    conn: Option<Conn>,
    connects: u64,
}

#[derive(Debug)]
enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
}

type Halves<'a> = (
    Box<dyn AsyncRead + Unpin + Send + 'a>,
    Box<dyn AsyncWrite + Unpin + Send + 'a>,
);

impl Stream {
    fn split(&mut self) -> Halves<'_> {
        match self {
            Stream::Tcp(s) => {
                let (r, w) = s.split();
                (Box::new(r), Box::new(w))
            }
            Stream::Unix(s) => {
                let (r, w) = s.split();
                (Box::new(r), Box::new(w))
            }
        }
    }

    fn raw_fd(&self) -> std::os::fd::RawFd {
        match self {
            Stream::Tcp(s) => s.as_raw_fd(),
            Stream::Unix(s) => s.as_raw_fd(),
        }
    }

    async fn shutdown(&mut self) {
        let _ = match self {
            Stream::Tcp(s) => s.shutdown().await,
            Stream::Unix(s) => s.shutdown().await,
        };
    }

    /// Whether the peer has closed (or reset) the connection, without waiting and without
    /// consuming anything. Asks the kernel directly (a non-blocking `MSG_PEEK`), not tokio's cached
    /// readiness, which may not have seen a FIN that arrived while nobody was reading.
    fn peer_closed(&self) -> bool {
        let mut byte = 0u8;
        // SAFETY: `byte` is a valid one-byte buffer for the duration of the call; the fd is open
        // (owned by `self`).
        let n = unsafe {
            libc::recv(
                self.raw_fd(),
                (&mut byte as *mut u8).cast(),
                1,
                libc::MSG_PEEK | libc::MSG_DONTWAIT,
            )
        };
        match n {
            0 => true,
            n if n > 0 => false,
            _ => {
                let err = std::io::Error::last_os_error();
                !matches!(
                    err.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::Interrupted
                )
            }
        }
    }
}

#[derive(Debug)]
struct Conn {
    stream: Stream,
    reader: LineReader,
    /// Not in step with our requests: replace before the next exchange.
    out_of_step: bool,
}

impl SocketAgent {
    pub fn new(addr: SocketAddrSpec, mode: SocketMode, max_line: usize) -> SocketAgent {
        SocketAgent {
            addr,
            mode,
            max_line,
            conn: None,
            connects: 0,
        }
    }

    /// Connections opened so far.
    pub fn connects(&self) -> u64 {
        self.connects
    }

    /// Writes `request` and a newline, reads one line (capped), all under a total `deadline`.
    /// Persistent: one connection reused; a new one if it was closed (or left out of step by a
    /// failed exchange) before this exchange started. Per-call: a new connection, closed after
    /// the answer.
    pub async fn exchange(
        &mut self,
        request: &[u8],
        deadline: Duration,
    ) -> Result<LineAnswer, LineError> {
        let started = Instant::now();
        let until = tokio::time::Instant::now() + deadline;
        match self.mode {
            SocketMode::PerCall => self.conn = None,
            SocketMode::Persistent => {
                if self
                    .conn
                    .as_ref()
                    .is_some_and(|c| c.out_of_step || c.stream.peer_closed())
                {
                    self.conn = None;
                }
            }
        }
        let mut message = Vec::with_capacity(request.len() + 1);
        message.extend_from_slice(request);
        message.push(b'\n');
        let outcome = tokio::time::timeout_at(until, self.turn(&message)).await;
        let result = match outcome {
            Ok(Ok((text, line_no))) => Ok(LineAnswer {
                text,
                line_no,
                elapsed: started.elapsed(),
            }),
            Ok(Err(e)) => Err(e),
            Err(_) => Err(LineError::Timeout {
                deadline,
                got: self.conn.as_ref().map_or(0, |c| c.reader.pending()),
            }),
        };
        // A timeout with nothing read keeps the connection (out of step: the next exchange
        // replaces it), so that `output_at_eof` can still ask it.
        let silent = matches!(result, Err(LineError::Timeout { got: 0, .. }));
        if (self.mode == SocketMode::PerCall || result.is_err()) && !silent {
            self.close().await;
        }
        result
    }

    /// After an exchange that timed out with nothing read: waits `open` more with the
    /// connection whole (a slow agent answers then: `Late`), then shuts down our side of it (the
    /// agent's end of input), reads what the agent writes until it closes or `grace` passes,
    /// closes, and returns how many bytes came (`AtEof`; 0 without a connection). An agent that
    /// holds its answers in an unflushed writer often writes them only when its input ends.
    pub async fn output_at_eof(&mut self, open: Duration, grace: Duration) -> AfterSilence {
        let Some(conn) = self.conn.as_mut() else {
            return AfterSilence::AtEof(0);
        };
        conn.out_of_step = true;
        let late = {
            let (mut rd, _) = conn.stream.split();
            matches!(
                tokio::time::timeout(open, conn.reader.read_some(&mut rd)).await,
                Ok(Ok(n)) if n > 0
            )
        };
        if late {
            let got = conn.reader.pending();
            self.close().await;
            return AfterSilence::Late(got);
        }
        let until = tokio::time::Instant::now() + grace;
        let drain = async {
            conn.stream.shutdown().await;
            let (mut rd, _) = conn.stream.split();
            while let Ok(n) = conn.reader.read_some(&mut rd).await {
                if n == 0 {
                    break;
                }
            }
        };
        let _ = tokio::time::timeout_at(until, drain).await;
        let got = conn.reader.pending();
        self.close().await;
        AfterSilence::AtEof(got)
    }

    /// Closes the connection, if one is open.
    pub async fn close(&mut self) {
        if let Some(mut conn) = self.conn.take() {
            let _ = tokio::time::timeout(Duration::from_secs(1), conn.stream.shutdown()).await;
        }
    }

    async fn turn(&mut self, message: &[u8]) -> Result<(Bytes, u64), LineError> {
        if self.conn.is_none() {
            let stream = connect(&self.addr).await?;
            self.connects += 1;
            self.conn = Some(Conn {
                stream,
                reader: LineReader::new(self.max_line),
                out_of_step: false,
            });
        }
        let Some(conn) = self.conn.as_mut() else {
            return Err(LineError::Io("no connection".into()));
        };
        // Out of step until this exchange completes (also if the future is dropped half-way).
        conn.out_of_step = true;
        let (read, complete_write, write_error) = {
            let (mut rd, mut wr) = conn.stream.split();
            let write = async {
                wr.write_all(message).await?;
                wr.flush().await
            };
            tokio::pin!(write);
            let mut writing = true;
            let mut write_error = None;
            let read = loop {
                tokio::select! {
                    written = &mut write, if writing => {
                        writing = false;
                        // The read says what the peer did (an answer, a close, a reset).
                        write_error = written.err();
                    }
                    read = conn.reader.read_line(&mut rd) => break read,
                }
            };
            let complete = !writing && write_error.is_none();
            (read, complete, write_error)
        };
        match read {
            Ok(Some(line)) => {
                conn.out_of_step = !complete_write;
                Ok((line, conn.reader.lines()))
            }
            Ok(None) => match write_error {
                Some(e) => Err(LineError::Io(format!(
                    "the agent closed the connection before reading the request ({e})"
                ))),
                None => Err(LineError::Closed {
                    stderr_tail: String::new(),
                }),
            },
            Err(ReadFail::TooLong(e)) => Err(e),
            Err(ReadFail::Io(e)) => Err(LineError::Io(describe_read_error(
                &e,
                conn.reader.pending(),
            ))),
        }
    }
}

async fn connect(addr: &SocketAddrSpec) -> Result<Stream, LineError> {
    let fail = |e: std::io::Error| LineError::Io(format!("cannot connect to {addr}: {e}"));
    match addr {
        SocketAddrSpec::Tcp(host_port) => {
            let stream = TcpStream::connect(host_port.as_str()).await.map_err(fail)?;
            let _ = stream.set_nodelay(true);
            Ok(Stream::Tcp(stream))
        }
        SocketAddrSpec::Unix(path) => {
            Ok(Stream::Unix(UnixStream::connect(path).await.map_err(fail)?))
        }
    }
}

fn describe_read_error(error: &std::io::Error, got: usize) -> String {
    match error.kind() {
        std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::ConnectionAborted => {
            format!("connection reset by the agent after {got} bytes of the answer")
        }
        _ => format!("reading the answer (after {got} bytes): {error}"),
    }
}
