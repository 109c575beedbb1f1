//! `agent-tck probe execute-task`: the evaluation harness against an agent over HTTP, stdio or a
//! socket. Two kinds of cases: built-in protocol cases (single exchanges we craft, independent
//! of how clever the agent is: a first turn, an unknown tool, a long and a unicode history) and
//! the scenarios' expectations (multi-turn runs of `suites/execute_task/*.yaml`). Every exchange
//! also feeds the cases that look across them: answered within --timeout, a discoverable name,
//! JSON labelled as JSON, the reference harness's differences.

use std::time::{Duration, Instant};

use bytes::Bytes;
use serde_json::{json, Value};

use super::harness::{self, End, Exchanger, Transcript, REFERENCE_HARNESS_NOTE};
use super::scenario::Scenario;
use crate::protocols::execute_task::model::{check_answer, discover_name, reference_harness_notes};
use crate::report::{CaseResult, Exchange, Level, Report, RunInfo, Status};
use crate::text::glob_match;
use crate::text::{excerpt, excerpt_str, shell_quote, Redactor};
use crate::transport::http::{self, BaseUrl, Limits, Request};
use crate::transport::lines::LineError;
use crate::transport::socket::{SocketAddrSpec, SocketAgent, SocketMode};
use crate::transport::stdio::{StdioAgent, StdioConfig, StdioMode};

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
}

/// One transport, as the harness loop sees it, keeping what the cross-cutting cases need.
pub struct Channel {
    inner: Inner,
    timeout: Duration,
    max_body: usize,
    target: Target,
    /// Every exchange: (elapsed, outcome); the slowest and the timeouts.
    pub log: ExchangeLog,
}

enum Inner {
    Http {
        base: BaseUrl,
        api_key: Option<String>,
    },
    // Boxed: the stdio agent is large, and there is one channel per run.
    Stdio(Box<StdioAgent>),
    Socket(SocketAgent),
}

#[derive(Debug, Default)]
pub struct ExchangeLog {
    pub count: u64,
    pub slowest: Duration,
    pub timeouts: Vec<String>,
    /// HTTP answers' Content-Type, when it was not application/json.
    pub wrong_types: Vec<String>,
    pub http_answers: u64,
    /// The last request sent and what came back, for failure reports.
    pub last_request: Option<Value>,
    pub last_answer: Option<String>,
}

impl Channel {
    pub fn new(target: &Target, timeout: Duration, max_body: usize) -> Result<Channel, String> {
        let inner = match target {
            Target::Http { base, api_key } => Inner::Http {
                base: base.clone(),
                api_key: api_key.clone(),
            },
            Target::Stdio(config) => Inner::Stdio(Box::new(StdioAgent::new(config.clone())?)),
            Target::Socket { addr, mode } => {
                Inner::Socket(SocketAgent::new(addr.clone(), *mode, max_body))
            }
        };
        Ok(Channel {
            inner,
            timeout,
            max_body,
            target: target.clone(),
            log: ExchangeLog::default(),
        })
    }

    /// Ends the agent's process group (stdio) or connection (socket).
    pub async fn close(&mut self) -> Option<String> {
        match &mut self.inner {
            Inner::Stdio(agent) => {
                let cleanup = agent.shutdown().await;
                let log = agent.stderr();
                Some(format!(
                    "stderr: {} byte(s){}; process group ended{}",
                    log.total_bytes,
                    if log.tail.trim().is_empty() {
                        String::new()
                    } else {
                        format!(", last: {}", excerpt_str(log.tail.trim(), 400))
                    },
                    if cleanup.signalled.is_empty() {
                        " (it had exited)".to_string()
                    } else {
                        format!(" with {}", cleanup.signalled.join(" then "))
                    }
                ))
            }
            Inner::Socket(agent) => {
                agent.close().await;
                None
            }
            Inner::Http { .. } => None,
        }
    }

    async fn send(&mut self, request: &Value) -> Result<Vec<u8>, String> {
        let body = serde_json::to_vec(request).unwrap_or_default();
        let deadline = self.timeout;
        match &mut self.inner {
            Inner::Http { base, api_key } => {
                let mut headers =
                    vec![("content-type".to_string(), "application/json".to_string())];
                if let Some(k) = api_key {
                    headers.push(("authorization".into(), format!("Bearer {k}")));
                }
                let request = Request {
                    method: "POST".into(),
                    path: "/execute_task".into(),
                    headers,
                    body: Bytes::from(body),
                };
                let limits = Limits {
                    deadline,
                    max_body: self.max_body,
                    ..Limits::default()
                };
                let r = http::send(base, &request, limits).await.map_err(|e| {
                    if matches!(e, http::Error::Timeout { .. }) {
                        self.log.timeouts.push(e.to_string());
                    }
                    e.to_string()
                })?;
                self.log.http_answers += 1;
                let ct = r.header("content-type").unwrap_or("").to_string();
                if !ct
                    .split(';')
                    .next()
                    .unwrap_or("")
                    .trim()
                    .eq_ignore_ascii_case("application/json")
                {
                    self.log.wrong_types.push(format!("{ct:?}"));
                }
                if r.body_exceeded {
                    return Err(format!("the answer is larger than {} bytes", self.max_body));
                }
                if r.status != 200 {
                    return Err(format!(
                        "answered HTTP {}; expected 200; body: {}",
                        r.status,
                        excerpt(&r.body, 300)
                    ));
                }
                Ok(r.body.to_vec())
            }
            Inner::Stdio(agent) => {
                let persistent =
                    matches!(&self.target, Target::Stdio(c) if c.mode == StdioMode::Persistent);
                let answer = agent.exchange(&body, deadline).await;
                let answer = line_result(answer, &mut self.log)?;
                let text = answer.text.to_vec();
                if let Err(e) = serde_json::from_slice::<Value>(&text) {
                    // A banner or a pretty-printed answer leaves the stream out of step.
                    if persistent {
                        agent.restart().await;
                    }
                    return Err(not_one_json_line(&text, answer.line_no, persistent, &e));
                }
                Ok(text)
            }
            Inner::Socket(agent) => {
                let answer = agent.exchange(&body, deadline).await;
                let answer = line_result(answer, &mut self.log)?;
                let text = answer.text.to_vec();
                if let Err(e) = serde_json::from_slice::<Value>(&text) {
                    return Err(not_one_json_line(&text, answer.line_no, false, &e));
                }
                Ok(text)
            }
        }
    }

    /// A command that sends `request` the way this run did.
    fn reproduce(&self, request: &Value) -> String {
        let body = shell_quote(&request.to_string());
        match &self.target {
            Target::Http { base, .. } => format!(
                "curl -sS -i -X POST {} -H 'content-type: application/json' --data-binary {body}",
                shell_quote(&base.join("/execute_task"))
            ),
            Target::Stdio(c) => match c.mode {
                StdioMode::Persistent => format!("echo {body} | {}", c.command),
                StdioMode::PerTurn => format!("printf '%s' {body} | {}", c.command),
            },
            Target::Socket { addr, .. } => match addr {
                SocketAddrSpec::Tcp(a) => {
                    let (h, p) = a.rsplit_once(':').unwrap_or((a, ""));
                    format!("echo {body} | nc {h} {p}")
                }
                SocketAddrSpec::Unix(p) => format!("echo {body} | nc -U {}", p.display()),
            },
        }
    }
}

fn line_result(
    answer: Result<crate::transport::lines::LineAnswer, LineError>,
    log: &mut ExchangeLog,
) -> Result<crate::transport::lines::LineAnswer, String> {
    answer.map_err(|e| {
        if matches!(e, LineError::Timeout { .. }) {
            log.timeouts.push(e.to_string());
        }
        e.to_string()
    })
}

/// Why a line is not one JSON answer, quoting it, with a guess at the cause.
fn not_one_json_line(text: &[u8], line_no: u64, persistent: bool, e: &serde_json::Error) -> String {
    let quoted = excerpt(text, 200);
    let trimmed = String::from_utf8_lossy(text).trim().to_string();
    let hint = if trimmed == "{" || trimmed == "[" {
        "pretty-printed JSON over several lines? The protocol wants one line per answer"
    } else if !trimmed.starts_with('{') && !trimmed.starts_with('[') {
        "a banner or log line on stdout? Only answers may go there (logs go to stderr)"
    } else {
        "not valid JSON"
    };
    if persistent {
        format!("line {line_no} of stdout is not a JSON answer ({hint}): {quoted} — {e}")
    } else {
        format!("the answer is not JSON ({hint}): {quoted} — {e}")
    }
}

impl Exchanger for Channel {
    async fn exchange(&mut self, request: &Value) -> Result<Vec<u8>, String> {
        let started = Instant::now();
        self.log.last_request = Some(request.clone());
        let result = self.send(request).await;
        self.log.count += 1;
        self.log.slowest = self.log.slowest.max(started.elapsed());
        self.log.last_answer = Some(match &result {
            Ok(b) => excerpt(b, 2_000),
            Err(e) => e.clone(),
        });
        result
    }
}

/// A single exchange the protocol cases make, with its id and what it is about.
struct ProtocolProbe {
    id: &'static str,
    title: &'static str,
    spec: &'static str,
    request: Value,
}

fn protocol_probes() -> Vec<ProtocolProbe> {
    let call = json!({"action": "call_tool", "tool_name": "teleport_customer", "tool_params": {"to": "mars"}});
    let long_content = "The customer describes the problem at length. ".repeat(60);
    let mut long_history = Vec::new();
    for i in 0..7 {
        long_history
            .push(json!({"role": "user", "content": format!("Turn {}: {long_content}", i + 1)}));
        long_history.push(json!({"role": "assistant", "content": json!({"action": "call_tool", "tool_name": "lookup_order", "tool_params": {"order_id": format!("A-{i}")}}).to_string()}));
    }
    vec![
        ProtocolProbe {
            id: "protocol.first-turn",
            title: "a first turn (turn 1, empty history) gets a valid action",
            spec: "POST /execute_task: Request Body; Response Body",
            request: json!({"task_description": "Identify the customer with ID cust_123 and summarize their plan.", "turn": 1, "conversation_history": []}),
        },
        ProtocolProbe {
            id: "protocol.unknown-tool",
            title: "after an unknown tool's error message the agent goes on with a valid action",
            spec: "Multi-turn Flow (the harness executes tools in its sandbox)",
            request: json!({
                "task_description": "Tool 'teleport_customer' is not available (available: get_customer_details). Continue.",
                "turn": 2,
                "conversation_history": [
                    {"role": "user", "content": "Move customer cust_123 to the new plan."},
                    {"role": "assistant", "content": call.to_string()},
                ],
            }),
        },
        ProtocolProbe {
            id: "protocol.long-history",
            title: "turn 8 with a long conversation_history (14 entries, ~2,800 characters each) gets a valid action",
            spec: "POST /execute_task: Request Body (turn, conversation_history)",
            request: json!({"task_description": "Tool 'lookup_order' returned: {\"status\": \"shipped\"}. Continue.", "turn": 8, "conversation_history": long_history}),
        },
        ProtocolProbe {
            id: "protocol.unicode",
            title: "a task and history in accents, CJK, emoji and right-to-left text get a valid action",
            spec: "POST /execute_task: Request Body",
            request: json!({
                "task_description": "Réponds au client 张伟 🔐: راجع الفاتورة — סקור את החשבון",
                "turn": 2,
                "conversation_history": [
                    {"role": "user", "content": "認証モジュールを確認してください ✅"},
                    {"role": "assistant", "content": "{\"action\":\"final_answer\",\"summary\":\"Überprüft — ok\"}"},
                ],
            }),
        },
    ]
}

/// Runs the probe and returns the report (the API key redacted).
pub async fn run(
    settings: &TaskSettings,
    on_case: &(dyn Fn(&CaseResult) + Sync),
) -> Result<Report, String> {
    let run_info = RunInfo::start(
        "probe",
        "execute-task",
        settings.target.describe(),
        settings.seed,
        settings.strict,
    );
    let mut channel = Channel::new(&settings.target, settings.timeout, settings.max_body)?;
    let wanted =
        |id: &str| settings.only.is_empty() || settings.only.iter().any(|p| glob_match(p, id));
    let mut cases = Vec::new();
    let mut answers: Vec<Value> = Vec::new();
    let mut governance_sent = false;
    for probe in protocol_probes() {
        if !wanted(probe.id) {
            continue;
        }
        let t0 = Instant::now();
        let result = channel.exchange(&probe.request).await;
        let mut case = CaseResult::new(probe.id, "protocol", Level::Must, probe.title, probe.spec);
        case.duration_ms = t0.elapsed().as_millis() as u64;
        match result
            .and_then(|b| serde_json::from_slice::<Value>(&b).map_err(|e| format!("not JSON: {e}")))
        {
            Ok(answer) => {
                let findings = check_answer(&answer);
                if findings.is_empty() {
                    case.message = format!(
                        "answered {}",
                        answer.get("action").and_then(Value::as_str).unwrap_or("?")
                    );
                } else {
                    case.fail(crate::schema::findings_message(&findings));
                }
                answers.push(answer);
            }
            Err(e) => case.fail(e),
        }
        if case.status == Status::Fail {
            case.exchange = exchange_of(&channel, &probe.request);
        }
        on_case(&case);
        cases.push(case);
    }
    for scenario in &settings.scenarios {
        let ids: Vec<String> = scenario_case_ids(scenario);
        if !ids.iter().any(|id| wanted(id)) {
            continue;
        }
        let t0 = Instant::now();
        let transcript = harness::run_scenario(scenario, &mut channel, settings.max_turns).await;
        governance_sent |= transcript.turns.iter().any(|t| {
            t.request["task_description"]
                .as_str()
                .is_some_and(|d| d.starts_with("GOVERNANCE ERROR"))
        });
        answers.extend(
            transcript
                .turns
                .iter()
                .filter_map(|t| t.answer.clone().ok()),
        );
        for mut c in scenario_cases(scenario, &transcript, &channel) {
            c.duration_ms = t0.elapsed().as_millis() as u64;
            if wanted(&c.id) {
                on_case(&c);
                cases.push(c);
            }
        }
    }
    let transport_note = channel.close().await;
    for c in cross_cases(
        settings,
        &channel,
        &answers,
        governance_sent,
        transport_note,
    )? {
        if wanted(&c.id) {
            on_case(&c);
            cases.push(c);
        }
    }
    // The protocol cases first (the cross-cutting ones were judged last), then the scenarios.
    cases.sort_by_key(|c| c.group != "protocol");
    let secret = match &settings.target {
        Target::Http { api_key, .. } => api_key.clone(),
        _ => None,
    };
    let report = run_info.report(cases, &Redactor::new(secret));
    Ok(report)
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

fn scenario_cases(
    scenario: &Scenario,
    transcript: &Transcript,
    channel: &Channel,
) -> Vec<CaseResult> {
    let mut cases = Vec::new();
    let mut completes = CaseResult::new(
        &format!("{}.completes", scenario.id),
        &scenario.id,
        Level::Must,
        &format!("{}: every turn gets a valid action", scenario.title),
        &scenario.spec,
    );
    let broken = matches!(transcript.end, End::BadAnswer(_) | End::Transport(_));
    if broken {
        let turn = transcript.turns.len();
        completes.fail(format!("ended after {turn} turn(s) by {}", transcript.end));
        if let Some(last) = transcript.turns.last() {
            completes.exchange = exchange_of(channel, &last.request);
        }
    } else {
        completes.message = format!(
            "{} turn(s), ended by {}",
            transcript.turns.len(),
            transcript.end
        );
    }
    cases.push(completes);
    for (expectation, verdict) in harness::judge(scenario, transcript) {
        let mut c = CaseResult::new(
            &expectation_id(scenario, &expectation.expect),
            &scenario.id,
            expectation.level,
            &format!(
                "{} ({}:{})",
                expectation.expect, scenario.source, expectation.line
            ),
            &scenario.spec,
        );
        match verdict {
            _ if broken => {
                c.status = Status::Skip;
                c.message = format!("skipped: {}.completes failed", scenario.id);
            }
            Ok(note) => c.message = note,
            Err(why) => c.fail(why),
        }
        cases.push(c);
    }
    cases
}

/// The cases that look across every exchange.
fn cross_cases(
    settings: &TaskSettings,
    channel: &Channel,
    answers: &[Value],
    governance_sent: bool,
    transport_note: Option<String>,
) -> Result<Vec<CaseResult>, String> {
    let log = &channel.log;
    let mut out = Vec::new();
    let mut timely = CaseResult::new(
        "protocol.within-timeout",
        "protocol",
        Level::Must,
        "every exchange is answered within --timeout",
        "Timeouts of the harness (per turn)",
    );
    if log.timeouts.is_empty() {
        timely.message = format!(
            "{} exchange(s); the slowest took {} ms (--timeout {})",
            log.count,
            log.slowest.as_millis(),
            humantime::format_duration(settings.timeout)
        );
    } else {
        timely.fail(format!(
            "{} of {} exchange(s) timed out, e.g. {}",
            log.timeouts.len(),
            log.count,
            log.timeouts[0]
        ));
    }
    out.push(timely);

    let mut identity = CaseResult::new("protocol.identity",
        "protocol",
        Level::Should,
        "the agent names itself (name, agent_name, metadata.name, metadata.agent_name or metadata.model)",
        "Agent Identity (Name Discovery)",
    );
    match answers.iter().find_map(discover_name) {
        Some((name, source)) => identity.message = format!("discovered {name:?} from `{source}`"),
        None if answers.is_empty() => {
            identity.status = Status::Skip;
            identity.message = "no valid answer to look in".into();
        }
        None => identity.fail("no name in any answer: the harness falls back to --agent-name or the endpoint URL (add `agent_name` to every answer)"),
    }
    out.push(identity);

    let mut content_type = CaseResult::new("protocol.content-type",
        "protocol",
        Level::Should,
        "HTTP answers are labelled Content-Type: application/json (the reference harness's client rejects others)",
        "POST /execute_task",
    );
    if !matches!(settings.target, Target::Http { .. }) {
        content_type.status = Status::Skip;
        content_type.message = "not an HTTP agent".into();
    } else if log.wrong_types.is_empty() {
        content_type.message = format!("{} answer(s) checked", log.http_answers);
    } else {
        content_type.fail(format!(
            "{} answer(s) labelled otherwise, e.g. {}",
            log.wrong_types.len(),
            log.wrong_types[0]
        ));
    }
    out.push(content_type);

    let mut sanitized = CaseResult::new(
        "protocol.sanitization",
        "protocol",
        Level::Should,
        "answers carry no NUL characters, terminal escapes or prompt-injection patterns",
        "Multi-turn Flow (the harness shows and forwards summaries, instructions, tool parameters)",
    );
    let patterns = crate::protocols::roundtable::sanitization_patterns()?;
    let findings: Vec<String> = answers
        .iter()
        .enumerate()
        .flat_map(|(i, a)| {
            crate::jsonpath::strings(a)
                .into_iter()
                .flat_map(|(path, text)| patterns.scan(&path, text))
                .map(move |f| format!("answer {}: {f}", i + 1))
                .collect::<Vec<_>>()
        })
        .collect();
    if answers.is_empty() {
        sanitized.status = Status::Skip;
        sanitized.message = "no valid answer to look in".into();
    } else if findings.is_empty() {
        sanitized.message = format!("{} answer(s) checked", answers.len());
    } else {
        let shown: Vec<&str> = findings.iter().take(8).map(String::as_str).collect();
        sanitized.fail(format!(
            "{} finding(s): {}",
            findings.len(),
            shown.join("; ")
        ));
    }
    out.push(sanitized);

    let mut reference = CaseResult::new("protocol.reference-harness",
        "protocol",
        Level::May,
        "notes on where the known reference harness differs from the spec (the spec stays the contract)",
        "Response Body: hitl_pause, branch; Policy Violations",
    );
    let mut notes: Vec<String> = answers.iter().flat_map(reference_harness_notes).collect();
    notes.sort();
    notes.dedup();
    if governance_sent {
        notes.push(REFERENCE_HARNESS_NOTE.to_string());
    }
    // INFO: a report, not a verdict (the console shows a MAY case's message even when it passes).
    reference.message = if notes.is_empty() {
        "nothing to note".into()
    } else {
        notes.join("\n")
    };
    out.push(reference);

    if let Some(note) = transport_note {
        let mut t = CaseResult::new("stdio.engine-log",
            settings.target.group(),
            Level::May,
            "what the agent wrote to stderr (captured as an engine log) and how its process group ended",
            "Local Subprocess Protocol (stderr is captured and emitted as an engine log)",
        );
        t.message = note;
        out.push(t);
    }
    Ok(out)
}

/// The cases that look across every exchange, as `suites list` shows them.
const CROSS_CASES: &[(&str, &str, &str)] = &[
    (
        "protocol.within-timeout",
        "must",
        "every exchange is answered within --timeout",
    ),
    (
        "protocol.identity",
        "should",
        "the agent names itself (name, agent_name, metadata.*)",
    ),
    (
        "protocol.content-type",
        "should",
        "HTTP answers are labelled application/json",
    ),
    (
        "protocol.sanitization",
        "should",
        "answers carry no NUL, terminal escapes or injection patterns",
    ),
    (
        "protocol.reference-harness",
        "may",
        "notes where the reference harness differs from the spec",
    ),
    (
        "stdio.engine-log",
        "may",
        "stdio: what the agent wrote to stderr; how its group ended",
    ),
];

/// Every case id a run with these scenarios can report.
pub fn case_ids(scenarios: &[Scenario]) -> Vec<String> {
    let mut ids: Vec<String> = protocol_probes()
        .into_iter()
        .map(|p| p.id.to_string())
        .collect();
    ids.extend(CROSS_CASES.iter().map(|(id, _, _)| id.to_string()));
    for s in scenarios {
        ids.extend(scenario_case_ids(s));
    }
    ids
}

/// `agent-tck suites list --protocol execute-task`: the protocol cases, then each scenario's.
pub fn list_cases(scenarios: &[Scenario]) -> String {
    let mut rows: Vec<(String, String, String)> = protocol_probes()
        .into_iter()
        .map(|p| (p.id.to_string(), "must".to_string(), p.title.to_string()))
        .collect();
    rows.extend(
        CROSS_CASES
            .iter()
            .map(|(id, level, title)| (id.to_string(), level.to_string(), title.to_string())),
    );
    for s in scenarios {
        rows.push((
            format!("{}.completes", s.id),
            "must".into(),
            format!("{} ({}; every turn a valid action)", s.title, s.source),
        ));
        for e in &s.expect {
            rows.push((
                expectation_id(s, &e.expect),
                e.level.as_str().into(),
                e.expect.to_string(),
            ));
        }
    }
    let w = rows.iter().map(|r| r.0.len()).max().unwrap_or(0);
    let mut out = format!(
        "execute_task ({} protocol cases, {} scenarios; spec execute-task-agent-api.md)\n",
        protocol_probes().len() + CROSS_CASES.len(),
        scenarios.len()
    );
    for (id, level, title) in rows {
        out.push_str(&format!("  {id:<w$}  {level:<6}  {title}\n"));
    }
    out
}

fn exchange_of(channel: &Channel, request: &Value) -> Exchange {
    Exchange {
        request: Some(excerpt_str(&request.to_string(), 2_000)),
        response: channel.log.last_answer.clone(),
        reproduce: Some(channel.reproduce(request)),
    }
}
