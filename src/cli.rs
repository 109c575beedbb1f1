//! The command line: clap definitions, the one place where raw flags become validated settings,
//! and the one place where a command's end becomes an exit status ([`Error`], [`Ended`]).
//! `main` calls [`main`].
//!
//! Exit status: **0** no MUST case failed (and, under `--strict`, no SHOULD case); **1** a MUST
//! case failed (or a SHOULD case under `--strict`), or the run itself failed (a port that cannot
//! be bound, a report that cannot be written); **2** a usage or configuration error, explained in
//! one line on stderr; **130** interrupted (Ctrl-C) before a report could be made.
//!
//! `probe` has a subcommand per protocol of the registry ([`crate::protocols::REGISTRY`]), with
//! the flags that protocol declares; `--protocol` takes any registered name.

use std::ffi::OsString;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::builder::PossibleValuesParser;
use clap::{ArgMatches, Args, CommandFactory, FromArgMatches, Parser, Subcommand};

pub use crate::error::Error;
use crate::mock::agent::{MockAgent, Profile};
use crate::mock::behavior::{self, For};
use crate::mock::driver::Driver;
use crate::mock::fleet::{FleetFile, Layout};
use crate::mock::protocol::AgentProtocol;
use crate::mock::session::{Banner, SessionSettings};
use crate::probe::args::{api_key, seed_or_clock, RunArgs, SuiteArgs};
use crate::protocols::{self, OnCase, ProbeJob, Protocol};
use crate::report::output::OutputArgs;
use crate::report::{console, CaseResult, Exit, Report, RunInfo};
use crate::text::Redactor;
use crate::transport::http::BaseUrl;
use crate::units::{parse_bytes, parse_duration};

/// How a command that did not fail ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// With a verdict.
    Verdict(Exit),
    /// A mock agent run as a command exits as its behaviour says (`exits-early`: 3): its status
    /// is its answer to the harness, not a verdict.
    AgentExit(u8),
    /// Interrupted before a report could be made.
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

#[derive(Debug, Parser)]
#[command(
    name = "agent-tck",
    version,
    about = "Conformance test kit and mock agent simulator for agent protocols",
    max_term_width = 100
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Play the platform: certify a real agent against a protocol's suite.
    Probe(ProbeCommand),
    /// Play the other side: mock agents for a platform to talk to (or a mock Librarian for agent
    /// clients), judging it from what it sends.
    #[command(subcommand)]
    Mock(MockCommand),
    /// Probe a conforming agent of every protocol, then a mock agent per behaviour; print it all
    /// and end with one verdict line (exit 0 when the reference agents pass and every behaviour
    /// broke exactly the cases it should). --json and --junit hold the matrices too, a case per
    /// row.
    Selftest(SelftestArgs),
    /// Check files a protocol defines (`lint agents PATH…`: agent definition files), printing
    /// findings with their file, line and column (console, JSON, JUnit or SARIF).
    Lint(LintCommand),
    /// Inspect the suites (cases, levels, spec sections).
    #[command(subcommand)]
    Suites(SuitesCommand),
    /// The JSON Schemas built into the binary.
    #[command(subcommand)]
    Schemas(SchemasCommand),
    /// Expected failures (`--baseline FILE` on every command that reports).
    #[command(subcommand)]
    Baseline(BaselineCommand),
    /// JSON reports read back: merged (shards, protocols, targets) or compared.
    #[command(subcommand)]
    Report(ReportCommand),
    /// Print a shell completion script: `agent-tck completions bash > /etc/bash_completion.d/agent-tck`.
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Write the man pages (agent-tck.1 and one per subcommand, agent-tck-probe.1, …) into DIR.
    Manpages {
        #[arg(value_name = "DIR")]
        dir: PathBuf,
    },
}

#[derive(Debug, Subcommand)]
pub enum BaselineCommand {
    /// Write a baseline listing every failed case of a run (each with its failure as the
    /// reason, to be edited), to stdout or --out.
    Write {
        /// The run's JSON report (`--json`).
        #[arg(long, value_name = "REPORT")]
        from: PathBuf,
        /// Write it here instead of stdout.
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
    },
}

#[derive(Debug, Subcommand)]
pub enum ReportCommand {
    /// Merge JSON reports (shards of a run, protocols, targets) into one: printed, and written
    /// as --json / --junit; exit 1 when the merged run fails.
    Merge {
        #[arg(required = true, value_name = "REPORT")]
        reports: Vec<PathBuf>,
        #[command(flatten)]
        output: OutputArgs,
    },
    /// Compare two runs case by case: regressions (failing the run now, not before), fixes, new
    /// warnings, new and removed cases; exit 1 on a regression.
    Diff {
        #[arg(value_name = "OLD")]
        old: PathBuf,
        #[arg(value_name = "NEW")]
        new: PathBuf,
    },
}

/// A command whose subcommands come from the registry: one per protocol that declares one for
/// the role `R` (`probe NAME …`, `lint WHAT …`), with the flags it declares.
#[derive(Debug, Clone)]
pub struct RoleCommand<R> {
    /// The protocol whose subcommand it is.
    pub protocol: &'static str,
    /// The subcommand's name (`probe NAME`: the protocol's, or one of its other probes).
    pub command: String,
    /// Its flags, as clap parsed them from the protocol's command.
    pub matches: ArgMatches,
    role: std::marker::PhantomData<R>,
}

/// A role a protocol may declare a subcommand for.
pub trait Role: std::fmt::Debug + Clone + Send + Sync + 'static {
    fn commands(protocol: &dyn protocols::Protocol) -> Vec<clap::Command>;
}

/// `probe NAME`: named for the protocol.
#[derive(Debug, Clone)]
pub struct ProbeRole;

impl Role for ProbeRole {
    fn commands(protocol: &dyn protocols::Protocol) -> Vec<clap::Command> {
        let mut commands: Vec<clap::Command> = protocol.probe_command().into_iter().collect();
        commands.extend(protocol.other_probe_commands());
        commands
            .into_iter()
            .map(TargetsArgs::augment_args)
            .collect()
    }
}

// `probe NAME --targets FILE …`: the flags of a run over many targets, in every probe's help.
// Such a run is taken apart before clap parses it (`crate::targets`); these declarations
// document the flags and complete them. (A plain comment: clap would make a doc comment every
// probe command's description, replacing the protocol's own.)
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Many targets")]
pub struct TargetsArgs {
    /// Probe every target of a YAML list (name, url, key, flags): a report per target in
    /// --out-dir, a summary matrix, and --json/--junit/--html for all of them merged.
    #[arg(long, value_name = "FILE")]
    pub targets: Option<PathBuf>,
    /// With --targets: only the share K of N of the list (by a hash of each name).
    #[arg(long, value_name = "K/N")]
    pub shard: Option<String>,
    /// With --targets: how many targets are probed at once.
    #[arg(long, value_name = "N", default_value_t = 4)]
    pub target_concurrency: usize,
    /// With --targets: where each target's reports go (NAME.json, and .xml/.html when asked).
    #[arg(long, value_name = "DIR", default_value = "agent-tck-targets")]
    pub out_dir: PathBuf,
}

/// `lint WHAT`: named for what is linted (`agents`).
#[derive(Debug, Clone)]
pub struct LintRole;

impl Role for LintRole {
    fn commands(protocol: &dyn protocols::Protocol) -> Vec<clap::Command> {
        protocol.lint_command().into_iter().collect()
    }
}

pub type ProbeCommand = RoleCommand<ProbeRole>;
pub type LintCommand = RoleCommand<LintRole>;

impl<R: Role> FromArgMatches for RoleCommand<R> {
    fn from_arg_matches(matches: &ArgMatches) -> Result<Self, clap::Error> {
        let (name, sub) = matches
            .subcommand()
            .ok_or_else(|| clap::Error::new(clap::error::ErrorKind::MissingSubcommand))?;
        let protocol = protocols::REGISTRY
            .iter()
            .find(|p| R::commands(**p).iter().any(|c| c.get_name() == name))
            .ok_or_else(|| clap::Error::new(clap::error::ErrorKind::InvalidSubcommand))?;
        Ok(RoleCommand {
            protocol: protocol.name(),
            command: name.to_string(),
            matches: sub.clone(),
            role: std::marker::PhantomData,
        })
    }

    fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), clap::Error> {
        *self = RoleCommand::from_arg_matches(matches)?;
        Ok(())
    }
}

impl<R: Role> Args for RoleCommand<R> {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        protocols::REGISTRY
            .iter()
            .flat_map(|p| R::commands(*p))
            .fold(cmd, clap::Command::subcommand)
            .subcommand_required(true)
    }

    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        RoleCommand::<R>::augment_args(cmd)
    }
}

/// `--protocol NAME`: any registered protocol.
fn protocol_names() -> PossibleValuesParser {
    PossibleValuesParser::new(protocols::names())
}

/// The registered protocol `name` (clap has checked it).
fn protocol(name: &str) -> Result<&'static dyn Protocol, Error> {
    protocols::find(name).ok_or_else(|| {
        Error::usage(format!(
            "--protocol {name:?}: no such protocol (known: {})",
            protocols::names().join(", ")
        ))
    })
}

/// The agents of protocol `name`, as the mock engine plays them.
fn agents_of(name: &str) -> Result<&'static dyn AgentProtocol, Error> {
    protocol(name)?.agents().ok_or_else(|| {
        Error::usage(format!(
            "--protocol {name}: the kit does not play its agents"
        ))
    })
}

#[derive(Debug, Subcommand)]
pub enum MockCommand {
    /// Serve one agent (conforming, or with --behavior) until interrupted; then judge the platform.
    Agent(MockAgentArgs),
    /// Serve a fleet from a YAML file (presets in mocks/), drive the platform, judge it.
    Fleet(MockFleetArgs),
    /// Write a set of mock agents to run together (agent-standard: definitions, a command for
    /// each, the graph their next_agents form) for an orchestrator to be tested on.
    Agents(MockAgentsArgs),
    /// Print the behaviour catalogue: each name, what it does, the platform rule it exercises.
    Behaviors,
    /// Play the Librarian (decisions and faults from a script) and judge the agent client that
    /// calls it: schema, token, rate, back-off after 429, polling, retries, reports.
    Librarian(crate::protocols::librarian::commands::MockLibrarianArgs),
    /// The child a stdio mock with `forks-and-exits` leaves behind (run by the mock itself).
    #[command(hide = true)]
    Linger {
        #[arg(long)]
        json: Option<PathBuf>,
        #[arg(long)]
        junit: Option<PathBuf>,
    },
}

/// Flags shared by `mock agent` and `mock fleet`.
#[derive(Debug, Clone, Args)]
pub struct MockRunArgs {
    /// Journal every request the mocks receive here, as JSON lines.
    #[arg(long, value_name = "PATH")]
    pub journal: Option<PathBuf>,
    /// Largest request body kept whole in the journal (larger ones are cut; the cut is recorded).
    #[arg(long, value_name = "BYTES", default_value = "1MiB", value_parser = parse_bytes)]
    pub journal_body_cap: usize,
    /// The platform's per-endpoint agent timeout: a slower answer counts as failed, and a
    /// platform (or harness) that waits longer for a slow or hanging agent is told so
    /// (default 120s).
    #[arg(long, visible_alias = "expect-timeout", value_name = "DUR", value_parser = parse_duration)]
    pub platform_timeout: Option<Duration>,
    /// The platform's turn limit (protocols with turns, e.g. execute-task): a conversation
    /// that goes past it fails (default: 5 is a SHOULD; a MUST only that there is a limit).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub expect_max_turns: Option<u32>,
    /// SHOULD failures (of the platform) fail the run.
    #[arg(long)]
    pub strict: bool,
    /// No line per request while serving (`mock agent` prints one on a terminal, or when
    /// AGENT_TCK_REQUEST_LOG=1).
    #[arg(long)]
    pub quiet: bool,
    #[command(flatten)]
    pub output: OutputArgs,
}

impl MockRunArgs {
    /// What the platform is expected to do: the flags, or `file_timeout` (a fleet file's
    /// `platform.timeout`), or 120 s.
    fn expect(&self, file_timeout: Option<Duration>) -> crate::mock::protocol::PlatformExpect {
        crate::mock::protocol::PlatformExpect {
            timeout: self
                .platform_timeout
                .or(file_timeout)
                .unwrap_or(Duration::from_secs(120)),
            max_turns: self.expect_max_turns,
        }
    }

    /// Whether `mock agent` prints a line per request: on a terminal, or when asked by
    /// AGENT_TCK_REQUEST_LOG=1; never with --quiet.
    fn log_requests(&self) -> bool {
        use std::io::IsTerminal;
        !self.quiet
            && (std::io::stdout().is_terminal()
                || std::env::var("AGENT_TCK_REQUEST_LOG").is_ok_and(|v| v == "1"))
    }
}

#[derive(Debug, Clone, Args)]
#[command(group(clap::ArgGroup::new("fleet").required(true).args(["config", "preset"])))]
pub struct MockFleetArgs {
    /// The fleet file (YAML; see mocks/*.yaml). `protocol: librarian` or `protocol: connector`
    /// makes the fleet the clients of a server (a Librarian, an agent server) instead of agents.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// A built-in fleet: chaos, slow, injection, faults (the files of mocks/).
    #[arg(long, value_name = "NAME")]
    pub preset: Option<String>,
    /// Address to bind (overrides the file's `host`).
    #[arg(long)]
    pub host: Option<IpAddr>,
    /// Port to bind (overrides the file's `port`; 0: the OS picks).
    #[arg(long)]
    pub port: Option<u16>,
    /// Base URL told to the platform at registration (overrides the file's `advertise`).
    #[arg(long, value_name = "URL")]
    pub advertise: Option<String>,
    /// The platform's base URL (overrides the file's platform.url: CI gives a platform a new
    /// port each run).
    #[arg(long, value_name = "URL")]
    pub platform_url: Option<String>,
    /// The platform's bearer token (overrides the file's token and token_env).
    #[arg(
        long,
        value_name = "TOKEN",
        env = "AGENT_TCK_PLATFORM_TOKEN",
        hide_env_values = true
    )]
    pub platform_token: Option<String>,
    /// Seed of every random choice (overrides the file's `seed`; default: from the clock).
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// A Librarian fleet: the server's agent registry (its config/agents.yaml), so that each
    /// client asks only what its agent may, and a refusal for authorization is judged.
    #[arg(long, value_name = "FILE")]
    pub registry: Option<PathBuf>,
    /// Keep serving after the triggers are done, until interrupted.
    #[arg(long)]
    pub serve: bool,
    /// Serve only the share K of N of the fleet's agents (by a hash of each name: the same on
    /// every host), for a fleet bigger than one host.
    #[arg(long, value_name = "K/N")]
    pub shard: Option<String>,
    #[command(flatten)]
    pub run: MockRunArgs,
}

#[derive(Debug, Clone, Args)]
pub struct MockAgentArgs {
    /// The protocol the agent speaks.
    #[arg(long, default_value = "roundtable", value_parser = protocol_names())]
    pub protocol: String,
    /// Address to bind (loopback unless told otherwise).
    #[arg(long, default_value = "127.0.0.1")]
    pub host: IpAddr,
    /// Port to bind (0: the OS picks one, and it is printed).
    #[arg(long, default_value_t = 3001)]
    pub port: u16,
    /// Require `Authorization: Bearer KEY` on protocol endpoints (401 otherwise).
    #[arg(
        long,
        value_name = "KEY",
        env = "AGENT_TCK_API_KEY",
        hide_env_values = true
    )]
    pub api_key: Option<String>,
    /// Seed of the generated content (default: from the clock; printed).
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// The agent_name it answers with.
    #[arg(long, default_value = "reference-agent")]
    pub name: String,
    /// Behaviours, comma-separated: NAME[:ARGS][@ENDPOINT] (see `agent-tck mock behaviors`);
    /// repeatable, the lists adding up (a wrapper script's list, and one more).
    #[arg(long, value_name = "LIST", default_value = "conforming", action = clap::ArgAction::Append)]
    pub behavior: Vec<String>,
    /// Answer on stdin/stdout (protocols served over lines, e.g. execute-task; a request ends at
    /// a newline or at end of input).
    #[arg(long, conflicts_with_all = ["tcp", "unix"])]
    pub stdio: bool,
    /// Serve newline-delimited JSON on this TCP port (on --host).
    #[arg(long, value_name = "PORT", conflicts_with = "unix")]
    pub tcp: Option<u16>,
    /// Serve newline-delimited JSON on this Unix socket.
    #[arg(long, value_name = "PATH")]
    pub unix: Option<PathBuf>,
    /// execute-task: scenario files whose tasks the agent follows a script for (besides the
    /// built-in scenarios): the tools each expects, then the ending it accepts.
    #[arg(long, value_name = "FILE", num_args = 1..)]
    pub scenario: Vec<PathBuf>,
    /// agent-standard: the mode of this run (default: read {"execution_mode", "task",
    /// "approved"} as JSON on stdin).
    #[arg(long, value_parser = ["plan", "execute"], help_heading = "Command agents (agent-standard)")]
    pub mode: Option<String>,
    /// agent-standard: the task of this run.
    #[arg(
        long,
        value_name = "TEXT",
        help_heading = "Command agents (agent-standard)"
    )]
    pub task: Option<String>,
    /// agent-standard: an agent its execute results name next: NAME, NAME:parallel (can run
    /// beside this one) or NAME:data=WHAT (a pipeline's handoff). Repeatable.
    #[arg(
        long,
        value_name = "AGENT",
        help_heading = "Command agents (agent-standard)"
    )]
    pub next: Vec<String>,
    /// agent-standard: the orchestrator approved the plan (as `"approved": true` on stdin).
    #[arg(long, help_heading = "Command agents (agent-standard)")]
    pub approved: bool,
    #[command(flatten)]
    pub run: MockRunArgs,
}

#[derive(Debug, Clone, Args)]
pub struct MockAgentsArgs {
    /// The protocol of the agents.
    #[arg(long, default_value = "agent-standard", value_parser = protocol_names())]
    pub protocol: String,
    /// Where to write them (a new or empty directory).
    #[arg(long, value_name = "OUT")]
    pub dir: PathBuf,
    /// How many agents.
    #[arg(long, value_name = "N", default_value_t = 6)]
    pub count: usize,
    /// Seed of the graph and of the agents' content (default: from the clock; printed).
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
}

#[derive(Debug, Clone, Args)]
pub struct SelftestArgs {
    /// Only this protocol (default: every one).
    #[arg(long, value_parser = protocol_names())]
    pub protocol: Option<String>,
    #[command(flatten)]
    pub run: RunArgs,
    #[command(flatten)]
    pub suite: SuiteArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Debug, Subcommand)]
pub enum SuitesCommand {
    /// Print every case: id, level, spec section, title.
    List {
        #[arg(long, default_value = "roundtable", value_parser = protocol_names())]
        protocol: String,
        /// List this suite file instead of the built-in one.
        #[arg(long, value_name = "FILE")]
        suite: Option<PathBuf>,
    },
}

#[derive(Debug, Subcommand)]
pub enum SchemasCommand {
    /// Write the embedded schemas under DIR, as they are under schemas/ (DIR/roundtable/…).
    Export {
        /// The folder to write them in (created when missing).
        dir: PathBuf,
        /// Only this protocol's schemas.
        #[arg(long, value_parser = protocol_names())]
        protocol: Option<String>,
    },
    /// Print the embedded schemas: id, file, the protocol they belong to.
    List,
}

/// Parses `args` and runs the command. Help and version print and exit 0.
pub fn main<I, T>(args: I) -> ExitCode
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let args: Vec<OsString> = args.into_iter().map(Into::into).collect();
    if crate::targets::wanted(&args) {
        let run = crate::targets::run(args, probe_job_of);
        return run_async(async move { run.await.map(Ended::Verdict) });
    }
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) if !e.use_stderr() => {
            // --help, --version: clap's own output, exit 0.
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
        Err(e) => return finish(Err(Error::Usage(clap_one_line(&e)))),
    };
    run_async(execute(cli.command))
}

/// The probe job of a `probe NAME …` command line (one target's, of a run over many).
fn probe_job_of(argv: &[OsString]) -> Result<ProbeJob, Error> {
    let cli = Cli::try_parse_from(argv).map_err(|e| Error::Usage(clap_one_line(&e)))?;
    match cli.command {
        Command::Probe(probe) => job_of(&probe),
        _ => Err(Error::usage("--targets is a flag of `probe PROTOCOL`")),
    }
}

/// The job of `probe NAME …`: the protocol's own probe, or another of its probes.
fn job_of(probe: &ProbeCommand) -> Result<ProbeJob, Error> {
    let protocol = protocol(probe.protocol)?;
    if probe.command == protocol.name() {
        protocol.probe(&probe.matches)
    } else {
        protocol.other_probe(&probe.command, &probe.matches)
    }
}

/// Runs a command on a new runtime and exits with its status.
fn run_async(command: impl std::future::Future<Output = Result<Ended, Error>>) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            return finish(Err(Error::run(format!(
                "cannot start the async runtime: {e}"
            ))))
        }
    };
    let outcome = runtime.block_on(command);
    // Connections to a hostile agent may still be open: do not wait for them on the way out.
    runtime.shutdown_timeout(Duration::from_millis(200));
    finish(outcome)
}

/// Says why a command failed (one line on stderr), and exits with its status.
fn finish(outcome: Result<Ended, Error>) -> ExitCode {
    if let Err(e) = &outcome {
        eprintln!("agent-tck: error: {e}");
    }
    ExitCode::from(exit_status(&outcome))
}

/// clap's error as one line: its first line, without the `error: ` prefix.
fn clap_one_line(e: &clap::Error) -> String {
    // clap's message is its first paragraph (a list of missing arguments runs over several
    // lines); the usage and tips that follow are left to --help.
    let text = e.render().to_string();
    let lines: Vec<&str> = text
        .lines()
        .skip_while(|l| l.trim().is_empty())
        .take_while(|l| !l.trim().is_empty())
        .map(str::trim)
        .collect();
    let joined = lines.join(" ");
    let message = joined.trim_start_matches("error: ");
    let message = if message.is_empty() {
        "invalid arguments"
    } else {
        message
    };
    // The subcommand the usage line names (`agent-tck probe roundtable`): its --help is the one
    // to read.
    let command = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("Usage: "))
        .map(|usage| {
            usage
                .split_whitespace()
                .take_while(|w| !w.starts_with(['[', '<', '-']))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .filter(|c| c.starts_with("agent-tck"))
        .unwrap_or_else(|| "agent-tck".into());
    format!("{message} (see {command} --help)")
}

async fn execute(command: Command) -> Result<Ended, Error> {
    match command {
        Command::Probe(probe) => run_probe(job_of(&probe)?).await,
        Command::Lint(lint) => {
            let code = protocol(lint.protocol)?.lint(&lint.matches)?;
            Ok(Ended::Verdict(code))
        }
        Command::Selftest(args) => selftest(args).await,
        Command::Mock(MockCommand::Agent(args)) => mock_agent(args).await,
        Command::Mock(MockCommand::Agents(args)) => mock_agents(args),
        Command::Baseline(BaselineCommand::Write { from, out }) => {
            let report = crate::report::tools::read(&from)
                .map_err(|e| Error::usage(format!("--from {e}")))?;
            let text = crate::report::baseline::write_from(&report);
            match out {
                Some(path) => {
                    std::fs::write(&path, text)
                        .map_err(|e| Error::run(format!("--out {}: {e}", path.display())))?;
                    eprintln!("wrote {}", path.display());
                }
                None => crate::out!("{text}"),
            }
            Ok(Ended::Verdict(Exit::Passed))
        }
        Command::Report(ReportCommand::Merge { reports, output }) => {
            output.check()?;
            let parts = reports
                .iter()
                .map(|p| Ok((p.display().to_string(), crate::report::tools::read(p)?)))
                .collect::<Result<Vec<_>, crate::report::tools::ReportFileError>>()?;
            let merged = crate::report::tools::merge(&parts)?;
            conclude(merged, &output)
        }
        Command::Report(ReportCommand::Diff { old, new }) => {
            let read = |p: &PathBuf| crate::report::tools::read(p).map_err(Error::from);
            let (before, after) = (read(&old)?, read(&new)?);
            let diff = crate::report::tools::diff(&before, &after);
            crate::out!(
                "{}",
                crate::report::tools::render_diff(
                    &diff,
                    &old.display().to_string(),
                    &new.display().to_string()
                )
            );
            Ok(Ended::Verdict(diff.exit_code()))
        }
        Command::Mock(MockCommand::Fleet(args)) => mock_fleet(args).await,
        Command::Mock(MockCommand::Librarian(args)) => {
            let report =
                crate::protocols::librarian::commands::mock_librarian(&args, shutdown_signal())
                    .await?;
            conclude(report, &args.output)
        }
        Command::Mock(MockCommand::Linger { json, junit }) => {
            crate::mock::linger::linger(json, junit).await;
            Ok(Ended::Verdict(Exit::Passed))
        }
        Command::Mock(MockCommand::Behaviors) => {
            crate::out!("{}", list_behaviors());
            Ok(Ended::Verdict(Exit::Passed))
        }
        Command::Suites(SuitesCommand::List {
            protocol: name,
            suite,
        }) => {
            let listing = protocol(&name)?.list_cases(suite.as_deref())?;
            crate::out!("{listing}");
            Ok(Ended::Verdict(Exit::Passed))
        }
        Command::Schemas(SchemasCommand::Export { dir, protocol }) => {
            let chosen: Vec<(&str, &str)> = protocols::schemas()
                .into_iter()
                .filter(|s| protocol.is_none() || s.3 == protocol.as_deref())
                .map(|(_, file, text, _)| (file, text))
                .collect();
            let written = crate::schema::export(&dir, &chosen).map_err(|e| {
                Error::run(format!("cannot write schemas under {}: {e}", dir.display()))
            })?;
            for path in written {
                crate::outln!("{}", path.display());
            }
            Ok(Ended::Verdict(Exit::Passed))
        }
        Command::Schemas(SchemasCommand::List) => {
            for (id, file, _, owner) in protocols::schemas() {
                crate::outln!("{id:<32} {file:<36} {}", owner.unwrap_or("(the kit's own)"));
            }
            Ok(Ended::Verdict(Exit::Passed))
        }
        Command::Completions { shell } => {
            let mut out = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "agent-tck", &mut out);
            crate::out!("{}", String::from_utf8_lossy(&out));
            Ok(Ended::Verdict(Exit::Passed))
        }
        Command::Manpages { dir } => {
            std::fs::create_dir_all(&dir)
                .map_err(|e| Error::run(format!("{}: {e}", dir.display())))?;
            let written = write_manpages(Cli::command(), &dir)?;
            eprintln!("wrote {written} man pages to {}", dir.display());
            Ok(Ended::Verdict(Exit::Passed))
        }
    }
}

/// The man page of `command`, and of each of its subcommands (named `parent-sub.1`), under
/// `dir`; how many were written.
fn write_manpages(command: clap::Command, dir: &Path) -> Result<usize, Error> {
    let mut written = 0;
    let mut stack = vec![(command.get_name().to_string(), command)];
    while let Some((name, cmd)) = stack.pop() {
        // Named as it is typed (`agent-tck-probe-roundtable`), as man pages of subcommands are.
        let cmd = cmd.name(name.clone());
        let mut page = Vec::new();
        clap_mangen::Man::new(cmd.clone())
            .render(&mut page)
            .map_err(|e| Error::run(format!("man page of {name}: {e}")))?;
        let path = dir.join(format!("{name}.1"));
        std::fs::write(&path, page).map_err(|e| Error::run(format!("{}: {e}", path.display())))?;
        written += 1;
        for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
            stack.push((format!("{name}-{}", sub.get_name()), sub.clone()));
        }
    }
    Ok(written)
}

/// Runs a probe with a progress line (on a terminal), then prints the console report and writes
/// the files; Ctrl-C ends it without a report.
async fn run_probe(job: ProbeJob) -> Result<Ended, Error> {
    let progress = Arc::new(std::sync::Mutex::new(console::Progress::new(job.total)));
    let on_case: OnCase = {
        let progress = progress.clone();
        Arc::new(move |case: &CaseResult| {
            if let Ok(mut p) = progress.lock() {
                p.case_done(&case.id);
            }
        })
    };
    let report = tokio::select! {
        report = (job.run)(on_case) => report?,
        _ = tokio::signal::ctrl_c() => {
            if let Ok(mut p) = progress.lock() { p.finish(); }
            eprintln!("agent-tck: interrupted; no report written");
            return Ok(Ended::Interrupted);
        }
    };
    if let Ok(mut p) = progress.lock() {
        p.finish();
    }
    conclude(report, &job.output)
}

async fn selftest(args: SelftestArgs) -> Result<Ended, Error> {
    args.output.check()?;
    let chosen: Vec<&'static dyn Protocol> = match &args.protocol {
        Some(name) => vec![protocol(name)?],
        None => protocols::REGISTRY.to_vec(),
    };
    let seed = seed_or_clock(args.run.seed);
    let exe = std::env::current_exe().map_err(|e| {
        Error::run(format!(
            "cannot find the agent-tck binary to run as a stdio agent: {e}"
        ))
    })?;
    let outcome = crate::selftest::run(&chosen, seed, &args.run, &args.suite, &exe, |report| {
        crate::out!("{}", console::render(report, console::want_colour()));
        Ok(())
    })
    .await?;
    // The files hold the matrices too: a case per row.
    args.output.write(&outcome.report)?;
    crate::outln!("\n{}", outcome.verdict());
    Ok(Ended::Verdict(outcome.exit_code()))
}

fn mock_agents(args: MockAgentsArgs) -> Result<Ended, Error> {
    let exe = std::env::current_exe()
        .map_err(|e| Error::run(format!("cannot find the agent-tck binary: {e}")))?;
    let seed = seed_or_clock(args.seed);
    let at = crate::protocols::plugin::AgentSet {
        dir: &args.dir,
        count: args.count,
        seed,
        exe: &exe,
    };
    let text = protocol(&args.protocol)?.agent_set(at).ok_or_else(|| {
        Error::usage(format!(
            "--protocol {}: no sets of mock agents (agent-standard has them)",
            args.protocol
        ))
    })??;
    crate::outln!("{text}");
    Ok(Ended::Verdict(Exit::Passed))
}

async fn mock_agent(args: MockAgentArgs) -> Result<Ended, Error> {
    if !crate::mock::fleet::valid_name(&args.name) {
        return Err(Error::usage(format!(
            "--name {:?}: must match ^[A-Za-z][A-Za-z0-9_-]*$",
            args.name
        )));
    }
    let key = api_key(args.api_key.clone())?;
    let protocol = protocol(&args.protocol)?;
    let behaviors = args.behavior.join(",");
    let command = crate::protocols::plugin::CommandAgent {
        name: &args.name,
        behavior: &behaviors,
        seed: seed_or_clock(args.seed),
        mode: args.mode.as_deref(),
        task: args.task.as_deref(),
        next: &args.next,
        approved: args.approved,
        journal: args.run.journal.as_deref(),
    };
    if let Some(status) = protocol.command_agent(command) {
        return status.map(Ended::AgentExit);
    }
    for (flag, given) in [
        ("--mode", args.mode.is_some()),
        ("--task", args.task.is_some()),
        ("--next", !args.next.is_empty()),
        ("--approved", args.approved),
    ] {
        if given {
            return Err(Error::usage(format!(
                "{flag}: for agents run as a command (--protocol agent-standard), not {}",
                args.protocol
            )));
        }
    }
    let agents = agents_of(&args.protocol)?;
    let others = protocols::agent_protocols();
    let at = For {
        protocol: agents,
        others: &others,
    };
    let items = behavior::parse_list(&behaviors, at)
        .map_err(|e| Error::usage(format!("--behavior: {e}")))?;
    let line = args.stdio || args.tcp.is_some() || args.unix.is_some();
    if line && agents.line_endpoint().is_none() {
        let lines: Vec<String> = others
            .iter()
            .filter(|p| p.line_endpoint().is_some())
            .map(|p| format!("--protocol {}", p.name()))
            .collect();
        return Err(Error::usage(format!(
            "--stdio, --tcp and --unix: {} agents are served over HTTP only (add {})",
            agents.name(),
            lines.join(" or ")
        )));
    }
    behavior::check_fit(&items, agents, !line, args.stdio)
        .map_err(|e| Error::usage(format!("--behavior {e}")))?;
    args.run.output.check()?;
    let seed = seed_or_clock(args.seed);
    let profile = Profile {
        name: args.name.clone(),
        domain: "general review".into(),
        capabilities: Vec::new(),
        api_key: key,
    };
    let reference = protocol.reference_with(&args.name, seed, &args.scenario)?;
    let agent = MockAgent::with_responder(agents, profile, items, seed, reference);
    if line {
        return serve_line_agent(agent, &args, seed).await;
    }
    let settings = SessionSettings {
        protocol: agents,
        agents: vec![agent],
        layout: Layout::PerAgent,
        host: args.host,
        port: args.port,
        advertise: None,
        driver: None,
        expect: args.run.expect(None),
        journal: args.run.journal.clone(),
        journal_body_cap: args.run.journal_body_cap,
        seed,
        serve_after: true,
        strict: args.run.strict,
        banner: Banner::Agent,
        log_requests: args.run.log_requests(),
    };
    run_mock(settings, &args.run).await
}

/// An agent on stdio (until end of input) or a socket (until interrupted), judging its peer (the
/// harness) as a mock session does. Over stdio the reports are rewritten after every answer (a
/// harness may kill the agent at any moment), the readable report goes to stderr, and the exit
/// status is 0 whatever the verdict: the harness reads it as the agent's.
async fn serve_line_agent(
    agent: MockAgent,
    args: &MockAgentArgs,
    seed: u64,
) -> Result<Ended, Error> {
    use crate::mock::line_server::{self, LineService};
    let protocol = agent.protocol.name();
    let mut service = LineService::judged(agent, &args.run.expect(None));
    for (flag, path) in [
        ("--json", &args.run.output.json),
        ("--junit", &args.run.output.junit),
    ] {
        if let Some(path) = path {
            // The child `forks-and-exits` leaves needs them whatever its working directory.
            let path = std::path::absolute(path).unwrap_or_else(|_| path.clone());
            service.linger_args.push(flag.into());
            service.linger_args.push(path.into());
        }
    }
    if let (true, Some(json)) = (args.stdio, &args.run.output.json) {
        // The processes of one run (a per-turn harness starts one a turn) fold one report.
        service
            .keep_journal(json)
            .map_err(|e| Error::run(format!("--json {}: its journal: {e}", json.display())))?;
    }
    let service = Arc::new(service);
    let started = std::time::Instant::now();
    let started_at = crate::report::now_rfc3339();
    let target = match (&args.tcp, &args.unix) {
        (Some(port), _) => format!("the harness that connected to tcp://{}:{port}", args.host),
        (_, Some(path)) => format!("the harness that connected to unix://{}", path.display()),
        _ => "the harness that ran this agent (stdio)".to_string(),
    };
    let report_of = |service: &LineService| {
        let mut run = RunInfo::start("mock", protocol, target.clone(), seed, args.run.strict);
        run.started = started;
        run.started_at = started_at.clone();
        run.report(service.cases(), &Redactor::new(None))
    };
    if args.stdio {
        let rewrite = |s: &LineService| {
            let _ = args.run.output.write_quietly(&report_of(s));
        };
        let served = tokio::select! {
            r = line_server::serve_stdio(service.clone(), &rewrite) => r,
            // Ended by the harness (TERM, INT): what it was waiting for, it gave up on now.
            _ = shutdown_signal() => {
                service.peer_gave_up();
                Ok(())
            }
        };
        let report = report_of(&service);
        args.run.output.write_quietly(&report)?;
        if !service.stderr_stuck() {
            eprint!("{}", console::render(&report, false));
        }
        served.map_err(|e| Error::run(format!("stdio: {e}")))?;
        return Ok(Ended::Verdict(Exit::Passed));
    }
    let stop = tokio_util::sync::CancellationToken::new();
    let served = {
        let stop = stop.clone();
        let signal = shutdown_signal();
        async move {
            signal.await;
            stop.cancel();
        }
    };
    if let Some(port) = args.tcp {
        let addr = std::net::SocketAddr::new(args.host, port);
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|e| Error::run(format!("cannot listen on {addr}: {e}")))?;
        let bound = listener
            .local_addr()
            .map_err(|e| Error::run(e.to_string()))?;
        crate::outln!(
            "agent-tck mock agent · {protocol} {:?} · newline-delimited JSON · listening on tcp://{bound}",
            service.agent.name()
        );
        tokio::join!(
            line_server::serve_tcp(service.clone(), listener, stop),
            served
        );
    } else if let Some(path) = &args.unix {
        let listener = tokio::net::UnixListener::bind(path)
            .map_err(|e| Error::run(format!("--unix {}: cannot listen: {e}", path.display())))?;
        crate::outln!(
            "agent-tck mock agent · {protocol} {:?} · newline-delimited JSON · listening on unix://{}",
            service.agent.name(),
            path.display()
        );
        tokio::join!(
            line_server::serve_unix(service.clone(), listener, stop),
            served
        );
        let _ = std::fs::remove_file(path);
    }
    conclude(report_of(&service), &args.run.output)
}

/// The `protocol:` a fleet file names, if it parses that far.
fn fleet_protocol(text: &str) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Peek {
        protocol: Option<String>,
    }
    serde_saphyr::from_str::<Peek>(text).ok()?.protocol
}

async fn mock_fleet(args: MockFleetArgs) -> Result<Ended, Error> {
    // A protocol whose fleets are clients of a server runs the file itself.
    let (source, text) = match (&args.config, &args.preset) {
        (Some(path), _) => (
            path.display().to_string(),
            std::fs::read_to_string(path)
                .map_err(|e| Error::usage(format!("{}: cannot read: {e}", path.display())))?,
        ),
        (None, Some(name)) => {
            let (source, text) = protocols::fleet_preset(name).map_err(Error::Usage)?;
            (source.to_string(), text.to_string())
        }
        (None, None) => return Err(Error::usage("give --config FILE or --preset NAME")),
    };
    if let Some(protocol) = fleet_protocol(&text).and_then(|p| protocols::find(&p)) {
        let at = crate::protocols::plugin::ClientFleet {
            url: args.platform_url.as_deref(),
            seed: args.seed,
            strict: args.run.strict,
            registry: args.registry.as_deref(),
        };
        if let Some(run) = protocol.client_fleet(&source, &text, at) {
            args.run.output.check()?;
            return conclude(run.await?, &args.run.output);
        }
    }
    let (source, file) = match (&args.config, &args.preset) {
        (Some(path), _) => (path.display().to_string(), FleetFile::from_file(path)?),
        (None, Some(name)) => {
            let (source, text) = protocols::fleet_preset(name).map_err(Error::Usage)?;
            (source.to_string(), FleetFile::parse(source, text)?)
        }
        (None, None) => return Err(Error::usage("give --config FILE or --preset NAME")),
    };
    let agents_protocol = match &file.protocol {
        None => agents_of(crate::protocols::roundtable::NAME)?,
        Some(name) => agents_of(&name.value).map_err(|e| {
            Error::usage(format!(
                "{source}:{}: protocol: {e}",
                name.referenced.line()
            ))
        })?,
    };
    let seed = seed_or_clock(args.seed.or(file.seed));
    let others = protocols::agent_protocols();
    let agents = file.agents(
        &source,
        seed,
        For {
            protocol: agents_protocol,
            others: &others,
        },
    )?;
    let agents = match &args.shard {
        Some(shard) => {
            let shard = crate::targets::parse_shard(shard)?;
            let mine: Vec<_> = agents
                .into_iter()
                .filter(|a| crate::targets::in_shard(a.name(), shard))
                .collect();
            if mine.is_empty() {
                return Err(Error::usage(format!(
                    "--shard {}/{}: no agent of {source} falls in this shard",
                    shard.0, shard.1
                )));
            }
            mine
        }
        None => agents,
    };
    args.run.output.check()?;
    let mut platform = file.platform.clone();
    if let Some(url) = &args.platform_url {
        let spec = platform.as_mut().ok_or_else(|| {
            Error::usage(format!(
                "--platform-url: {source} has no platform: section to point at it (add one \
                 with register: and trigger:)"
            ))
        })?;
        BaseUrl::parse(url).map_err(|e| Error::usage(format!("--platform-url: {e}")))?;
        spec.url = url.clone();
    }
    let driver = platform
        .as_ref()
        .map(|p| Driver::new(p, args.platform_token.clone(), agents_protocol))
        .transpose()
        .map_err(|e| Error::usage(format!("{source}: {e}")))?;
    let advertise = args.advertise.clone().or(file.advertise.clone());
    if let Some(a) = &advertise {
        BaseUrl::parse(a).map_err(|e| Error::usage(format!("--advertise: {e}")))?;
    }
    let expect = args.run.expect(driver.as_ref().map(|d| d.timeout));
    let settings = SessionSettings {
        protocol: agents_protocol,
        agents,
        layout: file.layout,
        host: args.host.unwrap_or(file.host),
        port: args.port.unwrap_or(file.port),
        advertise,
        driver,
        expect,
        journal: args.run.journal.clone(),
        journal_body_cap: args.run.journal_body_cap,
        seed,
        serve_after: args.serve,
        strict: args.run.strict,
        banner: Banner::Fleet,
        log_requests: false,
    };
    run_mock(settings, &args.run).await
}

/// Runs a mock session until it ends or is interrupted, then reports on the platform.
async fn run_mock(settings: SessionSettings, run: &MockRunArgs) -> Result<Ended, Error> {
    let report = crate::mock::session::run(settings, shutdown_signal()).await?;
    conclude(report, &run.output)
}

/// The end of a run that reports: the baseline applied (`--baseline`), the report printed and
/// written, its exit status.
fn conclude(
    mut report: Report,
    output: &crate::report::output::OutputArgs,
) -> Result<Ended, Error> {
    output.apply_baseline(&mut report)?;
    crate::out!("{}", console::render(&report, console::want_colour()));
    output.write(&report)?;
    Ok(Ended::of(&report))
}

/// One row of the catalogue: name, what it does, the rule it exercises, and (for a content
/// behaviour) the protocols that have it.
type CatalogueRow = (&'static str, &'static str, &'static str, Vec<&'static str>);

/// The behaviour catalogue: the engine's behaviours, then each protocol's content behaviours
/// (a name several protocols share once, with the first one's description), then the modifiers.
pub fn catalogue() -> Vec<CatalogueRow> {
    let modifier = |name: &str| matches!(name, "flaky" | "fail-first");
    let mut rows: Vec<CatalogueRow> = behavior::CATALOGUE
        .iter()
        .filter(|(name, _, _)| !modifier(name))
        .map(|(n, w, r)| (*n, *w, *r, Vec::new()))
        .collect();
    let mut content: Vec<CatalogueRow> = Vec::new();
    for agents in protocols::agent_protocols() {
        for b in agents.behaviors() {
            match content.iter_mut().find(|row| row.0 == b.name) {
                Some(row) => row.3.push(agents.name()),
                None => content.push((b.name, b.what, b.rule, vec![agents.name()])),
            }
        }
    }
    rows.extend(content);
    rows.extend(
        behavior::CATALOGUE
            .iter()
            .filter(|(name, _, _)| modifier(name))
            .map(|(n, w, r)| (*n, *w, *r, Vec::new())),
    );
    rows
}

/// The behaviour catalogue as printed by `mock behaviors`.
pub fn list_behaviors() -> String {
    let mut out = String::from(
        "Behaviours (--behavior NAME[:ARGS][@ENDPOINT], comma-separated; fleet files: `behaviors:`)\n\n",
    );
    for (name, what, rule, protocols) in catalogue() {
        out.push_str(&format!(
            "  {name}\n      {what}\n      exercises: {rule}\n"
        ));
        if !protocols.is_empty() {
            out.push_str(&format!("      protocols: {}\n", protocols.join(", ")));
        }
    }
    for p in protocols::REGISTRY {
        let own = p.command_behaviors();
        if own.is_empty() {
            continue;
        }
        out.push_str(&format!(
            "\nBehaviours of the {} command agent (mock agent --protocol {} --behavior \
             NAME[:ARG], comma-separated or repeated; one run per call)\n\n",
            p.name(),
            p.name()
        ));
        for (name, what) in own {
            out.push_str(&format!("  {name}\n      {what}\n"));
        }
    }
    out
}

/// Completes on Ctrl-C or (on Unix) SIGTERM. The handlers are installed when this is called, not
/// when the future is first polled: a banner printed before the first poll would otherwise
/// invite a Ctrl-C that kills the process with no report (and a SIGINT ignored by the parent,
/// as under nohup, would stay ignored until then).
fn shutdown_signal() -> impl std::future::Future<Output = ()> + Send {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let interrupt = signal(SignalKind::interrupt());
        let terminate = signal(SignalKind::terminate());
        async move {
            match (interrupt, terminate) {
                (Ok(mut interrupt), Ok(mut terminate)) => {
                    tokio::select! {
                        _ = interrupt.recv() => {}
                        _ = terminate.recv() => {}
                    }
                }
                _ => {
                    let _ = tokio::signal::ctrl_c().await;
                }
            }
        }
    }
    #[cfg(not(unix))]
    {
        async {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clap_errors_become_one_line() {
        let e = Cli::try_parse_from([
            "agent-tck",
            "probe",
            "roundtable",
            "--url",
            "http://x",
            "--timeout",
            "soon",
        ])
        .unwrap_err();
        let line = clap_one_line(&e);
        assert!(!line.contains('\n'), "{line}");
        assert!(line.contains("--timeout"), "{line}");
        let e = Cli::try_parse_from(["agent-tck", "probe", "roundtable"]).unwrap_err();
        assert!(clap_one_line(&e).contains("--url"), "{}", clap_one_line(&e));
        assert!(
            clap_one_line(&e).ends_with("(see agent-tck probe roundtable --help)"),
            "{}",
            clap_one_line(&e)
        );
    }

    #[test]
    fn the_command_line_is_well_formed() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }

    #[test]
    fn every_registered_probe_is_a_subcommand() {
        use clap::CommandFactory;
        let cli = Cli::command();
        let probe = cli.find_subcommand("probe").expect("probe");
        for p in protocols::REGISTRY {
            if p.probe_command().is_some() {
                assert!(probe.find_subcommand(p.name()).is_some(), "{}", p.name());
            }
        }
        let parsed =
            Cli::try_parse_from(["agent-tck", "probe", "execute-task", "--url", "http://x"])
                .expect("parses");
        match parsed.command {
            Command::Probe(p) => assert_eq!(p.protocol, "execute-task"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn exit_statuses_are_decided_in_one_place() {
        assert_eq!(exit_status(&Ok(Ended::Verdict(Exit::Passed))), 0);
        assert_eq!(exit_status(&Ok(Ended::Verdict(Exit::Failed))), 1);
        assert_eq!(exit_status(&Ok(Ended::AgentExit(3))), 3);
        assert_eq!(exit_status(&Ok(Ended::Interrupted)), 130);
        assert_eq!(exit_status(&Err(Error::run("cannot bind"))), 1);
        assert_eq!(exit_status(&Err(Error::usage("--url: no scheme"))), 2);
    }

    #[test]
    fn every_preset_parses_and_builds_its_agents() {
        for p in protocols::REGISTRY {
            for (name, source, text) in p.fleet_presets() {
                // A protocol whose fleets are clients parses its own (tested with it).
                if p.agents().is_none() {
                    assert_eq!(fleet_protocol(text).as_deref(), Some(p.name()), "{name}");
                    continue;
                }
                let file = FleetFile::parse(source, text).unwrap();
                let others = protocols::agent_protocols();
                let at = For {
                    protocol: p.agents().expect("a protocol with fleets plays agents"),
                    others: &others,
                };
                let agents = file.agents(source, 1, at).unwrap_or_else(|e| panic!("{e}"));
                assert!(agents.len() >= 10, "{name}: {} agents", agents.len());
            }
        }
        assert!(protocols::fleet_preset("calm")
            .unwrap_err()
            .contains("chaos, slow"));
    }

    #[test]
    fn the_readme_documents_every_behaviour() {
        let readme = include_str!("../README.md");
        for (name, what, _, _) in catalogue() {
            assert!(
                readme.contains(&format!("| `{name}` | {}", what.replace('|', "\\|"))),
                "{name}"
            );
        }
    }
}
