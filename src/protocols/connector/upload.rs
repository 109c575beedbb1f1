//! A callback POSTed by the fleet, its answer read while the body is still going out. A server
//! may answer a body it will not take (413, or 404 from a server without the route) before it
//! has read it, and close the connection: the writer then meets a broken pipe or a reset, and
//! an HTTP client that only reads once the body is written reports that error — a crash, it
//! would seem, where the server had said 404. Reading alongside the writing keeps the answer.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bytes::Bytes;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::transport::http::{self as client, BaseUrl, Limits};
use crate::transport::liveness::Reply;

/// How the body goes out: a piece at a time, so that an answer stops it.
const PIECE: usize = 64 * 1024;

/// Largest answer head read.
const MAX_HEAD: usize = 64 * 1024;

/// A callback that got no answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unanswered {
    /// What happened, for a reader.
    pub message: String,
    /// The connection broke before the whole body went out: the server stopped taking it (a
    /// refusal without a status), not a crash on a request it had read.
    pub cut_mid_body: bool,
    /// What it says of the server's presence: refused, broken, or no answer in time.
    pub reply: Reply,
}

impl Unanswered {
    fn after_body(message: String, reply: Reply) -> Unanswered {
        Unanswered {
            message,
            cut_mid_body: false,
            reply,
        }
    }
}

/// POSTs `body` to `path` under `base` as raw text and returns the answer's status, or what
/// happened instead (how much of the body went out when the connection broke with no answer).
pub async fn post(
    base: &BaseUrl,
    path: &str,
    body: Bytes,
    deadline: Duration,
) -> Result<u16, Unanswered> {
    if base.tls {
        // TLS goes through the kit's client (an early answer there reads as its error).
        let request = client::Request {
            method: "POST".into(),
            path: path.into(),
            headers: vec![("content-type".into(), CONTENT_TYPE.into())],
            body,
        };
        let limits = Limits {
            deadline,
            ..Limits::default()
        };
        return client::send(base, &request, limits)
            .await
            .map(|r| r.status)
            .map_err(|e| {
                let reply = Reply::of_http::<()>(&Err(e.clone()));
                Unanswered::after_body(e.to_string(), reply)
            });
    }
    tokio::time::timeout(deadline, exchange(base, path, body))
        .await
        .unwrap_or_else(|_| {
            Err(Unanswered::after_body(
                format!("no answer within {}", humantime::format_duration(deadline)),
                Reply::Silent,
            ))
        })
}

const CONTENT_TYPE: &str = "text/markdown; charset=utf-8";

async fn exchange(base: &BaseUrl, path: &str, body: Bytes) -> Result<u16, Unanswered> {
    let stream = TcpStream::connect((base.host.as_str(), base.port))
        .await
        .map_err(|e| {
            Unanswered::after_body(
                format!(
                    "the agent server is unreachable: cannot connect to {}:{}: {e}",
                    base.host, base.port
                ),
                Reply::Refused,
            )
        })?;
    let _ = stream.set_nodelay(true);
    let (mut reader, mut writer) = stream.into_split();
    let host = if base.host.contains(':') {
        format!("[{}]", base.host)
    } else {
        base.host.clone()
    };
    let head = format!(
        "POST {}{path} HTTP/1.1\r\nhost: {host}:{}\r\ncontent-type: {CONTENT_TYPE}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        base.prefix,
        base.port,
        body.len()
    );
    let answered = AtomicBool::new(false);
    let write = async {
        let mut sent = 0;
        let mut result = writer.write_all(head.as_bytes()).await;
        for piece in body.chunks(PIECE) {
            if result.is_err() || answered.load(Ordering::Relaxed) {
                break;
            }
            result = writer.write_all(piece).await;
            sent += piece.len() * usize::from(result.is_ok());
        }
        (sent, result)
    };
    let read = async {
        let status = read_status(&mut reader).await;
        answered.store(true, Ordering::Relaxed);
        status
    };
    let ((sent, written), status) = tokio::join!(write, read);
    match (status, written) {
        (Ok(status), _) => Ok(status),
        (Err(_), Err(e)) => Err(Unanswered {
            message: format!(
                "the connection broke after {sent} of {} bytes of the body went out ({e}), and no answer came",
                body.len()
            ),
            cut_mid_body: sent < body.len(),
            reply: Reply::Broken,
        }),
        (Err(e), Ok(())) => Err(Unanswered::after_body(e, Reply::Broken)),
    }
}

/// Reads an HTTP/1 answer's head and returns its status.
async fn read_status(reader: &mut (impl AsyncRead + Unpin)) -> Result<u16, String> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 4096];
    loop {
        let n = reader
            .read(&mut chunk)
            .await
            .map_err(|e| format!("no answer: {e}"))?;
        if n == 0 {
            return Err(if buf.is_empty() {
                "no answer: the connection was closed".into()
            } else {
                format!(
                    "the connection was closed within the answer's head: {}",
                    crate::text::excerpt(&buf, 80)
                )
            });
        }
        buf.extend_from_slice(&chunk[..n]);
        let mut headers = [httparse::EMPTY_HEADER; 64];
        let mut response = httparse::Response::new(&mut headers);
        match response.parse(&buf) {
            Ok(httparse::Status::Complete(_)) => {
                return response
                    .code
                    .ok_or_else(|| "an answer with no status".into())
            }
            Ok(httparse::Status::Partial) if buf.len() < MAX_HEAD => {}
            Ok(httparse::Status::Partial) => {
                return Err(format!("an answer head over {MAX_HEAD} bytes"))
            }
            Err(e) => {
                return Err(format!(
                    "not an HTTP answer ({e}): {}",
                    crate::text::excerpt(&buf, 80)
                ))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A server that answers 404 on the head and closes, unread body and all: the 404 is what
    /// the callback got, not the broken pipe.
    #[deadline::test]
    async fn an_answer_before_the_body_is_read_is_the_answer() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = tokio::spawn(async move {
            let (mut s, _) = listener.accept().await.unwrap();
            let mut head = [0u8; 1024];
            let _ = s.read(&mut head).await;
            s.write_all(b"HTTP/1.1 404 Not Found\r\ncontent-length: 9\r\n\r\nNot Found")
                .await
                .unwrap();
            drop(s);
        });
        let base = BaseUrl::parse(&format!("http://{addr}")).unwrap();
        let body = Bytes::from(vec![b'x'; 8 << 20]);
        let status = post(
            &base,
            "/external/sessions/s/messages",
            body,
            Duration::from_secs(10),
        )
        .await;
        assert_eq!(status, Ok(404));
        server.await.unwrap();
    }

    #[deadline::test]
    async fn no_answer_says_how_much_went_out() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = tokio::spawn(async move {
            let (s, _) = listener.accept().await.unwrap();
            drop(s);
        });
        let base = BaseUrl::parse(&format!("http://{addr}")).unwrap();
        let body = Bytes::from(vec![b'x'; 8 << 20]);
        let error = post(&base, "/x", body, Duration::from_secs(10))
            .await
            .unwrap_err();
        server.await.unwrap();
        assert!(error.message.contains("no answer"), "{error:?}");
    }
}
