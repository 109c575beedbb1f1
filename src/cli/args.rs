//! The command line's flags: the clap definitions. A protocol's own subcommands (`probe NAME`,
//! `lint WHAT`) come from the registry ([`RoleCommand`]).

use std::ffi::OsString;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use clap::builder::PossibleValuesParser;
use clap::{Args, FromArgMatches, Parser, Subcommand};

pub use super::roles::*;

use crate::probe::args::{RunArgs, SuiteArgs};
use crate::protocols;
use crate::report::output::OutputArgs;
use crate::units::{parse_bytes, parse_duration, parse_host};

#[derive(Debug, Parser)]
#[command(
    name = "agent-tck",
    version,
    long_version = long_version(),
    about = "Conformance test kit and mock agent simulator for agent protocols",
    max_term_width = 100
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// `agent-tck --version`: the kit's version (the first line, as `-V` gives it alone), then a line
/// per protocol naming the spec it judges by: `roundtable: specs/FILE ("Title"), no version
/// given, sha256 DIGEST`, the digest whole, as a report's files give it.
pub fn long_version() -> String {
    let mut text = crate::VERSION.to_string();
    for p in protocols::REGISTRY {
        let by = p.spec().judged_by(p.name());
        text.push_str(&format!(
            "\n{}: {} (\"{}\"), {}, sha256 {}",
            by.protocol,
            by.file,
            by.title,
            by.version_text(),
            by.sha256
        ));
    }
    text
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Play the platform: certify a real agent against a protocol's suite.
    Probe(ProbeCommand),
    /// Play the other side: mock agents for a platform to talk to (or a mock Librarian for agent
    /// clients), judging it from what it sends.
    #[command(subcommand)]
    Mock(Box<MockCommand>),
    /// Stand between a real platform and its real agents: pass each request on to the agent
    /// and its answer back (with --fault, bent as a mock agent's would be), judging the
    /// platform by the platform rules and each agent by the agent rules, from the live traffic;
    /// Ctrl-C, --duration or --deliberations end it and write the reports.
    Proxy(Box<ProxyArgs>),
    /// Judge a recording of `proxy --record FILE` again, with no platform and no agent running:
    /// the same rules, the same verdicts as the live run.
    Judge(JudgeArgs),
    /// Send a recording's requests (`proxy --record FILE`) again to another version of an agent:
    /// its new answers judged by the agent rules, and what changed from the recorded ones (the
    /// verdicts, as `report diff` shows them, and the answers' fields).
    Replay(ReplayArgs),
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
    /// Explain a case or lint rule (`explain platform.phases-continue`): the rule, the spec's
    /// clause with its section, why it matters, a failing and a passing exchange, the mock
    /// behaviour that breaks it, and what to fix. Every id: `suites list`.
    Explain {
        /// The case id as a report gives it (`vote.dissent-reason`), or a lint rule's.
        id: String,
    },
    /// The JSON Schemas built into the binary.
    #[command(subcommand)]
    Schemas(SchemasCommand),
    /// Expected failures (`--baseline FILE` on every command that reports).
    #[command(subcommand)]
    Baseline(BaselineCommand),
    /// JSON reports read back: merged (shards, protocols, targets) or compared.
    #[command(subcommand)]
    Report(ReportCommand),
    /// Print a shell completion script (commands, flags, protocols, behaviour and preset names).
    ///
    /// Installed for your user:
    /// - bash: `agent-tck completions bash > ~/.local/share/bash-completion/completions/agent-tck`
    /// - zsh: `agent-tck completions zsh > ~/.zfunc/_agent-tck`, with `fpath=(~/.zfunc $fpath)` before
    ///   `compinit` in `~/.zshrc`
    /// - fish: `agent-tck completions fish > ~/.config/fish/completions/agent-tck.fish`
    #[command(verbatim_doc_comment)]
    Completions {
        /// The shell the script is for.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Write the man pages (agent-tck.1 and one per subcommand, agent-tck-probe.1, …) into DIR.
    Manpages {
        /// The folder to write them in (created when missing).
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
        /// The JSON reports (`--json` files) to merge, in order; an empty shard is ignored.
        #[arg(required = true, value_name = "REPORT")]
        reports: Vec<PathBuf>,
        #[command(flatten)]
        output: OutputArgs,
    },
    /// Compare two runs case by case: regressions (failing the run now, not before), fixes, new
    /// warnings, new and removed cases; exit 1 on a regression.
    Diff {
        /// The earlier run's JSON report (`--json`).
        #[arg(value_name = "OLD")]
        old: PathBuf,
        /// The later run's JSON report, compared with OLD.
        #[arg(value_name = "NEW")]
        new: PathBuf,
    },
}

/// `--protocol NAME`: any registered protocol.
pub(super) fn protocol_names() -> PossibleValuesParser {
    PossibleValuesParser::new(protocols::names())
}

/// `mock agents --protocol NAME`: a protocol that writes sets of mock agents.
fn agent_set_protocols() -> PossibleValuesParser {
    PossibleValuesParser::new(protocols::agent_set_protocols())
}

/// `mock agents --protocol`'s default: the first protocol that writes sets of mock agents.
fn first_agent_set_protocol() -> &'static str {
    protocols::agent_set_protocols()
        .first()
        .copied()
        .unwrap_or_default()
}

/// `suites list --protocol`: the registered names, and `common`.
fn list_protocol_names() -> PossibleValuesParser {
    let mut names = protocols::names();
    names.push(crate::explain::COMMON);
    PossibleValuesParser::new(names)
}

/// `mock fleet --preset`'s help: the built-in fleets of every protocol in the registry.
fn preset_help() -> String {
    format!(
        "A built-in fleet (the files of mocks/): {}",
        protocols::preset_names().join(", ")
    )
}

/// A flag whose value the command checks itself (a behaviour list, a preset: its error has the
/// command's own "did you mean"), offering `names` (name, what it is) to the shell's completion.
#[derive(Clone)]
pub(super) struct Offers(fn() -> Vec<(&'static str, &'static str)>);

impl clap::builder::TypedValueParser for Offers {
    type Value = String;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<String, clap::Error> {
        clap::builder::StringValueParser::new().parse_ref(cmd, arg, value)
    }

    fn possible_values(
        &self,
    ) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        // A double quote in a value's description breaks clap_complete's fish script (it
        // writes the values inside double quotes, unescaped): a single one says the same.
        Some(Box::new((self.0)().into_iter().map(|(name, what)| {
            clap::builder::PossibleValue::new(name).help(what.replace('"', "'"))
        })))
    }
}

/// `--preset`'s names for completion: every protocol's built-in fleets.
fn preset_names() -> Vec<(&'static str, &'static str)> {
    protocols::REGISTRY
        .iter()
        .flat_map(|p| p.capabilities().fleet_presets)
        .map(|(name, file, _)| (*name, *file))
        .collect()
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
    #[command(visible_alias = "behaviours")]
    Behaviors,
    /// A protocol's own mock (`mock NAME`), declared in its [`Capabilities`](
    /// crate::protocols::Capabilities).
    #[command(flatten)]
    Protocol(MockProtocolCommand),
    /// The child a stdio mock with `forks-and-exits` leaves behind, run by the mock itself: not
    /// in [`Cli::command`] (whose tree the help, completions and man pages are made from: the
    /// completion scripts list even a hidden subcommand), only in [`Cli::command_line`], hidden.
    #[command(skip)]
    Linger(LingerArgs),
}

/// `mock linger`'s flags: the reports of the stdio mock agent that left the child behind.
#[derive(Debug, Clone, Args)]
pub struct LingerArgs {
    /// The agent's JSON report, which the child's verdict is written into.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// The agent's JUnit report, which the child's verdict is written into.
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
}

impl Cli {
    /// The command line as parsed: [`Cli::command`] with the internal `mock linger`, hidden.
    pub fn command_line() -> clap::Command {
        use clap::CommandFactory;
        let linger = LingerArgs::augment_args(clap::Command::new("linger"))
            .about("The child a stdio mock with `forks-and-exits` leaves behind (run by the mock itself)")
            .hide(true);
        Cli::command().mut_subcommand("mock", |mock| mock.subcommand(linger))
    }

    /// Parses `args` (the program's name first) as [`Cli::command_line`] reads them.
    pub fn parse_args<I, T>(args: I) -> Result<Cli, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<OsString> + Clone,
    {
        let mut command_line = Cli::command_line();
        let matches = command_line.try_get_matches_from_mut(args)?;
        let linger = matches
            .subcommand_matches("mock")
            .and_then(|mock| mock.subcommand_matches("linger"));
        let parsed = match linger {
            Some(linger) => LingerArgs::from_arg_matches(linger).map(|args| Cli {
                command: Command::Mock(Box::new(MockCommand::Linger(args))),
            }),
            None => Cli::from_arg_matches(&matches),
        };
        parsed.map_err(|e| e.format(&mut command_line))
    }
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
    // `--quiet` is the output's ([`OutputArgs::quiet`]), as on every command that reports.
    #[command(flatten)]
    pub output: OutputArgs,
}

impl MockRunArgs {
    /// What the platform is expected to do: the flags, or `file_timeout` (a fleet file's
    /// `platform.timeout`), or 120 s.
    pub(super) fn expect(
        &self,
        file_timeout: Option<Duration>,
    ) -> crate::mock::protocol::PlatformExpect {
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
    pub(super) fn log_requests(&self) -> bool {
        use std::io::IsTerminal;
        !self.output.quiet
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
    // The help lists the registry's presets: a doc comment would be a literal list.
    #[arg(
        long,
        value_name = "NAME",
        help = preset_help(),
        value_parser = Offers(preset_names),
        hide_possible_values = true
    )]
    pub preset: Option<String>,
    /// Address to bind, an IP address or a host name (overrides the file's `host`).
    #[arg(long, value_parser = parse_host)]
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
    // The protocols' own (`--registry` of a Librarian fleet).
    #[command(flatten)]
    pub protocol_flags: ProtocolFlags<FleetFlagsOf>,
    /// Keep serving after the triggers are done, until interrupted.
    #[arg(long)]
    pub serve: bool,
    /// Give up on a deliberation's answer after DUR (e.g. 60s) instead of 3 × platform.timeout +
    /// margin (overrides the file's platform.trigger.deadline): a stuck deliberation fails
    /// platform.deliberation-deadline and the run ends, without waiting out the platform.
    #[arg(long, value_name = "DUR")]
    pub deliberation_deadline: Option<String>,
    /// Serve only the share K of N of the fleet's agents (by a hash of each name: the same on
    /// every host), for a fleet bigger than one host.
    #[arg(long, value_name = "K/N")]
    pub shard: Option<String>,
    /// A fleet whose server must be configured with its agents (protocol: connector): print the
    /// definitions (written too with --write-config) and exit, without running the fleet.
    #[arg(long)]
    pub print_config: bool,
    /// Print the fleet file as it is and exit, running nothing: a preset's YAML, built into the
    /// binary, to copy and edit (`mock fleet --preset chaos --print-file > my-fleet.yaml`, then
    /// `--config my-fleet.yaml`).
    #[arg(long)]
    pub print_file: bool,
    /// Write the definitions the server must be configured with to FILE (JSON: for `ws:
    /// document` a list of agent definitions; for `ws: assistant-v5` and `ws: auto` (the
    /// default) a config file the public server loads, the list as its `agents`).
    #[arg(long, value_name = "FILE")]
    pub write_config: Option<PathBuf>,
    /// How long to wait, before driving, for the server to know the fleet's agent ids (a
    /// session create for each succeeds) (default 60s).
    #[arg(long, value_name = "DUR", value_parser = parse_duration)]
    pub wait_ready: Option<Duration>,
    #[command(flatten)]
    pub run: MockRunArgs,
}

impl MockFleetArgs {
    /// The first flag given that only a fleet configuring its server takes.
    pub(super) fn server_setup_flag(&self) -> Option<&'static str> {
        [
            (self.print_config, "--print-config"),
            (self.write_config.is_some(), "--write-config"),
            (self.wait_ready.is_some(), "--wait-ready"),
        ]
        .into_iter()
        .find_map(|(given, flag)| given.then_some(flag))
    }
}

#[derive(Debug, Clone, Args)]
#[command(mut_arg("quiet", |a| a.help(
    "Print no line per request served, and only the end of the console report when the agent \
     stops (its notes, counts and verdict line), no line per case. The files (--json, --junit, \
     --html) hold every case"
)))]
pub struct MockAgentArgs {
    /// The protocol the agent speaks (librarian, connector: their reference peer, the Librarian
    /// or the external agent, for `probe librarian|connector` to be tried on).
    #[arg(long, default_value = protocols::names()[0], value_parser = protocol_names())]
    pub protocol: String,
    /// Address to bind, an IP address or a host name (loopback unless told otherwise).
    #[arg(long, default_value = "127.0.0.1", value_parser = parse_host)]
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
    /// repeatable, the lists adding up (a wrapper script's list, and one more). For librarian
    /// and connector: flaws of the reference peer served (listed under each protocol there).
    #[arg(
        long,
        visible_alias = "behaviour",
        value_name = "LIST",
        default_value = "conforming",
        action = clap::ArgAction::Append,
        value_parser = Offers(super::behaviors::names),
        hide_possible_values = true
    )]
    pub behavior: Vec<String>,
    /// Answer on stdin/stdout (protocols served over lines, e.g. execute-task; a request ends at
    /// a newline or at end of input).
    #[arg(long, conflicts_with_all = ["tcp", "unix"])]
    pub stdio: bool,
    /// Serve newline-delimited JSON over TCP: on PORT of --host, or on HOST:PORT (0: the OS
    /// picks the port, and it is printed).
    #[arg(
        long,
        value_name = "[HOST:]PORT",
        conflicts_with = "unix",
        value_parser = crate::units::parse_tcp
    )]
    pub tcp: Option<crate::units::TcpEndpoint>,
    /// Serve newline-delimited JSON on this Unix socket.
    #[arg(long, value_name = "PATH")]
    pub unix: Option<PathBuf>,
    /// execute-task: scenario files whose tasks the agent follows a script for (besides the
    /// built-in scenarios): the tools each expects, then the ending it accepts.
    #[arg(long, value_name = "FILE", num_args = 1..)]
    pub scenario: Vec<PathBuf>,
    // The protocols' own (those of a command agent: `--mode`, `--task`, …).
    #[command(flatten)]
    pub protocol_flags: ProtocolFlags<AgentFlags>,
    #[command(flatten)]
    pub run: MockRunArgs,
}

#[derive(Debug, Clone, Args)]
pub struct MockAgentsArgs {
    /// The protocol of the agents (one whose mock agents come in sets).
    #[arg(long, default_value = first_agent_set_protocol(), value_parser = agent_set_protocols())]
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
#[command(mut_arg("timeout", |a| a.help(
    "Deadline of each exchange with the agents the self-test probes (a request and its answer, \
     a turn, a run of a command agent), from connect to the last byte (e.g. 120s, 2m, 500ms, 30)"
)))]
#[command(mut_arg("quiet", |a| a.help(
    "Print only the end of each reference agent's report (its notes, counts and verdict line) and \
     no table of the probes against the mock behaviours; the closing verdict line stays. The \
     files (--json, --junit, --html) hold every case and every row"
)))]
// A probe's --record and --replay are one run's exchanges; the self-test runs many probes at
// once, so it takes neither (hidden here, refused if given).
#[command(mut_arg("record", |a| a.hide(true)))]
#[command(mut_arg("replay", |a| a.hide(true)))]
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
    /// Print every case of every protocol, in every role (probe, mock, lint, orchestration,
    /// run): id, level, title, spec section.
    List {
        /// Only this protocol's cases (`common`: the ones any protocol can report).
        #[arg(long, value_parser = list_protocol_names())]
        protocol: Option<String>,
        /// Only the cases of this level.
        #[arg(long, value_parser = ["must", "should", "may", "eval"])]
        level: Option<String>,
        /// Only the cases of this role: probe (the kit judges an agent), mock (it judges a
        /// platform), lint, orchestration, run (the run itself, liveness).
        #[arg(long, value_parser = ["probe", "mock", "lint", "orchestration", "run"])]
        role: Option<String>,
        /// List this suite file instead (of --protocol; default: the first protocol's).
        #[arg(long, value_name = "FILE", conflicts_with_all = ["level", "role"])]
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

/// clap's error as one line: its first line, without the `error: ` prefix, and the command
/// whose --help to read (the usage line's, else the subcommands `argv` names).
pub fn clap_error_line(e: &clap::Error, argv: &[OsString]) -> String {
    one_line(e, || {
        std::iter::once("agent-tck".to_string())
            .chain(typed_subcommands(argv))
            .collect::<Vec<_>>()
            .join(" ")
    })
}

/// [`clap_error_line`] without the command line: the usage line's command, else `agent-tck`.
pub fn clap_one_line(e: &clap::Error) -> String {
    one_line(e, || "agent-tck".into())
}

/// The subcommands `argv` (the program's name first) names: `mock`, `agent` of `agent-tck mock
/// agent --host x` (an invalid value's error has no usage line to name them).
pub(super) fn typed_subcommands(argv: &[OsString]) -> Vec<String> {
    use clap::CommandFactory;
    let mut cmd = Cli::command();
    let mut path = Vec::new();
    for word in argv.iter().skip(1) {
        let Some(sub) = word.to_str().and_then(|w| cmd.find_subcommand(w)) else {
            break;
        };
        path.push(sub.get_name().to_string());
        let next = sub.clone();
        cmd = next;
    }
    path
}

fn one_line(e: &clap::Error, fallback: impl FnOnce() -> String) -> String {
    // clap's message is its first paragraph (a list of missing arguments runs over several
    // lines); the usage and tips that follow are left to --help.
    let text = e.render().to_string();
    let lines: Vec<&str> = text
        .lines()
        .skip_while(|l| l.trim().is_empty())
        .take_while(|l| !l.trim().is_empty())
        .map(str::trim)
        .collect();
    // clap's tips ("a similar subcommand exists: 'roundtable'") follow the message, each on its
    // own line: kept, since they are the fix.
    let tips: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("tip: "))
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
        .unwrap_or_else(fallback);
    let tips: String = tips.iter().map(|t| format!("; {t}")).collect();
    format!("{message}{tips} (see {command} --help)")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first registered protocol, whose probe takes `--url` (the registry's test keeps it so).
    fn first() -> &'static str {
        protocols::names()[0]
    }

    #[test]
    fn clap_errors_become_one_line() {
        let e = Cli::try_parse_from([
            "agent-tck",
            "probe",
            first(),
            "--url",
            "http://x",
            "--timeout",
            "soon",
        ])
        .unwrap_err();
        let line = clap_one_line(&e);
        assert!(!line.contains('\n'), "{line}");
        assert!(line.contains("--timeout"), "{line}");
        let e = Cli::try_parse_from(["agent-tck", "probe", first()]).unwrap_err();
        assert!(clap_one_line(&e).contains("--url"), "{}", clap_one_line(&e));
        assert!(
            clap_one_line(&e).ends_with(&format!("(see agent-tck probe {} --help)", first())),
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
            for sub in p.capabilities().probes {
                let name = sub.command().get_name().to_string();
                assert!(probe.find_subcommand(&name).is_some(), "{name}");
            }
        }
        // The second protocol's probe too: each is found by its own name.
        let second = protocols::names()[1];
        let parsed =
            Cli::try_parse_from(["agent-tck", "probe", second, "--url", "http://x"]).expect(second);
        match parsed.command {
            Command::Probe(p) => assert_eq!(p.protocol, second),
            other => panic!("{other:?}"),
        }
    }
}

/// `agent-tck proxy`.
#[derive(Debug, Clone, Args)]
pub struct ProxyArgs {
    /// The protocol the platform and its agents speak.
    #[arg(long, default_value = protocols::names()[0], value_parser = protocol_names())]
    pub protocol: String,
    /// Where the proxy listens (HOST:PORT; port 0: the OS picks). The platform is given
    /// `http://HOST:PORT/agents/NAME` for each agent.
    #[arg(long, value_name = "HOST:PORT", default_value = "127.0.0.1:8700")]
    pub listen: SocketAddr,
    /// A real agent: its name (the proxy's path for it) and its own base URL. Repeatable; at
    /// least one, for a protocol whose agents the platform calls.
    #[arg(long = "agent", value_name = "NAME=URL")]
    pub agents: Vec<String>,
    /// The real server, for a protocol whose platform is a server its agents call (the
    /// Librarian): the agents are given the proxy's URL in place of this one, and each is
    /// judged as a client (named by its agent_id, or its --agent-key).
    #[arg(long, value_name = "URL")]
    pub server: Option<String>,
    /// Be the harness's agent command instead (execute-task): start CMD (split like a shell
    /// would, run directly) and relay the harness's stdin to it and its stdout back, byte for
    /// byte, judging both sides; exit with the agent's status. Its agent is named `stdio`.
    #[arg(long, value_name = "CMD")]
    pub stdio: Option<String>,
    /// An agent's API key: the platform's `Authorization: Bearer` to it is judged against it
    /// (without it, the bearer rules are not judged for that agent); before a server, the
    /// client's own bearer to the server is. Repeatable; never shown.
    #[arg(long = "agent-key", value_name = "NAME=KEY", hide_env_values = true)]
    pub agent_keys: Vec<String>,
    /// A fault on an agent's real answers: one of the mock's behaviours (`agent-tck mock
    /// behaviors`), at an endpoint or all, on a share of the answers (`beta=null-bytes@analyze`,
    /// `alpha=slow:3s:50%`); with `request:` before the behaviour, on the platform's requests
    /// to it instead (`beta=request:malformed-json@analyze`: malformed-json, null-bytes,
    /// injection, oversized-field, missing-field, slow, hang, reset). Before a server
    /// (--server): a fault on the server's answers to client NAME (`all`: every client),
    /// `NAME=FAULT[@PATH][:P%]`, FAULT one of 429:SECS, 500, malformed-json, slow:DUR, reset,
    /// silent-429 (`all=500@/agent/request:10%`). The connector: `NAME=FAULT[@PATH][:P%]`,
    /// FAULT one of slow-ack[:DUR], error-ack[:STATUS], fault:reset|close|garbage|hang (its
    /// acknowledgements), empty-callback, whitespace-callback (its callbacks' bodies), PATH
    /// the agent's (`alpha=empty-callback@/v1:25%`). Repeatable.
    #[arg(
        long = "fault",
        value_name = "NAME=[request:]BEHAVIOUR[@ENDPOINT][:P%]"
    )]
    pub faults: Vec<String>,
    /// Each agent answer must come within this (the agent rules' timeout, as `probe --timeout`).
    #[arg(long, value_name = "DUR", default_value = "120s", value_parser = parse_duration)]
    pub timeout: Duration,
    /// The platform's own per-request timeout: a platform that waits longer for a slow or
    /// hanging agent is told so (default 120s).
    #[arg(long, visible_alias = "expect-timeout", value_name = "DUR", value_parser = parse_duration)]
    pub platform_timeout: Option<Duration>,
    /// The platform's turn limit (protocols with turns, e.g. execute-task): a conversation
    /// that goes past it fails (default: 5 is a SHOULD; a MUST only that there is a limit).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub expect_max_turns: Option<u32>,
    /// The largest answer body the agent rules accept (as `probe --max-body`).
    #[arg(long, value_name = "BYTES", default_value = "5MB", value_parser = parse_bytes)]
    pub max_body: usize,
    /// End the run after this long (default: at Ctrl-C).
    #[arg(long, value_name = "DUR", value_parser = parse_duration)]
    pub duration: Option<Duration>,
    /// End the run once this many deliberations reached the protocol's last phase and every
    /// exchange is answered.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub deliberations: Option<u64>,
    /// Record every exchange to FILE as it ends, secrets masked: HAR 1.2 for a name ending in
    /// `.har` (browsers, Redocly and mitmproxy read it), JSON lines otherwise. `agent-tck judge
    /// FILE` judges it again.
    #[arg(long, value_name = "FILE")]
    pub record: Option<PathBuf>,
    /// Seed of the faults' random choices (default: from the clock; printed).
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// SHOULD failures fail the run.
    #[arg(long)]
    pub strict: bool,
    /// A line per exchange on stdout.
    #[arg(long)]
    pub log: bool,
    /// When the agents' answers are judged: `every` answer before it is passed on (under a
    /// flood, the platform waits for the judge), or on `spare` CPU beside the traffic (answers
    /// past what the judge keeps up with are passed on unjudged, and each case counts them).
    #[arg(long, value_enum, default_value_t = crate::proxy::judging::Judging::Every)]
    pub judging: crate::proxy::judging::Judging,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// `agent-tck judge`.
#[derive(Debug, Clone, Args)]
pub struct JudgeArgs {
    /// The recording (`proxy --record FILE`: HAR 1.2 or JSON lines).
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// The protocol (default: the one the recording names).
    #[arg(long, value_parser = protocol_names())]
    pub protocol: Option<String>,
    /// SHOULD failures fail the run.
    #[arg(long)]
    pub strict: bool,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// `agent-tck replay`.
#[derive(Debug, Clone, Args)]
pub struct ReplayArgs {
    /// The recording (`proxy --record FILE`).
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// An agent of the recording and the URL of its new version: its recorded requests are sent
    /// there. Repeatable.
    #[arg(long = "agent", value_name = "NAME=URL", required = true)]
    pub agents: Vec<String>,
    /// The agent's API key, sent where the recording had one (a recording never holds it).
    /// Repeatable; never shown.
    #[arg(long = "agent-key", value_name = "NAME=KEY", hide_env_values = true)]
    pub agent_keys: Vec<String>,
    /// SHOULD failures fail the run.
    #[arg(long)]
    pub strict: bool,
    #[command(flatten)]
    pub output: OutputArgs,
}
