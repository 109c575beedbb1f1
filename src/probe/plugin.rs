//! What a protocol adds to the generic suite engine: semantic rules that a schema cannot say
//! (named in suites beside the generic check kinds) and template generators for its messages
//! (`{{ analyses(2) }}`). A protocol folder implements [`SuiteProtocol`]; the engine never names
//! a protocol.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use serde_json::Value;

use super::exchange::ExchangeSpec;
use super::outcome::Outcome;
use crate::content::Content;

/// A protocol's additions to the suite engine.
pub trait SuiteProtocol: Send + Sync + 'static {
    /// Its rule named `name` (`dissent_reason`), if it has one.
    fn rule(&self, name: &str) -> Option<&dyn Rule> {
        let _ = name;
        None
    }

    /// The names of its rules, for messages.
    fn rules(&self) -> Vec<&'static str> {
        Vec::new()
    }

    /// The value of its template generator `name` with `args` (the text between the
    /// parentheses), drawing from `content`; None when `name` is not one of its generators.
    fn generate(
        &self,
        name: &str,
        args: &str,
        content: &mut Content,
    ) -> Option<Result<Value, FillError>> {
        let _ = (name, args, content);
        None
    }

    /// Its generators as a suite writes them (`analyses(N), synthesis(T, M)`), for messages.
    fn generators(&self) -> &'static str {
        ""
    }
}

/// Why a request template (`probe::template`) does not fill: a placeholder names an unknown generator or gives it
/// the wrong arguments. A suite's mistake, found when the suite loads.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FillError {
    #[error("{{{{ {name}(…) }}}} takes {}, got {args:?}", crate::text::count(*.want as u64, "numbers"))]
    NumberCount {
        name: String,
        want: usize,
        args: String,
    },
    #[error("{{{{ {name}({args}) }}}}: {part:?} is not a whole number")]
    NotANumber {
        name: String,
        args: String,
        part: String,
    },
    #[error("{{{{ {name} }}}} takes no arguments")]
    TakesNoArguments { name: String },
    /// `known`: the generators there are, as a suite writes them.
    #[error("unknown generator {{{{ {name} }}}} (known: {known})")]
    Unknown { name: String, known: String },
}

/// For the loaders that gather one-line messages with `?` (the message unchanged).
impl From<FillError> for String {
    fn from(e: FillError) -> Self {
        e.to_string()
    }
}

/// A semantic rule: a kind of check a protocol adds.
pub trait Rule: Send + Sync {
    /// Whether it reads the case's own exchange (false: it reads others, or none).
    fn reads_exchange(&self) -> bool {
        true
    }

    /// Load-time check of its arguments (null when the suite names the rule alone); the error
    /// says what is wrong.
    fn validate(
        &self,
        args: &Value,
        exchanges: &BTreeMap<String, ExchangeSpec>,
    ) -> Result<(), InvalidArgs> {
        let _ = exchanges;
        if args.is_null() {
            Ok(())
        } else {
            Err("takes no parameters".into())
        }
    }

    /// Whether it judges each answer's time against `--timeout`: in traffic the kit did not
    /// send ([`super::traffic`]), the suite's first case with such a rule is the one each
    /// answer's time is judged by (the judge has a case of its own when there is none).
    fn judges_latency(&self) -> bool {
        false
    }

    /// Whether it reads an answer's HTTP header fields: in traffic over lines (stdio) it is
    /// not judged.
    fn reads_headers(&self) -> bool {
        false
    }

    /// Whether it holds of a run once one answer holds it (an agent that names itself in some
    /// answer): in traffic, an answer that does not is no failure while another did, and the
    /// case fails only when none of the agent's answers held it.
    fn once_in_a_run(&self) -> bool {
        false
    }

    /// The exchanges it reads besides the case's own.
    fn exchanges(&self, args: &Value) -> Vec<String> {
        let _ = args;
        Vec::new()
    }

    /// What it found: held on what it judged, or broken and why.
    fn evaluate(&self, args: &Value, ctx: &Ctx<'_>) -> Verdict;
}

/// What a rule or a check found in a peer's answer. Broken is not an error of the run: it is
/// the finding that the peer broke the rule, said in one line (the case's FAIL message).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The rule held on what it judged (`judged == 0`: there was nothing to judge).
    Held(Judged),
    /// The rule was broken: why.
    Broken(String),
}

impl Verdict {
    /// The verdict of a judgement written with `?`: a step that could not read what the rule
    /// judges (no exchange, an answer that is not JSON) ends it broken with that step's message;
    /// otherwise the judgement's own verdict.
    pub fn of(judge: impl FnOnce() -> Result<Verdict, String>) -> Verdict {
        judge().unwrap_or_else(Verdict::Broken)
    }

    /// Held on `judged` of `of`, with a note (may be empty).
    pub fn held(judged: u64, of: impl Into<String>, note: impl Into<String>) -> Verdict {
        Verdict::Held(Judged::held(judged, of, note))
    }

    /// Held on the case's own answer, once ([`Judged::answer`]).
    pub fn answer(note: impl Into<String>) -> Verdict {
        Verdict::Held(Judged::answer(note))
    }

    /// Nothing to judge ([`Judged::nothing`]).
    pub fn nothing(why: impl Into<String>) -> Verdict {
        Verdict::Held(Judged::nothing(why))
    }

    /// Broken: `why`.
    pub fn broken(why: impl Into<String>) -> Verdict {
        Verdict::Broken(why.into())
    }

    pub fn is_broken(&self) -> bool {
        matches!(self, Verdict::Broken(_))
    }
}

/// A rule's or a check's arguments that a suite got wrong, said in one line; the suite loader
/// adds where (`FILE:LINE: case ID: …`) and reports it as the suite's usage error
/// ([`super::suite::SuiteError::Invalid`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct InvalidArgs(pub String);

impl From<String> for InvalidArgs {
    fn from(what: String) -> Self {
        InvalidArgs(what)
    }
}

impl From<&str> for InvalidArgs {
    fn from(what: &str) -> Self {
        InvalidArgs(what.to_string())
    }
}

impl From<crate::jsonpath::PathError> for InvalidArgs {
    fn from(e: crate::jsonpath::PathError) -> Self {
        InvalidArgs(e.to_string())
    }
}

/// What [`Judged::answer`] counts: the case's own answer, named by the runner.
pub const OWN_ANSWER: &str = "answer";

/// What a check judged when it held: how many of what, and a note. With `judged == 0` there was
/// nothing to judge, and `note` says what was missing (the case is then a SKIP, never a PASS).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Judged {
    pub judged: u64,
    pub of: String,
    pub note: String,
}

impl Judged {
    /// `judged` of `of`, held, with a note (may be empty).
    pub fn held(judged: u64, of: impl Into<String>, note: impl Into<String>) -> Judged {
        Judged {
            judged,
            of: of.into(),
            note: note.into(),
        }
    }

    /// The case's own answer judged, once: the runner names it after the case's exchange
    /// (`answer to exchange analyze`).
    pub fn answer(note: impl Into<String>) -> Judged {
        Judged::held(1, OWN_ANSWER, note)
    }

    /// Nothing to judge: `why` says what was missing and what would exercise the rule.
    pub fn nothing(why: impl Into<String>) -> Judged {
        Judged::held(0, "", why)
    }
}

/// The rule vocabulary of a protocol whose cases its own driver runs (each case a small
/// scenario: the Librarian's, the connector's): the suite loader checks every case's rule name
/// and arguments at load with `validate`, and the generic runner never evaluates them.
pub struct DriverRules {
    names: &'static [&'static str],
    validate: fn(&str, &Value) -> Result<(), String>,
    /// The command that runs them, for the error should the generic runner meet one.
    runner: &'static str,
    rules: std::sync::OnceLock<Vec<DriverRule>>,
}

struct DriverRule {
    name: &'static str,
    validate: fn(&str, &Value) -> Result<(), String>,
    runner: &'static str,
}

impl DriverRules {
    pub const fn new(
        names: &'static [&'static str],
        validate: fn(&str, &Value) -> Result<(), String>,
        runner: &'static str,
    ) -> DriverRules {
        DriverRules {
            names,
            validate,
            runner,
            rules: std::sync::OnceLock::new(),
        }
    }
}

impl Rule for DriverRule {
    fn reads_exchange(&self) -> bool {
        false
    }

    fn validate(
        &self,
        args: &Value,
        _: &BTreeMap<String, ExchangeSpec>,
    ) -> Result<(), InvalidArgs> {
        (self.validate)(self.name, args).map_err(InvalidArgs)
    }

    fn evaluate(&self, _: &Value, _: &Ctx<'_>) -> Verdict {
        Verdict::Broken(format!(
            "{}: run by `{}`, not by the generic suite runner",
            self.name, self.runner
        ))
    }
}

impl SuiteProtocol for DriverRules {
    fn rule(&self, name: &str) -> Option<&dyn Rule> {
        let rules = self.rules.get_or_init(|| {
            self.names
                .iter()
                .map(|&name| DriverRule {
                    name,
                    validate: self.validate,
                    runner: self.runner,
                })
                .collect()
        });
        rules
            .iter()
            .find(|r| r.name == name)
            .map(|r| r as &dyn Rule)
    }

    fn rules(&self) -> Vec<&'static str> {
        self.names.to_vec()
    }
}

/// No rules and no generators: a suite of generic checks only.
pub struct GenericOnly;

impl SuiteProtocol for GenericOnly {}

/// What the runner knows when it evaluates a case.
pub struct Ctx<'a> {
    /// The suite's protocol, for its rules.
    pub protocol: &'a dyn SuiteProtocol,
    /// The case's own exchange.
    pub outcome: Option<&'a Outcome>,
    /// Every exchange the case's checks read, by name.
    pub exchanges: &'a HashMap<String, Arc<Outcome>>,
    /// The result of a connection attempt, for `reachable`.
    pub reachable: Option<Result<String, String>>,
    pub max_body: usize,
    pub max_field: usize,
    /// Whether the case judges its answer's status itself (`status`, `refused`): then its body
    /// checks read an answer of any status; otherwise a non-2xx answer gives them nothing to
    /// judge.
    pub status_judged: bool,
    /// The answer came in traffic the kit did not send ([`super::traffic`]): a phrase it repeats
    /// from its request was the sender's to strip, not the agent's to avoid, and is not judged
    /// against it (the platform that forwarded it is judged on it by the platform rules). The
    /// probe's requests are its own: there, an answer is judged on every phrase it carries.
    pub live: bool,
    /// Whether a check says what held (its note): the probe reports it; the traffic judge
    /// keeps it only for a case that holds once in a run, and asks for none otherwise (two
    /// notes written for every answer were a fiftieth of the proxy's judge).
    pub notes: bool,
}

impl Ctx<'_> {
    /// A note on what held, written only when it is read ([`Ctx::notes`]).
    pub fn note(&self, write: impl FnOnce() -> String) -> String {
        if self.notes {
            write()
        } else {
            String::new()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_step_that_cannot_read_the_answer_breaks_the_rule_with_its_message() {
        let v = Verdict::of(|| Err("the case has no exchange".into()));
        assert_eq!(v, Verdict::Broken("the case has no exchange".into()));
        assert!(v.is_broken());
        let held = Verdict::of(|| Ok(Verdict::answer("fine")));
        assert_eq!(held, Verdict::Held(Judged::held(1, OWN_ANSWER, "fine")));
        assert!(!held.is_broken());
    }
}
