//! A small HTTP/1.1 server over raw TCP: the engine under every mock agent.
//!
//! A framework (axum, hyper) writes well-formed HTTP; a mock fleet must also write *badly*: reset
//! a connection mid-body (RST via SO_LINGER 0), close early, send garbage, lie in Content-Length,
//! trickle bytes, hold a connection forever, never read at all. So the engine owns the socket and
//! executes a [`Plan`] byte by byte. It parses requests with `httparse` (Content-Length and
//! chunked bodies, `Expect: 100-continue`, keep-alive), bounded: a 64 KiB head, a body cap, and
//! every wait cancellable by the server's shutdown token, so Ctrl-C never waits on a hung peer.
//!
//! Split as hyper's `proto/h1`: `message` (the request, response and plan types), `decode`
//! (reading a request), `encode` (an answer's head and framing), `write` (executing a plan, faults
//! included), `dispatch` (the accept loop, the connection loop, a served handler).

mod decode;
mod dispatch;
mod encode;
mod message;
mod write;

pub(crate) use decode::{read_request, ReadError};
pub use decode::{ServerLimits, MAX_HEAD};
pub use dispatch::{bind, serve, spawn, spawn_with, Handler, ListenError, Running};
pub use encode::{canonical_reason, head};
pub use message::{Delivered, Fault, Framing, Headers, Outcome, Plan, Request, Response};
pub use write::write_plan;
