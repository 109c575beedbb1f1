//! A probe cut short by Ctrl-C still reports: the run notes its header (protocol, target, seed,
//! `--strict`) and its secrets here as it starts ([`started`], [`secrets`]), the command line
//! collects the cases as they finish, and on Ctrl-C [`Sheet::report`] makes the report of the
//! cases done, the rest marked not run. The notes are task-local: a run outside
//! [`Sheet::record`] (a self-test, many targets at once) notes nothing.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::report::{CaseResult, Interruption, Level, Report, RunInfo, Signal};
use crate::text::Redactor;

tokio::task_local! {
    static CURRENT: Arc<Mutex<Notes>>;
}

/// What the run noted of itself.
#[derive(Default)]
struct Notes {
    header: Option<RunInfo>,
    secrets: Vec<String>,
}

/// Notes `info` as the header of the run in progress (a copy: the run keeps its own).
pub fn started(info: &RunInfo) {
    let copy = RunInfo {
        role: info.role,
        protocol: info.protocol.clone(),
        target: info.target.clone(),
        seed: info.seed,
        command: info.command.clone(),
        strict: info.strict,
        started_at: info.started_at.clone(),
        started: info.started,
    };
    let _ = CURRENT.try_with(|notes| {
        if let Ok(mut n) = notes.lock() {
            n.header = Some(copy);
        }
    });
}

/// Notes secrets of the run in progress (a key, tokens), to be redacted from a report made on
/// Ctrl-C as from the run's own.
pub fn secrets<I: IntoIterator<Item = String>>(secrets: I) {
    let secrets: Vec<String> = secrets.into_iter().collect();
    let _ = CURRENT.try_with(|notes| {
        if let Ok(mut n) = notes.lock() {
            n.secrets.extend(secrets);
        }
    });
}

/// The skip message of a case a Ctrl-C (or SIGTERM: `by`) left unrun.
pub fn not_run_message(by: Signal, after: Duration) -> String {
    format!(
        "not run: interrupted ({by}) after {:.1} s",
        after.as_secs_f64()
    )
}

/// A probe run's notes and the cases it finished, for the report made if it is interrupted.
#[derive(Clone, Default)]
pub struct Sheet {
    notes: Arc<Mutex<Notes>>,
    done: Arc<Mutex<Vec<CaseResult>>>,
}

impl Sheet {
    pub fn new() -> Sheet {
        Sheet::default()
    }

    /// Runs `run` with its notes going to this sheet.
    pub async fn record<F: std::future::Future>(&self, run: F) -> F::Output {
        CURRENT.scope(self.notes.clone(), run).await
    }

    /// A case finished.
    pub fn case_done(&self, case: &CaseResult) {
        if let Ok(mut done) = self.done.lock() {
            done.push(case.clone());
        }
    }

    /// The report of a run interrupted by `by`: the cases done, in the order they finished, then
    /// each of `planned` not done, a SKIP saying it was not run; the header the run noted
    /// (`fallback` when it noted none: interrupted before it began); marked interrupted
    /// ([`Report::interrupted`]). How many cases were done, too.
    pub fn report(&self, planned: &[String], fallback: RunInfo, by: Signal) -> (Report, usize) {
        let notes = std::mem::take(&mut *self.notes.lock().unwrap_or_else(|e| e.into_inner()));
        let mut cases = std::mem::take(&mut *self.done.lock().unwrap_or_else(|e| e.into_inner()));
        let done = cases.len();
        let info = notes.header.unwrap_or(fallback);
        let after = info.started.elapsed();
        let why = not_run_message(by, after);
        let done_ids: std::collections::HashSet<&str> =
            cases.iter().map(|c| c.id.as_str()).collect();
        let unrun: Vec<CaseResult> = planned
            .iter()
            .filter(|id| !done_ids.contains(id.as_str()))
            .map(|id| not_run(id, &why))
            .collect();
        cases.extend(unrun);
        let mut report = info.report(cases, &Redactor::new(notes.secrets));
        report.interrupted = Some(Interruption::of(by, after, &report.cases, |c| {
            c.message != why
        }));
        (report, done)
    }
}

/// A case of the plan that a Ctrl-C left unrun: its id is all the plan knows of it (its group is
/// the id's first part; it is skipped, so its level decides nothing).
fn not_run(id: &str, why: &str) -> CaseResult {
    let group = id.split('.').next().unwrap_or(id);
    let mut case = CaseResult::new(id, group, Level::Must, "not run", "");
    case.skip(why);
    case
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info() -> RunInfo {
        RunInfo::start("probe", "p", "http://127.0.0.1:1", 7, false)
    }

    #[deadline::test]
    async fn the_report_holds_the_cases_done_and_the_rest_not_run_redacted() {
        let sheet = Sheet::new();
        sheet
            .record(async {
                started(&RunInfo::start("probe", "p", "http://t", 9, true));
                secrets(["s3cret-key-0123".to_string()]);
            })
            .await;
        let mut done = CaseResult::new("a.one", "a", Level::Must, "one", "");
        done.fail("the answer echoed s3cret-key-0123");
        sheet.case_done(&done);
        let planned = ["a.one", "b.two"].map(String::from);
        let (report, count) = sheet.report(&planned, info(), Signal::Interrupt);
        assert_eq!(count, 1);
        assert_eq!((report.target.as_str(), report.seed), ("http://t", Some(9)));
        assert!(report.strict);
        assert_eq!(report.cases.len(), 2);
        assert!(!report.cases[0].message.contains("s3cret-key-0123"));
        assert_eq!(report.cases[1].id, "b.two");
        assert_eq!(report.cases[1].group, "b");
        let cut = report.interrupted.as_ref().expect("marked interrupted");
        assert_eq!(cut.by, Signal::Interrupt);
        assert_eq!((cut.judged, cut.cases, cut.not_reached_count), (1, 2, 1));
        assert_eq!(cut.not_reached, vec!["b.two".to_string()]);
        assert_eq!(report.exit_code(), crate::report::Exit::Interrupted);
        assert!(
            report.cases[1]
                .message
                .starts_with("not run: interrupted (Ctrl-C) after "),
            "{}",
            report.cases[1].message
        );
    }

    #[deadline::test]
    async fn outside_a_sheet_nothing_is_noted_and_a_run_that_noted_nothing_has_the_fallback() {
        started(&info());
        secrets(["x".to_string()]);
        let (report, count) =
            Sheet::new().report(&["a.one".to_string()], info(), Signal::Terminate);
        assert_eq!((count, report.target.as_str()), (0, "http://127.0.0.1:1"));
        assert_eq!(report.cases.len(), 1);
        assert!(
            report.cases[0]
                .message
                .starts_with("not run: interrupted (SIGTERM) after "),
            "{}",
            report.cases[0].message
        );
    }
}
