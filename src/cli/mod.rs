//! The command line, split by concern: [`args`] (the clap definitions, the one place where raw
//! flags become validated settings), [`dispatch`] (each command run), [`exit`] (the one place where a command's end becomes an
//! exit status: [`exit_status`], from an [`Error`] or an [`Ended`]),
//! [`mock`] (the `mock` commands) and [`signal`]. `main` calls [`main`].
//!
//! The exit statuses are [`crate::report::Exit`]'s (documented there).
//!
//! `probe` has a subcommand per protocol of the registry ([`crate::protocols::REGISTRY`]), with
//! the flags that protocol declares; `--protocol` takes any registered name.

pub mod args;
pub mod behaviors;
pub mod completions;
pub mod dispatch;
pub mod exit;
pub mod mock;
pub mod proxy;
pub mod roles;
pub mod signal;

use std::ffi::OsString;
use std::process::ExitCode;

use clap::error::ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand;

pub use self::args::*;
pub use self::behaviors::{catalogue, list_behaviors};
pub use self::exit::{exit_status, Ended};
pub use crate::error::Error;

use self::dispatch::{execute, finish, probe_job_of, run_async};

/// Parses `args` and runs the command. Help and version print and exit 0; no command at all
/// prints the help and exits 2.
pub fn main<I, T>(args: I) -> ExitCode
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let args: Vec<OsString> = args.into_iter().map(Into::into).collect();
    // Reports point a failing case to its text (`see: agent-tck explain ID`).
    crate::explain::install();
    // `--help` with `--targets`: the probe's help, from clap, not a run over the list; and
    // without a probe named (`probe --targets FILE`), clap's error, not each target's.
    let help = args.iter().any(|a| a == "--help" || a == "-h");
    let names_a_probe = typed_subcommands(&args).len() >= 2;
    if crate::targets::wanted(&args) && !help && names_a_probe {
        return run_async(async move {
            // Inside the runtime (its signal handlers need one), before any banner.
            let stop = signal::shutdown_signal();
            Ok(match crate::targets::run(args, probe_job_of, stop).await? {
                crate::targets::TargetsEnd::Verdict(exit) => Ended::Verdict(exit),
                crate::targets::TargetsEnd::Interrupted { done, of } => {
                    signal::say_targets_interrupted(done, of);
                    Ended::Interrupted
                }
            })
        });
    }
    let cli = match Cli::parse_args(&args) {
        Ok(cli) => cli,
        Err(e) if !e.use_stderr() => {
            // --help, --version: clap's own output, exit 0.
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
        Err(e) if e.kind() == DisplayHelpOnMissingArgumentOrSubcommand => {
            // No command (`agent-tck`, `agent-tck mock`): the help, on stderr, exit 2 — clap's
            // convention: nothing was run, and a script that forgot the command must not pass.
            let _ = e.print();
            return ExitCode::from(crate::report::Exit::Usage.code());
        }
        Err(e) => return finish(Err(Error::Usage(clap_error_line(&e, &args)))),
    };
    run_async(execute(cli.command))
}
