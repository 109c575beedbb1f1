//! The child a stdio mock agent with `forks-and-exits` leaves behind (`agent-tck mock linger`,
//! hidden): it holds the agent's stdout open, as a careless tool's child would, and settles
//! the case `stdio.kills-process-group` in the agent's reports:
//!
//! - PASS when it is signalled (SIGTERM, SIGHUP, SIGINT): the harness ended the process group;
//! - FAIL when the harness has closed its end of stdout and the child is still running
//!   [`GRACE`] later (the harness is done with the agent and left the group alive), or after
//!   [`MAX`] in any case.
//!
//! It then exits: the kit leaves no process behind, even when the harness does. A SIGKILL to
//! the group ends it without a word; the case stays skipped, saying so.

use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::signal::unix::{signal, SignalKind};
use tokio::time::Instant;

use crate::report::{junit, Evidence, Report, Summary};

/// The case the child settles.
pub const FORKED_CASE: &str = "stdio.kills-process-group";

/// How long the child outlives the harness's end of stdout before it says the group was left.
pub const GRACE: Duration = Duration::from_secs(5);

/// The longest the child lingers in any case.
pub const MAX: Duration = Duration::from_secs(600);

/// Lingers, then settles the case in the reports named (when any).
pub async fn linger(json: Option<PathBuf>, junit: Option<PathBuf>) {
    let born = Instant::now();
    let (Ok(mut term), Ok(mut hup), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::hangup()),
        signal(SignalKind::interrupt()),
    ) else {
        return;
    };
    // Blocked by the agent before it started us (see `line_server::fork_and_exit`): caught now,
    // one that came meanwhile is delivered here.
    block_ending_signals(libc::SIG_UNBLOCK);
    let mut closed_at: Option<Instant> = None;
    let pid = std::process::id();
    let verdict: Result<String, String> = loop {
        let signalled = tokio::select! {
            _ = term.recv() => Some("SIGTERM"),
            _ = hup.recv() => Some("SIGHUP"),
            _ = int.recv() => Some("SIGINT"),
            _ = tokio::time::sleep(Duration::from_millis(100)) => None,
        };
        if let Some(sig) = signalled {
            break Ok(format!(
                "the harness ended the agent's process group: the child it left (pid {pid}) got {sig} {:.1} s after the agent exited",
                born.elapsed().as_secs_f64()
            ));
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
        if born.elapsed() >= MAX {
            break Err(format!(
                "the child the agent left (pid {pid}) was still running {} s after the agent exited: the harness never ended the agent's process group",
                MAX.as_secs()
            ));
        }
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
fn settle(json: &Path, junit_path: Option<&Path>, verdict: Result<String, String>) {
    let Ok(text) = std::fs::read_to_string(json) else {
        return;
    };
    let Ok(mut report) = serde_json::from_str::<Report>(&text) else {
        return;
    };
    let Some(case) = report.cases.iter_mut().find(|c| c.id == FORKED_CASE) else {
        return;
    };
    match verdict {
        Ok(message) => case.pass_noting(
            Evidence::new(1, "process group left with a child"),
            message,
            String::new,
        ),
        Err(message) => case.fail(message),
    }
    report.summary = Summary::of(&report.cases);
    let _ = std::fs::write(json, crate::report::json::to_string(&report));
    if let Some(path) = junit_path {
        let _ = std::fs::write(path, junit::to_string(&report));
    }
}
