//! Mock agents over line transports: stdio (e.g. for `--agent-cmd "agent-tck mock agent
//! --protocol execute-task --stdio"`) and TCP / Unix sockets (newline-delimited JSON). Each line
//! is a request to the protocol's line endpoint ([`AgentProtocol::line_endpoint`]).
//!
//! A request ends at a newline or at the end of input, so the same mock serves a harness that
//! keeps one process and writes a line per turn (persistent) and one that starts a process per
//! turn, writes the request without a newline and closes stdin (per-turn). Answers are one line
//! each (unless `stdio-pretty`); nothing but answers goes to stdout.

use std::io::Write as _;
use std::sync::Arc;

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio_util::sync::CancellationToken;

use super::agent::MockAgent;
use super::behavior::{Kind, What};
use super::http1::Fault;
#[cfg(doc)]
use super::protocol::AgentProtocol;

/// Longest request line read.
const MAX_REQUEST: u64 = 32 * 1024 * 1024;

/// What the stdio-only behaviours of an agent ask for.
#[derive(Debug, Default, Clone, Copy)]
struct StdioQuirks {
    banner: bool,
    pretty: bool,
    exits_early: bool,
    stderr_flood: Option<usize>,
    forks_and_exits: bool,
}

impl StdioQuirks {
    fn of(agent: &MockAgent) -> StdioQuirks {
        let mut q = StdioQuirks::default();
        for item in &agent.items {
            match &item.what {
                What::Behavior(Kind::StdioBanner) => q.banner = true,
                What::Behavior(Kind::StdioPretty) => q.pretty = true,
                What::Behavior(Kind::ExitsEarly) => q.exits_early = true,
                What::Behavior(Kind::StderrFlood { bytes }) => q.stderr_flood = Some(*bytes),
                What::Behavior(Kind::ForksAndExits) => q.forks_and_exits = true,
                _ => {}
            }
        }
        q
    }
}

/// Serves requests on stdin, answers on stdout, until stdin ends.
pub async fn serve_stdio(agent: Arc<MockAgent>) -> std::io::Result<()> {
    let quirks = StdioQuirks::of(&agent);
    serve_lines(&agent, tokio::io::stdin(), tokio::io::stdout(), quirks).await
}

/// Serves each connection of a TCP listener until `stop`.
pub async fn serve_tcp(
    agent: Arc<MockAgent>,
    listener: tokio::net::TcpListener,
    stop: CancellationToken,
) {
    let accept = || async {
        let (stream, _) = listener.accept().await?;
        // Answers go out in one write each; don't let Nagle hold them back.
        let _ = stream.set_nodelay(true);
        Ok(stream)
    };
    serve_connections(agent, accept, stop).await;
}

/// Serves each connection of a Unix socket until `stop`.
#[cfg(unix)]
pub async fn serve_unix(
    agent: Arc<MockAgent>,
    listener: tokio::net::UnixListener,
    stop: CancellationToken,
) {
    let accept = || async { listener.accept().await.map(|(stream, _)| stream) };
    serve_connections(agent, accept, stop).await;
}

/// Accepts with `accept` until `stop`, serving each connection's lines on its own task.
async fn serve_connections<S, A, F>(agent: Arc<MockAgent>, accept: A, stop: CancellationToken)
where
    S: AsyncRead + AsyncWrite + Send + 'static,
    A: Fn() -> F,
    F: std::future::Future<Output = std::io::Result<S>>,
{
    loop {
        let accepted = tokio::select! {
            _ = stop.cancelled() => return,
            a = accept() => a,
        };
        let Ok(stream) = accepted else {
            // Out of file descriptors and the like: back off rather than spin.
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            continue;
        };
        let agent = agent.clone();
        let stop = stop.clone();
        tokio::spawn(async move {
            let (r, w) = tokio::io::split(stream);
            tokio::select! {
                _ = stop.cancelled() => {}
                _ = serve_lines(&agent, r, w, StdioQuirks::default()) => {}
            }
        });
    }
}

async fn serve_lines<R, W>(
    agent: &MockAgent,
    reader: R,
    mut writer: W,
    quirks: StdioQuirks,
) -> std::io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut reader = BufReader::new(reader);
    let mut first = true;
    loop {
        let mut line = Vec::new();
        let n = (&mut reader)
            .take(MAX_REQUEST)
            .read_until(b'\n', &mut line)
            .await?;
        if n == 0 {
            return Ok(());
        }
        if line.last() == Some(&b'\n') {
            line.pop();
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        if quirks.exits_early {
            eprintln!("agent-tck mock (exits-early): exiting without an answer");
            std::process::exit(3);
        }
        if let Some(bytes) = quirks.stderr_flood {
            flood_stderr(bytes);
        }
        let endpoint = agent.protocol.line_endpoint().unwrap_or_default();
        let (plan, _) = agent.respond(endpoint, &line);
        let at = tokio::time::Instant::now() + plan.ttfb + plan.body_delay;
        tokio::time::sleep_until(at).await;
        if matches!(plan.fault, Fault::Hang | Fault::Blackhole) {
            // Never answer; the harness must give up at its deadline and kill us.
            std::future::pending::<()>().await;
        }
        if first && quirks.banner {
            writer
                .write_all(b"agent-tck mock agent v0.1 starting up (stdio-banner)\n")
                .await?;
        }
        first = false;
        let body = if quirks.pretty {
            serde_json::from_slice::<serde_json::Value>(&plan.response.body)
                .and_then(|v| serde_json::to_vec_pretty(&v))
                .unwrap_or_else(|_| plan.response.body.to_vec())
        } else {
            plan.response.body.to_vec()
        };
        // One write for the answer and its newline: two would meet Nagle's algorithm and the
        // peer's delayed ACK (40 ms a turn over TCP).
        let mut line = body;
        line.push(b'\n');
        writer.write_all(&line).await?;
        writer.flush().await?;
        if quirks.forks_and_exits {
            fork_and_exit();
        }
    }
}

/// Writes `bytes` to stderr in chunks (blocking: the harness must drain it concurrently).
fn flood_stderr(bytes: usize) {
    let chunk = [b'#'; 64 * 1024];
    let mut err = std::io::stderr().lock();
    let mut left = bytes;
    while left > 0 {
        let n = left.min(chunk.len());
        if err.write_all(&chunk[..n]).is_err() {
            return;
        }
        left -= n;
    }
    let _ = err.write_all(b"\n");
}

/// Leaves a child that holds stdout open and sleeps, then exits: a harness that reads stdout
/// to its end would wait for the child; one that kills the process group is done.
fn fork_and_exit() -> ! {
    let _ = std::process::Command::new("sleep")
        .arg("600")
        .stdin(std::process::Stdio::null())
        .spawn();
    std::process::exit(0);
}
