//! The self-test matrix: the probe against every mock behaviour must fail exactly the cases that
//! behaviour should break, and no others. The expectation is data (`mocks/matrix.yaml`,
//! embedded); `agent-tck selftest` prints the table, and a test holds the kit to it.

use std::collections::BTreeSet;
use std::path::Path;
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_saphyr::Spanned;

use crate::error::{Class, Error};
use crate::protocols::{self, MatrixRow, Protocol};
use crate::report::Status;
use crate::text::yaml_error;

/// Rows probed at once.
const ROWS_AT_ONCE: usize = 6;

/// The deadline of a run is at least the file's timeout, and at least this many times the
/// slowest measured start of a process (a 3 ms start, as on an idle machine, keeps 2 s).
const SPAWNS_PER_DEADLINE: u32 = 100;

/// ... and at least this many times the slowest measured loopback round trip.
const ROUND_TRIPS_PER_DEADLINE: u32 = 1000;

/// Samples of each measurement (the slowest counts).
const SAMPLES: usize = 5;

/// How the probe reaches the mock of a row.
const TRANSPORTS: [&str; 6] = [
    "http",
    "stdio",
    "stdio-per-turn",
    "tcp",
    "exec",
    "exec-stdin",
];

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MatrixFile {
    /// The protocol (a registry key); default: the round table.
    #[serde(default = "roundtable")]
    pub protocol: String,
    /// The probe's --timeout for every row (short: rows with slow or hung agents wait for it).
    /// It is a floor: on a busy machine the run's deadline grows with the round trips measured
    /// before it (see [`Calibration`]); durations in behaviours written `{deadline*1.5}` grow
    /// with it.
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
    /// http (default), stdio (one process), stdio-per-turn (a process per turn), tcp; for agents
    /// run as a command once per mode, exec (the mode in the command) or exec-stdin (on stdin).
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
    /// Why the row was run a second time, when it was (see [`is_about_time`]).
    pub retried: Option<String>,
}

/// The case id of a matrix row of `protocol` labelled `label`.
pub fn row_id(protocol: &str, label: &str) -> String {
    format!("matrix.{protocol}.{label}")
}

impl RowResult {
    pub fn ok(&self) -> bool {
        self.expected == self.actual
    }

    /// How many cases the probe judged (passed or failed, as opposed to skipped).
    pub fn judged(&self) -> usize {
        self.messages
            .iter()
            .filter(|(_, status, _)| matches!(status, Status::Pass | Status::Fail))
            .count()
    }
}

/// A matrix file that cannot be played as written: a usage error that names the file (and a
/// row's line).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MatrixFileError {
    /// Not the YAML of a matrix, or a timeout that is no duration.
    #[error("{0}")]
    Parse(String),
    /// The row at `at` (FILE:LINE): its transport, its behaviour or a case it names.
    #[error("{at}: {why}")]
    Row { at: String, why: String },
    /// The protocol could not list its cases.
    #[error("{0}")]
    Cases(String),
}

impl crate::error::LayerError for MatrixFileError {
    fn class(&self) -> crate::error::Class {
        crate::error::Class::Usage
    }
}

/// A matrix file, parsed: YAML errors and the timeout say where they are.
fn read(source: &str, text: &str) -> Result<MatrixFile, MatrixFileError> {
    let file: MatrixFile = serde_saphyr::from_str(text)
        .map_err(|e| MatrixFileError::Parse(yaml_error(source, &e.to_string())))?;
    crate::units::parse_duration(&file.timeout)
        .map_err(|e| MatrixFileError::Parse(format!("{source}: timeout: {e}")))?;
    Ok(file)
}

/// A matrix row's behaviour has a template other than `{deadline}`: a usage error of the
/// matrix file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{behavior:?}: a template other than {{deadline}} or {{deadline*F}}")]
pub struct TemplateError {
    pub behavior: String,
}

impl crate::error::LayerError for TemplateError {
    fn class(&self) -> crate::error::Class {
        crate::error::Class::Usage
    }
}

/// `behavior` with each `{deadline}` or `{deadline*F}` written as that duration in milliseconds:
/// a slow agent stays slower than the deadline however far a busy machine stretches it.
pub fn at_deadline(behavior: &str, deadline: Duration) -> Result<String, TemplateError> {
    static TEMPLATE: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"\{deadline(?:\*([0-9]+(?:\.[0-9]+)?))?\}").expect("a valid regex")
    });
    let text = TEMPLATE.replace_all(behavior, |c: &regex::Captures| {
        let factor: f64 = c.get(1).map_or(1.0, |f| f.as_str().parse().unwrap_or(1.0));
        format!(
            "{}ms",
            (deadline.as_secs_f64() * factor * 1000.0).round() as u64
        )
    });
    if text.contains('{') {
        return Err(TemplateError {
            behavior: behavior.to_string(),
        });
    }
    Ok(text.into_owned())
}

/// What a run's deadline is derived from: the slowest of a few process starts (the agent-tck
/// binary's `--version`) and loopback TCP round trips, measured just before the run. On a
/// machine busy with other work both grow, and so does the deadline, so that a starved probe
/// does not turn into a wrong verdict about a mock.
#[derive(Debug, Clone, Copy)]
pub struct Calibration {
    pub spawn: Duration,
    pub round_trip: Duration,
}

impl Calibration {
    pub async fn measure(exe: &Path) -> Result<Calibration, Error> {
        let mut spawn = Duration::ZERO;
        for _ in 0..SAMPLES {
            let started = Instant::now();
            let status = tokio::process::Command::new(exe)
                .arg("--version")
                .stdout(std::process::Stdio::null())
                .kill_on_drop(true)
                .status()
                .await
                .map_err(|e| Error::io(Class::Run, format!("cannot run {}:", exe.display()), e))?;
            if !status.success() {
                return Err(Error::run(format!("{} --version: {status}", exe.display())));
            }
            spawn = spawn.max(started.elapsed());
        }
        Ok(Calibration {
            spawn,
            round_trip: loopback_round_trip()
                .await
                .map_err(|e| Error::io(Class::Run, "a loopback round trip:", e))?,
        })
    }

    /// The deadline for a file whose timeout is `floor`.
    pub fn deadline(&self, floor: Duration) -> Duration {
        floor
            .max(self.spawn * SPAWNS_PER_DEADLINE)
            .max(self.round_trip * ROUND_TRIPS_PER_DEADLINE)
    }

    /// `at least the file's 2s, 100× the slowest of 5 process starts (3.1 ms), …`
    pub fn describe(&self, floor: Duration) -> String {
        format!(
            "at least the file's {}, {SPAWNS_PER_DEADLINE}× the slowest of {SAMPLES} process starts ({:.1} ms) and {ROUND_TRIPS_PER_DEADLINE}× the slowest of {SAMPLES} loopback round trips ({:.2} ms)",
            crate::units::format_duration(floor),
            self.spawn.as_secs_f64() * 1000.0,
            self.round_trip.as_secs_f64() * 1000.0
        )
    }
}

/// The slowest of a few loopback TCP round trips: a line written and echoed back.
async fn loopback_round_trip() -> std::io::Result<Duration> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, 0)).await?;
    let addr = listener.local_addr()?;
    let echo = tokio::spawn(async move {
        let (mut conn, _) = listener.accept().await?;
        let mut byte = [0u8; 1];
        while conn.read_exact(&mut byte).await.is_ok() {
            conn.write_all(&byte).await?;
        }
        std::io::Result::Ok(())
    });
    let mut conn = tokio::net::TcpStream::connect(addr).await?;
    conn.set_nodelay(true)?;
    let mut slowest = Duration::ZERO;
    let mut byte = [0u8; 1];
    for _ in 0..SAMPLES {
        let started = Instant::now();
        conn.write_all(b"x").await?;
        conn.read_exact(&mut byte).await?;
        slowest = slowest.max(started.elapsed());
    }
    drop(conn);
    echo.abort();
    Ok(slowest)
}

/// Whether a row's mismatch is about time alone: every case that failed unexpectedly failed on a
/// deadline (its message says it timed out or came too late). Such a row is run once more at
/// twice the deadline, and the table says so; any other mismatch is reported as it is.
pub fn is_about_time(row: &RowResult) -> bool {
    const WORDS: [&str; 4] = [
        "timed out",
        "no complete answer within",
        "deadline",
        "too late",
    ];
    let unexpected: Vec<&String> = row.actual.difference(&row.expected).collect();
    row.expected.is_subset(&row.actual)
        && !unexpected.is_empty()
        && unexpected.iter().all(|id| {
            row.messages
                .iter()
                .find(|(i, _, _)| i == *id)
                .is_some_and(|(_, _, m)| WORDS.iter().any(|w| m.contains(w)))
        })
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
        let file = read(source, text)?;
        let protocol = protocols::find(&file.protocol).ok_or_else(|| {
            Error::usage(format!(
                "{source}: no protocol {:?} (known: {})",
                file.protocol,
                protocols::names().join(", ")
            ))
        })?;
        Ok(Matrix::check(protocol, source, file)?)
    }

    /// The same for `protocol`, registered or not (the file must name it).
    pub fn of(
        protocol: &'static dyn Protocol,
        source: &'static str,
        text: &str,
    ) -> Result<Matrix, Error> {
        let file = read(source, text)?;
        if file.protocol != protocol.name() {
            return Err(Error::usage(format!(
                "{source}: the matrix is for {:?}, not {:?}",
                file.protocol,
                protocol.name()
            )));
        }
        Ok(Matrix::check(protocol, source, file)?)
    }

    fn check(
        protocol: &'static dyn Protocol,
        source: &'static str,
        file: MatrixFile,
    ) -> Result<Matrix, MatrixFileError> {
        let ids = protocol
            .case_ids()
            .map_err(|e| MatrixFileError::Cases(e.to_string()))?;
        // `read` has checked the timeout.
        let floor = crate::units::parse_duration(&file.timeout)
            .map_err(|e| MatrixFileError::Parse(e.to_string()))?;
        for row in &file.rows {
            let at = format!("{source}:{}", row.behavior.referenced.line());
            let wrong = |why: String| MatrixFileError::Row {
                at: at.clone(),
                why,
            };
            let t = row.transport.as_str();
            if !TRANSPORTS.contains(&t) {
                return Err(wrong(format!(
                    "transport {t:?} (expected {})",
                    TRANSPORTS.join(", ")
                )));
            }
            let behavior =
                at_deadline(&row.behavior.value, floor).map_err(|e| wrong(e.to_string()))?;
            protocol
                .capabilities()
                .selftest
                .check_behavior(&behavior, t)
                .map_err(|e| wrong(e.to_string()))?;
            if let Some(id) = row.fails.iter().find(|id| !ids.contains(id)) {
                return Err(wrong(format!(
                    "no case {id:?} in the built-in suite of {}",
                    file.protocol
                )));
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
            .map(|p| p.capabilities().selftest.matrix())
            .map(|(source, text)| Matrix::parse(source, text))
            .collect()
    }

    /// A name for headings: `round table (mocks/matrix.yaml)`.
    pub fn name(&self) -> String {
        format!("{} ({})", self.protocol.name(), self.source)
    }

    /// A row's label in the table and in its case id.
    fn label(&self, row: &Row) -> String {
        // Rows of a protocol served over one transport only are labelled by behaviour alone.
        let lines = self
            .protocol
            .capabilities()
            .agents
            .is_some_and(|served| served.agents.line_endpoint().is_some());
        if lines || row.transport != "http" {
            format!("{} ({})", row.behavior.value, row.transport)
        } else {
            row.behavior.value.clone()
        }
    }

    /// The case id of each row (`matrix.PROTOCOL.LABEL`), as the self-test's report names it.
    pub fn row_ids(&self) -> Vec<String> {
        self.file
            .rows
            .iter()
            .map(|row| row_id(self.protocol.name(), &self.label(row)))
            .collect()
    }

    /// Runs the rows, a few at a time: a mock agent per row, probed. (All at once, rows with
    /// 6 MB and endless bodies starve the others' timers on a small machine, and a starved probe
    /// can accept an answer that came after its deadline.) `exe` is the agent-tck binary, for
    /// rows whose agent runs over stdio.
    pub async fn run(&self, seed: u64, exe: &Path) -> Result<Vec<RowResult>, Error> {
        let deadline = self.deadline(exe).await?.0;
        self.run_at(deadline, seed, exe).await
    }

    /// The file's timeout.
    pub fn floor(&self) -> Duration {
        crate::units::parse_duration(&self.file.timeout).unwrap_or(Duration::from_secs(2))
    }

    /// The deadline for a run now (see [`Calibration`]), and what it was derived from.
    pub async fn deadline(&self, exe: &Path) -> Result<(Duration, String), Error> {
        let calibration = Calibration::measure(exe).await?;
        Ok((
            calibration.deadline(self.floor()),
            calibration.describe(self.floor()),
        ))
    }

    /// Runs the rows with `deadline` as the probe's --timeout.
    pub async fn run_at(
        &self,
        deadline: Duration,
        seed: u64,
        exe: &Path,
    ) -> Result<Vec<RowResult>, Error> {
        use futures::StreamExt;
        futures::stream::iter(
            self.file
                .rows
                .iter()
                .map(|row| self.run_row_once_more_if_late(row, deadline, seed, exe)),
        )
        .buffered(ROWS_AT_ONCE)
        .collect::<Vec<_>>()
        .await
        .into_iter()
        .collect()
    }

    /// A row, and once more at twice the deadline when its mismatch is about time alone.
    async fn run_row_once_more_if_late(
        &self,
        row: &Row,
        deadline: Duration,
        seed: u64,
        exe: &Path,
    ) -> Result<RowResult, Error> {
        let first = self.run_row(row, deadline, seed, exe).await?;
        if first.ok() || !is_about_time(&first) {
            return Ok(first);
        }
        let late: Vec<&str> = first
            .actual
            .difference(&first.expected)
            .map(String::as_str)
            .collect();
        let mut second = self.run_row(row, deadline * 2, seed, exe).await?;
        second.retried = Some(format!(
            "run again at {}: at {} {} failed on the deadline (a busy machine)",
            crate::units::format_duration(deadline * 2),
            crate::units::format_duration(deadline),
            late.join(", ")
        ));
        Ok(second)
    }

    async fn run_row(
        &self,
        row: &Row,
        timeout: Duration,
        seed: u64,
        exe: &Path,
    ) -> Result<RowResult, Error> {
        let started = Instant::now();
        let behavior = at_deadline(&row.behavior.value, timeout)?;
        let report = self
            .protocol
            .capabilities()
            .selftest
            .matrix_row(MatrixRow {
                behavior: &behavior,
                transport: &row.transport,
                only: &row.only,
                timeout,
                seed,
                exe,
            })
            .await?;
        let label = self.label(row);
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
            retried: None,
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
        if r.ok() && r.judged() == 0 {
            out.push_str(&format!(
                "{:<w$}  {:<4}  nothing judged: the probe skipped every case\n",
                r.behavior, "SKIP"
            ));
        } else if r.ok() {
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
        if let Some(why) = &r.retried {
            out.push_str(&format!("{:<w$}        ({why})\n", ""));
        }
    }
    let bad = results.iter().filter(|r| !r.ok()).count();
    let idle = results.iter().filter(|r| r.ok() && r.judged() == 0).count();
    // A row "passes" when exactly its expected cases failed, on cases the probe judged.
    out.push_str(&format!(
        "matrix: {} passed, {bad} failed{}\n",
        results.len() - bad - idle,
        if idle > 0 {
            format!(", {idle} judged nothing")
        } else {
            String::new()
        }
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_that_cannot_be_played_is_a_usage_error_at_its_line() {
        let matrix = |rows: &str| {
            Matrix::parse(
                "m.yaml",
                &format!("protocol: librarian\ntimeout: 5s\nrows:\n{rows}"),
            )
        };
        let no_flaw =
            "  - behavior: conforming\n    fails: []\n  - behavior: no-such-flaw\n    fails: []\n";
        assert_eq!(
            matrix(no_flaw).err().map(|e| e.shown()),
            Some((
                Class::Usage,
                format!(
                    "m.yaml:6: \"no-such-flaw\" is no Librarian flaw (known: conforming, {})",
                    crate::protocols::librarian::reference::Flaws::NAMES.join(", ")
                )
            ))
        );
        let over_stdio = "  - behavior: conforming\n    transport: stdio\n    fails: []\n";
        assert_eq!(
            matrix(over_stdio).err().map(|e| e.shown()),
            Some((
                Class::Usage,
                "m.yaml:4: the Librarian is served over http only, not stdio".into()
            ))
        );
        let no_case = "  - behavior: conforming\n    fails: [no.such-case]\n";
        assert_eq!(
            matrix(no_case).err().map(|e| e.shown()),
            Some((
                Class::Usage,
                "m.yaml:4: no case \"no.such-case\" in the built-in suite of librarian".into()
            ))
        );
    }

    #[test]
    fn deadline_templates_scale_and_others_are_refused() {
        let d = Duration::from_millis(2000);
        assert_eq!(
            at_deadline("slow:{deadline*1.5}", d).unwrap(),
            "slow:3000ms"
        );
        assert_eq!(
            at_deadline("slow:ttfb=10ms;body={deadline}", d).unwrap(),
            "slow:ttfb=10ms;body=2000ms"
        );
        assert_eq!(at_deadline("hang", d).unwrap(), "hang");
        let err = at_deadline("slow:{timeout}", d).unwrap_err().to_string();
        assert!(err.contains("{deadline*F}"), "{err}");
    }

    #[test]
    fn the_deadline_grows_with_slow_round_trips_and_never_drops_below_the_floor() {
        let floor = Duration::from_secs(2);
        let idle = Calibration {
            spawn: Duration::from_millis(3),
            round_trip: Duration::from_micros(100),
        };
        assert_eq!(idle.deadline(floor), floor);
        let busy = Calibration {
            spawn: Duration::from_millis(50),
            round_trip: Duration::from_millis(1),
        };
        assert_eq!(busy.deadline(floor), Duration::from_secs(5));
        let jittery = Calibration {
            spawn: Duration::from_millis(3),
            round_trip: Duration::from_millis(7),
        };
        assert_eq!(jittery.deadline(floor), Duration::from_secs(7));
        assert!(busy.describe(floor).contains("(50.0 ms)"));
    }

    fn row(expected: &[&str], actual: &[(&str, &str)]) -> RowResult {
        RowResult {
            behavior: "b".into(),
            expected: expected.iter().map(|s| s.to_string()).collect(),
            actual: actual.iter().map(|(id, _)| id.to_string()).collect(),
            messages: actual
                .iter()
                .map(|(id, m)| (id.to_string(), Status::Fail, m.to_string()))
                .collect(),
            duration: Duration::ZERO,
            retried: None,
        }
    }

    #[test]
    fn only_a_mismatch_made_of_deadlines_is_about_time() {
        let late = row(
            &["a.completes"],
            &[
                ("a.completes", "too big"),
                ("protocol.within-timeout", "1 of 9 exchanges timed out"),
            ],
        );
        assert!(is_about_time(&late));
        let wrong = row(&[], &[("a.schema", "missing field `x`")]);
        assert!(!is_about_time(&wrong));
        let mixed = row(
            &[],
            &[("a.schema", "missing field `x`"), ("b", "timed out")],
        );
        assert!(!is_about_time(&mixed));
        // An expected failure that did not happen is never a matter of a busy machine.
        let missing = row(&["a.schema", "b"], &[("b", "timed out")]);
        assert!(!is_about_time(&missing));
    }

    #[test]
    fn a_row_that_judged_nothing_is_not_counted_as_passed() {
        let broke = row(&["a.schema"], &[("a.schema", "missing field `x`")]);
        let mut idle = row(&[], &[]);
        idle.behavior = "idle".into();
        idle.messages = vec![("a.schema".into(), Status::Skip, "no answer".into())];
        let shown = render(&[broke, idle]);
        assert!(
            shown.contains("idle      SKIP  nothing judged: the probe skipped every case\n"),
            "{shown}"
        );
        assert!(
            shown.ends_with("matrix: 1 passed, 0 failed, 1 judged nothing\n"),
            "{shown}"
        );
    }

    #[deadline::test]
    async fn a_loopback_round_trip_is_measured() {
        let trip = loopback_round_trip().await.unwrap();
        assert!(
            trip > Duration::ZERO && trip < Duration::from_secs(30),
            "{trip:?}"
        );
    }
}
