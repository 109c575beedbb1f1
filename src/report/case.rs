//! One case of a run and its verdict: how much it matters, what kind it is, where it stands, and
//! the evidence and exchange behind it.

use serde::{Deserialize, Serialize};

/// How much a case matters, as in RFC 2119.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    /// A failure fails the run (exit 1).
    Must,
    /// A failure is a warning; it fails the run only under `--strict`.
    Should,
    /// Reported for information; never fails the run.
    May,
}

impl Level {
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Must => "must",
            Level::Should => "should",
            Level::May => "may",
        }
    }
}

/// What a case judges: the protocol, or how well the agent did a task.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// What the spec requires of an answer and of the exchange: its level decides the exit
    /// status.
    #[default]
    Conformance,
    /// What the agent chose to do in a scenario (which tools, how it ended): scored, and it
    /// fails the run only when gated (a `level: must` written in the scenario, `should` under
    /// `--strict`) or when the score is below `--min-score`. An evaluation case that is not
    /// gated has level `may`.
    Evaluation,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Conformance => "conformance",
            Kind::Evaluation => "evaluation",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Pass,
    Fail,
    Skip,
    /// Failed, as the baseline (`--baseline`) expects: does not fail the run.
    Xfail,
    /// Passed, though the baseline lists it as an expected failure: a warning (a failure under
    /// `--strict`), so that the entry is removed.
    Stale,
}

/// What a case sent and got back, for the reader who wants to reproduce it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Exchange {
    /// The request as sent (method, URL, headers, body; bounded).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request: Option<String>,
    /// A bounded, escaped excerpt of the answer (status line, headers, body).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response: Option<String>,
    /// A shell command that sends the same request.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reproduce: Option<String>,
}

/// What a case judged: how many of what (`14 strings from 1 agent with null-bytes`). A case
/// passes only with evidence of at least one thing judged; without it the case is a SKIP that
/// says what would exercise it ([`CaseResult::pass`] turns a zero into that skip, and
/// [`RunInfo::report`] turns any pass that came without evidence into one).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Evidence {
    /// How many were judged (at least 1 on a PASS).
    pub judged: u64,
    /// What they were, as a plural noun phrase: `requests`, `strings from 1 agent with null-bytes`.
    pub of: String,
}

impl Evidence {
    pub fn new(judged: u64, of: impl Into<String>) -> Evidence {
        Evidence {
            judged,
            of: of.into(),
        }
    }
}

impl std::fmt::Display for Evidence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // `of` is written as a plural (`requests`); one thing judged reads in the singular.
        write!(f, "judged {}", crate::text::count(self.judged, &self.of))
    }
}

/// The message of a case that passed without saying what it judged: never seen in a report of a
/// built-in suite or observer (a test runs them all against peers that give nothing to judge).
pub const NO_EVIDENCE: &str =
    "not judged: the case recorded no evidence that its rule was exercised";

/// The message of a case that was never judged nor given a reason (same guarantee).
pub const NO_REASON: &str = "not judged: nothing exercised this case";

/// The verdict of one case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaseResult {
    pub id: String,
    /// The group the case is reported under (a JUnit testsuite): an endpoint, `auth`, `http`, …
    pub group: String,
    pub level: Level,
    /// Conformance (the protocol) or evaluation (the task); absent in older reports.
    #[serde(default)]
    pub kind: Kind,
    pub status: Status,
    pub title: String,
    /// The spec section the case enforces.
    pub spec: String,
    /// Why it failed or was skipped; for a passing case, what was observed (may be empty).
    pub message: String,
    /// What the case judged; required for a PASS (see [`Evidence`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence: Option<Evidence>,
    pub duration_ms: u64,
    /// The same duration in microseconds (sub-millisecond work does not read as 0).
    #[serde(default)]
    pub duration_us: u64,
    #[serde(default, skip_serializing_if = "is_default_exchange")]
    pub exchange: Exchange,
    /// A precondition, not a rule: the case only found the peer there (a connection made, a
    /// program started: `agent.reachable`). Its pass lets the other cases run, and judges no
    /// rule: a run whose only MUST pass is one judged nothing. Written only when true.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub precondition: bool,
}

impl CaseResult {
    /// A case not judged yet: a SKIP until [`pass`](Self::pass) (with evidence),
    /// [`fail`](Self::fail) or [`skip`](Self::skip) (with a reason) says otherwise.
    pub fn new(id: &str, group: &str, level: Level, title: &str, spec: &str) -> CaseResult {
        CaseResult {
            id: id.into(),
            group: group.into(),
            level,
            kind: Kind::Conformance,
            status: Status::Skip,
            title: title.into(),
            spec: spec.into(),
            message: String::new(),
            evidence: None,
            duration_ms: 0,
            duration_us: 0,
            exchange: Exchange::default(),
            precondition: false,
        }
    }

    /// The same case, as a precondition (see [`CaseResult::precondition`]).
    pub fn precondition(mut self) -> CaseResult {
        self.precondition = true;
        self
    }

    /// Whether the case judged a MUST rule of the protocol: a conformance case at MUST that
    /// failed, or passed other than as a precondition. A skip, an expected failure (xfail: the
    /// baseline set it aside) and a reachability-only pass judge none.
    pub fn judged_must(&self) -> bool {
        self.kind == Kind::Conformance
            && self.level == Level::Must
            && match self.status {
                Status::Fail => true,
                Status::Pass | Status::Stale => !self.precondition,
                Status::Skip | Status::Xfail => false,
            }
    }

    /// Marks the case passed on `evidence`. With nothing judged (`judged == 0`) it is a SKIP
    /// whose reason is `unexercised`: what was missing and what would exercise the rule.
    pub fn pass(&mut self, evidence: Evidence, unexercised: impl FnOnce() -> String) {
        if evidence.judged == 0 {
            self.skip(unexercised());
        } else {
            self.status = Status::Pass;
            self.evidence = Some(evidence);
        }
    }

    /// [`pass`](Self::pass) with a note on what was observed.
    pub fn pass_noting(
        &mut self,
        evidence: Evidence,
        note: impl Into<String>,
        unexercised: impl FnOnce() -> String,
    ) {
        self.pass(evidence, unexercised);
        if self.status == Status::Pass {
            self.message = note.into();
        }
    }

    /// Whether the case passed (with evidence, as every pass does).
    pub fn passed(&self) -> bool {
        self.status == Status::Pass
    }

    /// Sets how long the case took (kept in microseconds too).
    pub fn set_duration(&mut self, took: std::time::Duration) {
        self.duration_ms = took.as_millis() as u64;
        self.duration_us = took.as_micros() as u64;
    }

    /// Adds `took` to the case's duration.
    pub fn add_duration(&mut self, other: &CaseResult) {
        self.duration_ms += other.duration_ms;
        self.duration_us += other.duration_us;
    }

    /// The duration for a reader: `412 µs` under a millisecond, else `12 ms`.
    pub fn duration_text(&self) -> String {
        if self.duration_ms == 0 && self.duration_us > 0 {
            format!("{} µs", self.duration_us)
        } else {
            format!("{} ms", self.duration_ms)
        }
    }

    /// What the report model guarantees of every case: a PASS carries evidence, a SKIP a
    /// reason. A case that breaks it becomes a SKIP saying so (see [`NO_EVIDENCE`]).
    pub fn settle(&mut self) {
        match self.status {
            Status::Pass if self.evidence.as_ref().is_none_or(|e| e.judged == 0) => {
                let note = std::mem::take(&mut self.message);
                self.status = Status::Skip;
                self.evidence = None;
                self.message = if note.is_empty() {
                    NO_EVIDENCE.to_string()
                } else {
                    format!("{NO_EVIDENCE} ({note})")
                };
            }
            Status::Skip if self.message.trim().is_empty() => self.message = NO_REASON.into(),
            _ => {}
        }
    }

    /// The same case, as an evaluation of what the agent chose to do.
    pub fn evaluation(mut self) -> CaseResult {
        self.kind = Kind::Evaluation;
        self
    }

    /// Marks the case failed, saying why.
    pub fn fail(&mut self, message: impl Into<String>) {
        self.status = Status::Fail;
        self.message = message.into();
    }

    /// Marks the case failed, saying why and how many were judged.
    pub fn fail_on(&mut self, evidence: Evidence, message: impl Into<String>) {
        self.fail(message);
        self.evidence = Some(evidence);
    }

    /// Marks the case skipped, saying why (what was missing, what would exercise it).
    pub fn skip(&mut self, message: impl Into<String>) {
        self.status = Status::Skip;
        self.evidence = None;
        self.message = message.into();
    }
}

fn is_default_exchange(e: &Exchange) -> bool {
    *e == Exchange::default()
}
