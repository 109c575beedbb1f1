//! The requests a fleet answered, over time, for the HTML report's timeline and per-endpoint
//! answer times: a span per answer (agent and behaviours, endpoint, start, duration, outcome).
//! Bounded: past [`CAP`] spans a uniform sample of them is kept (reservoir sampling), so a
//! soak of millions of requests holds a fixed few megabytes.

use std::sync::Mutex;
use std::time::Instant;

use super::http1::{Delivered, Outcome};
use crate::report::Span;

/// Most spans kept.
pub const CAP: usize = 20_000;

pub struct Timeline {
    started: Instant,
    kept: Mutex<Kept>,
}

#[derive(Default)]
struct Kept {
    spans: Vec<Span>,
    seen: u64,
    /// A xorshift state for the sample (seeded by the count: the same run keeps the same spans).
    rng: u64,
}

impl Timeline {
    pub fn new(started: Instant) -> Timeline {
        Timeline {
            started,
            kept: Mutex::new(Kept {
                rng: 0x9e37_79b9_7f4a_7c15,
                ..Kept::default()
            }),
        }
    }

    /// An answer that is over.
    pub fn record(&self, lane: &str, endpoint: &str, received: Instant, delivered: &Delivered) {
        let span = Span {
            lane: lane.to_string(),
            label: endpoint.to_string(),
            start_ms: received.saturating_duration_since(self.started).as_millis() as u64,
            duration_ms: delivered.total.as_millis() as u64,
            outcome: outcome(delivered.outcome).to_string(),
        };
        let Ok(mut kept) = self.kept.lock() else {
            return;
        };
        kept.seen += 1;
        if kept.spans.len() < CAP {
            kept.spans.push(span);
            return;
        }
        // Algorithm R: the n-th span replaces a kept one with probability CAP / n.
        let mut x = kept.rng;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        kept.rng = x;
        let slot = (x % kept.seen) as usize;
        if slot < CAP {
            kept.spans[slot] = span;
        }
    }

    /// The spans kept, in time order, and how many answers there were in all.
    pub fn take(&self) -> (Vec<Span>, u64) {
        let Ok(mut kept) = self.kept.lock() else {
            return (Vec::new(), 0);
        };
        let mut spans = std::mem::take(&mut kept.spans);
        spans.sort_by_key(|s| s.start_ms);
        (spans, kept.seen)
    }
}

fn outcome(o: Outcome) -> &'static str {
    match o {
        Outcome::Complete => "complete",
        Outcome::Reset => "reset",
        Outcome::Closed => "closed",
        Outcome::Hung => "hung",
        Outcome::PeerGone => "peer-gone",
        Outcome::Shutdown => "shutdown",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn past_the_cap_a_sample_is_kept() {
        let started = Instant::now();
        let t = Timeline::new(started);
        let delivered = Delivered {
            outcome: Outcome::Complete,
            bytes: 10,
            ttfb: None,
            total: Duration::from_millis(3),
        };
        for i in 0..(CAP as u64 * 3) {
            t.record(
                "a",
                "analyze",
                started + Duration::from_millis(i),
                &delivered,
            );
        }
        let (spans, seen) = t.take();
        assert_eq!(seen, CAP as u64 * 3);
        assert_eq!(spans.len(), CAP);
        assert!(spans.windows(2).all(|w| w[0].start_ms <= w[1].start_ms));
        // Spread over the whole run, not the first CAP.
        assert!(spans.last().unwrap().start_ms > CAP as u64 * 2);
        assert_eq!(spans[0].outcome, "complete");
    }
}
