//! The self-test matrix: the probe against every mock behaviour must fail exactly the cases that
//! behaviour should break, and no others. The expectation is data (`mocks/matrix.yaml`,
//! embedded); `agent-tck selftest` prints the table, and a test holds the kit to it.

use std::collections::BTreeSet;
use std::net::{IpAddr, Ipv4Addr};
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_saphyr::Spanned;

use std::path::Path;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::agent::{MockAgent, Profile};
use super::fleet::{self, Layout};
use super::journal::Journal;
use super::observe::Observer;
use super::task_agent::TaskAgent;
use crate::probe::scenario::Scenario;
use crate::probe::task::{Target, TaskSettings};
use crate::probe::{ProbeSettings, Suite};
use crate::report::Report;
use crate::report::Status;
use crate::text::shell_quote;
use crate::transport::http::BaseUrl;
use crate::transport::socket::{SocketAddrSpec, SocketMode};
use crate::transport::stdio::{StdioConfig, StdioMode};

/// Rows probed at once.
const ROWS_AT_ONCE: usize = 6;

/// The embedded matrices: the round table's, then execute_task's.
pub const MATRICES: &[(&str, &str)] = &[
    ("mocks/matrix.yaml", include_str!("../../mocks/matrix.yaml")),
    (
        "mocks/matrix-execute-task.yaml",
        include_str!("../../mocks/matrix-execute-task.yaml"),
    ),
];

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MatrixProtocol {
    #[default]
    Roundtable,
    ExecuteTask,
}

/// How the probe reaches the mock of a row.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RowTransport {
    #[default]
    Http,
    /// `agent-tck mock agent --stdio`, one process (persistent).
    Stdio,
    /// The same, a process per turn.
    StdioPerTurn,
    /// The line server on a loopback TCP port.
    Tcp,
}

impl RowTransport {
    fn name(self) -> &'static str {
        match self {
            RowTransport::Http => "http",
            RowTransport::Stdio => "stdio",
            RowTransport::StdioPerTurn => "stdio-per-turn",
            RowTransport::Tcp => "tcp",
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MatrixFile {
    #[serde(default)]
    pub protocol: MatrixProtocol,
    /// The probe's --timeout for every row (short: rows with slow or hung agents wait for it).
    pub timeout: String,
    pub rows: Vec<Row>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Row {
    pub behavior: Spanned<String>,
    #[serde(default)]
    pub transport: RowTransport,
    /// Probe only these cases (globs; execute_task rows whose agent hangs keep the run short).
    #[serde(default)]
    pub only: Vec<String>,
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
    /// Parses and checks: behaviours parse and fit the row's protocol and transport; round-table
    /// case ids exist in the built-in suite.
    pub fn parse(source: &str, text: &str) -> Result<MatrixFile, String> {
        let file: MatrixFile = serde_saphyr::from_str(text)
            .map_err(|e| crate::probe::suite::yaml_error(source, &e.to_string()))?;
        crate::cli::parse_duration(&file.timeout).map_err(|e| format!("{source}: timeout: {e}"))?;
        let suite = Suite::builtin("roundtable")?;
        let task = file.protocol == MatrixProtocol::ExecuteTask;
        for row in &file.rows {
            let at = format!("{source}:{}", row.behavior.referenced.line());
            let items = super::behavior::parse_list(&row.behavior.value)
                .map_err(|e| format!("{at}: {e}"))?;
            let t = row.transport;
            let stdio = matches!(t, RowTransport::Stdio | RowTransport::StdioPerTurn);
            if !task && t != RowTransport::Http {
                return Err(format!("{at}: round-table rows run over http only"));
            }
            super::behavior::check_fit(&items, task, t == RowTransport::Http, stdio)
                .map_err(|e| format!("{at}: {e}"))?;
            for id in row.fails.iter().filter(|_| !task) {
                if suite.case(id).is_none() {
                    return Err(format!("{at}: no case {id:?} in the built-in suite"));
                }
            }
        }
        Ok(file)
    }

    /// Every built-in matrix.
    pub fn builtin() -> Result<Vec<MatrixFile>, String> {
        MATRICES
            .iter()
            .map(|(source, text)| MatrixFile::parse(source, text))
            .collect()
    }

    /// Runs the rows, a few at a time: a mock agent per row, probed. (All at once, rows with
    /// 6 MB and endless bodies starve the others' timers on a small machine, and a starved probe
    /// can accept an answer that came after its deadline.) `exe` is the agent-tck binary, for
    /// rows whose agent runs over stdio.
    pub async fn run(&self, seed: u64, exe: &Path) -> Result<Vec<RowResult>, String> {
        use futures::StreamExt;
        let timeout = crate::cli::parse_duration(&self.timeout)?;
        let protocol = self.protocol;
        futures::stream::iter(
            self.rows
                .iter()
                .map(|row| run_row(protocol, row, timeout, seed, exe)),
        )
        .buffered(ROWS_AT_ONCE)
        .collect::<Vec<_>>()
        .await
        .into_iter()
        .collect()
    }
}

async fn run_row(
    protocol: MatrixProtocol,
    row: &Row,
    timeout: Duration,
    seed: u64,
    exe: &Path,
) -> Result<RowResult, String> {
    let started = Instant::now();
    let report = match protocol {
        MatrixProtocol::Roundtable => roundtable_row(row, timeout, seed).await?,
        MatrixProtocol::ExecuteTask => task_row(row, timeout, seed, exe).await?,
    };
    let label = match protocol {
        MatrixProtocol::Roundtable => row.behavior.value.clone(),
        MatrixProtocol::ExecuteTask => format!("{} ({})", row.behavior.value, row.transport.name()),
    };
    Ok(RowResult {
        behavior: label,
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

fn matrix_profile() -> Profile {
    Profile {
        name: "matrix-agent".into(),
        domain: "general review".into(),
        capabilities: Vec::new(),
        api_key: None,
    }
}

/// Serves one mock agent over HTTP on a loopback port.
async fn serve_http(agent: MockAgent, timeout: Duration) -> Result<fleet::Served, String> {
    fleet::serve(
        vec![agent],
        Layout::PerAgent,
        IpAddr::V4(Ipv4Addr::LOCALHOST),
        0,
        Journal::off(Instant::now()),
        Observer::new(timeout),
    )
    .await
}

async fn roundtable_row(row: &Row, timeout: Duration, seed: u64) -> Result<Report, String> {
    let items = super::behavior::parse_list(&row.behavior.value)?;
    let served = serve_http(MockAgent::new(matrix_profile(), items, seed), timeout).await?;
    let base = BaseUrl::parse(&served.urls[0])?;
    let mut settings = ProbeSettings::new(base, Suite::builtin("roundtable")?);
    settings.timeout = timeout;
    settings.seed = seed;
    // One exchange at a time: `fail-first` and `flaky` then meet the requests in suite order.
    settings.concurrency = 1;
    let report = crate::probe::run(&settings, &|_| {}).await;
    served.stop(Duration::from_millis(500)).await;
    report
}

async fn task_row(row: &Row, timeout: Duration, seed: u64, exe: &Path) -> Result<Report, String> {
    let items = super::behavior::parse_list(&row.behavior.value)?;
    let scenarios = Scenario::builtin();
    let agent = || {
        let reference = Box::new(TaskAgent::with_scenarios("matrix-agent", &scenarios));
        MockAgent::with_responder(matrix_profile(), items.clone(), seed, reference, true)
    };
    let stop = CancellationToken::new();
    let mut http = None;
    let target = match row.transport {
        RowTransport::Http => {
            let served = serve_http(agent(), timeout).await?;
            let base = BaseUrl::parse(&served.urls[0])?;
            http = Some(served);
            Target::Http {
                base,
                api_key: None,
            }
        }
        RowTransport::Tcp => {
            let listener = tokio::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
                .await
                .map_err(|e| e.to_string())?;
            let addr = listener.local_addr().map_err(|e| e.to_string())?;
            tokio::spawn(super::line_server::serve_tcp(
                Arc::new(agent()),
                listener,
                stop.clone(),
            ));
            Target::Socket {
                addr: SocketAddrSpec::Tcp(addr.to_string()),
                mode: SocketMode::Persistent,
            }
        }
        RowTransport::Stdio | RowTransport::StdioPerTurn => {
            let command = format!(
                "{} mock agent --protocol execute-task --stdio --name matrix-agent --seed {seed} --behavior {}",
                shell_quote(&exe.display().to_string()),
                shell_quote(&row.behavior.value)
            );
            let mode = if row.transport == RowTransport::Stdio {
                StdioMode::Persistent
            } else {
                StdioMode::PerTurn
            };
            Target::Stdio(StdioConfig::new(command, mode))
        }
    };
    let settings = TaskSettings {
        target,
        timeout,
        max_body: 5_000_000,
        max_turns: None,
        scenarios,
        seed,
        only: row.only.clone(),
        strict: false,
    };
    let report = crate::probe::task::run(&settings, &|_| {}).await;
    stop.cancel();
    if let Some(served) = http {
        served.stop(Duration::from_millis(500)).await;
    }
    report
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
