//! The toy on the command line and in the self-test: `probe toy --url URL`, its cases, its
//! self-test (a conforming toy agent probed) and its matrix (`matrix.yaml` beside this file).

use std::path::Path;
use std::time::Duration;

use agent_tck::error::Error;
use agent_tck::mock::agent::{MockAgent, Profile};
use agent_tck::mock::behavior::{parse_list, For};
use agent_tck::mock::fleet::{self, Served};
use agent_tck::probe::{ProbeSettings, Suite};
use agent_tck::protocols::plugin::{
    check_served_behavior, suite_settings, BehaviorError, Capabilities, CaseInfo, MatrixRow,
    Protocol, Role, Selftest, SelftestRun, ServedAgents, SuiteProbe,
};
use agent_tck::report::Report;
use agent_tck::transport::http::BaseUrl;
use futures::future::BoxFuture;

use super::{Agents, NAME};

/// The toy in a registry.
pub struct Toy;

pub fn suite() -> Result<Suite, Error> {
    Suite::parse(super::SUITE.0, super::SUITE.1, &super::Suite).map_err(Error::from)
}

/// A toy mock agent with `behavior` on a loopback port.
pub async fn serve(behavior: &str, seed: u64) -> Result<Served, Error> {
    let at = For {
        protocol: &Agents,
        others: &[],
    };
    let items = parse_list(behavior, at)?;
    let profile = Profile {
        name: "toy-agent".into(),
        domain: "greetings".into(),
        capabilities: Vec::new(),
        api_key: None,
    };
    fleet::serve_one(
        MockAgent::new(&Agents, profile, items, seed),
        Duration::from_secs(30),
    )
    .await
}

/// The toy's suite, whatever `--suite` says (a toy has only its own).
fn load(_file: Option<&Path>) -> Result<Suite, Error> {
    suite()
}

/// `probe toy --url URL`.
pub const PROBE: SuiteProbe = SuiteProbe {
    name: NAME,
    about: "A toy greeting protocol: POST /hello, /bye.",
    timeout_help: "Deadline of each request to the agent (POST /hello, /bye).",
    load,
};

impl Protocol for Toy {
    fn name(&self) -> &'static str {
        NAME
    }

    fn about(&self) -> &'static str {
        PROBE.about
    }

    fn spec(&self) -> agent_tck::specs::SpecDoc {
        // A toy has no spec carried under specs/: a registered protocol must (a test holds it).
        agent_tck::specs::SpecDoc {
            file: "toy.md",
            title: "Toy greeting protocol",
            version: None,
        }
    }

    fn schema_dir(&self) -> Option<&'static str> {
        None
    }

    fn list_cases(&self, _file: Option<&Path>) -> Result<String, Error> {
        Ok(suite()?.list())
    }

    fn case_ids(&self) -> Result<Vec<String>, Error> {
        Ok(suite()?
            .cases()
            .iter()
            .map(|c| c.id.value.clone())
            .collect())
    }

    fn catalogue(&self) -> Result<Vec<CaseInfo>, Error> {
        Ok(CaseInfo::of_suite(&suite()?, Role::Probe))
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            probes: &[&PROBE],
            agents: Some(ServedAgents::plain(&Agents)),
            ..Capabilities::none(&ToySelftest)
        }
    }
}

/// The toy's self-test (a conforming toy agent probed) and matrix.
pub struct ToySelftest;

impl Selftest for ToySelftest {
    fn run<'a>(&'a self, at: SelftestRun<'a>) -> BoxFuture<'a, Result<Report, Error>> {
        Box::pin(async move {
            let served = serve("conforming", at.seed).await?;
            let base = BaseUrl::parse(&served.urls[0]).map_err(Error::as_run)?;
            let settings = suite_settings(base, None, at.run, at.suite, load)?;
            let report = agent_tck::probe::run(&settings, &|_| {}).await;
            served.stop(Duration::from_millis(500)).await;
            report
        })
    }

    fn matrix(&self) -> (&'static str, &'static str) {
        ("tests/tck/toy/matrix.yaml", include_str!("matrix.yaml"))
    }

    fn check_behavior(&self, behavior: &str, transport: &str) -> Result<(), BehaviorError> {
        check_served_behavior(&Agents, behavior, transport)
    }

    fn matrix_row<'a>(&'a self, row: MatrixRow<'a>) -> BoxFuture<'a, Result<Report, Error>> {
        Box::pin(async move {
            let served = serve(row.behavior, row.seed).await?;
            let base = BaseUrl::parse(&served.urls[0]).map_err(Error::as_run)?;
            let mut settings = ProbeSettings::new(base, suite()?);
            settings.timeout = row.timeout;
            settings.seed = row.seed;
            let report = agent_tck::probe::run(&settings, &|_| {}).await;
            served.stop(Duration::from_millis(500)).await;
            report
        })
    }
}
