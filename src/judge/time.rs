//! Instants as a recording holds them: milliseconds from the run's start, as `f64`, exact to
//! the nanosecond for any run shorter than a day (the nanoseconds round-trip through the
//! milliseconds: `n / 1e6 * 1e6` rounds back to `n` while `n` stays far below 2^53).
//!
//! A judging offline rebuilds each instant as a base plus its offset, so that every rule that
//! compares two instants (a wait against a timeout, a request before the end of the run) finds
//! the same distance between them as the live run did.

use std::time::{Duration, Instant};

/// `at` in milliseconds from `base` (negative when it came before).
pub fn ms_since(base: Instant, at: Instant) -> f64 {
    match at.checked_duration_since(base) {
        Some(after) => ms(after),
        None => -ms(base.duration_since(at)),
    }
}

/// A duration in milliseconds.
pub fn ms(d: Duration) -> f64 {
    d.as_nanos() as f64 / 1e6
}

/// The duration `ms` milliseconds long (0 when negative or not a number).
pub fn duration(ms: f64) -> Duration {
    if ms.is_finite() && ms > 0.0 {
        Duration::from_nanos((ms * 1e6).round() as u64)
    } else {
        Duration::ZERO
    }
}

/// The instant `ms` milliseconds after `base` (before it, when negative).
pub fn instant(base: Instant, ms: f64) -> Instant {
    if ms < 0.0 {
        base.checked_sub(duration(-ms)).unwrap_or(base)
    } else {
        base + duration(ms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_instant_comes_back_to_the_nanosecond() {
        let base = Instant::now();
        for nanos in [
            0u64,
            1,
            999_999,
            1_234_567_891,
            3_599_999_999_999,
            86_399_999_999_999,
        ] {
            let at = base + Duration::from_nanos(nanos);
            let recorded: f64 =
                serde_json::from_str(&serde_json::to_string(&ms_since(base, at)).unwrap()).unwrap();
            assert_eq!(instant(base, recorded), at, "{nanos}");
        }
        let before = base.checked_sub(Duration::from_millis(5)).unwrap();
        assert_eq!(ms_since(base, before), -5.0);
        assert_eq!(instant(base, -5.0), before);
    }
}
