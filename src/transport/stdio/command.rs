//! The command line of a subprocess the kit starts: split like a shell would (expanding nothing),
//! and the program it names.

/// A command line that cannot be run as written (empty, an unclosed quote, a shell operator):
/// what is wrong with it, and `command` quoted when the error names it. A usage error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CommandError {
    /// From [`split_command`]: what is wrong, the caller says which flag gave the command.
    #[error("{0}")]
    Unsplittable(String),
    /// From [`StdioAgent::new`]: the command and what is wrong with it.
    #[error("command {command:?}: {what}")]
    Named { command: String, what: String },
}

impl crate::error::LayerError for CommandError {
    fn class(&self) -> crate::error::Class {
        crate::error::Class::Usage
    }
}

/// For the protocol runners that gather one-line messages with `?` (the message unchanged).
impl From<CommandError> for String {
    fn from(e: CommandError) -> Self {
        e.to_string()
    }
}

/// Splits a command line like a POSIX shell: words separated by blanks, `'…'` literal, `"…"` with
/// `\` escaping `"`, `\`, `$` and `` ` ``, a `\` outside quotes escaping the next character. Nothing
/// is expanded, so the characters a shell would act on when unquoted (`|&;<>()`, `$`, `` ` ``, a
/// word-initial `~`) are errors that say so, rather than arguments the user did not mean; quote
/// them, or write `sh -c '…'` to have a shell. Globs (`*`, `?`, `[`) stay literal.
pub fn split_command(command: &str) -> Result<Vec<String>, CommandError> {
    split_words(command).map_err(CommandError::Unsplittable)
}

/// What a shell character in a command is told with.
const NOT_A_SHELL: &str = "the command runs directly, not through a shell: quote it to pass it as \
                           an argument, or run a shell yourself (sh -c '…')";

type Chars<'a> = std::iter::Peekable<std::str::CharIndices<'a>>;

pub(super) fn split_words(command: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = command.char_indices().peekable();
    let not_a_shell = NOT_A_SHELL;
    while let Some((at, c)) = chars.next() {
        match c {
            ' ' | '\t' | '\n' | '\r' => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                single_quoted(&mut chars, &mut word, at)?;
            }
            '"' => {
                in_word = true;
                double_quoted(&mut chars, &mut word, at)?;
            }
            '\\' => match chars.next() {
                Some((_, '\n')) => {}
                Some((_, c)) => {
                    in_word = true;
                    word.push(c);
                }
                None => return Err("the command ends with a lone backslash".to_string()),
            },
            '|' | '&' | ';' | '<' | '>' | '(' | ')' => {
                return Err(format!(
                    "`{c}` at byte {at} is a shell operator; {not_a_shell}"
                ))
            }
            '$' | '`' => {
                return Err(format!(
                    "`{c}` at byte {at} would be expanded by a shell, and nothing is expanded \
                     here; {not_a_shell}"
                ))
            }
            '~' if !in_word => {
                return Err(format!(
                    "`~` at byte {at} would be expanded by a shell, and nothing is expanded \
                     here; write the path out, or {not_a_shell}"
                ))
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    if words.is_empty() {
        return Err("the command is empty".to_string());
    }
    Ok(words)
}

/// The kit's own name as a command's program.
pub const KIT_PROGRAM: &str = "agent-tck";

/// What runs for `program`, the first word of a command the kit starts (`--exec`, `--stdio`,
/// every flag that takes a command line: they all start it here, or ask here what it names).
///
/// A bare `agent-tck` is the kit naming itself, and runs this very executable whenever this
/// process is the kit, whether or not an `agent-tck` is on PATH: from a clone
/// (`cargo run --release -- probe … --exec "agent-tck mock agent …"`) there is none, and an
/// installed one may be another version than the one judging — a reference peer of another
/// version would be judged by rules it was not built to. When this process is something else
/// (a test harness linking the library), the name is looked up on PATH as any other.
pub fn program_path(program: &str) -> std::ffi::OsString {
    if program == KIT_PROGRAM {
        if let Ok(exe) = std::env::current_exe() {
            if exe.file_name().is_some_and(|name| name == KIT_PROGRAM) {
                return exe.into_os_string();
            }
        }
    }
    program.into()
}

/// The rest of a `'…'` opened at byte `at`: every character literal up to the closing quote.
fn single_quoted(chars: &mut Chars, word: &mut String, at: usize) -> Result<(), String> {
    loop {
        match chars.next() {
            Some((_, '\'')) => return Ok(()),
            Some((_, c)) => word.push(c),
            None => {
                return Err(format!(
                    "unterminated single quote (the ' at byte {at} is never closed)"
                ))
            }
        }
    }
}

/// The rest of a `"…"` opened at byte `at`: `\` escapes `"`, `\`, `$` and `` ` `` (and joins
/// lines); an unescaped `$` or `` ` `` would be expanded by a shell, so it is an error.
fn double_quoted(chars: &mut Chars, word: &mut String, at: usize) -> Result<(), String> {
    let not_a_shell = NOT_A_SHELL;
    loop {
        match chars.next() {
            Some((_, '"')) => return Ok(()),
            Some((_, '\\')) => match chars.peek() {
                Some(&(_, c @ ('"' | '\\' | '$' | '`'))) => {
                    word.push(c);
                    chars.next();
                }
                Some(&(_, '\n')) => {
                    chars.next();
                }
                _ => word.push('\\'),
            },
            Some((i, c @ ('$' | '`'))) => {
                return Err(format!(
                    "`{c}` at byte {i} would be expanded by a shell, and nothing is \
                         expanded here; {not_a_shell}"
                ))
            }
            Some((_, c)) => word.push(c),
            None => {
                return Err(format!(
                    "unterminated double quote (the \" at byte {at} is never closed)"
                ))
            }
        }
    }
}
