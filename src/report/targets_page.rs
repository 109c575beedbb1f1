//! The HTML page of a merge of many parts (a run over thousands of targets): a row per part,
//! written as the parts are read. A minimal page; the full one (a summary matrix, a target's
//! cases loaded on demand) replaces it.

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use super::html::escape;
use super::Report;

pub struct TargetsPage {
    path: PathBuf,
    spool: PathBuf,
    rows: BufWriter<std::fs::File>,
    parts: usize,
}

impl TargetsPage {
    /// Starts the page that will be written to `path` (spooling next to it).
    pub fn create(path: &Path) -> std::io::Result<TargetsPage> {
        let spool = hidden(path, "spool");
        let rows = BufWriter::new(std::fs::File::create(&spool)?);
        Ok(TargetsPage {
            path: path.to_path_buf(),
            spool,
            rows,
            parts: 0,
        })
    }

    /// Adds one part (a target, or a file of `report merge`): its name and its report as read
    /// (ids not prefixed).
    pub fn add(&mut self, name: &str, report: &Report) -> std::io::Result<()> {
        self.parts += 1;
        let s = &report.summary;
        writeln!(
            self.rows,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(name),
            if report.exit_code() == super::Exit::Passed {
                "PASS"
            } else {
                "FAIL"
            },
            s.passed,
            s.failing(),
            s.skipped
        )
    }

    /// Writes the page: `head` is the merged report without its cases, `passed` the merged
    /// run's verdict.
    pub fn finish(mut self, head: &Report, passed: bool) -> std::io::Result<()> {
        self.rows.flush()?;
        let temp = hidden(&self.path, "tmp");
        let result = (|| {
            let mut out = BufWriter::new(std::fs::File::create(&temp)?);
            write!(
                out,
                "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>agent-tck \
                 {} · {}</title></head><body><h1>{} · {}</h1><p>{}</p><table><tr><th>part</th>\
                 <th>verdict</th><th>passed</th><th>failed</th><th>skipped</th></tr>\n",
                escape(&head.title()),
                if passed { "PASS" } else { "FAIL" },
                if passed { "PASS" } else { "FAIL" },
                escape(&head.title()),
                escape(&super::console::counts(&head.summary)),
            )?;
            std::io::copy(&mut std::fs::File::open(&self.spool)?, &mut out)?;
            writeln!(out, "</table></body></html>")?;
            out.into_inner().map_err(|e| e.into_error())?.sync_all()?;
            std::fs::rename(&temp, &self.path)
        })();
        let _ = std::fs::remove_file(&self.spool);
        let _ = std::fs::remove_file(&temp);
        result
    }
}

impl Drop for TargetsPage {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.spool);
    }
}

/// `path` with `.NAME-PID.what` beside it (the same file system: a rename replaces the page).
fn hidden(path: &Path, what: &str) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "report".into());
    path.with_file_name(format!(".{name}.{}.{what}", std::process::id()))
}
