//! Reports read back and combined: `agent-tck report merge A.json B.json…` (shards, protocols,
//! targets into one report) and `agent-tck report diff OLD.json NEW.json` (regressions, fixes,
//! new and removed cases), and the reading both share.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use time::format_description::well_known::Rfc3339;

use super::{CaseResult, Report, Status, Summary};

/// Why a report file could not be read back or reports could not be merged. A usage error by
/// type (the files named are wrong); a run that merges the reports it wrote itself says
/// otherwise where it merges them.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReportFileError {
    /// The file could not be read, or its JSON is not a report's shape.
    #[error("{path}: {cause}")]
    Unreadable { path: String, cause: String },
    #[error("{path}: not JSON: {cause}")]
    NotJson { path: String, cause: String },
    /// The report schema's first finding (`at` a JSON path), and how many more.
    #[error("{path}: not an agent-tck report: {at}: {what}{}", more_findings(*.more))]
    NotAReport {
        path: String,
        at: String,
        what: String,
        more: usize,
    },
    #[error("nothing to merge")]
    NothingToMerge,
    /// The same case in two parts for the same protocol and target: repeats, not shards.
    #[error(
        "case {id} is in both {first} and {second} for the same protocol and target \
         ({protocol} against {target}): merge shards of one run, not repeats of it"
    )]
    Repeated {
        id: String,
        first: String,
        second: String,
        protocol: String,
        target: String,
    },
}

fn more_findings(more: usize) -> String {
    if more > 0 {
        format!(" (and {more} more)")
    } else {
        String::new()
    }
}

impl From<ReportFileError> for crate::error::Error {
    fn from(e: ReportFileError) -> Self {
        crate::error::Error::Usage(e.to_string())
    }
}

/// Reads a JSON report, checked against `schemas/report.schema.json`; errors name the file and
/// the JSON path (or the line and column of a syntax error).
pub fn read(path: &Path) -> Result<Report, ReportFileError> {
    let shown = || path.display().to_string();
    let unreadable = |e: &dyn std::fmt::Display| ReportFileError::Unreadable {
        path: shown(),
        cause: e.to_string(),
    };
    let bytes = std::fs::read(path).map_err(|e| unreadable(&e))?;
    let value: serde_json::Value =
        serde_json::from_slice(&bytes).map_err(|e| ReportFileError::NotJson {
            path: shown(),
            cause: e.to_string(),
        })?;
    let findings = crate::schema::schemas().validate("report", &value);
    if let Some(f) = findings.first() {
        return Err(ReportFileError::NotAReport {
            path: shown(),
            at: f.path.clone(),
            what: f.message.clone(),
            more: findings.len() - 1,
        });
    }
    serde_json::from_value(value).map_err(|e| unreadable(&e))
}

fn parse_time(text: &str) -> Option<time::OffsetDateTime> {
    time::OffsetDateTime::parse(text, &Rfc3339).ok()
}

/// One report of many (`parts`, each with the file it came from): the cases of all, in order,
/// the summary counted again, the earliest start and the span to the latest end. A case id found
/// in parts of different protocols or targets is told apart by a `TARGET: ` prefix; the same id
/// twice for the same protocol and target is an error (a repeat, not a shard).
pub fn merge(parts: &[(String, Report)]) -> Result<Report, ReportFileError> {
    if parts.is_empty() {
        return Err(ReportFileError::NothingToMerge);
    }
    // A part with no cases (a shard that held no target) says nothing of the run's protocol,
    // target or seed; it still counts as read.
    let all = parts;
    let parts: Vec<(String, Report)> = match all.iter().any(|(_, r)| !r.cases.is_empty()) {
        true => all
            .iter()
            .filter(|(_, r)| !r.cases.is_empty())
            .cloned()
            .collect(),
        false => all.to_vec(),
    };
    let parts = parts.as_slice();
    let first = &parts[0].1;
    let same = |f: fn(&Report) -> &str| parts.iter().all(|(_, r)| f(r) == f(first));
    let joined = |f: fn(&Report) -> &str| {
        let mut seen: Vec<&str> = Vec::new();
        for (_, r) in parts {
            if !seen.contains(&f(r)) {
                seen.push(f(r));
            }
        }
        seen.join(" + ")
    };
    // Where each id is: the parts (by index) that report it.
    let mut owners: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, (_, r)) in parts.iter().enumerate() {
        for c in &r.cases {
            owners.entry(c.id.as_str()).or_default().push(i);
        }
    }
    for (id, at) in &owners {
        for pair in at.windows(2) {
            let (a, b) = (&parts[pair[0]], &parts[pair[1]]);
            if (a.1.protocol.as_str(), a.1.target.as_str())
                == (b.1.protocol.as_str(), b.1.target.as_str())
            {
                return Err(ReportFileError::Repeated {
                    id: id.to_string(),
                    first: a.0.clone(),
                    second: b.0.clone(),
                    protocol: a.1.protocol.clone(),
                    target: a.1.target.clone(),
                });
            }
        }
    }
    let mut cases = Vec::new();
    for (i, (_, r)) in parts.iter().enumerate() {
        for c in &r.cases {
            let mut c = c.clone();
            if owners[c.id.as_str()].len() > 1 {
                c.id = format!("{}: {}", parts[i].1.target, c.id);
                c.group = format!("{}: {}", parts[i].1.target, c.group);
            }
            cases.push(c);
        }
    }
    let starts: Vec<_> = parts
        .iter()
        .filter_map(|(_, r)| Some((parse_time(&r.started_at)?, r.duration_ms)))
        .collect();
    let start = starts.iter().map(|s| s.0).min();
    let end = starts
        .iter()
        .map(|(t, d)| *t + time::Duration::milliseconds(*d as i64))
        .max();
    let duration_ms = match (start, end) {
        (Some(s), Some(e)) => (e - s).whole_milliseconds().max(0) as u64,
        _ => parts.iter().map(|(_, r)| r.duration_ms).sum(),
    };
    let mut notes = vec![format!(
        "merged from {}",
        all.iter()
            .map(|(file, r)| format!(
                "{file} ({} against {}{}, {} cases)",
                r.title(),
                r.target,
                r.seed.map(|s| format!(", seed {s}")).unwrap_or_default(),
                r.cases.len()
            ))
            .collect::<Vec<_>>()
            .join("; ")
    )];
    for (_, r) in parts {
        for n in &r.notes {
            if !notes.contains(n) {
                notes.push(n.clone());
            }
        }
    }
    let mut merged = Report {
        tool: "agent-tck".into(),
        version: crate::VERSION.into(),
        role: if same(|r| &r.role) {
            first.role.clone()
        } else {
            "merged".into()
        },
        protocol: joined(|r| &r.protocol),
        target: joined(|r| &r.target),
        // One seed when every run had the same; none otherwise (no seed made the whole).
        seed: if parts.iter().all(|(_, r)| r.seed == first.seed) {
            first.seed
        } else {
            None
        },
        command: Some(format!("report merge of {}", {
            let mut titles: Vec<String> = Vec::new();
            for (_, r) in parts {
                if !titles.contains(&r.title()) {
                    titles.push(r.title());
                }
            }
            titles.join(" + ")
        })),
        strict: parts.iter().any(|(_, r)| r.strict),
        started_at: start
            .and_then(|s| s.format(&Rfc3339).ok())
            .unwrap_or_else(|| first.started_at.clone()),
        duration_ms,
        summary: Summary::default(),
        cases,
        notes,
        timeline: Vec::new(),
        counts: Vec::new(),
        fingerprint: None,
        min_score: parts
            .iter()
            .all(|(_, r)| r.min_score == first.min_score)
            .then_some(first.min_score)
            .flatten(),
    };
    merged.summarize();
    Ok(merged)
}

/// What changed from one run to the next.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Diff {
    /// Failing the run now, and not failing before (or new and failing the run).
    pub regressions: Vec<(String, String)>,
    /// Failing before (fail or xfail), passing now.
    pub fixed: Vec<String>,
    /// A warning now (a failure that does not fail the run) that was not failing before.
    pub new_warnings: Vec<(String, String)>,
    /// Passed before, skipped now, with the skip's reason: not a regression, but what was judged
    /// is judged no more.
    pub unjudged: Vec<(String, String)>,
    /// In the new run only, with their status.
    pub added: Vec<(String, Status)>,
    /// In the old run only.
    pub removed: Vec<String>,
}

impl Diff {
    /// The exit status of `report diff`: 1 when something regressed.
    pub fn exit_code(&self) -> super::Exit {
        super::Exit::failed_if(!self.regressions.is_empty())
    }
}

fn failing(c: &CaseResult) -> bool {
    matches!(c.status, Status::Fail | Status::Xfail)
}

/// Compares `old` and `new` case by case (by id).
pub fn diff(old: &Report, new: &Report) -> Diff {
    let before: BTreeMap<&str, &CaseResult> =
        old.cases.iter().map(|c| (c.id.as_str(), c)).collect();
    let now_ids: BTreeSet<&str> = new.cases.iter().map(|c| c.id.as_str()).collect();
    let mut d = Diff::default();
    for c in &new.cases {
        let was = before.get(c.id.as_str());
        let blocking = new.is_blocking(c);
        match was {
            None => {
                if blocking {
                    d.regressions
                        .push((c.id.clone(), format!("new, and failing: {}", c.message)));
                }
                d.added.push((c.id.clone(), c.status));
            }
            Some(w) if blocking && !old.is_blocking(w) => d.regressions.push((
                c.id.clone(),
                format!("{} before, now: {}", status_word(w.status), c.message),
            )),
            Some(w) if c.status == Status::Fail && !failing(w) => {
                d.new_warnings.push((c.id.clone(), c.message.clone()))
            }
            Some(w) if failing(w) && matches!(c.status, Status::Pass | Status::Stale) => {
                d.fixed.push(c.id.clone())
            }
            Some(w) if w.status == Status::Pass && c.status == Status::Skip => {
                d.unjudged.push((c.id.clone(), c.message.clone()))
            }
            Some(_) => {}
        }
    }
    d.removed = old
        .cases
        .iter()
        .filter(|c| !now_ids.contains(c.id.as_str()))
        .map(|c| c.id.clone())
        .collect();
    d
}

fn status_word(s: Status) -> &'static str {
    match s {
        Status::Pass => "passed",
        Status::Fail => "failed (not failing the run)",
        Status::Skip => "skipped",
        Status::Xfail => "an expected failure",
        Status::Stale => "passed (a stale baseline entry)",
    }
}

/// The diff as the console shows it.
pub fn render_diff(d: &Diff, old: &str, new: &str) -> String {
    let mut out = format!("agent-tck report diff · {old} → {new}\n\n");
    let section = |out: &mut String, title: &str, lines: Vec<String>| {
        if !lines.is_empty() {
            out.push_str(&format!("{title} ({})\n", lines.len()));
            for l in lines {
                out.push_str(&format!("  {l}\n"));
            }
            out.push('\n');
        }
    };
    section(
        &mut out,
        "REGRESSIONS",
        d.regressions
            .iter()
            .map(|(id, why)| format!("{id}: {}", crate::text::shorten(why, 200)))
            .collect(),
    );
    section(
        &mut out,
        "new warnings",
        d.new_warnings
            .iter()
            .map(|(id, why)| format!("{id}: {}", crate::text::shorten(why, 200)))
            .collect(),
    );
    section(&mut out, "fixed", d.fixed.clone());
    section(
        &mut out,
        "no longer judged (passed before, skipped now)",
        d.unjudged
            .iter()
            .map(|(id, why)| format!("{id}: {}", crate::text::shorten(why, 200)))
            .collect(),
    );
    section(
        &mut out,
        "new cases",
        d.added
            .iter()
            .map(|(id, s)| format!("{id} ({})", status_word(*s)))
            .collect(),
    );
    section(&mut out, "removed cases", d.removed.clone());
    out.push_str(&format!(
        "{} regression(s), {} fixed, {} new warning(s), {} no longer judged, {} new case(s), {} removed\n",
        d.regressions.len(),
        d.fixed.len(),
        d.new_warnings.len(),
        d.unjudged.len(),
        d.added.len(),
        d.removed.len()
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{Level, RunInfo};

    fn report(target: &str, cases: &[(&str, Status, Level)]) -> Report {
        let cases = cases
            .iter()
            .map(|(id, status, level)| {
                super::super::baseline::tests::case(
                    id,
                    *status,
                    *level,
                    format!("{id}: {status:?}"),
                )
            })
            .collect();
        RunInfo::start("probe", "roundtable", target, 7, false)
            .report(cases, &crate::text::Redactor::new(Vec::new()))
    }

    use Level::{Must, Should};
    use Status::{Fail, Pass, Skip, Xfail};

    #[test]
    fn shards_merge_into_the_whole_and_targets_are_told_apart() {
        let a = report("http://a", &[("x", Pass, Must), ("y", Fail, Must)]);
        let b = report("http://a", &[("z", Pass, Must)]);
        let m = merge(&[("a.json".into(), a.clone()), ("b.json".into(), b)]).unwrap();
        let ids: Vec<&str> = m.cases.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["x", "y", "z"]);
        assert_eq!((m.summary.passed, m.summary.failed), (2, 1));
        assert_eq!(m.exit_code(), 1);
        assert_eq!(m.target, "http://a");
        assert!(m.notes[0].starts_with("merged from a.json (probe roundtable against http://a"));
        let v = serde_json::to_value(&m).unwrap();
        assert_eq!(crate::schema::schemas().validate("report", &v), vec![]);

        // The same run twice is refused; two targets with the same ids are prefixed.
        let e = merge(&[("a.json".into(), a.clone()), ("a2.json".into(), a.clone())])
            .unwrap_err()
            .to_string();
        assert!(e.contains("case x is in both a.json and a2.json"), "{e}");
        let other = report("http://b", &[("x", Fail, Must)]);
        let m = merge(&[("a.json".into(), a), ("b.json".into(), other)]).unwrap();
        let ids: Vec<&str> = m.cases.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["http://a: x", "y", "http://b: x"]);
        assert_eq!(m.target, "http://a + http://b");
    }

    #[test]
    fn a_diff_names_regressions_fixes_and_new_cases() {
        let old = report(
            "t",
            &[
                ("keeps", Pass, Must),
                ("breaks", Pass, Must),
                ("heals", Fail, Must),
                ("warns", Pass, Should),
                ("known", Xfail, Must),
                ("goes", Pass, Must),
                ("idles", Pass, Must),
            ],
        );
        let new = report(
            "t",
            &[
                ("keeps", Pass, Must),
                ("breaks", Fail, Must),
                ("heals", Pass, Must),
                ("warns", Fail, Should),
                ("known", Xfail, Must),
                ("arrives", Skip, Must),
                ("idles", Skip, Must),
            ],
        );
        let d = diff(&old, &new);
        assert_eq!(d.regressions.len(), 1);
        assert_eq!(d.regressions[0].0, "breaks");
        assert!(d.regressions[0].1.starts_with("passed before"));
        assert_eq!(d.fixed, ["heals"]);
        assert_eq!(d.new_warnings[0].0, "warns");
        assert_eq!(d.added, [("arrives".to_string(), Skip)]);
        assert_eq!(d.removed, ["goes"]);
        assert_eq!(
            d.unjudged,
            [("idles".to_string(), "idles: Skip".to_string())]
        );
        assert_eq!(d.exit_code(), 1);
        let shown = render_diff(&d, "old.json", "new.json");
        assert!(
            shown.contains("REGRESSIONS (1)\n  breaks: passed before"),
            "{shown}"
        );
        assert!(
            shown.contains(
                "no longer judged (passed before, skipped now) (1)\n  idles: idles: Skip"
            ),
            "{shown}"
        );
        assert!(shown.ends_with("1 regression(s), 1 fixed, 1 new warning(s), 1 no longer judged, 1 new case(s), 1 removed\n"), "{shown}");
        assert_eq!(diff(&new, &new).exit_code(), 0);
        assert_eq!(diff(&new, &new), Diff::default());
    }
}
