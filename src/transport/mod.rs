//! Transports, shared by probe and mock. Each bounds every exchange by a total deadline and a byte
//! cap, so a hostile peer produces an error value, never a hang or unbounded memory.

pub mod http;
pub mod lines;
pub mod liveness;
pub mod pool;
#[cfg(unix)]
pub mod socket;
#[cfg(unix)]
pub mod stdio;
pub mod taped;
