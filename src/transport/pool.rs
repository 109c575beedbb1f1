//! Keep-alive connections to one HTTP peer, for a caller that passes traffic on at a rate (the
//! proxy) rather than judging one exchange (the probe, which opens a connection per exchange
//! on purpose: see [`super::http`]). Each exchange runs under the same total deadline, caps
//! and error kinds as [`super::http::send`]'s.
//!
//! A connection goes back to the pool once its answer was read whole and it is still open; an
//! idle one is used again only while it is young (the peer's own keep-alive timeout may be
//! near: a request sent as the peer closes would fail as the peer's fault, which it is not).

use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::http::{
    exchange_with, handshake, open_tcp, send, AbortOnDrop, BaseUrl, Error, Limits, Progress,
    Request, Response, Sender,
};

/// How long an idle connection is used again: well under the keep-alive timeouts servers
/// commonly set (5 s and up).
const FRESH: Duration = Duration::from_secs(2);
/// Idle connections kept at most.
const MAX_IDLE: usize = 64;

struct Idle {
    sender: Sender,
    /// Drives the connection; aborted with it.
    _conn: AbortOnDrop<()>,
    since: Instant,
}

/// Open connections to one base URL.
pub struct Pool {
    base: BaseUrl,
    idle: Mutex<Vec<Idle>>,
}

impl Pool {
    pub fn new(base: BaseUrl) -> Pool {
        Pool {
            base,
            idle: Mutex::new(Vec::new()),
        }
    }

    pub fn base(&self) -> &BaseUrl {
        &self.base
    }

    /// Sends `request` on an open connection when one is fresh and ready, else on a new one,
    /// within `limits`. Over TLS, a connection an exchange (as [`send`]).
    pub async fn send(&self, request: &Request, limits: Limits) -> Result<Response, Error> {
        if self.base.tls {
            return send(&self.base, request, limits).await;
        }
        let progress = Progress::default();
        let started = Instant::now();
        match tokio::time::timeout(limits.deadline, self.exchange(request, limits, &progress)).await
        {
            Ok(result) => result,
            Err(_) => Err(Error::Timeout {
                deadline: limits.deadline,
                phase: progress.describe(),
            }),
        }
        .map(|mut r| {
            r.elapsed = started.elapsed();
            r
        })
    }

    async fn exchange(
        &self,
        request: &Request,
        limits: Limits,
        progress: &Progress,
    ) -> Result<Response, Error> {
        let started = Instant::now();
        let mut conn = match self.take() {
            Some(idle) => idle,
            None => self.connect(limits).await?,
        };
        let response = exchange_with(
            &mut conn.sender,
            &self.base,
            request,
            limits,
            progress,
            started,
        )
        .await?;
        if !response.body_exceeded && !closes(&response) {
            conn.since = Instant::now();
            self.put(conn);
        }
        Ok(response)
    }

    /// A fresh idle connection that is ready for a request, if there is one.
    fn take(&self) -> Option<Idle> {
        let mut idle = self.idle.lock().ok()?;
        while let Some(conn) = idle.pop() {
            if conn.since.elapsed() < FRESH && conn.sender.is_ready() && !conn.sender.is_closed() {
                return Some(conn);
            }
        }
        None
    }

    fn put(&self, conn: Idle) {
        if let Ok(mut idle) = self.idle.lock() {
            if idle.len() < MAX_IDLE {
                idle.push(conn);
            }
        }
    }

    async fn connect(&self, limits: Limits) -> Result<Idle, Error> {
        let tcp = open_tcp(&self.base).await?;
        let (sender, conn) = handshake(tcp, limits).await?;
        Ok(Idle {
            sender,
            _conn: AbortOnDrop(tokio::spawn(async move {
                let _ = conn.await;
            })),
            since: Instant::now(),
        })
    }
}

/// Whether the peer said it closes the connection after this answer.
fn closes(response: &Response) -> bool {
    response
        .header("connection")
        .is_some_and(|v| v.eq_ignore_ascii_case("close"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A server that answers every request on a connection with a small 200, counting the
    /// connections it accepted.
    async fn counting_server() -> (BaseUrl, Arc<AtomicUsize>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let accepted = Arc::new(AtomicUsize::new(0));
        let count = accepted.clone();
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                count.fetch_add(1, Ordering::Relaxed);
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 4096];
                    while let Ok(n) = stream.read(&mut buf).await {
                        if n == 0 {
                            return;
                        }
                        let answer = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}";
                        if stream.write_all(answer).await.is_err() {
                            return;
                        }
                    }
                });
            }
        });
        (BaseUrl::parse(&format!("http://{addr}")).unwrap(), accepted)
    }

    fn get() -> Request {
        Request {
            method: "GET".into(),
            path: "/".into(),
            headers: Vec::new(),
            body: Bytes::new(),
        }
    }

    #[deadline::test]
    async fn one_connection_serves_requests_in_turn_and_a_refused_one_is_named() {
        let (base, accepted) = counting_server().await;
        let pool = Pool::new(base);
        for _ in 0..5 {
            let r = pool.send(&get(), Limits::default()).await.unwrap();
            assert_eq!((r.status, &r.body[..]), (200, &b"{}"[..]));
        }
        assert_eq!(
            accepted.load(Ordering::Relaxed),
            1,
            "one connection, kept alive"
        );
        let closed = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = closed.local_addr().unwrap();
        drop(closed);
        let pool = Pool::new(BaseUrl::parse(&format!("http://{addr}")).unwrap());
        let e = pool.send(&get(), Limits::default()).await.unwrap_err();
        assert!(matches!(e, Error::Connect { .. }), "{e:?}");
    }
}
