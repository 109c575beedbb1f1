//! `agent-tck probe execute-task`: the evaluation harness against an agent over HTTP, stdio or a
//! socket. Two kinds of cases: built-in protocol cases (single exchanges we craft, independent
//! of how clever the agent is: a first turn, an unknown tool, a long and a unicode history) and
//! the scenarios' expectations (multi-turn runs of `suites/execute_task/*.yaml`). Every exchange
//! also feeds the cases that look across them: answered within --timeout, a discoverable name,
//! JSON labelled as JSON, the reference harness's differences.

use std::time::{Duration, Instant};

use bytes::Bytes;
use serde_json::Value;

use super::harness::{self, End, Exchanger, Held, NoAnswer, Transcript, REFERENCE_HARNESS_NOTE};
use super::rules::{action_note, suite, RunRule};
use super::scenario::Scenario;
use crate::content::Content;
use crate::error::Error;
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
        }
    }

    /// Whether `--only` selects the case `id`.
    pub fn wants(&self, id: &str) -> bool {
        crate::probe::args::selected(&self.only, id)
    }
}

/// One transport, as the harness loop sees it, keeping what the cross-cutting cases need.
pub struct Channel {
    inner: Inner,
    timeout: Duration,
    max_body: usize,
    target: Target,
    /// Every exchange: (elapsed, outcome); the slowest and the timeouts.
    pub log: ExchangeLog,
    /// Whether an HTTP agent is still there ([`crate::transport::liveness`]).
    watch: Option<Watch>,
    /// When the exchanges since the last [`take_breaks`](Self::take_breaks) broke.
    broke: Vec<Duration>,
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
    /// Exchanges that got an answer (the others failed before one came, or with a bad one).
    pub answered: u64,
    pub slowest: Duration,
    pub timeouts: Vec<String>,
    /// HTTP answers' Content-Type, when it was not application/json (2xx answers only: an
    /// error page is no answer of the protocol's).
    pub wrong_types: Vec<String>,
    /// HTTP answers with a 2xx status (the ones whose Content-Type is judged).
    pub http_answers: u64,
    /// Why the first exchange that got no usable answer got none (for the reasons of the cases
    /// that then have nothing to judge).
    pub first_failure: Option<String>,
    /// Some byte came back from the agent at some point (a line transport): its output does get
    /// through, so a later timeout is that exchange's own.
    pub heard: bool,
    /// An exchange timed out with 0 bytes back while nothing had ever come back, and ending the
    /// agent's input (its stdin closed, our side of the connection shut down) then brought its
    /// output out: it holds its answers in an unflushed buffer, and every later exchange would
    /// time out the same way (see [`Stall`]).
    pub silent: bool,
    /// The very first exchange ended with the agent's exit before it answered, and nothing
    /// ever came on its stdout: it could not start (a mistyped script path, a missing module),
    /// and every later exchange would end the same way (see [`Stall`]).
    pub not_started: bool,
    /// The last request sent and what came back, for failure reports.
    pub last_request: Option<Value>,
    pub last_answer: Option<String>,
}

impl Channel {
    pub fn new(target: &Target, timeout: Duration, max_body: usize) -> Result<Channel, ProbeError> {
        let inner = match target {
            Target::Http { base, api_key } => Inner::Http {
                base: base.clone(),
                api_key: api_key.clone(),
            },
            Target::Stdio(config) => Inner::Stdio(Box::new(
                StdioAgent::new(config.clone()).map_err(|e| ProbeError::Command(e.to_string()))?,
            )),
            Target::Socket { addr, mode } => {
                Inner::Socket(SocketAgent::new(addr.clone(), *mode, max_body))
            }
        };
        // A stdio agent is started again when it exits (its exit is its answer, and says so);
        // an HTTP or socket agent that stops answering is watched.
        let watch = match target {
            Target::Http { base, .. } => Some(Watch::http(
                format!("the agent at {base}"),
                Instant::now(),
                &base.host,
                base.port,
            )),
            Target::Socket { addr, .. } => Some(Watch::socket(
                format!("the agent at {addr}"),
                Instant::now(),
                addr,
            )),
            Target::Stdio(_) => None,
        };
        Ok(Channel {
            inner,
            timeout,
            max_body,
            target: target.clone(),
            log: ExchangeLog::default(),
            watch,
            broke: Vec::new(),
        })
    }

    /// Ends the agent's process group (stdio) or connection (socket).
    pub async fn close(&mut self) -> Option<String> {
        match &mut self.inner {
            Inner::Stdio(agent) => {
                let cleanup = agent.shutdown().await;
                let log = agent.stderr();
                Some(format!(
                    "stderr: {}; process group ended{}{}",
                    crate::text::count(log.total_bytes, "bytes"),
                    if cleanup.signalled.is_empty() {
                        " (it had exited)".to_string()
                    } else {
                        format!(" with {}", cleanup.signalled.join(" then "))
                    },
                    quoted_stderr(&log.tail)
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
                let (r, broke) = match &self.watch {
                    Some(watch) => liveness::send(watch, base, &request, limits).await,
                    None => (http::send(base, &request, limits).await, None),
                };
                self.broke.extend(broke);
                let r = r.map_err(|e| {
                    if matches!(e, http::Error::Timeout { .. }) {
                        self.log.timeouts.push(e.to_string());
                    }
                    e.to_string()
                })?;
                let ct = r.header("content-type").unwrap_or("").to_string();
                // Only a 2xx answer is the protocol's: a 404 page's label says nothing.
                let success = (200..300).contains(&r.status);
                self.log.http_answers += u64::from(success);
                if success
                    && !ct
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
                // Nothing ever came out: does it all come out at the end of its input?
                let at_eof = if persistent && silent_timeout(&answer, &self.log) {
                    Some(
                        agent
                            .output_at_eof(late_wait(deadline), EOF_GRACE.min(deadline))
                            .await,
                    )
                } else {
                    None
                };
                let answer = line_result(answer, &mut self.log, self.target.output(), at_eof)?;
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
                let watch = self.watch.as_ref();
                let sent = watch.map(|w| w.sent("a request line"));
                let answer = agent.exchange(&body, deadline).await;
                if let (Some(w), Some(sent)) = (watch, sent) {
                    let reply = liveness::Reply::of_line(&answer);
                    let ended = w.ended("a request line", sent, reply).await;
                    if reply.broke() {
                        self.broke.push(ended);
                    }
                }
                let at_eof = if silent_timeout(&answer, &self.log) {
                    Some(
                        agent
                            .output_at_eof(late_wait(deadline), EOF_GRACE.min(deadline))
                            .await,
                    )
                } else {
                    None
                };
                let answer = line_result(answer, &mut self.log, self.target.output(), at_eof)?;
                let text = answer.text.to_vec();
                if let Err(e) = serde_json::from_slice::<Value>(&text) {
                    return Err(not_one_json_line(&text, answer.line_no, false, &e));
                }
                Ok(text)
            }
        }
    }

    /// When the exchanges since the last call broke (refused, reset, closed).
    fn take_breaks(&mut self) -> Vec<Duration> {
        std::mem::take(&mut self.broke)
    }

    /// At the run's end: the cases that rest on exchanges an outage cut become skips saying so
    /// (`broke`: per case id, when its exchanges broke), and the outage gets its case
    /// (`agent.alive`, beside `agent.reachable`).
    async fn judge_liveness(
        &self,
        broke: &std::collections::HashMap<String, Vec<Duration>>,
        cases: &mut Vec<CaseResult>,
    ) {
        let Some(watch) = &self.watch else {
            return;
        };
        watch.at_end().await;
        const ALIVE: &str = "agent.alive";
        watch.skip_what_it_cut(cases, broke, ALIVE);
        cases.extend(watch.case(ALIVE, "agent", "POST /execute_task"));
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

/// Where a line agent's answers come out, for the hint of a silent timeout.
#[derive(Debug, Clone, Copy)]
enum Output {
    Stdout,
    Socket,
}

impl Output {
    /// What to ask, and what to do, when nothing at all has come out of the agent.
    /// How its input is ended, to see whether its output then comes out.
    fn end_of_input(self) -> &'static str {
        match self {
            Output::Stdout => "its stdin was closed",
            Output::Socket => "our side of the connection was shut down",
        }
    }

    /// The question of the hint, alone (for the cases skipped after it).
    fn question(self) -> &'static str {
        match self {
            Output::Stdout => "is stdout flushed?",
            Output::Socket => "is its output flushed?",
        }
    }

    fn unflushed_hint(self) -> &'static str {
        match self {
            Output::Stdout => {
                "is stdout flushed? Nothing has come back from the agent yet: a program whose \
                 stdout is a pipe often holds its lines in a buffer until it exits. Flush after \
                 each answer's line (`sys.stdout.flush()` or `print(…, flush=True)` in Python), \
                 or run it unbuffered (`python -u`, `PYTHONUNBUFFERED=1`, `stdbuf -oL COMMAND`)"
            }
            Output::Socket => {
                "is its output flushed? Nothing has come back on the connection yet: flush the \
                 writer after each answer's line (e.g. `f.flush()` on a Python \
                 `socket.makefile('w')`), or write to the socket directly"
            }
        }
    }
}

/// How long an agent that timed out without a byte is given to write its buffered output once
/// its input is ended (an interpreter's exit, on a busy machine).
const EOF_GRACE: Duration = Duration::from_secs(2);

/// How much longer an agent that timed out without a byte is waited for with its input still
/// open, before it is ended: an answer then is late, not buffered (taking a slow agent for a
/// buffering one would skip the rest of its run, asking the wrong question). Half the deadline
/// and a second, at most [`LATE_WAIT_MAX`]: an answer up to half as late again as the deadline
/// is told from a buffered one, and the turn still ends within --timeout and [`TURN_MARGIN`]
/// (it once waited the whole deadline again: 6 s for `--timeout 3s`, 132 s at the default).
fn late_wait(deadline: Duration) -> Duration {
    (deadline / 2 + Duration::from_secs(1)).min(LATE_WAIT_MAX)
}

/// The longest late wait.
const LATE_WAIT_MAX: Duration = Duration::from_secs(4);

/// How much longer than --timeout a turn (and a case of one turn) may take, stated in the
/// flag's help: the late wait and the grace at the end of input of an agent never heard from
/// (at most 6 s), and ending an agent left out of step by the turn before (its kill grace,
/// 0.5 s), with slack for a busy machine.
pub const TURN_MARGIN: Duration = Duration::from_secs(8);

/// The exchange timed out with 0 bytes back, and nothing ever came back before it.
fn silent_timeout(
    answer: &Result<crate::transport::lines::LineAnswer, LineError>,
    log: &ExchangeLog,
) -> bool {
    matches!(answer, Err(LineError::Timeout { got: 0, .. })) && !log.heard
}

/// A line transport's answer, as the channel reports it: the error's text (with the unflushed
/// hint when the agent timed out having never sent a byte), and what the log keeps of it.
/// `at_eof`: what the agent wrote after such a timeout — later with its input still open (a
/// slow agent), or only once its input was ended (its stdin closed, persistent stdio; our side
/// of the connection shut down, sockets): bytes then show its answers wait in a buffer, and the
/// run is stalled.
fn line_result(
    answer: Result<crate::transport::lines::LineAnswer, LineError>,
    log: &mut ExchangeLog,
    output: Output,
    at_eof: Option<AfterSilence>,
) -> Result<crate::transport::lines::LineAnswer, String> {
    let silent = silent_timeout(&answer, log);
    match &answer {
        Ok(_) | Err(LineError::TooLong { .. }) => log.heard = true,
        Err(LineError::Timeout { got, .. }) if *got > 0 => log.heard = true,
        Err(_) if matches!(at_eof, Some(AfterSilence::Late(_))) => log.heard = true,
        Err(_) => {}
    }
    answer.map_err(|e| {
        if let LineError::Exited {
            status,
            stderr_tail,
        } = &e
        {
            if log.count == 0 && !log.heard {
                log.not_started = true;
                let stderr = if stderr_tail.is_empty() {
                    " and nothing on stderr".to_string()
                } else {
                    format!("; stderr: {stderr_tail}")
                };
                return format!(
                    "the agent could not start: it exited ({}) at its very first request, \
                     before answering, with nothing on stdout{stderr}",
                    status.trim_end_matches(", before answering")
                );
            }
        }
        let LineError::Timeout { .. } = e else {
            return e.to_string();
        };
        log.timeouts.push(e.to_string());
        match at_eof {
            _ if !silent => e.to_string(),
            Some(AfterSilence::Late(bytes)) => format!(
                "{e}; {bytes} bytes came later, with its input still open: a slow answer, not a \
                 buffered one"
            ),
            Some(AfterSilence::AtEof(bytes)) if bytes > 0 => {
                log.silent = true;
                format!(
                    "{e}; when {} then, {bytes} bytes came out: its answers wait in a buffer \
                     until its input ends — {}",
                    output.end_of_input(),
                    output.unflushed_hint()
                )
            }
            _ => format!("{e} — {}", output.unflushed_hint()),
        }
    })
}

/// The last `n` characters of `text`, escaped (an excerpt of its end: "last" lines of a log).
fn last_chars(text: &str, n: usize) -> String {
    let total = text.chars().count();
    let tail: String = text.chars().skip(total.saturating_sub(n)).collect();
    let cut = if total > n {
        format!("[{} characters before] … ", total - n)
    } else {
        String::new()
    };
    format!("{cut}{}", excerpt_str(&tail, n))
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

impl Channel {
    /// Whether the agent can be reached at all: a connection (HTTP, sockets), or a program that
    /// exists (stdio). Ok says how; Err why not.
    async fn reachable(&self) -> Result<String, String> {
        let deadline = self.timeout;
        match &self.target {
            Target::Http { base, .. } => http::connect(base, deadline)
                .await
                .map(|t| format!("connected in {} ms", t.as_millis()))
                .map_err(|e| e.to_string()),
            Target::Socket { addr, .. } => {
                let started = Instant::now();
                let attempt = async {
                    match addr {
                        SocketAddrSpec::Tcp(a) => {
                            tokio::net::TcpStream::connect(a.as_str()).await.map(drop)
                        }
                        SocketAddrSpec::Unix(p) => {
                            tokio::net::UnixStream::connect(p).await.map(drop)
                        }
                    }
                };
                match tokio::time::timeout(deadline, attempt).await {
                    Ok(Ok(())) => Ok(format!("connected in {} ms", started.elapsed().as_millis())),
                    Ok(Err(e)) => Err(format!("cannot connect to {addr}: {e}")),
                    Err(_) => Err(format!(
                        "cannot connect to {addr}: no connection within {}",
                        humantime::format_duration(deadline)
                    )),
                }
            }
            Target::Stdio(config) => program_found(&config.command),
        }
    }
}

/// Whether the program of a stdio agent's command exists and may be run: a path, or a name on
/// PATH.
fn program_found(command: &str) -> Result<String, String> {
    use std::os::unix::fs::PermissionsExt;
    let argv = crate::transport::stdio::split_command(command)?;
    let program = argv.first().ok_or("the command is empty")?;
    let resolved = crate::transport::stdio::program_path(program);
    if resolved != std::ffi::OsStr::new(program) {
        return Ok(format!(
            "{program} is this kit itself ({})",
            std::path::Path::new(&resolved).display()
        ));
    }
    let runnable = |p: &std::path::Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.contains('/') {
        return if runnable(std::path::Path::new(program)) {
            Ok(format!("{program} is there to run"))
        } else {
            Err(format!("{program}: no such program, or not executable"))
        };
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|p| runnable(p))
        .map(|p| format!("{program} is {}", p.display()))
        .ok_or_else(|| format!("{program}: not found on PATH"))
}

impl Exchanger for Channel {
    async fn exchange(&mut self, request: &Value) -> Result<Vec<u8>, NoAnswer> {
        let started = Instant::now();
        self.log.last_request = Some(request.clone());
        let result = self.send(request).await.map_err(NoAnswer);
        self.log.count += 1;
        self.log.answered += u64::from(result.is_ok());
        if let Err(e) = &result {
            self.log.first_failure.get_or_insert_with(|| e.0.clone());
        }
        self.log.slowest = self.log.slowest.max(started.elapsed());
        self.log.last_answer = Some(match &result {
            Ok(b) => excerpt(b, 2_000),
            Err(e) => e.0.clone(),
        });
        result
    }
}

/// The case whose exchange timed out with 0 bytes back from an agent that had never sent one
/// (see [`ExchangeLog::silent`]). An agent that buffers its output answers nothing until it
/// exits, so every later exchange of the run would wait out its --timeout the same way (18
/// minutes of a run at the default): the cases that need one are skipped instead, naming it. An
/// agent that answered anything before is not stalled, nor one that writes nothing even at the
/// end of its input (it hangs, perhaps on that one request): each timeout is that exchange's own.
///
/// The same goes for a stdio agent that exited before answering the run's very first request
/// without a byte on stdout: it could not start (`python3 mistyped.py`: "can't open file"), and
/// each later exchange would start it again to end the same way — the one failure says so, with
/// its stderr, and the rest is skipped naming it, as for a program that is not there
/// (`agent.reachable`). One that answered anything before is not, nor one that dies later.
struct Stall {
    case: String,
    timeout: Duration,
    output: Output,
    not_started: bool,
}

impl Stall {
    /// After `case` was judged: the stall it revealed, if the channel has just gone silent or
    /// its agent could not start.
    fn after(case: &str, channel: &Channel) -> Option<Stall> {
        (channel.log.silent || channel.log.not_started).then(|| Stall {
            case: case.to_string(),
            timeout: channel.timeout,
            output: channel.target.output(),
            not_started: channel.log.not_started,
        })
    }

    /// Why a case that needs an exchange was not tried.
    fn skip_reason(&self) -> String {
        if self.not_started {
            return format!(
                "skipped: the agent could not start (see {}: it exited before answering its \
                 first request, with nothing on stdout): this exchange would end the same way \
                 ({})",
                self.case,
                self.remedy()
            );
        }
        format!(
            "skipped: {} got no byte back within {}, and the agent's output came only when {} \
             ({}): this exchange would time out the same way ({})",
            self.case,
            humantime::format_duration(self.timeout),
            self.output.end_of_input(),
            self.output.question(),
            self.remedy()
        )
    }

    /// What went wrong, in a few words.
    fn cause(&self) -> String {
        if self.not_started {
            "the agent could not start".into()
        } else {
            self.output.question().to_string()
        }
    }

    /// What would give the skipped cases something to judge.
    fn remedy(&self) -> &'static str {
        if self.not_started {
            "an agent that starts and answers its first request exercises this"
        } else {
            "an agent that flushes each answer's line exercises this"
        }
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
    Ok(probe(settings, on_case).await?)
}

async fn probe(
    settings: &TaskSettings,
    on_case: &(dyn Fn(&CaseResult) + Sync),
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
    let mut channel = Channel::new(&settings.target, settings.timeout, settings.max_body)?;
    let wanted = |id: &str| settings.wants(id);
    let mut cases = Vec::new();
    let mut answers: Vec<Value> = Vec::new();
    let mut governance_sent = false;
    // Turns per scenario, for the HTML report.
    let mut counts = Vec::new();
    let suite = builtin_suite()?;
    // The agent must be there at all; when it is not, every other case says so once, as a skip,
    // instead of failing on its own with the same cause.
    let mut unreachable = None;
    for spec in suite.cases().iter().filter(|c| is_reachability(c)) {
        if !wanted(&spec.id.value) {
            continue;
        }
        let t0 = Instant::now();
        let mut case = spec.case();
        match channel.reachable().await {
            Ok(note) => case.pass_noting(
                Evidence::new(1, settings.target.reached()),
                note,
                String::new,
            ),
            Err(why) => {
                case.fail(why);
                unreachable = Some(spec.id.value.clone());
            }
        }
        case.set_duration(t0.elapsed());
        on_case(&case);
        cases.push(case);
    }
    if let Some(need) = unreachable {
        let others = suite
            .cases()
            .iter()
            .filter(|c| !is_reachability(c))
            .map(CaseSpec::case)
            .chain(settings.scenarios.iter().flat_map(scenario_cases_unjudged));
        for mut c in others.filter(|c| wanted(&c.id)) {
            c.skip(format!(
                "skipped: it needs {need}, which failed (make the agent reachable to judge this)"
            ));
            on_case(&c);
            cases.push(c);
        }
        channel.close().await;
        return Ok(finish(settings, run_info, cases));
    }
    let run_values = RunValues::new(settings.seed);
    let mut stall: Option<Stall> = None;
    // Per case, when the exchanges it rests on broke: judged against the agent's liveness at
    // the end.
    let mut broke = std::collections::HashMap::new();
    for spec in suite.cases().iter().filter(|c| !is_reachability(c)) {
        let Some(exchange) = spec.exchange.as_ref().filter(|_| wanted(&spec.id.value)) else {
            continue;
        };
        if let Some(stall) = &stall {
            let mut case = spec.case();
            case.skip(stall.skip_reason());
            on_case(&case);
            cases.push(case);
            continue;
        }
        let template = suite.file.exchanges[exchange]
            .body
            .as_ref()
            .ok_or_else(|| {
                ProbeError::BuiltIn(format!("{}: exchange {exchange} has no body", suite.source))
            })?;
        let mut fill = Fill {
            run: &run_values,
            content: Content::new(settings.seed, exchange),
            protocol: suite.protocol,
        };
        let request = template::render(template, &mut fill)
            .map_err(|e| ProbeError::BuiltIn(e.to_string()))?;
        let t0 = Instant::now();
        let result = channel.exchange(&request).await;
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
                answers.push(answer);
            }
            Err(e) => case.fail(e),
        }
        if case.status == Status::Fail {
            case.exchange = exchange_of(&channel, &request);
        }
        stall = Stall::after(&case.id, &channel);
        broke.insert(case.id.clone(), channel.take_breaks());
        on_case(&case);
        cases.push(case);
    }
    for scenario in &settings.scenarios {
        let ids: Vec<String> = scenario_case_ids(scenario);
        if !ids.iter().any(|id| wanted(id)) {
            continue;
        }
        if let Some(stall) = &stall {
            for mut c in scenario_cases_unjudged(scenario) {
                if wanted(&c.id) {
                    c.skip(stall.skip_reason());
                    on_case(&c);
                    cases.push(c);
                }
            }
            continue;
        }
        let t0 = Instant::now();
        let transcript = harness::run_scenario(scenario, &mut channel, settings.max_turns).await;
        counts.push(crate::report::Count {
            label: scenario.id.clone(),
            value: transcript.turns.len() as u64,
            unit: "turns".into(),
        });
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
        stall = Stall::after(&format!("{}.completes", scenario.id), &channel);
        let breaks = channel.take_breaks();
        for mut c in scenario_cases(scenario, &transcript, &channel) {
            broke.insert(c.id.clone(), breaks.clone());
            c.set_duration(t0.elapsed());
            if wanted(&c.id) {
                on_case(&c);
                cases.push(c);
            }
        }
    }
    let transport_note = channel.close().await;
    let across = Across {
        settings,
        log: &channel.log,
        answers: &answers,
        governance_sent,
        transport_note,
        stall: stall.as_ref(),
    };
    for spec in suite
        .cases()
        .iter()
        .filter(|c| c.exchange.is_none() && !is_reachability(c))
    {
        if !wanted(&spec.id.value) {
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
                on_case(&c);
                cases.push(c);
            }
        }
    }
    channel.judge_liveness(&broke, &mut cases).await;
    let mut report = finish(settings, run_info, cases);
    report.counts = counts;
    Ok(report)
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

/// What every exchange of a run left, for the cases judged across it.
struct Across<'a> {
    settings: &'a TaskSettings,
    log: &'a ExchangeLog,
    answers: &'a [Value],
    governance_sent: bool,
    transport_note: Option<String>,
    stall: Option<&'a Stall>,
}

impl Across<'_> {
    /// Judges `case` by `rule`; None when there is nothing to report (no engine log: the
    /// agent is not a process of ours).
    fn judge(&self, rule: RunRule, mut case: CaseResult) -> Result<Option<CaseResult>, String> {
        let (log, answers) = (self.log, self.answers);
        let judged_answers = Evidence::new(answers.len() as u64, "answers");
        match rule {
            RunRule::WithinTimeout => {
                let timed = Evidence::new(log.answered, "exchanges answered");
                if let Some(stall) = self.stall.filter(|s| s.not_started) {
                    case.skip(format!(
                        "skipped: no exchange was answered, nor timed out: {} failed as {}, and \
                         no other was tried ({})",
                        stall.case,
                        stall.cause(),
                        stall.remedy()
                    ));
                } else if let Some(stall) = self.stall {
                    // Its one timeout is the stalled case's failure: failing it here too would
                    // count one cause twice.
                    case.skip(format!(
                        "skipped: the one exchange that timed out is {}'s failure ({}), and no \
                         other was tried (an agent that flushes each answer's line gives this \
                         answers to time)",
                        stall.case,
                        stall.output.question()
                    ));
                } else if log.timeouts.is_empty() {
                    let note = format!(
                        "{}; the slowest took {} ms (--timeout {})",
                        crate::text::count(log.count, "exchanges"),
                        log.slowest.as_millis(),
                        humantime::format_duration(self.settings.timeout)
                    );
                    case.pass_noting(timed, note, || self.no_answer("there is no answer to time"));
                } else {
                    case.fail_on(
                        Evidence::new(log.count, "exchanges"),
                        format!(
                            "{} of {} timed out, e.g. {}",
                            log.timeouts.len(),
                            crate::text::count(log.count, "exchanges"),
                            log.timeouts[0]
                        ),
                    );
                }
            }
            RunRule::Identity => match answers.iter().find_map(discover_name) {
                Some((name, source)) => case.pass_noting(
                    judged_answers,
                    format!("discovered {name:?} from `{source}`"),
                    String::new,
                ),
                None if answers.is_empty() => case.skip(self.no_answer("no name to look for")),
                None => case.fail_on(judged_answers, "no name in any answer: the harness falls back to --agent-name or the endpoint URL (add `agent_name` to every answer)"),
            },
            RunRule::HttpContentType => {
                let labelled = Evidence::new(log.http_answers, "HTTP answers with a 2xx status");
                if !matches!(self.settings.target, Target::Http { .. }) {
                    case.skip("not an HTTP agent: Content-Type is an HTTP answer's label (probe the agent over HTTP to judge it)");
                } else if log.wrong_types.is_empty() {
                    case.pass(labelled, || {
                        self.no_answer("no 2xx answer whose Content-Type to judge (an error page's label is not the protocol's)")
                    });
                } else {
                    case.fail_on(
                        labelled,
                        format!(
                            "{} labelled otherwise, e.g. {}",
                            crate::text::count(log.wrong_types.len() as u64, "answers"),
                            log.wrong_types[0]
                        ),
                    );
                }
            }
            RunRule::Sanitization => {
                let findings = sanitization_findings(answers)?;
                if answers.is_empty() {
                    case.skip(self.no_answer("no answer to look in"));
                } else if findings.is_empty() {
                    case.pass(judged_answers, String::new);
                } else {
                    let shown: Vec<&str> = findings.iter().take(8).map(String::as_str).collect();
                    case.fail_on(
                        judged_answers,
                        format!(
                            "{}: {}",
                            crate::text::count(findings.len() as u64, "findings"),
                            shown.join("; ")
                        ),
                    );
                }
            }
            RunRule::ReferenceHarness => {
                let mut notes: Vec<String> =
                    answers.iter().flat_map(reference_harness_notes).collect();
                notes.sort();
                notes.dedup();
                if self.governance_sent {
                    notes.push(REFERENCE_HARNESS_NOTE.to_string());
                }
                // INFO: a report, not a verdict (the console shows a MAY case's message even
                // when it passes).
                let note = if notes.is_empty() {
                    "nothing to note: every answer used the spec's forms".to_string()
                } else {
                    notes.join("\n")
                };
                case.pass_noting(judged_answers, note, || {
                    self.no_answer("no answer to compare with the reference harness's forms")
                });
            }
            RunRule::EngineLog => {
                let Some(note) = &self.transport_note else {
                    return Ok(None);
                };
                case.group = self.settings.target.group().to_string();
                let exchanges = Evidence::new(log.count, "exchanges with the stdio agent");
                case.pass_noting(exchanges, note.clone(), || {
                    format!("no exchange with the agent: nothing it wrote to stderr to report ({note})")
                });
            }
        }
        Ok(Some(case))
    }

    /// The reason of a case left with no answer to judge: `what`, how many exchanges got none
    /// and why the first did not, and what would give it one.
    fn no_answer(&self, what: &str) -> String {
        if let Some(stall) = self.stall {
            return format!(
                "{what}: {} got no answer ({}), and no other exchange was tried ({})",
                stall.case,
                stall.cause(),
                stall.remedy()
            );
        }
        let log = self.log;
        let why = match &log.first_failure {
            Some(e) => format!(", e.g. {}", excerpt_str(e, 200)),
            None => String::new(),
        };
        format!(
            "{what}: none of the {} got a valid answer{why} (an agent that answers \
             POST /execute_task, or its line, with one action exercises this)",
            crate::text::count(log.count, "exchanges")
        )
    }
}

/// The end of what the agent wrote to stderr, each line quoted (`  stderr> …`): the agent's
/// words, not the report's (a mock agent's own summary line must not read as this run's
/// verdict). Nothing when it wrote nothing.
fn quoted_stderr(tail: &str) -> String {
    let tail = tail.trim();
    if tail.is_empty() {
        return String::new();
    }
    let last = last_chars(tail, 400);
    let lines: Vec<&str> = last.lines().filter(|l| !l.trim().is_empty()).collect();
    let mut out = format!(
        "; its last {} of stderr, quoted:",
        crate::text::count(lines.len() as u64, "lines")
    );
    for line in lines {
        out.push_str(&format!("\n  stderr> {line}"));
    }
    out
}

/// Where the answers carry NUL characters, terminal escapes or injection patterns.
fn sanitization_findings(answers: &[Value]) -> Result<Vec<String>, String> {
    let patterns = crate::sanitization::patterns()?;
    Ok(answers
        .iter()
        .enumerate()
        .flat_map(|(i, a)| {
            crate::jsonpath::strings(a)
                .into_iter()
                .flat_map(|(path, text)| patterns.scan(&path, text))
                .map(move |f| format!("answer {}: {f}", i + 1))
                .collect::<Vec<_>>()
        })
        .collect())
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
        let e = Channel::new(&no_split, Duration::from_secs(1), 1000)
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
