//! `agent-tck selftest`: the main job on a built-in default. It starts the conforming reference
//! agent on a free loopback port (with a bearer key, so the auth cases run too), probes it with
//! the protocol's suite and prints the report. A failure here is a bug in agent-tck.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;

use crate::cli::{self, OutputArgs, Protocol, RunArgs, UsageError};
use crate::mock::reference::ReferenceAgent;
use crate::mock::server;
use crate::transport::http::BaseUrl;

pub async fn run(protocol: Protocol, run: &RunArgs, output: &OutputArgs) -> Result<u8, UsageError> {
    let seed = cli::seed_or_clock(run.seed);
    let key = format!("selftest-key-{seed:x}");
    let responder = match protocol {
        Protocol::Roundtable => Arc::new(ReferenceAgent::new("reference-agent", seed)),
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
    code
}
