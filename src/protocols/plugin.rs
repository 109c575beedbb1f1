//! What a protocol gives the command line and the self-test ([`Protocol`]), and what they give
//! it back: a probe job, a self-test's settings, a matrix row.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;

use crate::error::Error;
use crate::mock::protocol::AgentProtocol;
use crate::mock::Responder;
use clap::{Args, FromArgMatches};

use crate::probe::args::{self, RunArgs, SuiteArgs, SuiteProbeArgs};
use crate::probe::{ProbeSettings, Suite};
use crate::report::output::OutputArgs;
use crate::report::{CaseResult, Report};
use crate::transport::http::BaseUrl;

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

impl ProbeJob {
    /// A probe whose cases are `ids`, of which `wants` (asked of the settings) keeps some: their
    /// count for the progress line, and `run` over the settings as the job.
    pub fn of<S, F, Fut>(
        ids: &[String],
        wants: fn(&S, &str) -> bool,
        output: OutputArgs,
        settings: S,
        run: F,
    ) -> ProbeJob
    where
        S: Send + 'static,
        F: FnOnce(S, OnCase) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = Result<Report, Error>> + Send + 'static,
    {
        ProbeJob {
            total: ids.iter().filter(|id| wants(&settings, id)).count(),
            output,
            run: Box::new(move |on_case| Box::pin(run(settings, on_case))),
        }
    }
}

/// `probe NAME` of a protocol whose probe a driver runs: its flags (`A`, with their output
/// flags), the settings made of them, the cases the settings want of `ids`, and the run.
pub fn driver_probe<A, S, F, Fut>(
    matches: &clap::ArgMatches,
    settings: fn(&A) -> Result<S, String>,
    output: fn(A) -> OutputArgs,
    ids: &[String],
    wants: fn(&S, &str) -> bool,
    run: F,
) -> Result<ProbeJob, Error>
where
    A: clap::FromArgMatches,
    S: Send + 'static,
    F: FnOnce(S, OnCase) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = Result<Report, Error>> + Send + 'static,
{
    let flags = A::from_arg_matches(matches).map_err(|e| Error::usage(e.to_string()))?;
    let made = settings(&flags).map_err(Error::Usage)?;
    let output = output(flags);
    output.check()?;
    Ok(ProbeJob::of(ids, wants, output, made, run))
}

/// For a protocol whose cases are built in (`suites/FILE`): `--suite FILE` is refused.
pub fn builtin_cases_only(file: Option<&Path>, whose: &str, suite: &str) -> Result<(), Error> {
    match file {
        Some(path) => Err(Error::usage(format!(
            "--suite {}: {whose} cases are built in ({suite})",
            path.display()
        ))),
        None => Ok(()),
    }
}

/// `probe NAME` for a protocol whose probe is a suite of HTTP exchanges: the flags
/// ([`SuiteProbeArgs`]) under the protocol's name and line.
pub fn suite_probe_command(name: &'static str, about: &'static str) -> clap::Command {
    // The subcommand's help is the protocol's line, not the flags struct's doc comment.
    SuiteProbeArgs::augment_args(clap::Command::new(name)).about(about)
}

/// Validated settings of a suite probe; `load` gives the suite (`--suite FILE`, or the built-in
/// one when None).
pub fn suite_settings(
    base: BaseUrl,
    key: Option<String>,
    run: &RunArgs,
    suite_args: &SuiteArgs,
    load: impl Fn(Option<&Path>) -> Result<Suite, Error>,
) -> Result<ProbeSettings, Error> {
    let key = args::api_key(key)?;
    let suite = load(suite_args.suite.as_deref())?;
    Ok(args::settings(base, key, suite, run, suite_args)?)
}

/// `probe NAME` of a suite protocol, from the flags clap parsed: the job that runs the suite
/// against `--url`.
pub fn suite_probe(
    matches: &clap::ArgMatches,
    load: impl Fn(Option<&Path>) -> Result<Suite, Error>,
) -> Result<ProbeJob, Error> {
    let flags =
        SuiteProbeArgs::from_arg_matches(matches).map_err(|e| Error::usage(e.to_string()))?;
    let base = BaseUrl::parse(&flags.url).map_err(|e| Error::usage(format!("--url: {e}")))?;
    let settings = suite_settings(base, flags.key.api_key, &flags.run, &flags.suite, load)?;
    flags.output.check()?;
    let total = settings.suite.select(&settings.only)?.len();
    Ok(ProbeJob {
        total,
        output: flags.output,
        run: Box::new(move |on_case| {
            Box::pin(async move { crate::probe::run(&settings, &*on_case).await })
        }),
    })
}

/// What `selftest` runs of a protocol: its flags, validated once by the command line.
pub struct Selftest<'a> {
    pub seed: u64,
    pub run: &'a RunArgs,
    pub suite: &'a SuiteArgs,
    /// The agent-tck binary, for agents served over stdio.
    pub exe: &'a Path,
}

/// What `mock fleet`'s flags say to a client fleet.
pub struct ClientFleet<'a> {
    /// `--platform-url`: the server, overriding the file's.
    pub url: Option<&'a str>,
    /// `--seed`.
    pub seed: Option<u64>,
    pub strict: bool,
    /// `--registry`: the server's agent registry, for a fleet whose clients ask only what
    /// their agents may (the Librarian's).
    pub registry: Option<&'a std::path::Path>,
}

/// What `mock agent` says to a protocol whose agent is a command run once per call (the agent
/// standard's), rather than a server.
pub struct CommandAgent<'a> {
    pub name: &'a str,
    /// `--behavior`, as written.
    pub behavior: &'a str,
    pub seed: u64,
    /// `--mode`; None: the agent reads its input on stdin.
    pub mode: Option<&'a str>,
    pub task: Option<&'a str>,
    /// `--next`: the agents its results name next.
    pub next: &'a [String],
    /// `--approved`: the orchestrator approved the plan.
    pub approved: bool,
    pub journal: Option<&'a Path>,
}

/// What `mock agents` says to a protocol: write a set of its mock agents.
pub struct AgentSet<'a> {
    pub dir: &'a Path,
    pub count: usize,
    pub seed: u64,
    /// The agent-tck binary, which the set's commands run.
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

    /// Probes of the protocol beside `probe NAME`, named for what they judge (the agent
    /// standard's `probe orchestration`).
    fn other_probe_commands(&self) -> Vec<clap::Command> {
        Vec::new()
    }

    /// `probe COMMAND`, one of [`Protocol::other_probe_commands`], with the flags clap parsed.
    fn other_probe(&self, command: &str, matches: &clap::ArgMatches) -> Result<ProbeJob, Error> {
        let _ = matches;
        Err(Error::usage(format!(
            "no probe {command} for {}",
            self.name()
        )))
    }

    /// `lint WHAT`'s flags, when the protocol has files to lint (the command's name is what is
    /// linted: `agents`). None: nothing to lint.
    fn lint_command(&self) -> Option<clap::Command> {
        None
    }

    /// `lint WHAT` with the flags clap parsed from [`Protocol::lint_command`]: writes the
    /// findings and returns the exit status.
    fn lint(&self, matches: &clap::ArgMatches) -> Result<crate::report::Exit, Error> {
        let _ = matches;
        Err(Error::usage(format!("nothing to lint for {}", self.name())))
    }

    /// `mock agent --protocol NAME` when the protocol's agent is a command run once per call
    /// rather than served: runs it once, giving its exit status. None: its agents are served
    /// (the engine's `mock agent`).
    fn command_agent(&self, at: CommandAgent<'_>) -> Option<Result<u8, Error>> {
        let _ = at;
        None
    }

    /// The behaviours of its command agent ([`Protocol::command_agent`]): (name, what it does),
    /// for `mock behaviors`.
    fn command_behaviors(&self) -> &'static [(&'static str, &'static str)] {
        &[]
    }

    /// `mock agents --protocol NAME --dir OUT --count N`: writes a set of mock agents to run
    /// together, giving what to print. None: the protocol has no such sets.
    fn agent_set(&self, at: AgentSet<'_>) -> Option<Result<String, Error>> {
        let _ = at;
        None
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

    /// A fleet of the protocol's *clients* against a server, for a protocol whose platform is
    /// the server (the Librarian): `mock fleet` runs the file (`source`, `text`) here instead of
    /// serving agents. None: the protocol's fleets are agents (the engine's `mock fleet`).
    fn client_fleet<'a>(
        &'a self,
        source: &'a str,
        text: &'a str,
        at: ClientFleet<'a>,
    ) -> Option<BoxFuture<'a, Result<Report, Error>>> {
        let _ = (source, text, at);
        None
    }

    /// Whether a matrix row's `behavior` is one the protocol's mock can play over `transport`
    /// (the error says why not). By default: the mock engine's behaviour list, for the
    /// protocol's agents; a protocol whose mock is a server (the Librarian) names its own.
    fn check_behavior(&self, behavior: &str, transport: &str) -> Result<(), String> {
        let agents = self
            .agents()
            .ok_or_else(|| format!("the kit does not play {} agents", self.name()))?;
        if transport != "http" && agents.line_endpoint().is_none() {
            return Err(format!("{} rows run over http only", self.name()));
        }
        let items = crate::mock::behavior::parse_list(
            behavior,
            crate::mock::behavior::For {
                protocol: agents,
                others: &super::agent_protocols(),
            },
        )
        .map_err(|e| e.to_string())?;
        crate::mock::behavior::check_fit(
            &items,
            agents,
            transport == "http",
            transport.starts_with("stdio"),
        )
        .map_err(|e| e.to_string())
    }

    /// Probes a mock agent with one matrix row's behaviour over its transport.
    fn matrix_row<'a>(&'a self, row: MatrixRow<'a>) -> BoxFuture<'a, Result<Report, Error>> {
        let name = self.name();
        let _ = row;
        Box::pin(async move { Err(Error::usage(format!("{name} has no behaviour matrix"))) })
    }
}
