//! `agent-tck selftest`: the main job on a built-in default, and a check of the kit itself.
//!
//! For each protocol (both unless `--protocol` says one): start the conforming mock (the
//! round-table reference agent on a loopback port with a bearer key, so the auth cases run; the
//! execute_task agent over stdio, as a harness author would run it), probe it and print the
//! report, which must pass. Then probe a mock agent per behaviour of the catalogue, per
//! transport, and print the matrix of the cases each one breaks (`mocks/matrix*.yaml`); a row
//! that breaks other cases than expected is a bug in agent-tck (exit 1).

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use crate::cli::{self, OutputArgs, Protocol, RunArgs, UsageError};
use crate::mock::matrix::{self, MatrixFile, MatrixProtocol};
use crate::mock::reference::ReferenceAgent;
use crate::mock::server;
use crate::probe::scenario::Scenario;
use crate::probe::task::{Target, TaskSettings};
use crate::report::{console, Report, Summary};
use crate::text::shell_quote;
use crate::transport::http::BaseUrl;
use crate::transport::stdio::{StdioConfig, StdioMode};

pub async fn run(
    protocol: Option<Protocol>,
    run: &RunArgs,
    output: &OutputArgs,
) -> Result<u8, UsageError> {
    let seed = cli::seed_or_clock(run.seed);
    let exe = std::env::current_exe()
        .map_err(|e| format!("cannot find the agent-tck binary to run as a stdio agent: {e}"))?;
    let mut reports = Vec::new();
    if protocol != Some(Protocol::ExecuteTask) {
        reports.push(roundtable(seed, run).await?);
    }
    if protocol != Some(Protocol::Roundtable) {
        reports.push(execute_task(seed, run, &exe).await?);
    }
    let report = merge(reports);
    crate::out!("{}", console::render(&report, console::want_colour()));
    cli::write_reports(&report, output)?;
    let mut all_ok = true;
    for matrix in MatrixFile::builtin()? {
        let wanted = match matrix.protocol {
            MatrixProtocol::Roundtable => protocol != Some(Protocol::ExecuteTask),
            MatrixProtocol::ExecuteTask => protocol != Some(Protocol::Roundtable),
        };
        if wanted {
            all_ok &= run_matrix(&matrix, seed, &exe).await?;
        }
    }
    let code = report.exit_code() as u8;
    Ok(if all_ok { code } else { code.max(1) })
}

/// The round-table reference agent, probed with the built-in suite.
async fn roundtable(seed: u64, run: &RunArgs) -> Result<Report, UsageError> {
    let key = format!("selftest-key-{seed:x}");
    let app = server::app(
        Arc::new(ReferenceAgent::new("reference-agent", seed)),
        Some(key.clone()),
    );
    let running = server::spawn(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)), app)
        .await
        .map_err(|e| format!("cannot start the reference agent on loopback: {e}"))?;
    eprintln!("reference agent listening on {}", running.url());
    let base = BaseUrl::parse(&running.url())?;
    let mut run = run.clone();
    run.seed = Some(seed);
    let settings = cli::settings(Protocol::Roundtable, base, Some(key), &run)?;
    let report = crate::probe::run(&settings, &|_| {}).await;
    running.stop().await;
    Ok(report?)
}

/// The execute_task mock agent over stdio, probed with the built-in scenarios.
async fn execute_task(
    seed: u64,
    run: &RunArgs,
    exe: &std::path::Path,
) -> Result<Report, UsageError> {
    let command = format!(
        "{} mock agent --protocol execute-task --stdio --name selftest-agent --seed {seed}",
        shell_quote(&exe.display().to_string())
    );
    eprintln!("execute_task agent over stdio: {command}");
    let settings = TaskSettings {
        target: Target::Stdio(StdioConfig::new(command, StdioMode::Persistent)),
        timeout: run.timeout.min(Duration::from_secs(30)),
        max_body: run.max_body,
        max_turns: None,
        scenarios: Scenario::builtin(),
        seed,
        only: run.only.clone(),
        strict: run.strict,
    };
    Ok(crate::probe::task::run(&settings, &|_| {}).await?)
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
async fn run_matrix(
    matrix: &MatrixFile,
    seed: u64,
    exe: &std::path::Path,
) -> Result<bool, UsageError> {
    let name = match matrix.protocol {
        MatrixProtocol::Roundtable => "round table (mocks/matrix.yaml)",
        MatrixProtocol::ExecuteTask => "execute_task (mocks/matrix-execute-task.yaml)",
    };
    eprintln!(
        "running the {name} behaviour matrix: {} mock agents (--timeout {})…",
        matrix.rows.len(),
        matrix.timeout
    );
    let results = matrix.run(seed, exe).await?;
    crate::outln!("\nThe probe against each mock behaviour, {name}:\n");
    crate::out!("{}", matrix::render(&results));
    Ok(results.iter().all(|r| r.ok()))
}
