//! The command line: clap definitions, and the one place where raw flags become validated
//! settings. `main` calls [`main`]; every usage or configuration error ends here as one line on
//! stderr and exit status 2.

use std::ffi::OsString;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::mock::agent::{MockAgent, Profile};
use crate::mock::behavior;
use crate::mock::driver::Driver;
use crate::mock::fleet::{FleetFile, Layout};
use crate::mock::session::{Banner, SessionSettings};
use crate::probe::scenario::Scenario;
use crate::probe::task::{Target, TaskSettings};
use crate::probe::{self, ProbeSettings, Suite};
use crate::report::{console, json, junit, Report};
use crate::transport::http::BaseUrl;

/// Exit status for a usage or configuration error.
pub const USAGE_ERROR: u8 = 2;

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
    #[command(subcommand)]
    Probe(ProbeCommand),
    /// Play the agents: serve mock agents for a platform to talk to.
    #[command(subcommand)]
    Mock(MockCommand),
    /// Start the built-in reference agent on a free loopback port, probe it and print the report.
    Selftest(SelftestArgs),
    /// Inspect the suites (cases, levels, spec sections).
    #[command(subcommand)]
    Suites(SuitesCommand),
    /// The JSON Schemas built into the binary.
    #[command(subcommand)]
    Schemas(SchemasCommand),
}

#[derive(Debug, Subcommand)]
pub enum ProbeCommand {
    /// The round-table External Agent Protocol: POST /analyze, /challenge, /vote.
    Roundtable(ProbeArgs),
    /// The execute_task protocol: we play the evaluation harness (HTTP, stdio or a socket).
    ExecuteTask(TaskProbeArgs),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum StdioModeArg {
    /// One process; a JSON line in, a JSON line out (the spec).
    Persistent,
    /// A process per turn; the request without a newline, stdin closed, all of stdout read.
    PerTurn,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SocketModeArg {
    /// One connection for the whole run (the spec).
    Persistent,
    /// A connection per call.
    PerCall,
}

#[derive(Debug, Clone, Args)]
#[command(group(clap::ArgGroup::new("agent").required(true).args(["url", "stdio", "tcp", "unix"])))]
pub struct TaskProbeArgs {
    /// The agent's base URL: requests go to POST {URL}/execute_task.
    #[arg(long, value_name = "URL")]
    pub url: Option<String>,
    /// The agent's command, run directly (never through a shell): JSON lines on stdin/stdout.
    #[arg(long, value_name = "CMD")]
    pub stdio: Option<String>,
    #[arg(long, value_enum, default_value = "persistent")]
    pub stdio_mode: StdioModeArg,
    /// A TCP agent: newline-delimited JSON on HOST:PORT.
    #[arg(long, value_name = "HOST:PORT")]
    pub tcp: Option<String>,
    /// A Unix-socket agent: newline-delimited JSON.
    #[arg(long, value_name = "PATH")]
    pub unix: Option<PathBuf>,
    #[arg(long, value_enum, default_value = "persistent")]
    pub socket_mode: SocketModeArg,
    /// Scenario files (suites/execute_task/*.yaml); default: the built-in scenarios.
    #[arg(long, value_name = "FILE", num_args = 1..)]
    pub scenario: Vec<PathBuf>,
    /// Turn limit of every scenario (default: each scenario's, 5 unless it says otherwise).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub max_turns: Option<u32>,
    /// HTTP only: sent as `Authorization: Bearer KEY`; printed as ***.
    #[arg(
        long,
        value_name = "KEY",
        env = "AGENT_TCK_API_KEY",
        hide_env_values = true
    )]
    pub api_key: Option<String>,
    /// Deadline of each turn's exchange (e.g. 120s, 2m, 500ms).
    #[arg(long, value_name = "DUR", default_value = "120s", value_parser = parse_duration)]
    pub timeout: Duration,
    /// Largest answer accepted (a line, or all of stdout per turn).
    #[arg(long, value_name = "BYTES", default_value = "5000000", value_parser = parse_bytes)]
    pub max_body: usize,
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// Run only the cases whose id matches (glob, comma-separated).
    #[arg(long, value_name = "PATTERN", value_delimiter = ',')]
    pub only: Vec<String>,
    /// SHOULD failures fail the run.
    #[arg(long)]
    pub strict: bool,
    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Protocol {
    Roundtable,
    ExecuteTask,
}

impl Protocol {
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Roundtable => "roundtable",
            Protocol::ExecuteTask => "execute-task",
        }
    }
}

/// Flags shared by every run that writes a report.
#[derive(Debug, Clone, Args)]
pub struct OutputArgs {
    /// Write the JSON report here (schema: schemas/report.schema.json).
    #[arg(long, value_name = "PATH")]
    pub json: Option<PathBuf>,
    /// Write JUnit XML here (one testsuite per endpoint).
    #[arg(long, value_name = "PATH")]
    pub junit: Option<PathBuf>,
}

#[derive(Debug, Clone, Args)]
pub struct ProbeArgs {
    /// The agent's base URL (http:// or https://), e.g. http://127.0.0.1:3001.
    #[arg(long, value_name = "BASE")]
    pub url: String,
    /// Sent as `Authorization: Bearer KEY`; enables the auth cases. Printed as *** everywhere.
    #[arg(
        long,
        value_name = "KEY",
        env = "AGENT_TCK_API_KEY",
        hide_env_values = true
    )]
    pub api_key: Option<String>,
    #[command(flatten)]
    pub run: RunArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// How to run a suite (shared by `probe` and `selftest`).
#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    /// Total deadline of each exchange, from connect to the last body byte (e.g. 120s, 2m, 500ms, 30).
    #[arg(long, value_name = "DUR", default_value = "120s", value_parser = parse_duration)]
    pub timeout: Duration,
    /// Largest response body accepted; reading stops just past it.
    #[arg(long, value_name = "BYTES", default_value = "5000000", value_parser = parse_bytes)]
    pub max_body: usize,
    /// Longest string field accepted, in characters.
    #[arg(long, value_name = "CHARS", default_value_t = 50_000, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_field: u32,
    /// Seed of every generated request (default: from the clock; the report prints it).
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// Run only the cases whose id matches (glob, comma-separated or repeated; needed cases are added).
    #[arg(long, value_name = "PATTERN", value_delimiter = ',')]
    pub only: Vec<String>,
    /// SHOULD failures fail the run (exit 1) instead of warning.
    #[arg(long)]
    pub strict: bool,
    /// Exchanges in flight at once.
    #[arg(long, value_name = "N", default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..=256))]
    pub concurrency: u16,
    /// A suite file to run instead of the built-in one (see `agent-tck suites list`).
    #[arg(long, value_name = "FILE")]
    pub suite: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum MockCommand {
    /// Serve one agent (conforming, or with --behavior) until interrupted; then judge the platform.
    Agent(MockAgentArgs),
    /// Serve a fleet from a YAML file (presets in mocks/), drive the platform, judge it.
    Fleet(MockFleetArgs),
    /// Print the behaviour catalogue: each name, what it does, the platform rule it exercises.
    Behaviors,
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
    /// The platform's per-endpoint agent timeout: a slower answer counts as failed.
    #[arg(long, value_name = "DUR", value_parser = parse_duration)]
    pub platform_timeout: Option<Duration>,
    /// SHOULD failures (of the platform) fail the run.
    #[arg(long)]
    pub strict: bool,
    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Debug, Clone, Args)]
pub struct MockFleetArgs {
    /// The fleet file (YAML; see mocks/*.yaml).
    #[arg(
        long,
        value_name = "FILE",
        required_unless_present = "preset",
        conflicts_with = "preset"
    )]
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
    /// Keep serving after the triggers are done, until interrupted.
    #[arg(long)]
    pub serve: bool,
    #[command(flatten)]
    pub run: MockRunArgs,
}

#[derive(Debug, Clone, Args)]
pub struct MockAgentArgs {
    #[arg(long, value_enum, default_value = "roundtable")]
    pub protocol: Protocol,
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
    /// Behaviours, comma-separated: NAME[:ARGS][@ENDPOINT] (see `agent-tck mock behaviors`).
    #[arg(long, value_name = "LIST", default_value = "conforming")]
    pub behavior: String,
    /// execute-task: answer on stdin/stdout (a request ends at a newline or at end of input).
    #[arg(long, conflicts_with_all = ["tcp", "unix"])]
    pub stdio: bool,
    /// execute-task: serve newline-delimited JSON on this TCP port (on --host).
    #[arg(long, value_name = "PORT", conflicts_with = "unix")]
    pub tcp: Option<u16>,
    /// execute-task: serve newline-delimited JSON on this Unix socket.
    #[arg(long, value_name = "PATH")]
    pub unix: Option<PathBuf>,
    /// execute-task: scenario files whose tasks the agent follows a script for (besides the
    /// built-in scenarios): the tools each expects, then the ending it accepts.
    #[arg(long, value_name = "FILE", num_args = 1..)]
    pub scenario: Vec<PathBuf>,
    #[command(flatten)]
    pub run: MockRunArgs,
}

#[derive(Debug, Clone, Args)]
pub struct SelftestArgs {
    /// Only this protocol (default: both).
    #[arg(long, value_enum)]
    pub protocol: Option<Protocol>,
    #[command(flatten)]
    pub run: RunArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Debug, Subcommand)]
pub enum SuitesCommand {
    /// Print every case: id, level, spec section, title.
    List {
        #[arg(long, value_enum, default_value = "roundtable")]
        protocol: Protocol,
        /// List this suite file instead of the built-in one.
        #[arg(long, value_name = "FILE")]
        suite: Option<PathBuf>,
    },
}

#[derive(Debug, Subcommand)]
pub enum SchemasCommand {
    /// Write the embedded schemas under DIR (as DIR/schemas/...).
    Export { dir: PathBuf },
    /// Print the ids of the embedded schemas.
    List,
}

/// A duration: `120s`, `2m`, `500ms`, `1h 30m`, or a plain number of seconds.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let d = match text.parse::<f64>() {
        Ok(secs) if secs.is_finite() && secs >= 0.0 => Duration::from_secs_f64(secs),
        Ok(_) => return Err("expected a positive duration".into()),
        Err(_) => humantime::parse_duration(text)
            .map_err(|e| format!("{e} (expected e.g. 120s, 2m, 500ms)"))?,
    };
    if d.is_zero() {
        return Err("must be more than zero".into());
    }
    Ok(d)
}

/// A byte count: `5000000`, `512k`, `5M`, `5MB`, `5MiB` (k and M are 1000 and 1,000,000; KiB and
/// MiB are 1024 and 1,048,576).
pub fn parse_bytes(text: &str) -> Result<usize, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (digits, unit) = text.split_at(split);
    let n: usize = digits.parse().map_err(|_| {
        format!("{text:?} is not a byte count (expected e.g. 5000000, 512k, 5MB, 5MiB)")
    })?;
    let scale: usize = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" => 1_000,
        "kib" => 1 << 10,
        "m" | "mb" => 1_000_000,
        "mib" => 1 << 20,
        "g" | "gb" => 1_000_000_000,
        "gib" => 1 << 30,
        other => {
            return Err(format!(
                "unknown unit {other:?} (expected k, KB, KiB, M, MB, MiB, G, GB, GiB)"
            ))
        }
    };
    match n.checked_mul(scale) {
        Some(0) => Err("must be more than zero".into()),
        Some(bytes) => Ok(bytes),
        None => Err("too large".into()),
    }
}

/// A usage or configuration error: one line, exit status 2.
#[derive(Debug)]
pub struct UsageError(pub String);

impl<T: std::fmt::Display> From<T> for UsageError {
    fn from(message: T) -> UsageError {
        UsageError(message.to_string())
    }
}

/// Parses `args` and runs the command. Help and version print and exit 0.
pub fn main<I, T>(args: I) -> ExitCode
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) if !e.use_stderr() => {
            // --help, --version: clap's own output, exit 0.
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
        Err(e) => return usage_error(&clap_one_line(&e)),
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => return usage_error(&format!("cannot start the async runtime: {e}")),
    };
    let outcome = runtime.block_on(execute(cli.command));
    // Connections to a hostile agent may still be open: do not wait for them on the way out.
    runtime.shutdown_timeout(Duration::from_millis(200));
    match outcome {
        Ok(code) => ExitCode::from(code),
        Err(UsageError(message)) => usage_error(&message),
    }
}

fn usage_error(message: &str) -> ExitCode {
    eprintln!("agent-tck: error: {message}");
    ExitCode::from(USAGE_ERROR)
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
    format!("{message} (see agent-tck --help)")
}

async fn execute(command: Command) -> Result<u8, UsageError> {
    match command {
        Command::Probe(ProbeCommand::Roundtable(args)) => {
            let base = BaseUrl::parse(&args.url).map_err(|e| format!("--url: {e}"))?;
            let settings = settings(Protocol::Roundtable, base, args.api_key, &args.run)?;
            check_outputs(&args.output)?;
            run_and_report(&settings, &args.output).await
        }
        Command::Probe(ProbeCommand::ExecuteTask(args)) => {
            let settings = task_settings(&args)?;
            check_outputs(&args.output)?;
            run_task_and_report(&settings, &args.output).await
        }
        Command::Selftest(args) => {
            check_outputs(&args.output)?;
            crate::selftest::run(args.protocol, &args.run, &args.output).await
        }
        Command::Mock(MockCommand::Agent(args)) => mock_agent(args).await,
        Command::Mock(MockCommand::Fleet(args)) => mock_fleet(args).await,
        Command::Mock(MockCommand::Behaviors) => {
            crate::out!("{}", list_behaviors());
            Ok(0)
        }
        Command::Suites(SuitesCommand::List {
            protocol: Protocol::ExecuteTask,
            suite,
        }) => {
            let scenarios = match suite {
                Some(path) => vec![Scenario::from_file(&path)?],
                None => Scenario::builtin(),
            };
            crate::out!("{}", crate::probe::task::list_cases(&scenarios));
            Ok(0)
        }
        Command::Suites(SuitesCommand::List { protocol, suite }) => {
            let suite = load_suite(protocol, suite.as_deref())?;
            crate::out!("{}", list_cases(&suite));
            Ok(0)
        }
        Command::Schemas(SchemasCommand::Export { dir }) => {
            let written = crate::schema::export(&dir)
                .map_err(|e| format!("cannot write schemas under {}: {e}", dir.display()))?;
            for path in written {
                crate::outln!("{}", path.display());
            }
            Ok(0)
        }
        Command::Schemas(SchemasCommand::List) => {
            for (id, file, _) in crate::schema::EMBEDDED {
                crate::outln!("{id:<32} {file}");
            }
            Ok(0)
        }
    }
}

/// The seed to use: the flag, or one from the clock.
pub fn seed_or_clock(seed: Option<u64>) -> u64 {
    seed.unwrap_or_else(|| {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        // Keep it short enough to retype.
        (now.as_nanos() % 1_000_000_000) as u64
    })
}

fn load_suite(protocol: Protocol, file: Option<&Path>) -> Result<Suite, UsageError> {
    let suite = match file {
        Some(path) => Suite::from_file(path)?,
        None => Suite::builtin(protocol.name())?,
    };
    if suite.file.protocol != protocol.name() {
        return Err(UsageError(format!(
            "{}: the suite is for protocol {:?}, not {:?}",
            suite.source,
            suite.file.protocol,
            protocol.name()
        )));
    }
    Ok(suite)
}

/// Raw flags → validated probe settings.
pub fn settings(
    protocol: Protocol,
    base: BaseUrl,
    api_key: Option<String>,
    run: &RunArgs,
) -> Result<ProbeSettings, UsageError> {
    if api_key.as_deref().is_some_and(|k| k.trim().is_empty()) {
        return Err(UsageError("--api-key: the key is empty".into()));
    }
    let suite = load_suite(protocol, run.suite.as_deref())?;
    let mut settings = ProbeSettings::new(base, suite);
    settings.api_key = api_key;
    settings.timeout = run.timeout;
    settings.max_body = run.max_body;
    settings.max_field = run.max_field as usize;
    settings.seed = seed_or_clock(run.seed);
    settings.only = run
        .only
        .iter()
        .map(|p| p.trim().to_string())
        .filter(|p| !p.is_empty())
        .collect();
    settings.strict = run.strict;
    settings.concurrency = run.concurrency as usize;
    // Catch an --only that matches nothing before anything is sent.
    settings.suite.select(&settings.only)?;
    Ok(settings)
}

/// Raw execute-task flags → validated settings.
pub fn task_settings(args: &TaskProbeArgs) -> Result<TaskSettings, UsageError> {
    use crate::transport::socket::{SocketAddrSpec, SocketMode};
    use crate::transport::stdio::{StdioConfig, StdioMode};
    let target = if let Some(url) = &args.url {
        if args.api_key.as_deref().is_some_and(|k| k.trim().is_empty()) {
            return Err(UsageError("--api-key: the key is empty".into()));
        }
        Target::Http {
            base: BaseUrl::parse(url).map_err(|e| format!("--url: {e}"))?,
            api_key: args.api_key.clone(),
        }
    } else if let Some(cmd) = &args.stdio {
        let mode = match args.stdio_mode {
            StdioModeArg::Persistent => StdioMode::Persistent,
            StdioModeArg::PerTurn => StdioMode::PerTurn,
        };
        let mut config = StdioConfig::new(cmd.clone(), mode);
        config.max_line = args.max_body;
        crate::transport::stdio::split_command(cmd).map_err(|e| format!("--stdio: {e}"))?;
        Target::Stdio(config)
    } else {
        let addr = match (&args.tcp, &args.unix) {
            (Some(a), _) => {
                let (host, port) = a
                    .rsplit_once(':')
                    .ok_or_else(|| format!("--tcp {a:?}: expected HOST:PORT"))?;
                port.parse::<u16>()
                    .map_err(|_| format!("--tcp {a:?}: {port:?} is not a port"))?;
                if host.is_empty() {
                    return Err(UsageError(format!("--tcp {a:?}: the host is empty")));
                }
                SocketAddrSpec::Tcp(a.clone())
            }
            (None, Some(p)) => SocketAddrSpec::Unix(p.clone()),
            (None, None) => return Err(UsageError("give --url, --stdio, --tcp or --unix".into())),
        };
        let mode = match args.socket_mode {
            SocketModeArg::Persistent => SocketMode::Persistent,
            SocketModeArg::PerCall => SocketMode::PerCall,
        };
        Target::Socket { addr, mode }
    };
    let scenarios = if args.scenario.is_empty() {
        Scenario::builtin()
    } else {
        args.scenario
            .iter()
            .map(|p| Scenario::from_file(p))
            .collect::<Result<Vec<_>, _>>()?
    };
    let only: Vec<String> = args
        .only
        .iter()
        .map(|p| p.trim().to_string())
        .filter(|p| !p.is_empty())
        .collect();
    Ok(TaskSettings {
        target,
        timeout: args.timeout,
        max_body: args.max_body,
        max_turns: args.max_turns,
        scenarios,
        seed: seed_or_clock(args.seed),
        only,
        strict: args.strict,
    })
}

/// Fails early when a report could not be written, rather than after a long run.
fn check_outputs(output: &OutputArgs) -> Result<(), UsageError> {
    for (flag, path) in [("--json", &output.json), ("--junit", &output.junit)] {
        let Some(path) = path else { continue };
        if path.is_dir() {
            return Err(UsageError(format!(
                "{flag} {}: is a directory",
                path.display()
            )));
        }
        let parent = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        if !parent.is_dir() {
            return Err(UsageError(format!(
                "{flag} {}: the directory {} does not exist",
                path.display(),
                parent.display()
            )));
        }
    }
    if output.json.is_some() && output.json == output.junit {
        return Err(UsageError("--json and --junit name the same file".into()));
    }
    Ok(())
}

/// Runs the probe with a progress line, prints the console report, writes the files; the exit
/// status follows the report (Ctrl-C: 130).
pub async fn run_and_report(
    settings: &ProbeSettings,
    output: &OutputArgs,
) -> Result<u8, UsageError> {
    let total = settings.suite.select(&settings.only)?.len();
    with_progress(total, output, Job::Roundtable(settings)).await
}

/// The execute-task probe, with the same progress line, console report and files.
pub async fn run_task_and_report(
    settings: &TaskSettings,
    output: &OutputArgs,
) -> Result<u8, UsageError> {
    // The protocol cases, the scenarios' cases and the cross-cutting ones: an estimate for the
    // progress line.
    let total = 9 + settings
        .scenarios
        .iter()
        .map(|s| s.expect.len() + 1)
        .sum::<usize>();
    with_progress(total, output, Job::Task(settings)).await
}

/// A probe run of either protocol.
enum Job<'a> {
    Roundtable(&'a ProbeSettings),
    Task(&'a TaskSettings),
}

/// Runs `job` with a progress line (on a terminal), then prints the console report and writes
/// the files; the exit status follows the report (Ctrl-C: 130).
async fn with_progress(total: usize, output: &OutputArgs, job: Job<'_>) -> Result<u8, UsageError> {
    let progress = std::sync::Mutex::new(console::Progress::new(total));
    let on_case = |case: &crate::report::CaseResult| {
        if let Ok(mut p) = progress.lock() {
            p.case_done(&case.id);
        }
    };
    let run = async {
        match job {
            Job::Roundtable(s) => probe::run(s, &on_case).await,
            Job::Task(s) => crate::probe::task::run(s, &on_case).await,
        }
    };
    let report = tokio::select! {
        report = run => report?,
        _ = tokio::signal::ctrl_c() => {
            if let Ok(mut p) = progress.lock() { p.finish(); }
            eprintln!("agent-tck: interrupted; no report written");
            return Ok(130);
        }
    };
    if let Ok(mut p) = progress.lock() {
        p.finish();
    }
    crate::out!("{}", console::render(&report, console::want_colour()));
    write_reports(&report, output)?;
    Ok(report.exit_code() as u8)
}

pub fn write_reports(report: &Report, output: &OutputArgs) -> Result<(), UsageError> {
    let files = [
        (&output.json, "--json", json::to_string(report)),
        (&output.junit, "--junit", junit::to_string(report)),
    ];
    for (path, flag, text) in files {
        if let Some(path) = path {
            std::fs::write(path, text)
                .map_err(|e| format!("{flag} {}: cannot write: {e}", path.display()))?;
            eprintln!("wrote {}", path.display());
        }
    }
    Ok(())
}

async fn mock_agent(args: MockAgentArgs) -> Result<u8, UsageError> {
    if !crate::mock::fleet::valid_name(&args.name) {
        return Err(UsageError(format!(
            "--name {:?}: must match ^[A-Za-z][A-Za-z0-9_-]*$",
            args.name
        )));
    }
    if args.api_key.as_deref().is_some_and(|k| k.trim().is_empty()) {
        return Err(UsageError("--api-key: the key is empty".into()));
    }
    let items = behavior::parse_list(&args.behavior).map_err(|e| format!("--behavior: {e}"))?;
    let task = args.protocol == Protocol::ExecuteTask;
    let line = args.stdio || args.tcp.is_some() || args.unix.is_some();
    if line && !task {
        return Err(UsageError(
            "--stdio, --tcp and --unix serve the execute-task protocol (add --protocol execute-task)".into(),
        ));
    }
    behavior::check_fit(&items, task, !line, args.stdio).map_err(|e| format!("--behavior {e}"))?;
    check_outputs(&args.run.output)?;
    let seed = seed_or_clock(args.seed);
    let profile = Profile {
        name: args.name.clone(),
        domain: "general review".into(),
        capabilities: Vec::new(),
        api_key: args.api_key.clone(),
    };
    let agent = if task {
        let mut scenarios = Scenario::builtin();
        for path in &args.scenario {
            scenarios.push(Scenario::from_file(path)?);
        }
        let reference = Box::new(crate::mock::task_agent::TaskAgent::with_scenarios(
            args.name.clone(),
            &scenarios,
        ));
        MockAgent::with_responder(profile, items, seed, reference, true)
    } else {
        MockAgent::new(profile, items, seed)
    };
    if line {
        return serve_line_agent(agent, &args).await;
    }
    let settings = SessionSettings {
        agents: vec![agent],
        layout: Layout::PerAgent,
        host: args.host,
        port: args.port,
        advertise: None,
        driver: None,
        platform_timeout: args
            .run
            .platform_timeout
            .unwrap_or(Duration::from_secs(120)),
        journal: args.run.journal.clone(),
        journal_body_cap: args.run.journal_body_cap,
        seed,
        serve_after: true,
        strict: args.run.strict,
        banner: Banner::Agent,
    };
    run_mock(settings, &args.run).await
}

/// An execute-task agent on stdio (until end of input) or a socket (until interrupted).
async fn serve_line_agent(agent: MockAgent, args: &MockAgentArgs) -> Result<u8, UsageError> {
    use crate::mock::line_server;
    let agent = std::sync::Arc::new(agent);
    if args.stdio {
        line_server::serve_stdio(agent)
            .await
            .map_err(|e| format!("stdio: {e}"))?;
        return Ok(0);
    }
    let stop = tokio_util::sync::CancellationToken::new();
    let served = {
        let stop = stop.clone();
        async move {
            shutdown_signal().await;
            stop.cancel();
        }
    };
    if let Some(port) = args.tcp {
        let addr = std::net::SocketAddr::new(args.host, port);
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|e| format!("cannot listen on {addr}: {e}"))?;
        let bound = listener.local_addr().map_err(|e| e.to_string())?;
        crate::outln!("agent-tck mock agent · execute-task {:?} · newline-delimited JSON · listening on tcp://{bound}", agent.name());
        tokio::join!(line_server::serve_tcp(agent, listener, stop), served);
    } else if let Some(path) = &args.unix {
        let listener = tokio::net::UnixListener::bind(path)
            .map_err(|e| format!("--unix {}: cannot listen: {e}", path.display()))?;
        crate::outln!("agent-tck mock agent · execute-task {:?} · newline-delimited JSON · listening on unix://{}", agent.name(), path.display());
        tokio::join!(line_server::serve_unix(agent, listener, stop), served);
        let _ = std::fs::remove_file(path);
    }
    Ok(0)
}

async fn mock_fleet(args: MockFleetArgs) -> Result<u8, UsageError> {
    let (source, file) = match (&args.config, &args.preset) {
        (Some(path), _) => (path.display().to_string(), FleetFile::from_file(path)?),
        (None, Some(name)) => FleetFile::preset(name)?,
        (None, None) => return Err(UsageError("give --config FILE or --preset NAME".into())),
    };
    let seed = seed_or_clock(args.seed.or(file.seed));
    let agents = file.agents(&source, seed)?;
    check_outputs(&args.run.output)?;
    let driver = file
        .platform
        .as_ref()
        .map(|p| Driver::new(p, args.platform_token.clone()))
        .transpose()
        .map_err(|e| format!("{source}: {e}"))?;
    let advertise = args.advertise.clone().or(file.advertise.clone());
    if let Some(a) = &advertise {
        BaseUrl::parse(a).map_err(|e| format!("--advertise: {e}"))?;
    }
    let platform_timeout = args
        .run
        .platform_timeout
        .or(driver.as_ref().map(|d| d.timeout))
        .unwrap_or(Duration::from_secs(120));
    let settings = SessionSettings {
        agents,
        layout: file.layout,
        host: args.host.unwrap_or(file.host),
        port: args.port.unwrap_or(file.port),
        advertise,
        driver,
        platform_timeout,
        journal: args.run.journal.clone(),
        journal_body_cap: args.run.journal_body_cap,
        seed,
        serve_after: args.serve,
        strict: args.run.strict,
        banner: Banner::Fleet,
    };
    run_mock(settings, &args.run).await
}

/// Runs a mock session until it ends or is interrupted, then reports on the platform.
async fn run_mock(settings: SessionSettings, run: &MockRunArgs) -> Result<u8, UsageError> {
    let report = crate::mock::session::run(settings, shutdown_signal()).await?;
    crate::out!("{}", console::render(&report, console::want_colour()));
    write_reports(&report, &run.output)?;
    Ok(report.exit_code() as u8)
}

/// The behaviour catalogue as printed by `mock behaviors`.
pub fn list_behaviors() -> String {
    let mut out = String::from(
        "Behaviours (--behavior NAME[:ARGS][@ENDPOINT], comma-separated; fleet files: `behaviors:`)\n\n",
    );
    for (name, what, rule) in behavior::CATALOGUE {
        out.push_str(&format!(
            "  {name}\n      {what}\n      exercises: {rule}\n"
        ));
    }
    out
}

/// Completes on Ctrl-C or (on Unix) SIGTERM.
async fn shutdown_signal() {
    #[cfg(unix)]
    {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(s) => s,
                Err(_) => {
                    let _ = tokio::signal::ctrl_c().await;
                    return;
                }
            };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// The case list: `id  level  title` and the spec section under it, in suite order.
pub fn list_cases(suite: &Suite) -> String {
    let cases = suite.cases();
    let w = cases.iter().map(|c| c.id.value.len()).max().unwrap_or(0);
    let mut out = format!(
        "{} ({}, {} cases; spec {})\n",
        suite.file.title,
        suite.source,
        cases.len(),
        suite.file.spec
    );
    for case in cases {
        out.push_str(&format!(
            "  {:<w$}  {:<6}  {}\n  {:<w$}  {:<6}  spec: {}\n",
            case.id.value,
            case.level.as_str(),
            case.title,
            "",
            "",
            case.spec
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("120s"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("2"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_duration("1.5"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert!(parse_duration("0").unwrap_err().contains("more than zero"));
        assert!(parse_duration("soon")
            .unwrap_err()
            .contains("expected e.g."));
        assert!(parse_duration("-3").is_err());
    }

    #[test]
    fn byte_counts() {
        assert_eq!(parse_bytes("5000000"), Ok(5_000_000));
        assert_eq!(parse_bytes("5MB"), Ok(5_000_000));
        assert_eq!(parse_bytes("5MiB"), Ok(5 << 20));
        assert_eq!(parse_bytes("512k"), Ok(512_000));
        assert!(parse_bytes("5 parsecs")
            .unwrap_err()
            .contains("unknown unit"));
        assert!(parse_bytes("lots")
            .unwrap_err()
            .contains("not a byte count"));
        assert!(parse_bytes("0").is_err());
    }

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
    }

    #[test]
    fn the_command_line_is_well_formed() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
