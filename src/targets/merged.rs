//! The merged report of a run over the targets: one report of every target's, each case and
//! group prefixed by its target's name (so that shards merged later give the same ids as one run
//! over the whole list), read back from the targets' JSON files in `--out-dir`.

use std::path::{Path, PathBuf};

use crate::error::Error;
use crate::report::output::OutputArgs;
use crate::report::{Report, RunInfo};

/// Writes the merged report of `parts` (each target's name and JSON report, in the list's
/// order) to `output`'s files; `file` is the targets file (named by an empty shard's report).
pub(super) fn write(
    parts: &[(String, PathBuf)],
    file: &Path,
    output: &OutputArgs,
) -> Result<(), Error> {
    let merged = merge(parts, file)?;
    output.write(&merged)
}

/// One report of the targets' reports, every case and group prefixed by its target's name.
fn merge(parts: &[(String, PathBuf)], file: &Path) -> Result<Report, Error> {
    if parts.is_empty() {
        // A shard with no target of the list: an empty report, so that the merge step reads
        // every shard's file.
        let info = RunInfo::start(
            "probe",
            "none",
            format!("no target of {} in this shard", file.display()),
            None,
            false,
        );
        return Ok(info.report(Vec::new(), &crate::text::Redactor::new(Vec::new())));
    }
    let mut read = Vec::new();
    for (name, path) in parts {
        // The run's own files: one that does not read back ends the run.
        let mut r = crate::report::tools::read(path).map_err(|e| Error::Run(e.to_string()))?;
        for c in &mut r.cases {
            c.id = format!("{name}: {}", c.id);
            c.group = format!("{name}: {}", c.group);
        }
        read.push((name.clone(), r));
    }
    // The reports are this run's own: that they do not merge ends the run, not a usage error.
    crate::report::tools::merge(&read).map_err(|e| Error::Run(e.to_string()))
}
