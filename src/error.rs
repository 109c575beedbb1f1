//! The errors that end a command before it has a verdict, typed by what the user can do about
//! them: a usage or configuration error (a flag, a data file, a setting: fix it; nothing was run)
//! or a run that could not go on (a port in use, an agent that could not be started, a report
//! that could not be written). [`Error::class`] says which, and [`Error::exit_code`] turns it
//! into the exit status (2 and 1; the statuses are documented on [`crate::report::Exit`]).
//!
//! A layer with errors of its own has its own type, whose variants carry what the message
//! names (file, line, flag, path, cause). [`Error`] keeps that type whole, one variant per layer
//! (`Error::Suite(SuiteError)`, `Error::Targets(TargetsError)`, …), so that a library user can
//! match on what failed, and reach it as the error's `source()`. Each variant prints its layer's
//! message as it is. The class of each is decided here, in [`Error::class`], and nowhere else:
//! by the type, or by the layer error's variant where one type holds both kinds (a journal that
//! cannot be created is a usage error, one that cannot be written a run error). A caller that
//! knows better says so where it converts, with [`Error::as_run`] or [`Error::as_usage`] (a
//! targets run that cannot merge the reports it wrote itself: a run error), and adds what it was
//! at with [`Error::within`] (`target NAME:`), never by formatting the error into a string.
//!
//! [`Error::Io`] keeps an `io::Error` with the caller's words and class (the same refusal is the
//! user's for a file they named, the run's for one the kit makes). [`Error::Usage`] and
//! [`Error::Run`] remain for errors that are nothing but a message (a flag with no layer of its
//! own, a count out of range). Private helpers inside a module may still gather one-line
//! strings with `?`.
//!
//! A rule that a peer broke is not an error of either kind: rules and checks return a
//! `probe::plugin::Verdict`.

use crate::protocols::{agent_standard, connector, execute_task, librarian};

/// What the user can do about an error, which decides the exit status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// A flag, a file or a setting is wrong: nothing was run (exit status 2).
    Usage,
    /// The run could not go on (exit status 1).
    Run,
}

impl Class {
    /// The exit status of a command that ended with an error of this class.
    pub fn exit(self) -> crate::report::Exit {
        match self {
            Class::Usage => crate::report::Exit::Usage,
            Class::Run => crate::report::Exit::Failed,
        }
    }
}

/// Why a command ended without a verdict.
///
/// Every variant prints as its message alone (the layer error's own, unchanged; a context before
/// it); a variant that holds an error gives it as its `source()`: a layer's unboxed, so that
/// `downcast_ref::<SuiteError>()` finds it. Layer errors are boxed so that `Error`, in every
/// `Result` of the crate, stays the size of a message.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// A flag, a file or a setting is wrong: nothing was run. A message and nothing else.
    Usage(String),
    /// The run could not go on. A message and nothing else.
    Run(String),
    /// A layer error whose class its caller decided ([`Error::as_run`], [`Error::as_usage`]).
    Classed {
        class: Class,
        error: Box<Error>,
    },
    /// An error and what its caller was at when it came (`target NAME:`, `--targets`), printed
    /// before it ([`Error::within`]); of the error's class.
    Context {
        context: String,
        error: Box<Error>,
    },
    /// A file, a directory or a socket that the system refused, with what the caller was doing
    /// (`--out-dir DIR:`, `--sarif FILE:`) before the system's message. Its class is the
    /// caller's to say ([`Error::io`]): the same refusal is the user's to fix for a file they
    /// named, and a run that cannot go on for one the kit makes.
    Io {
        class: Class,
        context: String,
        cause: std::io::Error,
    },

    // The kit's own layers.
    /// A protocol's flags that do not parse (clap's message, as it gives it).
    Flags(Box<clap::Error>),
    Suite(Box<crate::probe::suite::SuiteError>),
    Settings(Box<crate::probe::args::SettingsError>),
    Baseline(Box<crate::report::baseline::BaselineError>),
    ReportFile(Box<crate::report::tools::ReportFileError>),
    MergeStream(Box<crate::report::merge_stream::MergeStreamError>),
    Targets(Box<crate::targets::TargetsError>),
    DataFile(Box<crate::text::DataFileError>),
    Unit(Box<crate::units::UnitError>),
    Path(Box<crate::jsonpath::PathError>),
    Pattern(Box<crate::phrases::PatternError>),
    Patterns(Box<crate::sanitization::PatternsError>),
    Command(Box<crate::transport::stdio::CommandError>),
    Url(Box<crate::transport::http::UrlError>),
    Behavior(Box<crate::mock::args::BehaviorError>),
    PlatformSpec(Box<crate::mock::driver::PlatformSpecError>),
    Journal(Box<crate::mock::journal::JournalError>),
    Listen(Box<crate::mock::http1::ListenError>),
    FleetFile(Box<crate::mock::fleet::FleetFileError>),
    Matrix(Box<crate::selftest::matrix::MatrixFileError>),
    Template(Box<crate::selftest::matrix::TemplateError>),
    Preset(Box<crate::protocols::PresetError>),
    ProtocolSettings(Box<crate::protocols::plugin::SettingsError>),
    ProtocolBehavior(Box<crate::protocols::plugin::BehaviorError>),

    // The protocols' layers.
    AgentExec(Box<agent_standard::exec::ExecError>),
    AgentFix(Box<agent_standard::fix::FixError>),
    AgentJournal(Box<agent_standard::journal::JournalError>),
    AgentMock(Box<agent_standard::mock::AgentError>),
    AgentWorkdir(Box<agent_standard::workdir::WorkdirError>),
    AgentDefinition(Box<agent_standard::definition::DefinitionError>),
    AgentSet(Box<agent_standard::agent_set::AgentSetError>),
    AgentProbe(Box<agent_standard::probe::ProbeError>),
    ConnectorDialect(Box<connector::ws::DialectError>),
    ConnectorServe(Box<connector::fleet::ServeError>),
    ConnectorFleetFile(Box<connector::fleet::FleetFileError>),
    ConnectorDefinitions(Box<connector::fleet::DefinitionsError>),
    ConnectorProbe(Box<connector::probe::ProbeError>),
    LibrarianRun(Box<librarian::probe::RunError>),
    LibrarianScript(Box<librarian::mock::ScriptError>),
    LibrarianServer(Box<librarian::reference::ServerError>),
    LibrarianRegistry(Box<librarian::registry::RegistryError>),
    LibrarianFleetFile(Box<librarian::fleet::FleetFileError>),
    TaskScenario(Box<execute_task::scenario::ScenarioError>),
    TaskProbe(Box<execute_task::probe::ProbeError>),
}

/// For each variant that holds a layer's error: `From` that error, and the `Display` and
/// `source()` of `Error`, which match every variant (a variant left out of the list does not
/// compile).
macro_rules! layer_errors {
    ($($variant:ident($ty:ty),)*) => {
        $(impl From<$ty> for Error {
            fn from(e: $ty) -> Error {
                Error::$variant(Box::new(e))
            }
        })*

        impl std::fmt::Display for Error {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                match self {
                    Error::Usage(message) | Error::Run(message) => f.write_str(message),
                    Error::Classed { error, .. } => error.fmt(f),
                    Error::Context { context, error } => write!(f, "{context} {error}"),
                    Error::Io { context, cause, .. } if context.is_empty() => cause.fmt(f),
                    Error::Io { context, cause, .. } => write!(f, "{context} {cause}"),
                    $(Error::$variant(e) => e.fmt(f),)*
                }
            }
        }

        impl std::error::Error for Error {
            fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
                match self {
                    Error::Usage(_) | Error::Run(_) => None,
                    Error::Classed { error, .. } | Error::Context { error, .. } => Some(&**error),
                    Error::Io { cause, .. } => Some(cause),
                    $(Error::$variant(e) => Some(&**e),)*
                }
            }
        }
    };
}

layer_errors! {
    Flags(clap::Error),
    Suite(crate::probe::suite::SuiteError),
    Settings(crate::probe::args::SettingsError),
    Baseline(crate::report::baseline::BaselineError),
    ReportFile(crate::report::tools::ReportFileError),
    MergeStream(crate::report::merge_stream::MergeStreamError),
    Targets(crate::targets::TargetsError),
    DataFile(crate::text::DataFileError),
    Unit(crate::units::UnitError),
    Path(crate::jsonpath::PathError),
    Pattern(crate::phrases::PatternError),
    Patterns(crate::sanitization::PatternsError),
    Command(crate::transport::stdio::CommandError),
    Url(crate::transport::http::UrlError),
    Behavior(crate::mock::args::BehaviorError),
    PlatformSpec(crate::mock::driver::PlatformSpecError),
    Journal(crate::mock::journal::JournalError),
    Listen(crate::mock::http1::ListenError),
    FleetFile(crate::mock::fleet::FleetFileError),
    Matrix(crate::selftest::matrix::MatrixFileError),
    Template(crate::selftest::matrix::TemplateError),
    Preset(crate::protocols::PresetError),
    ProtocolSettings(crate::protocols::plugin::SettingsError),
    ProtocolBehavior(crate::protocols::plugin::BehaviorError),
    AgentExec(agent_standard::exec::ExecError),
    AgentFix(agent_standard::fix::FixError),
    AgentJournal(agent_standard::journal::JournalError),
    AgentMock(agent_standard::mock::AgentError),
    AgentWorkdir(agent_standard::workdir::WorkdirError),
    AgentDefinition(agent_standard::definition::DefinitionError),
    AgentSet(agent_standard::agent_set::AgentSetError),
    AgentProbe(agent_standard::probe::ProbeError),
    ConnectorDialect(connector::ws::DialectError),
    ConnectorServe(connector::fleet::ServeError),
    ConnectorFleetFile(connector::fleet::FleetFileError),
    ConnectorDefinitions(connector::fleet::DefinitionsError),
    ConnectorProbe(connector::probe::ProbeError),
    LibrarianRun(librarian::probe::RunError),
    LibrarianScript(librarian::mock::ScriptError),
    LibrarianServer(librarian::reference::ServerError),
    LibrarianRegistry(librarian::registry::RegistryError),
    LibrarianFleetFile(librarian::fleet::FleetFileError),
    TaskScenario(execute_task::scenario::ScenarioError),
    TaskProbe(execute_task::probe::ProbeError),
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

    /// The error its layer gave, under any context or class its callers added: what a library
    /// user matches on.
    pub fn layer(&self) -> &Error {
        match self {
            Error::Classed { error, .. } | Error::Context { error, .. } => error.layer(),
            e => e,
        }
    }

    /// What the user can do about it: the one place each error's class is decided.
    pub fn class(&self) -> Class {
        use Class::{Run, Usage};
        match self {
            Error::Usage(_) => Usage,
            Error::Run(_) => Run,
            Error::Classed { class, .. } => *class,
            Error::Context { error, .. } => error.class(),
            Error::Io { class, .. } => *class,

            // What the user gave cannot be used: a flag, a file, a setting.
            Error::Flags(_)
            | Error::Suite(_)
            | Error::Settings(_)
            | Error::Baseline(_)
            | Error::ReportFile(_)
            | Error::Targets(_)
            | Error::DataFile(_)
            | Error::Unit(_)
            | Error::Path(_)
            | Error::Pattern(_)
            | Error::Patterns(_)
            | Error::Command(_)
            | Error::Url(_)
            | Error::Behavior(_)
            | Error::PlatformSpec(_)
            | Error::FleetFile(_)
            | Error::Matrix(_)
            | Error::Template(_)
            | Error::Preset(_)
            | Error::ProtocolSettings(_)
            | Error::ProtocolBehavior(_)
            | Error::AgentDefinition(_)
            | Error::ConnectorDialect(_)
            | Error::ConnectorFleetFile(_)
            | Error::ConnectorDefinitions(_)
            | Error::LibrarianScript(_)
            | Error::LibrarianRegistry(_)
            | Error::LibrarianFleetFile(_)
            | Error::TaskScenario(_) => Usage,

            // Something the run needed could not be had: a port, a served input, a reference.
            Error::Listen(_) | Error::ConnectorServe(_) | Error::LibrarianRun(_) => Run,

            // Types that hold both kinds: by the variant.
            Error::MergeStream(e) => {
                use crate::report::merge_stream::MergeStreamError as E;
                match &**e {
                    // A part that does not read, or parts that do not merge.
                    E::File(_) => Usage,
                    E::Write { .. } | E::Interrupted => Run,
                }
            }
            Error::Journal(e) => {
                use crate::mock::journal::JournalError as E;
                match &**e {
                    E::Create { .. } => Usage,
                    E::Write { .. } => Run,
                }
            }
            Error::AgentExec(e) => agent_exec(e),
            Error::AgentFix(e) => {
                use agent_standard::fix::FixError as E;
                match &**e {
                    // The files were found: only reading them is the user's to fix.
                    E::Read { .. } => Usage,
                    E::Write { .. } | E::Rename { .. } => Run,
                }
            }
            Error::AgentJournal(e) => agent_journal(e),
            Error::AgentMock(e) => {
                use agent_standard::mock::AgentError as E;
                match &**e {
                    E::Behavior(_) | E::Next(_) | E::Input(_) => Usage,
                    E::Journal(j) => agent_journal(j),
                }
            }
            Error::AgentWorkdir(e) => agent_workdir(e),
            Error::AgentSet(e) => {
                use agent_standard::agent_set::AgentSetError as E;
                match &**e {
                    E::Count { .. } | E::Dir { .. } | E::NotEmpty { .. } => Usage,
                    E::Write { .. } => Run,
                }
            }
            Error::AgentProbe(e) => {
                use agent_standard::probe::ProbeError as E;
                match &**e {
                    E::Output { .. } | E::NoAgents { .. } | E::Definitions(_) => Usage,
                    E::Exec(x) => agent_exec(x),
                }
            }
            Error::ConnectorProbe(e) => {
                use connector::probe::ProbeError as E;
                match &**e {
                    E::Suite(_) | E::NotOneRule { .. } => Usage,
                    E::Listen(_) => Run,
                }
            }
            Error::LibrarianServer(e) => {
                use librarian::reference::ServerError as E;
                match &**e {
                    E::Journal { .. } => Usage,
                    E::Listen(_) => Run,
                }
            }
            Error::TaskProbe(e) => {
                use execute_task::probe::ProbeError as E;
                match &**e {
                    E::Command(_) => Usage,
                    // The kit's own cases, templates or patterns are broken.
                    E::BuiltIn(_) => Run,
                }
            }
        }
    }

    /// The exit status of a command that ended with this error.
    pub fn exit_code(&self) -> u8 {
        self.class().exit().code()
    }
}

fn agent_exec(e: &agent_standard::exec::ExecError) -> Class {
    use agent_standard::exec::ExecError as E;
    match e {
        E::Split { .. } | E::NoAgent { .. } | E::NotADirectory { .. } => Class::Usage,
        E::Workdir(w) => agent_workdir(w),
    }
}

fn agent_workdir(e: &agent_standard::workdir::WorkdirError) -> Class {
    use agent_standard::workdir::WorkdirError as E;
    match e {
        // The user's tree: a usage error, as a --workdir that is not a directory is.
        E::Copy { .. } => Class::Usage,
        // The temporary directory, or the kit's own copy of the tree.
        E::Make { .. } | E::NamesTaken { .. } | E::Read { .. } => Class::Run,
    }
}

fn agent_journal(e: &agent_standard::journal::JournalError) -> Class {
    use agent_standard::journal::JournalError as E;
    match e {
        // The file `probe orchestration --journal` names, to read.
        E::Read { .. } => Class::Usage,
        E::Encode(_) | E::Write { .. } => Class::Run,
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
    use crate::probe::suite::SuiteError;

    #[test]
    fn a_library_user_matches_on_what_failed() {
        let e: Error = crate::probe::suite::Suite::parse(
            "bad.yaml",
            "cases: [",
            &crate::protocols::roundtable::rules::Suite,
        )
        .map_err(Error::from)
        .unwrap_err();
        assert!(
            matches!(&e, Error::Suite(s) if matches!(**s, SuiteError::Invalid(_))),
            "{e:?}"
        );
        // The layer error is the source, and the message is its own.
        let source = std::error::Error::source(&e).expect("a source");
        assert_eq!(source.to_string(), e.to_string());
        assert!(source.downcast_ref::<SuiteError>().is_some());
        assert_eq!((e.class(), e.exit_code()), (Class::Usage, 2));
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
    fn each_kind_has_its_class_and_exit_status() {
        use crate::report::merge_stream::MergeStreamError;
        let cases: Vec<(Error, Class, u8)> = vec![
            (Error::usage("--url: no scheme"), Class::Usage, 2),
            (Error::run("cannot bind"), Class::Run, 1),
            // A type of one class.
            (
                crate::protocols::librarian::probe::RunError::NotOneRule { case: "c".into() }
                    .into(),
                Class::Run,
                1,
            ),
            // A type of both, by its variant.
            (MergeStreamError::Interrupted.into(), Class::Run, 1),
            (
                MergeStreamError::File(crate::report::tools::ReportFileError::NothingToMerge)
                    .into(),
                Class::Usage,
                2,
            ),
            // A caller that knows better.
            (
                Error::as_run(crate::transport::http::UrlError::NoHost { url: "x".into() }),
                Class::Run,
                1,
            ),
            (Error::as_usage(Error::run("r")), Class::Usage, 2),
            // An I/O error: the caller says whose.
            (
                Error::io(
                    Class::Run,
                    "--sarif s.json:",
                    std::io::Error::other("disk full"),
                ),
                Class::Run,
                1,
            ),
        ];
        for (e, class, code) in cases {
            assert_eq!((e.class(), e.exit_code()), (class, code), "{e:?}");
        }
    }

    #[test]
    fn a_reclassed_error_prints_as_its_own_and_keeps_its_type() {
        let url = crate::transport::http::UrlError::NoHost { url: "x".into() };
        let message = url.to_string();
        let e = Error::as_run(url);
        assert_eq!(e.shown(), (Class::Run, message.clone()));
        assert!(matches!(e.layer(), Error::Url(_)), "{e:?}");
        // A context goes before the message and keeps the class it wraps.
        let e = Error::within("target a:", e);
        assert_eq!(e.shown(), (Class::Run, format!("target a: {message}")));
        assert!(matches!(e.layer(), Error::Url(_)), "{e:?}");
        let e = Error::within(
            "--url:",
            crate::transport::http::UrlError::NoHost { url: "x".into() },
        );
        assert_eq!(e.class(), Class::Usage);
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
