//! Stub agents and helpers shared by the tests.

#![allow(dead_code)]

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use crate::stub_server::{self as server, Running};
use agent_tck::mock::{Reply, Responder};
use agent_tck::probe::{self, ProbeSettings};
use agent_tck::protocols::roundtable::reference::ReferenceAgent;
use agent_tck::report::{CaseResult, Report, Status};
use agent_tck::transport::http::BaseUrl;
use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, Method, Uri};
use axum::response::Response;
use axum::Router;
use serde_json::Value;
use tokio::net::{TcpListener, TcpStream};

pub const SEED: u64 = 42;

/// Where a round-table behaviour list is parsed (fleet files, `--behavior`).
pub fn roundtable() -> agent_tck::mock::behavior::For<'static> {
    agent_tck::mock::behavior::For {
        protocol: &agent_tck::protocols::roundtable::Agents,
        others: &[],
    }
}

/// The same for execute_task.
pub fn execute_task() -> agent_tck::mock::behavior::For<'static> {
    agent_tck::mock::behavior::For {
        protocol: &agent_tck::protocols::execute_task::Agents,
        others: &[],
    }
}
pub const KEY: &str = "s3cret-test-key";

fn loopback() -> SocketAddr {
    SocketAddr::from((Ipv4Addr::LOCALHOST, 0))
}

/// The conforming reference agent, served on a free loopback port by the kit's own engine (as
/// `mock agent` serves it).
pub async fn reference_agent(api_key: Option<&str>) -> Agent {
    let served = agent_tck::protocols::roundtable::commands::serve_one(
        "reference-agent",
        api_key.map(str::to_string),
        "conforming",
        SEED,
    )
    .await
    .expect("bind loopback");
    Agent(served)
}

/// A mock agent being served.
pub struct Agent(pub agent_tck::mock::fleet::Served);

impl Agent {
    pub fn url(&self) -> String {
        self.0.urls[0].clone()
    }

    /// Stops serving (open exchanges end at once).
    pub async fn stop(self) {
        self.0.stop(Duration::from_millis(500)).await;
    }
}

/// Serves any responder (with the real mock server: routing, auth, /health).
pub async fn serve(responder: impl Responder, api_key: Option<&str>) -> Running {
    let app = server::app(Arc::new(responder), api_key.map(str::to_string));
    server::spawn(loopback(), app).await.expect("bind loopback")
}

/// One request as a stub sees it.
pub struct Req {
    pub method: Method,
    /// The path without its leading slash (`analyze`).
    pub endpoint: String,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl Req {
    /// The request body as JSON (Null when it is not JSON).
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }

    /// What the conforming reference agent answers (no auth).
    pub fn reference(&self) -> Reply {
        ReferenceAgent::new("reference-agent", SEED).respond(&self.endpoint, &self.body)
    }

    /// The reference answer as JSON.
    pub fn reference_json(&self) -> Value {
        serde_json::from_slice(&self.reference().body).expect("the reference agent answers JSON")
    }
}

/// An agent that differs from the reference agent in whatever `handler` says: it sees every
/// request and returns the reply. Served on a free loopback port.
pub async fn stub(handler: impl Fn(Req) -> Reply + Send + Sync + 'static) -> Running {
    let handler = Arc::new(handler);
    let app = Router::new().fallback(
        move |method: Method, uri: Uri, headers: HeaderMap, body: Bytes| {
            let handler = handler.clone();
            async move {
                let endpoint = uri.path().trim_start_matches('/').to_string();
                let reply = handler(Req {
                    method,
                    endpoint,
                    headers,
                    body,
                });
                Response::builder()
                    .status(reply.status)
                    .header("content-type", reply.content_type)
                    .body(Body::from(reply.body))
                    .expect("a valid response")
            }
        },
    );
    server::spawn(loopback(), app).await.expect("bind loopback")
}

/// The reference agent with its JSON answer at one endpoint rewritten by `mutate(request,
/// answer)`: a broken agent that differs from a conforming one in exactly one respect.
pub async fn mutated(
    endpoint: &'static str,
    mutate: impl Fn(&Value, &mut Value) + Send + Sync + 'static,
) -> Running {
    stub(move |req| {
        let reply = req.reference();
        if req.endpoint != endpoint || reply.status != 200 {
            return reply;
        }
        let mut answer = req.reference_json();
        mutate(&req.json(), &mut answer);
        Reply::json(200, &answer)
    })
    .await
}

/// Settings for the built-in roundtable suite against `url`, with short deadlines.
pub fn settings(url: &str) -> ProbeSettings {
    let mut s = ProbeSettings::new(
        BaseUrl::parse(url).expect("url"),
        agent_tck::protocols::roundtable::suite().expect("suite"),
    );
    s.seed = SEED;
    s.timeout = Duration::from_secs(10);
    s
}

pub async fn probe(url: &str, api_key: Option<&str>) -> Report {
    probe_with(url, |s| s.api_key = api_key.map(str::to_string)).await
}

pub async fn probe_with(url: &str, tweak: impl FnOnce(&mut ProbeSettings)) -> Report {
    let mut s = settings(url);
    tweak(&mut s);
    probe::run(&s, &|_| {}).await.expect("the suite runs")
}

pub fn ids_with(report: &Report, status: Status) -> Vec<&str> {
    report
        .cases
        .iter()
        .filter(|c| c.status == status)
        .map(|c| c.id.as_str())
        .collect()
}

pub fn failed(report: &Report) -> Vec<&str> {
    ids_with(report, Status::Fail)
}

pub fn case<'a>(report: &'a Report, id: &str) -> &'a CaseResult {
    report
        .cases
        .iter()
        .find(|c| c.id == id)
        .unwrap_or_else(|| panic!("no case {id} in the report"))
}

/// Asserts that exactly `expected` cases failed, and that case `id`'s message contains each of
/// `needles`.
#[track_caller]
pub fn assert_fails(report: &Report, expected: &[&str], id: &str, needles: &[&str]) {
    let mut got = failed(report);
    got.sort_unstable();
    let mut want = expected.to_vec();
    want.sort_unstable();
    assert_eq!(
        got,
        want,
        "failed cases; messages: {:#?}",
        report
            .cases
            .iter()
            .filter(|c| c.status == Status::Fail)
            .map(|c| (&c.id, &c.message))
            .collect::<Vec<_>>()
    );
    let message = &case(report, id).message;
    for needle in needles {
        assert!(
            message.contains(needle),
            "{id}: message {message:?} lacks {needle:?}"
        );
    }
}

/// A raw TCP server: each accepted connection is handed to `handle` in its own task. For peers
/// that no HTTP framework can play (trickles, garbage, resets, endless bodies).
pub async fn raw_server<F, Fut>(handle: F) -> (String, tokio::task::JoinHandle<()>)
where
    F: Fn(TcpStream) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let listener = TcpListener::bind(loopback()).await.expect("bind loopback");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let task = tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(handle(stream));
        }
    });
    (url, task)
}

/// Reads a request head (up to the blank line) and its body as announced by Content-Length, so a
/// raw server answers only after the probe has sent everything.
pub async fn read_request(stream: &mut TcpStream) -> Vec<u8> {
    use tokio::io::AsyncReadExt;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
            let length = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse::<usize>().ok())
                .unwrap_or(0);
            if buf.len() >= end + 4 + length {
                return buf;
            }
        }
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return buf,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

/// A TCP relay to a server, which can die: then nothing listens at its address and every
/// connection through it is dropped with an RST, as when the server's process is killed. It
/// dies when `kill` is notified, or as [`Death`] says.
pub struct Relay {
    pub url: String,
    pub kill: Arc<tokio::sync::Notify>,
}

/// When a [`Relay`] dies by itself.
#[derive(Debug, Clone, Copy)]
pub enum Death {
    /// Only when killed.
    Never,
    /// At its `n`th connection (counted from 0; the kit opens a connection per request, so
    /// that is a server that dies after `n` answers).
    AtConnection(usize),
    /// At the `n`th connection (counted from 0) whose first bytes hold this
    /// (`/operations/delete`: a server that crashes on a session delete).
    OnRequest(&'static str, usize),
}

pub async fn relay(to: SocketAddr, death: Death) -> Relay {
    let listener = TcpListener::bind(loopback()).await.expect("bind loopback");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let kill = Arc::new(tokio::sync::Notify::new());
    let killed = kill.clone();
    tokio::spawn(async move {
        let mut relays = tokio::task::JoinSet::new();
        let (mut count, mut matched) = (0, 0);
        loop {
            let mut inbound = tokio::select! {
                accepted = listener.accept() => match accepted {
                    Ok((stream, _)) => stream,
                    Err(_) => break,
                },
                _ = killed.notified() => break,
            };
            let dies = match death {
                Death::Never => false,
                Death::AtConnection(n) => n == count,
                Death::OnRequest(what, nth) => {
                    let mut head = [0u8; 512];
                    let n = tokio::time::timeout(Duration::from_secs(5), inbound.peek(&mut head))
                        .await
                        .map_or(0, |r| r.unwrap_or(0));
                    let hit = String::from_utf8_lossy(&head[..n]).contains(what);
                    matched += usize::from(hit);
                    hit && matched == nth + 1
                }
            };
            if dies {
                reset(inbound);
                break;
            }
            count += 1;
            relays.spawn(async move {
                if let Ok(mut outbound) = TcpStream::connect(to).await {
                    let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                }
            });
        }
        drop(listener);
        relays.abort_all();
    });
    Relay { url, kill }
}

/// Closes `stream` with an RST (SO_LINGER 0; deprecated in tokio because a non-zero linger
/// blocks the thread on drop, which a zero linger does not).
pub fn reset(stream: TcpStream) {
    #[allow(deprecated)]
    let _ = stream.set_linger(Some(Duration::ZERO));
}

/// A fresh directory under the system temp dir, removed on drop.
pub struct TempDir(pub std::path::PathBuf);

impl TempDir {
    pub fn new(name: &str) -> TempDir {
        let dir =
            std::env::temp_dir().join(format!("agent-tck-test-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    pub fn path(&self, file: &str) -> String {
        self.0.join(file).display().to_string()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A mock session (as `mock agent` runs one) serving `agent` of `protocol` on a loopback port,
/// until the stop is sent: its base URL, the stop, and the session's report to come.
pub async fn mock_session(
    protocol: &'static dyn agent_tck::mock::protocol::AgentProtocol,
    agent: agent_tck::mock::agent::MockAgent,
) -> (
    String,
    tokio::sync::oneshot::Sender<()>,
    tokio::task::JoinHandle<Result<Report, agent_tck::error::Error>>,
) {
    let expect = agent_tck::mock::protocol::PlatformExpect::timeout(Duration::from_secs(120));
    mock_session_expecting(protocol, agent, expect).await
}

/// The same, judging the platform against `expect` (its timeout, its turn limit).
pub async fn mock_session_expecting(
    protocol: &'static dyn agent_tck::mock::protocol::AgentProtocol,
    agent: agent_tck::mock::agent::MockAgent,
    expect: agent_tck::mock::protocol::PlatformExpect,
) -> (
    String,
    tokio::sync::oneshot::Sender<()>,
    tokio::task::JoinHandle<Result<Report, agent_tck::error::Error>>,
) {
    mock_session_recording(protocol, agent, expect, None).await
}

/// The same, the platform's exchanges recorded to `record` when given.
pub async fn mock_session_recording(
    protocol: &'static dyn agent_tck::mock::protocol::AgentProtocol,
    agent: agent_tck::mock::agent::MockAgent,
    expect: agent_tck::mock::protocol::PlatformExpect,
    record: Option<std::path::PathBuf>,
) -> (
    String,
    tokio::sync::oneshot::Sender<()>,
    tokio::task::JoinHandle<Result<Report, agent_tck::error::Error>>,
) {
    use agent_tck::mock::fleet::Layout;
    use agent_tck::mock::session::{self, Banner, SessionSettings};
    // A port the OS gave a moment ago (the session binds it itself).
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let settings = SessionSettings {
        protocol,
        agents: vec![agent],
        layout: Layout::PerAgent,
        host: Ipv4Addr::LOCALHOST.into(),
        port,
        advertise: None,
        driver: None,
        expect,
        journal: None,
        journal_body_cap: 1 << 20,
        seed: 1,
        serve_after: true,
        strict: false,
        banner: Banner::Fleet,
        log_requests: false,
    };
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let stopped = async {
        let _ = stopped.await;
    };
    let report = tokio::spawn(async move {
        match record {
            Some(path) => session::run_recorded(settings, stopped, &path).await,
            None => session::run(settings, stopped).await,
        }
    });
    // Ready when it accepts a connection; a session that never does fails the test here, not
    // later with a confusing refusal (30 s: a busy machine's margin, not an idle one's).
    let ready = tokio::time::timeout(Duration::from_secs(30), async {
        while TcpStream::connect(("127.0.0.1", port)).await.is_err() {
            assert!(
                !report.is_finished(),
                "the mock session ended before serving"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    assert!(
        ready.is_ok(),
        "the mock session on port {port} was not serving after 30 s"
    );
    (format!("http://127.0.0.1:{port}"), stop, report)
}

/// The real python3 executable (not a version-manager shim), if there is one.
pub fn python() -> Option<&'static str> {
    static PYTHON: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    PYTHON
        .get_or_init(|| {
            let out = std::process::Command::new("python3")
                .args(["-c", "import sys; print(sys.executable)"])
                .output()
                .ok()?;
            let path = String::from_utf8(out.stdout).ok()?.trim().to_string();
            (out.status.success() && !path.is_empty()).then_some(path)
        })
        .as_deref()
}

/// Held by the tests that each run many servers, processes or requests at once (probe ×
/// flaw sweeps, client fleets): one at a time, so that on a small machine their load does not
/// push the timing-sensitive tests past their deadlines.
pub async fn heavy() -> tokio::sync::MutexGuard<'static, ()> {
    HEAVY.lock().await
}

/// The same, for a test outside a runtime.
pub fn heavy_blocking() -> tokio::sync::MutexGuard<'static, ()> {
    HEAVY.blocking_lock()
}

static HEAVY: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The failed cases of a report, with their messages (to show when the list is wrong).
pub fn failing(report: &Report) -> Vec<(&str, &str)> {
    report
        .cases
        .iter()
        .filter(|c| c.status == Status::Fail)
        .map(|c| (c.id.as_str(), c.message.as_str()))
        .collect()
}

/// The ids of the failed cases.
pub fn failed_ids(cases: &[CaseResult]) -> std::collections::BTreeSet<String> {
    cases
        .iter()
        .filter(|c| c.status == Status::Fail)
        .map(|c| c.id.clone())
        .collect()
}

/// The agent-tck binary under test.
pub const EXE: &str = env!("CARGO_BIN_EXE_agent-tck");

/// How long any run of the binary may take before the test fails (and the run is killed): far
/// past the slowest run's need on a busy machine, well short of "hung".
pub const RUN_DEADLINE: Duration = Duration::from_secs(120);

/// Runs the agent-tck binary with `args` (no colour, stdin closed) to its end, within
/// [`RUN_DEADLINE`].
pub fn tck(args: &[&str]) -> std::process::Output {
    tck_within(args, RUN_DEADLINE)
}

/// The agent-tck binary with `args`, without colour: for [`run_within`] and [`Spawned`].
pub fn tck_command(args: &[&str]) -> std::process::Command {
    let mut command = std::process::Command::new(EXE);
    command.args(args).env("NO_COLOR", "1");
    command
}

/// What a run printed: stdout, then stderr.
pub fn text(out: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Every case of a JSON report as (id, status), in order.
pub fn case_statuses(report: &serde_json::Value) -> Vec<(String, String)> {
    report["cases"]
        .as_array()
        .map(|cases| {
            cases
                .iter()
                .map(|c| {
                    (
                        c["id"].as_str().unwrap_or_default().to_string(),
                        c["status"].as_str().unwrap_or_default().to_string(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// What the report model promises of every case of `report`: a PASS with evidence of at least
/// one thing judged, a SKIP with a reason of its own (never the model's fallbacks,
/// `NO_EVIDENCE` and `NO_REASON`, which only a case that was never judged gets).
#[track_caller]
pub fn assert_every_verdict_explained(report: &Report) {
    use agent_tck::report::{NO_EVIDENCE, NO_REASON};
    for case in &report.cases {
        match case.status {
            Status::Pass => assert!(
                case.evidence.as_ref().is_some_and(|e| e.judged > 0),
                "{} {}: passed without evidence",
                report.protocol,
                case.id
            ),
            Status::Skip => assert!(
                !case.message.trim().is_empty(),
                "{} {}: skipped without a reason",
                report.protocol,
                case.id
            ),
            _ => {}
        }
        assert!(
            !case.message.contains(NO_EVIDENCE) && !case.message.contains(NO_REASON),
            "{} {}: never judged nor given a reason: {}",
            report.protocol,
            case.id,
            case.message
        );
    }
}

/// Runs the agent-tck binary with `args` (no colour, stdin closed) to its end, its output
/// drained as it comes; fails the test if it runs longer than `within` (the process is killed).
pub fn tck_within(args: &[&str], within: Duration) -> std::process::Output {
    run_within(tck_command(args), within)
}

/// Runs `command` (stdin closed, output captured) to its end in a process group of its own;
/// fails the test if it runs longer than `within`, after killing the whole group (so that no
/// agent it started outlives the test).
pub fn run_within(command: std::process::Command, within: Duration) -> std::process::Output {
    let mut child = Spawned::start(command, within);
    let status = child.wait();
    child.output(status)
}

/// Whether `script` succeeds under `sh -c` (within 30 s): whether a program is here, say.
pub fn shell_succeeds(script: &str) -> bool {
    let mut command = std::process::Command::new("sh");
    command.args(["-c", script]);
    run_within(command, Duration::from_secs(30))
        .status
        .success()
}

/// The same from async code: the wait runs on a blocking thread, not on the runtime's workers.
pub async fn run_within_async(
    command: std::process::Command,
    within: Duration,
) -> std::process::Output {
    tokio::task::spawn_blocking(move || run_within(command, within))
        .await
        .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()))
}

/// A process under test that runs until stopped (a mock fleet, a mock server) or to its end:
/// in a process group of its own, stdin closed, stdout read line by line as it comes and stderr
/// drained, all before a deadline. Each wait fails the test when the deadline passes, after
/// killing the group; dropping it kills the group too, so a failing test leaves no process.
pub struct Spawned {
    child: std::process::Child,
    what: String,
    deadline: std::time::Instant,
    lines: std::sync::mpsc::Receiver<String>,
    /// The stdout lines read so far.
    seen: Vec<String>,
    stderr: std::sync::mpsc::Receiver<Vec<u8>>,
}

impl Spawned {
    /// The agent-tck binary with `args`, which must end within `within` of now.
    pub fn tck(args: &[&str], within: Duration) -> Spawned {
        Spawned::start(tck_command(args), within)
    }

    /// Starts `command`, which must end within `within` of now.
    pub fn start(mut command: std::process::Command, within: Duration) -> Spawned {
        command.stdin(std::process::Stdio::null());
        Spawned::started(command, within)
    }

    /// As [`Spawned::start`], with its stdin ours to write (a harness feeding its agent
    /// command); dropping it is the end of its input.
    pub fn fed(
        mut command: std::process::Command,
        within: Duration,
    ) -> (Spawned, std::process::ChildStdin) {
        command.stdin(std::process::Stdio::piped());
        let mut spawned = Spawned::started(command, within);
        let stdin = spawned.child.stdin.take().expect("piped stdin");
        (spawned, stdin)
    }

    fn started(mut command: std::process::Command, within: Duration) -> Spawned {
        use std::io::{BufRead, Read};
        use std::os::unix::process::CommandExt;
        use std::process::Stdio;
        let what = format!("{command:?}");
        let mut child = command
            .process_group(0)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("{what}: cannot start: {e}"));
        let stdout = std::io::BufReader::new(child.stdout.take().expect("piped stdout"));
        let (send, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in stdout.lines() {
                let Ok(line) = line else { break };
                if send.send(line).is_err() {
                    break;
                }
            }
        });
        let mut stderr = child.stderr.take().expect("piped stderr");
        let (send_err, err) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = stderr.read_to_end(&mut bytes);
            let _ = send_err.send(bytes);
        });
        Spawned {
            child,
            what,
            deadline: std::time::Instant::now() + within,
            lines,
            seen: Vec::new(),
            stderr: err,
        }
    }

    /// The process id (also its process group's).
    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// The next line it prints; fails the test if it ends first or the deadline passes.
    pub fn line(&mut self) -> String {
        let left = self
            .deadline
            .saturating_duration_since(std::time::Instant::now());
        match self.lines.recv_timeout(left) {
            Ok(line) => {
                self.seen.push(line.clone());
                line
            }
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                self.kill_group();
                panic!(
                    "{}: no line before its deadline; printed so far:\n{}",
                    self.what,
                    self.seen.join("\n")
                )
            }
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                let status = self.child.wait();
                panic!(
                    "{}: ended ({status:?}) before the line awaited; printed:\n{}",
                    self.what,
                    self.seen.join("\n")
                )
            }
        }
    }

    /// Sends SIGINT (as Ctrl-C does) and waits for it to end, at most `grace` (and never past
    /// the deadline); if it has not ended by then, kills its group and fails the test — a
    /// process that ignores the interrupt must not hang the test.
    pub fn interrupt(mut self, grace: Duration) -> std::process::Output {
        let pid = libc::pid_t::try_from(self.child.id()).expect("a pid");
        // SAFETY: kill(2) on a child not yet waited for (so its pid is not reused); no memory.
        assert_eq!(
            unsafe { libc::kill(pid, libc::SIGINT) },
            0,
            "SIGINT to {}",
            self.what
        );
        let by = std::time::Instant::now() + grace;
        self.deadline = self.deadline.min(by);
        let status = self.wait_for("after SIGINT");
        self.output(status)
    }

    /// Waits for it to end before the deadline (its status).
    pub fn wait(&mut self) -> std::process::ExitStatus {
        self.wait_for("before its deadline")
    }

    fn wait_for(&mut self, when: &str) -> std::process::ExitStatus {
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                return status;
            }
            if std::time::Instant::now() >= self.deadline {
                self.kill_group();
                panic!(
                    "{} did not end {when} (killed); printed:\n{}",
                    self.what,
                    self.seen.join("\n")
                );
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// What it printed, once it has ended with `status`: stdout's lines (those read and the
    /// rest), stderr.
    pub fn output(&mut self, status: std::process::ExitStatus) -> std::process::Output {
        // The pipes end when the process and every child holding them are gone: the group is
        // killed so that an orphaned grandchild cannot keep them open, and one that left the
        // group and holds them still fails the test (5 s on) instead of hanging it.
        self.kill_group_members();
        let until = std::time::Instant::now() + Duration::from_secs(5);
        let left = || until.saturating_duration_since(std::time::Instant::now());
        loop {
            match self.lines.recv_timeout(left()) {
                Ok(line) => self.seen.push(line),
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => panic!(
                    "{} ended ({status}) but its stdout is still open (a process it started?)",
                    self.what
                ),
            }
        }
        let stderr = self.stderr.recv_timeout(left()).unwrap_or_else(|_| {
            panic!(
                "{} ended ({status}) but its stderr is still open (a process it started?)",
                self.what
            )
        });
        let mut stdout = self.seen.join("\n");
        if !stdout.is_empty() {
            stdout.push('\n');
        }
        std::process::Output {
            status,
            stdout: stdout.into_bytes(),
            stderr,
        }
    }

    /// SIGKILL to the whole group, then the child reaped.
    fn kill_group(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            self.kill_group_members();
        }
        let _ = self.child.wait();
    }

    /// SIGKILL to the group (its leader may be gone; the group lives while a member does).
    fn kill_group_members(&self) {
        if let Ok(pgid) = libc::pid_t::try_from(self.child.id()) {
            // SAFETY: killpg(2) on the group this child leads (made with process_group(0));
            // ESRCH when nothing is left in it, which is fine.
            unsafe { libc::killpg(pgid, libc::SIGKILL) };
        }
    }
}

impl Drop for Spawned {
    fn drop(&mut self) {
        self.kill_group();
    }
}

/// An HTTP server with none of any protocol's routes: 404 `{"detail":"Not Found"}` to every
/// request, as a bare web framework answers (the Librarian document's source project served
/// exactly this to every route the protocol names).
pub async fn no_routes() -> Running {
    let app = Router::new().fallback(|| async {
        (
            axum::http::StatusCode::NOT_FOUND,
            axum::Json(serde_json::json!({"detail": "Not Found"})),
        )
    });
    server::spawn(loopback(), app).await.expect("bind loopback")
}

/// The helpers that bound a test's processes, held to their promises: a process that ignores
/// Ctrl-C (as one started under `nohup` does, or the fleet did before it installed its handler
/// ahead of its banner) fails the test after the grace, killed with its whole group; so does one
/// that never prints the line awaited or never ends.
mod bounded {
    use super::{Duration, Spawned};
    use std::process::Command;
    use std::time::Instant;

    /// A shell that ignores SIGINT, starts a grandchild (`sleep`) in its group, prints the
    /// grandchild's pid, then waits for it.
    fn stubborn() -> Spawned {
        let mut command = Command::new("sh");
        command.args(["-c", "trap '' INT; sleep 60 & echo $!; wait"]);
        Spawned::start(command, Duration::from_secs(30))
    }

    fn alive(pid: i32) -> bool {
        // SAFETY: signal 0 only checks that the process exists; no memory is involved.
        unsafe { libc::kill(pid, 0) == 0 }
    }

    /// The message of the panic `run` ends in, and how long it took.
    fn failure(run: impl FnOnce()) -> (String, Duration) {
        let started = Instant::now();
        let payload = std::panic::catch_unwind(std::panic::AssertUnwindSafe(run))
            .expect_err("the helper fails the test");
        let message = payload
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        (message, started.elapsed())
    }

    /// Waits (up to 5 s) for `pid` to be gone: a SIGKILLed process is reaped by init a moment
    /// after the signal, not at once.
    fn gone(pid: i32) -> bool {
        let until = Instant::now() + Duration::from_secs(5);
        while alive(pid) {
            if Instant::now() > until {
                return false;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        true
    }

    #[test]
    fn an_interrupt_ignored_fails_after_the_grace_and_kills_the_group() {
        let mut shell = stubborn();
        let grandchild: i32 = shell.line().trim().parse().expect("a pid");
        assert!(alive(grandchild));
        let (message, took) = failure(move || {
            shell.interrupt(Duration::from_millis(500));
        });
        assert!(
            message.contains("did not end after SIGINT (killed)"),
            "{message}"
        );
        assert!(took < Duration::from_secs(5), "{took:?}");
        assert!(
            gone(grandchild),
            "the grandchild {grandchild} outlived the test"
        );
    }

    #[test]
    fn a_line_never_printed_fails_at_the_deadline_and_kills_the_group() {
        let mut command = Command::new("sh");
        command.args(["-c", "sleep 60 & echo $!; wait"]);
        let mut shell = Spawned::start(command, Duration::from_millis(500));
        let grandchild: i32 = shell.line().trim().parse().expect("a pid");
        let (message, took) = failure(move || {
            shell.line();
        });
        assert!(message.contains("no line before its deadline"), "{message}");
        assert!(took < Duration::from_secs(5), "{took:?}");
        assert!(
            gone(grandchild),
            "the grandchild {grandchild} outlived the test"
        );
    }

    #[test]
    fn a_run_past_its_deadline_fails_and_leaves_no_process() {
        let (message, took) = failure(|| {
            let mut command = Command::new("sh");
            command.args(["-c", "trap '' INT TERM; sleep 60"]);
            super::run_within(command, Duration::from_millis(300));
        });
        assert!(
            message.contains("did not end before its deadline (killed)"),
            "{message}"
        );
        assert!(took < Duration::from_secs(5), "{took:?}");
    }

    #[test]
    fn a_run_gives_its_status_and_everything_it_printed() {
        let mut command = Command::new("sh");
        command.args(["-c", "echo one; echo two >&2; echo three; exit 3"]);
        let out = super::run_within(command, Duration::from_secs(30));
        assert_eq!(out.status.code(), Some(3));
        assert_eq!(String::from_utf8_lossy(&out.stdout), "one\nthree\n");
        assert_eq!(String::from_utf8_lossy(&out.stderr), "two\n");
    }
}

/// Checks that every format an interrupted run wrote says it was interrupted by Ctrl-C and
/// none gives a verdict: the JSON report's `interrupted` (valid against the report schema),
/// JUnit's failed `run.completed`, the HTML page's title and header, and the last line of
/// `stdout` (the console's); no "PASS" verdict, no "exit 0".
pub fn assert_marked_interrupted(
    json: &str,
    junit: Option<&str>,
    html: Option<&str>,
    stdout: &str,
) {
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(json).unwrap_or_else(|e| panic!("{json}: {e}")))
            .unwrap();
    assert_eq!(
        agent_tck::schema::schemas().validate("report", &report),
        vec![]
    );
    let cut = &report["interrupted"];
    assert_eq!(cut["by"], "SIGINT", "{cut}");
    let cases = report["cases"].as_array().unwrap().len() as u64;
    assert_eq!(cut["cases"].as_u64(), Some(cases), "{cut}");
    let (judged, not_reached) = (
        cut["judged"].as_u64().unwrap(),
        cut["not_reached_count"].as_u64().unwrap(),
    );
    assert!(judged + not_reached <= cases, "{cut}");
    let listed = cut["not_reached"].as_array().unwrap().len() as u64;
    assert_eq!(listed, not_reached.min(50), "{cut}");
    if let Some(junit) = junit {
        let xml = std::fs::read_to_string(junit).unwrap();
        let doc = roxmltree::Document::parse(&xml).unwrap();
        let completed = doc
            .descendants()
            .find(|n| n.attribute("name") == Some("run.completed [must]"))
            .unwrap_or_else(|| panic!("no run.completed testcase: {xml}"));
        let failure = completed
            .children()
            .find(|n| n.has_tag_name("failure"))
            .unwrap_or_else(|| panic!("run.completed did not fail: {xml}"));
        assert_eq!(failure.attribute("type"), Some("interrupted"), "{xml}");
        assert!(
            failure
                .attribute("message")
                .unwrap_or_default()
                .starts_with("INTERRUPTED (Ctrl-C) after "),
            "{xml}"
        );
    }
    if let Some(html) = html {
        let page = std::fs::read_to_string(html).unwrap();
        let title = &page[page.find("<title>").unwrap()..page.find("</title>").unwrap()];
        assert!(title.ends_with(" · INTERRUPTED"), "{title}");
        let header = &page[page.find("<header").unwrap()..page.find("</header>").unwrap()];
        assert!(header.contains("<h1>INTERRUPTED · "), "{header}");
        assert!(
            header.contains("<p>exit 130: INTERRUPTED (Ctrl-C) after ")
                && header.contains("not a verdict"),
            "{header}"
        );
        for verdict in ["PASS", "exit 0"] {
            assert!(
                !title.contains(verdict) && !header.contains(verdict),
                "{header}"
            );
        }
    }
    let last = stdout.trim_end().lines().last().unwrap_or_default();
    assert!(
        last.contains("INTERRUPTED (Ctrl-C) after ") && last.contains("; not a verdict"),
        "the console's last line: {last}"
    );
}
