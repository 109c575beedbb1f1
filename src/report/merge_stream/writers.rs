//! The merged files as a streaming merge writes them: each output spooled beside its
//! destination as the cases come, then written whole and renamed into place.

use std::collections::HashMap;
use std::io::{BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use super::{beside, MergeStreamError};
use crate::report::junit::{self, pieces, SuiteTally};
use crate::report::tools::{self, PartHead};
use crate::report::{CaseResult, Exit, Report};

pub(super) fn write_error(flag: &'static str, path: &Path, e: std::io::Error) -> MergeStreamError {
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
    pub(super) fn create(dest: &Path, what: &str) -> std::io::Result<Beside> {
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
pub(super) struct JsonOut {
    dest: PathBuf,
    spool: Beside,
    cases: usize,
}

impl JsonOut {
    pub(super) fn create(dest: &Path) -> Result<JsonOut, MergeStreamError> {
        let spool = Beside::create(dest, "spool").map_err(|e| write_error("--json", dest, e))?;
        Ok(JsonOut {
            dest: dest.to_path_buf(),
            spool,
            cases: 0,
        })
    }

    pub(super) fn cases(&mut self, cases: &[CaseResult]) -> Result<(), MergeStreamError> {
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

    pub(super) fn finish(mut self, head: &Report) -> Result<(), MergeStreamError> {
        let dest = self.dest.clone();
        let failed = |e: std::io::Error| write_error("--json", &dest, e);
        let whole = crate::report::json::to_string(head);
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
pub(super) struct CtrfOut {
    dest: PathBuf,
    spool: Beside,
    tally: crate::report::ctrf::Tally,
    tests: usize,
}

impl CtrfOut {
    pub(super) fn create(dest: &Path) -> Result<CtrfOut, MergeStreamError> {
        let spool = Beside::create(dest, "spool").map_err(|e| write_error("--ctrf", dest, e))?;
        Ok(CtrfOut {
            dest: dest.to_path_buf(),
            spool,
            tally: Default::default(),
            tests: 0,
        })
    }

    pub(super) fn cases(
        &mut self,
        head: &Report,
        cases: &[CaseResult],
    ) -> Result<(), MergeStreamError> {
        let failed = |e: std::io::Error| write_error("--ctrf", &self.dest, e);
        for c in cases {
            let text = crate::report::ctrf::test_text(&self.tally.test(head, c));
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

    pub(super) fn finish(mut self, head: &Report, exit: Exit) -> Result<(), MergeStreamError> {
        let dest = self.dest.clone();
        let failed = |e: std::io::Error| write_error("--ctrf", &dest, e);
        let (before, after) = crate::report::ctrf::split_around_tests(head, &self.tally, exit);
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
pub(super) struct JunitOut {
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
    pub(super) fn create(dest: &Path) -> Result<JunitOut, MergeStreamError> {
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

    pub(super) fn cases(
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

    pub(super) fn finish(
        mut self,
        head: &Report,
        heads: &[PartHead],
    ) -> Result<(), MergeStreamError> {
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
