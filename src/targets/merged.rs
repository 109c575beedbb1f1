//! The merged report of a run over the targets: one report of every target's, each case and
//! group prefixed by its target's name (so that shards merged later give the same ids as one run
//! over the whole list), read back from the targets' JSON files in `--out-dir`.

use std::path::{Path, PathBuf};

use crate::error::Error;
use crate::report::merge_stream::{Ids, Outputs, Part, Survey};
use crate::report::output::OutputArgs;
use crate::report::RunInfo;
use std::sync::atomic::AtomicBool;

/// Writes the merged report of `parts` (each target's name and JSON report, in the list's
/// order) to `output`'s files; `file` is the targets file (named by an empty shard's report).
/// A merge of many targets is written as it reads them, one at a time
/// ([`crate::report::merge_stream`]); a small one is held whole. The files are the run's own:
/// they are not checked against the report schema again, and one that does not read back, or
/// does not merge, ends the run (not a usage error).
pub(super) fn write(
    parts: &[(String, PathBuf)],
    file: &Path,
    output: &OutputArgs,
) -> Result<(), Error> {
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
        return output.write(&info.report(Vec::new(), &crate::text::Redactor::new(Vec::new())));
    }
    let parts = parts
        .iter()
        .map(|(name, path)| Part {
            name: name.clone(),
            path: path.clone(),
        })
        .collect();
    let survey = Survey::read(parts, Ids::ByName, false).map_err(Error::as_run)?;
    if survey.small() {
        return output.write(&survey.whole().map_err(Error::as_run)?);
    }
    let outputs = Outputs {
        json: output.json.as_deref(),
        junit: output.junit.as_deref(),
        ctrf: output.ctrf.as_deref(),
        html: output.html.as_deref(),
        // Each target's own baseline was applied to its report.
        baseline: None,
    };
    // The run's Ctrl-C ended the targets' runs; the merge of those done is not interrupted.
    survey
        .write(&outputs, &AtomicBool::new(false))
        .map_err(Error::as_run)?;
    for path in [&output.json, &output.junit, &output.ctrf, &output.html]
        .into_iter()
        .flatten()
    {
        crate::errln!("wrote {}", path.display());
    }
    Ok(())
}
