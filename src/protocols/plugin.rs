//! What a protocol gives the command line and the self-test ([`Protocol`]), and what they give
//! it back: a probe job, a self-test's settings, a matrix row.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;

use crate::error::Error;
use crate::mock::protocol::AgentProtocol;
use crate::mock::Responder;
use crate::probe::args::{RunArgs, SuiteArgs};
use crate::report::output::OutputArgs;
use crate::report::{CaseResult, Report};

/// Told of each case as it finishes (a progress line).
pub type OnCase = Arc<dyn Fn(&CaseResult) + Send + Sync>;

/// A probe run, set up from a protocol's flags and ready to start.
pub struct ProbeJob {
    /// How many cases it will report (for the progress line; an estimate is fine).
    pub total: usize,
    pub output: OutputArgs,
    /// Runs the probe.
    pub run: Box<dyn FnOnce(OnCase) -> BoxFuture<'static, Result<Report, Error>> + Send>,
}

/// What `selftest` runs of a protocol: its flags, validated once by the command line.
pub struct Selftest<'a> {
    pub seed: u64,
    pub run: &'a RunArgs,
    pub suite: &'a SuiteArgs,
    /// The agent-tck binary, for agents served over stdio.
    pub exe: &'a Path,
}

/// One row of a behaviour matrix (`mocks/matrix*.yaml`), ready to run.
pub struct MatrixRow<'a> {
    pub behavior: &'a str,
    /// How the probe reaches the mock (`http`, `stdio`, `stdio-per-turn`, `tcp`).
    pub transport: &'a str,
    /// Probe only these cases (globs).
    pub only: &'a [String],
    /// The probe's deadline for every exchange.
    pub timeout: Duration,
    pub seed: u64,
    pub exe: &'a Path,
}

/// A protocol as the command line and the self-test see it.
pub trait Protocol: Sync {
    /// The registry key: `probe NAME`, `--protocol NAME`, a report's `protocol`.
    fn name(&self) -> &'static str;

    /// One line: what the protocol is and which spec defines it.
    fn about(&self) -> &'static str;

    /// The folder of its JSON Schemas under `schemas/` (every file there is embedded), if it
    /// has any.
    fn schema_dir(&self) -> Option<&'static str> {
        None
    }

    /// Its agents, when the mock engine can play them.
    fn agents(&self) -> Option<&'static dyn AgentProtocol> {
        None
    }

    /// A conforming agent of this protocol that also follows the user's `files` (execute_task's
    /// scenario files); by default the protocol's reference agent, and no files.
    fn reference_with(
        &self,
        name: &str,
        seed: u64,
        files: &[std::path::PathBuf],
    ) -> Result<Box<dyn Responder>, Error> {
        let agents = self
            .agents()
            .ok_or_else(|| Error::usage(format!("the kit does not play {} agents", self.name())))?;
        if !files.is_empty() {
            return Err(Error::usage(format!(
                "--scenario: a {} agent takes no scenario files",
                self.name()
            )));
        }
        Ok(agents.reference(name, seed))
    }

    /// The flags of `probe NAME` (None: no probe for this protocol).
    fn probe_command(&self) -> Option<clap::Command> {
        None
    }

    /// `probe NAME` with the flags clap parsed from [`Protocol::probe_command`].
    fn probe(&self, matches: &clap::ArgMatches) -> Result<ProbeJob, Error> {
        let _ = matches;
        Err(Error::usage(format!("no probe for {}", self.name())))
    }

    /// `suites list --protocol NAME [--suite FILE]`: every case with its level and title.
    fn list_cases(&self, file: Option<&Path>) -> Result<String, Error>;

    /// The ids of every case its built-in suite can report (a matrix names them).
    fn case_ids(&self) -> Result<Vec<String>, Error>;

    /// The self-test: a conforming agent of this protocol, probed; its report must pass.
    fn selftest<'a>(&'a self, at: Selftest<'a>) -> BoxFuture<'a, Result<Report, Error>>;

    /// Built-in fleets of its agents (`mock fleet --preset NAME`): (name, file, YAML).
    fn fleet_presets(&self) -> &'static [(&'static str, &'static str, &'static str)] {
        &[]
    }

    /// The behaviour matrix: (file, YAML), the probe against a mock agent per behaviour.
    fn matrix(&self) -> Option<(&'static str, &'static str)> {
        None
    }

    /// Probes a mock agent with one matrix row's behaviour over its transport.
    fn matrix_row<'a>(&'a self, row: MatrixRow<'a>) -> BoxFuture<'a, Result<Report, Error>> {
        let name = self.name();
        let _ = row;
        Box::pin(async move { Err(Error::usage(format!("{name} has no behaviour matrix"))) })
    }
}
