//! Rules that judge exchanges, wherever the exchanges came from.
//!
//! An [`Exchange`] is one request and its answer between two parties, as the kit saw it: who
//! asked whom, at which endpoint, what was sent, what came back (or how the wait ended), and
//! when. The rules of a protocol judge exchanges; who produced them is not their concern. The
//! probe produces them while it plays the platform, the mock while it plays the agents, and a
//! file of recorded exchanges (JSON lines or HAR, [`record`]) holds them for a judging offline: the same
//! rules, fed the same exchanges, give the same verdicts.
//!
//! This module is an engine: it names no protocol.

pub mod exchange;
pub mod har;
pub mod read;
pub mod record;
pub mod replay;
pub mod tape;
pub mod time;

pub use exchange::{Answer, Entry, Event, Exchange, Message, Party};
