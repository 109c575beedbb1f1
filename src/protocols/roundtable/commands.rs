//! The round table on the command line (`probe roundtable`, `suites list`) and in the
//! self-test: the reference agent probed, and the behaviour matrix (`mocks/matrix.yaml`).

use std::path::Path;
use std::time::Duration;

use futures::future::BoxFuture;

use super::{rules, suite, Agents, NAME};
use crate::error::Error;
use crate::mock::agent::{MockAgent, Profile};
use crate::mock::behavior::{self, For};
use crate::mock::fleet::{self};
use crate::probe::{ProbeSettings, Suite};
use crate::protocols::plugin::{
    check_served_behavior, suite_settings, BehaviorError, Capabilities, MatrixRow, Protocol,
    Selftest, SelftestRun, ServedAgents, SuiteProbe, UserFile,
};
use crate::report::Report;
use crate::transport::http::BaseUrl;

/// The round table in the registry.
pub struct Roundtable;

/// One mock agent with `behavior`, on a loopback port of its own.
pub async fn serve_one(
    name: &str,
    key: Option<String>,
    behavior: &str,
    seed: u64,
) -> Result<fleet::Served, Error> {
    let items = behavior::parse_list(
        behavior,
        For {
            protocol: &Agents,
            others: &[],
        },
    )?;
    let profile = Profile {
        name: name.into(),
        domain: "general review".into(),
        capabilities: Vec::new(),
        api_key: key,
    };
    fleet::serve_one(
        MockAgent::new(&Agents, profile, items, seed),
        Duration::from_secs(120),
    )
    .await
}

/// The suite to run: `--suite FILE` or the built-in one, for this protocol.
fn load_suite(file: Option<&Path>) -> Result<Suite, Error> {
    let suite = match file {
        Some(path) => Suite::from_file(path, &rules::Suite)?,
        None => suite()?,
    };
    if suite.file.protocol != NAME {
        return Err(Error::usage(format!(
            "{}: the suite is for protocol {:?}, not {NAME:?}",
            suite.source, suite.file.protocol
        )));
    }
    Ok(suite)
}

const ABOUT: &str = "The round-table External Agent Protocol: POST /analyze, /challenge, /vote.";

/// `probe roundtable`: the suite against `--url`.
const PROBE: SuiteProbe = SuiteProbe {
    name: NAME,
    about: ABOUT,
    timeout_help: "Deadline of each request to the agent (POST /analyze, /challenge, /vote, \
                   GET /health), from connect to the last byte of its answer (e.g. 120s, 2m, \
                   500ms, 30)",
    load: load_suite,
};

/// The round table's self-test and matrix.
struct RoundtableSelftest;

/// The files a user writes for it, as the fuzz targets feed them.
const FILES: &[UserFile] = &[UserFile {
    suite: true,
    parse: |source, text| UserFile::parsed(Suite::parse(source, text, &rules::Suite)),
}];

impl Protocol for Roundtable {
    fn name(&self) -> &'static str {
        NAME
    }

    fn about(&self) -> &'static str {
        ABOUT
    }

    fn spec(&self) -> crate::specs::SpecDoc {
        crate::specs::SpecDoc {
            file: "roundtable-external-agent-protocol.md",
            title: "External Agent Protocol",
            // The document gives no version or date.
            version: None,
        }
    }

    fn schema_dir(&self) -> Option<&'static str> {
        Some("roundtable")
    }

    fn list_cases(&self, file: Option<&Path>) -> Result<String, Error> {
        Ok(load_suite(file)?.list())
    }

    fn case_ids(&self) -> Result<Vec<String>, Error> {
        Ok(suite()?
            .cases()
            .iter()
            .map(|c| c.id.value.clone())
            .collect())
    }

    fn catalogue(&self) -> Result<Vec<crate::protocols::plugin::CaseInfo>, Error> {
        super::catalogue::catalogue()
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            probes: &[&PROBE],
            agents: Some(ServedAgents::plain(&Agents)),
            fleet_presets: FLEET_PRESETS,
            files: FILES,
            traffic_suite: Some(super::suite),
            ..Capabilities::none(&RoundtableSelftest)
        }
    }
}

/// `mock fleet --preset NAME`: the round table's built-in fleets.
const FLEET_PRESETS: &[(&str, &str, &str)] = &[
    (
        "chaos",
        "mocks/chaos.yaml",
        include_str!("../../../mocks/chaos.yaml"),
    ),
    (
        "slow",
        "mocks/slow.yaml",
        include_str!("../../../mocks/slow.yaml"),
    ),
    (
        "injection",
        "mocks/injection.yaml",
        include_str!("../../../mocks/injection.yaml"),
    ),
    (
        "faults",
        "mocks/faults.yaml",
        include_str!("../../../mocks/faults.yaml"),
    ),
];

impl Selftest for RoundtableSelftest {
    /// The reference agent, served by the mock engine (as `mock agent` serves it) on a loopback
    /// port with a bearer key (so the auth cases run), probed with the built-in suite.
    fn run<'a>(&'a self, at: SelftestRun<'a>) -> BoxFuture<'a, Result<Report, Error>> {
        Box::pin(async move {
            let seed = at.seed;
            let key = format!("selftest-key-{seed:x}");
            let served = serve_one("reference-agent", Some(key.clone()), "conforming", seed)
                .await
                .map_err(|e| {
                    Error::as_run(Error::within(
                        "cannot start the reference agent on loopback:",
                        e,
                    ))
                })?;
            crate::errln!("reference agent listening on {}", served.urls[0]);
            let base = BaseUrl::parse(&served.urls[0]).map_err(Error::as_run)?;
            let mut run = at.run.clone();
            run.seed = Some(seed);
            let settings = suite_settings(base, Some(key), &run, at.suite, load_suite)?;
            let report = crate::probe::run(&settings, &|_| {}).await;
            served.stop(Duration::from_millis(500)).await;
            report
        })
    }

    fn matrix(&self) -> (&'static str, &'static str) {
        (
            "mocks/matrix.yaml",
            include_str!("../../../mocks/matrix.yaml"),
        )
    }

    fn check_behavior(&self, behavior: &str, transport: &str) -> Result<(), BehaviorError> {
        check_served_behavior(&Agents, behavior, transport)
    }

    /// A mock agent with the row's behaviour on a loopback port, probed with the built-in suite.
    fn matrix_row<'a>(&'a self, row: MatrixRow<'a>) -> BoxFuture<'a, Result<Report, Error>> {
        Box::pin(async move {
            if row.transport != "http" {
                return Err(Error::usage(format!(
                    "{}: round-table rows run over http only",
                    row.behavior
                )));
            }
            let served = serve_one("matrix-agent", None, row.behavior, row.seed).await?;
            let base = BaseUrl::parse(&served.urls[0]).map_err(Error::as_run)?;
            let mut settings = ProbeSettings::new(base, suite()?);
            settings.timeout = row.timeout;
            settings.seed = row.seed;
            settings.only = row.only.to_vec();
            // One exchange at a time: `fail-first` and `flaky` then meet the requests in suite
            // order.
            settings.concurrency = 1;
            let report = crate::probe::run(&settings, &|_| {}).await;
            served.stop(Duration::from_millis(500)).await;
            report
        })
    }
}
