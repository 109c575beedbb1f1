//! Where a run over many targets stands: `412/10000 done · 3 failing · 38.2 targets/s · ETA
//! 4m11s`, rewritten in place on a terminal ([`Line`]) and never printed off one. [`Progress`] is
//! the arithmetic alone, fed the instants it is asked about, so that it is tested without a
//! clock.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

/// Targets done (resumed ones included) and failing, and the rate of those run by this process.
#[derive(Debug, Clone)]
pub struct Progress {
    total: usize,
    /// Taken from --out-dir by --resume: done, but not run here (not in the rate).
    resumed: usize,
    /// Run here, finished.
    ran: usize,
    failing: usize,
    started: Instant,
}

impl Progress {
    /// A run of `total` targets that started at `started`.
    pub fn new(total: usize, started: Instant) -> Progress {
        Progress {
            total,
            resumed: 0,
            ran: 0,
            failing: 0,
            started,
        }
    }

    /// Counts a target taken from a report of an earlier run.
    pub fn resumed(&mut self, passed: bool) {
        self.resumed += 1;
        self.failing += usize::from(!passed);
    }

    /// Counts a target run here.
    pub fn finished(&mut self, passed: bool) {
        self.ran += 1;
        self.failing += usize::from(!passed);
    }

    pub fn done(&self) -> usize {
        self.resumed + self.ran
    }

    /// Targets run here per second, from the start to `now`; none before the first finished.
    pub fn rate(&self, now: Instant) -> Option<f64> {
        let elapsed = now.saturating_duration_since(self.started).as_secs_f64();
        (self.ran > 0 && elapsed > 0.0).then(|| self.ran as f64 / elapsed)
    }

    /// How long the targets left take at [`rate`](Self::rate).
    pub fn eta(&self, now: Instant) -> Option<Duration> {
        let left = self.total.saturating_sub(self.done());
        self.rate(now)
            .map(|rate| Duration::from_secs_f64(left as f64 / rate))
    }

    /// `412/10000 done · 3 failing · 38.2 targets/s · ETA 4m11s` (no rate nor ETA before the
    /// first target run here finished).
    pub fn line(&self, now: Instant) -> String {
        let mut line = format!(
            "{}/{} done · {} failing",
            self.done(),
            self.total,
            self.failing
        );
        if let (Some(rate), Some(eta)) = (self.rate(now), self.eta(now)) {
            line.push_str(&format!(" · {rate:.1} targets/s · ETA {}", clock(eta)));
        }
        line
    }
}

/// `4m11s`, `38s`, `2h05m`: rounded up to the second, as a wait is.
fn clock(d: Duration) -> String {
    let s = d.as_secs() + u64::from(d.subsec_nanos() > 0);
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m{:02}s", s / 60, s % 60),
        _ => format!("{}h{:02}m", s / 3600, s % 3600 / 60),
    }
}

/// The progress line on stderr: drawn only when stderr is a terminal, cleared before anything
/// else is printed and at the end.
pub struct Line {
    on: bool,
    shown: bool,
}

impl Line {
    /// On when stderr is a terminal.
    pub fn new() -> Line {
        Line {
            on: std::io::stderr().is_terminal(),
            shown: false,
        }
    }

    /// Whether the line is drawn (stderr is a terminal).
    pub fn on(&self) -> bool {
        self.on
    }

    /// Draws `progress` as of now, over the line drawn before.
    pub fn draw(&mut self, progress: &Progress) {
        if self.on {
            let mut err = std::io::stderr();
            let _ = write!(err, "\r\x1b[2K{}", progress.line(Instant::now()));
            let _ = err.flush();
            self.shown = true;
        }
    }

    /// Clears the line (before a line of the log, the matrix, the end).
    pub fn clear(&mut self) {
        if self.shown {
            let mut err = std::io::stderr();
            let _ = write!(err, "\r\x1b[2K");
            let _ = err.flush();
            self.shown = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_counts_resumed_targets_as_done_but_not_in_the_rate() {
        let t0 = Instant::now();
        let mut p = Progress::new(10_000, t0);
        assert_eq!(p.line(t0), "0/10000 done · 0 failing");
        for i in 0..400 {
            p.resumed(i % 200 != 0);
        }
        // Nothing run here yet: no rate, no ETA.
        assert_eq!(
            p.line(t0 + Duration::from_secs(5)),
            "400/10000 done · 2 failing"
        );
        for i in 0..12 {
            p.finished(i != 3);
        }
        let now = t0 + Duration::from_secs(4);
        assert_eq!(p.rate(now), Some(3.0));
        // 9588 left at 3 a second: 3196 s.
        assert_eq!(p.eta(now), Some(Duration::from_secs(3196)));
        assert_eq!(
            p.line(now),
            "412/10000 done · 3 failing · 3.0 targets/s · ETA 53m16s"
        );
    }

    #[test]
    fn the_rate_is_of_the_targets_run_since_the_start() {
        let t0 = Instant::now();
        let mut p = Progress::new(100, t0);
        p.finished(true);
        assert_eq!(p.rate(t0), None, "no time has passed");
        assert_eq!(p.rate(t0 + Duration::from_millis(250)), Some(4.0));
        for _ in 0..99 {
            p.finished(true);
        }
        assert_eq!(p.eta(t0 + Duration::from_secs(1)), Some(Duration::ZERO));
        assert_eq!(
            p.line(t0 + Duration::from_secs(8)),
            "100/100 done · 0 failing · 12.5 targets/s · ETA 0s"
        );
    }

    #[test]
    fn waits_read_as_a_clock() {
        assert_eq!(clock(Duration::from_millis(200)), "1s");
        assert_eq!(clock(Duration::from_secs(38)), "38s");
        assert_eq!(clock(Duration::from_secs(251)), "4m11s");
        assert_eq!(clock(Duration::from_secs(7500)), "2h05m");
    }
}
