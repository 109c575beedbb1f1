//! Command → run: each command's own code, or the protocol's (`probe`, `lint`) or the mock's.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::{CommandFactory, Parser};

use super::args::protocol;
use super::args::{
    clap_error_line, BaselineCommand, Cli, Command, MockCommand, ReportCommand, SchemasCommand,
    SelftestArgs, SuitesCommand,
};
use super::behaviors::list_behaviors;
use super::exit::{conclude, conclude_as_read, exit_status, print_console, Ended};
use super::mock::{mock_agent, mock_agents, mock_fleet};
use super::signal::{caught_signal, say_interrupted, shutdown_signal};
use crate::error::Error;
use crate::probe::args::seed_or_clock;
use crate::probe::interrupt::Sheet;
use crate::protocols::plugin::Role;
use crate::protocols::{self, OnCase, ProbeJob, Protocol};
use crate::report::{console, CaseResult, Exit, RunInfo};
use crate::selftest::Shown;

/// The probe job of a `probe NAME …` command line (one target's, of a run over many).
pub(super) fn probe_job_of(argv: &[OsString]) -> Result<ProbeJob, Error> {
    let cli = Cli::try_parse_from(argv).map_err(|e| Error::Usage(clap_error_line(&e, argv)))?;
    match cli.command {
        Command::Probe(probe) => probe.run(),
        _ => Err(Error::usage("--targets is a flag of `probe PROTOCOL`")),
    }
}

/// Runs a command on a new runtime and exits with its status.
pub(super) fn run_async(
    command: impl std::future::Future<Output = Result<Ended, Error>>,
) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            return finish(Err(Error::run(format!(
                "cannot start the async runtime: {e}"
            ))))
        }
    };
    let outcome = runtime.block_on(command);
    // Connections to a hostile agent may still be open: do not wait for them on the way out.
    runtime.shutdown_timeout(Duration::from_millis(200));
    finish(outcome)
}

/// Says why a command failed (one line on stderr), and exits with its status.
pub(super) fn finish(outcome: Result<Ended, Error>) -> ExitCode {
    if let Err(e) = &outcome {
        crate::errln!("agent-tck: error: {e}");
    }
    ExitCode::from(exit_status(&outcome))
}

pub(super) async fn execute(command: Command) -> Result<Ended, Error> {
    match command {
        Command::Probe(probe) => run_probe(probe.protocol, probe.run()?).await,
        Command::Lint(lint) => Ok(Ended::Verdict(lint.run()?)),
        Command::Selftest(args) => selftest(args).await,
        Command::Mock(mock) => execute_mock(*mock).await,
        Command::Proxy(args) => super::proxy::proxy(*args).await,
        Command::Judge(args) => super::proxy::judge(args),
        Command::Replay(args) => super::proxy::replay(args).await,
        Command::Baseline(BaselineCommand::Write { from, out }) => baseline_write(&from, out),
        Command::Report(ReportCommand::Merge { reports, output }) => {
            output.check()?;
            report_merge(reports, &output).await
        }
        Command::Report(ReportCommand::Diff { old, new }) => report_diff(&old, &new),
        Command::Suites(SuitesCommand::List {
            protocol: name,
            level,
            role,
            suite,
        }) => suites_list(name, level, role, suite),
        Command::Explain { id } => {
            crate::out!("{}", crate::explain::explain(&id)?);
            Ok(Ended::Verdict(Exit::Passed))
        }
        Command::Schemas(SchemasCommand::Export { dir, protocol }) => {
            schemas_export(&dir, protocol)
        }
        Command::Schemas(SchemasCommand::List) => {
            for (id, file, _, owner) in protocols::schemas() {
                crate::outln!("{id:<32} {file:<36} {}", owner.unwrap_or("(the kit's own)"));
            }
            Ok(Ended::Verdict(Exit::Passed))
        }
        Command::Completions { shell } => {
            crate::out!("{}", super::completions::script(shell));
            Ok(Ended::Verdict(Exit::Passed))
        }
        Command::Manpages { dir } => {
            std::fs::create_dir_all(&dir)
                .map_err(|e| Error::run(format!("{}: {e}", dir.display())))?;
            let written = write_manpages(Cli::command(), &dir)?;
            crate::errln!("wrote {written} man pages to {}", dir.display());
            Ok(Ended::Verdict(Exit::Passed))
        }
    }
}

/// `baseline write`: a baseline from a report, to `out` or stdout.
fn baseline_write(from: &Path, out: Option<PathBuf>) -> Result<Ended, Error> {
    let report =
        crate::report::tools::read(from).map_err(|e| Error::usage(format!("--from {e}")))?;
    // A baseline may expect a failure, never a run that judges nothing.
    if let Some(why) = crate::report::baseline::refusal(&report, &from.display().to_string()) {
        return Err(Error::Usage(why));
    }
    let text = crate::report::baseline::write_from(&report);
    match out {
        Some(path) => {
            std::fs::write(&path, text)
                .map_err(|e| Error::run(format!("--out {}: {e}", path.display())))?;
            crate::errln!("wrote {}", path.display());
        }
        None => crate::out!("{text}"),
    }
    Ok(Ended::Verdict(Exit::Passed))
}

/// `report diff`: what changed from the `old` report to the `new`.
fn report_diff(old: &Path, new: &Path) -> Result<Ended, Error> {
    let read = |p: &Path| crate::report::tools::read(p).map_err(Error::from);
    let (before, after) = (read(old)?, read(new)?);
    let diff = crate::report::tools::diff(&before, &after);
    crate::out!(
        "{}",
        crate::report::tools::render_diff(
            &diff,
            &old.display().to_string(),
            &new.display().to_string()
        )
    );
    Ok(Ended::Verdict(diff.exit_code()))
}

/// `suites list`: the cases of the kit (by protocol, level, role) or of one suite file.
fn suites_list(
    name: Option<String>,
    level: Option<String>,
    role: Option<String>,
    suite: Option<PathBuf>,
) -> Result<Ended, Error> {
    let listing = match suite {
        // A suite file is a protocol's: its own listing.
        Some(file) => {
            let name = name.unwrap_or_else(|| protocols::names()[0].to_string());
            protocol(&name)?.list_cases(Some(&file))?
        }
        None => crate::explain::list(&crate::explain::Filter {
            protocol: name,
            level,
            role: role.as_deref().and_then(Role::parse),
        })?,
    };
    crate::out!("{listing}");
    Ok(Ended::Verdict(Exit::Passed))
}

/// `schemas export`: the schemas (of one protocol, or all) written under `dir`.
fn schemas_export(dir: &Path, protocol: Option<String>) -> Result<Ended, Error> {
    let chosen: Vec<(&str, &str)> = protocols::schemas()
        .into_iter()
        .filter(|s| protocol.is_none() || s.3 == protocol.as_deref())
        .map(|(_, file, text, _)| (file, text))
        .collect();
    let written = crate::schema::export(dir, &chosen)
        .map_err(|e| Error::run(format!("cannot write schemas under {}: {e}", dir.display())))?;
    for path in written {
        crate::outln!("{}", path.display());
    }
    Ok(Ended::Verdict(Exit::Passed))
}

/// `mock …`: the other side played.
async fn execute_mock(command: MockCommand) -> Result<Ended, Error> {
    match command {
        MockCommand::Agent(args) => mock_agent(args).await,
        MockCommand::Agents(args) => mock_agents(args),
        MockCommand::Fleet(args) => mock_fleet(args).await,
        MockCommand::Protocol(command) => {
            let job = command.run()?;
            let report = (job.run)(Box::pin(shutdown_signal())).await?;
            conclude(report, &job.output)
        }
        MockCommand::Linger(args) => {
            crate::mock::linger::linger(args.json, args.junit).await;
            Ok(Ended::Verdict(Exit::Passed))
        }
        MockCommand::Behaviors => {
            crate::out!("{}", list_behaviors());
            Ok(Ended::Verdict(Exit::Passed))
        }
    }
}

/// The man page of `command`, and of each of its subcommands (named `parent-sub.1`), under
/// `dir`; how many were written.
fn write_manpages(command: clap::Command, dir: &Path) -> Result<usize, Error> {
    let mut written = 0;
    let mut stack = vec![(command.get_name().to_string(), command)];
    while let Some((name, cmd)) = stack.pop() {
        // Named as it is typed (`agent-tck-probe-roundtable`), as man pages of subcommands are.
        let cmd = cmd.name(name.clone());
        let mut page = Vec::new();
        clap_mangen::Man::new(cmd.clone())
            .render(&mut page)
            .map_err(|e| Error::run(format!("man page of {name}: {e}")))?;
        let path = dir.join(format!("{name}.1"));
        std::fs::write(&path, page).map_err(|e| Error::run(format!("{}: {e}", path.display())))?;
        written += 1;
        for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
            stack.push((format!("{name}-{}", sub.get_name()), sub.clone()));
        }
    }
    Ok(written)
}

/// Runs a probe of `protocol` with a progress line (on a terminal), then prints the console
/// report and writes the files. Ctrl-C (or SIGTERM) ends it with the report of the cases done,
/// the rest marked not run, and exit 130.
async fn run_probe(protocol: &'static str, job: ProbeJob) -> Result<Ended, Error> {
    let progress = Arc::new(std::sync::Mutex::new(console::Progress::new(job.total)));
    let sheet = Sheet::new();
    let on_case: OnCase = {
        let (progress, sheet) = (progress.clone(), sheet.clone());
        Arc::new(move |case: &CaseResult| {
            sheet.case_done(case);
            if let Ok(mut p) = progress.lock() {
                p.case_done(&case.id);
            }
        })
    };
    let stop = caught_signal();
    let fallback = RunInfo::start(
        "probe",
        protocol,
        "(interrupted before the run began)",
        None,
        false,
    );
    let outcome = tokio::select! {
        report = sheet.record((job.run)(on_case)) => Ok(report?),
        by = stop => Err(by),
    };
    if let Ok(mut p) = progress.lock() {
        p.finish();
    }
    match outcome {
        Ok(report) => conclude(report, &job.output),
        Err(by) => {
            // Marked interrupted: every format says so, and none gives a verdict.
            let (report, done) = sheet.report(&job.planned, fallback, by);
            conclude(report, &job.output)?;
            say_interrupted(by, done);
            Ok(Ended::Interrupted)
        }
    }
}

async fn selftest(args: SelftestArgs) -> Result<Ended, Error> {
    args.output.check()?;
    if args.run.record.is_some() || args.run.replay.is_some() {
        return Err(Error::usage(
            "--record, --replay: a probe's flags (one run's exchanges with one agent); the \
             self-test probes many peers at once and records none",
        ));
    }
    let chosen: Vec<&'static dyn Protocol> = match &args.protocol {
        Some(name) => vec![protocol(name)?],
        None => protocols::REGISTRY.to_vec(),
    };
    let seed = seed_or_clock(args.run.seed);
    let exe = std::env::current_exe().map_err(|e| {
        Error::run(format!(
            "cannot find the agent-tck binary to run as a stdio agent: {e}"
        ))
    })?;
    let sheet = Sheet::new();
    let names: Vec<&str> = chosen.iter().map(|p| p.name()).collect();
    let fallback = RunInfo::start(
        "probe",
        names.join("+"),
        "the reference agents and the mock behaviours",
        seed,
        args.run.strict,
    );
    let quiet = args.output.quiet;
    let show = |shown: Shown<'_>| match shown {
        Shown::Reference(report) => print_console(report, quiet),
        // A table is a line per row (a case of the report): none with --quiet.
        Shown::Matrix(_, _) if quiet => {}
        Shown::Matrix(name, table) => {
            crate::outln!("\nThe probe against each mock behaviour, {name}:\n");
            crate::out!("{table}");
        }
    };
    let run = crate::selftest::run(&chosen, seed, &args.run, &args.suite, &exe, &sheet, show);
    let outcome = tokio::select! {
        outcome = run => outcome?,
        by = caught_signal() => {
            // The reference reports and the matrix tables done were printed as they came: the
            // files get them, with the rest marked not run, the report marked interrupted; the
            // verdict line says there is no verdict.
            let (mut report, done) =
                sheet.report(&crate::selftest::planned(&chosen), fallback, by);
            protocols::stamp(&mut report);
            args.output.write(&report)?;
            if let Some(cut) = &report.interrupted {
                crate::outln!("\nselftest: {}", cut.headline());
            }
            say_interrupted(by, done);
            return Ok(Ended::Interrupted);
        }
    };
    // The files hold the matrices too: a case per row.
    args.output.write(&outcome.report)?;
    crate::outln!("\n{}", outcome.verdict());
    Ok(Ended::Verdict(outcome.exit_code()))
}

/// `report merge`: a merge small enough to hold is held and reported as a run is (`--baseline`
/// applied to the whole); a larger one is written as its files are read
/// ([`crate::report::merge_stream`]), the console naming the cases that fail. Ctrl-C ends it
/// between two files, writing no merged file.
async fn report_merge(
    reports: Vec<PathBuf>,
    output: &crate::report::output::OutputArgs,
) -> Result<Ended, Error> {
    use crate::report::merge_stream::{Ids, Outputs, Part, Survey};
    let parts = reports
        .into_iter()
        .map(|path| Part {
            name: path.display().to_string(),
            path,
        })
        .collect();
    let survey = Survey::read(parts, Ids::ByClash, true)?;
    if survey.small() {
        return conclude_as_read(survey.whole()?, output);
    }
    // Read now: a baseline that does not parse is a usage error before anything is written.
    let baseline = output
        .baseline
        .as_deref()
        .map(crate::report::baseline::Baseline::read)
        .transpose()?;
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let signal = {
        let stop = stop.clone();
        tokio::spawn(async move {
            shutdown_signal().await;
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
        })
    };
    let (json, junit, ctrf, html) = (
        output.json.clone(),
        output.junit.clone(),
        output.ctrf.clone(),
        output.html.clone(),
    );
    let written = tokio::task::spawn_blocking(move || {
        let outputs = Outputs {
            json: json.as_deref(),
            junit: junit.as_deref(),
            ctrf: ctrf.as_deref(),
            html: html.as_deref(),
            baseline: baseline.as_ref(),
        };
        let parts = survey.parts();
        survey.write(&outputs, &stop).map(|m| (m, parts))
    })
    .await;
    signal.abort();
    let (merged, parts) = match written {
        Ok(Ok(done)) => done,
        Ok(Err(crate::report::merge_stream::MergeStreamError::Interrupted)) => {
            crate::errln!("interrupted (Ctrl-C) while merging: no merged file was written");
            return Ok(Ended::Interrupted);
        }
        Ok(Err(e)) => return Err(e.into()),
        Err(e) => return Err(Error::run(format!("report merge: {e}"))),
    };
    let text = merged.console(parts);
    if output.quiet {
        crate::out!("{}", super::exit::console_end(&text));
    } else {
        crate::out!("{text}");
    }
    for path in [&output.json, &output.junit, &output.ctrf, &output.html]
        .into_iter()
        .flatten()
    {
        crate::errln!("wrote {}", path.display());
    }
    Ok(Ended::Verdict(merged.exit))
}
