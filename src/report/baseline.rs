//! Expected failures (`--baseline FILE`): cases known to fail, each with a reason and an optional
//! `until:` date. A listed case that fails is `xfail` and does not fail the run; a listed case
//! that passes is `stale` — a warning (a failure under `--strict`), so that baselines shrink.
//! `agent-tck baseline write --from report.json` writes one from a run's failures.
//!
//! ```yaml
//! - id: execute.metrics
//!   reason: our metrics count a sample of the details; fixed in 2.0
//!   until: 2027-01-31
//! - id: roundtable.analyze.timeout
//!   reason: the staging agent is slow
//! ```

use serde::Deserialize;
use serde_saphyr::Spanned;

use super::{CaseResult, Report, Status};

/// One expected failure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub id: String,
    pub reason: String,
    /// The last day (UTC, `YYYY-MM-DD`) the entry holds; after it, the case fails again.
    pub until: Option<String>,
    /// Where it is written (`FILE:LINE`).
    pub at: String,
}

/// A baseline file, read and checked.
#[derive(Debug, Clone, Default)]
pub struct Baseline {
    pub entries: Vec<Entry>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct EntryFile {
    id: Spanned<String>,
    reason: Spanned<String>,
    #[serde(default)]
    until: Option<Spanned<String>>,
}

/// Why a baseline file does not read: a usage error (`--baseline FILE`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BaselineError {
    #[error("--baseline {path}: {cause}")]
    Unreadable { path: String, cause: String },
    /// `FILE:LINE: what is wrong`.
    #[error("{0}")]
    Invalid(String),
}

impl crate::error::LayerError for BaselineError {
    fn class(&self) -> crate::error::Class {
        crate::error::Class::Usage
    }
}

impl Baseline {
    /// Reads `text` (from `source`): a YAML list of `{id, reason, until?}`. Errors name the file
    /// and line: an empty reason, a date that is not `YYYY-MM-DD`, an id listed twice.
    pub fn parse(source: &str, text: &str) -> Result<Baseline, BaselineError> {
        Baseline::entries(source, text).map_err(BaselineError::Invalid)
    }

    fn entries(source: &str, text: &str) -> Result<Baseline, String> {
        if text.trim().is_empty() {
            return Ok(Baseline::default());
        }
        let file: Vec<EntryFile> = serde_saphyr::from_str(text)
            .map_err(|e| crate::text::yaml_error(source, &e.to_string()))?;
        let mut entries: Vec<Entry> = Vec::with_capacity(file.len());
        for e in file {
            let at = format!("{source}:{}", e.id.referenced.line());
            if e.id.value.trim().is_empty() {
                return Err(format!("{at}: an empty id"));
            }
            if e.reason.value.trim().is_empty() {
                return Err(format!(
                    "{at}: {}: say why the case is expected to fail (reason:)",
                    e.id.value
                ));
            }
            if let Some(first) = entries.iter().find(|x| x.id == e.id.value) {
                return Err(format!(
                    "{at}: {} is listed twice (first at {})",
                    e.id.value, first.at
                ));
            }
            let until = match e.until {
                Some(u) => {
                    let line = u.referenced.line();
                    parse_date(&u.value).ok_or_else(|| {
                        format!(
                            "{source}:{line}: until: {:?} is not a date (YYYY-MM-DD)",
                            u.value
                        )
                    })?;
                    Some(u.value)
                }
                None => None,
            };
            entries.push(Entry {
                id: e.id.value,
                reason: e.reason.value,
                until,
                at,
            });
        }
        Ok(Baseline { entries })
    }

    /// Reads the file at `path`.
    pub fn read(path: &std::path::Path) -> Result<Baseline, BaselineError> {
        let text = std::fs::read_to_string(path).map_err(|e| BaselineError::Unreadable {
            path: path.display().to_string(),
            cause: e.to_string(),
        })?;
        Baseline::parse(&path.display().to_string(), &text)
    }

    /// Applies the baseline to `report` as of `today` (`YYYY-MM-DD`): listed failures become
    /// xfail, listed passes stale; an expired entry does nothing but a note; the summary is
    /// counted again, and the notes say what the baseline did.
    pub fn apply(&self, report: &mut Report, today: &str) {
        let mut marking = self.marking(today);
        for case in &mut report.cases {
            let id = std::mem::take(&mut case.id);
            marking.mark(&id, case);
            case.id = id;
        }
        report.summarize();
        report.notes.extend(marking.notes());
    }

    /// The baseline applied case by case, as a merge written while it reads meets the cases
    /// (one part at a time): [`Marking::mark`] each case, then [`Marking::notes`].
    pub fn marking(&self, today: &str) -> Marking<'_> {
        Marking {
            by_id: self
                .entries
                .iter()
                .enumerate()
                .map(|(i, e)| (e.id.as_str(), i))
                .collect(),
            entries: &self.entries,
            seen: vec![false; self.entries.len()],
            today: today.to_string(),
        }
    }
}

/// A baseline being applied case by case: which entries met their case (an entry marks the
/// first case with its id; ids are unique in a report).
pub struct Marking<'a> {
    by_id: std::collections::HashMap<&'a str, usize>,
    entries: &'a [Entry],
    seen: Vec<bool>,
    today: String,
}

impl Marking<'_> {
    /// Whether `entry`'s `until:` date is past.
    fn expired(&self, entry: &Entry) -> bool {
        entry
            .until
            .as_deref()
            .is_some_and(|u| u < self.today.as_str())
    }

    /// Marks `case`, known in the report as `id`, when an entry lists it and has not expired.
    pub fn mark(&mut self, id: &str, case: &mut CaseResult) {
        let Some(&i) = self.by_id.get(id) else {
            return;
        };
        if std::mem::replace(&mut self.seen[i], true) {
            return;
        }
        let entry = &self.entries[i];
        if !self.expired(entry) {
            mark(case, entry);
        }
    }

    /// The report's notes on the entries: those expired (their cases judged as usual) and
    /// those no case met.
    pub fn notes(self) -> Vec<String> {
        let mut expired = Vec::new();
        let mut unseen = Vec::new();
        for (entry, seen) in self.entries.iter().zip(&self.seen) {
            if !seen {
                unseen.push(entry.id.clone());
            } else if entry
                .until
                .as_deref()
                .is_some_and(|u| u < self.today.as_str())
            {
                expired.push(format!(
                    "{} (until {})",
                    entry.id,
                    entry.until.as_deref().unwrap_or("")
                ));
            }
        }
        let mut notes = Vec::new();
        if !expired.is_empty() {
            notes.push(format!(
                "baseline: expired, judged as usual: {}",
                expired.join(", ")
            ));
        }
        if !unseen.is_empty() {
            notes.push(format!(
                "baseline: listed but not in this run: {}",
                unseen.join(", ")
            ));
        }
        notes
    }
}

fn mark(case: &mut CaseResult, entry: &Entry) {
    match case.status {
        Status::Fail => {
            case.status = Status::Xfail;
            case.message = format!(
                "expected failure ({}; {}): {}",
                entry.reason, entry.at, case.message
            );
        }
        Status::Pass => {
            case.status = Status::Stale;
            case.message = format!(
                "listed as an expected failure ({}; {}) but it passed: remove it from the baseline",
                entry.reason, entry.at
            );
        }
        Status::Skip | Status::Xfail | Status::Stale => {}
    }
}

/// `YYYY-MM-DD`, a real day.
fn parse_date(text: &str) -> Option<time::Date> {
    let mut parts = text.split('-');
    let (y, m, d) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() || y.len() != 4 || m.len() != 2 || d.len() != 2 {
        return None;
    }
    let month = time::Month::try_from(m.parse::<u8>().ok()?).ok()?;
    time::Date::from_calendar_date(y.parse().ok()?, month, d.parse().ok()?).ok()
}

/// Today, UTC, as `YYYY-MM-DD`.
pub fn today() -> String {
    let d = time::OffsetDateTime::now_utc().date();
    format!("{:04}-{:02}-{:02}", d.year(), u8::from(d.month()), d.day())
}

/// A baseline listing every failed case of `report` (`baseline write --from`): YAML, each entry
/// with the failure's message as its reason, to be edited.
pub fn write_from(report: &Report) -> String {
    let mut out = format!(
        "# Expected failures of agent-tck {} {} against {}, from the run of {}.\n\
         # Give each a real reason (and an `until:` date, YYYY-MM-DD); remove what gets fixed.\n",
        report.role, report.protocol, report.target, report.started_at
    );
    let failed: Vec<&CaseResult> = report
        .cases
        .iter()
        .filter(|c| matches!(c.status, Status::Fail | Status::Xfail))
        .collect();
    if failed.is_empty() {
        out.push_str("# (the run had no failures)\n[]\n");
    }
    for c in failed {
        let reason = crate::text::shorten(&c.message.replace('\n', " "), 160);
        out.push_str(&format!(
            "- id: {}\n  reason: {}\n",
            yaml_string(&c.id),
            yaml_string(&format!(
                "{} failed: {reason}",
                c.level.as_str().to_uppercase()
            ))
        ));
    }
    out
}

/// Why `baseline write --from` refuses `report`, if it does (`from`: the file as given): a
/// baseline may expect a failure, never a run that judges nothing. Refused: an interrupted
/// run's report (what it did not reach was never judged), a report that judged nothing, and
/// one whose failures, once expected, would leave its run judging nothing (a 404 server: its
/// only MUST verdicts are the reachability pass and the failure of the first request).
pub fn refusal(report: &Report, from: &str) -> Option<String> {
    if let Some(cut) = &report.interrupted {
        return Some(format!(
            "--from {from}: the report is of an interrupted run ({}): a baseline of it would \
             expect what was never judged; run it to the end first",
            cut.headline()
        ));
    }
    if let Some(why) = report.nothing_judged_reason() {
        return Some(format!(
            "--from {from}: the report judged nothing, so a baseline of it would hide that ({why}); \
             fix the agent (or --url) first"
        ));
    }
    // Every failure expected, as the baseline would make it.
    let mut expected = report.clone();
    for c in &mut expected.cases {
        if c.status == Status::Fail {
            c.status = Status::Xfail;
        }
    }
    expected.summarize();
    if !expected.judged_nothing() {
        return None;
    }
    let verdicts: Vec<String> = report
        .cases
        .iter()
        .filter(|c| c.kind == super::Kind::Conformance && c.level == super::Level::Must)
        .filter_map(|c| match c.status {
            Status::Pass | Status::Stale if c.precondition => {
                Some(format!("{} (reachability)", c.id))
            }
            Status::Fail => Some(format!("the failure of {}", c.id)),
            Status::Xfail => Some(format!("the expected failure of {}", c.id)),
            _ => None,
        })
        .collect();
    let shown = verdicts.len().min(6);
    let mut named = verdicts[..shown].to_vec();
    if verdicts.len() > shown {
        named.push(format!("{} more", verdicts.len() - shown));
    }
    let named = match named.split_last() {
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
        None => "none".into(),
    };
    Some(format!(
        "--from {from}: a baseline of this report would leave nothing judged: its only MUST \
         verdicts are {named}; fix the agent (or --url) first"
    ))
}

/// A YAML double-quoted string (JSON's escaping is valid YAML).
fn yaml_string(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_else(|_| "\"\"".into())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::report::{Evidence, Level, RunInfo};

    /// `baseline write` refuses what would leave a run judging nothing: an interrupted report,
    /// one that judged nothing, one whose failures, expected, would leave only a reachability
    /// pass; a real failure among judged cases is written.
    #[test]
    fn a_baseline_of_nothing_judged_is_refused() {
        let run = || RunInfo::start("probe", "p", "t", 1, false);
        let mut reachable =
            CaseResult::new("agent.reachable", "agent", Level::Must, "r", "").precondition();
        reachable.pass(Evidence::new(1, "connection"), String::new);
        let mut failed = CaseResult::new("first.response", "first", Level::Must, "a", "");
        failed.fail("answered 404");
        let skipped = CaseResult::new("second.response", "second", Level::Must, "v", "");
        let none = crate::text::Redactor::new(None);
        let report = run().report(vec![reachable.clone(), failed.clone(), skipped], &none);
        assert_eq!(
            refusal(&report, "bad.json").as_deref(),
            Some(
                "--from bad.json: a baseline of this report would leave nothing judged: its \
                 only MUST verdicts are agent.reachable (reachability) and the failure of \
                 first.response; fix the agent (or --url) first"
            )
        );
        let mut judged = CaseResult::new("second.response", "second", Level::Must, "v", "");
        judged.pass(Evidence::new(1, "answer"), String::new);
        let report = run().report(vec![reachable.clone(), failed.clone(), judged], &none);
        assert_eq!(refusal(&report, "ok.json"), None);
        let mut cut = report.clone();
        cut.interrupted = Some(crate::report::Interruption::of(
            crate::report::Signal::Interrupt,
            std::time::Duration::from_secs(1),
            &cut.cases,
            |_| true,
        ));
        assert!(refusal(&cut, "cut.json")
            .unwrap()
            .starts_with("--from cut.json: the report is of an interrupted run (INTERRUPTED (Ctrl-C) after 1.0 s"));
        let nothing = run().report(vec![reachable], &none);
        assert!(refusal(&nothing, "n.json")
            .unwrap()
            .contains("the report judged nothing"));
    }

    /// A case of `status`, as a case is settled: a pass with evidence, a fail or skip saying
    /// `message`.
    pub(crate) fn case(id: &str, status: Status, level: Level, message: String) -> CaseResult {
        let mut c = CaseResult::new(id, "g", level, "t", "s");
        match status {
            Status::Pass => c.pass_noting(Evidence::new(1, "answer"), message, String::new),
            Status::Skip => c.skip(message),
            _ => {
                c.status = status;
                c.message = message;
            }
        }
        c
    }

    fn report(cases: &[(&str, Status, Level)]) -> Report {
        let cases = cases
            .iter()
            .map(|(id, status, level)| case(id, *status, *level, format!("{id} said so")))
            .collect();
        RunInfo::start("probe", "p", "t", 1, false)
            .report(cases, &crate::text::Redactor::new(Vec::new()))
    }

    #[test]
    fn listed_failures_are_xfail_listed_passes_stale_and_expiry_restores_the_verdict() {
        let base = Baseline::parse(
            "b.yaml",
            "- id: a\n  reason: known\n- id: b\n  reason: fixed now\n- id: c\n  reason: old\n  until: 2020-01-01\n- id: gone\n  reason: r\n",
        )
        .unwrap();
        let mut r = report(&[
            ("a", Status::Fail, Level::Must),
            ("b", Status::Pass, Level::Must),
            ("c", Status::Fail, Level::Must),
        ]);
        assert_eq!(r.exit_code(), 1);
        base.apply(&mut r, "2026-11-23");
        assert_eq!(r.cases[0].status, Status::Xfail);
        assert!(r.cases[0]
            .message
            .starts_with("expected failure (known; b.yaml:1)"));
        assert_eq!(r.cases[1].status, Status::Stale);
        assert_eq!(r.cases[2].status, Status::Fail, "expired");
        assert_eq!(r.exit_code(), 1, "c fails again");
        assert!(r
            .notes
            .iter()
            .any(|n| n.contains("expired") && n.contains("c (until 2020-01-01)")));
        assert!(r.notes.iter().any(|n| n.contains("not in this run: gone")));
        assert_eq!((r.summary.xfailed, r.summary.stale), (1, 1));

        // Without the expired one the run passes; under --strict the stale entry fails it.
        let mut r = report(&[
            ("a", Status::Fail, Level::Must),
            ("b", Status::Pass, Level::Must),
        ]);
        base.apply(&mut r, "2026-11-23");
        assert_eq!(r.exit_code(), 0);
        r.strict = true;
        assert_eq!(r.exit_code(), 1);
    }

    #[test]
    fn bad_baselines_say_where() {
        let e = Baseline::parse("b.yaml", "- id: a\n  reason: ''\n")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("b.yaml:1: a: say why"), "{e}");
        let e = Baseline::parse("b.yaml", "- id: a\n  reason: r\n  until: next week\n")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("b.yaml:3: until: \"next week\""), "{e}");
        let e = Baseline::parse("b.yaml", "- id: a\n  reason: r\n- id: a\n  reason: r\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("b.yaml:3: a is listed twice (first at b.yaml:1)"),
            "{e}"
        );
        let e = Baseline::parse("b.yaml", "- id: a\n  reason: r\n  because: x\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("b.yaml"), "{e}");
        assert!(Baseline::parse("b.yaml", "").unwrap().entries.is_empty());
    }

    #[test]
    fn a_written_baseline_reads_back_and_covers_the_failures() {
        let r = report(&[
            ("x.\"quoted\"", Status::Fail, Level::Must),
            ("y", Status::Pass, Level::Must),
            ("z", Status::Fail, Level::Should),
        ]);
        let text = write_from(&r);
        let base = Baseline::parse("w.yaml", &text).unwrap();
        let ids: Vec<&str> = base.entries.iter().map(|e| e.id.as_str()).collect();
        assert_eq!(ids, ["x.\"quoted\"", "z"]);
        let mut again = r.clone();
        base.apply(&mut again, "2026-11-23");
        assert_eq!(again.exit_code(), 0);
        assert!(Baseline::parse("w.yaml", &write_from(&report(&[])))
            .unwrap()
            .entries
            .is_empty());
    }
}
