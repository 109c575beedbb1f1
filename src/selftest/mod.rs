//! `agent-tck selftest`: the main job on a built-in default, and a check of the kit itself.
//!
//! For each registered protocol (or the one `--protocol` names): probe a conforming agent of it
//! (the round-table reference agent on a loopback port with a bearer key, so the auth cases run;
//! the execute_task agent over stdio, as a harness author would run it) and print the report,
//! which must pass. Then probe a mock agent per behaviour of the catalogue, per transport, and
//! print the matrix of the cases each one breaks (`mocks/matrix*.yaml`); a row that breaks other
//! cases than expected is a bug in agent-tck (exit 1).

pub mod matrix;

use std::path::Path;

use matrix::Matrix;

use crate::error::Error;
use crate::probe::args::{RunArgs, SuiteArgs};
use crate::probe::interrupt::Sheet;
use crate::protocols::{Protocol, SelftestRun};
use crate::report::{CaseResult, Evidence, Level, Report};

/// What the self-test found: the protocols' reports merged, each matrix row as a case of its own
/// (group `matrix …`), and the verdict line.
pub struct Outcome {
    pub report: Report,
    /// Matrix rows run, how many broke other cases than expected, and how many had every case
    /// skipped (a row that judges nothing shows nothing about its behaviour).
    pub rows: usize,
    pub rows_wrong: usize,
    pub rows_unjudged: usize,
}

impl Outcome {
    /// One line: whether the reference agents passed and every behaviour broke exactly the
    /// cases it should.
    pub fn verdict(&self) -> String {
        let failed_must: usize = self
            .report
            .cases
            .iter()
            .filter(|c| !c.group.starts_with("matrix") && self.report.is_blocking(c))
            .count();
        let unjudged = match self.rows_unjudged {
            0 => String::new(),
            n => format!("; {n} judged nothing (the probe skipped every case)"),
        };
        if failed_must == 0 && self.rows_wrong == 0 && self.rows_unjudged == 0 {
            format!(
                "selftest: the reference agents pass; each of {} broke exactly the cases it should",
                crate::text::count(self.rows as u64, "mock behaviours")
            )
        } else {
            format!(
                "selftest: FAILED — {} against the reference agents; {} of {} broke other cases than expected{unjudged}",
                crate::text::count(failed_must as u64, "blocking failures"),
                self.rows_wrong,
                crate::text::count(self.rows as u64, "mock behaviours")
            )
        }
    }

    /// 0 when the verdict is a pass, 1 otherwise.
    pub fn exit_code(&self) -> crate::report::Exit {
        crate::report::Exit::failed_if(
            self.report.exit_code() != crate::report::Exit::Passed
                || self.rows_wrong > 0
                || self.rows_unjudged > 0,
        )
    }
}

/// What the self-test has to show as it goes (the command line prints it, or with `--quiet`
/// only the end of the reference report).
pub enum Shown<'a> {
    /// The reference agents' report, as soon as it is made.
    Reference(&'a Report),
    /// A matrix's table, as soon as it is done: its name and the table.
    Matrix(&'a str, &'a str),
}

/// Runs the self-test of `protocols` (validated by the caller). `show` is given the reference
/// agents' report as soon as it is made, then each matrix's table as it finishes; the matrices'
/// rows end up in the outcome's report. Each case is told to `sheet` as it is known.
pub async fn run(
    protocols: &[&'static dyn Protocol],
    seed: u64,
    run: &RunArgs,
    suite: &SuiteArgs,
    exe: &Path,
    sheet: &Sheet,
    show: impl Fn(Shown<'_>),
) -> Result<Outcome, Error> {
    if protocols.is_empty() {
        return Err(Error::usage("no protocol to test"));
    }
    // The report's duration is the whole self-test's, matrices included.
    let started = std::time::Instant::now();
    let mut reports = Vec::new();
    for protocol in protocols {
        let mut report = protocol
            .capabilities()
            .selftest
            .run(SelftestRun {
                seed,
                run,
                suite,
                exe,
            })
            .await?;
        report.cases.iter().for_each(|c| sheet.case_done(c));
        // Each part names its own spec (and suite file) before the parts are merged.
        crate::protocols::stamp(&mut report);
        reports.push(report);
    }
    let mut report = merge(reports);
    // One report of the protocols' runs, made by this command, with its seed (a lint's part
    // has none of its own).
    report.command = Some("selftest".into());
    report.seed = Some(seed);
    show(Shown::Reference(&report));
    let (mut rows, mut rows_wrong, mut rows_unjudged) = (0, 0, 0);
    for matrix in Matrix::builtin()? {
        if protocols.iter().any(|p| p.name() == matrix.protocol.name()) {
            let results = run_matrix(&matrix, seed, exe).await?;
            show(Shown::Matrix(&matrix.name(), &matrix::render(&results)));
            rows += results.len();
            rows_wrong += results.iter().filter(|r| !r.ok()).count();
            rows_unjudged += results.iter().filter(|r| r.ok() && r.judged() == 0).count();
            let cases: Vec<CaseResult> = results.iter().map(|r| row_case(&matrix, r)).collect();
            cases.iter().for_each(|c| sheet.case_done(c));
            report.cases.extend(cases);
        }
    }
    report.summarize();
    report.duration_ms = started.elapsed().as_millis() as u64;
    Ok(Outcome {
        report,
        rows,
        rows_wrong,
        rows_unjudged,
    })
}

/// The ids of the cases a self-test of `protocols` reports, as far as they are known before it
/// runs (each protocol's built-in cases, then each matrix row): on Ctrl-C those not done are
/// reported as not run.
pub fn planned(protocols: &[&'static dyn Protocol]) -> Vec<String> {
    let mut ids: Vec<String> = protocols
        .iter()
        .flat_map(|p| p.case_ids().unwrap_or_default())
        .collect();
    for matrix in Matrix::builtin().unwrap_or_default() {
        if protocols.iter().any(|p| p.name() == matrix.protocol.name()) {
            ids.extend(matrix.row_ids());
        }
    }
    ids
}

/// One report of several: the cases one after the other (groups keep them apart).
fn merge(mut reports: Vec<Report>) -> Report {
    let mut first = reports.remove(0);
    for r in reports {
        first.protocol = format!("{}+{}", first.protocol, r.protocol);
        first.target = format!("{} and {}", first.target, r.target);
        first.duration_ms += r.duration_ms;
        first.cases.extend(r.cases);
        first.judged_by.extend(r.judged_by);
    }
    first.summarize();
    first
}

/// A matrix row as a report case: it passes when the behaviour broke exactly the cases it should.
fn row_case(matrix: &Matrix, row: &matrix::RowResult) -> CaseResult {
    let list = |s: &std::collections::BTreeSet<String>| {
        if s.is_empty() {
            "nothing".to_string()
        } else {
            s.iter().cloned().collect::<Vec<_>>().join(", ")
        }
    };
    let mut case = CaseResult::new(
        &matrix::row_id(matrix.protocol.name(), &row.behavior),
        &format!("matrix {}", matrix.protocol.name()),
        Level::Must,
        &format!(
            "the probe against a mock agent with `{}` fails exactly the cases it should",
            row.behavior
        ),
        matrix.source,
    );
    case.set_duration(row.duration);
    let evidence = Evidence::new(
        row.judged() as u64,
        "cases the probe judged against the mock",
    );
    if row.ok() {
        case.pass_noting(evidence, format!("fails {}", list(&row.actual)), || {
            format!(
                "the probe skipped every case against the mock with `{}`: nothing was judged \
                 (a row must exercise the cases it names; check its `only:` and transport)",
                row.behavior
            )
        });
    } else {
        case.fail_on(
            evidence,
            format!(
                "expected to fail {}; failed {}",
                list(&row.expected),
                list(&row.actual)
            ),
        );
    }
    case
}

/// The probe against every mock behaviour of one matrix: prints the table and returns the rows.
async fn run_matrix(
    matrix: &Matrix,
    seed: u64,
    exe: &Path,
) -> Result<Vec<matrix::RowResult>, Error> {
    let name = matrix.name();
    let (deadline, why) = matrix.deadline(exe).await?;
    crate::errln!(
        "running the {name} behaviour matrix: {} mock agents, --timeout {} ({why})…",
        matrix.file.rows.len(),
        crate::units::format_duration(deadline)
    );
    matrix.run_at(deadline, seed, exe).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{RunInfo, Status};
    use crate::text::Redactor;

    fn outcome(agent_fails: bool, rows_wrong: usize) -> Outcome {
        unjudged(agent_fails, rows_wrong, 0)
    }

    fn unjudged(agent_fails: bool, rows_wrong: usize, rows_unjudged: usize) -> Outcome {
        let mut case = CaseResult::new("a.b", "a", Level::Must, "t", "s");
        if agent_fails {
            case.fail("broken");
        } else {
            case.pass(Evidence::new(1, "answer"), String::new);
        }
        let report = RunInfo::start("probe", "x", "t", 1, false)
            .report(vec![case], &Redactor::new(Vec::new()));
        Outcome {
            report,
            rows: 3,
            rows_wrong,
            rows_unjudged,
        }
    }

    fn row(expected: &[&str], cases: &[(&str, Status)]) -> matrix::RowResult {
        matrix::RowResult {
            behavior: "b".into(),
            expected: expected.iter().map(|s| s.to_string()).collect(),
            actual: cases
                .iter()
                .filter(|(_, s)| *s == Status::Fail)
                .map(|(id, _)| id.to_string())
                .collect(),
            messages: cases
                .iter()
                .map(|(id, s)| (id.to_string(), *s, String::new()))
                .collect(),
            duration: std::time::Duration::from_micros(300),
            retried: None,
        }
    }

    #[test]
    fn a_matrix_row_passes_on_the_cases_the_probe_judged() {
        let m = &Matrix::builtin().unwrap()[0];
        let ok = row_case(
            m,
            &row(
                &["x"],
                &[
                    ("x", Status::Fail),
                    ("y", Status::Pass),
                    ("z", Status::Skip),
                ],
            ),
        );
        assert_eq!(ok.status, Status::Pass);
        assert_eq!(
            ok.evidence,
            Some(Evidence::new(2, "cases the probe judged against the mock"))
        );
        assert_eq!((ok.message.as_str(), ok.duration_us), ("fails x", 300));
        let idle = row_case(m, &row(&[], &[("y", Status::Skip)]));
        assert_eq!(idle.status, Status::Skip);
        assert!(idle
            .message
            .starts_with("the probe skipped every case against the mock with `b`"));
        let wrong = row_case(m, &row(&["x"], &[("x", Status::Pass)]));
        assert_eq!(wrong.status, Status::Fail);
        assert_eq!(wrong.message, "expected to fail x; failed nothing");
    }

    #[test]
    fn the_verdict_line_says_what_failed() {
        let ok = outcome(false, 0);
        assert!(ok
            .verdict()
            .starts_with("selftest: the reference agents pass; each of 3"));
        assert_eq!(ok.exit_code(), 0);
        let wrong_row = outcome(false, 1);
        assert_eq!(
            wrong_row.verdict(),
            "selftest: FAILED — 0 blocking failures against the reference agents; 1 of 3 mock behaviours broke other cases than expected"
        );
        assert_eq!(wrong_row.exit_code(), 1);
        let broken_agent = outcome(true, 0);
        assert!(broken_agent.verdict().contains("1 blocking failure"));
        assert_eq!(broken_agent.exit_code(), 1);
        let idle_row = unjudged(false, 0, 1);
        assert_eq!(
            idle_row.verdict(),
            "selftest: FAILED — 0 blocking failures against the reference agents; 0 of 3 mock behaviours broke other cases than expected; 1 judged nothing (the probe skipped every case)"
        );
        assert_eq!(idle_row.exit_code(), 1);
    }
}
