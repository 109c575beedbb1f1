//! The messages the engine reads and writes: a request as received (its header fields kept in
//! one string), a response, and the plan of how an answer goes out (its framing, delays and
//! faults), with what was actually sent.

use std::borrow::Cow;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use bytes::Bytes;

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
    /// Cancelled when the peer leaves while [`super::Handler::handle`] still works on the
    /// answer: set only for a handler that waits on others ([`super::Handler::waits`]).
    pub left: Option<tokio_util::sync::CancellationToken>,
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
    pub(super) fn parsed(head: &[u8], fields: &[httparse::Header<'_>]) -> Headers {
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
    pub(super) fn in_one_write(&self) -> bool {
        self.fault == Fault::None
            && self.body_delay.is_zero()
            && !self.endless
            && self.dribble.is_none()
    }

    /// Written at once, in one write: no delay, no fault (the common case).
    pub(super) fn is_prompt(&self) -> bool {
        self.ttfb.is_zero() && self.in_one_write()
    }
}

/// How an answer ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
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
#[derive(Debug, Clone, Copy, serde::Serialize, serde::Deserialize)]
pub struct Delivered {
    pub outcome: Outcome,
    /// Bytes written (head and body).
    pub bytes: u64,
    /// Time from the request's last byte to our first byte (None: nothing written).
    pub ttfb: Option<Duration>,
    /// Time from the request's last byte to the end.
    pub total: Duration,
}

/// Bytes as text: as they are when UTF-8 (nearly always, and ASCII: told without
/// `from_utf8_lossy`'s chunking), else with U+FFFD for what is not.
fn text_of(bytes: &[u8]) -> Cow<'_, str> {
    match crate::text::utf8(bytes) {
        Some(text) => Cow::Borrowed(text),
        None => String::from_utf8_lossy(bytes),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
