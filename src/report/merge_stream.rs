//! The merge of many reports written as it reads them: `report merge` of thousands of files and
//! the merged report of a run over thousands of targets, in memory that does not grow with the
//! reports (one part is held at a time).
//!
//! Two passes over the files. The first ([`Survey::read`]) keeps each part's head (its report
//! without cases: protocol, target, seed, start, notes…) and, where ids may clash, a 128-bit
//! hash of each case id: what the merged head and the `TARGET: ` prefixes need. The second
//! ([`Survey::write`]) reads each part whole, writes its cases to the outputs' spool files
//! beside their destinations, and drops it before reading the next; the fields known only at
//! the end (summary, notes, counts in the JUnit root and suites' heads) are written last, and
//! each destination is replaced at once by a rename (the file on disk is the old one or the
//! whole new one). The semantics are those of [`tools::merge`], from the same pieces.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use serde::Deserialize;

use super::targets_page::TargetsPage;
use super::tools::{self, Owners, PartHead, ReportFileError};
use super::{CaseResult, Exit, Report, Summary};
use writers::{write_error, CtrfOut, JsonOut, JunitOut};

mod writers;

/// One report file of a merge, and the name it goes by (the file as given; a target's name in a
/// run over targets).
#[derive(Debug, Clone)]
pub struct Part {
    pub name: String,
    pub path: PathBuf,
}

/// How the cases' ids are told apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ids {
    /// Every id and group prefixed by its part's name: a run over targets (the names are
    /// unique), whose shards merged later give the same ids.
    ByName,
    /// As `report merge`: prefixed by the part's target only where the id is in parts of
    /// different protocols or targets; the same id twice for one protocol and target is an error.
    ByClash,
}

/// Why a streaming merge did not write its files.
#[derive(Debug, thiserror::Error)]
pub enum MergeStreamError {
    /// A part did not read, or the parts do not merge.
    #[error(transparent)]
    File(#[from] ReportFileError),
    #[error("{flag} {path}: cannot write: {cause}")]
    Write {
        flag: &'static str,
        path: String,
        cause: String,
    },
    #[error("interrupted while merging: no merged file was written")]
    Interrupted,
}

impl crate::error::LayerError for MergeStreamError {
    fn class(&self) -> crate::error::Class {
        use crate::error::Class;
        match self {
            // A part that does not read, or parts that do not merge.
            MergeStreamError::File(e) => e.class(),
            MergeStreamError::Write { .. } | MergeStreamError::Interrupted => Class::Run,
        }
    }
}

/// Where the merged report goes.
#[derive(Debug, Clone, Copy, Default)]
pub struct Outputs<'a> {
    pub json: Option<&'a Path>,
    pub junit: Option<&'a Path>,
    pub ctrf: Option<&'a Path>,
    pub html: Option<&'a Path>,
    /// `--baseline`, applied to each case as it is met (by its merged id).
    pub baseline: Option<&'a super::baseline::Baseline>,
}

/// What a streaming merge ends with: the merged report without its cases (summary counted),
/// its exit status (what [`Report::exit_code`] gives for the same report held whole), and the
/// first cases that fail it.
#[derive(Debug, Clone)]
pub struct Merged {
    pub head: Report,
    pub exit: Exit,
    /// Up to [`FAILING_SHOWN`] cases that fail the run: (id, message).
    pub failing: Vec<(String, String)>,
    /// How many cases fail the run in all.
    pub failing_total: usize,
}

/// A merge of at most this many cases, in at most [`WHOLE_BYTES`] of files, is held whole (every
/// case on the console, the single-report HTML page); a larger one is written as it is read.
pub const WHOLE_CASES: usize = 2_000;
/// See [`WHOLE_CASES`].
pub const WHOLE_BYTES: u64 = 16 * 1024 * 1024;

/// How many failing cases [`Merged::failing`] keeps.
pub const FAILING_SHOWN: usize = 20;

/// `path` with `.NAME-PID.what` beside it: a hidden file in the same directory (same file
/// system, so that a rename replaces the destination at once).
pub fn beside(path: &Path, what: &str) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "report".into());
    path.with_file_name(format!(".{name}.{}.{what}", std::process::id()))
}

/// A report file as the first pass reads it: everything but the cases, of which only the ids
/// are kept (or nothing, when ids are prefixed by name).
#[derive(Deserialize)]
struct HeadFile<C> {
    tool: String,
    version: String,
    role: String,
    protocol: String,
    target: String,
    #[serde(default)]
    seed: Option<u64>,
    #[serde(default)]
    command: Option<String>,
    strict: bool,
    started_at: String,
    duration_ms: u64,
    summary: Summary,
    cases: C,
    #[serde(default)]
    notes: Vec<String>,
    #[serde(default)]
    min_score: Option<f64>,
    #[serde(default)]
    interrupted: Option<super::Interruption>,
    #[serde(default)]
    judged_by: Vec<crate::specs::JudgedBy>,
}

#[derive(Deserialize)]
struct IdOnly {
    id: String,
}

/// Counts the cases of a list without keeping them.
struct Counted(usize);

impl<'de> Deserialize<'de> for Counted {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = Counted;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a list of cases")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Counted, A::Error> {
                let mut n = 0;
                while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {
                    n += 1;
                }
                Ok(Counted(n))
            }
        }
        d.deserialize_seq(Visit)
    }
}

impl<C> HeadFile<C> {
    fn head(self, file: &str, cases: usize) -> PartHead {
        PartHead {
            file: file.to_string(),
            cases,
            report: Report {
                tool: self.tool,
                version: self.version,
                role: self.role,
                protocol: self.protocol,
                target: self.target,
                seed: self.seed,
                command: self.command,
                strict: self.strict,
                started_at: self.started_at,
                duration_ms: self.duration_ms,
                summary: self.summary,
                cases: Vec::new(),
                notes: self.notes,
                min_score: self.min_score,
                fingerprint: None,
                interrupted: self.interrupted,
                timeline: Vec::new(),
                counts: Vec::new(),
                judged_by: self.judged_by,
                suite_file: None,
            },
        }
    }
}

/// The first pass over a merge's parts: their heads and where their ids are.
pub struct Survey {
    parts: Vec<Part>,
    heads: Vec<PartHead>,
    owners: Owners,
    ids: Ids,
    /// Whether each part is checked against the report schema as it is read (user files).
    validate: bool,
    bytes: u64,
}

impl Survey {
    /// Reads every part's head; `validate`: check each against `schemas/report.schema.json`
    /// (the second pass does, for a file of the user's). Errors name the file and the JSON
    /// path; a repeat (the same id twice for one protocol and target) is an error here.
    pub fn read(parts: Vec<Part>, ids: Ids, validate: bool) -> Result<Survey, ReportFileError> {
        if parts.is_empty() {
            return Err(ReportFileError::NothingToMerge);
        }
        let mut heads = Vec::with_capacity(parts.len());
        let mut owners = Owners::default();
        let mut bytes = 0;
        for (i, part) in parts.iter().enumerate() {
            let text = std::fs::read(&part.path).map_err(|e| ReportFileError::Unreadable {
                path: part.path.display().to_string(),
                cause: e.to_string(),
            })?;
            bytes += text.len() as u64;
            match ids {
                Ids::ByName => {
                    let file: HeadFile<Counted> = parse(&part.path, &text)?;
                    let n = file.cases.0;
                    heads.push(file.head(&part.name, n));
                }
                Ids::ByClash => {
                    let mut file: HeadFile<Vec<IdOnly>> = parse(&part.path, &text)?;
                    let found = std::mem::take(&mut file.cases);
                    heads.push(file.head(&part.name, found.len()));
                    for c in &found {
                        owners.note(&c.id, i, &heads);
                    }
                }
            }
        }
        owners.check()?;
        Ok(Survey {
            parts,
            heads,
            owners,
            ids,
            validate,
            bytes,
        })
    }

    /// How many cases the merge holds.
    pub fn cases(&self) -> usize {
        self.heads.iter().map(|h| h.cases).sum()
    }

    /// How many bytes its files hold.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Whether the merge is small enough to hold whole ([`WHOLE_CASES`], [`WHOLE_BYTES`]).
    pub fn small(&self) -> bool {
        self.cases() <= WHOLE_CASES && self.bytes <= WHOLE_BYTES
    }

    /// How many parts.
    pub fn parts(&self) -> usize {
        self.parts.len()
    }

    /// Reads part `i` whole (checked against the schema when the survey was asked to).
    fn part(&self, i: usize) -> Result<Report, ReportFileError> {
        let path = &self.parts[i].path;
        if self.validate {
            return tools::read(path);
        }
        let text = std::fs::read(path).map_err(|e| ReportFileError::Unreadable {
            path: path.display().to_string(),
            cause: e.to_string(),
        })?;
        parse(path, &text)
    }

    /// Part `i`'s cases as the merge shows them: prefixed by the part's name, or by its target
    /// where the id is in parts of different protocols or targets.
    fn told_apart(&self, i: usize, report: &Report, cases: &mut [CaseResult]) {
        for c in cases {
            if let Some(label) = self.label(i, &report.target, &c.id) {
                tools::prefix(c, label);
            }
        }
    }

    /// The prefix the case `id` of part `i` takes in the merged report, if any.
    fn label<'s>(&'s self, i: usize, target: &'s str, id: &str) -> Option<&'s str> {
        match self.ids {
            Ids::ByName => Some(&self.parts[i].name),
            Ids::ByClash if self.owners.shared(id) => Some(target),
            Ids::ByClash => None,
        }
    }

    /// The merged report held whole (for a merge small enough to hold: every case on the
    /// console, the single-report HTML page).
    pub fn whole(&self) -> Result<Report, ReportFileError> {
        let mut read = Vec::with_capacity(self.parts.len());
        for i in 0..self.parts.len() {
            let mut r = self.part(i)?;
            if self.ids == Ids::ByName {
                let mut cases = std::mem::take(&mut r.cases);
                self.told_apart(i, &r, &mut cases);
                r.cases = cases;
            }
            read.push((self.parts[i].name.clone(), r));
        }
        tools::merge(&read)
    }

    /// The second pass: reads each part, writes its cases to the outputs asked for, and drops
    /// it before the next. `stop` set (Ctrl-C) ends the merge between two parts, writing
    /// nothing and leaving no spool file.
    pub fn write(self, out: &Outputs, stop: &AtomicBool) -> Result<Merged, MergeStreamError> {
        let mut head = tools::merged_head(&self.heads);
        let mut json = out.json.map(JsonOut::create).transpose()?;
        let mut xml = out.junit.map(JunitOut::create).transpose()?;
        let mut ctrf = out.ctrf.map(CtrfOut::create).transpose()?;
        let mut page = match out.html {
            Some(p) => Some(TargetsPage::create(p).map_err(|e| write_error("--html", p, e))?),
            None => None,
        };
        let today = super::baseline::today();
        let mut marking = out.baseline.map(|b| b.marking(&today));
        let mut summary = Summary::default();
        let (mut failing, mut failing_total) = (Vec::new(), 0);
        for i in 0..self.parts.len() {
            if stop.load(Ordering::Relaxed) {
                return Err(MergeStreamError::Interrupted);
            }
            let mut r = self.part(i)?;
            if let Some(marking) = &mut marking {
                // By the id the case has in the merged report, which is what a baseline lists.
                for c in &mut r.cases {
                    let id = match self.label(i, &r.target, &c.id) {
                        Some(label) => format!("{label}: {}", c.id),
                        None => c.id.clone(),
                    };
                    marking.mark(&id, c);
                }
            }
            if let (Some(page), Some(p)) = (&mut page, out.html) {
                page.add(&self.parts[i].name, &r)
                    .map_err(|e| write_error("--html", p, e))?;
            }
            let mut cases = std::mem::take(&mut r.cases);
            self.told_apart(i, &r, &mut cases);
            add(&mut summary, &Summary::of(&cases));
            for c in &cases {
                if head.is_blocking(c) {
                    failing_total += 1;
                    if failing.len() < FAILING_SHOWN {
                        failing.push((c.id.clone(), c.message.clone()));
                    }
                }
            }
            if let Some(json) = &mut json {
                json.cases(&cases)?;
            }
            if let Some(xml) = &mut xml {
                xml.cases(&head, i, &self.heads, &cases)?;
            }
            if let Some(ctrf) = &mut ctrf {
                ctrf.cases(&head, &cases)?;
            }
        }
        head.summary = summary;
        if let Some(marking) = marking {
            head.notes.extend(marking.notes());
        }
        if !head.strict {
            head.summary.warnings = head.summary.failed_should;
        }
        let exit = head.exit_given(failing_total > 0);
        if let Some(json) = json {
            json.finish(&head)?;
        }
        if let Some(xml) = xml {
            xml.finish(&head, &self.heads)?;
        }
        if let Some(ctrf) = ctrf {
            ctrf.finish(&head, exit)?;
        }
        if let (Some(page), Some(p)) = (page, out.html) {
            page.finish(&head, exit)
                .map_err(|e| write_error("--html", p, e))?;
        }
        Ok(Merged {
            head,
            exit,
            failing,
            failing_total,
        })
    }
}

/// A report file's JSON as `T`; a file that does not read names itself and, when it is not a
/// report's shape, the schema's finding (the JSON path).
fn parse<'a, T: Deserialize<'a>>(path: &Path, text: &'a [u8]) -> Result<T, ReportFileError> {
    serde_json::from_slice(text).map_err(|e| match tools::read(path) {
        Err(precise) => precise,
        Ok(_) => ReportFileError::Unreadable {
            path: path.display().to_string(),
            cause: e.to_string(),
        },
    })
}

/// Adds the counts of `more` to `into` (a summary is additive; warnings are counted at the end,
/// by the merged run's strictness).
fn add(into: &mut Summary, more: &Summary) {
    into.passed += more.passed;
    into.failed += more.failed;
    into.skipped += more.skipped;
    into.xfailed += more.xfailed;
    into.stale += more.stale;
    into.failed_must += more.failed_must;
    into.failed_should += more.failed_should;
    into.failed_may += more.failed_may;
    // Before the counts it falls back on (in a report without it) grow.
    into.judged_must = Some(into.judged() + more.judged());
    into.skipped_must += more.skipped_must;
    into.must += more.must;
    into.xfailed_must += more.xfailed_must;
    into.precondition_must += more.precondition_must;
    if let Some(s) = more.evaluation {
        let e = into.evaluation.get_or_insert_with(Default::default);
        e.met += s.met;
        e.unmet += s.unmet;
        e.unjudged += s.unjudged;
    }
}

impl Merged {
    /// The console report of a merge written as it was read: its header, the cases that fail
    /// the run (the first [`FAILING_SHOWN`]), its notes, counts and verdict line; `parts`: how
    /// many files or targets it merged.
    pub fn console(&self, parts: usize) -> String {
        // The header names a few targets, not 10,000 (the files name them all).
        let mut head = tools::without_cases(&self.head);
        let targets: Vec<&str> = self.head.target.split(" + ").collect();
        if targets.len() > tools::NAMED_PARTS {
            head.target = format!(
                "{} + … ({} targets in all)",
                targets[..tools::NAMED_PARTS].join(" + "),
                targets.len()
            );
        }
        let whole = super::console::render(&head, false);
        let (top, end) = whole.split_once("\n\n").unwrap_or(("", &whole));
        let mut out = format!(
            "{top}\n\n{} cases from {parts} parts: the console names the cases that fail the \
             run; --json, --junit and --html hold every case\n",
            self.head.summary.passed
                + self.head.summary.failed
                + self.head.summary.skipped
                + self.head.summary.xfailed
                + self.head.summary.stale
                + self.head.summary.evaluation.map_or(0, |s| s.total()),
        );
        for (id, message) in &self.failing {
            out.push_str(&format!(
                "  FAIL {id}: {}\n",
                crate::text::shorten(&message.replace('\n', " "), 200)
            ));
        }
        if self.failing_total > self.failing.len() {
            out.push_str(&format!(
                "  … and {} more\n",
                crate::text::count(
                    (self.failing_total - self.failing.len()) as u64,
                    "failing cases"
                )
            ));
        }
        out.push_str(end);
        out
    }
}

#[cfg(test)]
mod tests;
