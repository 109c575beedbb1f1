//! One transport as the harness loop sees it ([`Channel`]): HTTP, stdio or a socket, every
//! exchange through the run's tape, with what the cross-cutting cases need kept in its log; and
//! the stall that ends a run early (an agent whose output never comes, or that cannot start).

use super::*;

/// One transport, as the harness loop sees it, keeping what the cross-cutting cases need.
pub struct Channel {
    pub(super) inner: Inner,
    pub(super) timeout: Duration,
    pub(super) max_body: usize,
    pub(super) target: Target,
    /// Every exchange: (elapsed, outcome); the slowest and the timeouts.
    pub log: ExchangeLog,
    /// Whether an HTTP agent is still there ([`crate::transport::liveness`]).
    pub(super) watch: Option<Watch>,
    /// When the exchanges since the last [`take_breaks`](Self::take_breaks) broke.
    pub(super) broke: Vec<Duration>,
    /// Where the exchanges are recorded, or replayed from.
    pub(super) tape: Option<Arc<Tape>>,
    /// How long the calls of the exchange under way took, as recorded (a replay's time).
    pub(super) took: Duration,
}

/// The agent as a recording names it.
pub(super) fn peer() -> Party {
    Party::Agent(super::super::NAME.to_string())
}

pub(super) enum Inner {
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
    pub fn new(
        target: &Target,
        timeout: Duration,
        max_body: usize,
        tape: Option<Arc<Tape>>,
    ) -> Result<Channel, ProbeError> {
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
        }
        .map(|watch| watch.taped(tape.clone(), peer()));
        Ok(Channel {
            inner,
            timeout,
            max_body,
            target: target.clone(),
            log: ExchangeLog::default(),
            watch,
            broke: Vec::new(),
            tape,
            took: Duration::ZERO,
        })
    }

    pub(super) fn tape(&self) -> Option<&Tape> {
        self.tape.as_deref()
    }

    pub(super) fn replaying(&self) -> bool {
        self.tape().is_some_and(Tape::replaying)
    }

    /// Ends the agent's process group (stdio) or connection (socket).
    pub async fn close(&mut self) -> Option<String> {
        let call = line_call(peer(), "(end of the run)", b"");
        let tape = self.tape.clone();
        through(tape.as_deref(), call, async {
            Note(self.close_live().await)
        })
        .await
        .0
    }

    pub(super) async fn close_live(&mut self) -> Option<String> {
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

    pub(super) async fn send(&mut self, request: &Value) -> Result<Vec<u8>, String> {
        let body = serde_json::to_vec(request).unwrap_or_default();
        match &self.inner {
            Inner::Http { base, api_key } => {
                let (base, api_key) = (base.clone(), api_key.clone());
                self.send_http(&base, api_key.as_deref(), body).await
            }
            Inner::Stdio(_) | Inner::Socket(_) => self.send_line(&body).await,
        }
    }

    /// One POST /execute_task: its body, or why there is no answer to read.
    async fn send_http(
        &mut self,
        base: &BaseUrl,
        api_key: Option<&str>,
        body: Vec<u8>,
    ) -> Result<Vec<u8>, String> {
        let deadline = self.timeout;
        let mut headers = vec![("content-type".to_string(), "application/json".to_string())];
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
            Some(watch) => {
                let (r, broke, took) = liveness::send_timed(watch, base, &request, limits).await;
                self.took += took;
                (r, broke)
            }
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
        if success && !crate::protocols::execute_task::model::labelled_json(&ct) {
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

    /// One request line (stdio, socket): the answer's line, or why there is none to read.
    async fn send_line(&mut self, body: &[u8]) -> Result<Vec<u8>, String> {
        let deadline = self.timeout;
        match &mut self.inner {
            Inner::Http { .. } => Err("an HTTP agent takes no request line".to_string()),
            Inner::Stdio(agent) => {
                let persistent =
                    matches!(&self.target, Target::Stdio(c) if c.mode == StdioMode::Persistent);
                let (tape, took) = (self.tape.as_deref(), &mut self.took);
                let live = agent.exchange(body, deadline);
                let answer = taped_line(tape, took, STDIN, body, live).await;
                // Nothing ever came out: does it all come out at the end of its input?
                let at_eof = if persistent && silent_timeout(&answer, &self.log) {
                    let live = agent.output_at_eof(late_wait(deadline), EOF_GRACE.min(deadline));
                    Some(taped_line(tape, took, END_OF_INPUT, b"", live).await)
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
                let (tape, took) = (self.tape.as_deref(), &mut self.took);
                let live = agent.exchange(body, deadline);
                let answer = taped_line(tape, took, SOCKET, body, live).await;
                if let (Some(w), Some(sent)) = (watch, sent) {
                    let reply = liveness::Reply::of_line(&answer);
                    let ended = w.ended("a request line", sent, reply).await;
                    if reply.broke() {
                        self.broke.push(ended);
                    }
                }
                let at_eof = if silent_timeout(&answer, &self.log) {
                    let live = agent.output_at_eof(late_wait(deadline), EOF_GRACE.min(deadline));
                    Some(taped_line(tape, took, END_OF_INPUT, b"", live).await)
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
    pub(super) fn take_breaks(&mut self) -> Vec<Duration> {
        std::mem::take(&mut self.broke)
    }

    /// At the run's end: the cases that rest on exchanges an outage cut become skips saying so
    /// (`broke`: per case id, when its exchanges broke), and the outage gets its case
    /// (`agent.alive`, beside `agent.reachable`).
    pub(super) async fn judge_liveness(
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
    pub(super) fn reproduce(&self, request: &Value) -> String {
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

/// Where a line goes, and what ends a silent agent's input, as a recording names them.
pub(super) const STDIN: &str = "stdin";
pub(super) const SOCKET: &str = "the socket";
pub(super) const END_OF_INPUT: &str = "(end of input)";

/// A call of a line agent (stdio, socket) through `tape`, its time added to `took`.
pub(super) async fn taped_line<T: Taped>(
    tape: Option<&Tape>,
    took: &mut Duration,
    endpoint: &str,
    line: &[u8],
    live: impl std::future::Future<Output = T>,
) -> T {
    let call = line_call(peer(), endpoint, line);
    let (result, t) = through_timed(tape, call, live).await;
    *took += t;
    result
}

/// Where a line agent's answers come out, for the hint of a silent timeout.
#[derive(Debug, Clone, Copy)]
pub(super) enum Output {
    Stdout,
    Socket,
}

impl Output {
    /// What to ask, and what to do, when nothing at all has come out of the agent.
    /// How its input is ended, to see whether its output then comes out.
    pub(super) fn end_of_input(self) -> &'static str {
        match self {
            Output::Stdout => "its stdin was closed",
            Output::Socket => "our side of the connection was shut down",
        }
    }

    /// The question of the hint, alone (for the cases skipped after it).
    pub(super) fn question(self) -> &'static str {
        match self {
            Output::Stdout => "is stdout flushed?",
            Output::Socket => "is its output flushed?",
        }
    }

    pub(super) fn unflushed_hint(self) -> &'static str {
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
pub(super) const EOF_GRACE: Duration = Duration::from_secs(2);

/// How much longer an agent that timed out without a byte is waited for with its input still
/// open, before it is ended: an answer then is late, not buffered (taking a slow agent for a
/// buffering one would skip the rest of its run, asking the wrong question). Half the deadline
/// and a second, at most [`LATE_WAIT_MAX`]: an answer up to half as late again as the deadline
/// is told from a buffered one, and the turn still ends within --timeout and [`TURN_MARGIN`]
/// (it once waited the whole deadline again: 6 s for `--timeout 3s`, 132 s at the default).
pub(super) fn late_wait(deadline: Duration) -> Duration {
    (deadline / 2 + Duration::from_secs(1)).min(LATE_WAIT_MAX)
}

/// The longest late wait.
pub(super) const LATE_WAIT_MAX: Duration = Duration::from_secs(4);

/// How much longer than --timeout a turn (and a case of one turn) may take, stated in the
/// flag's help: the late wait and the grace at the end of input of an agent never heard from
/// (at most 6 s), and ending an agent left out of step by the turn before (its kill grace,
/// 0.5 s), with slack for a busy machine.
pub const TURN_MARGIN: Duration = Duration::from_secs(8);

/// The exchange timed out with 0 bytes back, and nothing ever came back before it.
pub(super) fn silent_timeout(
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
pub(super) fn line_result(
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
pub(super) fn last_chars(text: &str, n: usize) -> String {
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
pub(super) fn not_one_json_line(
    text: &[u8],
    line_no: u64,
    persistent: bool,
    e: &serde_json::Error,
) -> String {
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
    pub(super) async fn reachable(&self) -> Result<String, String> {
        let call = line_call(peer(), "(can it be reached?)", b"");
        through(self.tape(), call, self.reachable_live()).await
    }

    pub(super) async fn reachable_live(&self) -> Result<String, String> {
        let deadline = self.timeout;
        match &self.target {
            // Through the tape above: the watch's own would record it twice.
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
pub(super) fn program_found(command: &str) -> Result<String, String> {
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
        self.took = Duration::ZERO;
        self.log.last_request = Some(request.clone());
        let result = self.send(request).await.map_err(NoAnswer);
        self.log.count += 1;
        self.log.answered += u64::from(result.is_ok());
        if let Err(e) = &result {
            self.log.first_failure.get_or_insert_with(|| e.0.clone());
        }
        // A replay's turn took what its recorded calls took.
        let took = if self.replaying() {
            self.took
        } else {
            started.elapsed()
        };
        self.log.slowest = self.log.slowest.max(took);
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
pub(super) struct Stall {
    pub(super) case: String,
    pub(super) timeout: Duration,
    pub(super) output: Output,
    pub(super) not_started: bool,
}

impl Stall {
    /// After `case` was judged: the stall it revealed, if the channel has just gone silent or
    /// its agent could not start.
    pub(super) fn after(case: &str, channel: &Channel) -> Option<Stall> {
        (channel.log.silent || channel.log.not_started).then(|| Stall {
            case: case.to_string(),
            timeout: channel.timeout,
            output: channel.target.output(),
            not_started: channel.log.not_started,
        })
    }

    /// Why a case that needs an exchange was not tried.
    pub(super) fn skip_reason(&self) -> String {
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
    pub(super) fn cause(&self) -> String {
        if self.not_started {
            "the agent could not start".into()
        } else {
            self.output.question().to_string()
        }
    }

    /// What would give the skipped cases something to judge.
    pub(super) fn remedy(&self) -> &'static str {
        if self.not_started {
            "an agent that starts and answers its first request exercises this"
        } else {
            "an agent that flushes each answer's line exercises this"
        }
    }
}

/// The end of what the agent wrote to stderr, each line quoted (`  stderr> …`): the agent's
/// words, not the report's (a mock agent's own summary line must not read as this run's
/// verdict). Nothing when it wrote nothing.
pub(super) fn quoted_stderr(tail: &str) -> String {
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
