//! Many concurrent requests at once against one URL, for `scripts/bench-mock.sh`.
//!
//! ```text
//! cargo run --release --example slow_accuracy -- --url http://127.0.0.1:PORT/agents/slow/analyze \
//!     [--connections 10000] [--delay 200ms] [--body FILE] [--timeout 30s] [--hold 10s] \
//!     [--rate 5000]
//! ```
//!
//! It opens every connection first (64 at a time, 5 ms apart, so the server's listen backlog of
//! 128 does not overflow), waits a second for the server to accept them all, then releases them
//! together: each sends one `POST` (the body from `--body`, or a small round-table /analyze
//! request). With `--rate R` they are released R per second instead (connection i at i/R s):
//! with a delay D, about R × D requests are in flight at once, at a pace a server can read —
//! the burst measures the server's queue as much as its timer; the paced run measures the timer.
//! It prints the peak number of requests in flight (written, answer not yet begun).
//!
//! - Measure mode (default): per request, the time from the return of the `write` that put the
//!   request's last byte in the kernel to the first response byte read, and the whole answer
//!   is read (its status must be 200). It prints the distribution of that time minus `--delay`
//!   (the overshoot), and how many answers came early (before `--delay`). The time is measured by
//!   the client: it includes the client's own scheduling and the server's queueing before it reads
//!   the request, not only the server's timer.
//! - `--hold D`: sends every request, prints `holding N connections`, keeps them open for D
//!   without reading, then closes them and exits (for the server's memory with N hung exchanges).
//!
//! Results go to stdout as `key=value` lines (for the script), and a human-readable summary to
//! stderr. The whole run is bounded by `--timeout` (default 30 s): what is unfinished then counts
//! as failed. Exit status 1 when any connection or request failed. Raise the fd limit first
//! (`ulimit -n 65536`, or as far as the hard limit allows): each connection is a file descriptor.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::watch;

fn usage(error: &str) -> ! {
    eprintln!(
        "slow_accuracy: {error}\nusage: slow_accuracy --url http://127.0.0.1:PORT/PATH \
         [--connections N] [--delay DUR] [--body FILE] [--timeout DUR] [--hold DUR]"
    );
    std::process::exit(2);
}

/// Connections opened per batch, and the pause between batches. tokio's listeners (mio) listen
/// with a backlog of 128: more handshakes completed than the server has accepted, and the kernel
/// drops SYNs, which are retried a second later.
const CONNECT_BATCH: usize = 64;
const CONNECT_PAUSE: Duration = Duration::from_millis(5);

const DEFAULT_BODY: &str =
    r#"{"task_id":"bench-slow","content":"Review the rollout plan for the payments service."}"#;

struct Args {
    addr: String,
    host: String,
    path: String,
    connections: usize,
    delay: Duration,
    body: Vec<u8>,
    timeout: Duration,
    hold: Option<Duration>,
    /// Requests released per second (None: all at once).
    rate: Option<f64>,
}

fn duration(flag: &str, value: &str) -> Duration {
    humantime::parse_duration(value)
        .unwrap_or_else(|e| usage(&format!("{flag} {value:?}: {e} (expected e.g. 200ms, 30s)")))
}

fn parse_args() -> Args {
    let mut url = None;
    let mut connections = 10_000;
    let mut delay = Duration::from_millis(200);
    let mut body = DEFAULT_BODY.as_bytes().to_vec();
    let mut timeout = Duration::from_secs(30);
    let mut hold = None;
    let mut rate = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let value = args
            .next()
            .unwrap_or_else(|| usage(&format!("{arg} needs a value")));
        match arg.as_str() {
            "--url" => url = Some(value),
            "--connections" => {
                connections = value
                    .parse()
                    .ok()
                    .filter(|&n| n > 0)
                    .unwrap_or_else(|| usage(&format!("--connections {value:?}: not a count")))
            }
            "--delay" => delay = duration(&arg, &value),
            "--body" => {
                body =
                    std::fs::read(&value).unwrap_or_else(|e| usage(&format!("--body {value}: {e}")))
            }
            "--timeout" => timeout = duration(&arg, &value),
            "--hold" => hold = Some(duration(&arg, &value)),
            "--rate" => {
                rate = Some(
                    value
                        .parse::<f64>()
                        .ok()
                        .filter(|r| r.is_finite() && *r > 0.0)
                        .unwrap_or_else(|| usage(&format!("--rate {value:?}: not a rate"))),
                )
            }
            other => usage(&format!("unknown argument {other:?}")),
        }
    }
    let url = url.unwrap_or_else(|| usage("--url is required"));
    let rest = url
        .strip_prefix("http://")
        .unwrap_or_else(|| usage("--url must start with http://"));
    let (host, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    Args {
        addr: host.to_string(),
        host: host.to_string(),
        path: if path.is_empty() { "/" } else { path }.to_string(),
        connections,
        delay,
        body,
        timeout,
        hold,
        rate,
    }
}

/// How one exchange went.
enum Outcome {
    /// Time from the request written to the first response byte (and from before the write).
    Answered {
        after_write: Duration,
        before_write: Duration,
        /// When the write began, and when the first answer byte came (for the peak in flight).
        began: Instant,
        first: Instant,
    },
    /// Request sent and held (hold mode).
    Held,
    Failed(String),
}

/// Reads one whole answer (head, then Content-Length bytes); returns the time of its first byte.
async fn read_answer(stream: &mut TcpStream) -> Result<Instant, String> {
    let mut buf = Vec::with_capacity(4096);
    let mut chunk = [0u8; 4096];
    let mut first = None;
    loop {
        let n = stream
            .read(&mut chunk)
            .await
            .map_err(|e| format!("read: {e}"))?;
        first.get_or_insert_with(Instant::now);
        if n == 0 {
            return Err("the server closed the connection before the whole answer".into());
        }
        buf.extend_from_slice(&chunk[..n]);
        let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
            continue;
        };
        let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
        if !head.starts_with("http/1.1 200") {
            let line = head.lines().next().unwrap_or("").to_string();
            return Err(format!("status line {line:?}"));
        }
        let length: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .and_then(|v| v.trim().parse().ok())
            .ok_or("no content-length")?;
        if buf.len() >= end + 4 + length {
            return Ok(first.unwrap_or_else(Instant::now));
        }
    }
}

async fn exchange(
    index: usize,
    args: Arc<Args>,
    request: Arc<Vec<u8>>,
    mut go: watch::Receiver<Option<Instant>>,
    connected: tokio::sync::mpsc::Sender<()>,
    stop: watch::Receiver<bool>,
) -> Outcome {
    let mut stream = match TcpStream::connect(&args.addr).await {
        Ok(s) => s,
        Err(e) => {
            let _ = connected.send(()).await;
            return Outcome::Failed(format!("connect: {e}"));
        }
    };
    let _ = stream.set_nodelay(true);
    let _ = connected.send(()).await;
    drop(connected);
    let released = match go.wait_for(Option::is_some).await {
        Ok(at) => at.unwrap_or_else(Instant::now),
        Err(_) => return Outcome::Failed("never released".into()),
    };
    if let Some(rate) = args.rate {
        tokio::time::sleep_until((released + Duration::from_secs_f64(index as f64 / rate)).into())
            .await;
    }
    let before = Instant::now();
    if let Err(e) = stream.write_all(&request).await {
        return Outcome::Failed(format!("write: {e}"));
    }
    let written = Instant::now();
    if args.hold.is_some() {
        // Keep the connection (and its unanswered request) until told to stop.
        let mut stop = stop;
        let _ = stop.wait_for(|&s| s).await;
        return Outcome::Held;
    }
    match read_answer(&mut stream).await {
        Ok(first) => Outcome::Answered {
            after_write: first.saturating_duration_since(written),
            before_write: first.saturating_duration_since(before),
            began: before,
            first,
        },
        Err(e) => Outcome::Failed(e),
    }
}

/// The most exchanges in flight at once: begun (request being written) and not yet answered.
fn peak_in_flight(spans: &[(Instant, Instant)]) -> usize {
    let mut edges: Vec<(Instant, i32)> = spans
        .iter()
        .flat_map(|&(began, first)| [(began, 1), (first, -1)])
        .collect();
    // At equal instants an answer ends before a request begins.
    edges.sort();
    let (mut now, mut peak) = (0i32, 0i32);
    for (_, step) in edges {
        now += step;
        peak = peak.max(now);
    }
    peak as usize
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

#[tokio::main]
async fn main() {
    let args = Arc::new(parse_args());
    let mut request = format!(
        "POST {} HTTP/1.1\r\nhost: {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
        args.path,
        args.host,
        args.body.len()
    )
    .into_bytes();
    request.extend_from_slice(&args.body);
    let request = Arc::new(request);
    let n = args.connections;
    let (go_tx, go_rx) = watch::channel(None);
    let (stop_tx, stop_rx) = watch::channel(false);
    let (connected_tx, mut connected_rx) = tokio::sync::mpsc::channel::<()>(n);
    let started = Instant::now();
    let deadline = started + args.timeout;
    let mut tasks = tokio::task::JoinSet::new();
    // Every connection opened (or failed) before any request goes out, a batch at a time, so
    // that the server's accept queue does not overflow.
    let mut ready = 0;
    while ready < n {
        let batch = CONNECT_BATCH.min(n - ready);
        for i in ready..ready + batch {
            tasks.spawn(exchange(
                i,
                args.clone(),
                request.clone(),
                go_rx.clone(),
                connected_tx.clone(),
                stop_rx.clone(),
            ));
        }
        let mut done = 0;
        while done < batch {
            match tokio::time::timeout_at(deadline.into(), connected_rx.recv()).await {
                Ok(Some(())) => done += 1,
                _ => break,
            }
        }
        ready += batch;
        if done < batch {
            break;
        }
        // Give the server's accept loop a moment to drain the queue.
        tokio::time::sleep(CONNECT_PAUSE).await;
    }
    drop(connected_tx);
    // Connections never attempted (the deadline passed while opening the others).
    let not_started = n - ready;
    let connect_s = started.elapsed().as_secs_f64();
    // Let the server accept (and start reading) every connection before the burst.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let _ = go_tx.send(Some(Instant::now()));
    if let Some(hold) = args.hold {
        // Give every task time to write, then say so and hold.
        tokio::time::sleep(Duration::from_secs(1)).await;
        println!("holding {n} connections");
        eprintln!("slow_accuracy: holding {n} connections for {hold:?}");
        tokio::time::sleep_until((Instant::now() + hold).min(deadline).into()).await;
        let _ = stop_tx.send(true);
    }
    let mut answered = Vec::with_capacity(n);
    let mut spans = Vec::with_capacity(n);
    let mut early_before_write = 0usize;
    let mut held = 0usize;
    let mut failures: Vec<String> = Vec::new();
    let mut unfinished = 0usize;
    loop {
        match tokio::time::timeout_at(deadline.into(), tasks.join_next()).await {
            Ok(Some(Ok(Outcome::Answered {
                after_write,
                before_write,
                began,
                first,
            }))) => {
                answered.push(after_write.as_secs_f64() * 1e3);
                spans.push((began, first));
                if before_write < args.delay {
                    early_before_write += 1;
                }
            }
            Ok(Some(Ok(Outcome::Held))) => held += 1,
            Ok(Some(Ok(Outcome::Failed(e)))) => failures.push(e),
            Ok(Some(Err(e))) => failures.push(format!("task: {e}")),
            Ok(None) => break,
            Err(_) => {
                unfinished = tasks.len();
                tasks.abort_all();
                break;
            }
        }
    }
    let total_s = started.elapsed().as_secs_f64();
    let failed = failures.len() + unfinished + not_started;
    if let Some(first) = failures.first() {
        let distinct: std::collections::BTreeSet<&str> =
            failures.iter().map(String::as_str).collect();
        eprintln!(
            "slow_accuracy: {} failed; e.g. {first:?} ({} distinct errors)",
            failures.len(),
            distinct.len()
        );
    }
    if not_started > 0 {
        eprintln!("slow_accuracy: {not_started} connections not attempted before the timeout");
    }
    if unfinished > 0 {
        eprintln!(
            "slow_accuracy: {unfinished} unfinished at the {:?} timeout",
            args.timeout
        );
    }
    println!("connections={n}");
    println!("connected_s={connect_s:.3}");
    println!("failed={failed}");
    println!("total_s={total_s:.3}");
    if args.hold.is_some() {
        println!("held={held}");
        eprintln!("slow_accuracy: held {held} of {n} connections; {failed} failed");
    } else {
        answered.sort_by(f64::total_cmp);
        let delay_ms = args.delay.as_secs_f64() * 1e3;
        let over: Vec<f64> = answered.iter().map(|a| a - delay_ms).collect();
        let early = over.iter().filter(|&&o| o < 0.0).count();
        println!("answered={}", answered.len());
        println!("peak_in_flight={}", peak_in_flight(&spans));
        println!("early={early}");
        println!("early_from_write_start={early_before_write}");
        println!(
            "min_ms={:.3}",
            answered.first().copied().unwrap_or(f64::NAN)
        );
        println!("over_p50_ms={:.3}", percentile(&over, 50.0));
        println!("over_p90_ms={:.3}", percentile(&over, 90.0));
        println!("over_p99_ms={:.3}", percentile(&over, 99.0));
        println!(
            "over_max_ms={:.3}",
            over.last().copied().unwrap_or(f64::NAN)
        );
        eprintln!(
            "slow_accuracy: {} answered, {failed} failed, {early} early; overshoot over {delay_ms} ms: \
             p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
            answered.len(),
            percentile(&over, 50.0),
            percentile(&over, 99.0),
            over.last().copied().unwrap_or(f64::NAN)
        );
    }
    std::process::exit(if failed > 0 { 1 } else { 0 });
}
