//! execute_task on the command line (`probe execute-task`, `suites list`, `mock agent
//! --scenario`) and in the self-test: the mock agent over stdio probed, and the behaviour matrix
//! (`mocks/matrix-execute-task.yaml`) over HTTP, stdio and TCP.

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use clap::{Args, FromArgMatches, ValueEnum};
use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use super::probe::{Target, TaskSettings};
use super::reference::TaskAgent;
use super::scenario::Scenario;
use super::{Agents, NAME};
use crate::error::{Class, Error};
use crate::mock::agent::{MockAgent, Profile};
use crate::mock::behavior::{self, For};
use crate::mock::fleet::{self};
use crate::mock::line_server::LineService;
use crate::mock::Responder;
use crate::probe::args::{api_key, KeyArgs, RunArgs};
use crate::protocols::plugin::{
    check_served_behavior, driver_probe, BehaviorError, Capabilities, MatrixRow, OnCase, ProbeJob,
    Protocol, ProtocolCommand, Selftest, SelftestRun, ServedAgents, SettingsError, UserFile,
};
use crate::report::output::OutputArgs;
use crate::report::Report;
use crate::text::shell_quote;
use crate::transport::http::BaseUrl;
use crate::transport::socket::{SocketAddrSpec, SocketMode};
use crate::transport::stdio::{split_command, StdioConfig, StdioMode};

/// execute_task in the registry.
pub struct ExecuteTask;

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

/// `probe execute-task`'s flags.
#[derive(Debug, Clone, Args)]
#[command(group(clap::ArgGroup::new("agent").required(true).args(["url", "stdio", "tcp", "unix"])))]
#[command(mut_arg("timeout", |a| a.help(
    "Deadline of each turn: a request to the agent and its whole answer (an HTTP response, a \
     JSON line on stdio or a socket), from connect or write to the last byte (e.g. 120s, 2m, \
     500ms, 30). A turn takes at most this plus 8 s: an agent never heard from is given half of \
     it and 1 s more (4 s at most), then 2 s to write what it holds once its input ends (is \
     stdout flushed?)"
)))]
pub struct TaskProbeArgs {
    /// The agent's base URL: requests go to POST {URL}/execute_task.
    #[arg(long, value_name = "URL")]
    pub url: Option<String>,
    /// The agent's command, run directly (never through a shell): JSON lines on stdin/stdout.
    #[arg(long, value_name = "CMD")]
    pub stdio: Option<String>,
    /// With --stdio: one process for the whole run, or a process per turn.
    #[arg(long, value_enum, default_value = "persistent")]
    pub stdio_mode: StdioModeArg,
    /// A TCP agent: newline-delimited JSON on HOST:PORT, or on PORT of 127.0.0.1.
    #[arg(long, value_name = "[HOST:]PORT", value_parser = crate::units::parse_tcp)]
    pub tcp: Option<crate::units::TcpEndpoint>,
    /// A Unix-socket agent: newline-delimited JSON.
    #[arg(long, value_name = "PATH")]
    pub unix: Option<PathBuf>,
    /// With --tcp or --unix: one connection for the whole run, or a connection per call.
    #[arg(long, value_enum, default_value = "persistent")]
    pub socket_mode: SocketModeArg,
    /// Scenario files (suites/execute_task/*.yaml); default: the built-in scenarios.
    #[arg(long, value_name = "FILE", num_args = 1..)]
    pub scenario: Vec<PathBuf>,
    /// Turn limit of every scenario (default: each scenario's, 5 unless it says otherwise).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub max_turns: Option<u32>,
    /// Fail the run when the evaluation score (the scenarios' expectations met, 0 to 1) is
    /// below this (default: the score is reported, never failed).
    #[arg(long, value_name = "FRACTION", value_parser = parse_fraction)]
    pub min_score: Option<f64>,
    #[command(flatten)]
    pub key: KeyArgs,
    #[command(flatten)]
    pub run: RunArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// Scenario files, or the built-in scenarios when there are none.
fn scenarios(files: &[PathBuf]) -> Result<Vec<Scenario>, SettingsError> {
    if files.is_empty() {
        return Ok(Scenario::builtin());
    }
    files
        .iter()
        .map(|p| Scenario::from_file(p).map_err(SettingsError::named))
        .collect()
}

/// Raw execute-task flags → validated settings.
pub fn task_settings(args: &TaskProbeArgs) -> Result<TaskSettings, SettingsError> {
    let target = if let Some(url) = &args.url {
        Target::Http {
            base: BaseUrl::parse(url).map_err(|e| format!("--url: {e}"))?,
            api_key: api_key(args.key.api_key.clone()).map_err(|e| e.to_string())?,
        }
    } else if let Some(cmd) = &args.stdio {
        let mode = match args.stdio_mode {
            StdioModeArg::Persistent => StdioMode::Persistent,
            StdioModeArg::PerTurn => StdioMode::PerTurn,
        };
        let mut config = StdioConfig::new(cmd.clone(), mode);
        config.max_line = args.run.max_body;
        split_command(cmd).map_err(|e| format!("--stdio: {e}"))?;
        Target::Stdio(config)
    } else {
        let addr = match (&args.tcp, &args.unix) {
            (Some(a), _) => SocketAddrSpec::Tcp(a.host_port("127.0.0.1")),
            (None, Some(p)) => SocketAddrSpec::Unix(p.clone()),
            (None, None) => return Err("give --url, --stdio, --tcp or --unix".into()),
        };
        let mode = match args.socket_mode {
            SocketModeArg::Persistent => SocketMode::Persistent,
            SocketModeArg::PerCall => SocketMode::PerCall,
        };
        Target::Socket { addr, mode }
    };
    let mut settings = TaskSettings::new(target, scenarios(&args.scenario)?, &args.run);
    settings.max_turns = args.max_turns;
    settings.min_score = args.min_score;
    Ok(settings)
}

/// `--min-score`: a fraction from 0 to 1 (`0.9`), or a percentage (`90%`).
fn parse_fraction(text: &str) -> Result<f64, String> {
    let (number, scale) = match text.trim().strip_suffix('%') {
        Some(n) => (n, 100.0),
        None => (text.trim(), 1.0),
    };
    number
        .trim()
        .parse::<f64>()
        .ok()
        .map(|n| n / scale)
        .filter(|f| (0.0..=1.0).contains(f))
        .ok_or_else(|| {
            format!("{text:?}: expected a fraction from 0 to 1 (0.9) or a percentage (90%)")
        })
}

const ABOUT: &str =
    "The execute_task protocol: we play the evaluation harness (HTTP, stdio or a socket).";

/// The files a user writes for it, as the fuzz targets feed them.
const FILES: &[UserFile] = &[
    UserFile {
        suite: true,
        parse: |source, text| {
            UserFile::parsed(crate::probe::Suite::parse(
                source,
                text,
                &super::rules::Suite,
            ))
        },
    },
    UserFile {
        suite: false,
        parse: |source, text| UserFile::parsed(Scenario::parse(source, text)),
    },
];

impl Protocol for ExecuteTask {
    fn name(&self) -> &'static str {
        NAME
    }

    fn about(&self) -> &'static str {
        ABOUT
    }

    fn spec(&self) -> crate::specs::SpecDoc {
        crate::specs::SpecDoc {
            file: "execute-task-agent-api.md",
            title: "Agent API Specification",
            // The document gives no version or date.
            version: None,
        }
    }

    fn schema_dir(&self) -> Option<&'static str> {
        Some("execute_task")
    }

    fn list_cases(&self, file: Option<&Path>) -> Result<String, Error> {
        let scenarios = match file {
            Some(path) => vec![Scenario::from_file(path)?],
            None => Scenario::builtin(),
        };
        Ok(super::probe::list_cases(&scenarios)?)
    }

    fn case_ids(&self) -> Result<Vec<String>, Error> {
        Ok(super::probe::case_ids(&Scenario::builtin())?)
    }

    fn catalogue(&self) -> Result<Vec<crate::protocols::plugin::CaseInfo>, Error> {
        super::catalogue::catalogue()
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            probes: &[&TaskProbe],
            agents: Some(ServedAgents {
                agents: &Agents,
                with_scenarios: Some(with_scenarios),
            }),
            files: FILES,
            traffic_suite: Some(super::rules::suite),
            ..Capabilities::none(&TaskSelftest)
        }
    }
}

/// The scripted agent, knowing the built-in scenarios and the user's.
fn with_scenarios(name: &str, files: &[PathBuf]) -> Result<Box<dyn Responder>, Error> {
    let mut all = Scenario::builtin();
    for path in files {
        all.push(Scenario::from_file(path)?);
    }
    Ok(Box::new(TaskAgent::with_scenarios(name, &all)))
}

/// `probe execute-task`.
struct TaskProbe;

impl ProtocolCommand<ProbeJob> for TaskProbe {
    fn command(&self) -> clap::Command {
        // The subcommand's help is the protocol's line, not the flags struct's doc comment.
        TaskProbeArgs::augment_args(clap::Command::new(NAME)).about(ABOUT)
    }

    fn run(&self, matches: &clap::ArgMatches) -> Result<ProbeJob, Error> {
        let flags = TaskProbeArgs::from_arg_matches(matches)?;
        // The case ids depend on the scenarios the flags name.
        let ids = super::probe::case_ids(&task_settings(&flags)?.scenarios)?;
        let job = |s: TaskSettings, on: OnCase| async move { super::probe::run(&s, &*on).await };
        driver_probe(
            matches,
            task_settings,
            |f: TaskProbeArgs| f.output,
            &ids,
            TaskSettings::wants,
            job,
        )
    }
}

/// execute_task's self-test and matrix.
struct TaskSelftest;

impl Selftest for TaskSelftest {
    /// The mock agent over stdio, as a harness author would run it, probed with the built-in
    /// scenarios.
    fn run<'a>(&'a self, at: SelftestRun<'a>) -> BoxFuture<'a, Result<Report, Error>> {
        Box::pin(async move {
            let seed = at.seed;
            let command = format!(
                "{} mock agent --protocol execute-task --stdio --name selftest-agent --seed {seed}",
                shell_quote(&at.exe.display().to_string())
            );
            crate::errln!("execute_task agent over stdio: {command}");
            let target = Target::Stdio(StdioConfig::new(command, StdioMode::Persistent));
            let mut settings = TaskSettings::new(target, Scenario::builtin(), at.run);
            settings.seed = seed;
            settings.timeout = settings.timeout.min(Duration::from_secs(30));
            super::probe::run(&settings, &|_| {}).await
        })
    }

    fn matrix(&self) -> (&'static str, &'static str) {
        (
            "mocks/matrix-execute-task.yaml",
            include_str!("../../../mocks/matrix-execute-task.yaml"),
        )
    }

    fn check_behavior(&self, behavior: &str, transport: &str) -> Result<(), BehaviorError> {
        check_served_behavior(&Agents, behavior, transport)
    }

    /// A mock agent with the row's behaviour over HTTP, a TCP port or stdio (a process of the
    /// running binary), probed with the built-in scenarios.
    fn matrix_row<'a>(&'a self, row: MatrixRow<'a>) -> BoxFuture<'a, Result<Report, Error>> {
        Box::pin(async move {
            let items = behavior::parse_list(
                row.behavior,
                For {
                    protocol: &Agents,
                    others: &[],
                },
            )?;
            let scenarios = Scenario::builtin();
            let agent = || {
                let profile = Profile {
                    name: "matrix-agent".into(),
                    domain: "general review".into(),
                    capabilities: Vec::new(),
                    api_key: None,
                };
                let reference = Box::new(TaskAgent::with_scenarios("matrix-agent", &scenarios));
                MockAgent::with_responder(&Agents, profile, items.clone(), row.seed, reference)
            };
            let stop = CancellationToken::new();
            let mut http = None;
            let target = match row.transport {
                "http" => {
                    let served = fleet::serve_one(agent(), row.timeout).await?;
                    let base = BaseUrl::parse(&served.urls[0]).map_err(Error::as_run)?;
                    http = Some(served);
                    Target::Http {
                        base,
                        api_key: None,
                    }
                }
                "tcp" => {
                    let listener = tokio::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
                        .await
                        .map_err(|e| Error::io(Class::Run, "", e))?;
                    let addr = listener
                        .local_addr()
                        .map_err(|e| Error::io(Class::Run, "", e))?;
                    let expect = crate::mock::protocol::PlatformExpect::timeout(row.timeout);
                    tokio::spawn(crate::mock::line_server::serve_tcp(
                        Arc::new(LineService::judged(agent(), &expect)),
                        listener,
                        stop.clone(),
                    ));
                    Target::Socket {
                        addr: SocketAddrSpec::Tcp(addr.to_string()),
                        mode: SocketMode::Persistent,
                    }
                }
                "stdio" | "stdio-per-turn" => {
                    let command = format!(
                        "{} mock agent --protocol execute-task --stdio --name matrix-agent --seed {} --behavior {}",
                        shell_quote(&row.exe.display().to_string()),
                        row.seed,
                        shell_quote(row.behavior)
                    );
                    let mode = if row.transport == "stdio" {
                        StdioMode::Persistent
                    } else {
                        StdioMode::PerTurn
                    };
                    Target::Stdio(StdioConfig::new(command, mode))
                }
                other => {
                    return Err(Error::usage(format!(
                        "{}: no transport {other:?}",
                        row.behavior
                    )))
                }
            };
            let settings = TaskSettings {
                target,
                timeout: row.timeout,
                max_body: 5_000_000,
                max_turns: None,
                scenarios,
                seed: row.seed,
                only: row.only.to_vec(),
                strict: false,
                min_score: None,
                tape: Default::default(),
            };
            let report = super::probe::run(&settings, &|_| {}).await;
            stop.cancel();
            if let Some(served) = http {
                served.stop(Duration::from_millis(500)).await;
            }
            report
        })
    }
}
