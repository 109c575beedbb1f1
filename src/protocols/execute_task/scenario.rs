//! Scenarios of the execute_task protocol are data: `suites/execute_task/*.yaml`, **one scenario
//! per file** (a file is the unit a user copies and edits; its name says what it tests). The
//! built-in ones are embedded; `Scenario::from_file` reads a user's.
//!
//! A scenario gives the first task, the tool sandbox (what each tool returns or how it fails,
//! and an optional governance policy), what the harness does on `hitl_pause` and `branch`, and
//! the expectations judged on the transcript (`execute_task::harness::judge`).
//!
//! Expectations are **evaluation**, not conformance: the protocol never tells an agent which
//! tools exist, so whether it calls `apply_refund` measures how well it does the task, not
//! whether it speaks the protocol. They are scored (`met 3/5`) and fail the run only when gated:
//! `level: must` written on an expectation (or `should` under `--strict`), or `--min-score`.
//! Unwritten, the level is `may` (scored only). The built-in scenarios gate nothing, and name
//! their tools in the task, as a real harness scenario does, so that a capable agent can meet
//! them.
//!
//! ```yaml
//! id: refund-policy
//! title: A refund over the limit is refused, and the agent retries within it
//! spec: "Policy Violations (Governance feedback)"   # the section its `completes` case rests on; optional
//! task: "Process a $100 refund for customer cust_123."
//! max_turns: 5                 # default 5
//! on_hitl: stop                # stop (default) | continue
//! on_branch: follow            # follow (default) | stop
//! tools:
//!   apply_refund:
//!     returns: {status: refunded}        # any JSON; or `error: "message"`
//!     policy: "amount <= 50"             # PARAM OP NUMBER, OP one of <= < >= > == !=
//! expect:
//!   - called: apply_refund               # the tool ran (a call refused by its policy does not count)
//!   - no_violation_after_governance_error: apply_refund
//!   - ends_with: final_answer            # or a list: [final_answer, provide_instructions]
//!     level: must                        # gates the run; unwritten: scored only
//! ```
//!
//! Expectation kinds: `ends_with` (final_answer, provide_instructions, error, hitl_pause, branch,
//! max_turns; one or a list), `within_turns: N` (the agent ended the loop by itself by turn N),
//! `called: TOOL`, `not_called: TOOL` (never asked for, whatever the outcome),
//! `no_violation_after_governance_error: TOOL`, `asked_human: true|false` (a hitl_pause
//! happened, or not), `used: ACTION` (some answer had this action).
//!
//! Errors read `FILE:LINE: scenario ID: what is wrong`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Deserializer};
use serde_json::Value;
use serde_saphyr::Spanned;

use crate::protocols::execute_task::model::ACTIONS;
use crate::report::Level;
use crate::text::yaml_error;

/// The scenarios built into the binary: (file, YAML).
pub const BUILTIN: &[(&str, &str)] = &[
    (
        "suites/execute_task/customer-support.yaml",
        include_str!("../../../suites/execute_task/customer-support.yaml"),
    ),
    (
        "suites/execute_task/refund-policy.yaml",
        include_str!("../../../suites/execute_task/refund-policy.yaml"),
    ),
    (
        "suites/execute_task/wifi-diagnostics.yaml",
        include_str!("../../../suites/execute_task/wifi-diagnostics.yaml"),
    ),
    (
        "suites/execute_task/credit-override.yaml",
        include_str!("../../../suites/execute_task/credit-override.yaml"),
    ),
    (
        "suites/execute_task/tool-failure.yaml",
        include_str!("../../../suites/execute_task/tool-failure.yaml"),
    ),
];

/// The spec's default turn limit.
pub const DEFAULT_MAX_TURNS: u32 = 5;

/// A loaded, validated scenario.
#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    /// Where it came from (for messages).
    pub source: String,
    pub id: String,
    pub title: String,
    /// The spec section the scenario exercises: its `completes` case's section (its expectations
    /// are the scenario's own, `agent-tck (a scenario's expectation)`).
    pub spec: String,
    /// The first `task_description`.
    pub task: String,
    pub max_turns: u32,
    /// The sandbox, by tool name.
    pub tools: BTreeMap<String, Tool>,
    pub on_hitl: OnHitl,
    pub on_branch: OnBranch,
    pub expect: Vec<Expectation>,
}

/// One tool of the sandbox.
#[derive(Debug, Clone, PartialEq)]
pub struct Tool {
    pub result: ToolResult,
    pub policy: Option<Policy>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum ToolResult {
    /// The tool returns this JSON.
    Returns(Value),
    /// The tool fails with this message.
    Fails(String),
}

/// What the harness does when the agent asks for a human.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OnHitl {
    /// The loop ends (the spec: the harness pauses and waits for a human).
    #[default]
    Stop,
    /// A human approves: the next task_description says so and the loop goes on.
    Continue,
}

/// What the harness does on `branch`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OnBranch {
    /// The loop goes on along the (first) branch (the spec does not list branch among the
    /// actions that end the loop).
    #[default]
    Follow,
    /// The loop ends.
    Stop,
}

/// How a transcript may end, as `ends_with` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Ending {
    FinalAnswer,
    ProvideInstructions,
    Error,
    HitlPause,
    Branch,
    MaxTurns,
}

impl Ending {
    pub const ALL: [Ending; 6] = [
        Ending::FinalAnswer,
        Ending::ProvideInstructions,
        Ending::Error,
        Ending::HitlPause,
        Ending::Branch,
        Ending::MaxTurns,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Ending::FinalAnswer => "final_answer",
            Ending::ProvideInstructions => "provide_instructions",
            Ending::Error => "error",
            Ending::HitlPause => "hitl_pause",
            Ending::Branch => "branch",
            Ending::MaxTurns => "max_turns",
        }
    }

    pub fn parse(text: &str) -> Option<Ending> {
        Ending::ALL.into_iter().find(|e| e.as_str() == text)
    }
}

/// One expectation: what, how much it matters, and the line it was written on.
#[derive(Debug, Clone, PartialEq)]
pub struct Expectation {
    pub expect: Expect,
    pub level: Level,
    /// Its line in the scenario file (0 when unknown).
    pub line: usize,
}

impl std::fmt::Display for Expectation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.expect.fmt(f)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Expect {
    /// The transcript ends in one of these ways.
    EndsWith(Vec<Ending>),
    /// The agent ended the loop by itself (not max turns, not a bad answer) by this turn.
    WithinTurns(u32),
    /// The tool ran at least once (a call refused by its policy does not count).
    Called(String),
    /// The agent never asked for the tool.
    NotCalled(String),
    /// After the tool's first governance error, the agent never again called it with parameters
    /// violating its policy.
    NoViolationAfterGovernanceError(String),
    /// `true`: some answer was a hitl_pause; `false`: none was.
    AskedHuman(bool),
    /// Some answer had this action.
    Used(String),
}

impl Expect {
    /// The YAML key of the kind.
    pub fn kind(&self) -> &'static str {
        match self {
            Expect::EndsWith(_) => "ends_with",
            Expect::WithinTurns(_) => "within_turns",
            Expect::Called(_) => "called",
            Expect::NotCalled(_) => "not_called",
            Expect::NoViolationAfterGovernanceError(_) => "no_violation_after_governance_error",
            Expect::AskedHuman(_) => "asked_human",
            Expect::Used(_) => "used",
        }
    }
}

impl std::fmt::Display for Expect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = self.kind();
        match self {
            Expect::EndsWith(list) if list.len() == 1 => write!(f, "{kind}: {}", list[0].as_str()),
            Expect::EndsWith(list) => {
                let names: Vec<&str> = list.iter().map(|e| e.as_str()).collect();
                write!(f, "{kind}: [{}]", names.join(", "))
            }
            Expect::WithinTurns(n) => write!(f, "{kind}: {n}"),
            Expect::Called(t)
            | Expect::NotCalled(t)
            | Expect::NoViolationAfterGovernanceError(t)
            | Expect::Used(t) => write!(f, "{kind}: {t}"),
            Expect::AskedHuman(b) => write!(f, "{kind}: {b}"),
        }
    }
}

/// A governance policy on one numeric parameter: `amount <= 50`.
#[derive(Debug, Clone, PartialEq)]
pub struct Policy {
    pub param: String,
    pub op: Op,
    pub limit: f64,
    /// The limit as written (`50`), for messages.
    pub limit_text: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Le,
    Lt,
    Ge,
    Gt,
    Eq,
    Ne,
}

impl Op {
    /// Longest first, so that `<=` is not read as `<`.
    const ALL: [(&'static str, Op); 6] = [
        ("<=", Op::Le),
        (">=", Op::Ge),
        ("==", Op::Eq),
        ("!=", Op::Ne),
        ("<", Op::Lt),
        (">", Op::Gt),
    ];

    pub fn as_str(self) -> &'static str {
        Op::ALL
            .iter()
            .find(|(_, op)| *op == self)
            .map(|(s, _)| *s)
            .unwrap_or("?")
    }

    fn holds(self, value: f64, limit: f64) -> bool {
        match self {
            Op::Le => value <= limit,
            Op::Lt => value < limit,
            Op::Ge => value >= limit,
            Op::Gt => value > limit,
            Op::Eq => value == limit,
            Op::Ne => value != limit,
        }
    }

    /// The words between the value and the limit in a governance error.
    fn violation(self) -> &'static str {
        match self {
            Op::Le => "exceeds maximum allowed limit of",
            Op::Lt => "is not below the allowed limit of",
            Op::Ge => "is below the minimum allowed limit of",
            Op::Gt => "is not above the allowed minimum of",
            Op::Eq => "differs from the only allowed value,",
            Op::Ne => "is the one value not allowed,",
        }
    }
}

impl std::fmt::Display for Policy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {} {}", self.param, self.op.as_str(), self.limit_text)
    }
}

impl Policy {
    /// Parses `PARAM OP NUMBER` (spaces optional), OP one of `<=`, `<`, `>=`, `>`, `==`, `!=`.
    fn parse(text: &str) -> Result<Policy, String> {
        let usage = || {
            format!(
                "policy {text:?}: expected PARAM OP NUMBER, e.g. \"amount <= 50\" \
                 (OP one of <=, <, >=, >, ==, !=)"
            )
        };
        let at = text.find(['<', '>', '=', '!']).ok_or_else(usage)?;
        let (param, rest) = text.split_at(at);
        let (symbol, op) = Op::ALL
            .iter()
            .find(|(s, _)| rest.starts_with(s))
            .ok_or_else(usage)?;
        let param = param.trim();
        let limit_text = rest[symbol.len()..].trim();
        let identifier = param
            .chars()
            .next()
            .is_some_and(|c| c.is_alphabetic() || c == '_')
            && param.chars().all(|c| c.is_alphanumeric() || c == '_');
        if !identifier {
            return Err(format!(
                "{}: the parameter {param:?} is not a name",
                usage()
            ));
        }
        let limit: f64 = limit_text
            .parse()
            .ok()
            .filter(|l: &f64| l.is_finite())
            .ok_or_else(|| format!("{}: {limit_text:?} is not a number", usage()))?;
        Ok(Policy {
            param: param.to_string(),
            op: *op,
            limit,
            limit_text: limit_text.to_string(),
        })
    }

    /// The governance error for these parameters, or `None` if they keep the policy. A parameter
    /// that is absent, or neither a number nor a string holding one, is not judged (the policy
    /// is about a value the agent gave).
    ///
    /// The text follows the spec's shape exactly:
    /// `GOVERNANCE ERROR: Amount 100 exceeds maximum allowed limit of 50. Please adjust.`
    pub fn violation(&self, params: &Value) -> Option<String> {
        let raw = params.get(&self.param)?;
        let (value, shown) = match raw {
            Value::Number(n) => (n.as_f64()?, n.to_string()),
            Value::String(s) => (s.trim().parse::<f64>().ok()?, s.trim().to_string()),
            _ => return None,
        };
        if self.op.holds(value, self.limit) {
            return None;
        }
        let mut name = self.param.clone();
        if let Some(first) = name.chars().next() {
            name.replace_range(..first.len_utf8(), &first.to_uppercase().to_string());
        }
        Some(format!(
            "GOVERNANCE ERROR: {name} {} {} {}. Please adjust.",
            crate::text::excerpt_str(&shown, 40),
            self.op.violation(),
            self.limit_text
        ))
    }
}

// ---- the file format --------------------------------------------------------------------

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawScenario {
    id: Spanned<String>,
    title: String,
    #[serde(default)]
    spec: Option<String>,
    task: Spanned<String>,
    #[serde(default)]
    max_turns: Option<Spanned<u32>>,
    #[serde(default)]
    tools: BTreeMap<String, Spanned<RawTool>>,
    #[serde(default)]
    on_hitl: OnHitl,
    #[serde(default)]
    on_branch: OnBranch,
    expect: Vec<Spanned<RawExpectation>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTool {
    /// `returns: null` is a tool returning null, not a missing key.
    #[serde(default, deserialize_with = "present")]
    returns: Option<Value>,
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    policy: Option<String>,
}

fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawExpectation {
    #[serde(default)]
    ends_with: Option<OneOrMany>,
    #[serde(default)]
    within_turns: Option<u32>,
    #[serde(default)]
    called: Option<String>,
    #[serde(default)]
    not_called: Option<String>,
    #[serde(default)]
    no_violation_after_governance_error: Option<String>,
    #[serde(default)]
    asked_human: Option<bool>,
    #[serde(default)]
    used: Option<String>,
    #[serde(default)]
    level: Option<Level>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

/// Why a user's scenario file is refused: a usage error (the file is the user's input; nothing
/// was run).
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    #[error("{}: cannot read: {cause}", path.display())]
    Read {
        path: PathBuf,
        cause: std::io::Error,
    },
    /// Not a scenario: `FILE:LINE: scenario ID: what is wrong`, in one line.
    #[error("{0}")]
    Invalid(String),
}

impl crate::error::LayerError for ScenarioError {
    fn class(&self) -> crate::error::Class {
        use crate::error::Class;
        match self {
            ScenarioError::Read { .. } | ScenarioError::Invalid(_) => Class::Usage,
        }
    }
}

impl Scenario {
    /// Every built-in scenario. The shipped files are ours, and a unit test loads each, so a
    /// broken one is a bug caught before release; it panics with the file's error.
    pub fn builtin() -> Vec<Scenario> {
        BUILTIN
            .iter()
            .map(|(file, text)| Scenario::parse(file, text).unwrap_or_else(|e| panic!("{e}")))
            .collect()
    }

    /// Reads and parses a user's scenario file.
    pub fn from_file(path: &Path) -> Result<Scenario, ScenarioError> {
        let text = std::fs::read_to_string(path).map_err(|cause| ScenarioError::Read {
            path: path.to_path_buf(),
            cause,
        })?;
        Scenario::parse(&path.display().to_string(), &text)
    }

    /// Parses and validates one scenario. Errors read `FILE:LINE: …` in one line.
    pub fn parse(source: &str, text: &str) -> Result<Scenario, ScenarioError> {
        Scenario::checked(source, text).map_err(ScenarioError::Invalid)
    }

    fn checked(source: &str, text: &str) -> Result<Scenario, String> {
        let raw: RawScenario =
            serde_saphyr::from_str(text).map_err(|e| yaml_error(source, &e.to_string()))?;
        let id = raw.id.value.trim().to_string();
        let at = |line: u64| format!("{source}:{line}: scenario {id}");
        if id.is_empty() || id.chars().any(char::is_whitespace) {
            return Err(format!(
                "{source}:{}: the id {:?} must be a non-empty word",
                raw.id.referenced.line(),
                raw.id.value
            ));
        }
        if raw.task.value.trim().is_empty() {
            return Err(format!(
                "{}: the task is empty",
                at(raw.task.referenced.line())
            ));
        }
        let max_turns = match &raw.max_turns {
            None => DEFAULT_MAX_TURNS,
            Some(m) if m.value == 0 => {
                return Err(format!(
                    "{}: max_turns must be at least 1",
                    at(m.referenced.line())
                ))
            }
            Some(m) => m.value,
        };

        let mut tools = BTreeMap::new();
        for (name, spec) in raw.tools {
            let here = format!("{}: tool {name}", at(spec.referenced.line()));
            if name.trim().is_empty() {
                return Err(format!("{here}: a tool needs a name"));
            }
            let tool = tool(&here, spec.value)?;
            tools.insert(name, tool);
        }

        let raw_ctx = (raw.on_hitl, raw.on_branch);
        let mut expect = Vec::new();
        for item in raw.expect {
            let line = item.referenced.line() as usize;
            let here = at(line as u64);
            let expectation = expectation(&here, line, item.value, &raw_ctx, max_turns, &tools)?;
            expect.push(expectation);
        }
        if expect.is_empty() {
            return Err(format!(
                "{}: no expectations (a scenario must be able to fail)",
                at(raw.id.referenced.line())
            ));
        }

        Ok(Scenario {
            source: source.to_string(),
            id,
            title: raw.title,
            spec: raw.spec.unwrap_or_else(|| "Multi-turn Flow".to_string()),
            task: raw.task.value,
            max_turns,
            tools,
            on_hitl: raw.on_hitl,
            on_branch: raw.on_branch,
            expect,
        })
    }

    /// The sandbox's tool names, sorted, for messages.
    pub fn tool_names(&self) -> Vec<&str> {
        self.tools.keys().map(String::as_str).collect()
    }
}

/// A tool of the sandbox: what it returns or fails with, and its policy.
fn tool(here: &str, spec: RawTool) -> Result<Tool, String> {
    let RawTool {
        returns,
        error,
        policy,
    } = spec;
    let result = match (returns, error) {
        (Some(v), None) => ToolResult::Returns(v),
        (None, Some(e)) => ToolResult::Fails(e),
        _ => {
            return Err(format!(
                "{here}: give exactly one of `returns` (any JSON) or `error` (a message)"
            ))
        }
    };
    let policy = policy
        .map(|p| Policy::parse(&p))
        .transpose()
        .map_err(|e| format!("{here}: {e}"))?;
    Ok(Tool { result, policy })
}

/// One item of `expect`, checked against the scenario: exactly one kind, naming tools it has
/// and endings its `on` (on_hitl, on_branch) allow.
/// (Over 80 lines: one short check per kind of expectation, in the order their errors are
/// found; split, they would read as a table of one-line functions.)
fn expectation(
    here: &str,
    line: usize,
    r: RawExpectation,
    on: &(OnHitl, OnBranch),
    max_turns: u32,
    tools: &BTreeMap<String, Tool>,
) -> Result<Expectation, String> {
    let mut kinds = Vec::new();
    if let Some(e) = r.ends_with {
        let names = match e {
            OneOrMany::One(n) => vec![n],
            OneOrMany::Many(list) => list,
        };
        if names.is_empty() {
            return Err(format!("{here}: ends_with lists nothing"));
        }
        let endings = endings(here, names, on)?;
        kinds.push(Expect::EndsWith(endings));
    }
    if let Some(n) = r.within_turns {
        if n == 0 || n > max_turns {
            return Err(format!(
                "{here}: within_turns {n} must be between 1 and max_turns ({max_turns})"
            ));
        }
        kinds.push(Expect::WithinTurns(n));
    }
    if let Some(t) = r.called {
        if !tools.contains_key(&t) {
            return Err(format!("{here}: called {t:?}: {}", no_such_tool(tools)));
        }
        kinds.push(Expect::Called(t));
    }
    if let Some(t) = r.not_called {
        // May name a tool the sandbox lacks: an agent must not invent it either.
        kinds.push(Expect::NotCalled(t));
    }
    if let Some(t) = r.no_violation_after_governance_error {
        match tools.get(&t) {
            None => {
                return Err(format!(
                    "{here}: no_violation_after_governance_error {t:?}: {}",
                    no_such_tool(tools)
                ))
            }
            Some(tool) if tool.policy.is_none() => {
                return Err(format!(
                    "{here}: no_violation_after_governance_error {t:?}: the tool has no policy"
                ))
            }
            Some(_) => kinds.push(Expect::NoViolationAfterGovernanceError(t)),
        }
    }
    if let Some(b) = r.asked_human {
        kinds.push(Expect::AskedHuman(b));
    }
    if let Some(a) = r.used {
        if !ACTIONS.contains(&a.as_str()) {
            return Err(format!(
                "{here}: used {a:?} is not one of {}",
                ACTIONS.join(", ")
            ));
        }
        kinds.push(Expect::Used(a));
    }
    let kind = match kinds.len() {
        1 => kinds.remove(0),
        0 => {
            return Err(format!(
                "{here}: an expectation needs one of ends_with, within_turns, called, \
                 not_called, no_violation_after_governance_error, asked_human, used"
            ))
        }
        _ => {
            let names: Vec<&str> = kinds.iter().map(Expect::kind).collect();
            return Err(format!(
                "{here}: one expectation per item, this one has {} (write one item each)",
                names.join(" and ")
            ));
        }
    };
    Ok(Expectation {
        expect: kind,
        level: r.level.unwrap_or(Level::May),
        line,
    })
}

/// The endings `ends_with` names, each one the scenario's `on` (on_hitl, on_branch) lets happen.
fn endings(here: &str, names: Vec<String>, on: &(OnHitl, OnBranch)) -> Result<Vec<Ending>, String> {
    let mut endings = Vec::new();
    for n in names {
        let ending = Ending::parse(&n).ok_or_else(|| {
            let known: Vec<&str> = Ending::ALL.iter().map(|e| e.as_str()).collect();
            format!("{here}: ends_with {n:?} is not one of {}", known.join(", "))
        })?;
        if on.0 == OnHitl::Continue && ending == Ending::HitlPause {
            return Err(format!(
                "{here}: ends_with hitl_pause cannot hold with on_hitl: continue"
            ));
        }
        if on.1 == OnBranch::Follow && ending == Ending::Branch {
            return Err(format!(
                "{here}: ends_with branch cannot hold with on_branch: follow \
                 (the default; set on_branch: stop)"
            ));
        }
        endings.push(ending);
    }
    Ok(endings)
}

fn no_such_tool(tools: &BTreeMap<String, Tool>) -> String {
    if tools.is_empty() {
        "the scenario has no tools".to_string()
    } else {
        let names: Vec<&str> = tools.keys().map(String::as_str).collect();
        format!("no such tool (tools: {})", names.join(", "))
    }
}

#[cfg(test)]
mod tests;
