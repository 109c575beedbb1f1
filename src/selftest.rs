//! `agent-tck selftest`: the main job on a built-in default. It starts the conforming reference
//! agent on a free loopback port (with a bearer key, so the auth cases run too), probes it with
//! the protocol's suite and prints the report; then it probes a mock agent per behaviour of the
//! catalogue and prints the matrix of the cases each one breaks. A failure here is a bug in
//! agent-tck.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;

use crate::cli::{self, OutputArgs, Protocol, RunArgs, UsageError};
use crate::mock::matrix::{self, MatrixFile};
use crate::mock::reference::ReferenceAgent;
use crate::mock::server;
use crate::transport::http::BaseUrl;

pub async fn run(protocol: Protocol, run: &RunArgs, output: &OutputArgs) -> Result<u8, UsageError> {
    let seed = cli::seed_or_clock(run.seed);
    let key = format!("selftest-key-{seed:x}");
    let responder = match protocol {
        Protocol::Roundtable => Arc::new(ReferenceAgent::new("reference-agent", seed)),
        Protocol::ExecuteTask => {
            return Err(UsageError(
                "selftest --protocol execute-task: not built yet".into(),
            ))
        }
    };
    let app = server::app(responder, Some(key.clone()));
    let running = server::spawn(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)), app)
        .await
        .map_err(|e| format!("cannot start the reference agent on loopback: {e}"))?;
    eprintln!("reference agent listening on {}", running.url());
    let base = BaseUrl::parse(&running.url())?;
    let mut run = run.clone();
    run.seed = Some(seed);
    let settings = cli::settings(protocol, base, Some(key), &run)?;
    let code = cli::run_and_report(&settings, output).await;
    running.stop().await;
    let code = code?;
    let matrix_ok = run_matrix(seed).await?;
    Ok(if matrix_ok { code } else { code.max(1) })
}

/// The probe against every mock behaviour (`mocks/matrix.yaml`): prints the table; false when a
/// row failed other cases than expected (a bug in agent-tck).
async fn run_matrix(seed: u64) -> Result<bool, UsageError> {
    let matrix = MatrixFile::builtin()?;
    eprintln!(
        "running the behaviour matrix: {} mock agents, probed at once (--timeout {})…",
        matrix.rows.len(),
        matrix.timeout
    );
    let results = matrix.run(seed).await?;
    println!("\nThe probe against each mock behaviour (mocks/matrix.yaml):\n");
    print!("{}", matrix::render(&results));
    Ok(results.iter().all(|r| r.ok()))
}
