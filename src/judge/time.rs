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

thread_local! {
    /// The instant that [`serde_instant`] counts from, while [`based`] runs.
    static BASE: std::cell::Cell<Option<Instant>> = const { std::cell::Cell::new(None) };
}

/// Runs `f` with instants (de)serialized by [`serde_instant`] as milliseconds from `base`: a
/// recording's instants count from its run's start, and a judging offline rebuilds them from a
/// base of its own. Outside it, an instant is an error to (de)serialize, never a guess.
pub fn based<T>(base: Instant, f: impl FnOnce() -> T) -> T {
    let before = BASE.with(|b| b.replace(Some(base)));
    let out = f();
    BASE.with(|b| b.set(before));
    out
}

/// `#[serde(with = "crate::judge::time::serde_instant")]`: an `Instant` as milliseconds from
/// the base [`based`] sets.
pub mod serde_instant {
    use super::*;
    use serde::{Deserialize, Deserializer, Serializer};

    const NO_BASE: &str = "an instant outside a recording's time (no base to count from)";

    fn base() -> Option<Instant> {
        BASE.with(|b| b.get())
    }

    pub fn serialize<S: Serializer>(at: &Instant, s: S) -> Result<S::Ok, S::Error> {
        let base = base().ok_or_else(|| <S::Error as serde::ser::Error>::custom(NO_BASE))?;
        s.serialize_f64(ms_since(base, *at))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Instant, D::Error> {
        let base = base().ok_or_else(|| <D::Error as serde::de::Error>::custom(NO_BASE))?;
        Ok(instant(base, f64::deserialize(d)?))
    }

    /// The same, for an `Option<Instant>`.
    pub mod option {
        use super::*;

        pub fn serialize<S: Serializer>(at: &Option<Instant>, s: S) -> Result<S::Ok, S::Error> {
            match at {
                Some(at) => super::serialize(at, s),
                None => s.serialize_none(),
            }
        }

        pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Instant>, D::Error> {
            let base = base().ok_or_else(|| <D::Error as serde::de::Error>::custom(NO_BASE))?;
            Ok(Option::<f64>::deserialize(d)?.map(|ms| instant(base, ms)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Serialize, serde::Deserialize)]
    struct At(#[serde(with = "serde_instant")] Instant);

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
        let recorded = based(base, || {
            serde_json::to_string(&At(base + Duration::from_nanos(7)))
        });
        let rebuilt: At = based(base, || serde_json::from_str(&recorded.unwrap())).unwrap();
        assert_eq!(rebuilt.0, base + Duration::from_nanos(7));
        assert!(
            serde_json::to_string(&At(base)).is_err(),
            "no base, no instant"
        );
        let before = base.checked_sub(Duration::from_millis(5)).unwrap();
        assert_eq!(ms_since(base, before), -5.0);
        assert_eq!(instant(base, -5.0), before);
    }
}
