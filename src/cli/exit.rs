//! The one place a command's end becomes an exit status ([`exit_status`]); the statuses are
//! documented on [`crate::report::Exit`].

use crate::error::Error;
use crate::report::output::OutputArgs;
use crate::report::{console, Exit, Report};

/// How a command that did not fail ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// With a verdict.
    Verdict(Exit),
    /// A mock agent run as a command exits as its behaviour says (`exits-early`: 3): its status
    /// is its answer to the harness, not a verdict.
    AgentExit(u8),
    /// Interrupted: before a report could be made (a probe), or while driving a platform, after
    /// the report was written (`mock fleet`).
    Interrupted,
}

impl Ended {
    fn of(report: &Report) -> Ended {
        Ended::Verdict(report.exit_code())
    }
}

/// The exit status of a command: the one place it is decided.
pub fn exit_status(outcome: &Result<Ended, Error>) -> u8 {
    match outcome {
        Ok(Ended::Verdict(exit)) => exit.code(),
        Ok(Ended::AgentExit(status)) => *status,
        Ok(Ended::Interrupted) => Exit::Interrupted.code(),
        Err(Error::Run(_)) => Exit::Failed.code(),
        Err(Error::Usage(_)) => Exit::Usage.code(),
    }
}

/// The end of a run that reports: the baseline applied (`--baseline`), the report printed and
/// written, its exit status.
pub(super) fn conclude(mut report: Report, output: &OutputArgs) -> Result<Ended, Error> {
    output.apply_baseline(&mut report)?;
    crate::out!("{}", console::render(&report, console::want_colour()));
    output.write(&report)?;
    Ok(Ended::of(&report))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_statuses_are_decided_in_one_place() {
        assert_eq!(exit_status(&Ok(Ended::Verdict(Exit::Passed))), 0);
        assert_eq!(exit_status(&Ok(Ended::Verdict(Exit::Failed))), 1);
        assert_eq!(exit_status(&Ok(Ended::AgentExit(3))), 3);
        assert_eq!(exit_status(&Ok(Ended::Interrupted)), 130);
        assert_eq!(exit_status(&Err(Error::run("cannot bind"))), 1);
        assert_eq!(exit_status(&Err(Error::usage("--url: no scheme"))), 2);
    }
}
