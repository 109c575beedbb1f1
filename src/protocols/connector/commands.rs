//! The async connector on the command line (`probe connector`, `suites list`) and in the
//! self-test: the reference external agent (`agent`) on a loopback port, probed with every case,
//! and the same agent with each flaw (`mocks/matrix-connector.yaml`).

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use futures::future::BoxFuture;

use super::fleet::{ready, Definitions, Fleet, Readiness};
use super::probe::{self, Settings};
use super::reference::{split_url, ExternalAgent, Flaws};
use super::NAME;
use crate::error::Error;
use crate::mock::behavior::Behavior;
use crate::probe::args::Common;
use crate::probe::args::{seed_or_clock, RunArgs};
use crate::protocols::plugin::{
    driver_probe, BehaviorError, Capabilities, ClientFleet, FleetFlags, MatrixRow, OnCase,
    ProbeJob, Protocol, ProtocolCommand, Selftest, SelftestRun, SettingsError, UserFile,
};
use crate::report::output::OutputArgs;
use crate::report::{CaseResult, Report, RunInfo};
use crate::units::parse_duration;

/// The async connector in the registry.
pub struct Connector;

/// `probe connector`'s flags.
#[derive(Debug, Clone, Args)]
#[command(mut_arg("timeout", |a| a.help(
    "Deadline of each forward's acknowledgement: a POST to the inputUrl, from connect to its \
     answer (at most 7s: the server's 5s and 2s of grace); the callbacks have --reply-timeout"
)))]
pub struct ConnectorProbeArgs {
    /// The external agent's inputUrl (user messages are POSTed there).
    #[arg(long, value_name = "URL")]
    pub input_url: String,
    /// The agentId the forwards carry.
    #[arg(long, value_name = "ID", default_value = "external-agent-a")]
    pub agent_id: String,
    /// Where the kit's callback endpoint listens: HOST:PORT, the host an address or a name.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:0", value_parser = crate::units::parse_listen_addr)]
    pub callback_listen: SocketAddr,
    /// The base URL the agent is given for its callbacks (default: the listening address; set
    /// it when the agent reaches the kit by another name).
    #[arg(long, value_name = "URL")]
    pub callback_base: Option<String>,
    /// How long a callback may take to arrive.
    #[arg(long, value_name = "DUR", default_value = "30s", value_parser = parse_duration)]
    pub reply_timeout: Duration,
    #[command(flatten)]
    pub run: RunArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

pub fn settings(args: &ConnectorProbeArgs) -> Result<Settings, SettingsError> {
    let input = split_url(&args.input_url).ok_or_else(|| {
        format!(
            "--input-url {:?}: expected http://host[:port]/path",
            args.input_url
        )
    })?;
    if let Some(base) = &args.callback_base {
        crate::transport::http::BaseUrl::parse(base)
            .map_err(|e| format!("--callback-base: {e}"))?;
    }
    Ok(Settings {
        input,
        agent_id: args.agent_id.clone(),
        listen: args.callback_listen,
        callback_base: args.callback_base.clone(),
        reply_timeout: args.reply_timeout,
        timeout: args.run.timeout,
        max_body: args.run.max_body,
        common: Common::of(&args.run),
    })
}

/// The reference external agent with `flaws`, probed with every case (`only` narrows).
async fn probe_reference(
    flaws: Flaws,
    seed: u64,
    only: Vec<String>,
    reply_timeout: Duration,
) -> Result<Report, Error> {
    let running = crate::mock::http1::spawn(
        Arc::new(ExternalAgent::new(flaws)),
        SocketAddr::from(([127, 0, 0, 1], 0)),
    )
    .await?;
    let settings = Settings {
        input: split_url(&format!(
            "{}{}",
            running.url(),
            super::reference::INPUT_PATH
        ))
        .ok_or_else(|| Error::run("the reference's URL"))?,
        agent_id: "external-agent-a".into(),
        listen: SocketAddr::from(([127, 0, 0, 1], 0)),
        callback_base: None,
        reply_timeout,
        timeout: Duration::from_secs(15),
        max_body: 5_000_000,
        common: Common {
            seed,
            only,
            strict: false,
            ..Common::default()
        },
    };
    let report = probe::run(&settings, &|_| {}).await;
    running.stop().await;
    report.map_err(Error::from)
}

const ABOUT: &str =
    "The external agents' async connector: we play the agent server (forwards, and the callback endpoint).";

/// The files a user writes for it, as the fuzz targets feed them.
const FILES: &[UserFile] = &[
    UserFile {
        suite: true,
        parse: |source, text| {
            UserFile::parsed(crate::probe::Suite::parse(source, text, &probe::RULE_NAMES))
        },
    },
    UserFile {
        suite: false,
        parse: |source, text| UserFile::parsed(super::fleet::Fleet::parse(source, text, None)),
    },
];

impl Protocol for Connector {
    fn name(&self) -> &'static str {
        NAME
    }

    fn about(&self) -> &'static str {
        ABOUT
    }

    fn spec(&self) -> crate::specs::SpecDoc {
        crate::specs::SpecDoc {
            file: "external-agents-async-connector.md",
            title: "External Agents (Async Connector) — Design",
            // The document gives no version or date.
            version: None,
        }
    }

    fn schema_dir(&self) -> Option<&'static str> {
        Some("connector")
    }

    fn list_cases(&self, file: Option<&Path>) -> Result<String, Error> {
        crate::protocols::plugin::builtin_cases_only(
            file,
            "the connector's",
            "suites/connector.yaml",
        )?;
        Ok(probe::suite()?.list())
    }

    fn case_ids(&self) -> Result<Vec<String>, Error> {
        probe::case_ids().map_err(Error::from)
    }

    fn catalogue(&self) -> Result<Vec<crate::protocols::plugin::CaseInfo>, Error> {
        super::catalogue::catalogue()
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            probes: &[&ConnectorProbe],
            client_fleet: Some(&ConnectorFleet),
            reference_server: Some(&super::reference::ReferenceAgent),
            calls_back: Some(&super::relay::ConnectorRelay),
            behaviors: super::behaviors::BEHAVIORS,
            files: FILES,
            ..Capabilities::none(&ConnectorSelftest)
        }
    }
}

/// `probe connector`.
struct ConnectorProbe;

impl ProtocolCommand<ProbeJob> for ConnectorProbe {
    fn command(&self) -> clap::Command {
        ConnectorProbeArgs::augment_args(clap::Command::new(NAME)).about(ABOUT)
    }

    fn run(&self, matches: &clap::ArgMatches) -> Result<ProbeJob, Error> {
        let ids = probe::case_ids()?;
        let job = |s: Settings, on: OnCase| async move {
            probe::run(&s, &*on).await.map_err(Error::from)
        };
        driver_probe(
            matches,
            settings,
            |f: ConnectorProbeArgs| f.output,
            &ids,
            Settings::wants,
            job,
        )
    }
}

/// `mock fleet` of external agents and web clients.
struct ConnectorFleet;

impl ClientFleet for ConnectorFleet {
    fn behaviors(&self) -> &'static [Behavior] {
        super::behaviors::FLEET_BEHAVIORS
    }

    fn configures_server(&self) -> bool {
        true
    }

    /// The agent definitions at the fleet's fixed listen address (or `advertise:`).
    fn server_config(
        &self,
        source: &str,
        text: &str,
        at: &FleetFlags<'_>,
    ) -> Result<String, Error> {
        let fleet = Fleet::parse(source, text, at.url)?;
        let definitions = Definitions::before_serving(&fleet, source)?;
        if let Some(path) = at.write_config {
            definitions.write(path)?;
            crate::errln!(
                "agent-tck: wrote {} to {}",
                definitions.what(),
                path.display()
            );
        }
        Ok(definitions.text())
    }

    /// A fleet of external agents and web clients against a real agent server: the inputUrls
    /// served, the definitions printed (and written), the wait for the server to know the
    /// agent ids, then the drive and the verdicts.
    fn run<'a>(
        &'a self,
        source: &'a str,
        text: &'a str,
        at: FleetFlags<'a>,
    ) -> BoxFuture<'a, Result<Report, Error>> {
        Box::pin(async move {
            let fleet = Fleet::parse(source, text, at.url)?;
            let seed = seed_or_clock(at.seed.or(fleet.seed));
            let served = super::fleet::serve(&fleet).await?;
            crate::outln!(
                "agent-tck mock fleet · {} against the agent server {}",
                crate::text::count(fleet.agents.len() as u64, "external agents"),
                fleet.target()
            );
            for (name, id, url) in served.input_urls(&fleet) {
                crate::outln!("  {name:<24} agentId {id:<20} inputUrl {url}");
            }
            let definitions = served.definitions(&fleet);
            let declared = match at.write_config {
                Some(path) => {
                    definitions.write(path)?;
                    crate::outln!("wrote {} to {}", definitions.what(), path.display());
                    format!("{} has their definitions", path.display())
                }
                None => {
                    crate::outln!("{}:\n{}", definitions.what(), definitions.text().trim_end());
                    "their definitions are printed above; --write-config FILE writes them".into()
                }
            };
            let limit = at.wait_ready.unwrap_or(ready::DEFAULT_WAIT);
            crate::outln!(
                "waiting up to {} for the agent server to know the fleet's agent ids (a session create for each)",
                crate::units::format_duration(limit)
            );
            let readiness = ready::wait(&fleet, limit).await;
            let info = RunInfo::start("mock", NAME, fleet.target(), seed, at.strict)
                .made_by(format!("mock fleet ({NAME})"));
            if let Some(problem) = readiness.problem(&declared) {
                crate::outln!("{problem}");
                served.stop().await;
                return Ok(not_driven(&fleet, &readiness, &declared, info));
            }
            crate::outln!(
                "the agent server knows the fleet's {} (after {}): driving it",
                crate::text::count(readiness.wanted.len() as u64, "agent ids"),
                crate::units::format_duration(readiness.waited)
            );
            let report = super::fleet::judge::run(&fleet, served, at.strict, seed).await;
            Ok(with_case(report, readiness.case(&declared)))
        })
    }
}

/// The report of a fleet that did not drive its server: `platform.agents-known` says why, and
/// every case that needed the server's sessions is a skip that says so.
fn not_driven(fleet: &Fleet, readiness: &Readiness, declared: &str, info: RunInfo) -> Report {
    let mut report = super::fleet::judge::judge(
        fleet,
        &super::fleet::Drive::default(),
        &super::fleet::Books::default(),
        info,
    );
    match &readiness.unreachable {
        Some(error) => super::fleet::judge::mark_server_down(fleet, &mut report.cases, error),
        None => {
            let why = readiness.not_driven();
            for case in &mut report.cases {
                case.skip(why.clone());
            }
        }
    }
    with_case(report, readiness.case(declared))
}

/// `report` with `case` first of its group (the sessions'), the summary counted again.
fn with_case(mut report: Report, case: CaseResult) -> Report {
    let at = report
        .cases
        .iter()
        .position(|c| c.group == case.group)
        .unwrap_or(0);
    report.cases.insert(at, case);
    report.summarize();
    report
}

/// The connector's self-test and matrix.
struct ConnectorSelftest;

impl Selftest for ConnectorSelftest {
    /// The reference external agent, probed with every case.
    fn run<'a>(&'a self, at: SelftestRun<'a>) -> BoxFuture<'a, Result<Report, Error>> {
        Box::pin(async move {
            probe_reference(
                Flaws::default(),
                at.seed,
                at.run.only(),
                Duration::from_secs(10),
            )
            .await
        })
    }

    fn matrix(&self) -> (&'static str, &'static str) {
        (
            "mocks/matrix-connector.yaml",
            include_str!("../../../mocks/matrix-connector.yaml"),
        )
    }

    fn check_behavior(&self, behavior: &str, transport: &str) -> Result<(), BehaviorError> {
        if transport != "http" {
            return Err(BehaviorError::Transport(format!(
                "the external agent is served over http only, not {transport}"
            )));
        }
        Flaws::named(behavior).map(drop).ok_or_else(|| {
            BehaviorError::Unknown(format!(
                "{behavior:?} is no external-agent flaw (known: conforming, {})",
                Flaws::NAMES.join(", ")
            ))
        })
    }

    fn matrix_row<'a>(&'a self, row: MatrixRow<'a>) -> BoxFuture<'a, Result<Report, Error>> {
        Box::pin(async move {
            let flaws = Flaws::named(row.behavior).ok_or_else(|| {
                Error::usage(format!("no external-agent flaw {:?}", row.behavior))
            })?;
            probe_reference(flaws, row.seed, row.only.to_vec(), Duration::from_secs(10)).await
        })
    }
}
