//! CTRF (`--ctrf FILE`): the Common Test Report Format (https://ctrf.io), which CI test-report
//! actions read, beside JUnit. A case is a test; what CTRF has no word for is kept in its
//! `extra` objects, under the `agent-tck/` prefix (the spec asks a producer to namespace them):
//! the spec the run was judged by, the target, the seed, the notes, the exit status.
//!
//! The statuses, mapped so that a CI dashboard fails exactly when the run does: a failure that
//! fails the run is `failed`; one that does not (a SHOULD warning, a MAY note, an unmet
//! expectation that is not gated, a failure the baseline expects) is `other`, never `passed`;
//! a case not judged is `skipped`. `rawStatus` keeps the console's word (WARN, XFAIL, …).

use serde_json::{json, Map, Value};

use super::{console, CaseResult, Exit, Report};

/// The CTRF spec version this writes (the published draft's: its `specVersion`).
pub const SPEC_VERSION: &str = "0.0.0";

/// The report as a CTRF document.
pub fn to_string(report: &Report) -> String {
    let mut tally = Tally::default();
    let tests: Vec<Value> = report
        .cases
        .iter()
        .map(|case| tally.test(report, case))
        .collect();
    pretty(&document(report, &tally, tests, report.exit_code()))
}

fn pretty(document: &Value) -> String {
    serde_json::to_string_pretty(document).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
}

/// The tests of a document counted by status as they are made (a merge writes them as it
/// reads its parts, and the summary at the end).
#[derive(Debug, Clone, Copy, Default)]
pub struct Tally {
    /// passed, failed, skipped, pending, other.
    counts: [usize; 5],
}

impl Tally {
    /// `case` of `report` as a CTRF test, counted.
    pub fn test(&mut self, report: &Report, case: &CaseResult) -> Value {
        let (status, word) = status(report, case);
        let slot = STATUSES.iter().position(|s| *s == status).unwrap_or(4);
        self.counts[slot] += 1;
        test(case, status, word)
    }
}

const STATUSES: [&str; 5] = ["passed", "failed", "skipped", "pending", "other"];

/// The document of `head` (its cases left out) with `tests` written where `"tests": []`
/// stands, as [`to_string`] would give it with the cases: `before` and `after` that place.
/// `exit` is the run's exit status (a merge counts what fails it as it goes).
pub fn split_around_tests(head: &Report, tally: &Tally, exit: Exit) -> (String, String) {
    let whole = pretty(&document(head, tally, Vec::new(), exit));
    const EMPTY: &str = "\"tests\": []";
    let at = whole.find(EMPTY).unwrap_or(whole.len());
    let (before, after) = whole.split_at(at);
    (
        format!("{before}\"tests\": ["),
        after.strip_prefix(EMPTY).unwrap_or(after).to_string(),
    )
}

/// A test as it reads inside the document's `tests` (its lines indented as
/// `to_string_pretty` indents them there).
pub fn test_text(test: &Value) -> String {
    serde_json::to_string_pretty(test)
        .unwrap_or_default()
        .replace('\n', "\n      ")
}

/// A case's CTRF status and the console's word for it.
pub fn status(report: &Report, case: &CaseResult) -> (&'static str, &'static str) {
    let (word, _) = console::verdict(report, case);
    let status = match word {
        "PASS" | "MET" => "passed",
        "SKIP" => "skipped",
        "FAIL" => "failed",
        // A stale baseline entry passed; it fails the run only under --strict (FAIL-coloured
        // STALE), where the console says so.
        "STALE" if report.is_blocking(case) => "failed",
        "STALE" => "passed",
        // WARN, INFO, UNMET, XFAIL: failed a rule, without failing the run.
        _ => "other",
    };
    (status, word)
}

fn document(report: &Report, tally: &Tally, tests: Vec<Value>, exit: Exit) -> Value {
    let start = super::tools::parse_time(&report.started_at)
        .map(|t| (t.unix_timestamp_nanos() / 1_000_000) as i64)
        .unwrap_or(0);
    let stop = start + report.duration_ms as i64;
    let counts = tally.counts;
    let judged_by = serde_json::to_value(&report.judged_by).unwrap_or(Value::Null);
    let mut run = Map::new();
    run.insert("agent-tck/target".into(), json!(report.target));
    if let Some(seed) = report.seed {
        run.insert("agent-tck/seed".into(), json!(seed));
    }
    run.insert("agent-tck/strict".into(), json!(report.strict));
    run.insert("agent-tck/exit".into(), json!(exit.code()));
    if let Some(why) = report.nothing_judged_reason() {
        run.insert("agent-tck/nothing-judged".into(), json!(why));
    }
    if let Some(cut) = &report.interrupted {
        run.insert("agent-tck/interrupted".into(), json!(cut.headline()));
    }
    if !report.notes.is_empty() {
        run.insert("agent-tck/notes".into(), json!(report.notes));
    }
    json!({
        "reportFormat": "CTRF",
        "specVersion": SPEC_VERSION,
        "timestamp": report.started_at,
        "generatedBy": format!("{} {}", report.tool, report.version),
        "results": {
            "tool": { "name": report.tool, "version": report.version },
            "summary": {
                "tests": counts.iter().sum::<usize>(),
                "passed": counts[0],
                "failed": counts[1],
                "skipped": counts[2],
                "pending": counts[3],
                "other": counts[4],
                "start": start,
                "stop": stop,
                "duration": report.duration_ms,
            },
            "tests": tests,
            "environment": {
                "reportName": format!("agent-tck {}", report.title()),
                "appName": report.target,
                // The specs judged by, and the lines every other format shows of them ("not
                // recorded" for a report read back that names none).
                "extra": {
                    "agent-tck/judged_by": judged_by,
                    "agent-tck/spec": report.judged_by_lines(64),
                },
            },
            "extra": Value::Object(run),
        },
    })
}

fn test(case: &CaseResult, status: &str, word: &str) -> Value {
    let mut labels = Map::new();
    labels.insert("level".into(), json!(case.level.as_str()));
    labels.insert("kind".into(), json!(case.kind.as_str()));
    if !case.spec.is_empty() {
        labels.insert("spec".into(), json!(case.spec));
    }
    if case.precondition {
        labels.insert("precondition".into(), json!(true));
    }
    let mut t = Map::new();
    t.insert("testId".into(), json!(case.id));
    t.insert("name".into(), json!(case.id));
    t.insert("status".into(), json!(status));
    t.insert("rawStatus".into(), json!(word));
    t.insert("duration".into(), json!(case.duration_ms));
    if !case.group.is_empty() {
        t.insert("suite".into(), json!([case.group]));
    }
    if !case.message.is_empty() {
        t.insert("message".into(), json!(case.message));
    }
    t.insert("tags".into(), json!([case.level.as_str()]));
    t.insert("labels".into(), Value::Object(labels));
    let mut extra = Map::new();
    extra.insert("agent-tck/title".into(), json!(case.title));
    extra.insert("agent-tck/duration_us".into(), json!(case.duration_us));
    if let Some(e) = &case.evidence {
        extra.insert("agent-tck/evidence".into(), json!(e.to_string()));
    }
    let x = &case.exchange;
    for (key, value) in [
        ("agent-tck/request", &x.request),
        ("agent-tck/response", &x.response),
        ("agent-tck/reproduce", &x.reproduce),
    ] {
        if let Some(v) = value {
            extra.insert(key.into(), json!(v));
        }
    }
    t.insert("extra".into(), Value::Object(extra));
    Value::Object(t)
}
