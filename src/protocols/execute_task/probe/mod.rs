//! `agent-tck probe execute-task`: the evaluation harness against an agent over HTTP, stdio or a
//! socket. Two kinds of cases: built-in protocol cases (single exchanges we craft, independent
//! of how clever the agent is: a first turn, an unknown tool, a long and a unicode history) and
//! the scenarios' expectations (multi-turn runs of `suites/execute_task/*.yaml`). Every exchange
//! also feeds the cases that look across them: answered within --timeout, a discoverable name,
//! JSON labelled as JSON, the reference harness's differences.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use serde_json::Value;

use super::harness::{self, End, Exchanger, Held, NoAnswer, Transcript, REFERENCE_HARNESS_NOTE};
use super::rules::{action_note, suite, RunRule};
use super::scenario::Scenario;
use crate::content::Content;
use crate::error::Error;
use crate::judge::tape::{in_case, through, through_timed, Tape, TapeSpec, Taped};
use crate::judge::Party;
use crate::probe::args::{seed_or_clock, RunArgs};
use crate::probe::checks::Check;
use crate::probe::suite::CaseSpec;
use crate::probe::template::{self, Fill, RunValues};
use crate::protocols::execute_task::model::{check_answer, discover_name, reference_harness_notes};
use crate::report::{CaseResult, Evidence, Exchange, Level, Report, RunInfo, Status};
use crate::text::{excerpt, excerpt_str, shell_quote, Redactor};
use crate::transport::http::{self, BaseUrl, Limits, Request};
use crate::transport::lines::{AfterSilence, LineError};
use crate::transport::liveness::{self, Watch};
use crate::transport::socket::{SocketAddrSpec, SocketAgent, SocketMode};
use crate::transport::stdio::{StdioAgent, StdioConfig, StdioMode};
use crate::transport::taped::{line_call, Note};

mod across;
mod channel;

use across::Across;
pub use channel::{Channel, ExchangeLog, TURN_MARGIN};
use channel::{Output, Stall};
// The tests judge the channel's helpers directly.
#[cfg(test)]
use channel::*;

/// Where the agent is.
#[derive(Debug, Clone)]
pub enum Target {
    Http {
        base: BaseUrl,
        api_key: Option<String>,
    },
    Stdio(StdioConfig),
    Socket {
        addr: SocketAddrSpec,
        mode: SocketMode,
    },
}

impl Target {
    fn describe(&self) -> String {
        match self {
            Target::Http { base, .. } => base.join("/execute_task"),
            Target::Stdio(c) => format!(
                "stdio ({}): {}",
                match c.mode {
                    StdioMode::Persistent => "persistent",
                    StdioMode::PerTurn => "per-turn",
                },
                c.command
            ),
            Target::Socket { addr, mode } => format!(
                "{addr} ({})",
                match mode {
                    SocketMode::Persistent => "persistent",
                    SocketMode::PerCall => "per-call",
                }
            ),
        }
    }

    /// What reachability judged, as evidence: `connection`, `program to run`.
    fn reached(&self) -> &'static str {
        match self {
            Target::Stdio(_) => "program to run",
            _ => "connection",
        }
    }

    /// Where a line agent's answers come out (HTTP has no buffer of the agent's to flush).
    fn output(&self) -> Output {
        match self {
            Target::Socket { .. } => Output::Socket,
            _ => Output::Stdout,
        }
    }

    fn group(&self) -> &'static str {
        match self {
            Target::Http { .. } => "http",
            Target::Stdio(_) => "stdio",
            Target::Socket { .. } => "socket",
        }
    }
}

/// Validated settings of one run.
#[derive(Debug, Clone)]
pub struct TaskSettings {
    pub target: Target,
    /// Deadline of each turn's exchange.
    pub timeout: Duration,
    pub max_body: usize,
    pub max_turns: Option<u32>,
    pub scenarios: Vec<Scenario>,
    pub seed: u64,
    pub only: Vec<String>,
    pub strict: bool,
    /// `--min-score`: an evaluation score below it fails the run.
    pub min_score: Option<f64>,
    /// `--record` / `--replay`: the exchanges written to a file, or judged from one.
    pub tape: TapeSpec,
}

impl TaskSettings {
    /// The settings of a run against `target` with `scenarios`, from the flags every probe has.
    pub fn new(target: Target, scenarios: Vec<Scenario>, run: &RunArgs) -> TaskSettings {
        TaskSettings {
            target,
            timeout: run.timeout,
            max_body: run.max_body,
            max_turns: None,
            scenarios,
            seed: seed_or_clock(run.seed),
            only: run.only(),
            strict: run.strict,
            min_score: None,
            tape: run.tape(),
        }
    }

    /// Whether `--only` selects the case `id`.
    pub fn wants(&self, id: &str) -> bool {
        crate::probe::args::selected(&self.only, id)
    }
}

/// Why a run of the probe ended without a report. The agent's own failures are never one of
/// these: they are failed cases.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    /// The stdio agent's command cannot be run as given (a usage error: nothing was run).
    #[error("{0}")]
    Command(String),
    /// The built-in cases, templates or patterns are broken: a bug of the kit (a run error:
    /// nothing the user can change makes the run go on).
    #[error("{0}")]
    BuiltIn(String),
}

impl crate::error::LayerError for ProbeError {
    fn class(&self) -> crate::error::Class {
        use crate::error::Class;
        match self {
            ProbeError::Command(_) => Class::Usage,
            ProbeError::BuiltIn(_) => Class::Run,
        }
    }
}

/// Runs the probe and returns the report (the API key redacted).
pub async fn run(
    settings: &TaskSettings,
    on_case: &(dyn Fn(&CaseResult) + Sync),
) -> Result<Report, Error> {
    let tape = Tape::open(&settings.tape)?;
    let report = probe(settings, on_case, tape.clone()).await?;
    if let Some(tape) = &tape {
        tape.finish()?;
    }
    Ok(report)
}

async fn probe(
    settings: &TaskSettings,
    on_case: &(dyn Fn(&CaseResult) + Sync),
    tape: Option<Arc<Tape>>,
) -> Result<Report, ProbeError> {
    let run_info = RunInfo::start(
        "probe",
        "execute-task",
        settings.target.describe(),
        settings.seed,
        settings.strict,
    );
    // Noted for a report made on Ctrl-C, the key redacted from it as from this one.
    crate::probe::interrupt::started(&run_info);
    if let Target::Http { api_key, .. } = &settings.target {
        crate::probe::interrupt::secrets(api_key.clone());
    }
    let channel = Channel::new(&settings.target, settings.timeout, settings.max_body, tape)?;
    let suite = builtin_suite()?;
    let mut run = Probe {
        settings,
        on_case,
        channel,
        cases: Vec::new(),
        answers: Vec::new(),
        governance_sent: false,
        counts: Vec::new(),
        stall: None,
        broke: std::collections::HashMap::new(),
    };
    // The agent must be there at all; when it is not, every other case says so once, as a skip,
    // instead of failing on its own with the same cause.
    if let Some(need) = run.reachability(&suite).await {
        run.skip_all_for(&suite, &need);
        run.channel.close().await;
        return Ok(finish(settings, run_info, run.cases));
    }
    run.protocol_cases(&suite).await?;
    for scenario in &settings.scenarios {
        run.scenario(scenario).await;
    }
    run.across(&suite).await?;
    run.channel.judge_liveness(&run.broke, &mut run.cases).await;
    let mut report = finish(settings, run_info, run.cases);
    report.counts = run.counts;
    Ok(report)
}

/// A run in progress: the channel to the agent and what its cases have gathered so far.
struct Probe<'a> {
    settings: &'a TaskSettings,
    on_case: &'a (dyn Fn(&CaseResult) + Sync),
    channel: Channel,
    cases: Vec<CaseResult>,
    /// Every answer that parsed, for the cases judged across them.
    answers: Vec<Value>,
    governance_sent: bool,
    /// Turns per scenario, for the HTML report.
    counts: Vec<crate::report::Count>,
    /// An agent whose output never comes, or that cannot start: the rest is skipped for it.
    stall: Option<Stall>,
    /// Per case, when the exchanges it rests on broke: judged against the agent's liveness at
    /// the end.
    broke: std::collections::HashMap<String, Vec<Duration>>,
}

impl Probe<'_> {
    fn wanted(&self, id: &str) -> bool {
        self.settings.wants(id)
    }

    fn done(&mut self, case: CaseResult) {
        (self.on_case)(&case);
        self.cases.push(case);
    }

    /// The reachability cases; the id of the one that failed, if one did.
    async fn reachability(&mut self, suite: &crate::probe::Suite) -> Option<String> {
        let mut unreachable = None;
        for spec in suite.cases().iter().filter(|c| is_reachability(c)) {
            if !self.wanted(&spec.id.value) {
                continue;
            }
            let t0 = Instant::now();
            let mut case = spec.case();
            match in_case(spec.id.value.clone(), self.channel.reachable()).await {
                Ok(note) => case.pass_noting(
                    Evidence::new(1, self.settings.target.reached()),
                    note,
                    String::new,
                ),
                Err(why) => {
                    case.fail(why);
                    unreachable = Some(spec.id.value.clone());
                }
            }
            case.set_duration(t0.elapsed());
            self.done(case);
        }
        unreachable
    }

    /// Every other case skipped, naming the reachability case `need` that failed.
    fn skip_all_for(&mut self, suite: &crate::probe::Suite, need: &str) {
        let others = suite
            .cases()
            .iter()
            .filter(|c| !is_reachability(c))
            .map(CaseSpec::case)
            .chain(
                self.settings
                    .scenarios
                    .iter()
                    .flat_map(scenario_cases_unjudged),
            );
        for mut c in others
            .filter(|c| self.settings.wants(&c.id))
            .collect::<Vec<_>>()
        {
            c.skip(format!(
                "skipped: it needs {need}, which failed (make the agent reachable to judge this)"
            ));
            self.done(c);
        }
    }

    /// The protocol cases: one crafted request each, its answer judged alone.
    async fn protocol_cases(&mut self, suite: &crate::probe::Suite) -> Result<(), ProbeError> {
        let run_values = RunValues::new(self.settings.seed);
        for spec in suite.cases().iter().filter(|c| !is_reachability(c)) {
            let Some(exchange) = spec
                .exchange
                .as_ref()
                .filter(|_| self.wanted(&spec.id.value))
            else {
                continue;
            };
            if let Some(stall) = &self.stall {
                let mut case = spec.case();
                case.skip(stall.skip_reason());
                self.done(case);
                continue;
            }
            let template = suite.file.exchanges[exchange]
                .body
                .as_ref()
                .ok_or_else(|| {
                    ProbeError::BuiltIn(format!(
                        "{}: exchange {exchange} has no body",
                        suite.source
                    ))
                })?;
            let mut fill = Fill {
                run: &run_values,
                content: Content::new(self.settings.seed, exchange),
                protocol: suite.protocol,
            };
            let request = template::render(template, &mut fill)
                .map_err(|e| ProbeError::BuiltIn(e.to_string()))?;
            let case = self.protocol_case(spec, &request).await;
            self.done(case);
        }
        Ok(())
    }

    /// One protocol case: `request` sent, its answer judged.
    async fn protocol_case(&mut self, spec: &CaseSpec, request: &Value) -> CaseResult {
        let t0 = Instant::now();
        let result = in_case(spec.id.value.clone(), self.channel.exchange(request)).await;
        let mut case = spec.case();
        case.set_duration(t0.elapsed());
        match result
            .map_err(|e| e.0)
            .and_then(|b| serde_json::from_slice::<Value>(&b).map_err(|e| format!("not JSON: {e}")))
        {
            Ok(answer) => {
                let findings = check_answer(&answer);
                if findings.is_empty() {
                    let one = Evidence::new(1, "answer to the crafted request");
                    case.pass_noting(one, action_note(&answer), String::new);
                } else {
                    case.fail(crate::schema::findings_message(&findings));
                }
                self.answers.push(answer);
            }
            Err(e) => case.fail(e),
        }
        if case.status == Status::Fail {
            case.exchange = exchange_of(&self.channel, request);
        }
        self.stall = Stall::after(&case.id, &self.channel);
        self.broke
            .insert(case.id.clone(), self.channel.take_breaks());
        case
    }

    /// One scenario: its turns run, its expectations judged.
    async fn scenario(&mut self, scenario: &Scenario) {
        let ids: Vec<String> = scenario_case_ids(scenario);
        if !ids.iter().any(|id| self.wanted(id)) {
            return;
        }
        if let Some(stall) = &self.stall {
            let why = stall.skip_reason();
            for mut c in scenario_cases_unjudged(scenario) {
                if self.wanted(&c.id) {
                    c.skip(why.clone());
                    self.done(c);
                }
            }
            return;
        }
        let t0 = Instant::now();
        let turns = harness::run_scenario(scenario, &mut self.channel, self.settings.max_turns);
        let transcript = in_case(scenario.id.clone(), turns).await;
        self.counts.push(crate::report::Count {
            label: scenario.id.clone(),
            value: transcript.turns.len() as u64,
            unit: "turns".into(),
        });
        self.governance_sent |= transcript.turns.iter().any(|t| {
            t.request["task_description"]
                .as_str()
                .is_some_and(|d| d.starts_with("GOVERNANCE ERROR"))
        });
        self.answers.extend(
            transcript
                .turns
                .iter()
                .filter_map(|t| t.answer.clone().ok()),
        );
        self.stall = Stall::after(&format!("{}.completes", scenario.id), &self.channel);
        let breaks = self.channel.take_breaks();
        for mut c in scenario_cases(scenario, &transcript, &self.channel) {
            self.broke.insert(c.id.clone(), breaks.clone());
            c.set_duration(t0.elapsed());
            if self.wanted(&c.id) {
                self.done(c);
            }
        }
    }

    /// The cases judged across the run, once the channel is closed.
    async fn across(&mut self, suite: &crate::probe::Suite) -> Result<(), ProbeError> {
        let transport_note = self.channel.close().await;
        let across = Across {
            settings: self.settings,
            log: &self.channel.log,
            answers: &self.answers,
            governance_sent: self.governance_sent,
            transport_note,
            stall: self.stall.as_ref(),
        };
        let mut judged = Vec::new();
        for spec in suite
            .cases()
            .iter()
            .filter(|c| c.exchange.is_none() && !is_reachability(c))
        {
            if !self.settings.wants(&spec.id.value) {
                continue;
            }
            for check in &spec.checks {
                let rule = match check {
                    Check::Rule(call) => RunRule::named(&call.name),
                    _ => None,
                };
                let rule = rule.ok_or_else(|| {
                    ProbeError::BuiltIn(format!(
                        "{}: case {}: a case without an exchange takes the checks across a run only",
                        suite.source, spec.id.value
                    ))
                })?;
                let t0 = Instant::now();
                if let Some(mut c) = across
                    .judge(rule, spec.case())
                    .map_err(ProbeError::BuiltIn)?
                {
                    c.set_duration(t0.elapsed());
                    (self.on_case)(&c);
                    judged.push(c);
                }
            }
        }
        self.cases.extend(judged);
        Ok(())
    }
}

/// The report: reachability, then the protocol cases (the cross-cutting ones were judged last),
/// then the scenarios; the API key redacted.
fn finish(settings: &TaskSettings, run_info: RunInfo, mut cases: Vec<CaseResult>) -> Report {
    cases.sort_by_key(|c| match c.group.as_str() {
        "agent" => 0,
        "protocol" => 1,
        _ => 2,
    });
    let secret = match &settings.target {
        Target::Http { api_key, .. } => api_key.clone(),
        _ => None,
    };
    let mut report = run_info.report(cases, &Redactor::new(secret));
    report.min_score = settings.min_score;
    report
}

/// A case whose check is `reachable` (the agent is there at all).
fn is_reachability(spec: &CaseSpec) -> bool {
    spec.checks.iter().any(|c| matches!(c, Check::Reachable))
}

/// `SCENARIO.completes` and one case per expectation.
fn scenario_case_ids(scenario: &Scenario) -> Vec<String> {
    let mut ids = vec![format!("{}.completes", scenario.id)];
    ids.extend(
        scenario
            .expect
            .iter()
            .map(|e| expectation_id(scenario, &e.expect)),
    );
    ids
}

fn expectation_id(scenario: &Scenario, e: &super::scenario::Expect) -> String {
    let slug: String = e
        .to_string()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect::<String>()
        .split('-')
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join("-");
    format!("{}.{slug}", scenario.id)
}

/// The section of an expectation's case: what an agent chose to do is the scenario's
/// expectation, not the spec's rule, except that a tool the harness refused stays refused
/// (the spec's governance feedback).
fn expectation_section(id: &str) -> &'static str {
    match id.split_once('.') {
        Some((_, rule)) if rule.starts_with("no_violation_after_governance_error") => {
            "Policy Violations (Governance feedback)"
        }
        _ => "agent-tck (a scenario's expectation)",
    }
}

/// The section of a scenario's `completes` case: every answer one valid action (Response
/// Body), and the section the scenario says it exercises (its `spec:`), when another.
fn completes_section(scenario: &Scenario) -> String {
    const ANSWERS: &str = "Response Body";
    if scenario.spec == ANSWERS {
        ANSWERS.to_string()
    } else {
        format!("{ANSWERS}; {}", scenario.spec)
    }
}

/// A scenario's cases, not judged yet: `ID.completes`, then one per expectation.
pub fn scenario_cases_unjudged(scenario: &Scenario) -> Vec<CaseResult> {
    let mut cases = vec![CaseResult::new(
        &format!("{}.completes", scenario.id),
        &scenario.id,
        Level::Must,
        &format!("{}: every turn gets a valid action", scenario.title),
        &completes_section(scenario),
    )];
    // What the agent chose to do: scored, not failed, unless the scenario gates it.
    cases.extend(scenario.expect.iter().map(|expectation| {
        let id = expectation_id(scenario, &expectation.expect);
        CaseResult::new(
            &id,
            &scenario.id,
            expectation.level,
            &format!(
                "{} ({}:{})",
                expectation.expect, scenario.source, expectation.line
            ),
            expectation_section(&id),
        )
        .evaluation()
    }));
    cases
}

fn scenario_cases(
    scenario: &Scenario,
    transcript: &Transcript,
    channel: &Channel,
) -> Vec<CaseResult> {
    let mut cases = scenario_cases_unjudged(scenario);
    let broken = matches!(transcript.end, End::BadAnswer(_) | End::Transport(_));
    let completes = &mut cases[0];
    if broken {
        let turn = transcript.turns.len();
        completes.fail(format!(
            "ended after {} by {}",
            crate::text::count(turn as u64, "turns"),
            transcript.end
        ));
        if let Some(last) = transcript.turns.last() {
            completes.exchange = exchange_of(channel, &last.request);
        }
    } else {
        let turns = transcript.turns.len() as u64;
        completes.pass_noting(
            Evidence::new(turns, "turns"),
            format!(
                "{}, ended by {}",
                crate::text::count(turns, "turns"),
                transcript.end
            ),
            || {
                format!(
                    "the scenario ran no turn (ended by {}): nothing to judge",
                    transcript.end
                )
            },
        );
    }
    let turns = transcript.turns.len() as u64;
    // `judge` answers in the order of the scenario's expectations, as the cases are.
    for (c, (_, verdict)) in cases[1..]
        .iter_mut()
        .zip(harness::judge(scenario, transcript))
    {
        match verdict {
            _ if broken => c.skip(format!(
                "skipped: {}.completes failed (an expectation is judged on a scenario that runs to its end)",
                scenario.id
            )),
            Held::Met(note) => c.pass_noting(Evidence::new(turns, "turns of the scenario"), note, || {
                "the scenario ran no turn: nothing to judge the expectation on".to_string()
            }),
            Held::Missed(why) => c.fail_on(Evidence::new(turns, "turns of the scenario"), why),
        }
    }
    cases
}

/// Every case id a run with these scenarios can report.
pub fn case_ids(scenarios: &[Scenario]) -> Result<Vec<String>, ProbeError> {
    let mut ids: Vec<String> = builtin_suite()?
        .cases()
        .iter()
        .map(|c| c.id.value.clone())
        .collect();
    for s in scenarios {
        ids.extend(scenario_case_ids(s));
    }
    Ok(ids)
}

/// `agent-tck suites list --protocol execute-task`: the protocol cases, then each scenario's.
pub fn list_cases(scenarios: &[Scenario]) -> Result<String, ProbeError> {
    let suite = builtin_suite()?;
    let mut rows: Vec<(String, String, String)> = suite
        .cases()
        .iter()
        .map(|c| (c.id.value.clone(), c.level.as_str().into(), c.title.clone()))
        .collect();
    for s in scenarios {
        rows.push((
            format!("{}.completes", s.id),
            "must".into(),
            format!("{} ({}; every turn a valid action)", s.title, s.source),
        ));
        for e in &s.expect {
            let level = match e.level {
                Level::May => "eval",
                level => level.as_str(),
            };
            rows.push((
                expectation_id(s, &e.expect),
                level.into(),
                format!("{} (evaluation)", e.expect),
            ));
        }
    }
    let w = rows.iter().map(|r| r.0.len()).max().unwrap_or(0);
    let mut out = format!(
        "execute_task ({} protocol cases, {}; {} scenarios; spec execute-task-agent-api.md)\n",
        suite.cases().len(),
        suite.source,
        scenarios.len()
    );
    for (id, level, title) in rows {
        out.push_str(&format!("  {id:<w$}  {level:<6}  {title}\n"));
    }
    Ok(out)
}

/// The built-in protocol cases.
fn builtin_suite() -> Result<crate::probe::Suite, ProbeError> {
    suite().map_err(|e| ProbeError::BuiltIn(e.to_string()))
}

fn exchange_of(channel: &Channel, request: &Value) -> Exchange {
    Exchange {
        request: Some(excerpt_str(&request.to_string(), 2_000)),
        response: channel.log.last_answer.clone(),
        reproduce: Some(channel.reproduce(request)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Class;

    /// A command that cannot be run as given is the user's (exit 2); broken built-in data is a
    /// bug of the kit that no flag can fix (exit 1).
    #[test]
    fn a_command_is_usage_and_built_in_data_is_run() {
        assert_eq!(
            Error::from(ProbeError::Command("command \"a |\": no".into())).shown(),
            (Class::Usage, "command \"a |\": no".into())
        );
        assert_eq!(
            Error::from(ProbeError::BuiltIn("protocol.yaml: broken".into())).shown(),
            (Class::Run, "protocol.yaml: broken".into())
        );
        let no_split = Target::Stdio(StdioConfig::new("agent 'unclosed", StdioMode::Persistent));
        let e = Channel::new(&no_split, Duration::from_secs(1), 1000, None)
            .err()
            .expect("an unsplittable command");
        assert!(matches!(e, ProbeError::Command(_)), "{e}");
        assert!(
            e.to_string().starts_with("command \"agent 'unclosed\": "),
            "{e}"
        );
    }

    /// A timeout with 0 bytes from an agent never heard asks about flushing; only output that
    /// came at the end of its input (persistent stdio) stalls the run; an agent heard before
    /// (or a timeout with some bytes) gets the plain message.
    #[test]
    fn a_silent_timeout_asks_whether_output_is_flushed() {
        let timeout = |got| {
            Err(LineError::Timeout {
                deadline: Duration::from_secs(3),
                got,
            })
        };
        let plain = "no complete answer within 3s (the deadline); 0 bytes of it received";
        let mut log = ExchangeLog::default();
        let e = line_result(timeout(0), &mut log, Output::Socket, None).unwrap_err();
        assert!(
            e.starts_with(&format!(
                "{plain} — is its output flushed? Nothing has come back on the connection yet"
            )),
            "{e}"
        );
        assert!(!log.silent);
        let e = line_result(
            timeout(0),
            &mut log,
            Output::Stdout,
            Some(AfterSilence::AtEof(0)),
        )
        .unwrap_err();
        assert!(
            e.starts_with(&format!("{plain} — is stdout flushed?")),
            "{e}"
        );
        assert!(!log.silent, "nothing came at the end of its input: a hang");
        let e = line_result(
            timeout(0),
            &mut log,
            Output::Stdout,
            Some(AfterSilence::AtEof(46)),
        )
        .unwrap_err();
        assert!(
            e.starts_with(&format!(
                "{plain}; when its stdin was closed then, 46 bytes came out: its answers wait in a \
                 buffer until its input ends — is stdout flushed?"
            )),
            "{e}"
        );
        assert!(log.silent);

        // A slow agent, not a buffering one: its answer came before its input was ended.
        let mut slow = ExchangeLog::default();
        let e = line_result(
            timeout(0),
            &mut slow,
            Output::Stdout,
            Some(AfterSilence::Late(46)),
        )
        .unwrap_err();
        assert_eq!(
            e,
            format!("{plain}; 46 bytes came later, with its input still open: a slow answer, not a buffered one")
        );
        assert!(!slow.silent && slow.heard);

        let mut heard = ExchangeLog::default();
        let e = line_result(timeout(5), &mut heard, Output::Stdout, None).unwrap_err();
        assert!(e.ends_with("5 bytes of it received"), "{e}");
        let e = line_result(
            timeout(0),
            &mut heard,
            Output::Stdout,
            Some(AfterSilence::AtEof(46)),
        )
        .unwrap_err();
        assert_eq!(e, plain);
        assert!(!heard.silent);
        assert_eq!(heard.timeouts.len(), 2);
    }

    /// An engine log's "last" excerpt is its end, not its beginning.
    #[test]
    fn the_last_of_a_log_is_its_end() {
        assert_eq!(
            last_chars("first line\nlast line", 9),
            "[11 characters before] … last line"
        );
        assert_eq!(last_chars("short", 400), "short");
    }

    /// `its last 1 line`, `its last 2 lines` (issue 39, point 13).
    #[test]
    fn the_quoted_stderr_counts_its_lines_in_their_number() {
        assert_eq!(
            quoted_stderr("boom\n"),
            "; its last 1 line of stderr, quoted:\n  stderr> boom"
        );
        assert_eq!(
            quoted_stderr("a\nb"),
            "; its last 2 lines of stderr, quoted:\n  stderr> a\n  stderr> b"
        );
    }
}
