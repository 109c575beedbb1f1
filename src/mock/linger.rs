//! The child a stdio mock agent with `forks-and-exits` leaves behind (`agent-tck mock linger`,
//! hidden): it holds the agent's stdout open, as a careless tool's child would, and settles
//! the case `stdio.kills-process-group` in the agent's reports:
//!
//! - PASS when it is signalled (SIGTERM, SIGHUP, SIGINT) by the harness — the process that
//!   started the agent, whose pid the agent hands down ([`HARNESS_PID`]) — within the bound: the
//!   harness ended the process group. The sender is read from the signal itself (`SA_SIGINFO`'s
//!   `si_pid`), so a signal from anyone else (a `timeout` wrapper, a supervisor, the kernel) is
//!   not credited to the harness;
//! - FAIL when a signal came from another process, or when the harness has closed its end of
//!   stdout and the child is still running [`GRACE`] later (the harness is done with the agent
//!   and left the group alive), or when nothing ended it within the bound after the agent exited
//!   (the harness's timeout, [`BOUND_MS`], + [`GRACE`]; [`MAX`] at most).
//!
//! It then exits: the kit leaves no process behind, even when the harness does. A SIGKILL to
//! the group ends it without a word; the case stays skipped, saying so.

use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::time::Instant;

use super::line_journal::{self, forked_case, Event};
use super::peer_end::{catch_senders, caught, process_name};
use crate::report::{junit, Report};

/// The case the child settles.
pub const FORKED_CASE: &str = "stdio.kills-process-group";

/// How long the child outlives the harness's end of stdout before it says the group was left.
pub const GRACE: Duration = Duration::from_secs(5);

/// The longest the child lingers in any case.
pub const MAX: Duration = Duration::from_secs(600);

/// The environment variable that hands the child the pid of the process that started the agent.
pub const HARNESS_PID: &str = "AGENT_TCK_HARNESS_PID";

/// The environment variable that hands the child how long the harness waits for an agent
/// (`--expect-timeout`, in ms): the group must be ended within it (+ [`GRACE`]) of the exit.
pub const BOUND_MS: &str = "AGENT_TCK_LINGER_BOUND_MS";

/// What the child knows of the harness: who started the agent, how long it may take.
struct Harness {
    /// The agent's parent (None: not handed down, e.g. an older agent).
    pid: Option<i32>,
    /// The agent exited about when the child was born: the group must be ended within this.
    bound: Duration,
}

impl Harness {
    fn from_env() -> Harness {
        let var = |name: &str| std::env::var(name).ok().and_then(|v| v.parse::<u64>().ok());
        Harness {
            pid: var(HARNESS_PID)
                .and_then(|p| i32::try_from(p).ok())
                .filter(|p| *p > 1),
            bound: var(BOUND_MS)
                .map(|ms| Duration::from_millis(ms) + GRACE)
                .unwrap_or(MAX)
                .min(MAX),
        }
    }

    /// The verdict on a signal `name` from `sender`, `after` the agent exited.
    fn judge(&self, name: &str, sender: i32, after: Duration) -> Result<String, String> {
        let pid = std::process::id();
        let after_s = after.as_secs_f64();
        let from = process_name(sender);
        match self.pid {
            Some(harness) if harness == sender && after <= self.bound => Ok(format!(
                "the harness ({from}) ended the agent's process group: the child it left (pid {pid}) got {name} from it {after_s:.1} s after the agent exited"
            )),
            Some(harness) if harness == sender => Err(format!(
                "the child the agent left (pid {pid}) got {name} from the harness ({from}) only {after_s:.1} s after the agent exited (expected within {} s: --expect-timeout + {} s)",
                self.bound.as_secs(),
                GRACE.as_secs()
            )),
            Some(harness) => Err(format!(
                "the child the agent left (pid {pid}) got {name} from {from}, not from the harness ({}), {after_s:.1} s after the agent exited: the harness did not end the agent's process group itself",
                process_name(harness)
            )),
            None => Err(format!(
                "the child the agent left (pid {pid}) got {name} from {from} {after_s:.1} s after the agent exited, but the agent did not say which process started it ({HARNESS_PID}): the signal cannot be credited to the harness"
            )),
        }
    }
}

/// Lingers, then settles the case in the reports named (when any).
pub async fn linger(json: Option<PathBuf>, junit: Option<PathBuf>) {
    let born = Instant::now();
    if !catch_senders() {
        return;
    }
    let harness = Harness::from_env();
    // Blocked by the agent before it started us (see `line_server::fork_and_exit`): caught now,
    // one that came meanwhile is delivered here.
    block_ending_signals(libc::SIG_UNBLOCK);
    let mut closed_at: Option<Instant> = None;
    let pid = std::process::id();
    let verdict: Result<String, String> = loop {
        if let Some((name, sender)) = caught() {
            break harness.judge(name, sender, born.elapsed());
        }
        if closed_at.is_none() && stdout_closed() {
            closed_at = Some(Instant::now());
        }
        if closed_at.is_some_and(|t| t.elapsed() >= GRACE) {
            break Err(format!(
                "the harness closed the agent's stdout, but the child the agent left (pid {pid}) was still running {} s later: end the agent's process group (killpg), not only the agent",
                GRACE.as_secs()
            ));
        }
        if born.elapsed() >= harness.bound {
            break Err(format!(
                "the child the agent left (pid {pid}) was still running {} s after the agent exited (--expect-timeout + {} s), its stdout still open: the harness never ended the agent's process group",
                harness.bound.as_secs(),
                GRACE.as_secs()
            ));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    if let Some(json) = json {
        settle(&json, junit.as_deref(), verdict);
    }
}

/// Blocks or unblocks (`how`) SIGTERM, SIGHUP and SIGINT for the calling thread. Async-signal
/// safe: it runs between fork and exec too.
pub fn block_ending_signals(how: libc::c_int) {
    // SAFETY: a zeroed sigset_t is a valid argument to sigemptyset, which initialises it; the
    // other calls take pointers to it, valid for their duration.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for signal in [libc::SIGTERM, libc::SIGHUP, libc::SIGINT] {
            libc::sigaddset(&mut set, signal);
        }
        libc::pthread_sigmask(how, &set, std::ptr::null_mut());
    }
}

/// Whether the reading end of our stdout is gone (a pipe's write end polls POLLERR then).
fn stdout_closed() -> bool {
    let mut fd = libc::pollfd {
        fd: 1,
        events: 0,
        revents: 0,
    };
    // SAFETY: one valid pollfd, its count, a zero timeout; poll writes only `revents`.
    let n = unsafe { libc::poll(&mut fd, 1, 0) };
    n > 0 && fd.revents & (libc::POLLERR | libc::POLLHUP) != 0
}

/// Rewrites the reports with the case settled (a report that cannot be read is left alone).
/// With a journal beside the report (the processes of a per-turn run share one), the verdict
/// goes there too, and the case is the fold of every child's verdict so far.
fn settle(json: &Path, junit_path: Option<&Path>, verdict: Result<String, String>) {
    let (pass, message) = match verdict {
        Ok(m) => (true, m),
        Err(m) => (false, m),
    };
    let journaled = line_journal::settle(json, pass, &message);
    let Ok(text) = std::fs::read_to_string(json) else {
        return;
    };
    let Ok(mut report) = serde_json::from_str::<Report>(&text) else {
        return;
    };
    let Some(case) = report.cases.iter_mut().find(|c| c.id == FORKED_CASE) else {
        return;
    };
    *case = match journaled {
        Some(records) => {
            let mut unsettled = None;
            let mut settled = Vec::new();
            for record in records {
                match record.event {
                    Event::Forked { case } => {
                        unsettled.get_or_insert(case);
                    }
                    Event::Settled { pass, message } => settled.push((pass, message)),
                    _ => {}
                }
            }
            forked_case(unsettled.unwrap_or_else(|| case.clone()), &settled)
        }
        None => forked_case(case.clone(), &[(pass, message)]),
    };
    report.summarize();
    let _ = std::fs::write(json, crate::report::json::to_string(&report));
    if let Some(path) = junit_path {
        let _ = std::fs::write(path, junit::to_string(&report));
    }
}
