//! The self-test matrix: the probe against every mock behaviour must fail exactly the cases that
//! behaviour should break, and no others. The expectation is data (`mocks/matrix.yaml`,
//! embedded); `agent-tck selftest` prints the table, and a test holds the kit to it.

use std::collections::BTreeSet;
use std::path::Path;
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_saphyr::Spanned;

use crate::error::Error;
use crate::protocols::{self, MatrixRow, Protocol};
use crate::report::Status;
use crate::text::yaml_error;

/// Rows probed at once.
const ROWS_AT_ONCE: usize = 6;

/// How the probe reaches the mock of a row.
const TRANSPORTS: [&str; 4] = ["http", "stdio", "stdio-per-turn", "tcp"];

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MatrixFile {
    /// The protocol (a registry key); default: the round table.
    #[serde(default = "roundtable")]
    pub protocol: String,
    /// The probe's --timeout for every row (short: rows with slow or hung agents wait for it).
    pub timeout: String,
    pub rows: Vec<Row>,
}

fn roundtable() -> String {
    "roundtable".into()
}

fn http() -> String {
    "http".into()
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Row {
    pub behavior: Spanned<String>,
    /// http (default), stdio (one process), stdio-per-turn (a process per turn), tcp.
    #[serde(default = "http")]
    pub transport: String,
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

/// A matrix file, parsed: YAML errors and the timeout say where they are.
fn read(source: &str, text: &str) -> Result<MatrixFile, String> {
    let file: MatrixFile =
        serde_saphyr::from_str(text).map_err(|e| yaml_error(source, &e.to_string()))?;
    crate::units::parse_duration(&file.timeout).map_err(|e| format!("{source}: timeout: {e}"))?;
    Ok(file)
}

/// A matrix and the protocol it is for.
pub struct Matrix {
    pub source: &'static str,
    pub protocol: &'static dyn Protocol,
    pub file: MatrixFile,
}

impl Matrix {
    /// Parses and checks: the protocol is registered and plays agents; behaviours parse and fit
    /// the row's transport; the case ids are the protocol's.
    pub fn parse(source: &'static str, text: &str) -> Result<Matrix, Error> {
        let file = read(source, text).map_err(Error::Usage)?;
        let protocol = protocols::find(&file.protocol).ok_or_else(|| {
            Error::usage(format!(
                "{source}: no protocol {:?} (known: {})",
                file.protocol,
                protocols::names().join(", ")
            ))
        })?;
        Matrix::check(protocol, source, file).map_err(Error::Usage)
    }

    /// The same for `protocol`, registered or not (the file must name it).
    pub fn of(
        protocol: &'static dyn Protocol,
        source: &'static str,
        text: &str,
    ) -> Result<Matrix, Error> {
        let file = read(source, text).map_err(Error::Usage)?;
        if file.protocol != protocol.name() {
            return Err(Error::usage(format!(
                "{source}: the matrix is for {:?}, not {:?}",
                file.protocol,
                protocol.name()
            )));
        }
        Matrix::check(protocol, source, file).map_err(Error::Usage)
    }

    fn check(
        protocol: &'static dyn Protocol,
        source: &'static str,
        file: MatrixFile,
    ) -> Result<Matrix, String> {
        let ids = protocol.case_ids().map_err(|e| e.to_string())?;
        for row in &file.rows {
            let at = format!("{source}:{}", row.behavior.referenced.line());
            let t = row.transport.as_str();
            if !TRANSPORTS.contains(&t) {
                return Err(format!(
                    "{at}: transport {t:?} (expected {})",
                    TRANSPORTS.join(", ")
                ));
            }
            protocol
                .check_behavior(&row.behavior.value, t)
                .map_err(|e| format!("{at}: {e}"))?;
            for id in &row.fails {
                if !ids.contains(id) {
                    return Err(format!(
                        "{at}: no case {id:?} in the built-in suite of {}",
                        file.protocol
                    ));
                }
            }
        }
        Ok(Matrix {
            source,
            protocol,
            file,
        })
    }

    /// Every registered protocol's matrix.
    pub fn builtin() -> Result<Vec<Matrix>, Error> {
        protocols::REGISTRY
            .iter()
            .filter_map(|p| p.matrix())
            .map(|(source, text)| Matrix::parse(source, text))
            .collect()
    }

    /// A name for headings: `round table (mocks/matrix.yaml)`.
    pub fn name(&self) -> String {
        format!("{} ({})", self.protocol.name(), self.source)
    }

    /// Runs the rows, a few at a time: a mock agent per row, probed. (All at once, rows with
    /// 6 MB and endless bodies starve the others' timers on a small machine, and a starved probe
    /// can accept an answer that came after its deadline.) `exe` is the agent-tck binary, for
    /// rows whose agent runs over stdio.
    pub async fn run(&self, seed: u64, exe: &Path) -> Result<Vec<RowResult>, Error> {
        use futures::StreamExt;
        let timeout = crate::units::parse_duration(&self.file.timeout).map_err(Error::Usage)?;
        futures::stream::iter(
            self.file
                .rows
                .iter()
                .map(|row| self.run_row(row, timeout, seed, exe)),
        )
        .buffered(ROWS_AT_ONCE)
        .collect::<Vec<_>>()
        .await
        .into_iter()
        .collect()
    }

    async fn run_row(
        &self,
        row: &Row,
        timeout: Duration,
        seed: u64,
        exe: &Path,
    ) -> Result<RowResult, Error> {
        let started = Instant::now();
        let report = self
            .protocol
            .matrix_row(MatrixRow {
                behavior: &row.behavior.value,
                transport: &row.transport,
                only: &row.only,
                timeout,
                seed,
                exe,
            })
            .await?;
        // Rows of a protocol served over one transport only are labelled by behaviour alone.
        let lines = self
            .protocol
            .agents()
            .is_some_and(|a| a.line_endpoint().is_some());
        let label = if lines {
            format!("{} ({})", row.behavior.value, row.transport)
        } else {
            row.behavior.value.clone()
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
