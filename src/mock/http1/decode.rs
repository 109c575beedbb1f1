//! Reading a request: its head parsed with `httparse`, its body by Content-Length or chunked,
//! every size bounded.

use std::mem::MaybeUninit;
use std::net::SocketAddr;
use std::time::Instant;

use bytes::{Buf, Bytes, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use super::message::{Headers, Request};

/// Largest request head we read.
pub const MAX_HEAD: usize = 64 * 1024;
/// Most header fields in a request.
const MAX_HEADERS: usize = 100;

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
            left: None,
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
                        "{} of a request head, then the connection closed",
                        crate::text::count(buf.len() as u64, "bytes")
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
                        "{} of {} (Content-Length), then the connection closed",
                        buf.len(),
                        crate::text::count(length as u64, "body bytes")
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

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    /// A request head as the engine reads it: every field in order, looked up in any case (the
    /// first of a repeated name), a value that is not UTF-8 kept with U+FFFD in its place.
    #[deadline::test]
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
}
