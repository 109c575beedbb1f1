//! `agent-tck probe PROTOCOL --targets targets.yaml [--shard K/N] [--target-concurrency N]
//! [--out-dir DIR]`: one probe run per target of a list (a marketplace's agents), a few at a
//! time, each with its own report files, then a summary matrix and one merged report.
//!
//! The probe of each target is the protocol's own `probe PROTOCOL`, parsed from the command line
//! given without the flags above, plus what the target says (`url:` as `--url`, `key:` as
//! `--api-key`, and its own `flags:`), so every protocol and every flag works the same with
//! or without a list. `--shard K/N` keeps the targets whose name hashes (64-bit FNV-1a) to K−1
//! modulo N: the same share on every machine, and a target added to the list does not move the
//! others — so N processes (a Kubernetes Indexed Job) cover the list once, and `report merge`
//! of their `--json` files gives what one process would.
//!
//! ```yaml
//! targets:
//!   - name: alpha
//!     url: http://alpha.internal:3001
//!     key: ${ALPHA_KEY}
//!   - name: beta
//!     url: http://beta.internal:3001
//!     flags: ["--timeout", "30s"]
//! ```

mod list;
mod merged;

use std::ffi::OsString;
use std::path::PathBuf;

use futures::stream::{self, StreamExt};

use crate::error::Error;
use crate::protocols::ProbeJob;
use crate::report::{CaseResult, Report};

pub use list::{in_shard, parse, parse_shard, read, wanted, Target, TargetsError, FLAGS};

/// How a run over the targets ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TargetsEnd {
    /// Every target ran: 1 when any failed.
    Verdict(crate::report::Exit),
    /// `stop` came first (Ctrl-C): the targets done have their reports (and the merged one
    /// holds them); those running or not started are listed as not run.
    Interrupted { done: usize, of: usize },
}

/// What the command line asks of a run over the targets, read before anything runs.
struct Plan {
    /// The targets file.
    file: PathBuf,
    /// How many targets the file lists (before `--shard`).
    listed: usize,
    /// The shard's targets, in the list's order.
    targets: Vec<Target>,
    /// `--shard K/N`, as given.
    shard: Option<String>,
    concurrency: usize,
    out_dir: PathBuf,
    /// The merged report's files (`--json`, `--junit`, `--html` of the whole run).
    merged: crate::report::output::OutputArgs,
    /// Each target's name and probe command line (its report files in `out_dir`).
    commands: Vec<(String, Vec<OsString>)>,
}

impl Plan {
    /// Reads the run-wide flags out of `args` and parses every target's command line with
    /// `job`: a bad flag is a usage error before anything runs.
    fn read(
        args: &[OsString],
        job: &impl Fn(&[OsString]) -> Result<ProbeJob, Error>,
    ) -> Result<Plan, Error> {
        let (taken, rest) = list::split(args).map_err(Error::Usage)?;
        let get = |flag: &str| {
            taken
                .iter()
                .rev()
                .find(|(f, _)| f == flag)
                .map(|(_, v)| v.clone())
        };
        let file = PathBuf::from(get("--targets").unwrap_or_default());
        let mut targets = read(&file).map_err(|e| Error::usage(format!("--targets {e}")))?;
        let listed = targets.len();
        let shard = get("--shard");
        if let Some(shard) = &shard {
            let shard = parse_shard(shard)?;
            targets.retain(|t| in_shard(&t.name, shard));
        }
        let concurrency: usize = match get("--target-concurrency") {
            Some(c) => c.parse().ok().filter(|n| *n > 0).ok_or_else(|| {
                Error::usage(format!("--target-concurrency {c:?}: a number above 0"))
            })?,
            None => 4,
        };
        let out_dir = PathBuf::from(get("--out-dir").unwrap_or_else(|| "agent-tck-targets".into()));
        std::fs::create_dir_all(&out_dir)
            .map_err(|e| Error::usage(format!("--out-dir {}: {e}", out_dir.display())))?;
        let merged = crate::report::output::OutputArgs {
            json: get("--json").map(PathBuf::from),
            junit: get("--junit").map(PathBuf::from),
            html: get("--html").map(PathBuf::from),
            baseline: None,
            quiet: false,
        };
        merged.check()?;
        // Each target's command line, parsed now. The jobs themselves are made again when their
        // turn comes: a list of thousands of targets holds thousands of command lines, not
        // thousands of loaded suites.
        let mut commands = Vec::new();
        for t in &targets {
            let mut argv = rest.clone();
            argv.extend(t.args.iter().map(OsString::from));
            for (flag, ext) in [("--json", "json"), ("--junit", "xml"), ("--html", "html")] {
                if flag == "--json" || get(flag).is_some() {
                    argv.push(flag.into());
                    argv.push(out_dir.join(format!("{}.{ext}", t.name)).into());
                }
            }
            job(&argv).map_err(|e| Error::usage(format!("target {}: {e}", t.name)))?;
            commands.push((t.name.clone(), argv));
        }
        Ok(Plan {
            file,
            listed,
            targets,
            shard,
            concurrency,
            out_dir,
            merged,
            commands,
        })
    }

    /// Where a target's JSON report is written.
    fn json_of(&self, name: &str) -> PathBuf {
        self.out_dir.join(format!("{name}.json"))
    }

    /// Whether a merged report is asked for.
    fn merges(&self) -> bool {
        self.merged.json.is_some() || self.merged.junit.is_some() || self.merged.html.is_some()
    }
}

/// Runs the probe over the targets; the exit status is 1 when any target fails. `job` makes a
/// probe job of one target's command line (the command line's own parser: a bad flag is a usage
/// error naming it). `stop` (Ctrl-C) ends the run with what is done.
pub async fn run(
    args: Vec<OsString>,
    job: impl Fn(&[OsString]) -> Result<ProbeJob, Error>,
    stop: impl std::future::Future<Output = ()>,
) -> Result<TargetsEnd, Error> {
    let mut plan = Plan::read(&args, &job)?;
    crate::outln!(
        "agent-tck · {} of {} target(s){} · {} at a time · reports in {}",
        plan.targets.len(),
        plan.listed,
        plan.shard
            .as_deref()
            .map(|s| format!(" (shard {s})"))
            .unwrap_or_default(),
        plan.concurrency,
        plan.out_dir.display()
    );
    let job = &job;
    let mut running = stream::iter(std::mem::take(&mut plan.commands))
        .map(|(name, argv)| async move {
            let report = match job(&argv) {
                Ok(job) => {
                    let output = job.output.clone();
                    (job.run)(std::sync::Arc::new(|_: &CaseResult| {}))
                        .await
                        .and_then(|mut r| {
                            output.apply_baseline(&mut r)?;
                            output.write_quietly(&r)?;
                            Ok(r)
                        })
                }
                Err(e) => Err(e),
            };
            (name, report)
        })
        .buffer_unordered(plan.concurrency);
    let mut done: Vec<Done> = Vec::new();
    let mut stop = std::pin::pin!(stop);
    let mut interrupted = false;
    loop {
        let (name, report) = tokio::select! {
            next = running.next() => match next {
                Some(finished) => finished,
                None => break,
            },
            _ = &mut stop => {
                interrupted = true;
                break;
            }
        };
        let r = report.map_err(|e| Error::run(format!("target {name}: {e}")))?;
        crate::outln!("  {name:<24} {}", verdict(&r));
        done.push(Done::of(name, &r));
    }
    drop(running);
    // The list's order, whatever order they finished in.
    done.sort_by_key(|d| plan.targets.iter().position(|t| t.name == d.name));
    crate::out!("\n{}", matrix(&done));
    if interrupted {
        for t in plan
            .targets
            .iter()
            .filter(|t| !done.iter().any(|d| d.name == t.name))
        {
            crate::outln!("  {:<24} not run: interrupted (Ctrl-C)", t.name);
        }
    }
    if plan.merges() {
        let parts: Vec<(String, PathBuf)> = done
            .iter()
            .map(|d| (d.name.clone(), plan.json_of(&d.name)))
            .collect();
        merged::write(&parts, &plan.file, &plan.merged)?;
    }
    if interrupted {
        return Ok(TargetsEnd::Interrupted {
            done: done.len(),
            of: plan.targets.len(),
        });
    }
    Ok(TargetsEnd::Verdict(crate::report::Exit::failed_if(
        done.iter().any(|d| !d.passed),
    )))
}

/// What is kept of one target's run.
struct Done {
    name: String,
    passed: bool,
    /// The cases that fail the run.
    failing: Vec<String>,
}

impl Done {
    fn of(name: String, report: &Report) -> Done {
        let mut failing: Vec<String> = report
            .cases
            .iter()
            .filter(|c| report.is_blocking(c))
            .map(|c| c.id.clone())
            .collect();
        // Failed with no failing case: every MUST case was skipped; say so, not `-`.
        if report.judged_nothing() {
            failing.push(format!(
                "nothing judged (all {} MUST cases skipped)",
                report.summary.must
            ));
        }
        Done {
            name,
            passed: report.exit_code() == crate::report::Exit::Passed,
            failing,
        }
    }
}

fn verdict(r: &Report) -> String {
    // The console's counts: `failed` is what fails the run, a SHOULD failure a warning.
    format!(
        "{} · {}",
        if r.exit_code() == crate::report::Exit::Passed {
            "PASS"
        } else {
            "FAIL"
        },
        crate::report::console::counts(&r.summary)
    ) + if r.judged_nothing() {
        " · nothing judged"
    } else {
        ""
    }
}

/// The summary matrix: target × verdict × the cases that fail the run.
fn matrix(done: &[Done]) -> String {
    let width = done.iter().map(|d| d.name.len()).max().unwrap_or(6).max(6);
    let mut out = format!("{:<width$}  verdict  failing cases\n", "target");
    for d in done {
        let failing = &d.failing;
        let shown = if failing.len() > 6 {
            format!("{} and {} more", failing[..6].join(", "), failing.len() - 6)
        } else {
            failing.join(", ")
        };
        out.push_str(&format!(
            "{:<width$}  {:<7}  {}\n",
            d.name,
            if d.passed { "PASS" } else { "FAIL" },
            if shown.is_empty() {
                "-".to_string()
            } else {
                shown
            }
        ));
    }
    let failed = done.iter().filter(|d| !d.passed).count();
    out.push_str(&format!(
        "{} target(s): {} passed, {failed} failed\n",
        done.len(),
        done.len() - failed
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_target_that_judged_nothing_says_so_in_the_matrix() {
        use crate::report::{CaseResult, Level, RunInfo};
        let mut idle = CaseResult::new("plan.mode", "plan", Level::Must, "t", "s");
        idle.skip("no mode asked: give --mode");
        let report = RunInfo::start("probe", "p", "t", 1, false)
            .report(vec![idle], &crate::text::Redactor::new(Vec::new()));
        assert_eq!(
            verdict(&report),
            "FAIL · 0 passed, 0 failed, 1 skipped · nothing judged"
        );
        let shown = matrix(&[Done::of("idle".into(), &report)]);
        assert!(
            shown.contains("idle    FAIL     nothing judged (all 1 MUST cases skipped)\n"),
            "{shown}"
        );
    }
}
