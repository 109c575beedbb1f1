//! Mock agents over line transports: stdio (e.g. for `--agent-cmd "agent-tck mock agent
//! --protocol execute-task --stdio"`) and TCP / Unix sockets (newline-delimited JSON). Each line
//! is a request to the protocol's line endpoint ([`AgentProtocol::line_endpoint`]).
//!
//! A request ends at a newline or at the end of input, so the same mock serves a harness that
//! keeps one process and writes a line per turn (persistent) and one that starts a process per
//! turn, writes the request without a newline and closes stdin (per-turn). Answers are one line
//! each (unless `stdio-pretty`); nothing but answers goes to stdout.
//!
//! The peer is judged as over HTTP: every request and every answer goes to the protocol's
//! observer. While an answer is held back (slow, hang), the input is watched, so that a peer
//! that gives up (closes stdin or the connection) is seen doing so, and when. Two checks only a
//! stdio peer has are the engine's: whether it drains the agent's stderr (`stderr-flood`) and
//! whether it ends the agent's process group (`forks-and-exits`: the child left behind settles
//! that case, see [`super::linger`]). A content behaviour the agent was given that never took
//! effect (nothing the harness sent triggered it) is reported as such
//! (`agent.behaviors-applied`).
//!
//! Everything judged is an event: fed to the judge live and, for a stdio agent with `--json`,
//! written to a journal beside the report, so that the processes of one run (a per-turn harness
//! starts one a turn) leave one report (see [`super::line_journal`]).

use std::collections::HashMap;
use std::ffi::OsString;
use std::io::Write as _;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{
    AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader,
};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::agent::MockAgent;
use super::applied::Applied;
use super::behavior::{Kind, What};
use super::body::Body;
use super::decision::Decision;
use super::http1::{Delivered, Fault, Outcome, Plan};
use super::journal::AuthSeen;
use super::line_journal::{self, forked_case, Event};
use super::observe::Tally;
use super::peer_end::{self, Peer, PeerEnd, Source};
#[cfg(doc)]
use super::protocol::AgentProtocol;
use super::protocol::{Answered, PlatformExpect, PlatformObserver, Seen, Served};
use crate::report::{CaseResult, Level};
mod judged;

/// Longest request line read.
const MAX_REQUEST: u64 = 32 * 1024 * 1024;

/// How long a stderr flood may take before the harness is said not to drain stderr.
const FLOOD_WAIT: Duration = Duration::from_secs(5);

/// What the stdio-only behaviours of an agent ask for.
#[derive(Debug, Default, Clone, Copy)]
struct StdioQuirks {
    banner: bool,
    pretty: bool,
    exits_early: bool,
    stderr_flood: Option<usize>,
    forks_and_exits: bool,
}

impl StdioQuirks {
    fn of(agent: &MockAgent) -> StdioQuirks {
        let mut q = StdioQuirks::default();
        for item in &agent.items {
            match &item.what {
                What::Behavior(Kind::StdioBanner) => q.banner = true,
                What::Behavior(Kind::StdioPretty) => q.pretty = true,
                What::Behavior(Kind::ExitsEarly) => q.exits_early = true,
                What::Behavior(Kind::StderrFlood { bytes }) => q.stderr_flood = Some(*bytes),
                What::Behavior(Kind::ForksAndExits) => q.forks_and_exits = true,
                _ => {}
            }
        }
        q
    }

    /// What the agent does with a whole request before answering it: exits without an answer
    /// (`exits-early`), or floods stderr (`stderr-flood`).
    fn before_answer(&self, service: &LineService) {
        if self.exits_early {
            crate::errln!("agent-tck mock (exits-early): exiting without an answer");
            std::process::exit(3);
        }
        if let Some(bytes) = self.stderr_flood {
            service.flood_stderr(bytes);
        }
    }
}

/// A mock agent served over lines, with the observer that judges its peer (the harness) and
/// the checks only a stdio peer has.
pub struct LineService {
    pub agent: MockAgent,
    /// Arguments for the child `forks-and-exits` leaves (`mock linger …`: where the reports
    /// are, so that it can settle its case).
    pub linger_args: Vec<OsString>,
    /// How long the harness waits for an agent (`--expect-timeout`): the child
    /// `forks-and-exits` leaves expects the group ended within it.
    pub harness_timeout: Duration,
    /// What the harness is judged against (a fold of the journal starts a fresh observer).
    expect: PlatformExpect,
    seq: AtomicU64,
    judge: Judge,
    /// A flood still blocked: nothing more may be written to stderr (it would block).
    stuck: AtomicBool,
    /// Answers held back right now (seq → when the request came). Each is reported over once,
    /// by whoever takes it out: the input's end or a signal that ends the agent.
    held: Mutex<HashMap<u64, Instant>>,
    /// When the mock started (an end is told as "+7.2 s" from here).
    started: Instant,
    /// The harness that writes stdin (a stdio agent's peer).
    stdin_peer: Peer,
    /// Where the processes of one run share what they saw (stdio with --json; see
    /// [`line_journal`]).
    journal: Option<line_journal::Journal>,
}

/// Everything the harness is judged by: the protocol's observer, the stdio checks, the
/// behaviours that took effect. Fed live, or replayed from the journal.
struct Judge {
    observer: Box<dyn PlatformObserver>,
    /// Each stderr flood: written whole within [`FLOOD_WAIT`], or not.
    drains: Mutex<Tally>,
    forked: Mutex<Forked>,
    /// How often each of the agent's content behaviours took effect.
    applied: Applied,
}

/// `forks-and-exits`: the case each child left behind settles, and how the children settled it.
#[derive(Default)]
struct Forked {
    unsettled: Option<CaseResult>,
    /// PASS or FAIL, and why: one per child that settled.
    settled: Vec<(bool, String)>,
}

impl LineService {
    pub fn new(agent: MockAgent, observer: Box<dyn PlatformObserver>) -> LineService {
        LineService {
            agent,
            linger_args: Vec::new(),
            harness_timeout: super::linger::MAX,
            expect: PlatformExpect::timeout(super::linger::MAX),
            seq: AtomicU64::new(0),
            judge: Judge::new(observer),
            stuck: AtomicBool::new(false),
            held: Mutex::new(HashMap::new()),
            started: Instant::now(),
            stdin_peer: Peer::stdin(),
            journal: None,
        }
    }

    /// `agent`, judged by its protocol's observer against `expect`.
    pub fn judged(agent: MockAgent, expect: &PlatformExpect) -> LineService {
        let observer = super::observe::observer_for(agent.protocol, expect);
        let mut service = LineService::new(agent, observer);
        service.harness_timeout = expect.timeout;
        service.expect = *expect;
        service
    }

    /// Shares what this process sees with the other processes of the run through the journal
    /// beside the report `json` (see [`line_journal`]): what earlier ones saw is replayed now.
    pub fn keep_journal(&mut self, json: &std::path::Path) -> std::io::Result<()> {
        let window = self.expect.timeout + line_journal::STALE_AFTER;
        let (journal, records) =
            line_journal::Journal::open(&line_journal::path_for(json), Some(window))?;
        self.judge.replay(records, &self.agent, &self.seq);
        self.journal = Some(journal);
        Ok(())
    }

    /// Writes `event` (judged live already) to the journal, when there is one.
    fn record(&self, event: Event) {
        if let Some(j) = &self.journal {
            j.append(event);
        }
    }

    /// The verdicts so far: the observer's, then the stdio checks that had something to judge.
    /// When other processes of the run wrote to the journal meanwhile, the whole journal is
    /// folded afresh.
    pub fn cases(&self) -> Vec<CaseResult> {
        if let Some(records) = self.journal.as_ref().and_then(|j| j.if_others_appended()) {
            let fresh = Judge::new(super::observe::observer_for(
                self.agent.protocol,
                &self.expect,
            ));
            fresh.replay(records, &self.agent, &AtomicU64::new(0));
            return fresh.cases(&self.agent);
        }
        self.judge.cases(&self.agent)
    }

    /// Whether stderr is stuck behind a flood the harness does not read.
    pub fn stderr_stuck(&self) -> bool {
        self.stuck.load(Ordering::Relaxed)
    }

    /// A stdio agent was signalled to end (TERM, INT, HUP) while answers were held back: by the
    /// harness, it gave up on them now; by anyone else (a `timeout` wrapper, a supervisor, a
    /// terminal's Ctrl-C), the harness was ended from outside and gave up on nothing. The sender
    /// is read from the signal ([`peer_end::catch_senders`], set up before serving).
    pub fn signalled(&self) {
        let held: Vec<(u64, Instant)> = match self.held.lock() {
            Ok(mut h) => h.drain().collect(),
            Err(_) => return,
        };
        if held.is_empty() {
            return;
        }
        let end = match peer_end::caught() {
            Some((signal, sender)) => {
                self.stdin_peer
                    .signalled(signal, sender, self.started.elapsed())
            }
            None => PeerEnd::Unknown {
                why: "the agent was signalled, but the signal's sender was not caught".into(),
            },
        };
        for (seq, received) in held {
            self.answered(
                seq,
                received,
                Outcome::Hung,
                0,
                Some((end.clone(), Instant::now())),
            );
        }
    }

    fn hold(&self, seq: u64, received: Instant) {
        if let Ok(mut h) = self.held.lock() {
            h.insert(seq, received);
        }
    }

    /// Takes `seq` out of the answers held back: false when a signal took it first (and
    /// reported it).
    fn release(&self, seq: u64) -> bool {
        self.held.lock().is_ok_and(|mut h| h.remove(&seq).is_some())
    }

    /// A request and the answer planned for it.
    fn requested(&self, seen: &Seen<'_>, line: &[u8]) {
        self.judge.on_request(seen);
        self.record(Event::Request {
            seq: seen.seq,
            agent: seen.agent.to_string(),
            line: String::from_utf8_lossy(line).into_owned(),
            planned: line_journal::Planned::of(seen.decision),
            answer: line_journal::kept_answer(seen.answer),
            answer_len: seen.answer.len() as u64,
        });
    }

    /// A request that never arrived whole.
    fn incomplete(&self, endpoint: &str, what: String) {
        let agent = self.agent.name();
        self.judge.observer.on_incomplete(agent, endpoint, &what);
        self.record(Event::Incomplete {
            agent: agent.to_string(),
            endpoint: endpoint.to_string(),
            what,
        });
    }

    /// Tells the observer an answer is over (`ended`: who ended the wait, when the peer's side
    /// did; then `over`, when the input ended, is the end of the wait, not the look after it).
    fn answered(
        &self,
        seq: u64,
        received: Instant,
        outcome: Outcome,
        bytes: u64,
        ended: Option<(PeerEnd, Instant)>,
    ) {
        let (ended, over) = match ended {
            Some((end, at)) => (Some(end), at),
            None => (None, Instant::now()),
        };
        let total = over.saturating_duration_since(received);
        let delivered = Delivered {
            outcome,
            bytes,
            ttfb: (bytes > 0).then_some(total),
            total,
        };
        self.judge.observer.on_answer(&Answered {
            seq,
            agent: self.agent.name(),
            endpoint: self.agent.protocol.line_endpoint().unwrap_or_default(),
            task: "",
            received: received.into_std(),
            delivered: &delivered,
            ended: ended.as_ref(),
            at: std::time::Instant::now(),
        });
        self.record(Event::Answered {
            seq,
            agent: self.agent.name().to_string(),
            outcome: outcome.word().to_string(),
            bytes,
            total_us: total.as_micros() as u64,
            ended,
        });
    }

    /// The agent left a child that settles `case`.
    fn forked(&self, case: CaseResult) {
        self.judge.on_forked(case.clone());
        self.record(Event::Forked { case });
    }

    /// Writes `bytes` to stderr, timed: written whole within [`FLOOD_WAIT`], or not (then the
    /// writer thread stays blocked, and stderr is left alone from then on).
    fn flood_stderr(&self, bytes: usize) {
        if self.stderr_stuck() {
            return;
        }
        let written = Arc::new(AtomicU64::new(0));
        let (done, finished) = std::sync::mpsc::channel::<()>();
        let counter = written.clone();
        std::thread::spawn(move || {
            let chunk = [b'#'; 64 * 1024];
            let mut err = std::io::stderr().lock();
            let mut left = bytes;
            while left > 0 {
                let n = left.min(chunk.len());
                if err.write_all(&chunk[..n]).is_err() {
                    break;
                }
                counter.fetch_add(n as u64, Ordering::Relaxed);
                left -= n;
            }
            let _ = err.write_all(b"\n");
            let _ = done.send(());
        });
        let whole = finished.recv_timeout(FLOOD_WAIT).is_ok();
        self.stuck.fetch_or(!whole, Ordering::Relaxed);
        let got = written.load(Ordering::Relaxed);
        let message = format!(
            "{got} of {} written to stderr in {} s: the harness does not read the agent's stderr as it comes (a full pipe blocks the agent)",
            crate::text::count(bytes as u64, "bytes"),
            FLOOD_WAIT.as_secs()
        );
        self.judge.on_flood(whole, &message);
        self.record(Event::Flood { whole, message });
    }
}

/// Serves requests on stdin, answers on stdout, until stdin ends. `after_each` runs after every
/// answer (the stdio mock rewrites its reports then: a harness may kill it at any moment).
pub async fn serve_stdio(
    service: Arc<LineService>,
    after_each: &(dyn Fn(&LineService) + Send + Sync),
) -> std::io::Result<()> {
    let quirks = StdioQuirks::of(&service.agent);
    // The sender of a signal that ends the agent tells who ended the harness's wait.
    peer_end::catch_senders();
    serve_lines(
        &service,
        &service.stdin_peer,
        tokio::io::stdin(),
        tokio::io::stdout(),
        quirks,
        after_each,
    )
    .await
}

/// Serves each connection of a TCP listener until `stop`.
pub async fn serve_tcp(
    service: Arc<LineService>,
    listener: tokio::net::TcpListener,
    stop: CancellationToken,
) {
    let accept = || async {
        let (stream, peer) = listener.accept().await?;
        // Answers go out in one write each; don't let Nagle hold them back.
        let _ = stream.set_nodelay(true);
        let source = match stream.local_addr() {
            Ok(local) => Source::Tcp { local, peer },
            Err(e) => Source::Nowhere(format!("the connection's own address: {e}")),
        };
        Ok((stream, source))
    };
    serve_connections(service, accept, stop).await;
}

/// Serves each connection of a Unix socket until `stop`.
#[cfg(unix)]
pub async fn serve_unix(
    service: Arc<LineService>,
    listener: tokio::net::UnixListener,
    stop: CancellationToken,
) {
    let accept = || async {
        let (stream, _) = listener.accept().await?;
        let source = match stream.peer_cred() {
            Ok(cred) => Source::Pid(cred.pid()),
            Err(e) => Source::Nowhere(format!("the socket's peer credentials: {e}")),
        };
        Ok((stream, source))
    };
    serve_connections(service, accept, stop).await;
}

/// Accepts with `accept` until `stop`, serving each connection's lines on its own task; returns
/// when every connection is done.
async fn serve_connections<S, A, F>(service: Arc<LineService>, accept: A, stop: CancellationToken)
where
    S: AsyncRead + AsyncWrite + Send + 'static,
    A: Fn() -> F,
    F: std::future::Future<Output = std::io::Result<(S, Source)>>,
{
    let tracker = tokio_util::task::TaskTracker::new();
    loop {
        let accepted = tokio::select! {
            _ = stop.cancelled() => break,
            a = accept() => a,
        };
        let Ok((stream, source)) = accepted else {
            // Out of file descriptors and the like: back off rather than spin.
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        };
        let service = service.clone();
        let stop = stop.clone();
        tracker.spawn(async move {
            let (r, w) = tokio::io::split(stream);
            let peer = Peer::new(source);
            // A moment past the stop: an input that ended just before it is still judged
            // (whose end it was takes a look at the harness's process, see `Peer::closed`).
            let stopped = async {
                stop.cancelled().await;
                tokio::time::sleep(peer_end::LAST_LOOK).await;
            };
            tokio::select! {
                // An answer still held back is judged by the observer as still awaited.
                _ = stopped => {}
                _ = serve_lines(&service, &peer, r, w, StdioQuirks::default(), &|_| {}) => {}
            }
        });
    }
    tracker.close();
    tracker.wait().await;
}

/// Serves one connection's lines, as the socket mocks do (no stdio quirks); also what the fuzz
/// targets feed bytes from memory.
pub(crate) async fn serve_stream<R, W>(
    service: &LineService,
    reader: R,
    writer: W,
) -> std::io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let peer = Peer::new(Source::Nowhere("bytes from memory".into()));
    serve_lines(
        service,
        &peer,
        reader,
        writer,
        StdioQuirks::default(),
        &|_| {},
    )
    .await
}

/// How the wait for an answer's moment ended.
enum Waited {
    /// The moment came.
    Due,
    /// The input ended first (stdin or the connection closed): the peer gave up.
    InputEnded,
    /// The peer sent its next request while a hanging agent held its answer: it gave up on it.
    NextRequest,
}

/// Waits until `until` (forever when None), watching `reader` for the end of input.
async fn wait_watching<R: AsyncBufRead + Unpin>(reader: &mut R, until: Option<Instant>) -> Waited {
    if until.is_some_and(|at| at <= Instant::now()) {
        return Waited::Due;
    }
    let due = async {
        match until {
            Some(at) => tokio::time::sleep_until(at).await,
            None => std::future::pending().await,
        }
    };
    tokio::pin!(due);
    tokio::select! {
        biased;
        _ = &mut due => Waited::Due,
        filled = reader.fill_buf() => match filled {
            Ok([]) | Err(_) => Waited::InputEnded,
            Ok(_) if until.is_none() => Waited::NextRequest,
            // A request sent ahead: the answer still goes out when it is due.
            Ok(_) => {
                due.await;
                Waited::Due
            }
        },
    }
}

async fn serve_lines<R, W>(
    service: &LineService,
    peer: &Peer,
    reader: R,
    mut writer: W,
    quirks: StdioQuirks,
    after_each: &(dyn Fn(&LineService) + Send + Sync),
) -> std::io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let agent = &service.agent;
    let endpoint = agent.protocol.line_endpoint().unwrap_or_default();
    let schema = agent
        .protocol
        .endpoint(endpoint)
        .and_then(|e| e.request_schema);
    // One channel per stdin or connection (see `Body::on_channel`).
    static CHANNELS: AtomicU64 = AtomicU64::new(0);
    let channel = CHANNELS.fetch_add(1, Ordering::Relaxed);
    let mut reader = BufReader::new(reader);
    let mut first = true;
    while let Some((line, ended_by_newline)) = read_request(&mut reader).await? {
        let received = Instant::now();
        let body = Body::checked(&line, schema).on_channel(channel);
        if !ended_by_newline && body.admitted().is_none() && body.value().is_none() {
            // The input ended in the middle of a request: a peer that died writing it (in
            // per-turn mode a whole request ends at the end of input too, but it is JSON).
            service.incomplete(endpoint, cut_short(&line));
            after_each(service);
            return Ok(());
        }
        quirks.before_answer(service);
        let (plan, decision) = agent.respond_body(endpoint, &body);
        let seq = service.seq.fetch_add(1, Ordering::Relaxed);
        record_request(
            service, endpoint, seq, &body, &plan, &decision, received, &line,
        );
        let hang = matches!(plan.fault, Fault::Hang | Fault::Blackhole);
        let due = (!hang).then(|| received + plan.ttfb + plan.body_delay);
        let waited = hold_answer(
            service,
            peer,
            &mut reader,
            seq,
            received,
            ended_by_newline,
            due,
        )
        .await;
        let over =
            match settle_wait(service, peer, seq, received, waited, hang, due, after_each).await {
                Settled::Answer { over } => over,
                Settled::NextRequest => continue,
                Settled::Stop => return Ok(()),
            };
        if first && quirks.banner {
            write_banner(&mut writer).await?;
        }
        first = false;
        let out = answer_line(&plan.response.body, quirks.pretty);
        let written = write_answer(&mut writer, &out).await;
        if !over {
            let outcome = if written.is_ok() {
                Outcome::Complete
            } else {
                Outcome::PeerGone
            };
            service.answered(seq, received, outcome, out.len() as u64, None);
            after_each(service);
        }
        written?;
        if quirks.forks_and_exits {
            fork_and_exit(service, after_each);
        }
    }
    Ok(())
}

/// What a request cut short by the end of input was: its size and its start.
fn cut_short(line: &[u8]) -> String {
    format!(
        "{} without a newline, not a whole JSON request, then the end of input: {}",
        crate::text::count(line.len() as u64, "bytes"),
        crate::text::excerpt(line, 80)
    )
}

/// Reads the next request that is not blank, to its newline (taken off) or the end of input, and
/// whether a newline ended it; None once the input has ended.
async fn read_request<R: AsyncBufRead + Unpin>(
    reader: &mut R,
) -> std::io::Result<Option<(Vec<u8>, bool)>> {
    loop {
        let mut line = Vec::new();
        let n = (&mut *reader)
            .take(MAX_REQUEST)
            .read_until(b'\n', &mut line)
            .await?;
        if n == 0 {
            return Ok(None);
        }
        let ended_by_newline = line.last() == Some(&b'\n');
        if ended_by_newline {
            line.pop();
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        return Ok(Some((line, ended_by_newline)));
    }
}

/// Tells the observer of a request it can read (one that is JSON), with the answer planned.
#[allow(clippy::too_many_arguments)]
fn record_request(
    service: &LineService,
    endpoint: &str,
    seq: u64,
    body: &Body<'_>,
    plan: &Plan,
    decision: &Decision,
    received: Instant,
    line: &[u8],
) {
    let Some(findings) = body.findings("the request is not JSON") else {
        return;
    };
    let agent = &service.agent;
    let id = agent
        .protocol
        .request_id_field()
        .and_then(|field| body.str_member(field));
    let seen = Seen {
        seq,
        agent: agent.name(),
        expects_key: false,
        endpoint,
        auth: AuthSeen::None,
        key_print: 0,
        task: id.as_deref().unwrap_or(""),
        body,
        schema_findings: &findings,
        decision,
        answer: &plan.response.body,
        at: received.into_std(),
    };
    service.requested(&seen, line);
}

/// Holds the answer until `due` (forever when None), watching the input meanwhile when there is
/// any left to watch.
async fn hold_answer<R: AsyncBufRead + Unpin>(
    service: &LineService,
    peer: &Peer,
    reader: &mut R,
    seq: u64,
    received: Instant,
    ended_by_newline: bool,
    due: Option<Instant>,
) -> Waited {
    service.hold(seq, received);
    if due.is_none_or(|at| at > Instant::now()) {
        // The harness is looked up while it waits (once its end is closed, its process
        // may be gone from /proc's tables): who ends the wait is judged by it.
        let _ = peer.processes();
    }
    // A request that ended at the end of input (per-turn stdio) has no input left to watch:
    // its end says nothing about the peer giving up (a signal does, see `signalled`).
    if ended_by_newline {
        wait_watching(reader, due).await
    } else {
        match due {
            Some(at) => tokio::time::sleep_until(at).await,
            None => std::future::pending().await,
        }
        Waited::Due
    }
}

/// What comes after the wait for an answer's moment.
enum Settled {
    /// The answer goes out; `over` when its outcome is already reported (or a signal took it).
    Answer { over: bool },
    /// The peer moved on to its next request: the held answer is dropped.
    NextRequest,
    /// The input ended on a hanging agent: nothing more to serve.
    Stop,
}

/// Reports how the wait ended when the peer ended it (unless a signal took the request first),
/// and says what comes next.
#[allow(clippy::too_many_arguments)]
async fn settle_wait(
    service: &LineService,
    peer: &Peer,
    seq: u64,
    received: Instant,
    waited: Waited,
    hang: bool,
    due: Option<Instant>,
    after_each: &(dyn Fn(&LineService) + Send + Sync),
) -> Settled {
    // The input ended: by the harness giving up, or by its process's end.
    let over = Instant::now();
    let ended = match waited {
        Waited::InputEnded => Some((peer.closed(service.started).await, over)),
        Waited::NextRequest => Some((PeerEnd::GaveUp, over)),
        Waited::Due => None,
    };
    // Taken by a signal meanwhile: reported there.
    let mine = service.release(seq);
    let mut over = !mine;
    match waited {
        Waited::Due => {}
        Waited::InputEnded if hang => {
            if mine {
                service.answered(seq, received, Outcome::Hung, 0, ended);
                after_each(service);
            }
            return Settled::Stop;
        }
        Waited::InputEnded => {
            // It closed its side (or its end closed it): the wait is over now. (A peer that
            // only half-closed still gets the answer when it is due; a pipe's closed reader
            // refuses it.)
            if mine {
                service.answered(seq, received, Outcome::PeerGone, 0, ended);
                after_each(service);
            }
            over = true;
            if let Some(at) = due {
                tokio::time::sleep_until(at).await;
            }
        }
        Waited::NextRequest => {
            if mine {
                service.answered(seq, received, Outcome::Hung, 0, ended);
                after_each(service);
            }
            return Settled::NextRequest;
        }
    }
    Settled::Answer { over }
}

/// The answer as written: its body (pretty-printed for `stdio-pretty`, when it is JSON) and its
/// newline. One write for both: two would meet Nagle's algorithm and the peer's delayed ACK
/// (40 ms a turn over TCP).
fn answer_line(body: &[u8], pretty: bool) -> Vec<u8> {
    let mut out = if pretty {
        serde_json::from_slice::<Value>(body)
            .and_then(|v| serde_json::to_vec_pretty(&v))
            .unwrap_or_else(|_| body.to_vec())
    } else {
        body.to_vec()
    };
    out.push(b'\n');
    out
}

/// Writes the banner a `stdio-banner` agent puts before its first answer.
async fn write_banner<W: AsyncWrite + Unpin>(writer: &mut W) -> std::io::Result<()> {
    writer
        .write_all(b"agent-tck mock agent v0.1 starting up (stdio-banner)\n")
        .await
}

/// Writes an answer line and flushes it.
async fn write_answer<W: AsyncWrite + Unpin>(writer: &mut W, out: &[u8]) -> std::io::Result<()> {
    writer.write_all(out).await?;
    writer.flush().await
}

/// Leaves a child that holds stdout open, then exits: a harness that reads stdout to its end
/// would wait for the child; one that kills the process group is done. The child
/// (`agent-tck mock linger`) settles the case [`FORKED_CASE`] in the reports: PASS when the
/// group is signalled, FAIL when it outlives the harness's end of stdout.
fn fork_and_exit(service: &LineService, after_each: &(dyn Fn(&LineService) + Send + Sync)) -> ! {
    let child = std::env::current_exe().and_then(|exe| {
        let mut command = std::process::Command::new(exe);
        command
            .args(["mock", "linger"])
            .args(&service.linger_args)
            .env(
                super::linger::HARNESS_PID,
                std::os::unix::process::parent_id().to_string(),
            )
            .env(
                super::linger::BOUND_MS,
                service.harness_timeout.as_millis().to_string(),
            )
            .stdin(std::process::Stdio::null());
        // The child starts with the ending signals blocked, and unblocks them once it can catch
        // them: a harness that ends the group the moment the agent exits is still seen doing so.
        use std::os::unix::process::CommandExt;
        // SAFETY: between fork and exec only async-signal-safe calls (sigprocmask and the
        // sigset helpers), on a set local to the closure.
        unsafe {
            command.pre_exec(|| {
                super::linger::block_ending_signals(libc::SIG_BLOCK);
                Ok(())
            });
        }
        command.spawn()
    });
    let mut case = CaseResult::new(
        super::linger::FORKED_CASE,
        "stdio",
        Level::Must,
        "the harness ends the agent's whole process group (a child left holding stdout is gone)",
        "Local Subprocess Protocol (the agent is a process the harness starts and must end)",
    );
    match &child {
        Ok(c) => case.skip(format!(
            "not settled: the agent left a child (pid {}) holding stdout and exited; the child \
             settles this case (PASS when the harness that started the agent signals the group \
             within --expect-timeout + {grace} s, FAIL on a signal from anyone else, or when it \
             outlives the harness's end of stdout by {grace} s). Still skipped: it was killed \
             outright (SIGKILL, which ends the group too) or the report was read before it \
             settled",
            c.id(),
            grace = super::linger::GRACE.as_secs()
        )),
        Err(e) => case.skip(format!("cannot leave a child behind: {e}")),
    }
    service.forked(case);
    after_each(service);
    std::process::exit(0);
}
