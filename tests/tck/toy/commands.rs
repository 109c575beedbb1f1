//! The toy on the command line and in the self-test: `probe toy --url URL`, its cases, its
//! self-test (a conforming toy agent probed) and its matrix (`matrix.yaml` beside this file).

use std::path::Path;
use std::time::Duration;

use agent_tck::error::Error;
use agent_tck::mock::agent::{MockAgent, Profile};
use agent_tck::mock::behavior::{parse_list, For};
use agent_tck::mock::fleet::{self, Served};
use agent_tck::mock::protocol::AgentProtocol;
use agent_tck::probe::{ProbeSettings, Suite};
use agent_tck::protocols::plugin::{
    suite_probe, suite_probe_command, suite_settings, MatrixRow, ProbeJob, Protocol, Selftest,
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

impl Protocol for Toy {
    fn name(&self) -> &'static str {
        NAME
    }

    fn about(&self) -> &'static str {
        "A toy greeting protocol: POST /hello, /bye."
    }

    fn agents(&self) -> Option<&'static dyn AgentProtocol> {
        Some(&Agents)
    }

    fn probe_command(&self) -> Option<clap::Command> {
        Some(suite_probe_command(NAME, self.about()))
    }

    fn probe(&self, matches: &clap::ArgMatches) -> Result<ProbeJob, Error> {
        suite_probe(matches, |_| suite())
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

    fn selftest<'a>(&'a self, at: Selftest<'a>) -> BoxFuture<'a, Result<Report, Error>> {
        Box::pin(async move {
            let served = serve("conforming", at.seed).await?;
            let base = BaseUrl::parse(&served.urls[0]).map_err(|e| Error::Run(e.to_string()))?;
            let settings = suite_settings(base, None, at.run, at.suite, |_| suite())?;
            let report = agent_tck::probe::run(&settings, &|_| {}).await;
            served.stop(Duration::from_millis(500)).await;
            report
        })
    }

    fn matrix(&self) -> Option<(&'static str, &'static str)> {
        Some(("tests/tck/toy/matrix.yaml", include_str!("matrix.yaml")))
    }

    fn matrix_row<'a>(&'a self, row: MatrixRow<'a>) -> BoxFuture<'a, Result<Report, Error>> {
        Box::pin(async move {
            let served = serve(row.behavior, row.seed).await?;
            let base = BaseUrl::parse(&served.urls[0]).map_err(|e| Error::Run(e.to_string()))?;
            let mut settings = ProbeSettings::new(base, suite()?);
            settings.timeout = row.timeout;
            settings.seed = row.seed;
            let report = agent_tck::probe::run(&settings, &|_| {}).await;
            served.stop(Duration::from_millis(500)).await;
            report
        })
    }
}
