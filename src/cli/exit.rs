//! The one place a command's end becomes an exit status ([`exit_status`]); the statuses are
//! documented on [`crate::report::Exit`].

use crate::error::{Class, Error};
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
    /// Interrupted (Ctrl-C) while judging — a probe, `selftest`, `mock fleet` driving a
    /// platform — after the report of the cases done was written.
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
        Err(e) => match e.class() {
            Class::Run => Exit::Failed.code(),
            Class::Usage => Exit::Usage.code(),
        },
    }
}

/// The end of a run that reports: the report named the spec it was judged by, the baseline
/// applied (`--baseline`), the report printed and written, its exit status.
pub(super) fn conclude(mut report: Report, output: &OutputArgs) -> Result<Ended, Error> {
    crate::protocols::stamp(&mut report);
    conclude_as_read(report, output)
}

/// [`conclude`] for a report read back (`report merge`): it names the specs its parts
/// recorded, and no other (a part that recorded none says so).
pub(super) fn conclude_as_read(mut report: Report, output: &OutputArgs) -> Result<Ended, Error> {
    output.apply_baseline(&mut report)?;
    print_console(&report, output.quiet);
    output.write(&report)?;
    Ok(Ended::of(&report))
}

/// The console report on stdout: whole, or with `--quiet` only its end.
pub(super) fn print_console(report: &Report, quiet: bool) {
    let text = console::render(report, console::want_colour());
    if quiet {
        crate::out!("{}", console_end(&text));
    } else {
        crate::out!("{text}");
    }
}

/// What follows a console report's cases: the notes, the counts, the verdict line (the last
/// paragraph: a blank line sets it off, and no case's lines hold one, each being indented).
pub(super) fn console_end(rendered: &str) -> &str {
    rendered
        .rsplit_once("\n\n")
        .map_or(rendered, |(_, end)| end)
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
        assert_eq!(exit_status(&Err(Error::as_run(Error::usage("x")))), 1);
    }

    #[test]
    fn quiet_keeps_the_end_of_the_console_report_and_no_case() {
        use crate::report::{CaseResult, Evidence, Level, RunInfo};
        let mut passed = CaseResult::new("a.one", "a", Level::Must, "one", "");
        passed.pass(Evidence::new(1, "answers"), String::new);
        let mut failed = CaseResult::new("a.two", "a", Level::Must, "two", "");
        failed.fail("the answer had no id\n\nat all");
        let mut report = RunInfo::start("probe", "p", "t", 1, false)
            .report(vec![passed, failed], &crate::text::Redactor::new(None));
        report.notes.push("a note".into());
        let text = console::render(&report, false);
        let end = console_end(&text);
        assert!(!end.contains("a.one") && !end.contains("a.two"), "{end}");
        assert!(end.starts_with("note: a note\n"), "{end}");
        assert!(end.contains("1 MUST failed"), "{end}");
        assert!(
            end.trim_end().ends_with("1 passed, 1 failed, 0 skipped"),
            "{end}"
        );
    }
}
