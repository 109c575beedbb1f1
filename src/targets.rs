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

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use futures::stream::{self, StreamExt};
use serde::Deserialize;
use serde_saphyr::Spanned;

use crate::error::Error;
use crate::protocols::ProbeJob;
use crate::report::{CaseResult, Report};

/// The flags that make a probe a run over many targets (taken out of each target's command).
pub const FLAGS: [&str; 4] = ["--targets", "--shard", "--target-concurrency", "--out-dir"];
/// The report flags: each target gets its own files, these name the merged report.
const REPORT_FLAGS: [&str; 3] = ["--json", "--junit", "--html"];

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TargetsFile {
    targets: Vec<TargetEntry>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TargetEntry {
    name: Spanned<String>,
    #[serde(default)]
    url: Option<String>,
    #[serde(default)]
    key: Option<String>,
    #[serde(default)]
    flags: Vec<String>,
}

/// Why a targets file or `--shard` does not read: usage errors (a file or a flag to fix).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TargetsError {
    #[error("{path}: {cause}")]
    Unreadable { path: String, cause: String },
    /// `FILE:LINE: what is wrong`.
    #[error("{0}")]
    Invalid(String),
    /// `--shard K/N` that is not one: what is wrong with it.
    #[error("--shard {text:?}: {what}")]
    Shard { text: String, what: &'static str },
}

impl From<TargetsError> for Error {
    fn from(e: TargetsError) -> Self {
        Error::Usage(e.to_string())
    }
}

/// One target of the list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub name: String,
    /// The flags it adds to the probe's command line.
    pub args: Vec<String>,
}

/// Reads a targets file (`${ENV}` substituted); errors name the file and line.
pub fn read(path: &Path) -> Result<Vec<Target>, TargetsError> {
    let source = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| TargetsError::Unreadable {
        path: source.clone(),
        cause: e.to_string(),
    })?;
    parse(&source, &text)
}

/// Parses a targets file's `text`, read from `source`.
pub fn parse(source: &str, text: &str) -> Result<Vec<Target>, TargetsError> {
    targets(source, text).map_err(TargetsError::Invalid)
}

fn targets(source: &str, text: &str) -> Result<Vec<Target>, String> {
    let file: TargetsFile = crate::text::read_yaml_with_env(source, text)?;
    let mut targets: Vec<Target> = Vec::new();
    for e in file.targets {
        let at = format!("{source}:{}", e.name.referenced.line());
        if !crate::mock::fleet::valid_name(&e.name.value) {
            return Err(format!(
                "{at}: name {:?} must match ^[A-Za-z][A-Za-z0-9_-]*$ (it names the target's report files)",
                e.name.value
            ));
        }
        if targets.iter().any(|t| t.name == e.name.value) {
            return Err(format!("{at}: the name {} is used twice", e.name.value));
        }
        let mut args = Vec::new();
        if let Some(url) = e.url {
            args.extend(["--url".to_string(), url]);
        }
        if let Some(key) = e.key {
            args.extend(["--api-key".to_string(), key]);
        }
        if let Some(bad) = e
            .flags
            .iter()
            .find(|f| FLAGS.contains(&f.as_str()) || REPORT_FLAGS.contains(&f.as_str()))
        {
            return Err(format!(
                "{at}: {bad} belongs to the whole run, not to one target's flags"
            ));
        }
        args.extend(e.flags);
        targets.push(Target {
            name: e.name.value,
            args,
        });
    }
    if targets.is_empty() {
        return Err(format!("{source}: no targets"));
    }
    Ok(targets)
}

/// `K/N` (1 ≤ K ≤ N).
pub fn parse_shard(text: &str) -> Result<(u64, u64), TargetsError> {
    let wrong = |what| TargetsError::Shard {
        text: text.to_string(),
        what,
    };
    let (k, n) = text.split_once('/').ok_or(wrong("K/N, e.g. 2/8"))?;
    let (k, n): (u64, u64) = (
        k.trim().parse().map_err(|_| wrong("K is not a number"))?,
        n.trim().parse().map_err(|_| wrong("N is not a number"))?,
    );
    if n == 0 || k == 0 || k > n {
        return Err(wrong("K from 1 to N, and N at least 1"));
    }
    Ok((k, n))
}

/// Whether the shard `k` of `n` holds `name`.
pub fn in_shard(name: &str, (k, n): (u64, u64)) -> bool {
    crate::text::fnv1a(name) % n == k - 1
}

/// Whether `args` (after the program name) are a probe over a targets list.
pub fn wanted(args: &[OsString]) -> bool {
    args.get(1).is_some_and(|a| a == "probe")
        && args
            .iter()
            .any(|a| a == "--targets" || a.to_string_lossy().starts_with("--targets="))
}

/// A flag and its value.
type Flag = (String, String);

/// The run-wide flags taken out of `args`: (the flags, the rest).
fn split(args: &[OsString]) -> Result<(Vec<Flag>, Vec<OsString>), String> {
    let mut taken = Vec::new();
    let mut rest = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = args[i].to_string_lossy().into_owned();
        let (flag, inline) = match a.split_once('=') {
            Some((f, v)) if a.starts_with("--") => (f.to_string(), Some(v.to_string())),
            _ => (a.clone(), None),
        };
        if FLAGS.contains(&flag.as_str()) || REPORT_FLAGS.contains(&flag.as_str()) {
            let value = match inline {
                Some(v) => v,
                None => {
                    i += 1;
                    args.get(i)
                        .map(|v| v.to_string_lossy().into_owned())
                        .ok_or_else(|| format!("{flag} needs a value"))?
                }
            };
            taken.push((flag, value));
        } else {
            rest.push(args[i].clone());
        }
        i += 1;
    }
    Ok((taken, rest))
}

/// How a run over the targets ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TargetsEnd {
    /// Every target ran: 1 when any failed.
    Verdict(crate::report::Exit),
    /// `stop` came first (Ctrl-C): the targets done have their reports (and the merged one
    /// holds them); those running or not started are listed as not run.
    Interrupted { done: usize, of: usize },
}

/// Runs the probe over the targets; the exit status is 1 when any target fails. `job` makes a
/// probe job of one target's command line (the command line's own parser: a bad flag is a usage
/// error naming it). `stop` (Ctrl-C) ends the run with what is done.
pub async fn run(
    args: Vec<OsString>,
    job: impl Fn(&[OsString]) -> Result<ProbeJob, Error>,
    stop: impl std::future::Future<Output = ()>,
) -> Result<TargetsEnd, Error> {
    let (taken, rest) = split(&args).map_err(Error::Usage)?;
    let get = |flag: &str| {
        taken
            .iter()
            .rev()
            .find(|(f, _)| f == flag)
            .map(|(_, v)| v.clone())
    };
    let file = PathBuf::from(get("--targets").unwrap_or_default());
    let mut targets = read(&file).map_err(|e| Error::usage(format!("--targets {e}")))?;
    let all = targets.len();
    if let Some(shard) = get("--shard") {
        let shard = parse_shard(&shard)?;
        targets.retain(|t| in_shard(&t.name, shard));
    }
    let concurrency: usize =
        match get("--target-concurrency") {
            Some(c) => c.parse().ok().filter(|n| *n > 0).ok_or_else(|| {
                Error::usage(format!("--target-concurrency {c:?}: a number above 0"))
            })?,
            None => 4,
        };
    let out_dir = PathBuf::from(get("--out-dir").unwrap_or_else(|| "agent-tck-targets".into()));
    std::fs::create_dir_all(&out_dir)
        .map_err(|e| Error::usage(format!("--out-dir {}: {e}", out_dir.display())))?;
    let merged_output = crate::report::output::OutputArgs {
        json: get("--json").map(PathBuf::from),
        junit: get("--junit").map(PathBuf::from),
        html: get("--html").map(PathBuf::from),
        baseline: None,
        quiet: false,
    };
    merged_output.check()?;
    // Each target's command line, parsed now: a bad flag is a usage error before anything runs.
    // The jobs themselves are made again when their turn comes: a list of thousands of targets
    // holds thousands of command lines, not thousands of loaded suites.
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
    crate::outln!(
        "agent-tck · {} of {all} target(s){} · {concurrency} at a time · reports in {}",
        targets.len(),
        get("--shard")
            .map(|s| format!(" (shard {s})"))
            .unwrap_or_default(),
        out_dir.display()
    );
    // A target's whole report is kept only for a merged report; the matrix needs its summary.
    let keep = merged_output.json.is_some()
        || merged_output.junit.is_some()
        || merged_output.html.is_some();
    let job = &job;
    let mut running = stream::iter(commands)
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
        .buffer_unordered(concurrency);
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
        done.push(Done::of(name, r, keep));
    }
    drop(running);
    // The list's order, whatever order they finished in.
    done.sort_by_key(|d| targets.iter().position(|t| t.name == d.name));
    crate::out!("\n{}", matrix(&done));
    if interrupted {
        for t in targets
            .iter()
            .filter(|t| !done.iter().any(|d| d.name == t.name))
        {
            crate::outln!("  {:<24} not run: interrupted (Ctrl-C)", t.name);
        }
    }
    if keep && !done.is_empty() {
        let merged = merge(&mut done, &file)?;
        merged_output.write(&merged)?;
    }
    if interrupted {
        return Ok(TargetsEnd::Interrupted {
            done: done.len(),
            of: targets.len(),
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
    /// The whole report, when a merged report is to be written.
    report: Option<Report>,
}

impl Done {
    fn of(name: String, report: Report, keep: bool) -> Done {
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
            report: keep.then_some(report),
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

/// One report of the targets' reports, every case and group prefixed by its target's name (so
/// that shards merged later give the same ids as one run over the whole list).
fn merge(done: &mut [Done], file: &Path) -> Result<Report, Error> {
    if done.is_empty() {
        // A shard with no target of the list: an empty report, so that the merge step reads
        // every shard's file.
        let info = crate::report::RunInfo::start(
            "probe",
            "none",
            format!("no target of {} in this shard", file.display()),
            None,
            false,
        );
        return Ok(info.report(Vec::new(), &crate::text::Redactor::new(Vec::new())));
    }
    let parts: Vec<(String, Report)> = done
        .iter_mut()
        .filter_map(|d| {
            let mut r = d.report.take()?;
            for c in &mut r.cases {
                c.id = format!("{}: {}", d.name, c.id);
                c.group = format!("{}: {}", d.name, c.group);
            }
            Some((d.name.clone(), r))
        })
        .collect();
    // The reports are this run's own: that they do not merge ends the run, not a usage error.
    crate::report::tools::merge(&parts).map_err(|e| Error::Run(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_cover_the_list_once() {
        let names: Vec<String> = (0..200).map(|i| format!("agent-{i}")).collect();
        for n in [1, 3, 8] {
            let mut seen = 0;
            for k in 1..=n {
                let share = names.iter().filter(|x| in_shard(x, (k, n))).count();
                assert!(n == 1 || share < names.len(), "{k}/{n}");
                seen += share;
            }
            assert_eq!(seen, names.len(), "{n} shards");
        }
        assert!(parse_shard("0/3").is_err());
        assert!(parse_shard("4/3").is_err());
        assert_eq!(
            parse_shard("2").unwrap_err().to_string(),
            "--shard \"2\": K/N, e.g. 2/8"
        );
        assert_eq!(parse_shard("2/3").unwrap(), (2, 3));
    }

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
        let shown = matrix(&[Done::of("idle".into(), report, false)]);
        assert!(
            shown.contains("idle    FAIL     nothing judged (all 1 MUST cases skipped)\n"),
            "{shown}"
        );
    }

    #[test]
    fn run_wide_flags_are_taken_out_of_the_command() {
        let args: Vec<OsString> = [
            "agent-tck",
            "probe",
            "roundtable",
            "--targets",
            "t.yaml",
            "--shard=1/2",
            "--timeout",
            "3s",
            "--json",
            "all.json",
        ]
        .map(OsString::from)
        .to_vec();
        assert!(wanted(&args));
        let (taken, rest) = split(&args).unwrap();
        assert_eq!(
            taken,
            [
                ("--targets".into(), "t.yaml".into()),
                ("--shard".into(), "1/2".into()),
                ("--json".into(), "all.json".into())
            ]
        );
        assert_eq!(
            rest,
            ["agent-tck", "probe", "roundtable", "--timeout", "3s"].map(OsString::from)
        );
    }
}
