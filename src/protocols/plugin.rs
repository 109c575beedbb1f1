//! What a protocol gives the command line and the self-test: its identity ([`Protocol`]) and
//! its [`Capabilities`], each a small trait ([`ProtocolCommand`] for `probe` and `lint`,
//! [`CommandAgents`], [`ClientFleet`], [`Selftest`]); and what they give it back: a probe job, a
//! self-test's settings, a matrix row.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;

use crate::error::Error;
use crate::mock::behavior::Behavior;
use crate::mock::protocol::AgentProtocol;
use crate::mock::Responder;
use clap::{Args, FromArgMatches};

use crate::probe::args::{self, RunArgs, SuiteArgs, SuiteProbeArgs};
use crate::probe::{ProbeSettings, Suite};
use crate::report::output::OutputArgs;
use crate::report::{CaseResult, Exit, Report};
use crate::transport::http::BaseUrl;

/// Why a command's settings cannot be made of its flags: a usage error (nothing was run).
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    /// A flag's value is wrong; the message names the flag.
    #[error("{0}")]
    Flag(String),
    /// What a flag names (a file, a directory, a command) cannot be used; its own error says
    /// why, in its own words.
    #[error(transparent)]
    Named(Box<dyn std::error::Error + Send + Sync>),
}

impl SettingsError {
    /// What a flag names cannot be used, for `error`'s reason.
    pub fn named(error: impl std::error::Error + Send + Sync + 'static) -> SettingsError {
        SettingsError::Named(Box::new(error))
    }
}

// A private helper that checks one flag gives its message as a string.
impl From<String> for SettingsError {
    fn from(message: String) -> SettingsError {
        SettingsError::Flag(message)
    }
}

impl From<&str> for SettingsError {
    fn from(message: &str) -> SettingsError {
        SettingsError::Flag(message.to_string())
    }
}

impl crate::error::LayerError for SettingsError {
    fn class(&self) -> crate::error::Class {
        crate::error::Class::Usage
    }
}

/// Why a matrix row's behaviour is not one the protocol's mock can play: a usage error of the
/// matrix file (the self-test names the file and line).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BehaviorError {
    /// The behaviour's peer is not served over the row's transport.
    #[error("{0}")]
    Transport(String),
    /// No such behaviour, or one written wrong.
    #[error("{0}")]
    Unknown(String),
}

impl crate::error::LayerError for BehaviorError {
    fn class(&self) -> crate::error::Class {
        crate::error::Class::Usage
    }
}

/// Told of each case as it finishes (a progress line).
pub type OnCase = Arc<dyn Fn(&CaseResult) + Send + Sync>;

/// A probe run, set up from a protocol's flags and ready to start.
pub struct ProbeJob {
    /// How many cases it will report (for the progress line; an estimate is fine).
    pub total: usize,
    /// The ids of the cases it will report, as far as they are known before it runs: on Ctrl-C
    /// those not done are reported as not run.
    pub planned: Vec<String>,
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
        let planned: Vec<String> = ids
            .iter()
            .filter(|id| wants(&settings, id))
            .cloned()
            .collect();
        ProbeJob {
            total: planned.len(),
            planned,
            output,
            run: Box::new(move |on_case| Box::pin(run(settings, on_case))),
        }
    }
}

/// `probe NAME` of a protocol whose probe a driver runs: its flags (`A`, with their output
/// flags), the settings made of them, the cases the settings want of `ids`, and the run.
pub fn driver_probe<A, S, F, Fut>(
    matches: &clap::ArgMatches,
    settings: fn(&A) -> Result<S, SettingsError>,
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
    let flags = A::from_arg_matches(matches)?;
    let made = settings(&flags)?;
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

/// `probe NAME` of a protocol whose probe is a suite of HTTP exchanges (the round table's):
/// the flags ([`SuiteProbeArgs`]) under the protocol's name and line, and the run of the suite
/// `load` gives (`--suite FILE`, or the built-in one when None) against `--url`.
pub struct SuiteProbe {
    pub name: &'static str,
    pub about: &'static str,
    /// What `--timeout` bounds for this protocol (its help).
    pub timeout_help: &'static str,
    pub load: fn(Option<&Path>) -> Result<Suite, Error>,
}

impl ProtocolCommand<ProbeJob> for SuiteProbe {
    fn command(&self) -> clap::Command {
        // The subcommand's help is the protocol's line, not the flags struct's doc comment.
        SuiteProbeArgs::augment_args(clap::Command::new(self.name))
            .about(self.about)
            .mut_arg("timeout", |a| a.help(self.timeout_help))
    }

    fn run(&self, matches: &clap::ArgMatches) -> Result<ProbeJob, Error> {
        let flags = SuiteProbeArgs::from_arg_matches(matches)?;
        let base = BaseUrl::parse(&flags.url).map_err(|e| Error::within("--url:", e))?;
        let settings =
            suite_settings(base, flags.key.api_key, &flags.run, &flags.suite, self.load)?;
        flags.output.check()?;
        let planned = settings.suite.select(&settings.only)?;
        Ok(ProbeJob {
            total: planned.len(),
            planned,
            output: flags.output,
            run: Box::new(move |on_case| {
                Box::pin(async move { crate::probe::run(&settings, &*on_case).await })
            }),
        })
    }
}

/// What `selftest` runs of a protocol: its flags, validated once by the command line.
pub struct SelftestRun<'a> {
    pub seed: u64,
    pub run: &'a RunArgs,
    pub suite: &'a SuiteArgs,
    /// The agent-tck binary, for agents served over stdio.
    pub exe: &'a Path,
}

/// What `mock fleet`'s flags say to a client fleet.
pub struct FleetFlags<'a> {
    /// `--platform-url`: the server, overriding the file's.
    pub url: Option<&'a str>,
    /// `--seed`.
    pub seed: Option<u64>,
    pub strict: bool,
    /// `--write-config`: where to write the definitions the server must be configured with
    /// (a fleet that [configures its server](ClientFleet::configures_server)).
    pub write_config: Option<&'a std::path::Path>,
    /// `--wait-ready`: how long to wait for the server to know the fleet's agents before
    /// driving it (None: the fleet's default).
    pub wait_ready: Option<std::time::Duration>,
    /// The command line as clap parsed it, with the flags the protocol added to `mock fleet`
    /// ([`Capabilities::mock_fleet_flags`]), for it to read back.
    pub flags: &'a clap::ArgMatches,
}

/// What `mock agent` says to a protocol whose agent is a command run once per call (the agent
/// standard's), rather than a server.
pub struct CommandAgent<'a> {
    pub name: &'a str,
    /// `--behavior`, as written.
    pub behavior: &'a str,
    pub seed: u64,
    pub journal: Option<&'a Path>,
    /// The command line as clap parsed it, with the flags the protocol added to `mock agent`
    /// ([`Capabilities::mock_agent_flags`]), for it to read back.
    pub flags: &'a clap::ArgMatches,
}

/// Flags a protocol adds to one of the engine's mock commands (`mock agent`, `mock fleet`):
/// declared in its folder (a derived `clap::Args`), shown in the command's help after the
/// engine's flags of every protocol, in the registry's order, and read back by the protocol from
/// the [`clap::ArgMatches`] it is given ([`CommandAgent::flags`], [`FleetFlags::flags`]). (clap
/// names a derived struct's group after the struct: two protocols' flags need two names, and
/// `cli::args`'s `the_command_line_is_well_formed` says so when they clash.)
#[derive(Clone, Copy)]
pub struct MockFlags {
    /// Adds them to the command: `A::augment_args` of the protocol's flags `A`.
    pub augment: fn(clap::Command) -> clap::Command,
    /// Whom they are for, as the refusal of one given under another protocol says it: `agents
    /// run as a command (--protocol NAME)`.
    pub whom: &'static str,
}

impl MockFlags {
    /// The first of these flags given on the command line (`--mode`), if any.
    pub fn given(&self, matches: &clap::ArgMatches) -> Option<String> {
        let declared = (self.augment)(clap::Command::new("flags"));
        let given = declared.get_arguments().find_map(|arg| {
            let id = arg.get_id().as_str();
            let given = matches.value_source(id) == Some(clap::parser::ValueSource::CommandLine);
            given.then(|| format!("--{}", arg.get_long().unwrap_or(id)))
        });
        given
    }

    /// Refuses, under `protocol`, a flag another protocol added to the command (`of` picks the
    /// command's flags of a protocol's [`Capabilities`]): `--mode: for agents run as a command
    /// (--protocol agent-standard), not roundtable`.
    pub fn refuse_foreign(
        protocol: &dyn Protocol,
        matches: &clap::ArgMatches,
        of: fn(&Capabilities) -> Option<MockFlags>,
    ) -> Result<(), Error> {
        for other in super::REGISTRY {
            if other.name() == protocol.name() {
                continue;
            }
            let Some(flags) = of(&other.capabilities()) else {
                continue;
            };
            if let Some(flag) = flags.given(matches) {
                return Err(Error::usage(format!(
                    "{flag}: for {}, not {}",
                    flags.whom,
                    protocol.name()
                )));
            }
        }
        Ok(())
    }
}

/// Runs a protocol's own mock until it ends or `stop` (Ctrl-C) comes, giving the report of
/// its peer.
pub type RunMock =
    Box<dyn FnOnce(BoxFuture<'static, ()>) -> BoxFuture<'static, Result<Report, Error>> + Send>;

/// A `mock NAME` command of a protocol's own (`mock librarian`), set up from its flags and
/// ready to run.
pub struct MockJob {
    pub output: OutputArgs,
    pub run: RunMock,
}

/// What `mock agent` says to a protocol's reference server.
pub struct ReferenceAt<'a> {
    /// `--host` and `--port` (0: the OS picks one).
    pub addr: std::net::SocketAddr,
    /// `--behavior`, as written: `conforming`, or flaws of [`Capabilities::behaviors`],
    /// comma-separated.
    pub behavior: &'a str,
}

/// What a protocol's reference server ends with.
pub enum Served {
    /// It judged its caller: the report.
    Judged(Box<Report>),
    /// It judges nothing: it was served until interrupted.
    Interrupted,
}

/// A protocol's reference peer as `mock agent --protocol NAME` serves it: the one its self-test
/// probes, with the flaws its matrix plays.
pub trait ReferenceServer: Sync {
    /// Whether it judges its caller (and so writes a report: `--json`, `--junit`).
    fn judges_caller(&self) -> bool;

    /// Serves it at `at` until `stop`, having printed one line with its address and the probe
    /// command to point at it. A `--behavior` that names no flaw is a usage error that lists
    /// them.
    fn serve<'a>(
        &'a self,
        at: ReferenceAt<'a>,
        stop: BoxFuture<'static, ()>,
    ) -> BoxFuture<'a, Result<Served, Error>>;
}

/// The flaws `behavior` names (`conforming`, or names of `names`, comma-separated), by `named`
/// (a `switches!` table's [`named_all`](crate::mock::behavior::switches)); a name that is none
/// is a usage error that lists `whose` flaws.
pub fn flaws_named<T>(
    behavior: &str,
    whose: &str,
    names: &[&str],
    named: fn(&mut dyn Iterator<Item = &str>) -> Result<T, String>,
) -> Result<T, Error> {
    let mut items = behavior.split(',').map(str::trim).filter(|s| !s.is_empty());
    named(&mut items).map_err(|bad| {
        Error::usage(format!(
            "--behavior {bad:?}: no flaw of {whose} (known: conforming, {})",
            names.join(", ")
        ))
    })
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

/// Who the kit plays when a case is judged, and so whom the case judges.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Role {
    /// The kit plays the platform (or harness, or server's caller) and judges the agent.
    Probe,
    /// The kit plays the agents or clients and judges the platform or server.
    Mock,
    /// The kit reads definition files.
    Lint,
    /// The kit reads the journal of agents an orchestrator ran (`probe orchestration`).
    Orchestration,
    /// The run itself (it judged something, it was not cut short, its peer stayed up).
    Run,
}

impl Role {
    pub const ALL: [Role; 5] = [
        Role::Probe,
        Role::Mock,
        Role::Lint,
        Role::Orchestration,
        Role::Run,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Role::Probe => "probe",
            Role::Mock => "mock",
            Role::Lint => "lint",
            Role::Orchestration => "orchestration",
            Role::Run => "run",
        }
    }

    pub fn parse(text: &str) -> Option<Role> {
        Role::ALL.into_iter().find(|r| r.as_str() == text)
    }
}

/// One case of a protocol's [catalogue](Protocol::catalogue): what `suites list` prints.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaseInfo {
    /// The case id as reports give it.
    pub id: String,
    pub role: Role,
    /// `must`, `should`, `may`, or `eval` (an evaluation case of a scenario).
    pub level: String,
    pub title: String,
    /// The spec section it enforces, as the case's report gives it; empty when none.
    pub section: String,
}

impl CaseInfo {
    pub fn new(
        id: &str,
        role: Role,
        level: crate::report::Level,
        title: &str,
        section: &str,
    ) -> CaseInfo {
        CaseInfo {
            id: id.to_string(),
            role,
            level: level.as_str().to_string(),
            title: title.to_string(),
            section: section.to_string(),
        }
    }

    /// The cases of a suite, in `role`.
    pub fn of_suite(suite: &Suite, role: Role) -> Vec<CaseInfo> {
        suite
            .cases()
            .iter()
            .map(|c| CaseInfo::new(&c.id.value, role, c.level, &c.title, &c.spec))
            .collect()
    }

    /// A table of (id, level, title, section), in `role`.
    pub fn of_table(
        table: &[(&str, crate::report::Level, &str, &str)],
        role: Role,
    ) -> Vec<CaseInfo> {
        table
            .iter()
            .map(|(id, level, title, section)| CaseInfo::new(id, role, *level, title, section))
            .collect()
    }
}

/// A protocol as the command line and the self-test see it: its identity and its cases, which
/// every protocol has, and [`Capabilities`]: what else it offers, each capability a small trait
/// that holds its flags and its run together.
pub trait Protocol: Sync {
    /// The registry key: `probe NAME`, `--protocol NAME`, a report's `protocol`.
    fn name(&self) -> &'static str;

    /// One line: what the protocol is and which spec defines it.
    fn about(&self) -> &'static str;

    /// The spec it is judged by: its file under `specs/`, its title and version as the document
    /// gives them. Every report of it names this, with the digest of the text carried.
    fn spec(&self) -> crate::specs::SpecDoc;

    /// The folder of its JSON Schemas under `schemas/` (every file there is embedded), if it
    /// has any.
    fn schema_dir(&self) -> Option<&'static str>;

    /// `suites list --protocol NAME [--suite FILE]`: every case with its level and title.
    fn list_cases(&self, file: Option<&Path>) -> Result<String, Error>;

    /// The ids of every case its built-in suite can report (a matrix names them).
    fn case_ids(&self) -> Result<Vec<String>, Error>;

    /// Every case it can report, in every role (its probes', the fleets' that judge its
    /// platform, its lint rules'): `suites list` lists them and `explain` has a text for each.
    /// The cases every protocol can report (the run's, liveness, the mock engine's) are not
    /// here: the engine adds them.
    fn catalogue(&self) -> Result<Vec<CaseInfo>, Error>;

    /// What it offers: the one list the command line and the self-test read.
    fn capabilities(&self) -> Capabilities;
}

/// What a protocol offers beyond its identity. A protocol fills in what it has; the rest is
/// [`Capabilities::none`]'s (`..Capabilities::none(&SELFTEST)`).
pub struct Capabilities {
    /// `probe NAME` first, then probes named for what they judge (the agent standard's `probe
    /// orchestration`). Empty: nothing to probe.
    pub probes: &'static [&'static dyn ProtocolCommand<ProbeJob>],
    /// `lint WHAT` (the command's name is what is linted: `agents`).
    pub lint: Option<&'static dyn ProtocolCommand<Exit>>,
    /// Its agents, when the mock engine serves them (`mock agent`, `mock fleet`).
    pub agents: Option<ServedAgents>,
    /// Its reference peer, served as it is by the self-test, when the mock engine does not serve
    /// its agents (the Librarian's server, the connector's external agent): `mock agent
    /// --protocol NAME` serves it, a try-it peer for `probe NAME`.
    pub reference_server: Option<&'static dyn ReferenceServer>,
    /// Its agent as a command run once per call rather than served (the agent standard's).
    pub command_agent: Option<&'static dyn CommandAgents>,
    /// The flags it adds to `mock agent` (read by its agent: `mock agent --protocol NAME`).
    pub mock_agent_flags: Option<MockFlags>,
    /// The flags it adds to `mock fleet` (read by its fleet: a file of `protocol: NAME`).
    pub mock_fleet_flags: Option<MockFlags>,
    /// `mock NAME` commands of its own (the Librarian's `mock librarian`), listed after the
    /// engine's.
    pub mocks: &'static [&'static dyn ProtocolCommand<MockJob>],
    /// A fleet of its *clients* against a server, for a protocol whose platform is the server
    /// (the Librarian, the connector): `mock fleet` runs such a file here.
    pub client_fleet: Option<&'static dyn ClientFleet>,
    /// The misbehaviours of its own mock (a reference peer with flaws, a command agent), when
    /// the engine's behaviours are not the ones it plays: `mock behaviors` lists them, and its
    /// matrix rows name them.
    pub behaviors: &'static [Behavior],
    /// The files a user writes for it (suites, fleets, scenarios, scripts), as the fuzz targets
    /// feed them.
    pub files: &'static [UserFile],
    /// Built-in fleets (`mock fleet --preset NAME`): (name, file, YAML).
    pub fleet_presets: &'static [(&'static str, &'static str, &'static str)],
    /// The suite whose cases judge its agents' answers in traffic the kit did not send (its
    /// `traffic: true` exchanges): `agent-tck proxy` and `agent-tck judge` read it. None: its
    /// agents are not judged behind a proxy yet.
    pub traffic_suite: Option<fn() -> Result<crate::probe::Suite, crate::probe::suite::SuiteError>>,
    /// Its platform as a server its agents call, judged with them from their traffic by
    /// `agent-tck proxy --server URL` (its client rules on the requests, its server rules on
    /// the answers). None: no proxy stands before its server.
    pub proxied_server: Option<&'static dyn crate::proxy::server::ProxiedServer>,
    /// Its agents answer later, by calling the platform back at a URL the platform's request
    /// gave them (the connector's external agents): `agent-tck proxy` passes the requests on
    /// with that URL pointing at itself, passes the callbacks on to the platform, and this
    /// judges both parties from the exchanges both ways.
    pub calls_back: Option<&'static dyn crate::proxy::relay::CallsBack>,
    /// The self-test and the behaviour matrix: every protocol is tested on itself.
    pub selftest: &'static dyn Selftest,
}

impl Capabilities {
    /// A protocol that offers nothing but its self-test.
    pub fn none(selftest: &'static dyn Selftest) -> Capabilities {
        Capabilities {
            probes: &[],
            lint: None,
            agents: None,
            reference_server: None,
            command_agent: None,
            mock_agent_flags: None,
            mock_fleet_flags: None,
            mocks: &[],
            client_fleet: None,
            behaviors: &[],
            files: &[],
            fleet_presets: &[],
            traffic_suite: None,
            proxied_server: None,
            calls_back: None,
            selftest,
        }
    }
}

impl Capabilities {
    /// The agents the mock engine serves for protocol `name` (whose capabilities these are);
    /// else a usage error that says what the kit offers for it instead.
    pub fn served(&self, name: &str) -> Result<ServedAgents, Error> {
        self.agents.ok_or_else(|| self.nothing_to_serve(name))
    }

    /// `--protocol NAME` of a protocol whose agents the kit does not serve: what it offers
    /// instead.
    pub fn nothing_to_serve(&self, name: &str) -> Error {
        let mut instead: Vec<String> = self
            .probes
            .iter()
            .map(|p| format!("probe {}", p.command().get_name()))
            .collect();
        if let Some(lint) = self.lint {
            instead.push(format!("lint {}", lint.command().get_name()));
        }
        if let Some(agent) = self.command_agent {
            instead.push(format!("mock agent --protocol {name} {}", agent.usage()));
            instead.push(format!("mock agents --protocol {name}"));
        }
        if self.client_fleet.is_some() {
            instead.push(format!("mock fleet (a file with `protocol: {name}`)"));
        }
        instead.push(format!("selftest --protocol {name}"));
        Error::usage(format!(
            "--protocol {name}: the kit serves no {name} agent; for {name} it offers {}",
            instead.join(", ")
        ))
    }
}

/// A kind of file a user writes for a protocol: its parse (`source` names the file, `text` is
/// its content), giving the error, which names the file.
#[derive(Clone, Copy)]
pub struct UserFile {
    /// A suite (`suites/<name>.yaml` or `--suite FILE`); else another file (a fleet, a scenario,
    /// a script).
    pub suite: bool,
    pub parse: fn(source: &str, text: &str) -> Result<(), Error>,
}

impl UserFile {
    /// A parse's outcome as a [`UserFile::parse`] gives it: the file's error, or nothing.
    pub fn parsed<T, E: Into<Error>>(parsed: Result<T, E>) -> Result<(), Error> {
        parsed.map(drop).map_err(Into::into)
    }
}

/// A subcommand a protocol declares (`probe NAME`, `lint WHAT`): its name and flags, and the
/// code that runs them, in one place.
pub trait ProtocolCommand<T>: Sync {
    /// Its name (the subcommand's) and its flags.
    fn command(&self) -> clap::Command;

    /// Runs it with the flags clap parsed from [`ProtocolCommand::command`].
    fn run(&self, matches: &clap::ArgMatches) -> Result<T, Error>;
}

/// A conforming agent named NAME that also follows the user's scenario files.
pub type WithScenarios = fn(&str, &[PathBuf]) -> Result<Box<dyn Responder>, Error>;

/// The agents the mock engine serves for a protocol.
#[derive(Clone, Copy)]
pub struct ServedAgents {
    pub agents: &'static dyn AgentProtocol,
    /// A conforming agent that also follows the user's scenario files (`mock agent --scenario`,
    /// execute_task's): (name, files). None: the protocol's agents take no such files.
    pub with_scenarios: Option<WithScenarios>,
}

impl ServedAgents {
    /// Agents with no scenario files.
    pub const fn plain(agents: &'static dyn AgentProtocol) -> ServedAgents {
        ServedAgents {
            agents,
            with_scenarios: None,
        }
    }

    /// A conforming agent named `name`, following `files` (refused when the agents take none).
    pub fn reference(
        &self,
        name: &str,
        seed: u64,
        files: &[PathBuf],
    ) -> Result<Box<dyn Responder>, Error> {
        match self.with_scenarios {
            Some(with) => with(name, files),
            None if files.is_empty() => Ok(self.agents.reference(name, seed)),
            None => Err(Error::usage(format!(
                "--scenario: {} agent takes no scenario files",
                crate::text::with_article(self.agents.name())
            ))),
        }
    }
}

/// A protocol's agent as a command run once per call (the agent standard's): `mock agent
/// --protocol NAME` and `mock agents`.
pub trait CommandAgents: Sync {
    /// Runs the agent once, giving its exit status.
    fn run(&self, at: CommandAgent<'_>) -> Result<u8, Error>;

    /// `mock agents --protocol NAME --dir OUT --count N`: writes a set of mock agents to run
    /// together, giving what to print.
    fn write_set(&self, at: AgentSet<'_>) -> Result<String, Error>;

    /// The flags a run of it needs, as a message offering it shows them: `--mode plan|execute`.
    fn usage(&self) -> &'static str;
}

/// A fleet of a protocol's clients against a server: `mock fleet` runs the file (`source`,
/// `text`).
pub trait ClientFleet: Sync {
    fn run<'a>(
        &'a self,
        source: &'a str,
        text: &'a str,
        at: FleetFlags<'a>,
    ) -> BoxFuture<'a, Result<Report, Error>>;

    /// The behaviours a fleet file may give its clients (`mock behaviors` lists them, and the
    /// file's parse checks names against them).
    fn behaviors(&self) -> &'static [crate::mock::behavior::Behavior];

    /// Whether the server must be configured with the fleet's agents before a run: then
    /// `mock fleet --print-config`, `--write-config` and `--wait-ready` mean something to it
    /// (to another fleet they are a usage error).
    fn configures_server(&self) -> bool {
        false
    }

    /// `mock fleet --print-config`: the definitions the server must be configured with, as
    /// printed (written too, to `at.write_config`), without running the fleet.
    fn server_config(
        &self,
        source: &str,
        text: &str,
        at: &FleetFlags<'_>,
    ) -> Result<String, Error> {
        let _ = (source, text, at);
        Err(Error::usage(
            "--print-config: this fleet gives its server no configuration",
        ))
    }
}

/// The self-test of a protocol: a conforming peer, probed (its report must pass), and the
/// behaviour matrix (a misbehaving peer per row, each breaking the cases the row names).
pub trait Selftest: Sync {
    /// A conforming peer of this protocol, probed.
    fn run<'a>(&'a self, at: SelftestRun<'a>) -> BoxFuture<'a, Result<Report, Error>>;

    /// The behaviour matrix: (file, YAML), the probe against a mock per behaviour.
    fn matrix(&self) -> (&'static str, &'static str);

    /// Whether a matrix row's `behavior` is one the protocol's mock can play over `transport`
    /// (the error says why not).
    fn check_behavior(&self, behavior: &str, transport: &str) -> Result<(), BehaviorError>;

    /// Probes a mock with one matrix row's behaviour over its transport.
    fn matrix_row<'a>(&'a self, row: MatrixRow<'a>) -> BoxFuture<'a, Result<Report, Error>>;
}

/// [`Selftest::check_behavior`] for a protocol whose mocks the engine serves: the engine's
/// behaviour list for `agents`, over the transports they are served on.
pub fn check_served_behavior(
    agents: &'static dyn AgentProtocol,
    behavior: &str,
    transport: &str,
) -> Result<(), BehaviorError> {
    if transport != "http" && agents.line_endpoint().is_none() {
        return Err(BehaviorError::Transport(format!(
            "{} rows run over http only",
            agents.name()
        )));
    }
    let items = crate::mock::behavior::parse_list(
        behavior,
        crate::mock::behavior::For {
            protocol: agents,
            others: &super::agent_protocols(),
        },
    )
    .map_err(|e| BehaviorError::Unknown(e.to_string()))?;
    crate::mock::behavior::check_fit(
        &items,
        agents,
        transport == "http",
        transport.starts_with("stdio"),
    )
    .map_err(|e| BehaviorError::Transport(e.to_string()))
}

#[cfg(test)]
#[path = "plugin_tests.rs"]
mod tests;
