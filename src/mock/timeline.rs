//! The requests a fleet answered, over time, for the HTML report's timeline and per-endpoint
//! answer times: a span per answer (agent and behaviours, endpoint, start, duration, outcome).
//! Bounded: past [`CAP`] spans a uniform sample of them is kept (reservoir sampling), so a
//! soak of millions of requests holds a fixed few megabytes.

use std::borrow::Cow;
use std::sync::Mutex;
use std::time::Instant;

use super::http1::{Delivered, Outcome};
use crate::report::Span;

/// Most spans kept.
pub const CAP: usize = 20_000;

pub struct Timeline {
    started: Instant,
    /// Each agent's lane: its name and behaviours, by the agent's index.
    lanes: Vec<String>,
    kept: Mutex<Kept>,
    /// Answers to requests agent-tck's probe marked as its own: left out of the platform's plot.
    left_out: std::sync::atomic::AtomicU64,
}

/// A span as recorded on the hot path: the lane by index, the outcome as it is; made a
/// [`Span`] (names and words) only when the report is.
struct Raw {
    lane: usize,
    endpoint: Cow<'static, str>,
    start_ms: u64,
    duration_ms: u64,
    outcome: Outcome,
}

#[derive(Default)]
struct Kept {
    spans: Vec<Raw>,
    /// The answer to the latest request received (its lane, endpoint, when received): what the
    /// platform last did, should it go down.
    last: Option<(usize, Cow<'static, str>, u64)>,
    seen: u64,
    /// A xorshift state for the sample (seeded by the count: the same run keeps the same spans).
    rng: u64,
}

impl Timeline {
    /// A timeline from `started`, with a lane per agent (`lanes[i]` names agent i).
    pub fn new(started: Instant, lanes: Vec<String>) -> Timeline {
        Timeline {
            started,
            lanes,
            kept: Mutex::new(Kept {
                rng: 0x9e37_79b9_7f4a_7c15,
                ..Kept::default()
            }),
            left_out: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// When the run started (the offsets' origin).
    pub fn started(&self) -> Instant {
        self.started
    }

    /// An answer to a request the probe marked as its own: counted, not plotted.
    pub fn leave_out(&self) {
        self.left_out
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    /// How many answers [`leave_out`](Self::leave_out) kept off the plot.
    pub fn left_out(&self) -> u64 {
        self.left_out.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// An answer of agent `lane` that is over.
    pub fn record(
        &self,
        lane: usize,
        endpoint: Cow<'static, str>,
        received: Instant,
        delivered: &Delivered,
    ) {
        let span = Raw {
            lane,
            endpoint,
            start_ms: received.saturating_duration_since(self.started).as_millis() as u64,
            duration_ms: delivered.total.as_millis() as u64,
            outcome: delivered.outcome,
        };
        let Ok(mut kept) = self.kept.lock() else {
            return;
        };
        if kept.last.as_ref().is_none_or(|l| l.2 <= span.start_ms) {
            kept.last = Some((span.lane, span.endpoint.clone(), span.start_ms));
        }
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

    /// The latest request answered so far: `/challenge to keyed, received at +2.1 s`.
    pub fn last_request(&self) -> Option<String> {
        let kept = self.kept.lock().ok()?;
        let (lane, endpoint, at) = kept.last.as_ref()?;
        let agent = self
            .lanes
            .get(*lane)
            .map_or("an agent", |l| l.split_whitespace().next().unwrap_or(l));
        Some(format!(
            "/{} to {agent}, received at +{:.1} s",
            endpoint.trim_start_matches('/'),
            *at as f64 / 1000.0
        ))
    }

    /// The spans kept, in time order, and how many answers there were in all.
    pub fn take(&self) -> (Vec<Span>, u64) {
        let Ok(mut kept) = self.kept.lock() else {
            return (Vec::new(), 0);
        };
        let mut spans: Vec<Span> = std::mem::take(&mut kept.spans)
            .into_iter()
            .map(|r| Span {
                lane: self.lanes.get(r.lane).cloned().unwrap_or_default(),
                label: r.endpoint.into_owned(),
                start_ms: r.start_ms,
                duration_ms: r.duration_ms,
                outcome: r.outcome.word().to_string(),
            })
            .collect();
        spans.sort_by_key(|s| s.start_ms);
        (spans, kept.seen)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn past_the_cap_a_sample_is_kept() {
        let started = Instant::now();
        let t = Timeline::new(started, vec!["a [conforming]".into()]);
        let delivered = Delivered {
            outcome: Outcome::Complete,
            bytes: 10,
            ttfb: None,
            total: Duration::from_millis(3),
        };
        for i in 0..(CAP as u64 * 3) {
            t.record(
                0,
                "analyze".into(),
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
        assert_eq!(spans[0].lane, "a [conforming]");
    }
}
