//! The server: accepting connections, and each connection's loop of reading a request, asking
//! the [`Handler`] for a plan, and writing it; and a handler served on a port of its own.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::decode::{read_request, ReadError, ServerLimits};
use super::message::{Delivered, Framing, Outcome, Plan, Request, Response};
use super::write::write_plan;

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

    /// Whether [`Handler::handle`] may wait on others (a proxy's real agent) before it has a
    /// plan: then the engine watches the peer meanwhile and cancels the request's `left` token
    /// when the peer leaves (it gave up), so that the handler can stop waiting and say so. A
    /// handler that answers at once needs no watch (and no token a request).
    fn waits(&self) -> bool {
        false
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
        let (plan, note) = if handler.waits() {
            handle_watching(handler, request, &stream).await
        } else {
            handler.handle(request).await
        };
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

/// Asks a handler that waits on others for its plan, watching the peer meanwhile: when it
/// leaves, the request's `left` token says so and the handler ends its wait.
async fn handle_watching<H: Handler>(
    handler: &H,
    mut request: Request,
    stream: &TcpStream,
) -> (Plan, H::Note) {
    let left = tokio_util::sync::CancellationToken::new();
    request.left = Some(left.clone());
    let handled = handler.handle(request);
    tokio::pin!(handled);
    tokio::select! {
        done = &mut handled => return done,
        () = peer_leaves(stream) => left.cancel(),
    }
    handled.await
}

/// Resolves when the peer closes its side (or the connection fails); never when it sends more
/// (a pipelined request is left where it is, and the peer is plainly still there).
async fn peer_leaves(stream: &TcpStream) {
    let mut byte = [0u8; 1];
    match stream.peek(&mut byte).await {
        Ok(0) | Err(_) => {}
        Ok(_) => std::future::pending().await,
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

/// Why a server could not start: a run error (the port is taken, or not ours to bind).
#[derive(Debug, thiserror::Error)]
pub enum ListenError {
    #[error("cannot listen on {addr}: {cause}")]
    Bind {
        addr: SocketAddr,
        cause: std::io::Error,
    },
    /// The bound socket does not say its address.
    #[error("{0}")]
    LocalAddr(std::io::Error),
}

impl crate::error::LayerError for ListenError {
    fn class(&self) -> crate::error::Class {
        crate::error::Class::Run
    }
}

/// Binds `addr` (port 0: the OS picks) and serves `handler` there.
pub async fn spawn<H: Handler>(handler: Arc<H>, addr: SocketAddr) -> Result<Running, ListenError> {
    spawn_with(handler, addr, ServerLimits::default()).await
}

/// Binds `addr` and says where it listens (port 0: the one the OS picked), for a caller that
/// needs its address before it serves ([`Running::on`]).
pub async fn bind(addr: SocketAddr) -> Result<(TcpListener, SocketAddr), ListenError> {
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|cause| ListenError::Bind { addr, cause })?;
    let at = listener.local_addr().map_err(ListenError::LocalAddr)?;
    Ok((listener, at))
}

/// The same, with `limits` on what a peer may send.
pub async fn spawn_with<H: Handler>(
    handler: Arc<H>,
    addr: SocketAddr,
    limits: ServerLimits,
) -> Result<Running, ListenError> {
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|cause| ListenError::Bind { addr, cause })?;
    Running::on(listener, handler, limits)
}

impl Running {
    /// Serves `handler` on a listener already bound (a caller that needed its address first).
    pub fn on<H: Handler>(
        listener: TcpListener,
        handler: Arc<H>,
        limits: ServerLimits,
    ) -> Result<Running, ListenError> {
        let addr = listener.local_addr().map_err(ListenError::LocalAddr)?;
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
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Nothing;

    impl Handler for Nothing {
        type Note = ();

        async fn handle(&self, _: Request) -> (Plan, ()) {
            (Plan::immediate(Response::new(204, "text/plain", "")), ())
        }

        async fn finish(&self, _: (), _: Delivered) {}
    }

    #[deadline::test]
    async fn a_port_in_use_is_a_run_error_that_names_it() {
        let taken = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = taken.local_addr().unwrap();
        let e = spawn(Arc::new(Nothing), addr).await.err().unwrap();
        assert!(
            matches!(&e, ListenError::Bind { addr: a, .. } if *a == addr),
            "{e:?}"
        );
        let e = crate::error::Error::from(e);
        assert!(
            matches!(e.shown(), (crate::error::Class::Run, m) if m.starts_with(&format!("cannot listen on {addr}: "))),
            "{e:?}"
        );
    }
}
