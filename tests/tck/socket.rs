//! The socket line transport (TCP and Unix) against loopback stubs: connection reuse and
//! per-call connections, reconnection, deadlines and the line cap.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_tck::transport::socket::{LineError, SocketAddrSpec, SocketAgent, SocketMode};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, UnixListener};

const LONG: Duration = Duration::from_secs(10);
const MAX_LINE: usize = 1_000_000;

#[derive(Clone, Copy, Debug)]
enum Stub {
    /// Answers each line with `{"n": <line number on this connection>, "len": <its length>}`.
    Echo,
    /// Reads, never answers.
    Silent,
    /// Answers with 100,000 `x` and a newline.
    Long,
    /// Writes the start of an answer and hangs.
    Partial,
    /// Answers one line, then closes.
    CloseAfterAnswer,
    /// Reads one line, then closes without answering.
    CloseWithoutAnswer,
    /// Never reads.
    Deaf,
}

async fn serve<S: AsyncRead + AsyncWrite + Unpin>(stream: S, stub: Stub) {
    if let Stub::Deaf = stub {
        tokio::time::sleep(Duration::from_secs(1000)).await;
        drop(stream);
        return;
    }
    let (read, mut write) = tokio::io::split(stream);
    let mut lines = BufReader::new(read).lines();
    let mut n = 0;
    while let Ok(Some(line)) = lines.next_line().await {
        n += 1;
        let answer = match stub {
            Stub::Echo | Stub::CloseAfterAnswer => {
                format!("{{\"n\":{n},\"len\":{}}}\n", line.len())
            }
            Stub::Silent => continue,
            Stub::Long => format!("{}\n", "x".repeat(100_000)),
            Stub::Partial => {
                let _ = write.write_all(b"{\"a").await;
                tokio::time::sleep(Duration::from_secs(1000)).await;
                return;
            }
            Stub::CloseWithoutAnswer | Stub::Deaf => return,
        };
        if write.write_all(answer.as_bytes()).await.is_err() {
            return;
        }
        if matches!(stub, Stub::CloseAfterAnswer) {
            return;
        }
    }
}

/// A TCP stub on a loopback port; counts accepted connections.
async fn tcp_stub(stub: Stub) -> (SocketAddrSpec, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let accepts = Arc::new(AtomicUsize::new(0));
    let count = accepts.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            count.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(serve(stream, stub));
        }
    });
    (SocketAddrSpec::Tcp(addr), accepts)
}

/// A Unix socket stub in the temp directory, removed when dropped.
struct UnixStub {
    path: PathBuf,
    accepts: Arc<AtomicUsize>,
}

impl Drop for UnixStub {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

async fn unix_stub(stub: Stub) -> UnixStub {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let path = std::env::temp_dir().join(format!(
        "agent-tck-{}-{}.sock",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::SeqCst)
    ));
    let _ = std::fs::remove_file(&path);
    let listener = UnixListener::bind(&path).unwrap();
    let accepts = Arc::new(AtomicUsize::new(0));
    let count = accepts.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            count.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(serve(stream, stub));
        }
    });
    UnixStub { path, accepts }
}

fn json(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes).unwrap()
}

async fn three_exchanges(agent: &mut SocketAgent) -> Vec<(u64, u64)> {
    let mut seen = Vec::new();
    for turn in 1..=3 {
        let request = format!(r#"{{"task_description":"t","turn":{turn}}}"#);
        let answer = agent.exchange(request.as_bytes(), LONG).await.unwrap();
        let value = json(&answer.text);
        assert_eq!(value["len"], request.len());
        seen.push((answer.line_no, value["n"].as_u64().unwrap()));
    }
    seen
}

#[deadline::test]
async fn persistent_reuses_one_connection_and_per_call_opens_one_each() {
    let (addr, accepts) = tcp_stub(Stub::Echo).await;
    let mut agent = SocketAgent::new(addr.clone(), SocketMode::Persistent, MAX_LINE);
    assert_eq!(three_exchanges(&mut agent).await, [(1, 1), (2, 2), (3, 3)]);
    assert_eq!(accepts.load(Ordering::SeqCst), 1);
    assert_eq!(agent.connects(), 1);
    agent.close().await;

    let (addr, accepts) = tcp_stub(Stub::Echo).await;
    let mut agent = SocketAgent::new(addr, SocketMode::PerCall, MAX_LINE);
    assert_eq!(three_exchanges(&mut agent).await, [(1, 1), (1, 1), (1, 1)]);
    assert_eq!(accepts.load(Ordering::SeqCst), 3);
}

#[deadline::test]
async fn unix_sockets_work_in_both_modes() {
    let stub = unix_stub(Stub::Echo).await;
    let addr = SocketAddrSpec::Unix(stub.path.clone());
    let mut agent = SocketAgent::new(addr.clone(), SocketMode::Persistent, MAX_LINE);
    assert_eq!(three_exchanges(&mut agent).await, [(1, 1), (2, 2), (3, 3)]);
    assert_eq!(stub.accepts.load(Ordering::SeqCst), 1);
    agent.close().await;
    let mut agent = SocketAgent::new(addr, SocketMode::PerCall, MAX_LINE);
    three_exchanges(&mut agent).await;
    assert_eq!(stub.accepts.load(Ordering::SeqCst), 4);
}

#[deadline::test]
async fn a_connection_closed_between_exchanges_is_reopened_once() {
    let (addr, accepts) = tcp_stub(Stub::CloseAfterAnswer).await;
    let mut agent = SocketAgent::new(addr, SocketMode::Persistent, MAX_LINE);
    for _ in 0..3 {
        let answer = agent.exchange(b"{}", LONG).await.unwrap();
        assert_eq!(answer.line_no, 1);
        // Let the stub's FIN arrive.
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(accepts.load(Ordering::SeqCst), 3);
}

#[deadline::test]
async fn a_connection_closed_during_the_exchange_is_an_error() {
    let stub = unix_stub(Stub::CloseWithoutAnswer).await;
    let mut agent = SocketAgent::new(
        SocketAddrSpec::Unix(stub.path.clone()),
        SocketMode::Persistent,
        MAX_LINE,
    );
    let error = agent.exchange(b"{}", LONG).await.unwrap_err();
    assert_eq!(
        error,
        LineError::Closed {
            stderr_tail: String::new()
        }
    );
    assert_eq!(
        error.to_string(),
        "the agent closed its output without sending a complete line"
    );
    // Not resent on a new connection within the exchange: one accept.
    assert_eq!(stub.accepts.load(Ordering::SeqCst), 1);
}

#[deadline::test]
async fn silence_and_trickles_time_out_at_the_deadline() {
    let deadline = Duration::from_millis(500);
    for (stub, got) in [(Stub::Silent, 0), (Stub::Partial, 3)] {
        let (addr, accepts) = tcp_stub(stub).await;
        let mut agent = SocketAgent::new(addr, SocketMode::Persistent, MAX_LINE);
        let started = Instant::now();
        let error = agent.exchange(b"{}", deadline).await.unwrap_err();
        assert_eq!(error, LineError::Timeout { deadline, got }, "{stub:?}");
        assert!(started.elapsed() < deadline + Duration::from_secs(1));
        // The connection is out of step: the next exchange opens a new one.
        let _ = agent.exchange(b"{}", deadline).await;
        assert_eq!(accepts.load(Ordering::SeqCst), 2, "{stub:?}");
    }
}

#[deadline::test]
async fn a_peer_that_never_reads_cannot_block_our_write() {
    let (addr, _) = tcp_stub(Stub::Deaf).await;
    let mut agent = SocketAgent::new(addr, SocketMode::PerCall, MAX_LINE);
    // More than loopback socket buffers hold.
    let request = vec![b'x'; 64 << 20];
    let deadline = Duration::from_millis(500);
    let started = Instant::now();
    let error = agent.exchange(&request, deadline).await.unwrap_err();
    assert_eq!(error, LineError::Timeout { deadline, got: 0 });
    assert!(started.elapsed() < deadline + Duration::from_secs(1));
}

#[deadline::test]
async fn an_over_long_line_is_too_long() {
    let (addr, accepts) = tcp_stub(Stub::Long).await;
    let mut agent = SocketAgent::new(addr, SocketMode::Persistent, 1000);
    let error = agent.exchange(b"{}", LONG).await.unwrap_err();
    assert!(
        matches!(&error, LineError::TooLong { limit: 1000, start } if start.starts_with(&"x".repeat(200))),
        "{error}"
    );
    assert!(error.to_string().len() < 400);
    let _ = agent.exchange(b"{}", LONG).await;
    assert_eq!(accepts.load(Ordering::SeqCst), 2);
}

#[deadline::test]
async fn an_unreachable_agent_says_where() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    drop(listener);
    let mut agent = SocketAgent::new(
        SocketAddrSpec::Tcp(addr.clone()),
        SocketMode::PerCall,
        MAX_LINE,
    );
    let error = agent.exchange(b"{}", LONG).await.unwrap_err();
    let LineError::Io(text) = &error else {
        panic!("{error}")
    };
    assert!(
        text.starts_with(&format!("cannot connect to tcp {addr}: ")),
        "{text}"
    );

    let mut agent = SocketAgent::new(
        SocketAddrSpec::Unix("/nonexistent/agent-tck.sock".into()),
        SocketMode::Persistent,
        MAX_LINE,
    );
    let error = agent.exchange(b"{}", LONG).await.unwrap_err();
    assert!(
        error
            .to_string()
            .starts_with("cannot connect to unix /nonexistent/agent-tck.sock: "),
        "{error}"
    );
}
