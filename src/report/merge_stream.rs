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

use std::collections::HashMap;
use std::io::{BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use serde::Deserialize;

use super::junit::{self, pieces, SuiteTally};
use super::targets_page::TargetsPage;
use super::tools::{self, Owners, PartHead, ReportFileError};
use super::{CaseResult, Exit, Report, Summary};

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

fn write_error(flag: &'static str, path: &Path, e: std::io::Error) -> MergeStreamError {
    MergeStreamError::Write {
        flag,
        path: path.display().to_string(),
        cause: e.to_string(),
    }
}

/// A file written beside a destination (a spool, or the whole file before its rename), removed
/// when dropped unless it was renamed into place.
struct Beside {
    path: PathBuf,
    file: BufWriter<std::fs::File>,
}

impl Beside {
    fn create(dest: &Path, what: &str) -> std::io::Result<Beside> {
        let path = beside(dest, what);
        let file = BufWriter::with_capacity(256 * 1024, std::fs::File::create(&path)?);
        Ok(Beside { path, file })
    }

    /// Flushes and renames the file to `dest`.
    fn rename_to(mut self, dest: &Path) -> std::io::Result<()> {
        self.file.flush()?;
        self.file.get_ref().sync_all()?;
        std::fs::rename(&self.path, dest)
    }
}

impl Drop for Beside {
    fn drop(&mut self) {
        // After a rename there is nothing left here to remove.
        let _ = std::fs::remove_file(&self.path);
    }
}

/// The merged JSON: the cases spooled as they come, then the head, the cases and the tail.
struct JsonOut {
    dest: PathBuf,
    spool: Beside,
    cases: usize,
}

impl JsonOut {
    fn create(dest: &Path) -> Result<JsonOut, MergeStreamError> {
        let spool = Beside::create(dest, "spool").map_err(|e| write_error("--json", dest, e))?;
        Ok(JsonOut {
            dest: dest.to_path_buf(),
            spool,
            cases: 0,
        })
    }

    fn cases(&mut self, cases: &[CaseResult]) -> Result<(), MergeStreamError> {
        let failed = |e: std::io::Error| write_error("--json", &self.dest, e);
        for c in cases {
            // As `to_string_pretty` indents an element of the report's `cases` (a JSON string
            // holds no raw line break: every one here is the layout's).
            let text = serde_json::to_string_pretty(c).unwrap_or_default();
            let sep = if self.cases == 0 { "\n    " } else { ",\n    " };
            self.spool.file.write_all(sep.as_bytes()).map_err(failed)?;
            self.spool
                .file
                .write_all(text.replace('\n', "\n    ").as_bytes())
                .map_err(failed)?;
            self.cases += 1;
        }
        Ok(())
    }

    fn finish(mut self, head: &Report) -> Result<(), MergeStreamError> {
        let dest = self.dest.clone();
        let failed = |e: std::io::Error| write_error("--json", &dest, e);
        let whole = super::json::to_string(head);
        const EMPTY: &str = "\n  \"cases\": []";
        let at = whole.find(EMPTY).unwrap_or(whole.len());
        let (before, after) = whole.split_at(at);
        let after = after.strip_prefix(EMPTY).unwrap_or(after);
        let mut file = Beside::create(&self.dest, "tmp").map_err(failed)?;
        file.file.write_all(before.as_bytes()).map_err(failed)?;
        file.file.write_all(b"\n  \"cases\": [").map_err(failed)?;
        self.spool.file.flush().map_err(failed)?;
        let mut spool = std::fs::File::open(&self.spool.path).map_err(failed)?;
        std::io::copy(&mut spool, &mut file.file).map_err(failed)?;
        let close = if self.cases == 0 { "]" } else { "\n  ]" };
        file.file.write_all(close.as_bytes()).map_err(failed)?;
        file.file.write_all(after.as_bytes()).map_err(failed)?;
        file.rename_to(&self.dest).map_err(failed)
    }
}

/// The merged CTRF: each test written to a spool as it comes and counted, and at the end the
/// document around them (its summary counts them).
struct CtrfOut {
    dest: PathBuf,
    spool: Beside,
    tally: super::ctrf::Tally,
    tests: usize,
}

impl CtrfOut {
    fn create(dest: &Path) -> Result<CtrfOut, MergeStreamError> {
        let spool = Beside::create(dest, "spool").map_err(|e| write_error("--ctrf", dest, e))?;
        Ok(CtrfOut {
            dest: dest.to_path_buf(),
            spool,
            tally: Default::default(),
            tests: 0,
        })
    }

    fn cases(&mut self, head: &Report, cases: &[CaseResult]) -> Result<(), MergeStreamError> {
        let failed = |e: std::io::Error| write_error("--ctrf", &self.dest, e);
        for c in cases {
            let text = super::ctrf::test_text(&self.tally.test(head, c));
            let sep = if self.tests == 0 {
                "\n      "
            } else {
                ",\n      "
            };
            self.spool.file.write_all(sep.as_bytes()).map_err(failed)?;
            self.spool.file.write_all(text.as_bytes()).map_err(failed)?;
            self.tests += 1;
        }
        Ok(())
    }

    fn finish(mut self, head: &Report, exit: Exit) -> Result<(), MergeStreamError> {
        let dest = self.dest.clone();
        let failed = |e: std::io::Error| write_error("--ctrf", &dest, e);
        let (before, after) = super::ctrf::split_around_tests(head, &self.tally, exit);
        let mut file = Beside::create(&self.dest, "tmp").map_err(failed)?;
        file.file.write_all(before.as_bytes()).map_err(failed)?;
        self.spool.file.flush().map_err(failed)?;
        let mut spool = std::fs::File::open(&self.spool.path).map_err(failed)?;
        std::io::copy(&mut spool, &mut file.file).map_err(failed)?;
        let close = if self.tests == 0 { "]" } else { "\n    ]" };
        file.file.write_all(close.as_bytes()).map_err(failed)?;
        file.file.write_all(after.as_bytes()).map_err(failed)?;
        file.rename_to(&self.dest).map_err(failed)
    }
}

/// A testsuite of the merged JUnit as the cases come: its counts, and the part its first case
/// came from (a few dozen bytes besides its name, for each of a run's thousands of suites).
struct Suite {
    name: String,
    tally: SuiteTally,
    /// The part (by index) whose target the suite names.
    part: u32,
    /// Whether its cases came from parts of different targets (it names the merged report's).
    mixed: bool,
}

/// The merged JUnit: each testcase written to a spool as it comes, the spans of the spool each
/// suite's cases fill remembered (a few bytes per span, and a span holds a part's run of cases
/// of one suite), and at the end the document written suite by suite, each head followed by
/// its spans copied from the spool.
struct JunitOut {
    dest: PathBuf,
    spool: Beside,
    written: u64,
    suites: Vec<Suite>,
    /// The suites by a 128-bit hash of their name.
    index: HashMap<u128, u32>,
    /// (suite, start, end) in the spool.
    spans: Vec<(u32, u64, u64)>,
}

impl JunitOut {
    fn create(dest: &Path) -> Result<JunitOut, MergeStreamError> {
        let spool = Beside::create(dest, "spool").map_err(|e| write_error("--junit", dest, e))?;
        Ok(JunitOut {
            dest: dest.to_path_buf(),
            spool,
            written: 0,
            suites: Vec::new(),
            index: HashMap::new(),
            spans: Vec::new(),
        })
    }

    fn cases(
        &mut self,
        head: &Report,
        part: usize,
        heads: &[PartHead],
        cases: &[CaseResult],
    ) -> Result<(), MergeStreamError> {
        for c in cases {
            let name = junit::suite_name(c);
            let at = match self.index.get(&tools::hash128(&name)) {
                Some(&at) => at,
                None => {
                    let at = self.suites.len() as u32;
                    self.index.insert(tools::hash128(&name), at);
                    self.suites.push(Suite {
                        name,
                        tally: SuiteTally::default(),
                        part: part as u32,
                        mixed: false,
                    });
                    at
                }
            };
            let suite = &mut self.suites[at as usize];
            suite.tally.count(head, c);
            suite.mixed |= heads[suite.part as usize].report.target != heads[part].report.target;
            let text = pieces::test_case(head, c);
            self.spool
                .file
                .write_all(text.as_bytes())
                .map_err(|e| write_error("--junit", &self.dest, e))?;
            let (start, end) = (self.written, self.written + text.len() as u64);
            self.written = end;
            match self.spans.last_mut() {
                Some(last) if last.0 == at && last.2 == start => last.2 = end,
                _ => self.spans.push((at, start, end)),
            }
        }
        Ok(())
    }

    fn finish(mut self, head: &Report, heads: &[PartHead]) -> Result<(), MergeStreamError> {
        let dest = self.dest.clone();
        let failed = |e: std::io::Error| write_error("--junit", &dest, e);
        self.spool.file.flush().map_err(failed)?;
        let closing = junit::closing_suites(head);
        let heads = |s: &Suite| {
            let target = match s.mixed {
                true => &head.target,
                false => &heads[s.part as usize].report.target,
            };
            let target = junit::xml_safe(target);
            let mut suite = s.tally.suite(&s.name, &target, head.seed);
            junit::add_spec_properties(&mut suite, head);
            suite
        };
        let mut totals = pieces::Totals {
            name: junit::root_name(head),
            time: std::time::Duration::from_millis(head.duration_ms),
            ..Default::default()
        };
        for s in &self.suites {
            totals.add(&heads(s));
        }
        for s in &closing {
            totals.add(s);
        }
        // Each suite's spans in the order they were written.
        self.spans.sort_by_key(|s| s.0);
        let mut spool = std::fs::File::open(&self.spool.path).map_err(failed)?;
        let mut file = Beside::create(&self.dest, "tmp").map_err(failed)?;
        file.file
            .write_all(totals.head().as_bytes())
            .map_err(failed)?;
        let mut spans = self.spans.iter().peekable();
        for (at, s) in self.suites.iter().enumerate() {
            file.file
                .write_all(pieces::suite_head(heads(s)).as_bytes())
                .map_err(failed)?;
            while let Some(&&(_, start, end)) = spans.peek().filter(|span| span.0 as usize == at) {
                spool.seek(SeekFrom::Start(start)).map_err(failed)?;
                std::io::copy(&mut (&mut spool).take(end - start), &mut file.file)
                    .map_err(failed)?;
                spans.next();
            }
            file.file
                .write_all(pieces::suite_end().as_bytes())
                .map_err(failed)?;
        }
        for s in closing {
            file.file
                .write_all(pieces::whole_suite(s).as_bytes())
                .map_err(failed)?;
        }
        file.file
            .write_all(pieces::Totals::tail().as_bytes())
            .map_err(failed)?;
        file.rename_to(&self.dest).map_err(failed)
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
mod tests {
    use super::*;
    use crate::report::baseline::tests::case;
    use crate::report::baseline::Baseline;
    use crate::report::{Kind, Level, RunInfo, Status};

    use Level::{May, Must, Should};
    use Status::{Fail, Pass, Skip, Stale, Xfail};

    /// A directory of its own under the system temp dir, removed on drop.
    struct Dir(PathBuf);

    impl Dir {
        fn new(name: &str) -> Dir {
            let d = std::env::temp_dir().join(format!(
                "agent-tck-merge-stream-{name}-{}",
                std::process::id()
            ));
            let _ = std::fs::remove_dir_all(&d);
            std::fs::create_dir_all(&d).unwrap();
            Dir(d)
        }
    }

    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    type Spec<'a> = (&'a str, &'a str, Status, Level, Kind);

    fn report(target: &str, strict: bool, min_score: Option<f64>, cases: &[Spec]) -> Report {
        let cases = cases
            .iter()
            .map(|(id, group, status, level, kind)| {
                let mut c = case(id, *status, *level, format!("{id}: {status:?} <&> \u{1}"));
                c.group = group.to_string();
                c.kind = *kind;
                c
            })
            .collect();
        let mut r = RunInfo::start("probe", "roundtable", target, 7, strict)
            .report(cases, &crate::text::Redactor::new(Vec::new()));
        r.min_score = min_score;
        r.summarize();
        r
    }

    /// Writes the parts to `dir`, merges them both ways: held whole, and streamed.
    fn both(
        dir: &Dir,
        reports: &[Report],
        ids: Ids,
        baseline: Option<&Baseline>,
    ) -> (Report, Merged, String, String) {
        let parts: Vec<Part> = reports
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let path = dir.0.join(format!("part-{i}.json"));
                std::fs::write(&path, super::super::json::to_string(r)).unwrap();
                Part {
                    name: format!("t{i}"),
                    path,
                }
            })
            .collect();
        let survey = Survey::read(parts.clone(), ids, true).unwrap();
        let mut whole = survey.whole().unwrap();
        if let Some(b) = baseline {
            b.apply(&mut whole, &super::super::baseline::today());
        }
        let (json, xml, ctrf, html) = (
            dir.0.join("all.json"),
            dir.0.join("all.xml"),
            dir.0.join("all.ctrf.json"),
            dir.0.join("all.html"),
        );
        let out = Outputs {
            json: Some(&json),
            junit: Some(&xml),
            ctrf: Some(&ctrf),
            html: Some(&html),
            baseline,
        };
        let merged = Survey::read(parts, ids, true)
            .unwrap()
            .write(&out, &AtomicBool::new(false))
            .unwrap();
        // Nothing is left beside the files but the files.
        let mut left: Vec<String> = std::fs::read_dir(&dir.0)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with('.'))
            .collect();
        left.sort();
        assert_eq!(left, Vec::<String>::new());
        // The streamed CTRF is the whole merge's too.
        assert_eq!(
            std::fs::read_to_string(ctrf).unwrap(),
            super::super::ctrf::to_string(&whole)
        );
        (
            whole,
            merged,
            std::fs::read_to_string(json).unwrap(),
            std::fs::read_to_string(xml).unwrap(),
        )
    }

    /// The stream's JSON is the whole merge's, its JUnit the whole's JUnit, its summary and
    /// exit status the whole's.
    fn same_as_whole(name: &str, reports: &[Report], ids: Ids) -> Report {
        let dir = Dir::new(name);
        let (whole, merged, json, xml) = both(&dir, reports, ids, None);
        assert_eq!(json, super::super::json::to_string(&whole), "{name}");
        let value: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(crate::schema::schemas().validate("report", &value), vec![]);
        assert_eq!(xml, super::super::junit::to_string(&whole), "{name}");
        assert_eq!(merged.head.summary, whole.summary, "{name}");
        assert_eq!(merged.exit, whole.exit_code(), "{name}");
        whole
    }

    const C: Kind = Kind::Conformance;

    /// A part cut short by Ctrl-C makes the merge cut short: both merges mark it (the counts
    /// added, its ids not reached named by part), exit 130 whatever the cases say, and the
    /// page's header and the part's row say INTERRUPTED; the whole part passed.
    #[test]
    fn a_merge_of_an_interrupted_part_is_marked_interrupted() {
        let whole = report("http://a", false, None, &[("a.one", "a", Pass, Must, C)]);
        let mut cut = report(
            "http://a",
            false,
            None,
            &[("b.one", "b", Pass, Must, C), ("b.two", "b", Skip, Must, C)],
        );
        cut.interrupted = Some(crate::report::Interruption::of(
            crate::report::Signal::Interrupt,
            std::time::Duration::from_millis(2_100),
            &cut.cases,
            |c| c.id != "b.two",
        ));
        let parts = [whole, cut];
        let merged = same_as_whole("interrupted", &parts, Ids::ByClash);
        assert_eq!(merged.exit_code(), Exit::Interrupted);
        let i = merged.interrupted.clone().unwrap();
        assert_eq!((i.judged, i.cases, i.not_reached_count), (1, 2, 1));
        assert_eq!(i.not_reached, vec!["t1: b.two".to_string()]);
        assert!(
            merged
                .notes
                .iter()
                .any(|n| n.starts_with("1 of 2 parts interrupted, so is the merge (no verdict): t1: INTERRUPTED (Ctrl-C) after 2.1 s")),
            "{:?}",
            merged.notes
        );
        let dir = Dir::new("interrupted-page");
        let (_, streamed, _, xml) = both(&dir, &parts, Ids::ByClash, None);
        assert_eq!(streamed.exit, Exit::Interrupted);
        assert!(xml.contains("run.completed [must]"), "{xml}");
        let page = std::fs::read_to_string(dir.0.join("all.html")).unwrap();
        assert!(page.contains(" · INTERRUPTED</title>"), "{page}");
        assert!(
            page.contains("<p>exit 130: INTERRUPTED (Ctrl-C) after 2.1 s — 1 of 2 cases judged, 1 not reached; not a verdict — 1 of 2 parts interrupted</p>"),
            "{page}"
        );
        // The rows: the whole part passed, the cut one says so (its reason, the headline).
        assert!(
            page.contains(r#"["t0","PASS",1,0,0,0,[],0,null]"#),
            "{page}"
        );
        assert!(
            page.contains(r#"["t1","INTERRUPTED",1,0,0,1,[],0,"INTERRUPTED (Ctrl-C) after 2.1 s"#),
            "{page}"
        );
        // A diff against the cut run notes it.
        let diff = crate::report::tools::diff(&parts[0], &parts[1]);
        let shown = crate::report::tools::render_diff(&diff, "a.json", "b.json");
        assert!(
            shown.contains(
                "note: b.json is of an interrupted run, INTERRUPTED (Ctrl-C) after 2.1 s"
            ),
            "{shown}"
        );
    }
    const E: Kind = Kind::Evaluation;

    /// `--baseline` in a merge written as it reads: each case marked by its merged id as it is
    /// met, the notes (expired, unseen entries) the whole merge's.
    #[test]
    fn a_baseline_marks_each_case_by_its_merged_id_as_the_whole_merge_does() {
        let parts = [
            report(
                "http://a",
                false,
                None,
                &[("x", "g", Fail, Must, C), ("y", "g", Pass, Must, C)],
            ),
            report(
                "http://b",
                false,
                None,
                &[("x", "g", Fail, Must, C), ("z", "g", Fail, Must, C)],
            ),
        ];
        let baseline = Baseline::parse(
            "baseline.yaml",
            concat!(
                "- id: \"http://a: x\"\n  reason: known\n",
                "- id: y\n  reason: fixed since\n",
                "- id: z\n  reason: old\n  until: 2000-01-01\n",
                "- id: gone\n  reason: removed\n",
            ),
        )
        .unwrap();
        let dir = Dir::new("baseline");
        let (whole, merged, json, _) = both(&dir, &parts, Ids::ByClash, Some(&baseline));
        // (The JUnit differs by design: a streamed suite names its own target.)
        assert_eq!(json, super::super::json::to_string(&whole));
        assert_eq!(merged.head.summary, whole.summary);
        assert_eq!((merged.exit, merged.failing_total), (whole.exit_code(), 2));
        let status = |id: &str| whole.cases.iter().find(|c| c.id == id).unwrap().status;
        assert_eq!(status("http://a: x"), Xfail);
        assert_eq!(
            status("y"),
            Stale,
            "an id no other part has keeps no prefix"
        );
        assert_eq!(status("http://b: x"), Fail);
        assert_eq!(status("z"), Fail, "expired: judged as usual");
        assert!(
            whole
                .notes
                .iter()
                .any(|n| n == "baseline: expired, judged as usual: z (until 2000-01-01)")
                && whole
                    .notes
                    .iter()
                    .any(|n| n == "baseline: listed but not in this run: gone"),
            "{:?}",
            whole.notes
        );
    }

    #[test]
    fn the_stream_writes_what_the_whole_merge_holds_and_exits_as_it_would() {
        let t = "http://a";
        // Shards of one run, an empty one among them; a MUST failure.
        let w = same_as_whole(
            "shards",
            &[
                report(
                    t,
                    false,
                    None,
                    &[("x", "g", Pass, Must, C), ("y", "h", Fail, Must, C)],
                ),
                report(t, false, None, &[]),
                report(t, false, None, &[("z", "g", Pass, Must, C)]),
            ],
            Ids::ByClash,
        );
        assert_eq!(w.exit_code(), 1);
        // A SHOULD failure and a stale entry: warnings, unless strict.
        let lenient = [
            report(
                t,
                false,
                None,
                &[("a", "g", Pass, Must, C), ("b", "g", Fail, Should, C)],
            ),
            report(
                t,
                false,
                None,
                &[("c", "g", Stale, Must, C), ("d", "h", Xfail, Must, C)],
            ),
            report(t, false, None, &[("e", "g", Fail, May, C)]),
        ];
        assert_eq!(
            same_as_whole("lenient", &lenient, Ids::ByClash).exit_code(),
            0
        );
        let mut strict = lenient.clone();
        strict[1].strict = true;
        assert_eq!(
            same_as_whole("strict", &strict, Ids::ByClash).exit_code(),
            1
        );
        // Evaluation, with --min-score met and not met.
        let scored = |min| {
            [
                report(
                    t,
                    false,
                    min,
                    &[("m", "s", Pass, May, E), ("n", "s", Fail, May, E)],
                ),
                report(
                    t,
                    false,
                    min,
                    &[("o", "s", Pass, May, E), ("p", "g", Pass, Must, C)],
                ),
            ]
        };
        assert_eq!(
            same_as_whole("met", &scored(Some(0.5)), Ids::ByClash).exit_code(),
            0
        );
        assert_eq!(
            same_as_whole("below", &scored(Some(0.9)), Ids::ByClash).exit_code(),
            1
        );
        // A gated evaluation case that failed fails the run without a MUST failure.
        let gated = [report(
            t,
            false,
            None,
            &[("q", "s", Fail, Must, E), ("r", "g", Pass, Must, C)],
        )];
        assert_eq!(same_as_whole("gated", &gated, Ids::ByClash).exit_code(), 1);
        // Every MUST case skipped: nothing judged.
        let nothing = [
            report(t, false, None, &[("u", "g", Skip, Must, C)]),
            report(
                t,
                false,
                None,
                &[("v", "g", Skip, Must, C), ("w", "g", Pass, May, C)],
            ),
        ];
        let w = same_as_whole("nothing", &nothing, Ids::ByClash);
        assert!(w.judged_nothing());
        // Targets by name: every id prefixed, the same ids in every target.
        let fleet: Vec<Report> = ["http://a", "http://b", "http://c"]
            .iter()
            .map(|t| {
                report(
                    t,
                    false,
                    None,
                    &[("x", "g", Pass, Must, C), ("y", "g", Fail, Should, C)],
                )
            })
            .collect();
        let dir = Dir::new("by-name");
        let (whole, merged, json, _) = both(&dir, &fleet, Ids::ByName, None);
        assert_eq!(json, super::super::json::to_string(&whole));
        assert_eq!(merged.exit, whole.exit_code());
        let ids: Vec<&str> = whole.cases.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["t0: x", "t0: y", "t1: x", "t1: y", "t2: x", "t2: y"]);
    }

    #[test]
    fn targets_that_share_ids_are_told_apart_and_a_suite_names_its_own_target() {
        let dir = Dir::new("clash");
        let parts = [
            report(
                "http://a",
                false,
                None,
                &[("x", "g", Pass, Must, C), ("y", "g", Pass, Must, C)],
            ),
            report("http://b", false, None, &[("x", "g", Fail, Must, C)]),
        ];
        let (whole, merged, json, xml) = both(&dir, &parts, Ids::ByClash, None);
        assert_eq!(json, super::super::json::to_string(&whole));
        assert_eq!(merged.exit, whole.exit_code());
        assert_eq!(
            merged.failing,
            [("http://b: x".to_string(), "x: Fail <&> \u{1}".to_string())]
        );
        let doc = roxmltree::Document::parse(&xml).unwrap();
        let targets: Vec<(String, String)> = doc
            .descendants()
            .filter(|n| n.has_tag_name("testsuite"))
            .map(|s| {
                let target = s
                    .descendants()
                    .find(|p| p.has_tag_name("property") && p.attribute("name") == Some("target"))
                    .and_then(|p| p.attribute("value"))
                    .unwrap_or_default();
                (s.attribute("name").unwrap().to_string(), target.to_string())
            })
            .collect();
        assert_eq!(
            targets,
            [
                ("http://a: g".to_string(), "http://a".to_string()),
                ("g".to_string(), "http://a".to_string()),
                ("http://b: g".to_string(), "http://b".to_string())
            ]
        );
        // The same run twice: refused as the whole merge refuses it, naming both files.
        let twice = [parts[0].clone(), parts[0].clone()];
        let files: Vec<Part> = twice
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let path = dir.0.join(format!("twice-{i}.json"));
                std::fs::write(&path, super::super::json::to_string(r)).unwrap();
                Part {
                    name: path.display().to_string(),
                    path,
                }
            })
            .collect();
        let e = Survey::read(files.clone(), Ids::ByClash, true)
            .err()
            .unwrap();
        let held: Vec<(String, Report)> = files
            .iter()
            .map(|p| (p.name.clone(), twice[0].clone()))
            .collect();
        assert_eq!(Some(e.clone()), tools::merge(&held).err());
        assert!(e.to_string().starts_with("case x is in both "), "{e}");
    }

    /// A part of one passing case, written to `dir` as `file`.
    fn one_case_part(dir: &Dir, file: &str) -> PathBuf {
        let path = dir.0.join(file);
        let part = report("t", false, None, &[("x", "g", Pass, Must, C)]);
        std::fs::write(&path, super::super::json::to_string(&part)).unwrap();
        path
    }

    #[test]
    fn a_file_that_is_not_a_report_is_named_with_its_json_path_and_nothing_is_written() {
        let dir = Dir::new("bad");
        let good = one_case_part(&dir, "good.json");
        let bad = dir.0.join("bad.json");
        std::fs::write(&bad, r#"{"tool": "agent-tck", "cases": 3}"#).unwrap();
        let parts = vec![
            Part {
                name: "good.json".into(),
                path: good,
            },
            Part {
                name: "bad.json".into(),
                path: bad.clone(),
            },
        ];
        let e = Survey::read(parts, Ids::ByClash, true)
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.starts_with(&format!("{}: not an agent-tck report: ", bad.display())),
            "{e}"
        );
        let names: Vec<_> = std::fs::read_dir(&dir.0)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 2);
    }

    #[test]
    fn a_part_that_fails_to_read_midway_leaves_the_old_files_whole_and_no_spool() {
        let dir = Dir::new("midway");
        let good = dir.0.join("good.json");
        let one = report("t", false, None, &[("x", "g", Pass, Must, C)]);
        std::fs::write(&good, super::super::json::to_string(&one)).unwrap();
        // Its head and ids read (the first pass), its case does not (no status).
        let mut broken: serde_json::Value = serde_json::to_value(&one).unwrap();
        broken["cases"][0]["id"] = "y".into();
        broken["cases"][0].as_object_mut().unwrap().remove("status");
        let bad = dir.0.join("bad.json");
        std::fs::write(&bad, broken.to_string()).unwrap();
        let (json, xml) = (dir.0.join("all.json"), dir.0.join("all.xml"));
        std::fs::write(&json, "OLD").unwrap();
        let parts = vec![
            Part {
                name: "good.json".into(),
                path: good,
            },
            Part {
                name: "bad.json".into(),
                path: bad.clone(),
            },
        ];
        let survey = Survey::read(parts, Ids::ByClash, true).unwrap();
        let out = Outputs {
            json: Some(&json),
            junit: Some(&xml),
            ctrf: None,
            html: None,
            baseline: None,
        };
        let e = survey
            .write(&out, &AtomicBool::new(false))
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.starts_with(&format!(
                "{}: not an agent-tck report: cases[0]: required field \"status\" is missing",
                bad.display()
            )),
            "{e}"
        );
        assert_eq!(std::fs::read_to_string(&json).unwrap(), "OLD");
        assert!(!xml.exists());
        let mut names: Vec<_> = std::fs::read_dir(&dir.0)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names, ["all.json", "bad.json", "good.json"]);
    }

    #[test]
    fn a_merge_interrupted_between_parts_writes_nothing_and_leaves_no_spool() {
        let dir = Dir::new("stop");
        let path = one_case_part(&dir, "p.json");
        let json = dir.0.join("all.json");
        let survey = Survey::read(
            vec![Part {
                name: "p".into(),
                path,
            }],
            Ids::ByClash,
            false,
        )
        .unwrap();
        let out = Outputs {
            json: Some(&json),
            junit: Some(&json.with_extension("xml")),
            ctrf: None,
            html: None,
            baseline: None,
        };
        let e = survey.write(&out, &AtomicBool::new(true)).err().unwrap();
        assert!(matches!(e, MergeStreamError::Interrupted), "{e}");
        let names: Vec<_> = std::fs::read_dir(&dir.0)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, [std::ffi::OsString::from("p.json")]);
    }
}
