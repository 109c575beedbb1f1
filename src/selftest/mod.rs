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
use crate::protocols::{Protocol, Selftest};
use crate::report::{Report, Summary};

/// What the self-test found: the protocols' reports merged, and whether every matrix row broke
/// exactly the cases it should.
pub struct Outcome {
    pub report: Report,
    pub matrices_ok: bool,
}

/// Runs the self-test of `protocols` (validated by the caller). Prints the matrices as they
/// finish; the report is the caller's to print and write.
pub async fn run(
    protocols: &[&'static dyn Protocol],
    seed: u64,
    run: &RunArgs,
    suite: &SuiteArgs,
    exe: &Path,
    on_report: impl FnOnce(&Report) -> Result<(), Error>,
) -> Result<Outcome, Error> {
    if protocols.is_empty() {
        return Err(Error::usage("no protocol to test"));
    }
    let mut reports = Vec::new();
    for protocol in protocols {
        reports.push(
            protocol
                .selftest(Selftest {
                    seed,
                    run,
                    suite,
                    exe,
                })
                .await?,
        );
    }
    let report = merge(reports);
    on_report(&report)?;
    let mut matrices_ok = true;
    for matrix in Matrix::builtin()? {
        if protocols.iter().any(|p| p.name() == matrix.protocol.name()) {
            matrices_ok &= run_matrix(&matrix, seed, exe).await?;
        }
    }
    Ok(Outcome {
        report,
        matrices_ok,
    })
}

/// One report of several: the cases one after the other (groups keep them apart).
fn merge(mut reports: Vec<Report>) -> Report {
    let mut first = reports.remove(0);
    for r in reports {
        first.protocol = format!("{}+{}", first.protocol, r.protocol);
        first.target = format!("{} and {}", first.target, r.target);
        first.duration_ms += r.duration_ms;
        first.cases.extend(r.cases);
    }
    first.summary = Summary::of(&first.cases);
    first
}

/// The probe against every mock behaviour of one matrix: prints the table; false when a row
/// failed other cases than expected (a bug in agent-tck).
async fn run_matrix(matrix: &Matrix, seed: u64, exe: &Path) -> Result<bool, Error> {
    let name = matrix.name();
    eprintln!(
        "running the {name} behaviour matrix: {} mock agents (--timeout {})…",
        matrix.file.rows.len(),
        matrix.file.timeout
    );
    let results = matrix.run(seed, exe).await?;
    crate::outln!("\nThe probe against each mock behaviour, {name}:\n");
    crate::out!("{}", matrix::render(&results));
    Ok(results.iter().all(|r| r.ok()))
}
