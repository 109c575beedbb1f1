//! The errors that end a command before it has a verdict, typed by what the user can do about
//! them: a usage or configuration error (a flag, a data file, a setting: fix it; nothing was run)
//! or a run that could not go on (a port in use, an agent that could not be started, a report
//! that could not be written). The command line turns them into exit statuses, 2 and 1
//! (`cli::exit_status`).
//!
//! Inside the engines, messages of data errors stay one-line strings (`FILE:LINE: what is
//! wrong`); they become an [`Error`] where an operation that a command runs ends.

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
