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
//! A target's JSON report is compact unless `--full-reports` (passing and skipped cases without
//! their exchange, see [`Report::compact`]) and carries a fingerprint of its command line, which
//! `--resume` compares to skip the targets already done ([`resume`]). On a terminal a progress
//! line ([`progress`]) is rewritten in place and only failing targets get a line of their own.
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
mod progress;
mod resume;

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use std::io::IsTerminal;

use futures::stream::{self, StreamExt};

use crate::error::{Class, Error};
use crate::protocols::ProbeJob;
use crate::report::{CaseResult, Report};

pub use list::{in_shard, parse, parse_shard, read, wanted, Target, TargetsError, FLAGS, SWITCHES};

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
    /// `--resume`: the targets whose report in `out_dir` stands are not run again.
    resume: bool,
    /// `--full-reports`: each target's report keeps every case whole (else compacted).
    full: bool,
    /// Each target's probe command line (its report files in `out_dir`).
    commands: Vec<Command>,
}

/// One target's probe, as the plan made it.
struct Command {
    /// Where the target is in the list (its row in the matrix).
    at: usize,
    name: String,
    argv: Vec<OsString>,
    /// What its report records for `--resume` ([`resume::fingerprint`]).
    fingerprint: String,
}

/// The flag that keeps every target's report whole, named where a report is compacted.
const FULL_REPORTS: &str = "--full-reports";

/// Past this many targets the matrix lists the failing ones only (at most this many of them):
/// every target's verdict is in the out-dir and the merged report.
const MATRIX_ROWS: usize = 100;

/// At most this many lines name a target with a reason (run again, not run); a count says the
/// rest.
const NAMED: usize = 5;

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
        let mut targets = read(&file).map_err(|e| Error::within("--targets", e))?;
        let listed = targets.len();
        let shard = get("--shard");
        if let Some(shard) = &shard {
            let shard = parse_shard(shard)?;
            targets.retain(|t| in_shard(&t.name, shard));
        }
        let concurrency = concurrency(get("--target-concurrency"))?;
        let out_dir = PathBuf::from(get("--out-dir").unwrap_or_else(|| "agent-tck-targets".into()));
        std::fs::create_dir_all(&out_dir)
            .map_err(|e| Error::io(Class::Usage, format!("--out-dir {}:", out_dir.display()), e))?;
        let merged = crate::report::output::OutputArgs {
            json: get("--json").map(PathBuf::from),
            junit: get("--junit").map(PathBuf::from),
            ctrf: get("--ctrf").map(PathBuf::from),
            html: get("--html").map(PathBuf::from),
            baseline: None,
            quiet: false,
        };
        merged.check()?;
        let full = get(FULL_REPORTS).is_some();
        let resume = get("--resume").is_some();
        // A target's JUnit and HTML files only with --full-reports: the merged files hold every
        // target, and ten thousand pages of one target each are gigabytes nobody opens (`report
        // merge DIR/NAME.json --html NAME.html` makes one when it is wanted).
        let files: Vec<&str> = ["--junit", "--ctrf", "--html"]
            .into_iter()
            .filter(|flag| full && get(flag).is_some())
            .collect();
        let made = resume::Made {
            full,
            files: &files,
        };
        let commands = commands(&targets, &rest, &files, made, &out_dir, job)?;
        if !resume {
            remove_old_reports(&targets, &out_dir)?;
        }
        Ok(Plan {
            file,
            listed,
            targets,
            shard,
            concurrency,
            out_dir,
            merged,
            resume,
            full,
            commands,
        })
    }

    /// Where a target's JSON report is written.
    fn json_of(&self, name: &str) -> PathBuf {
        self.out_dir.join(format!("{name}.json"))
    }

    /// Whether a merged report is asked for.
    fn merges(&self) -> bool {
        self.merged.json.is_some()
            || self.merged.junit.is_some()
            || self.merged.ctrf.is_some()
            || self.merged.html.is_some()
    }

    /// `--resume`: the targets whose report stands, taken into `done` and `progress`; the
    /// others are left in `commands` to run. Says how many, and why a report that was there
    /// does not stand.
    fn resume(&mut self, done: &mut Vec<Done>, progress: &mut progress::Progress) {
        let mut stale = 0;
        let total = self.commands.len();
        let mut to_run = Vec::new();
        for c in std::mem::take(&mut self.commands) {
            match resume::resumable(&self.json_of(&c.name), &c.fingerprint) {
                Ok(report) => {
                    let d = Done::of(c.at, c.name, &report);
                    progress.resumed(d.passed);
                    done.push(d);
                }
                Err(why) => {
                    if why != resume::Stale::Missing {
                        stale += 1;
                        if stale <= NAMED {
                            crate::outln!("  {:<24} run again: {why}", c.name);
                        }
                    }
                    to_run.push(c);
                }
            }
        }
        if stale > NAMED {
            crate::outln!(
                "  … and {} run again: {} not stand",
                crate::text::count((stale - NAMED) as u64, "more targets"),
                if stale - NAMED == 1 {
                    "its report does"
                } else {
                    "their reports do"
                }
            );
        }
        if done.is_empty() {
            crate::outln!(
                "--resume: no report in {} is complete and of this version and flags; {} to run",
                self.out_dir.display(),
                to_run.len()
            );
        } else {
            crate::outln!(
                "resumed {} of {} from {} ({} complete and of this version and flags); {} to \
                 run",
                done.len(),
                crate::text::count(total as u64, "targets"),
                self.out_dir.display(),
                if done.len() == 1 {
                    "its report is"
                } else {
                    "their reports are"
                },
                to_run.len()
            );
        }
        self.commands = to_run;
    }
}

/// Each target's report files: the JSON one, and those of `files` (`--junit`, `--ctrf`,
/// `--html`).
fn report_files<'a>(
    files: &'a [&'a str],
) -> impl Iterator<Item = (&'static str, &'static str)> + 'a {
    [
        ("--json", "json"),
        ("--junit", "xml"),
        ("--ctrf", "ctrf.json"),
        ("--html", "html"),
    ]
    .into_iter()
    .filter(move |(flag, _)| *flag == "--json" || files.contains(flag))
}

/// Removes a report file an earlier run left, if any.
fn remove_old(path: &Path) -> Result<(), Error> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Error::io(
            Class::Usage,
            format!(
                "--out-dir: cannot remove the earlier report {}:",
                path.display()
            ),
            e,
        )),
        _ => Ok(()),
    }
}

/// `--target-concurrency`: how many targets run at once, 4 unless given.
fn concurrency(value: Option<String>) -> Result<usize, Error> {
    match value {
        Some(c) => {
            c.parse().ok().filter(|n| *n > 0).ok_or_else(|| {
                Error::usage(format!("--target-concurrency {c:?}: a number above 0"))
            })
        }
        None => Ok(4),
    }
}

/// Each target's command line: the shared `rest`, the target's own arguments and its report
/// files in `out_dir`, each parsed by `job` (a line that does not parse is a usage error).
fn commands(
    targets: &[list::Target],
    rest: &[OsString],
    files: &[&str],
    made: resume::Made,
    out_dir: &Path,
    job: &impl Fn(&[OsString]) -> Result<ProbeJob, Error>,
) -> Result<Vec<Command>, Error> {
    // Each target's command line, parsed now. The jobs themselves are made again when their
    // turn comes: a list of thousands of targets holds thousands of command lines, not
    // thousands of loaded suites.
    let mut commands = Vec::new();
    for (at, t) in targets.iter().enumerate() {
        let mut argv = rest.to_vec();
        argv.extend(t.args.iter().map(OsString::from));
        let fingerprint = resume::fingerprint(&argv, made);
        for (flag, ext) in report_files(files) {
            argv.push(flag.into());
            argv.push(out_dir.join(format!("{}.{ext}", t.name)).into());
        }
        // Whatever its own class, a target's command line that does not parse is the
        // list's to fix: nothing has run.
        job(&argv).map_err(|e| Error::as_usage(Error::within(format!("target {}:", t.name), e)))?;
        commands.push(Command {
            at,
            name: t.name.clone(),
            argv,
            fingerprint,
        });
    }
    Ok(commands)
}

/// A run afresh: no report of an earlier run stays to be taken for this one's by a `--resume`
/// after an interruption.
fn remove_old_reports(targets: &[list::Target], out_dir: &Path) -> Result<(), Error> {
    for t in targets {
        for (_, ext) in report_files(&["--junit", "--ctrf", "--html"]) {
            remove_old(&out_dir.join(format!("{}.{ext}", t.name)))?;
        }
    }
    Ok(())
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
    banner(&plan);
    let mut done: Vec<Done> = Vec::new();
    let mut progress = progress::Progress::new(plan.targets.len(), std::time::Instant::now());
    if plan.resume {
        plan.resume(&mut done, &mut progress);
    }
    let mut line = progress::Line::new();
    // On a terminal the progress line counts the passing targets; a line is printed for each
    // failing one. Off one (a CI log), every target has its line.
    let passes_quiet = line.on() && std::io::stdout().is_terminal();
    let (job, full) = (&job, plan.full);
    let mut running = stream::iter(std::mem::take(&mut plan.commands))
        .map(|c| run_target(job, c, full))
        .buffer_unordered(plan.concurrency);
    let mut stop = std::pin::pin!(stop);
    let mut interrupted = false;
    // Redraws the progress line between targets (its rate and ETA move on).
    let second = std::time::Duration::from_secs(1);
    let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + second, second);
    line.draw(&progress);
    loop {
        let (at, name, report) = tokio::select! {
            next = running.next() => match next {
                Some(finished) => finished,
                None => break,
            },
            _ = &mut stop => {
                interrupted = true;
                break;
            }
            _ = tick.tick(), if line.on() => {
                line.draw(&progress);
                continue;
            }
        };
        let r = match report {
            Ok(r) => r,
            Err(e) => {
                line.clear();
                return Err(Error::as_run(Error::within(format!("target {name}:"), e)));
            }
        };
        let d = Done::of(at, name, &r);
        progress.finished(d.passed);
        if !(passes_quiet && d.passed) {
            line.clear();
            crate::outln!("  {:<24} {}", d.name, verdict(&r));
        }
        line.draw(&progress);
        done.push(d);
    }
    drop(running);
    line.clear();
    finish(&plan, done, interrupted)
}

/// The run's first line: how many targets of how many, how many at a time, where the reports go.
fn banner(plan: &Plan) {
    crate::outln!(
        "agent-tck · {} of {}{} · {} at a time · reports in {}",
        plan.targets.len(),
        crate::text::count(plan.listed as u64, "targets"),
        plan.shard
            .as_deref()
            .map(|s| format!(" (shard {s})"))
            .unwrap_or_default(),
        plan.concurrency,
        plan.out_dir.display()
    );
}

/// Runs one target's probe job, its report (compacted unless `full`, fingerprinted and stamped)
/// written to the target's files, with the target's place in the list and name.
async fn run_target(
    job: &impl Fn(&[OsString]) -> Result<ProbeJob, Error>,
    c: Command,
    full: bool,
) -> (usize, String, Result<Report, Error>) {
    let report = match job(&c.argv) {
        Ok(job) => {
            let output = job.output.clone();
            (job.run)(std::sync::Arc::new(|_: &CaseResult| {}))
                .await
                .and_then(|mut r| {
                    output.apply_baseline(&mut r)?;
                    if !full {
                        r.compact(FULL_REPORTS);
                    }
                    r.fingerprint = Some(c.fingerprint);
                    crate::protocols::stamp(&mut r);
                    output.write_quietly(&r)?;
                    Ok(r)
                })
        }
        Err(e) => Err(e),
    };
    (c.at, c.name, report)
}

/// The end of a run: the matrix in the list's order, the targets not run when `interrupted`,
/// the merged reports, and the exit (1 when any target failed).
fn finish(plan: &Plan, mut done: Vec<Done>, interrupted: bool) -> Result<TargetsEnd, Error> {
    // The list's order, whatever order they finished in.
    done.sort_by_key(|d| d.at);
    crate::out!("\n{}", matrix(&done));
    if interrupted {
        crate::out!("{}", not_run(&plan.targets, &done));
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
    /// Where the target is in the list.
    at: usize,
    name: String,
    passed: bool,
    /// The cases that fail the run.
    failing: Vec<String>,
}

impl Done {
    fn of(at: usize, name: String, report: &Report) -> Done {
        let mut failing: Vec<String> = report
            .cases
            .iter()
            .filter(|c| report.is_blocking(c))
            .map(|c| c.id.clone())
            .collect();
        // Failed with no failing case: no MUST rule was judged; say so (and why), not `-`.
        failing.extend(report.nothing_judged_reason());
        Done {
            at,
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

/// The targets of the list not in `done` (sorted by place), after Ctrl-C: [`NAMED`] by name,
/// then a count.
fn not_run(targets: &[Target], done: &[Done]) -> String {
    let mut finished = done.iter().map(|d| d.at).peekable();
    let names: Vec<&str> = targets
        .iter()
        .enumerate()
        .filter(|(at, _)| finished.next_if_eq(at).is_none())
        .map(|(_, t)| t.name.as_str())
        .collect();
    let mut out = String::new();
    for name in names.iter().take(NAMED) {
        out.push_str(&format!("  {name:<24} not run: interrupted (Ctrl-C)\n"));
    }
    if names.len() > NAMED {
        out.push_str(&format!(
            "  … and {} not run: interrupted (Ctrl-C)\n",
            crate::text::count((names.len() - NAMED) as u64, "more targets")
        ));
    }
    out
}

/// The summary matrix: target × verdict × the cases that fail the run. Past [`MATRIX_ROWS`]
/// targets only the failing ones have a row (at most that many): ten thousand rows of `PASS -`
/// hide the few that matter, and every target is in the out-dir and the merged report.
fn matrix(done: &[Done]) -> String {
    let failed = done.iter().filter(|d| !d.passed).count();
    let rows: Vec<&Done> = if done.len() <= MATRIX_ROWS {
        done.iter().collect()
    } else {
        done.iter()
            .filter(|d| !d.passed)
            .take(MATRIX_ROWS)
            .collect()
    };
    let width = rows.iter().map(|d| d.name.len()).max().unwrap_or(6).max(6);
    let mut out = String::new();
    if !rows.is_empty() {
        out.push_str(&format!("{:<width$}  verdict  failing cases\n", "target"));
    }
    for d in &rows {
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
    if rows.len() < done.len() {
        let unlisted_failing = failed - rows.len();
        out.push_str(&format!(
            "… {} passing{} {} not listed (past {MATRIX_ROWS} targets the failing ones \
             are; every target is in the out-dir and the merged report)\n",
            done.len() - failed,
            if unlisted_failing > 0 {
                format!(" and {unlisted_failing} more failing")
            } else {
                String::new()
            },
            // The noun counts both: "1 passing and 1 more failing targets".
            crate::text::in_number((done.len() - failed + unlisted_failing) as u64, "targets")
        ));
    }
    out.push_str(&format!(
        "{}: {} passed, {failed} failed\n",
        crate::text::count(done.len() as u64, "targets"),
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
        let shown = matrix(&[Done::of(0, "idle".into(), &report)]);
        assert!(
            shown.contains("idle    FAIL     nothing judged: the one MUST case skipped for want of evidence (not a pass)\n"),
            "{shown}"
        );
    }

    /// A finished target's row: `agent-AT`, passing or failing `a.rule`.
    fn row(at: usize, passed: bool) -> Done {
        Done {
            at,
            name: format!("agent-{at}"),
            passed,
            failing: if passed {
                vec![]
            } else {
                vec!["a.rule".into()]
            },
        }
    }

    #[test]
    fn past_a_hundred_targets_the_matrix_lists_the_failing_ones() {
        let done: Vec<Done> = (0..1000).map(|at| row(at, at % 250 != 7)).collect();
        assert_eq!(
            matrix(&done),
            "target     verdict  failing cases\n\
             agent-7    FAIL     a.rule\n\
             agent-257  FAIL     a.rule\n\
             agent-507  FAIL     a.rule\n\
             agent-757  FAIL     a.rule\n\
             … 996 passing targets not listed (past 100 targets the failing ones are; every \
             target is in the out-dir and the merged report)\n\
             1000 targets: 996 passed, 4 failed\n"
        );
        let all_failing: Vec<Done> = (0..150).map(|at| row(at, false)).collect();
        let shown = matrix(&all_failing);
        assert_eq!(shown.lines().count(), 1 + 100 + 2, "{shown}");
        assert!(
            shown.contains("… 0 passing and 50 more failing targets not listed"),
            "{shown}"
        );
        let all_passing: Vec<Done> = (0..101).map(|at| row(at, true)).collect();
        assert_eq!(
            matrix(&all_passing),
            "… 101 passing targets not listed (past 100 targets the failing ones are; every \
             target is in the out-dir and the merged report)\n\
             101 targets: 101 passed, 0 failed\n"
        );
        // After Ctrl-C: five targets not run by name, then a count.
        let targets: Vec<Target> = (0..1000)
            .map(|i| Target {
                name: format!("agent-{i}"),
                args: vec![],
            })
            .collect();
        let some: Vec<Done> = done.into_iter().filter(|d| d.at % 2 == 1).collect();
        assert_eq!(
            not_run(&targets, &some),
            "  agent-0                  not run: interrupted (Ctrl-C)\n  \
             agent-2                  not run: interrupted (Ctrl-C)\n  \
             agent-4                  not run: interrupted (Ctrl-C)\n  \
             agent-6                  not run: interrupted (Ctrl-C)\n  \
             agent-8                  not run: interrupted (Ctrl-C)\n  \
             … and 495 more targets not run: interrupted (Ctrl-C)\n"
        );
        // A hundred targets or fewer: every one has its row.
        let few: Vec<Done> = (0..100).map(|at| row(at, true)).collect();
        assert_eq!(matrix(&few).lines().count(), 1 + 100 + 1);
    }

    /// One target, one more target not run, one passing target past the matrix's rows: each
    /// counted in the singular (issue 39, point 13).
    #[test]
    fn one_target_is_counted_in_the_singular() {
        assert!(matrix(&[row(0, true)]).ends_with("\n1 target: 1 passed, 0 failed\n"));
        let one_passing: Vec<Done> = (0..=MATRIX_ROWS).map(|at| row(at, at == 0)).collect();
        let shown = matrix(&one_passing);
        assert!(
            shown.contains("… 1 passing target not listed (past 100 targets"),
            "{shown}"
        );
        let targets: Vec<Target> = (0..=NAMED)
            .map(|i| Target {
                name: format!("agent-{i}"),
                args: vec![],
            })
            .collect();
        let shown = not_run(&targets, &[]);
        assert!(
            shown.ends_with("  … and 1 more target not run: interrupted (Ctrl-C)\n"),
            "{shown}"
        );
        let two = not_run(&[targets.clone(), targets.clone()].concat(), &[]);
        assert!(two.contains("… and 7 more targets not run"), "{two}");
    }
}
