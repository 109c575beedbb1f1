//! The errors that end a command before it has a verdict, typed by what the user can do about
//! them: a usage or configuration error (a flag, a data file, a setting: fix it; nothing was run)
//! or a run that could not go on (a port in use, an agent that could not be started, a report
//! that could not be written). [`Error::class`] says which, and `cli::exit_status` turns it
//! into the exit status, in one place (2 and 1; the statuses are documented on
//! `report::Exit`).
//!
//! A layer with errors of its own has its own type, whose variants carry what the message
//! names (file, line, flag, path, cause). [`Error`] keeps that type whole ([`Error::Layer`]), so
//! that a library user can match on what failed: `error.layer::<SuiteError>()` is the suite's
//! own error, with its variants, and it is the error's `source()`. It prints its layer's message
//! as it is. Its class is a property of its type, said where the type is ([`LayerError`]: by
//! the type, or by its variant where one type holds both kinds, as a journal that cannot be
//! created is a usage error and one that cannot be written a run error). This module names no
//! layer: every layer imports it, and the crate's imports have no loop (tests/tck/layers.rs).
//!
//! A caller that knows better than the type says so where it converts, with [`Error::as_run`] or
//! [`Error::as_usage`] (a targets run that cannot merge the reports it wrote itself: a run
//! error), and adds what it was at with [`Error::within`] (`target NAME:`), never by formatting
//! the error into a string. [`Error::Io`] keeps an `io::Error` with the caller's words and class
//! (the same refusal is the user's for a file they named, the run's for one the kit makes).
//! [`Error::Usage`] and [`Error::Run`] remain for errors that are nothing but a message (a flag
//! with no layer of its own, a count out of range). Private helpers inside a module may still
//! gather one-line strings with `?`.
//!
//! A rule that a peer broke is not an error of either kind: rules and checks return a
//! `probe::plugin::Verdict`.

/// What the user can do about an error, which decides the exit status (`cli::exit_status`, the
/// one place: this module is below `report`, where the statuses are named).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// A flag, a file or a setting is wrong: nothing was run (exit status 2).
    Usage,
    /// The run could not go on (exit status 1).
    Run,
}

/// A layer's own error type, which becomes an [`Error`] with `?` and stays itself inside it.
pub trait LayerError: std::error::Error + Send + Sync + 'static {
    /// Whether what failed is the user's to fix or the run's, by the type or by its variant.
    fn class(&self) -> Class;
}

/// A protocol's flags that do not parse (clap's message, as it gives it).
impl LayerError for clap::Error {
    fn class(&self) -> Class {
        Class::Usage
    }
}

/// Why a command ended without a verdict. Each variant prints its message alone (a layer's own,
/// unchanged; a context before it); one that holds an error gives it as its `source()`.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// A flag, a file or a setting is wrong: nothing was run. A message and nothing else.
    Usage(String),
    /// The run could not go on. A message and nothing else.
    Run(String),
    /// A layer's own error, whole ([`Error::layer`] finds it by its type), of its type's class.
    Layer(Box<dyn LayerError>),
    /// An error whose class its caller decided ([`Error::as_run`], [`Error::as_usage`]).
    Classed { class: Class, error: Box<Error> },
    /// An error and what its caller was at when it came (`target NAME:`, `--targets`), printed
    /// before it ([`Error::within`]); of the error's class.
    Context { context: String, error: Box<Error> },
    /// A file, a directory or a socket that the system refused, with what the caller was doing
    /// (`--out-dir DIR:`, `--sarif FILE:`) before the system's message. Its class is the
    /// caller's to say ([`Error::io`]): the same refusal is the user's to fix for a file they
    /// named, and a run that cannot go on for one the kit makes.
    Io {
        class: Class,
        context: String,
        cause: std::io::Error,
    },
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Usage(message) | Error::Run(message) => f.write_str(message),
            Error::Layer(e) => e.fmt(f),
            Error::Classed { error, .. } => error.fmt(f),
            Error::Context { context, error } => write!(f, "{context} {error}"),
            Error::Io { context, cause, .. } if context.is_empty() => cause.fmt(f),
            Error::Io { context, cause, .. } => write!(f, "{context} {cause}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Usage(_) | Error::Run(_) => None,
            Error::Layer(e) => Some(&**e),
            Error::Classed { error, .. } | Error::Context { error, .. } => Some(&**error),
            Error::Io { cause, .. } => Some(cause),
        }
    }
}

/// Every layer's error, with `?`: boxed, so that `Error`, in every `Result` of the crate, stays
/// the size of a message. (`Error` is no `LayerError`, so this does not overlap `From<T> for T`.)
impl<E: LayerError> From<E> for Error {
    fn from(error: E) -> Error {
        Error::Layer(Box::new(error))
    }
}

impl Error {
    /// A usage or configuration error that is nothing but a message.
    pub fn usage(message: impl Into<String>) -> Error {
        Error::Usage(message.into())
    }

    /// A run that could not go on, said by a message alone.
    pub fn run(message: impl Into<String>) -> Error {
        Error::Run(message.into())
    }

    /// `error`, a run error whatever its type's class: the caller made what failed itself (a
    /// report the kit wrote, the URL of a reference it serves), so the user has nothing to fix.
    pub fn as_run(error: impl Into<Error>) -> Error {
        Error::Classed {
            class: Class::Run,
            error: Box::new(error.into()),
        }
    }

    /// `error`, a usage error whatever its type's class: the caller knows the user's input is
    /// what failed.
    pub fn as_usage(error: impl Into<Error>) -> Error {
        Error::Classed {
            class: Class::Usage,
            error: Box::new(error.into()),
        }
    }

    /// An I/O error of `class`, with what the caller was doing (printed before it, a space
    /// between; nothing when empty).
    pub fn io(class: Class, context: impl Into<String>, cause: std::io::Error) -> Error {
        Error::Io {
            class,
            context: context.into(),
            cause,
        }
    }

    /// `error`, with what the caller was at when it came (`--targets`, `target NAME:`) before
    /// its message, a space between.
    pub fn within(context: impl Into<String>, error: impl Into<Error>) -> Error {
        Error::Context {
            context: context.into(),
            error: Box::new(error.into()),
        }
    }

    /// The layer error of type `T` this error holds, under any context or class its callers
    /// added: what a library user matches on (`err.layer::<SuiteError>()`).
    pub fn layer<T: LayerError>(&self) -> Option<&T> {
        match self {
            Error::Layer(e) => {
                let e: &(dyn std::error::Error + 'static) = &**e;
                e.downcast_ref::<T>()
            }
            Error::Classed { error, .. } | Error::Context { error, .. } => error.layer(),
            Error::Usage(_) | Error::Run(_) | Error::Io { .. } => None,
        }
    }

    /// What the user can do about it.
    pub fn class(&self) -> Class {
        match self {
            Error::Usage(_) => Class::Usage,
            Error::Run(_) => Class::Run,
            Error::Layer(e) => e.class(),
            Error::Classed { class, .. } | Error::Io { class, .. } => *class,
            Error::Context { error, .. } => error.class(),
        }
    }
}

pub type Result<T> = std::result::Result<T, Error>;

#[cfg(test)]
impl Error {
    /// The class and the message: what a test of a layer's conversion compares (`Error` is not
    /// `PartialEq`: its layers' errors hold `io::Error`s).
    pub(crate) fn shown(&self) -> (Class, String) {
        (self.class(), self.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // A layer's error as a layer writes one. (The layers' own are tested where they are:
    // naming them here would make their imports loop back, tests/tck/layers.rs; a bad suite
    // file is `probe::suite`'s test, and an outside user's match is tests/tck/toy_protocol.rs.)
    #[derive(Debug, thiserror::Error)]
    enum ListError {
        #[error("{path}:{line}: no such flag {flag:?}")]
        Flag {
            path: String,
            line: usize,
            flag: String,
        },
        #[error("{path}: cannot write: {cause}")]
        Write { path: String, cause: String },
    }

    impl LayerError for ListError {
        fn class(&self) -> Class {
            match self {
                ListError::Flag { .. } => Class::Usage,
                ListError::Write { .. } => Class::Run,
            }
        }
    }

    #[derive(Debug, thiserror::Error)]
    #[error("other")]
    struct OtherError;

    impl LayerError for OtherError {
        fn class(&self) -> Class {
            Class::Usage
        }
    }

    fn read_list() -> Result<()> {
        Err(ListError::Flag {
            path: "l.yaml".into(),
            line: 3,
            flag: "--nope".into(),
        })?
    }

    #[test]
    fn a_library_user_matches_on_what_failed() {
        let e = read_list().unwrap_err();
        assert!(
            matches!(e.layer::<ListError>(), Some(ListError::Flag { line: 3, flag, .. }) if flag == "--nope"),
            "{e:?}"
        );
        assert!(e.layer::<OtherError>().is_none(), "{e:?}");
        // The layer error is the source, and the message is its own.
        assert_eq!(e.to_string(), "l.yaml:3: no such flag \"--nope\"");
        let source = std::error::Error::source(&e).expect("a source");
        assert_eq!(source.to_string(), e.to_string());
        assert!(source.downcast_ref::<ListError>().is_some());
        assert_eq!(e.class(), Class::Usage);
    }

    #[test]
    fn each_kind_has_its_class() {
        let write = || ListError::Write {
            path: "out.json".into(),
            cause: "disk full".into(),
        };
        let cases: Vec<(Error, Class)> = vec![
            (Error::usage("--url: no scheme"), Class::Usage),
            (Error::run("cannot bind"), Class::Run),
            // A layer's type: its class by its variant.
            (read_list().unwrap_err(), Class::Usage),
            (write().into(), Class::Run),
            // A caller that knows better.
            (Error::as_usage(write()), Class::Usage),
            (Error::as_run(OtherError), Class::Run),
            // A context keeps the class it wraps.
            (Error::within("target a:", write()), Class::Run),
            // An I/O error: the caller says whose.
            (
                Error::io(
                    Class::Run,
                    "--sarif s.json:",
                    std::io::Error::other("disk full"),
                ),
                Class::Run,
            ),
            (
                Error::io(
                    Class::Usage,
                    "--out-dir d:",
                    std::io::Error::other("denied"),
                ),
                Class::Usage,
            ),
        ];
        for (e, class) in cases {
            assert_eq!(e.class(), class, "{e:?}");
        }
    }

    #[test]
    fn an_error_is_the_size_of_a_message_and_a_little_more() {
        assert!(
            std::mem::size_of::<Error>() <= 48,
            "{}",
            std::mem::size_of::<Error>()
        );
    }

    #[test]
    fn a_wrapped_error_prints_as_its_own_and_keeps_its_type() {
        let message = read_list().unwrap_err().to_string();
        let e = Error::as_run(read_list().unwrap_err());
        assert_eq!(e.shown(), (Class::Run, message.clone()));
        assert!(e.layer::<ListError>().is_some(), "{e:?}");
        // A context goes before the message.
        let e = Error::within("target a:", e);
        assert_eq!(e.shown(), (Class::Run, format!("target a: {message}")));
        assert!(
            matches!(e.layer::<ListError>(), Some(ListError::Flag { .. })),
            "{e:?}"
        );
        // An I/O error: its cause as the system says it, after the caller's words if any.
        let io = |context: &str| Error::io(Class::Usage, context, std::io::Error::other("gone"));
        assert_eq!(
            io("--out-dir d:").shown(),
            (Class::Usage, "--out-dir d: gone".into())
        );
        assert_eq!(io("").to_string(), "gone");
        let e = io("x");
        let cause = std::error::Error::source(&e).expect("a source");
        assert!(cause.downcast_ref::<std::io::Error>().is_some());
    }
}
