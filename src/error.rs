//! The errors that end a command before it has a verdict, typed by what the user can do about
//! them: a usage or configuration error (a flag, a data file, a setting: fix it; nothing was run)
//! or a run that could not go on (a port in use, an agent that could not be started, a report
//! that could not be written). The command line turns them into exit statuses, 2 and 1
//! (`cli::exit_status`).
//!
//! A layer with errors of its own has its own type, whose variants carry what the message
//! names (file, line, flag, path, cause) and whose class is decided once, by type, in its
//! `impl From<ThatError> for Error`: `SuiteError`, `BaselineError`, `ReportFileError`,
//! `TargetsError`, `CommandError`, `DataFileError`, `UnitError`, `PathError`,
//! `PatternError` are usage errors. A caller that knows better says so where it converts (a
//! targets run that cannot merge the reports it wrote itself: a run error). Private helpers
//! inside a module may still gather one-line strings with `?`.
//!
//! A rule that a peer broke is not an error of either kind: rules and checks return a
//! `probe::plugin::Verdict`.

/// Why a command ended without a verdict.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// A flag, a file or a setting is wrong: nothing was run.
    #[error("{0}")]
    Usage(String),
    /// The run could not go on.
    #[error("{0}")]
    Run(String),
}

impl Error {
    /// A usage or configuration error.
    pub fn usage(message: impl Into<String>) -> Error {
        Error::Usage(message.into())
    }

    /// A run that could not go on.
    pub fn run(message: impl Into<String>) -> Error {
        Error::Run(message.into())
    }
}

pub type Result<T> = std::result::Result<T, Error>;
