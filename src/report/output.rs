//! Where a run's reports go: the `--json`, `--junit`, `--ctrf` and `--html` flags every command
//! that reports shares,
//! checked before a run (a report that could not be written fails early, not after a long run)
//! and written after it.

use std::path::{Path, PathBuf};

use clap::Args;

use super::baseline::Baseline;
use super::{ctrf, html, json, junit, Report};
use crate::error::Error;

/// Flags shared by every run that writes a report.
#[derive(Debug, Clone, Default, Args)]
pub struct OutputArgs {
    /// Write the JSON report here (schema: schemas/report.schema.json).
    #[arg(long, value_name = "PATH")]
    pub json: Option<PathBuf>,
    /// Write JUnit XML here (one testsuite per endpoint).
    #[arg(long, value_name = "PATH")]
    pub junit: Option<PathBuf>,
    /// Write CTRF here (the Common Test Report Format, https://ctrf.io, which CI test-report
    /// actions read): a test per case, the spec judged by in its environment.
    #[arg(long, value_name = "PATH")]
    pub ctrf: Option<PathBuf>,
    /// Write the HTML report here: one self-contained page (summary, plots, cases with filters).
    #[arg(long, value_name = "PATH")]
    pub html: Option<PathBuf>,
    /// Expected failures (YAML: `- id: CASE` `reason: …` [`until: YYYY-MM-DD`]): a listed case
    /// that fails is xfail and does not fail the run; one that passes is stale (a warning; a
    /// failure under --strict). `agent-tck baseline write --from report.json` writes one.
    #[arg(long, value_name = "FILE")]
    pub baseline: Option<PathBuf>,
    /// Print only the end of the console report (its notes, counts and verdict line), no line
    /// per case. The files (--json, --junit, --html) hold every case.
    #[arg(long)]
    pub quiet: bool,
}

/// A report rendered as one of the file formats.
type Render = fn(&Report) -> String;

impl OutputArgs {
    /// Fails early when a report could not be written, rather than after a long run.
    pub fn check(&self) -> Result<(), Error> {
        for (flag, path) in [
            ("--json", &self.json),
            ("--junit", &self.junit),
            ("--ctrf", &self.ctrf),
            ("--html", &self.html),
        ] {
            let Some(path) = path else { continue };
            if path.is_dir() {
                return Err(Error::usage(format!(
                    "{flag} {}: is a directory",
                    path.display()
                )));
            }
            let parent = path
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
                .unwrap_or(Path::new("."));
            if !parent.is_dir() {
                return Err(Error::usage(format!(
                    "{flag} {}: the directory {} does not exist",
                    path.display(),
                    parent.display()
                )));
            }
        }
        if let Some(path) = &self.baseline {
            Baseline::read(path)?;
        }
        let named = [
            ("--json", &self.json),
            ("--junit", &self.junit),
            ("--ctrf", &self.ctrf),
            ("--html", &self.html),
        ];
        for (i, (a, pa)) in named.iter().enumerate() {
            for (b, pb) in &named[i + 1..] {
                if pa.is_some() && pa == pb {
                    return Err(Error::usage(format!("{a} and {b} name the same file")));
                }
            }
        }
        Ok(())
    }

    /// Applies `--baseline`, when given, to the finished report.
    pub fn apply_baseline(&self, report: &mut Report) -> Result<(), Error> {
        if let Some(path) = &self.baseline {
            let baseline = Baseline::read(path)?;
            baseline.apply(report, &super::baseline::today());
        }
        Ok(())
    }

    /// Writes the report files asked for, saying so on stderr.
    pub fn write(&self, report: &Report) -> Result<(), Error> {
        for path in self.write_quietly(report)? {
            crate::errln!("wrote {}", path.display());
        }
        Ok(())
    }

    /// Writes the report files asked for; returns their paths.
    pub fn write_quietly(&self, report: &Report) -> Result<Vec<&Path>, Error> {
        let mut written = Vec::new();
        // Rendered only when asked for: a stdio mock rewrites its reports after every answer.
        let files: [(_, _, Render); 4] = [
            (&self.json, "--json", json::to_string),
            (&self.junit, "--junit", junit::to_string),
            (&self.ctrf, "--ctrf", ctrf::to_string),
            (&self.html, "--html", html::to_string),
        ];
        for (path, flag, render) in files {
            if let Some(path) = path {
                write_whole(path, &render(report)).map_err(|e| {
                    let context = format!("{flag} {}: cannot write:", path.display());
                    Error::io(crate::error::Class::Run, context, e)
                })?;
                written.push(path.as_path());
            }
        }
        Ok(written)
    }
}

/// Writes `text` to `path` whole or not at all: into a temporary file beside it, then renamed
/// over it, so that a run killed mid-write leaves the old file or none, never half of one (a run
/// over many targets resumed later reads its reports back). A path that is not a regular file
/// (`/dev/stdout`, a pipe) is written directly.
fn write_whole(path: &Path, text: &str) -> std::io::Result<()> {
    let special = std::fs::metadata(path).is_ok_and(|m| !m.is_file());
    let Some(name) = path.file_name().filter(|_| !special) else {
        return std::fs::write(path, text);
    };
    let mut temporary = name.to_os_string();
    temporary.push(format!(".{}.partial", std::process::id()));
    let temporary = path.with_file_name(temporary);
    let written = std::fs::write(&temporary, text).and_then(|()| std::fs::rename(&temporary, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    written
}

#[cfg(test)]
mod tests {
    use super::write_whole;

    #[test]
    fn a_file_is_replaced_whole_and_no_temporary_file_is_left() {
        let dir =
            std::env::temp_dir().join(format!("agent-tck-write-whole-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("r.json");
        std::fs::write(&path, "old").unwrap();
        write_whole(&path, "new").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
        let left: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(left, ["r.json"]);
        // Into a directory that is not there: the error, and nothing written.
        assert!(write_whole(&dir.join("no/such.json"), "x").is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
