//! Executing a [`Plan`] on the socket: the delay before the first byte, a dribbled answer, an
//! endless body, and the faults below HTTP (a reset, an early close, garbage, a hung or
//! black-holed request), every wait cancellable by the server's shutdown.

use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_util::sync::CancellationToken;

use super::encode::{framed_body, head};
use super::message::{Delivered, Fault, Framing, Outcome, Plan};

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

/// How long a hung answer looks for its peer's end at a shutdown.
const LAST_LOOK: Duration = Duration::from_millis(50);

/// Holds the connection without answering until the peer leaves (or shutdown); reads and drops
/// whatever else the peer sends.
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
