//! The self-test matrix: the probe against every mock behaviour must fail exactly the cases that
//! behaviour should break, and no others. The expectation is data (`mocks/matrix.yaml`,
//! embedded); `agent-tck selftest` prints the table, and a test holds the kit to it.

use std::collections::BTreeSet;
use std::net::{IpAddr, Ipv4Addr};
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_saphyr::Spanned;

use super::agent::{MockAgent, Profile};
use super::fleet::{self, Layout};
use super::journal::Journal;
use super::observe::Observer;
use crate::probe::{ProbeSettings, Suite};
use crate::report::Status;
use crate::transport::http::BaseUrl;

/// Rows probed at once.
const ROWS_AT_ONCE: usize = 6;

/// The embedded matrix.
pub const MATRIX: &str = include_str!("../../mocks/matrix.yaml");

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MatrixFile {
    /// The probe's --timeout for every row (short: rows with slow or hung agents wait for it).
    pub timeout: String,
    pub rows: Vec<Row>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Row {
    pub behavior: Spanned<String>,
    /// The case ids that must fail (every other case passes or is skipped).
    #[serde(default)]
    pub fails: Vec<String>,
}

/// One row's outcome.
#[derive(Debug, Clone)]
pub struct RowResult {
    pub behavior: String,
    pub expected: BTreeSet<String>,
    pub actual: BTreeSet<String>,
    /// Each case's status and message, to explain a mismatch.
    pub messages: Vec<(String, Status, String)>,
    pub duration: Duration,
}

impl RowResult {
    pub fn ok(&self) -> bool {
        self.expected == self.actual
    }
}

impl MatrixFile {
    /// Parses and checks: behaviours parse, case ids exist in the built-in suite.
    pub fn parse(source: &str, text: &str) -> Result<MatrixFile, String> {
        let file: MatrixFile = serde_saphyr::from_str(text)
            .map_err(|e| crate::probe::suite::yaml_error(source, &e.to_string()))?;
        crate::cli::parse_duration(&file.timeout).map_err(|e| format!("{source}: timeout: {e}"))?;
        let suite = Suite::builtin("roundtable")?;
        for row in &file.rows {
            let at = format!("{source}:{}", row.behavior.referenced.line());
            super::behavior::parse_list(&row.behavior.value).map_err(|e| format!("{at}: {e}"))?;
            for id in &row.fails {
                if suite.case(id).is_none() {
                    return Err(format!("{at}: no case {id:?} in the built-in suite"));
                }
            }
        }
        Ok(file)
    }

    pub fn builtin() -> Result<MatrixFile, String> {
        MatrixFile::parse("mocks/matrix.yaml", MATRIX)
    }

    /// Runs the rows, a few at a time: a mock agent per row on a loopback port, probed. (All at
    /// once, rows with 6 MB and endless bodies starve the others' timers on a small machine,
    /// and a starved probe can accept an answer that came after its deadline.)
    pub async fn run(&self, seed: u64) -> Result<Vec<RowResult>, String> {
        use futures::StreamExt;
        let timeout = crate::cli::parse_duration(&self.timeout)?;
        futures::stream::iter(self.rows.iter().map(|row| run_row(row, timeout, seed)))
            .buffered(ROWS_AT_ONCE)
            .collect::<Vec<_>>()
            .await
            .into_iter()
            .collect()
    }
}

async fn run_row(row: &Row, timeout: Duration, seed: u64) -> Result<RowResult, String> {
    let started = Instant::now();
    let items = super::behavior::parse_list(&row.behavior.value)?;
    let profile = Profile {
        name: "matrix-agent".into(),
        domain: "general review".into(),
        capabilities: Vec::new(),
        api_key: None,
    };
    let agent = MockAgent::new(profile, items, seed);
    let served = fleet::serve(
        vec![agent],
        Layout::PerAgent,
        IpAddr::V4(Ipv4Addr::LOCALHOST),
        0,
        Journal::off(started),
        Observer::new(timeout),
    )
    .await?;
    let base = BaseUrl::parse(&served.urls[0])?;
    let mut settings = ProbeSettings::new(base, Suite::builtin("roundtable")?);
    settings.timeout = timeout;
    settings.seed = seed;
    // One exchange at a time: `fail-first` and `flaky` then meet the requests in suite order.
    settings.concurrency = 1;
    let report = crate::probe::run(&settings, &|_| {}).await;
    served.stop(Duration::from_millis(500)).await;
    let report = report?;
    Ok(RowResult {
        behavior: row.behavior.value.clone(),
        expected: row.fails.iter().cloned().collect(),
        actual: report
            .cases
            .iter()
            .filter(|c| c.status == Status::Fail)
            .map(|c| c.id.clone())
            .collect(),
        messages: report
            .cases
            .iter()
            .map(|c| (c.id.clone(), c.status, c.message.clone()))
            .collect(),
        duration: started.elapsed(),
    })
}

/// The table `selftest` prints: a row per behaviour, its failing cases, and whether they are
/// exactly the expected ones.
pub fn render(results: &[RowResult]) -> String {
    let w = results
        .iter()
        .map(|r| r.behavior.len())
        .max()
        .unwrap_or(8)
        .max(8);
    let mut out = format!(
        "{:<w$}  {:<4}  cases that fail (expected = actual)\n",
        "behaviour", "ok"
    );
    for r in results {
        let list = |s: &BTreeSet<String>| {
            if s.is_empty() {
                "none".to_string()
            } else {
                s.iter().cloned().collect::<Vec<_>>().join(", ")
            }
        };
        if r.ok() {
            out.push_str(&format!(
                "{:<w$}  {:<4}  {}\n",
                r.behavior,
                "ok",
                list(&r.actual)
            ));
        } else {
            out.push_str(&format!(
                "{:<w$}  {:<4}  expected: {}\n{:<w$}        actual:   {}\n",
                r.behavior,
                "FAIL",
                list(&r.expected),
                "",
                list(&r.actual)
            ));
            for id in r.expected.symmetric_difference(&r.actual) {
                if let Some((_, status, message)) = r.messages.iter().find(|(i, _, _)| i == id) {
                    let message = crate::text::shorten(message, 300).replace('\n', " ");
                    out.push_str(&format!("{:<w$}        {id}: {status:?}: {message}\n", ""));
                }
            }
        }
    }
    let bad = results.iter().filter(|r| !r.ok()).count();
    // A row "passes" when exactly its expected cases failed.
    out.push_str(&format!(
        "matrix: {} passed, {bad} failed\n",
        results.len() - bad
    ));
    out
}
