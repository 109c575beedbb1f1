//! Reports read back and combined: `agent-tck report merge A.json B.json…` (shards, protocols,
//! targets into one report) and `agent-tck report diff OLD.json NEW.json` (regressions, fixes,
//! new and removed cases), and the reading both share.

use std::collections::{BTreeMap, BTreeSet};

use std::path::Path;

use time::format_description::well_known::Rfc3339;

use super::{CaseResult, Report, Status, Summary};
use crate::specs::{JudgedBy, SHORT_DIGEST};

/// The protocols a report's `protocol` names: one, or several joined by `+` (a self-test's
/// `a+b`, a merge's `a + b`).
pub fn protocol_names(protocol: &str) -> impl Iterator<Item = &str> {
    protocol.split('+').map(str::trim).filter(|n| !n.is_empty())
}

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

impl crate::error::LayerError for ReportFileError {
    fn class(&self) -> crate::error::Class {
        crate::error::Class::Usage
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

pub fn parse_time(text: &str) -> Option<time::OffsetDateTime> {
    time::OffsetDateTime::parse(text, &Rfc3339).ok()
}

/// What a merge needs of one part besides its cases: the file (or target) it came from, its
/// report without cases, and how many cases it holds. Held for every part of a merge (a few
/// hundred bytes each), where the cases are not.
#[derive(Debug, Clone)]
pub struct PartHead {
    /// The file the part came from (a target's name in a run over targets).
    pub file: String,
    /// The part's report, its cases left out.
    pub report: Report,
    pub cases: usize,
}

impl PartHead {
    /// The head of `report`, read from `file`.
    pub fn of(file: impl Into<String>, report: &Report) -> PartHead {
        PartHead {
            file: file.into(),
            report: without_cases(report),
            cases: report.cases.len(),
        }
    }
}

/// `report` with no case (and no timeline: a merge keeps none), cloned field by field so that
/// the cases are never copied.
pub fn without_cases(report: &Report) -> Report {
    Report {
        tool: report.tool.clone(),
        version: report.version.clone(),
        role: report.role.clone(),
        protocol: report.protocol.clone(),
        target: report.target.clone(),
        seed: report.seed,
        command: report.command.clone(),
        strict: report.strict,
        started_at: report.started_at.clone(),
        duration_ms: report.duration_ms,
        summary: report.summary,
        cases: Vec::new(),
        notes: report.notes.clone(),
        min_score: report.min_score,
        fingerprint: report.fingerprint.clone(),
        interrupted: report.interrupted.clone(),
        timeline: Vec::new(),
        counts: Vec::new(),
        judged_by: report.judged_by.clone(),
        suite_file: None,
    }
}

/// How many parts the "merged from" note names before it says how many more there were: the
/// note of a merge of 10,000 targets stays a line.
pub const NAMED_PARTS: usize = 10;

/// Where each case id of a merge is found, by a 128-bit hash of the id (memory grows with the
/// distinct ids, 24 bytes each, never with the reports): which ids are in parts of different
/// protocols or targets (prefixed by `TARGET: `), and the first repeat (the same id in
/// consecutive parts for the same protocol and target), by the smallest id as a sorted walk
/// finds it.
#[derive(Debug, Default)]
pub struct Owners {
    ids: std::collections::HashMap<u128, Owner>,
    repeated: Option<ReportFileError>,
}

#[derive(Debug, Clone, Copy)]
struct Owner {
    /// The last part (by index into the merge's parts) that reported the id.
    last: u32,
    /// Whether more than one part reported it.
    shared: bool,
}

/// 128 bits of `id`, from two differently keyed hashers (the std one is keyed the same in every
/// process: the same ids give the same hashes on every run).
pub fn hash128(id: &str) -> u128 {
    use std::hash::{Hash, Hasher};
    let half = |key: u8| {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        key.hash(&mut h);
        id.hash(&mut h);
        h.finish()
    };
    (u128::from(half(0)) << 64) | u128::from(half(1))
}

impl Owners {
    /// Notes that part `part` (an index into `parts`) reports `id`.
    pub fn note(&mut self, id: &str, part: usize, parts: &[PartHead]) {
        let at = part as u32;
        match self.ids.entry(hash128(id)) {
            std::collections::hash_map::Entry::Vacant(v) => {
                v.insert(Owner {
                    last: at,
                    shared: false,
                });
            }
            std::collections::hash_map::Entry::Occupied(mut o) => {
                let before = &parts[o.get().last as usize];
                let now = &parts[part];
                let (b, n) = (&before.report, &now.report);
                if (b.protocol.as_str(), b.target.as_str())
                    == (n.protocol.as_str(), n.target.as_str())
                    && self
                        .repeated
                        .as_ref()
                        .is_none_or(|r| matches!(r, ReportFileError::Repeated { id: was, .. } if id < was.as_str()))
                {
                    self.repeated = Some(ReportFileError::Repeated {
                        id: id.to_string(),
                        first: before.file.clone(),
                        second: now.file.clone(),
                        protocol: now.report.protocol.clone(),
                        target: now.report.target.clone(),
                    });
                }
                *o.get_mut() = Owner {
                    last: at,
                    shared: true,
                };
            }
        }
    }

    /// The first repeat found, if any.
    pub fn check(&self) -> Result<(), ReportFileError> {
        match &self.repeated {
            Some(e) => Err(e.clone()),
            None => Ok(()),
        }
    }

    /// Whether `id` is in more than one part: it is prefixed by its part's target.
    pub fn shared(&self, id: &str) -> bool {
        self.ids.get(&hash128(id)).is_some_and(|o| o.shared)
    }
}

/// A case as a merge shows it: its id and group prefixed by `label` (its part's target, or in a
/// run over targets the target's name).
pub fn prefix(case: &mut CaseResult, label: &str) {
    case.id = format!("{label}: {}", case.id);
    case.group = format!("{label}: {}", case.group);
}

/// The parts a merge takes its protocol, target and seed from: those with cases (a part with no
/// cases, a shard that held no target, says nothing of them; it still counts as read), or all
/// when none has any.
pub fn speaking(all: &[PartHead]) -> Vec<&PartHead> {
    let with_cases: Vec<&PartHead> = all.iter().filter(|p| p.cases > 0).collect();
    if with_cases.is_empty() {
        all.iter().collect()
    } else {
        with_cases
    }
}

/// The merged report of `all` without its cases, its summary zero: the earliest start and the
/// span to the latest end, one seed only when all agree, the notes deduplicated, the `report
/// merge of …` title. `all` is not empty.
pub fn merged_head(all: &[PartHead]) -> Report {
    let parts = speaking(all);
    let first = &parts[0].report;
    let same = |f: fn(&Report) -> &str| parts.iter().all(|p| f(&p.report) == f(first));
    let (start, duration_ms) = merged_span(&parts);
    let (notes, judged_by) = merged_notes(all, &parts);
    Report {
        tool: "agent-tck".into(),
        version: crate::VERSION.into(),
        role: if same(|r| &r.role) {
            first.role.clone()
        } else {
            "merged".into()
        },
        protocol: joined(&parts, |r| r.protocol.clone()),
        target: joined(&parts, |r| r.target.clone()),
        // One seed when every run had the same; none otherwise (no seed made the whole).
        seed: if parts.iter().all(|p| p.report.seed == first.seed) {
            first.seed
        } else {
            None
        },
        command: Some(format!("report merge of {}", joined(&parts, |r| r.title()))),
        strict: parts.iter().any(|p| p.report.strict),
        started_at: start
            .and_then(|s| s.format(&Rfc3339).ok())
            .unwrap_or_else(|| first.started_at.clone()),
        duration_ms,
        summary: Summary::default(),
        cases: Vec::new(),
        notes,
        timeline: Vec::new(),
        counts: Vec::new(),
        fingerprint: None,
        interrupted: super::Interruption::merged(all.iter().filter_map(|p| {
            let label = (all.len() > 1).then_some(p.file.as_str());
            Some((p.report.interrupted.as_ref()?, label))
        })),
        judged_by,
        suite_file: None,
        min_score: parts
            .iter()
            .all(|p| p.report.min_score == first.min_score)
            .then_some(first.min_score)
            .flatten(),
    }
}

/// `f` of each part, each distinct value once in the parts' order, joined by ` + `.
fn joined(parts: &[&PartHead], f: fn(&Report) -> String) -> String {
    let mut seen: Vec<String> = Vec::new();
    let mut known = std::collections::HashSet::new();
    for p in parts {
        let v = f(&p.report);
        if known.insert(v.clone()) {
            seen.push(v);
        }
    }
    seen.join(" + ")
}

/// The earliest start of `parts` and the span from it to the latest end; when no start can be
/// read, no start and the sum of the parts' durations.
fn merged_span(parts: &[&PartHead]) -> (Option<time::OffsetDateTime>, u64) {
    let starts: Vec<_> = parts
        .iter()
        .filter_map(|p| Some((parse_time(&p.report.started_at)?, p.report.duration_ms)))
        .collect();
    let start = starts.iter().map(|s| s.0).min();
    let end = starts
        .iter()
        .map(|(t, d)| *t + time::Duration::milliseconds(*d as i64))
        .max();
    let duration_ms = match (start, end) {
        (Some(s), Some(e)) => (e - s).whole_milliseconds().max(0) as u64,
        _ => parts.iter().map(|p| p.report.duration_ms).sum(),
    };
    (start, duration_ms)
}

/// The merged report's notes, in order: the parts merged, the parts interrupted, the specs that
/// differ, then the speaking `parts`' own notes, each once; and the specs all were judged by.
fn merged_notes(all: &[PartHead], parts: &[&PartHead]) -> (Vec<String>, Vec<JudgedBy>) {
    let mut notes = vec![merged_from_note(all)];
    notes.extend(interrupted_note(all));
    let (judged_by, differ) = judged_by_of(all);
    notes.extend(differ);
    let mut known: std::collections::HashSet<String> = notes.iter().cloned().collect();
    for p in parts {
        for n in &p.report.notes {
            if known.insert(n.clone()) {
                notes.push(n.clone());
            }
        }
    }
    (notes, judged_by)
}

/// `merged from …`: the first `NAMED_PARTS` parts by file, title, target, seed and cases, and
/// how many more.
fn merged_from_note(all: &[PartHead]) -> String {
    let mut named: Vec<String> = all
        .iter()
        .take(NAMED_PARTS)
        .map(|p| {
            let r = &p.report;
            format!(
                "{} ({} against {}{}, {} cases)",
                p.file,
                r.title(),
                r.target,
                r.seed.map(|s| format!(", seed {s}")).unwrap_or_default(),
                p.cases
            )
        })
        .collect();
    if all.len() > NAMED_PARTS {
        named.push(format!(
            "and {} more ({} parts in all)",
            all.len() - NAMED_PARTS,
            all.len()
        ));
    }
    format!("merged from {}", named.join("; "))
}

/// A part cut short makes the whole one cut short: the note naming the interrupted parts (they
/// are counted in `interrupted`), or none when no part was.
fn interrupted_note(all: &[PartHead]) -> Option<String> {
    let interrupted: Vec<&PartHead> = all
        .iter()
        .filter(|p| p.report.interrupted.is_some())
        .collect();
    if interrupted.is_empty() {
        return None;
    }
    let mut named: Vec<String> = interrupted
        .iter()
        .take(NAMED_PARTS)
        .filter_map(|p| {
            Some(format!(
                "{}: {}",
                p.file,
                p.report.interrupted.as_ref()?.headline()
            ))
        })
        .collect();
    if interrupted.len() > NAMED_PARTS {
        named.push(format!("and {} more", interrupted.len() - NAMED_PARTS));
    }
    Some(format!(
        "{} of {} interrupted, so is the merge (no verdict): {}",
        interrupted.len(),
        crate::text::count(all.len() as u64, "parts"),
        named.join("; ")
    ))
}

/// The specs and suites the parts were judged by, each once, and a note for each protocol whose
/// parts were judged by different ones (or whose parts record none, beside others that do).
///
/// A merge of parts judged by different specs is made, not refused: refusing would throw away
/// the runs' verdicts (a shard of a CI matrix run by an older kit, a report kept from last
/// month), while the merged report keeps every part's spec and says that it is no verdict
/// against one spec.
pub fn judged_by_of(all: &[PartHead]) -> (Vec<JudgedBy>, Vec<String>) {
    let mut judged_by: Vec<JudgedBy> = Vec::new();
    for p in all {
        for by in &p.report.judged_by {
            if !judged_by.contains(by) {
                judged_by.push(by.clone());
            }
        }
    }
    let mut notes = Vec::new();
    let mut protocols: Vec<&str> = Vec::new();
    for p in all {
        for name in protocol_names(&p.report.protocol) {
            if !protocols.contains(&name) {
                protocols.push(name);
            }
        }
    }
    for name in protocols {
        // Each spec (or none recorded) the protocol's parts name, with the first part naming it.
        let mut kinds: Vec<(Option<&JudgedBy>, &PartHead)> = Vec::new();
        for p in all.iter() {
            if !protocol_names(&p.report.protocol).any(|n| n == name) {
                continue;
            }
            let by = p.report.judged_by.iter().find(|b| b.protocol == name);
            if !kinds.iter().any(|(k, _)| *k == by) {
                kinds.push((by, p));
            }
        }
        if kinds.len() > 1 {
            let told: Vec<String> = kinds
                .iter()
                .map(|(by, p)| match by {
                    Some(by) => format!(
                        "{} by {}, {}",
                        p.file,
                        by.spec_text(SHORT_DIGEST),
                        by.suite_text(SHORT_DIGEST)
                    ),
                    None => format!("{}: spec {}", p.file, crate::specs::NOT_RECORDED),
                })
                .collect();
            notes.push(format!(
                "{name}: the parts were judged against different specs or suites, so the merge \
                 is no verdict against one spec: {}",
                told.join("; ")
            ));
        }
    }
    (judged_by, notes)
}

/// One report of many (`parts`, each with the file it came from), held whole: the cases of
/// all, in order, the summary counted again, the earliest start and the span to the latest
/// end. A case id found in parts of different protocols or targets is told apart by a `TARGET: `
/// prefix; the same id twice for the same protocol and target is an error (a repeat, not a
/// shard). [`super::merge_stream`] gives the same report written as it reads, one part at a
/// time, from the same pieces.
pub fn merge(parts: &[(String, Report)]) -> Result<Report, ReportFileError> {
    if parts.is_empty() {
        return Err(ReportFileError::NothingToMerge);
    }
    let heads: Vec<PartHead> = parts.iter().map(|(f, r)| PartHead::of(f, r)).collect();
    let mut owners = Owners::default();
    for (i, (_, r)) in parts.iter().enumerate() {
        for c in &r.cases {
            owners.note(&c.id, i, &heads);
        }
    }
    owners.check()?;
    let mut merged = merged_head(&heads);
    for (_, r) in parts {
        for c in &r.cases {
            let mut c = c.clone();
            if owners.shared(&c.id) {
                prefix(&mut c, &r.target);
            }
            merged.cases.push(c);
        }
    }
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
    /// Whether the old run, and the new one, were interrupted (what they say of it): the cases
    /// they did not reach are skips, not verdicts.
    pub interrupted: (Option<String>, Option<String>),
    /// Per protocol whose old and new runs were judged against different specs or suites (or
    /// one of which records none): what each was judged by.
    pub specs: Vec<SpecChange>,
}

/// A protocol judged against different specs or suites by two runs compared.
#[derive(Debug, Clone, PartialEq)]
pub struct SpecChange {
    pub protocol: String,
    /// What the old run, and the new one, were judged by (None: not recorded).
    pub old: Option<JudgedBy>,
    pub new: Option<JudgedBy>,
}

impl SpecChange {
    /// The changes between `old`'s and `new`'s specs, per protocol either names.
    fn between(old: &Report, new: &Report) -> Vec<SpecChange> {
        let mut names: Vec<&str> = protocol_names(&old.protocol).collect();
        for n in protocol_names(&new.protocol) {
            if !names.contains(&n) {
                names.push(n);
            }
        }
        let of = |r: &Report, n: &str| r.judged_by.iter().find(|b| b.protocol == n).cloned();
        names
            .into_iter()
            .map(|n| SpecChange {
                protocol: n.to_string(),
                old: of(old, n),
                new: of(new, n),
            })
            .filter(|c| c.old != c.new || c.old.is_none())
            .collect()
    }

    /// One line: what each run was judged by, and why it matters to the comparison.
    fn line(&self, old: &str, new: &str) -> String {
        let said = |by: &Option<JudgedBy>| match by {
            Some(by) => format!(
                "{}, {}",
                by.spec_text(SHORT_DIGEST),
                by.suite_text(SHORT_DIGEST)
            ),
            None => crate::specs::NOT_RECORDED.to_string(),
        };
        let what = match (&self.old, &self.new) {
            (None, None) => "neither report records the spec it was judged by",
            (Some(a), Some(b)) if a.sha256 != b.sha256 => {
                "judged against different specs: a change may come from the spec, not the agent"
            }
            (Some(_), Some(_)) => {
                "judged by different suites: a change may come from the suite, not the agent"
            }
            _ => "the spec is recorded by one report only: the runs may not be comparable",
        };
        format!(
            "{}: {what} — {old}: {}; {new}: {}",
            self.protocol,
            said(&self.old),
            said(&self.new)
        )
    }
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
    d.interrupted = (
        old.interrupted.as_ref().map(|i| i.headline()),
        new.interrupted.as_ref().map(|i| i.headline()),
    );
    d.specs = SpecChange::between(old, new);
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
    for (file, cut) in [(old, &d.interrupted.0), (new, &d.interrupted.1)] {
        if let Some(cut) = cut {
            out.push_str(&format!(
                "note: {file} is of an interrupted run, {cut}: the cases it did not reach are \
                 skips, not verdicts\n\n"
            ));
        }
    }
    for change in &d.specs {
        out.push_str(&format!("note: {}\n\n", change.line(old, new)));
    }
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
    let n = |items: usize, what: &str| crate::text::count(items as u64, what);
    out.push_str(&format!(
        "{}, {} fixed, {}, {} no longer judged, {}, {} removed\n",
        n(d.regressions.len(), "regressions"),
        d.fixed.len(),
        n(d.new_warnings.len(), "new warnings"),
        d.unjudged.len(),
        n(d.added.len(), "new cases"),
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
    fn the_merged_from_note_names_ten_parts_and_counts_the_rest() {
        let parts: Vec<(String, Report)> = (0..12)
            .map(|i| {
                let r = report(&format!("http://t{i}"), &[("x", Pass, Must)]);
                (format!("t{i}.json"), r)
            })
            .collect();
        let m = merge(&parts).unwrap();
        let note = &m.notes[0];
        assert!(note.starts_with("merged from t0.json (probe roundtable against http://t0, seed 7, 1 cases); t1.json"), "{note}");
        assert!(note.contains("; t9.json (probe roundtable against http://t9, seed 7, 1 cases); and 2 more (12 parts in all)"), "{note}");
        assert!(!note.contains("t10.json"), "{note}");
        assert_eq!(m.cases.len(), 12);
        assert_eq!(m.cases[11].id, "http://t11: x");
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
        assert!(
            shown.ends_with(
                "1 regression, 1 fixed, 1 new warning, 1 no longer judged, 1 new case, 1 removed\n"
            ),
            "{shown}"
        );
        assert_eq!(diff(&new, &new).exit_code(), 0);
        // Unchanged but for the note that neither report records its spec (made in-process,
        // not stamped as the command line stamps a run's).
        let same = diff(&new, &new);
        assert_eq!((same.specs.len(), same.specs[0].old.is_none()), (1, true));
        assert_eq!(
            Diff {
                specs: Vec::new(),
                ..same
            },
            Diff::default()
        );
    }
}
