//! The result model shared by every role (probe verdicts, later mock observations), and its
//! reporters: console, JUnit XML, JSON. A reporter reads a finished [`Report`]; nothing else
//! formats results.

pub mod baseline;
mod case;
pub mod compact;
pub mod console;
pub mod ctrf;
pub mod explained;
pub mod html;
pub mod json;
pub mod junit;
pub mod lint;
pub mod merge_stream;
pub mod output;
#[cfg(test)]
mod shown;
pub mod targets_page;
pub mod tools;

use serde::{Deserialize, Serialize};

use crate::text::Redactor;

pub use case::{CaseResult, Evidence, Exchange, Kind, Level, Status, NO_EVIDENCE, NO_REASON};

/// Every command's exit status, in one place (README, "Exit status"): what a verdict, a usage
/// error or an interruption exits with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// No MUST case failed (nor a SHOULD one under `--strict`), and something was judged.
    Passed = 0,
    /// A MUST case failed (or a SHOULD one under `--strict`), nothing was judged, or the run
    /// could not go on (a port in use, a report that cannot be written).
    Failed = 1,
    /// A usage or configuration error, explained in one line on stderr.
    Usage = 2,
    /// Interrupted (Ctrl-C or SIGTERM) while judging — a probe, `selftest`, `mock fleet` driving a
    /// platform — after writing the report with the cases done (the rest marked not run).
    Interrupted = 130,
}

impl Exit {
    /// `Failed` when `failed`, else `Passed`.
    pub fn failed_if(failed: bool) -> Exit {
        if failed {
            Exit::Failed
        } else {
            Exit::Passed
        }
    }

    /// The process's exit status.
    pub fn code(self) -> u8 {
        self as u8
    }
}

/// So that a test may write `assert_eq!(report.exit_code(), 1)`.
impl PartialEq<i32> for Exit {
    fn eq(&self, other: &i32) -> bool {
        i32::from(self.code()) == *other
    }
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// The conformance cases counted (evaluation cases are scored apart, in `evaluation`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Summary {
    pub passed: usize,
    pub failed: usize,
    pub skipped: usize,
    /// Failed cases by level.
    pub failed_must: usize,
    pub failed_should: usize,
    pub failed_may: usize,
    /// Failures the baseline expected (`xfail`), and baseline entries that passed (`stale`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub xfailed: usize,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub stale: usize,
    /// SHOULD failures that do not fail the run (not `--strict`): counted in `failed` too (as
    /// ever), and shown as warnings, not failures, by the console and the HTML report.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub warnings: usize,
    /// The evaluation score, when the run had evaluation cases.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evaluation: Option<Score>,
    /// MUST cases skipped for want of evidence. When every MUST case of a run is one, the run
    /// judged nothing and is not green.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub skipped_must: usize,
    /// MUST cases in all (conformance).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub must: usize,
    /// MUST cases that judged their rule ([`CaseResult::judged_must`]): none, with MUST cases in
    /// the run, is a run that judged nothing. Absent in older reports, which fall back to
    /// `must - skipped_must` ([`Summary::judged`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judged_must: Option<usize>,
    /// MUST failures the baseline expected (xfail): not judged, as far as "nothing judged" goes.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub xfailed_must: usize,
    /// MUST cases that passed as preconditions only (the peer was reachable): judged no rule.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub precondition_must: usize,
}

/// How many of a run's expectations were met.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Score {
    pub met: usize,
    pub unmet: usize,
    /// Not judged (the scenario did not complete): counted as not met in the score.
    pub unjudged: usize,
}

impl Score {
    pub fn total(&self) -> usize {
        self.met + self.unmet + self.unjudged
    }

    /// met / total; None with nothing to score.
    pub fn fraction(&self) -> Option<f64> {
        (self.total() > 0).then(|| self.met as f64 / self.total() as f64)
    }
}

impl std::fmt::Display for Score {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{} expectations met", self.met, self.total())?;
        if let Some(fraction) = self.fraction() {
            write!(f, " ({:.0}%)", fraction * 100.0)?;
        }
        if self.unjudged > 0 {
            write!(
                f,
                ", {} not judged (their scenario did not complete)",
                self.unjudged
            )?;
        }
        Ok(())
    }
}

impl Summary {
    pub fn of(cases: &[CaseResult]) -> Summary {
        let mut s = Summary::default();
        for case in cases {
            if case.kind == Kind::Evaluation {
                let score = s.evaluation.get_or_insert_with(Score::default);
                match case.status {
                    Status::Pass | Status::Stale => score.met += 1,
                    Status::Fail | Status::Xfail => score.unmet += 1,
                    Status::Skip => score.unjudged += 1,
                }
                continue;
            }
            if case.level == Level::Must {
                s.must += 1;
                s.skipped_must += usize::from(case.status == Status::Skip);
                s.xfailed_must += usize::from(case.status == Status::Xfail);
                s.precondition_must += usize::from(
                    case.precondition && matches!(case.status, Status::Pass | Status::Stale),
                );
                *s.judged_must.get_or_insert(0) += usize::from(case.judged_must());
            }
            match case.status {
                Status::Pass => s.passed += 1,
                Status::Skip => s.skipped += 1,
                Status::Xfail => s.xfailed += 1,
                Status::Stale => s.stale += 1,
                Status::Fail => {
                    s.failed += 1;
                    match case.level {
                        Level::Must => s.failed_must += 1,
                        Level::Should => s.failed_should += 1,
                        Level::May => s.failed_may += 1,
                    }
                }
            }
        }
        s
    }

    /// How many MUST cases judged their rule: [`Summary::judged_must`], or for a report written
    /// before it was counted, the MUST cases not skipped.
    pub fn judged(&self) -> usize {
        self.judged_must
            .unwrap_or(self.must.saturating_sub(self.skipped_must))
    }

    /// The failures that fail the run: MUST ones, and SHOULD ones under `--strict` (not the
    /// warnings, nor the MAY failures, which are noted).
    pub fn failing(&self) -> usize {
        self.failed - self.warnings - self.failed_may
    }
}

/// A whole run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    pub tool: String,
    pub version: String,
    /// `probe` (we played the platform) or `mock` (we played the agents).
    pub role: String,
    pub protocol: String,
    /// What was tested: the agent's base URL, or the platform.
    pub target: String,
    /// The seed the run's choices came from; absent where nothing was chosen by one (a lint, a
    /// merge of runs, a Librarian mock).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// The command that made the report (`probe orchestration`, `mock fleet`), when it is not
    /// `ROLE PROTOCOL`: the title the reports show.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// Whether SHOULD failures fail the run.
    pub strict: bool,
    /// RFC 3339, UTC.
    pub started_at: String,
    pub duration_ms: u64,
    pub summary: Summary,
    pub cases: Vec<CaseResult>,
    /// What a reader should know about the run itself (e.g. how a short key was masked).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// `--min-score`: an evaluation score below it fails the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_score: Option<f64>,
    /// A mock's requests over time (what the HTML report plots), bounded.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub timeline: Vec<Span>,
    /// A number per label, plotted as bars in the HTML report (execute_task: turns per
    /// scenario).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub counts: Vec<Count>,
    /// On a target's report of a run over many targets (`--targets`), written once its probe
    /// finished: a hash of what made it (the protocol and the target's command line, secret
    /// values left out), which `--resume` compares with the command line of the run resumed.
    /// Absent elsewhere, and in older reports (which are never resumed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fingerprint: Option<String>,
    /// Set when Ctrl-C or SIGTERM cut the run short: the report holds what was done before, and
    /// is no verdict ([`Report::exit_code`] is [`Exit::Interrupted`] whatever the cases say).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interrupted: Option<Interruption>,
    /// The spec each protocol of the run was judged by, and the suite (see
    /// [`crate::specs::JudgedBy`]); the command line fills it in before the report is shown.
    /// Empty in a report written before reports named their spec: "not recorded".
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub judged_by: Vec<crate::specs::JudgedBy>,
    /// A user's suite file the cases came from (`--suite FILE`), as the probe read it: moved
    /// into [`Report::judged_by`] when the report is stamped; never written as such.
    #[serde(skip)]
    pub suite_file: Option<crate::specs::SuiteFile>,
}

/// The signal that ended a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Signal {
    /// Ctrl-C.
    #[serde(rename = "SIGINT")]
    Interrupt,
    #[serde(rename = "SIGTERM")]
    Terminate,
}

impl std::fmt::Display for Signal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Signal::Interrupt => "Ctrl-C",
            Signal::Terminate => "SIGTERM",
        })
    }
}

/// Most ids [`Interruption::not_reached`] lists (the rest are counted).
pub const NOT_REACHED_LISTED: usize = 50;

/// How a run was cut short: when, by what, what it had judged, and what it never reached.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Interruption {
    pub by: Signal,
    /// When the signal came, after the run's start.
    pub after_ms: u64,
    /// Cases judged before it came (passed, failed, or expected to fail; not a precondition).
    pub judged: usize,
    /// The cases of the run: judged, skipped, and not reached.
    pub cases: usize,
    /// The first [`NOT_REACHED_LISTED`] cases it kept from running.
    pub not_reached: Vec<String>,
    /// How many it kept from running in all.
    pub not_reached_count: usize,
}

impl Interruption {
    /// The interruption by `by`, `after` the start, of a run whose cases are `cases`, those for
    /// which `reached` is false never run.
    pub fn of(
        by: Signal,
        after: std::time::Duration,
        cases: &[CaseResult],
        reached: impl Fn(&CaseResult) -> bool,
    ) -> Interruption {
        let (mut not_reached, mut not_reached_count, mut judged) = (Vec::new(), 0, 0);
        for c in cases {
            if !reached(c) {
                not_reached_count += 1;
                if not_reached.len() < NOT_REACHED_LISTED {
                    not_reached.push(c.id.clone());
                }
            } else if c.status != Status::Skip && !c.precondition {
                // A reachability pass judged no rule (see `CaseResult::precondition`).
                judged += 1;
            }
        }
        Interruption {
            by,
            after_ms: after.as_millis() as u64,
            judged,
            cases: cases.len(),
            not_reached,
            not_reached_count,
        }
    }

    /// What every reporter says of it: `INTERRUPTED (Ctrl-C) after 2.1 s — 1 of 40 cases
    /// judged, 38 not reached; not a verdict`.
    pub fn headline(&self) -> String {
        format!(
            "INTERRUPTED ({}) after {:.1} s — {} of {} judged, {} not reached; not a verdict",
            self.by,
            self.after_ms as f64 / 1000.0,
            self.judged,
            crate::text::count(self.cases as u64, "cases"),
            self.not_reached_count
        )
    }

    /// The interruptions of parts merged into one: the first signal, the latest moment, the
    /// counts added, the ids not reached as `label: id` (`label` each part's prefix, if any).
    pub fn merged<'a>(
        parts: impl IntoIterator<Item = (&'a Interruption, Option<&'a str>)>,
    ) -> Option<Interruption> {
        let mut merged: Option<Interruption> = None;
        for (part, label) in parts {
            let m = merged.get_or_insert(Interruption {
                by: part.by,
                after_ms: 0,
                judged: 0,
                cases: 0,
                not_reached: Vec::new(),
                not_reached_count: 0,
            });
            m.after_ms = m.after_ms.max(part.after_ms);
            m.judged += part.judged;
            m.cases += part.cases;
            m.not_reached_count += part.not_reached_count;
            let room = NOT_REACHED_LISTED.saturating_sub(m.not_reached.len());
            m.not_reached
                .extend(part.not_reached.iter().take(room).map(|id| match label {
                    Some(l) => format!("{l}: {id}"),
                    None => id.clone(),
                }));
        }
        merged
    }
}

/// One bar of [`Report::counts`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Count {
    pub label: String,
    pub value: u64,
    pub unit: String,
}

/// One request a mock agent answered: when, for how long, how it ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Span {
    /// The agent, and its behaviours (`slow [slow:ttfb=2s]`).
    pub lane: String,
    /// The endpoint.
    pub label: String,
    /// Since the run started.
    pub start_ms: u64,
    pub duration_ms: u64,
    /// How the answer ended: complete, reset, closed, hung, peer-gone, shutdown.
    pub outcome: String,
}

/// Where a run stands before its report is made: what is needed besides the cases.
pub struct RunInfo {
    pub role: &'static str,
    pub protocol: String,
    pub target: String,
    pub seed: Option<u64>,
    /// See [`Report::command`].
    pub command: Option<String>,
    pub strict: bool,
    pub started_at: String,
    pub started: std::time::Instant,
}

impl RunInfo {
    /// Starts the clock of a run (`seed`: a number, or `None` for a run that chooses nothing).
    pub fn start(
        role: &'static str,
        protocol: impl Into<String>,
        target: impl Into<String>,
        seed: impl Into<Option<u64>>,
        strict: bool,
    ) -> RunInfo {
        RunInfo {
            role,
            protocol: protocol.into(),
            target: target.into(),
            seed: seed.into(),
            command: None,
            strict,
            started_at: now_rfc3339(),
            started: std::time::Instant::now(),
        }
    }

    /// The same run, made by `command` (`probe orchestration`): its reports are titled so.
    pub fn made_by(mut self, command: impl Into<String>) -> RunInfo {
        self.command = Some(command.into());
        self
    }

    /// The same run, with no seed: for a judge that chooses nothing (a journal read back).
    pub fn seedless(mut self) -> RunInfo {
        self.seed = None;
        self
    }

    /// The finished report, with every secret redacted.
    pub fn report(self, mut cases: Vec<CaseResult>, redactor: &Redactor) -> Report {
        // The section the catalogue gives each case (held true to the spec by a test), so that
        // the report, `suites list` and `explain` say the same.
        let sections = explained::sections(&self.protocol);
        for case in &mut cases {
            case.settle();
            if let Some(section) = sections.get(&case.id) {
                case.spec.clone_from(section);
            }
        }
        let mut report = Report {
            tool: "agent-tck".into(),
            version: crate::VERSION.into(),
            role: self.role.into(),
            protocol: self.protocol,
            target: self.target,
            seed: self.seed,
            command: self.command,
            strict: self.strict,
            started_at: self.started_at,
            duration_ms: self.started.elapsed().as_millis() as u64,
            summary: Summary::default(),
            cases,
            notes: Vec::new(),
            min_score: None,
            timeline: Vec::new(),
            counts: Vec::new(),
            fingerprint: None,
            interrupted: None,
            judged_by: Vec::new(),
            suite_file: None,
        };
        report.summarize();
        report.redact(redactor);
        if redactor.has_short_secret() {
            report.notes.push(format!(
                "a key shorter than {} characters is masked where it was sent (Authorization \
                 headers, reproduce commands) but not searched for in answers and messages: it \
                 would mask ordinary words",
                crate::text::MIN_SEARCHED_SECRET
            ));
        }
        report
    }
}

impl Report {
    /// What the reports are titled: the command that made it (`probe orchestration`, `mock
    /// fleet`), else `ROLE PROTOCOL` (`probe roundtable`).
    pub fn title(&self) -> String {
        match &self.command {
            Some(command) => command.clone(),
            None => format!("{} {}", self.role, self.protocol),
        }
    }

    /// What every format's header says of the specs the run was judged by: a line per protocol
    /// (`roundtable: judged by "…" (specs/…, no version given, sha256 …); built-in suite of
    /// agent-tck 0.1.0`, the digest cut to `digits`), or that the report records none.
    pub fn judged_by_lines(&self, digits: usize) -> Vec<String> {
        if self.judged_by.is_empty() {
            return vec![format!("spec: {}", crate::specs::NOT_RECORDED)];
        }
        self.judged_by.iter().map(|by| by.line(digits)).collect()
    }

    /// ` · seed N` for a header, nothing for a run without a seed.
    pub fn seed_text(&self) -> String {
        self.seed
            .map(|s| format!(" · seed {s}"))
            .unwrap_or_default()
    }

    /// Counts the cases again (after they changed: a baseline applied, reports merged), with
    /// the SHOULD failures that do not fail the run counted as warnings.
    pub fn summarize(&mut self) {
        self.summary = Summary::of(&self.cases);
        if !self.strict {
            self.summary.warnings = self.summary.failed_should;
        }
    }

    /// The stale baseline entries that fail the run (`--strict`), by case id.
    pub fn blocking_stale(&self) -> Vec<&str> {
        self.cases
            .iter()
            .filter(|c| c.status == Status::Stale && self.is_blocking(c))
            .map(|c| c.id.as_str())
            .collect()
    }

    /// 130 for an interrupted run (no verdict, whatever its cases say); else 0: no MUST failure
    /// (and, under `--strict`, no SHOULD failure), no gated expectation unmet, the evaluation
    /// score not below `--min-score`, something judged; 1 otherwise.
    pub fn exit_code(&self) -> Exit {
        self.exit_given(self.cases.iter().any(|c| self.is_blocking(c)))
    }

    /// [`Report::exit_code`], `blocked` saying whether a case fails the run (a merge written as
    /// it reads counts them as it goes, holding no case).
    pub fn exit_given(&self, blocked: bool) -> Exit {
        if self.interrupted.is_some() {
            return Exit::Interrupted;
        }
        Exit::failed_if(blocked || self.below_min_score() || self.judged_nothing())
    }

    /// Whether the run had MUST cases and judged none of their rules (each skipped, expected to
    /// fail by the baseline, or a reachability-only pass): such a run is not green, whatever
    /// else it printed or a baseline says.
    pub fn judged_nothing(&self) -> bool {
        self.summary.must > 0 && self.summary.judged() == 0
    }

    /// Why the run judged nothing, as every reporter says it (None when it judged something):
    /// what was counted and what was not.
    pub fn nothing_judged_reason(&self) -> Option<String> {
        if !self.judged_nothing() {
            return None;
        }
        let s = &self.summary;
        if s.xfailed_must == 0 && s.precondition_must == 0 {
            return Some(format!(
                "nothing judged: {} skipped for want of evidence (not a pass)",
                match s.must {
                    1 => "the one MUST case".to_string(),
                    n => format!("all {n} MUST cases"),
                }
            ));
        }
        let mut not = vec![format!("{} skipped", s.skipped_must)];
        if s.xfailed_must > 0 {
            not.push(crate::text::count(
                s.xfailed_must as u64,
                "expected failures by the baseline",
            ));
        }
        if s.precondition_must > 0 {
            not.push(format!("{} reachability only", s.precondition_must));
        }
        Some(format!(
            "nothing judged: no MUST rule was judged ({}) — not a pass",
            not.join(", ")
        ))
    }

    /// Whether `--min-score` was given and the evaluation score is below it (a run with nothing
    /// to score is not below it).
    pub fn below_min_score(&self) -> bool {
        let score = self.summary.evaluation.and_then(|s| s.fraction());
        matches!((self.min_score, score), (Some(min), Some(got)) if got < min)
    }

    /// Whether this failed case fails the run.
    pub fn is_blocking(&self, case: &CaseResult) -> bool {
        match case.status {
            Status::Fail => {
                case.level == Level::Must || (self.strict && case.level == Level::Should)
            }
            // A baseline entry that no longer fails: a warning, so that baselines shrink.
            Status::Stale => self.strict,
            Status::Pass | Status::Skip | Status::Xfail => false,
        }
    }

    /// Hides every secret in every string of the report. Called once, before any reporter runs.
    pub fn redact(&mut self, redactor: &Redactor) {
        redactor.redact_in_place(&mut self.target);
        for case in &mut self.cases {
            if let Some(e) = &mut case.evidence {
                redactor.redact_in_place(&mut e.of);
            }
            for field in [&mut case.message, &mut case.title] {
                redactor.redact_in_place(field);
            }
            let e = &mut case.exchange;
            for field in [&mut e.request, &mut e.response, &mut e.reproduce]
                .into_iter()
                .flatten()
            {
                redactor.redact_in_place(field);
            }
        }
    }
}

/// RFC 3339 timestamp of now, UTC, to the second.
pub fn now_rfc3339() -> String {
    let now = time::OffsetDateTime::now_utc()
        .replace_nanosecond(0)
        .unwrap_or(time::OffsetDateTime::UNIX_EPOCH);
    now.format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_else(|_| "1970-01-01T00:00:00Z".to_string())
}

#[cfg(test)]
mod tests;
