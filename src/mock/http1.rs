//! A small HTTP/1.1 server over raw TCP: the engine under every mock agent.
//!
//! A framework (axum, hyper) writes well-formed HTTP; a mock fleet must also write *badly*: reset
//! a connection mid-body (RST via SO_LINGER 0), close early, send garbage, lie in Content-Length,
//! trickle bytes, hold a connection forever, never read at all. So the engine owns the socket and
//! executes a [`Plan`] byte by byte. It parses requests with `httparse` (Content-Length and
//! chunked bodies, `Expect: 100-continue`, keep-alive), bounded: a 64 KiB head, a body cap, and
//! every wait cancellable by the server's shutdown token, so Ctrl-C never waits on a hung peer.

use std::borrow::Cow;
use std::mem::MaybeUninit;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Buf, Bytes, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::text::decimal;

/// Largest request head we read.
pub const MAX_HEAD: usize = 64 * 1024;
/// Most header fields in a request.
const MAX_HEADERS: usize = 100;

/// One request as received.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: String,
    /// The request target as sent (path and query).
    pub target: String,
    pub headers: Headers,
    pub body: Bytes,
    /// The peer asked to close after this exchange (or spoke HTTP/1.0 without keep-alive).
    pub close: bool,
    /// When the last byte of the request arrived.
    pub received: Instant,
    pub peer: SocketAddr,
    pub local: SocketAddr,
}

impl Request {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name)
    }

    /// The path, without the query string.
    pub fn path(&self) -> &str {
        match memchr::memchr(b'?', self.target.as_bytes()) {
            Some(end) => &self.target[..end],
            None => &self.target,
        }
    }
}

/// A request's header fields, in the order received: their text in one string and where each
/// name and value lies in it (two allocations per request, rather than two per field).
#[derive(Debug, Clone, Default)]
pub struct Headers {
    text: String,
    /// Per field: where its name starts and ends, where its value starts and ends.
    fields: Vec<[u32; 4]>,
}

impl Headers {
    fn with_capacity(fields: usize, text: usize) -> Headers {
        Headers {
            text: String::with_capacity(text),
            fields: Vec::with_capacity(fields),
        }
    }

    /// The fields httparse found in `head`: the text from the first name to the last value
    /// copied in one piece (the usual case: it is UTF-8), and where each field lies in it;
    /// otherwise field by field, bytes that are not UTF-8 replaced with U+FFFD (as `push`).
    fn parsed(head: &[u8], fields: &[httparse::Header<'_>]) -> Headers {
        if let Some(headers) = Headers::in_one_piece(head, fields) {
            return headers;
        }
        let mut headers = Headers::with_capacity(fields.len(), 256);
        for h in fields {
            headers.push(h.name, &text_of(h.value));
        }
        headers
    }

    /// [`Headers::parsed`]'s usual case; None when the text is not UTF-8 (or, which httparse
    /// rules out, a field does not lie in `head`).
    fn in_one_piece(head: &[u8], fields: &[httparse::Header<'_>]) -> Option<Headers> {
        // Where a slice httparse handed out starts in `head` (wrapping: one that does not lie
        // in it gives an offset past its end, which the checks below refuse).
        let offset = |bytes: &[u8]| (bytes.as_ptr() as usize).wrapping_sub(head.as_ptr() as usize);
        let (first, last) = (fields.first()?, fields.last()?);
        let start = offset(first.name.as_bytes());
        let end = offset(last.value).checked_add(last.value.len())?;
        let text = crate::text::utf8(head.get(start..end)?)?;
        // Where a slice lies in `text`.
        let span = |bytes: &[u8]| {
            let at = offset(bytes).wrapping_sub(start);
            let to = at.checked_add(bytes.len()).filter(|&to| to <= text.len())?;
            Some([at as u32, to as u32])
        };
        let mut spans = Vec::with_capacity(fields.len());
        for h in fields {
            let ([n, m], [v, e]) = (span(h.name.as_bytes())?, span(h.value)?);
            spans.push([n, m, v, e]);
        }
        Some(Headers {
            text: text.to_string(),
            fields: spans,
        })
    }

    pub fn push(&mut self, name: &str, value: &str) {
        let start = self.text.len() as u32;
        self.text.push_str(name);
        let value_start = self.text.len() as u32;
        self.text.push_str(value);
        self.fields
            .push([start, value_start, value_start, self.text.len() as u32]);
    }

    /// Name and value of each field.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.fields.iter().map(|&field| split(&self.text, field))
    }

    /// The first field named `name` (any case).
    pub fn get(&self, name: &str) -> Option<&str> {
        let [value] = self.first_of([name]);
        value
    }

    /// The first field of each of `names` (any case), in one pass over the fields: the engine
    /// looks for four on every request. Names are compared as bytes, length first.
    pub fn first_of<const N: usize>(&self, names: [&str; N]) -> [Option<&str>; N] {
        let mut found = [None; N];
        let text = self.text.as_bytes();
        for &[n, m, v, e] in &self.fields {
            let name = &text[n as usize..m as usize];
            for (slot, wanted) in found.iter_mut().zip(names) {
                if slot.is_none()
                    && name.len() == wanted.len()
                    && name.eq_ignore_ascii_case(wanted.as_bytes())
                {
                    *slot = Some(&self.text[v as usize..e as usize]);
                }
            }
        }
        found
    }

    /// Keeps the fields `keep` says yes to.
    pub fn retain(&mut self, mut keep: impl FnMut(&str, &str) -> bool) {
        let text = &self.text;
        self.fields.retain(|&field| {
            let (name, value) = split(text, field);
            keep(name, value)
        });
    }
}

/// A field's name and value in the fields' text.
fn split(text: &str, [n, m, v, e]: [u32; 4]) -> (&str, &str) {
    (&text[n as usize..m as usize], &text[v as usize..e as usize])
}

/// A response to write.
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    pub status: u16,
    /// Headers other than the framing ones (Content-Length, Transfer-Encoding, Connection), which
    /// the engine writes from [`Framing`]. Borrowed when known in advance (no allocation per
    /// answer for the usual `content-type`).
    pub headers: Vec<(Cow<'static, str>, Cow<'static, str>)>,
    pub body: Bytes,
}

impl Response {
    pub fn new(
        status: u16,
        content_type: impl Into<Cow<'static, str>>,
        body: impl Into<Bytes>,
    ) -> Response {
        Response {
            status,
            headers: vec![("content-type".into(), content_type.into())],
            body: body.into(),
        }
    }

    pub fn json_error(status: u16, message: &str) -> Response {
        let body = serde_json::to_vec(&serde_json::json!({ "error": message })).unwrap_or_default();
        Response::new(status, "application/json", body)
    }
}

/// How the body is delimited on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// `Content-Length` equal to the body.
    Length,
    /// `Content-Length: declared`, whatever the body's real size (then the connection closes).
    Lie { declared: u64 },
    /// `Transfer-Encoding: chunked`; with [`Plan::endless`], the body repeats forever.
    Chunked,
}

/// A fault below HTTP.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    None,
    /// Read the request, never answer; hold the connection until the peer leaves or shutdown.
    Hang,
    /// Read the request, then neither read nor answer again until shutdown.
    Blackhole,
    /// RST (SO_LINGER 0) before any byte of the answer.
    ResetBeforeHead,
    /// RST right after the head.
    ResetAfterHead,
    /// RST after this many body bytes.
    ResetAt(u64),
    /// Graceful close (FIN) after this many body bytes.
    CloseAt(u64),
    /// These bytes instead of an HTTP answer, then close.
    Garbage(Bytes),
}

/// Everything about how one answer goes out.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub response: Response,
    /// Delay from the request's last byte to the answer's first byte.
    pub ttfb: Duration,
    /// Delay between the head and the body.
    pub body_delay: Duration,
    /// Send the whole answer at this many bytes per second.
    pub dribble: Option<u32>,
    pub framing: Framing,
    pub fault: Fault,
    /// Repeat the body forever (chunked), until the peer leaves or shutdown.
    pub endless: bool,
}

impl Plan {
    pub fn immediate(response: Response) -> Plan {
        Plan {
            response,
            ttfb: Duration::ZERO,
            body_delay: Duration::ZERO,
            dribble: None,
            framing: Framing::Length,
            fault: Fault::None,
            endless: false,
        }
    }

    /// Head and body go out in one write, once the first byte is due.
    fn in_one_write(&self) -> bool {
        self.fault == Fault::None
            && self.body_delay.is_zero()
            && !self.endless
            && self.dribble.is_none()
    }

    /// Written at once, in one write: no delay, no fault (the common case).
    fn is_prompt(&self) -> bool {
        self.ttfb.is_zero() && self.in_one_write()
    }
}

/// How an answer ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// Every byte written.
    Complete,
    /// We reset the connection, as planned.
    Reset,
    /// We closed the connection early, as planned (garbage, close mid-body, a lying length).
    Closed,
    /// We held the request without answering until the peer left.
    Hung,
    /// The peer closed or reset the connection before we were done.
    PeerGone,
    /// The server shut down before we were done.
    Shutdown,
}

impl Outcome {
    /// Its name, as the journal and the report spell it (its serde name).
    pub fn word(self) -> &'static str {
        match self {
            Outcome::Complete => "complete",
            Outcome::Reset => "reset",
            Outcome::Closed => "closed",
            Outcome::Hung => "hung",
            Outcome::PeerGone => "peer-gone",
            Outcome::Shutdown => "shutdown",
        }
    }
}

/// What was actually sent.
#[derive(Debug, Clone, Copy)]
pub struct Delivered {
    pub outcome: Outcome,
    /// Bytes written (head and body).
    pub bytes: u64,
    /// Time from the request's last byte to our first byte (None: nothing written).
    pub ttfb: Option<Duration>,
    /// Time from the request's last byte to the end.
    pub total: Duration,
}

/// The mock side of the engine: what to do with each connection and request.
pub trait Handler: Send + Sync + 'static {
    /// Per-request state carried from [`Handler::handle`] to [`Handler::finish`].
    type Note: Send + 'static;

    /// Whether to read from a new connection on `local` at all (false: accept and never read,
    /// a black hole).
    fn reads(&self, local: SocketAddr) -> bool {
        let _ = local;
        true
    }

    /// Decides the answer to one request.
    fn handle(
        &self,
        request: Request,
    ) -> impl std::future::Future<Output = (Plan, Self::Note)> + Send;

    /// Told what was sent, once the answer is over.
    fn finish(
        &self,
        note: Self::Note,
        delivered: Delivered,
    ) -> impl std::future::Future<Output = ()> + Send;

    /// Told of a request the engine refused itself, before [`Handler::handle`] (a body over
    /// the limit: 413, a malformed head: 400): `target` is its path when the head was read.
    fn refused(&self, local: SocketAddr, target: Option<&str>, status: u16, message: &str) {
        let _ = (local, target, status, message);
    }

    /// Told of a request the peer began and never finished (it closed the connection in the
    /// middle of it): `target` is its path when the head arrived, `what` says how much came.
    fn incomplete(&self, local: SocketAddr, target: Option<&str>, what: &str) {
        let _ = (local, target, what);
    }
}

/// Limits on what a peer may send.
#[derive(Debug, Clone, Copy)]
pub struct ServerLimits {
    pub max_body: usize,
}

impl Default for ServerLimits {
    fn default() -> Self {
        ServerLimits {
            max_body: 32 * 1024 * 1024,
        }
    }
}

/// Accepts connections on `listener` until `stop` fires; each connection runs on `tracker`.
pub async fn serve<H: Handler>(
    listener: TcpListener,
    handler: Arc<H>,
    limits: ServerLimits,
    stop: CancellationToken,
    tracker: TaskTracker,
) {
    loop {
        let accepted = tokio::select! {
            _ = stop.cancelled() => return,
            accepted = listener.accept() => accepted,
        };
        let (stream, peer) = match accepted {
            Ok(pair) => pair,
            // Out of file descriptors and the like: back off instead of spinning.
            Err(_) => {
                tokio::select! {
                    _ = stop.cancelled() => return,
                    _ = tokio::time::sleep(Duration::from_millis(50)) => continue,
                }
            }
        };
        let _ = stream.set_nodelay(true);
        let handler = handler.clone();
        let stop = stop.clone();
        tracker.spawn(async move {
            let _ = connection(stream, peer, handler.as_ref(), limits, &stop).await;
        });
    }
}

/// Serves one connection: requests until the peer or a plan closes it.
async fn connection<H: Handler>(
    mut stream: TcpStream,
    peer: SocketAddr,
    handler: &H,
    limits: ServerLimits,
    stop: &CancellationToken,
) -> std::io::Result<()> {
    let local = stream.local_addr()?;
    if !handler.reads(local) {
        // A black hole: the kernel completes the handshake; we never read a byte.
        stop.cancelled().await;
        return Ok(());
    }
    let mut buf = BytesMut::new();
    // One shutdown waiter for the connection's life, not one registered and dropped per request.
    let cancelled = stop.cancelled();
    tokio::pin!(cancelled);
    loop {
        let read = tokio::select! {
            biased;
            _ = &mut cancelled => return Ok(()),
            read = read_request(&mut stream, &mut buf, limits) => read,
        };
        let request = match read {
            Ok(Some(parts)) => parts.stamp(peer, local),
            Ok(None) => return Ok(()),
            Err(ReadError::Incomplete { target, what }) => {
                handler.incomplete(local, target.as_deref(), &what);
                return Ok(());
            }
            Err(ReadError::Io(e)) => return Err(e),
            Err(ReadError::Bad {
                status,
                message,
                target,
            }) => {
                handler.refused(local, target.as_deref(), status, &message);
                let plan = Plan::immediate(Response::json_error(status, &message));
                write_plan(&mut stream, &plan, Instant::now(), true, stop).await;
                return Ok(());
            }
        };
        let close = request.close;
        let received = request.received;
        let (plan, note) = handler.handle(request).await;
        // The request is out of the buffer: while a slow or hung answer is written (it may take
        // long), an empty buffer need not keep its capacity. A prompt answer keeps it, and the
        // next request is read into the same allocation (the request, and its body, are gone).
        if buf.is_empty() && !plan.is_prompt() {
            buf = BytesMut::new();
        }
        let delivered = write_plan(&mut stream, &plan, received, close, stop).await;
        let keep_going = delivered.outcome == Outcome::Complete
            && !close
            && plan.framing != Framing::Chunked
            && !plan.endless;
        handler.finish(note, delivered).await;
        if !keep_going {
            return Ok(());
        }
    }
}

/// A request's parts before it is stamped.
pub(crate) struct Parts {
    method: String,
    target: String,
    headers: Headers,
    body: Bytes,
    close: bool,
}

impl Parts {
    /// The request, stamped now, between `peer` and `local`.
    pub(crate) fn stamp(self, peer: SocketAddr, local: SocketAddr) -> Request {
        Request {
            method: self.method,
            target: self.target,
            headers: self.headers,
            body: self.body,
            close: self.close,
            received: Instant::now(),
            peer,
            local,
        }
    }
}

pub(crate) enum ReadError {
    Io(std::io::Error),
    /// The peer closed in the middle of a request.
    Incomplete {
        target: Option<String>,
        what: String,
    },
    /// Answer with this status and close; `target` is the request's, when its head was read.
    Bad {
        status: u16,
        message: String,
        target: Option<String>,
    },
}

impl From<std::io::Error> for ReadError {
    fn from(e: std::io::Error) -> Self {
        ReadError::Io(e)
    }
}

fn bad(status: u16, message: impl Into<String>) -> ReadError {
    ReadError::Bad {
        status,
        message: message.into(),
        target: None,
    }
}

/// Bytes as text: as they are when UTF-8 (nearly always, and ASCII: told without
/// `from_utf8_lossy`'s chunking), else with U+FFFD for what is not.
fn text_of(bytes: &[u8]) -> Cow<'_, str> {
    match crate::text::utf8(bytes) {
        Some(text) => Cow::Borrowed(text),
        None => String::from_utf8_lossy(bytes),
    }
}

/// Reads more bytes into `buf`; false at end of stream.
async fn fill<S: AsyncRead + Unpin>(stream: &mut S, buf: &mut BytesMut) -> std::io::Result<bool> {
    if buf.capacity() - buf.len() < 1024 {
        buf.reserve(4096);
    }
    Ok(stream.read_buf(buf).await? > 0)
}

/// Reads one request (head and body). `Ok(None)`: the peer closed cleanly between requests.
/// Generic over the stream so that the fuzz targets can feed it bytes from memory.
pub(crate) async fn read_request<S: AsyncRead + AsyncWrite + Unpin>(
    stream: &mut S,
    buf: &mut BytesMut,
    limits: ServerLimits,
) -> Result<Option<Parts>, ReadError> {
    let (head_len, method, target, headers, minor) = loop {
        if !buf.is_empty() {
            // Uninitialized slots: zeroing a hundred of them cost more than parsing the head.
            let mut slots = [const { MaybeUninit::uninit() }; MAX_HEADERS];
            let mut req = httparse::Request::new(&mut []);
            match req.parse_with_uninit_headers(buf, &mut slots) {
                Ok(httparse::Status::Complete(n)) if n > MAX_HEAD => {
                    return Err(bad(431, "the request head is larger than 64 KiB"))
                }
                Ok(httparse::Status::Complete(n)) => {
                    let headers = Headers::parsed(buf, req.headers);
                    break (
                        n,
                        req.method.unwrap_or("").to_string(),
                        req.path.unwrap_or("").to_string(),
                        headers,
                        req.version.unwrap_or(1),
                    );
                }
                Ok(httparse::Status::Partial) => {}
                Err(httparse::Error::TooManyHeaders) => {
                    return Err(bad(431, "too many request header fields"))
                }
                Err(e) => return Err(bad(400, format!("not a valid HTTP/1.1 request: {e}"))),
            }
        }
        if buf.len() > MAX_HEAD {
            return Err(bad(431, "the request head is larger than 64 KiB"));
        }
        if !fill(stream, buf).await? {
            return if buf.is_empty() {
                Ok(None)
            } else {
                // The request line's target, if that much came.
                let target = buf[..]
                    .split(|&b| b == b'\n')
                    .next()
                    .filter(|line| line.len() < buf.len())
                    .and_then(|line| std::str::from_utf8(line).ok())
                    .and_then(|line| line.split(' ').nth(1))
                    .map(str::to_string);
                Err(ReadError::Incomplete {
                    target,
                    what: format!(
                        "{} byte(s) of a request head, then the connection closed",
                        buf.len()
                    ),
                })
            };
        }
    };
    buf.advance(head_len);
    let [connection, expect, transfer_encoding, content_length] = headers
        .first_of([
            "connection",
            "expect",
            "transfer-encoding",
            "content-length",
        ])
        .map(|value| value.map(str::trim));
    let has_token = |field: Option<&str>, token: &str| {
        field.is_some_and(|v| v.split(',').any(|t| t.trim().eq_ignore_ascii_case(token)))
    };
    let close =
        has_token(connection, "close") || (minor == 0 && !has_token(connection, "keep-alive"));
    if expect.is_some_and(|v| v.eq_ignore_ascii_case("100-continue")) {
        stream.write_all(b"HTTP/1.1 100 Continue\r\n\r\n").await?;
    }
    let body = if has_token(transfer_encoding, "chunked") {
        read_chunked(stream, buf, limits.max_body)
            .await
            .map_err(|e| match e {
                ReadError::Io(io) if io.kind() == std::io::ErrorKind::UnexpectedEof => {
                    ReadError::Incomplete {
                        target: Some(target.clone()),
                        what:
                            "a chunked body cut short: the connection closed before its last chunk"
                                .into(),
                    }
                }
                ReadError::Bad {
                    status, message, ..
                } => ReadError::Bad {
                    status,
                    message,
                    target: Some(target.clone()),
                },
                e => e,
            })?
    } else {
        let length = match content_length {
            None => 0,
            Some(v) => v
                .parse::<usize>()
                .map_err(|_| bad(400, format!("Content-Length {v:?} is not a number")))?,
        };
        if length > limits.max_body {
            return Err(ReadError::Bad {
                status: 413,
                message: format!(
                    "the request body ({length} bytes) is over the mock's limit of {} bytes",
                    limits.max_body
                ),
                target: Some(target),
            });
        }
        while buf.len() < length {
            if !fill(stream, buf).await? {
                return Err(ReadError::Incomplete {
                    target: Some(target),
                    what: format!(
                        "{} of {length} body byte(s) (Content-Length), then the connection closed",
                        buf.len()
                    ),
                });
            }
        }
        buf.split_to(length).freeze()
    };
    Ok(Some(Parts {
        method,
        target,
        headers,
        body,
        close,
    }))
}

/// Decodes a chunked request body (trailers are read and dropped).
async fn read_chunked<S: AsyncRead + Unpin>(
    stream: &mut S,
    buf: &mut BytesMut,
    max_body: usize,
) -> Result<Bytes, ReadError> {
    let mut body = BytesMut::new();
    loop {
        let line = read_line(stream, buf).await?;
        let size_text = line.split(';').next().unwrap_or("").trim();
        let size = usize::from_str_radix(size_text, 16)
            .map_err(|_| bad(400, format!("bad chunk size {size_text:?}")))?;
        if size == 0 {
            // Trailers, up to the empty line.
            while !read_line(stream, buf).await?.is_empty() {}
            return Ok(body.freeze());
        }
        // Compared without adding: a size of 16 hex digits would overflow the sum.
        if size > max_body.saturating_sub(body.len()) {
            return Err(bad(
                413,
                format!("the request body is over the mock's limit of {max_body} bytes"),
            ));
        }
        while buf.len() < size + 2 {
            if !fill(stream, buf).await? {
                return Err(ReadError::Io(std::io::ErrorKind::UnexpectedEof.into()));
            }
        }
        body.extend_from_slice(&buf[..size]);
        buf.advance(size + 2);
    }
}

/// One CRLF-terminated line (without the CRLF), at most 4 KiB.
async fn read_line<S: AsyncRead + Unpin>(
    stream: &mut S,
    buf: &mut BytesMut,
) -> Result<String, ReadError> {
    loop {
        if let Some(end) = buf.windows(2).position(|w| w == b"\r\n") {
            let line = String::from_utf8_lossy(&buf[..end]).into_owned();
            buf.advance(end + 2);
            return Ok(line);
        }
        if buf.len() > 4096 {
            return Err(bad(400, "a chunk header line is longer than 4 KiB"));
        }
        if !fill(stream, buf).await? {
            return Err(ReadError::Io(std::io::ErrorKind::UnexpectedEof.into()));
        }
    }
}

/// The reason phrase HTTP gives `status` (`Service Unavailable`), if it has one.
pub fn canonical_reason(status: u16) -> Option<&'static str> {
    hyper::StatusCode::from_u16(status)
        .ok()
        .and_then(|s| s.canonical_reason())
}

fn reason(status: u16) -> &'static str {
    canonical_reason(status).unwrap_or("Unknown")
}

/// The status line and headers of `plan`, in a buffer with room for `room` more bytes (the body,
/// when it goes out in the same write).
pub fn head(plan: &Plan, close: bool, room: usize) -> Vec<u8> {
    let r = &plan.response;
    let mut out = Vec::with_capacity(160 + r.headers.len() * 48 + room);
    let mut digits = [0; 20];
    if r.status == 200 {
        // Nearly every answer: its line without a number written or a reason looked up.
        out.extend_from_slice(b"HTTP/1.1 200 OK\r\n");
    } else {
        out.extend_from_slice(b"HTTP/1.1 ");
        out.extend_from_slice(decimal(u64::from(r.status), &mut digits).as_bytes());
        out.push(b' ');
        out.extend_from_slice(reason(r.status).as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    for (name, value) in &r.headers {
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    let length = match plan.framing {
        Framing::Length => Some(r.body.len() as u64),
        Framing::Lie { declared } => Some(declared),
        Framing::Chunked => None,
    };
    match length {
        Some(length) => {
            out.extend_from_slice(b"content-length: ");
            out.extend_from_slice(decimal(length, &mut digits).as_bytes());
            out.extend_from_slice(b"\r\n");
        }
        None => out.extend_from_slice(b"transfer-encoding: chunked\r\n"),
    }
    let closes = close || !matches!(plan.framing, Framing::Length) || plan.fault != Fault::None;
    out.extend_from_slice(if closes {
        b"connection: close\r\n\r\n" as &[u8]
    } else {
        b"connection: keep-alive\r\n\r\n"
    });
    out
}

/// The body bytes as framed (a chunked body is one chunk, without the final zero chunk when
/// the body is endless).
fn framed_body(plan: &Plan) -> Bytes {
    let body = &plan.response.body;
    if plan.framing != Framing::Chunked || body.is_empty() {
        return body.clone();
    }
    let mut out = BytesMut::with_capacity(body.len() + 16);
    out.extend_from_slice(format!("{:x}\r\n", body.len()).as_bytes());
    out.extend_from_slice(body);
    out.extend_from_slice(b"\r\n");
    if !plan.endless {
        out.extend_from_slice(b"0\r\n\r\n");
    }
    out.freeze()
}

/// Writes bytes, counting them; stops at shutdown.
struct Writer<'a> {
    stream: &'a mut TcpStream,
    stop: &'a CancellationToken,
    bytes: u64,
    first: Option<Instant>,
    /// Bytes per second, when dribbling.
    rate: Option<u32>,
}

enum Stopped {
    PeerGone,
    Shutdown,
}

impl Writer<'_> {
    async fn write(&mut self, data: &[u8]) -> Result<(), Stopped> {
        match self.rate {
            None => self.write_now(data).await,
            Some(rate) => {
                // A tick every 10 ms (or one byte per tick below 100 B/s), so the rate holds.
                let rate = rate.max(1) as usize;
                let per_tick = (rate / 100).max(1);
                let tick = Duration::from_secs_f64(per_tick as f64 / rate as f64);
                for piece in data.chunks(per_tick) {
                    self.write_now(piece).await?;
                    self.sleep(tick).await?;
                }
                Ok(())
            }
        }
    }

    async fn write_now(&mut self, data: &[u8]) -> Result<(), Stopped> {
        if data.is_empty() {
            return Ok(());
        }
        self.first.get_or_insert_with(Instant::now);
        // Nearly always the socket takes the whole answer at once: written without a future
        // watching for shutdown (a cancellation waiter registered and dropped per answer).
        let data = match self.stream.try_write(data) {
            Ok(n) if n == data.len() => {
                self.bytes += n as u64;
                return Ok(());
            }
            Ok(n) => {
                self.bytes += n as u64;
                &data[n..]
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::Interrupted
                ) =>
            {
                data
            }
            Err(_) => return Err(Stopped::PeerGone),
        };
        tokio::select! {
            _ = self.stop.cancelled() => Err(Stopped::Shutdown),
            written = self.stream.write_all(data) => match written {
                Ok(()) => { self.bytes += data.len() as u64; Ok(()) }
                Err(_) => Err(Stopped::PeerGone),
            },
        }
    }

    async fn sleep(&self, d: Duration) -> Result<(), Stopped> {
        if d.is_zero() {
            return Ok(());
        }
        tokio::select! {
            _ = self.stop.cancelled() => Err(Stopped::Shutdown),
            _ = tokio::time::sleep(d) => Ok(()),
        }
    }

    /// Waits until `at`, watching the peer: one that leaves meanwhile (it gave up on us) is seen
    /// when it leaves, not at our first write after it — a write to a closed peer can succeed.
    async fn sleep_until(&self, at: Instant) -> Result<(), Stopped> {
        let sleep = tokio::time::sleep_until(at.into());
        tokio::pin!(sleep);
        let mut byte = [0u8; 1];
        let mut watching = true;
        loop {
            tokio::select! {
                biased;
                _ = self.stop.cancelled() => return Err(Stopped::Shutdown),
                _ = &mut sleep => return Ok(()),
                // `peek` leaves the bytes of a pipelined request where they are; once one is
                // there, the peer is plainly still here.
                peeked = self.stream.peek(&mut byte), if watching => match peeked {
                    Ok(0) | Err(_) => return Err(Stopped::PeerGone),
                    Ok(_) => watching = false,
                },
            }
        }
    }
}

/// Executes `plan` on `stream`. `received` is when the request's last byte arrived.
pub async fn write_plan(
    stream: &mut TcpStream,
    plan: &Plan,
    received: Instant,
    close: bool,
    stop: &CancellationToken,
) -> Delivered {
    let mut w = Writer {
        stream,
        stop,
        bytes: 0,
        first: None,
        rate: plan.dribble,
    };
    let outcome = match run_plan(&mut w, plan, received, close).await {
        Ok(outcome) => outcome,
        Err(Stopped::PeerGone) => Outcome::PeerGone,
        Err(Stopped::Shutdown) => Outcome::Shutdown,
    };
    let (bytes, first) = (w.bytes, w.first);
    match outcome {
        Outcome::Reset => {
            let _ = stream.set_zero_linger();
        }
        Outcome::Complete if !close && plan.fault == Fault::None => {
            let _ = stream.flush().await;
        }
        _ => {
            let _ = stream.shutdown().await;
        }
    }
    Delivered {
        outcome,
        bytes,
        ttfb: first.map(|f| f.saturating_duration_since(received)),
        total: received.elapsed(),
    }
}

async fn run_plan(
    w: &mut Writer<'_>,
    plan: &Plan,
    received: Instant,
    close: bool,
) -> Result<Outcome, Stopped> {
    // `sleep_until` from the request's arrival: the delay is never shorter than planned. No
    // timer at all when there is no delay (tokio rounds every deadline up to its next 1 ms
    // tick: an immediate answer would wait for it).
    if !plan.ttfb.is_zero() {
        w.sleep_until(received + plan.ttfb).await?;
    }
    match &plan.fault {
        Fault::Hang => return hang(w).await,
        Fault::Blackhole => {
            w.stop.cancelled().await;
            return Err(Stopped::Shutdown);
        }
        Fault::ResetBeforeHead => return Ok(Outcome::Reset),
        Fault::Garbage(bytes) => {
            w.write(bytes).await?;
            return Ok(Outcome::Closed);
        }
        _ => {}
    }
    if plan.in_one_write() {
        // The common case: head and body in one write (one segment, one wake-up for the peer).
        let body = framed_body(plan);
        let mut whole = head(plan, close, body.len());
        whole.extend_from_slice(&body);
        w.write(&whole).await?;
        return Ok(match plan.framing {
            Framing::Lie { .. } => Outcome::Closed,
            _ => Outcome::Complete,
        });
    }
    w.write(&head(plan, close, 0)).await?;
    if plan.fault == Fault::ResetAfterHead {
        return Ok(Outcome::Reset);
    }
    w.sleep(plan.body_delay).await?;
    let body = framed_body(plan);
    match plan.fault {
        Fault::ResetAt(n) | Fault::CloseAt(n) => {
            let n = (n as usize).min(body.len());
            w.write(&body[..n]).await?;
            return Ok(if matches!(plan.fault, Fault::ResetAt(_)) {
                Outcome::Reset
            } else {
                Outcome::Closed
            });
        }
        _ => {}
    }
    if plan.endless && !body.is_empty() {
        loop {
            w.write(&body).await?;
        }
    }
    w.write(&body).await?;
    Ok(match plan.framing {
        Framing::Lie { .. } => Outcome::Closed,
        _ => Outcome::Complete,
    })
}

/// Holds the connection without answering until the peer leaves (or shutdown); reads and drops
/// whatever else the peer sends.
/// How long a hung answer looks for its peer's end at a shutdown.
const LAST_LOOK: Duration = Duration::from_millis(50);

async fn hang(w: &mut Writer<'_>) -> Result<Outcome, Stopped> {
    let mut sink = [0u8; 256];
    loop {
        tokio::select! {
            // The peer first: one that has left before the shutdown is seen leaving (the
            // observer judges when it gave up), not taken for one still waiting.
            biased;
            read = w.stream.read(&mut sink) => match read {
                Ok(0) | Err(_) => return Ok(Outcome::Hung),
                Ok(_) => {}
            },
            _ = w.stop.cancelled() => {
                // A peer that left a moment before the shutdown may not have been seen yet (the
                // reactor had not reported its FIN): a short look settles it.
                let last = tokio::time::timeout(LAST_LOOK, w.stream.read(&mut sink)).await;
                return match last {
                    Ok(Ok(0) | Err(_)) => Ok(Outcome::Hung),
                    _ => Err(Stopped::Shutdown),
                };
            }
        }
    }
}

/// A handler served on a port of its own (a protocol's reference server, a probe's listener),
/// until [`Running::stop`].
pub struct Running {
    pub addr: SocketAddr,
    stop: CancellationToken,
    tracker: TaskTracker,
}

impl Running {
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Stops accepting and waits (at most 2 s) for the connections in flight.
    pub async fn stop(self) {
        self.stop.cancel();
        self.tracker.close();
        let _ = tokio::time::timeout(Duration::from_secs(2), self.tracker.wait()).await;
    }
}

/// Binds `addr` (port 0: the OS picks) and serves `handler` there.
pub async fn spawn<H: Handler>(handler: Arc<H>, addr: SocketAddr) -> Result<Running, String> {
    spawn_with(handler, addr, ServerLimits::default()).await
}

/// The same, with `limits` on what a peer may send.
pub async fn spawn_with<H: Handler>(
    handler: Arc<H>,
    addr: SocketAddr,
    limits: ServerLimits,
) -> Result<Running, String> {
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|e| format!("cannot listen on {addr}: {e}"))?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    let stop = CancellationToken::new();
    let tracker = TaskTracker::new();
    tracker.spawn(serve(
        listener,
        handler,
        limits,
        stop.clone(),
        tracker.clone(),
    ));
    Ok(Running {
        addr,
        stop,
        tracker,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    /// A request head as the engine reads it: every field in order, looked up in any case (the
    /// first of a repeated name), a value that is not UTF-8 kept with U+FFFD in its place.
    #[tokio::test]
    async fn header_fields_are_kept_in_order_and_found_in_any_case() {
        let (mut client, mut server) = tokio::io::duplex(4096);
        client
            .write_all(
                b"POST /agents/a/analyze?x=1 HTTP/1.1\r\nHost: h\r\nX-Twice: one\r\n\
                  x-twice: two\r\nX-Bytes: caf\xe9\r\nContent-Length: 2\r\n\r\n{}",
            )
            .await
            .unwrap();
        let limits = ServerLimits { max_body: 1024 };
        let Ok(Some(parts)) = read_request(&mut server, &mut BytesMut::new(), limits).await else {
            panic!("the request was not read");
        };
        let local = SocketAddr::from(([127, 0, 0, 1], 1));
        let mut request = parts.stamp(local, local);
        assert_eq!(request.method, "POST");
        assert_eq!(request.path(), "/agents/a/analyze");
        assert_eq!(&request.body[..], b"{}");
        let fields: Vec<(&str, &str)> = request.headers.iter().collect();
        assert_eq!(
            fields,
            [
                ("Host", "h"),
                ("X-Twice", "one"),
                ("x-twice", "two"),
                ("X-Bytes", "caf\u{fffd}"),
                ("Content-Length", "2"),
            ]
        );
        assert_eq!(request.header("x-TWICE"), Some("one"));
        assert_eq!(request.header("content-length"), Some("2"));
        assert_eq!(request.header("absent"), None);
        request
            .headers
            .retain(|name, _| !name.eq_ignore_ascii_case("x-twice"));
        assert_eq!(request.header("x-twice"), None);
        assert_eq!(request.headers.iter().count(), 3);
        assert_eq!(request.header("x-bytes"), Some("caf\u{fffd}"));
        assert_eq!(
            Request {
                target: "/a".into(),
                ..request
            }
            .path(),
            "/a",
            "a target without a query"
        );
    }

    /// Fields read from a head in one piece are the fields read one by one: names and values
    /// as httparse cut them (spaces around a value dropped), in ASCII, in UTF-8, and (field by
    /// field then) in bytes that are not UTF-8.
    #[test]
    fn fields_copied_in_one_piece_are_the_fields_copied_one_by_one() {
        let heads: [&[u8]; 4] = [
            b"GET / HTTP/1.1\r\nHost: h\r\nX-A:   spaced  \r\nx-empty:\r\n\r\n",
            "GET / HTTP/1.1\r\nX-Ok: ok\r\nX-Name: caf\u{e9} \u{2713}\r\n\r\n".as_bytes(),
            b"GET / HTTP/1.1\r\nA: 1\r\nX-Bytes: caf\xe9\r\nB: 2\r\n\r\n",
            b"GET / HTTP/1.1\r\n\r\n",
        ];
        for head in heads {
            let mut slots = [httparse::EMPTY_HEADER; 8];
            let mut req = httparse::Request::new(&mut slots);
            assert!(req.parse(head).unwrap().is_complete(), "{head:?}");
            let mut one_by_one = Headers::default();
            for h in req.headers.iter() {
                one_by_one.push(h.name, &text_of(h.value));
            }
            let parsed = Headers::parsed(head, req.headers);
            let fields: Vec<(&str, &str)> = parsed.iter().collect();
            assert_eq!(fields, one_by_one.iter().collect::<Vec<_>>(), "{head:?}");
            assert_eq!(fields.len(), req.headers.len());
        }
        let mut slots = [httparse::EMPTY_HEADER; 4];
        let mut req = httparse::Request::new(&mut slots);
        let head = b"GET / HTTP/1.1\r\nX-A:   spaced  \r\n\r\n";
        req.parse(head).unwrap();
        let parsed = Headers::parsed(head, req.headers);
        assert_eq!(parsed.get("x-a"), Some("spaced"));
    }

    #[test]
    fn an_outcome_word_is_its_serialized_name() {
        use Outcome::*;
        for o in [Complete, Reset, Closed, Hung, PeerGone, Shutdown] {
            assert_eq!(serde_json::to_value(o).unwrap(), o.word(), "{o:?}");
        }
    }

    /// The status line (200's written whole, the others from the number and its reason), the
    /// response's own fields, then the framing ones.
    #[test]
    fn a_head_holds_the_status_line_the_fields_and_the_framing() {
        let head_of = |status, close| {
            let plan = Plan::immediate(Response::new(status, "text/plain", "hi"));
            String::from_utf8(head(&plan, close, 0)).unwrap()
        };
        assert_eq!(
            head_of(200, false),
            "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: 2\r\n\
             connection: keep-alive\r\n\r\n"
        );
        assert_eq!(
            reason(200),
            "OK",
            "the line written whole says what the lookup would"
        );
        assert_eq!(
            head_of(404, true),
            "HTTP/1.1 404 Not Found\r\ncontent-type: text/plain\r\ncontent-length: 2\r\n\
             connection: close\r\n\r\n"
        );
        assert!(head_of(299, false).starts_with("HTTP/1.1 299 Unknown\r\n"));
    }
}
