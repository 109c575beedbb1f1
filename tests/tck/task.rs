//! `probe execute-task` end to end: the spec's Python example agent, the conforming mock on every
//! transport, no process left behind by an agent that forks, and what a governance-ignoring
//! agent is told.

use std::sync::Arc;
use std::time::Duration;

use agent_tck::mock::agent::{MockAgent, Profile};
use agent_tck::mock::behavior::parse_list;
use agent_tck::mock::line_server::LineService;
use agent_tck::mock::protocol::PlatformExpect;
use agent_tck::protocols::execute_task::probe::{run, Target, TaskSettings};
use agent_tck::protocols::execute_task::reference::TaskAgent;
use agent_tck::protocols::execute_task::scenario::Scenario;
use agent_tck::report::{Kind, Level, Report, Status};
use agent_tck::text::shell_quote;
use agent_tck::transport::http::BaseUrl;
use agent_tck::transport::socket::{SocketAddrSpec, SocketMode};
use agent_tck::transport::stdio::{StdioConfig, StdioMode};
use tokio_util::sync::CancellationToken;

use crate::support::TempDir;

pub(crate) fn settings(target: Target) -> TaskSettings {
    TaskSettings {
        target,
        timeout: Duration::from_secs(10),
        max_body: 5_000_000,
        max_turns: None,
        scenarios: Scenario::builtin(),
        seed: 7,
        only: Vec::new(),
        strict: false,
        min_score: None,
        tape: Default::default(),
    }
}

fn failures(report: &Report) -> Vec<(String, String)> {
    report
        .cases
        .iter()
        .filter(|c| c.status == Status::Fail)
        .map(|c| (c.id.clone(), c.message.clone()))
        .collect()
}

pub(crate) fn mock_command(extra: &str) -> String {
    format!(
        "{} mock agent --protocol execute-task --stdio --name stdio-mock {extra}",
        shell_quote(env!("CARGO_BIN_EXE_agent-tck"))
    )
}

/// `agent` served over HTTP by the fleet's engine, on a port of its own.
pub(crate) async fn serve_http(agent: MockAgent) -> agent_tck::mock::fleet::Served {
    agent_tck::mock::fleet::serve(
        vec![agent],
        agent_tck::mock::fleet::Layout::PerAgent,
        "127.0.0.1".parse().unwrap(),
        0,
        agent_tck::mock::journal::Journal::off(std::time::Instant::now()),
        agent_tck::mock::observe::observer_for(
            &agent_tck::protocols::execute_task::Agents,
            &PlatformExpect::timeout(Duration::from_secs(120)),
        ),
    )
    .await
    .unwrap()
}

fn task_agent() -> MockAgent {
    task_agent_behaving("conforming")
}

pub(crate) fn task_agent_behaving(behavior: &str) -> MockAgent {
    let profile = Profile {
        name: "task-mock".into(),
        domain: "support".into(),
        capabilities: Vec::new(),
        api_key: None,
    };
    let reference = Box::new(TaskAgent::with_scenarios("task-mock", &Scenario::builtin()));
    MockAgent::with_responder(
        &agent_tck::protocols::execute_task::Agents,
        profile,
        parse_list(behavior, crate::support::execute_task()).unwrap(),
        1,
        reference,
    )
}

#[deadline::test]
async fn the_specs_python_example_agent_passes_the_protocol_cases() {
    let dir = TempDir::new("python-agent");
    let script = dir.path("agent.py");
    // The spec's example, verbatim.
    std::fs::write(
        &script,
        "import sys, json\nfor line in sys.stdin:\n    payload = json.loads(line)\n    # Process...\n    print(json.dumps({\"action\": \"final_answer\", \"summary\": \"Done\"}))\n    sys.stdout.flush()\n",
    )
    .unwrap();
    let config = StdioConfig::new(
        format!("python3 {}", shell_quote(&script)),
        StdioMode::Persistent,
    );
    let report = run(&settings(Target::Stdio(config)), &|_| {})
        .await
        .unwrap();
    let protocol_failures: Vec<_> = failures(&report)
        .into_iter()
        .filter(|(id, _)| id.starts_with("protocol."))
        .collect();
    // It answers every turn validly; it only lacks a name (a SHOULD).
    assert_eq!(protocol_failures.len(), 1, "{protocol_failures:#?}");
    assert_eq!(protocol_failures[0].0, "protocol.identity");
    for scenario in Scenario::builtin() {
        let completes = report
            .cases
            .iter()
            .find(|c| c.id == format!("{}.completes", scenario.id))
            .unwrap();
        assert_eq!(completes.status, Status::Pass, "{}", completes.message);
    }
    // It never calls a tool, so the scenarios that need one say so.
    let called = report
        .cases
        .iter()
        .find(|c| c.id == "customer-support.called-get_customer_details")
        .unwrap();
    assert_eq!(called.status, Status::Fail);
    assert!(
        called.message.contains("never called"),
        "{}",
        called.message
    );
}

#[deadline::test]
async fn the_conforming_mock_passes_every_case_on_every_transport() {
    let stop = CancellationToken::new();
    // HTTP, through the fleet's engine.
    let served = serve_http(task_agent()).await;
    let http = Target::Http {
        base: BaseUrl::parse(&served.urls[0]).unwrap(),
        api_key: None,
    };
    // TCP and Unix sockets, through the line server.
    let tcp = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let tcp_addr = tcp.local_addr().unwrap().to_string();
    tokio::spawn(agent_tck::mock::line_server::serve_tcp(
        Arc::new(LineService::judged(
            task_agent(),
            &PlatformExpect::timeout(Duration::from_secs(120)),
        )),
        tcp,
        stop.clone(),
    ));
    let dir = TempDir::new("unix-agent");
    let path = dir.0.join("agent.sock");
    let unix = tokio::net::UnixListener::bind(&path).unwrap();
    tokio::spawn(agent_tck::mock::line_server::serve_unix(
        Arc::new(LineService::judged(
            task_agent(),
            &PlatformExpect::timeout(Duration::from_secs(120)),
        )),
        unix,
        stop.clone(),
    ));
    let targets = [
        http,
        Target::Stdio(StdioConfig::new(mock_command(""), StdioMode::Persistent)),
        Target::Stdio(StdioConfig::new(mock_command(""), StdioMode::PerTurn)),
        Target::Socket {
            addr: SocketAddrSpec::Tcp(tcp_addr),
            mode: SocketMode::Persistent,
        },
        Target::Socket {
            addr: SocketAddrSpec::Unix(path.clone()),
            mode: SocketMode::PerCall,
        },
    ];
    for target in targets {
        let report = run(&settings(target.clone()), &|_| {}).await.unwrap();
        assert!(
            failures(&report).is_empty(),
            "{target:?}: {:#?}",
            failures(&report)
        );
        assert!(
            report.summary.passed >= 14,
            "{target:?}: {:?}",
            report.summary
        );
        // The mock follows the built-in scenarios' scripts: every expectation met.
        let score = report.summary.evaluation.unwrap();
        assert_eq!(
            (score.unmet, score.unjudged),
            (0, 0),
            "{target:?}: {score:?}"
        );
        assert!(score.met >= 19, "{target:?}: {score:?}");
        let identity = report
            .cases
            .iter()
            .find(|c| c.id == "protocol.identity")
            .unwrap();
        assert!(
            identity.message.contains("from `agent_name`"),
            "{}",
            identity.message
        );
    }
    stop.cancel();
    served.stop(Duration::from_secs(1)).await;
}

/// Processes whose command line contains `needle`.
fn processes_with(needle: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        let state = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        // Zombies are dead already (a container's PID 1 may never reap them).
        let zombie = state
            .rsplit(')')
            .next()
            .is_some_and(|s| s.trim_start().starts_with('Z'));
        if cmdline.contains(needle) && !zombie {
            found.push(format!(
                "{}: {cmdline}",
                entry.file_name().to_string_lossy()
            ));
        }
    }
    found
}

#[deadline::test]
async fn no_process_survives_a_run_against_an_agent_that_forks() {
    // The agent answers, leaving a child that holds stdout open and sleeps.
    let answer = r#"{"action":"final_answer","summary":"done","agent_name":"forker"}"#;
    let script = format!("while IFS= read -r line || [ -n \"$line\" ]; do sleep 7331.25 & printf '%s\\n' '{answer}'; done");
    for mode in [StdioMode::Persistent, StdioMode::PerTurn] {
        let config = StdioConfig::new(format!("sh -c {}", shell_quote(&script)), mode);
        let mut s = settings(Target::Stdio(config));
        s.timeout = Duration::from_secs(3);
        let report = run(&s, &|_| {}).await.unwrap();
        assert!(
            report.summary.passed > 10,
            "{mode:?}: {:#?}",
            failures(&report)
        );
        // The group was killed when the run ended; on a busy machine a killed process can take
        // a moment to be gone, so it is given a few seconds, and one that outlives them was
        // left behind.
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        let mut left = processes_with("sleep 7331.25");
        while !left.is_empty() && std::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(50)).await;
            left = processes_with("sleep 7331.25");
        }
        assert!(left.is_empty(), "{mode:?}: left behind: {left:?}");
    }
}

#[deadline::test]
async fn a_governance_ignoring_agent_is_told_which_turn_broke_the_policy() {
    let command = mock_command("--behavior ignores-governance");
    let mut s = settings(Target::Stdio(StdioConfig::new(command, StdioMode::PerTurn)));
    s.only = vec!["refund-policy.*".into()];
    let report = run(&s, &|_| {}).await.unwrap();
    let case = report
        .cases
        .iter()
        .find(|c| c.id == "refund-policy.no_violation_after_governance_error-apply_refund")
        .unwrap();
    // Unmet, and scored rather than failed: the built-in scenarios gate nothing.
    assert_eq!(
        (case.status, case.level, case.kind),
        (Status::Fail, Level::May, Kind::Evaluation)
    );
    assert_eq!(report.exit_code(), 0);
    assert!(
        case.message.contains("turn 2: called apply_refund")
            && case.message.contains("amount <= 50"),
        "{}",
        case.message
    );
    // --only ran the refund scenario alone.
    assert!(
        report
            .cases
            .iter()
            .all(|c| c.id.starts_with("refund-policy.")),
        "{:?}",
        report.cases.iter().map(|c| &c.id).collect::<Vec<_>>()
    );
}

/// An execute_task mock over HTTP reports as execute-task and judges the platform's (here: the
/// probe's) requests against execute_task's request schema, not the round table's.
#[deadline::test]
async fn an_http_task_mock_judges_its_harness_by_execute_tasks_rules() {
    // As the binary does at start: the reports take each case's section from the catalogue.
    agent_tck::explain::install();
    let (url, stop, mock) =
        crate::support::mock_session(&agent_tck::protocols::execute_task::Agents, task_agent())
            .await;
    let target = Target::Http {
        base: BaseUrl::parse(&url).unwrap(),
        api_key: None,
    };
    let report = run(&settings(target), &|_| {}).await.unwrap();
    assert_eq!(report.summary.failed, 0, "{:?}", failures(&report));
    stop.send(()).unwrap();
    let mock = mock.await.unwrap().unwrap();
    assert_eq!(mock.protocol, "execute-task");
    let schema = mock
        .cases
        .iter()
        .find(|c| c.id == "platform.request-schema")
        .unwrap();
    assert_eq!(schema.status, Status::Pass, "{}", schema.message);
    let evidence = schema.evidence.as_ref().expect("a pass carries evidence");
    assert!(
        evidence.judged > 0 && evidence.of == "requests",
        "{evidence:?}"
    );
    // The catalogue's section: the request schema is the kit's reading of the spec's
    // Request Body, not a heading of it.
    assert_eq!(schema.spec, "agent-tck (the request schema)");
    assert!(
        !mock
            .cases
            .iter()
            .any(|c| c.id.starts_with("platform.challenge")),
        "no round-table rule judges an execute_task harness: {:?}",
        mock.cases
    );
}

/// Nothing listening: one failure that says so, every other case skipped for it — not nine
/// failures with one cause and a timing case that passes with nothing timed.
#[deadline::test]
async fn an_agent_that_is_not_there_fails_reachability_and_nothing_else() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let base = BaseUrl::parse(&format!("http://127.0.0.1:{port}")).unwrap();
    let report = run(
        &settings(Target::Http {
            base,
            api_key: None,
        }),
        &|_| {},
    )
    .await
    .unwrap();
    let failed: Vec<&str> = report
        .cases
        .iter()
        .filter(|c| c.status == Status::Fail)
        .map(|c| c.id.as_str())
        .collect();
    assert_eq!(failed, ["agent.reachable"], "{:?}", failures(&report));
    assert_eq!(report.cases[0].id, "agent.reachable");
    assert!(
        report.cases[0].message.contains("127.0.0.1"),
        "{}",
        report.cases[0].message
    );
    for c in &report.cases[1..] {
        assert_eq!(c.status, Status::Skip, "{}", c.id);
        assert!(
            c.message.starts_with(
                "skipped: it needs agent.reachable, which failed (make the agent reachable"
            ),
            "{}",
            c.message
        );
    }
    assert!(report
        .cases
        .iter()
        .any(|c| c.id == "protocol.within-timeout"));
    assert!(report
        .cases
        .iter()
        .any(|c| c.id == "customer-support.completes"));
    assert_eq!(report.exit_code(), 1);
}

/// A stdio agent whose program is not there fails reachability; one that is there but never
/// answers leaves the timing case skipped (nothing was timed), not passed.
#[deadline::test]
async fn stdio_reachability_and_a_timing_case_with_nothing_to_time() {
    let report = run(
        &settings(Target::Stdio(StdioConfig::new(
            "agent-tck-no-such-program --x",
            StdioMode::Persistent,
        ))),
        &|_| {},
    )
    .await
    .unwrap();
    let reach = report
        .cases
        .iter()
        .find(|c| c.id == "agent.reachable")
        .unwrap();
    assert_eq!(reach.status, Status::Fail);
    assert!(
        reach.message.contains("not found on PATH"),
        "{}",
        reach.message
    );

    let mut quiet = settings(Target::Stdio(StdioConfig::new(
        "sh -c 'exit 3'",
        StdioMode::PerTurn,
    )));
    quiet.only = vec!["agent.*".into(), "protocol.*".into()];
    let report = run(&quiet, &|_| {}).await.unwrap();
    let reach = report
        .cases
        .iter()
        .find(|c| c.id == "agent.reachable")
        .unwrap();
    assert_eq!(reach.status, Status::Pass, "{}", reach.message);
    let timing = report
        .cases
        .iter()
        .find(|c| c.id == "protocol.within-timeout")
        .unwrap();
    assert_eq!(timing.status, Status::Skip, "{}", timing.message);
    // An agent that exits at every request before a byte of its answer could not start: the
    // first turn's failure says so, and the timing case points at it.
    assert!(
        timing.message.starts_with(
            "skipped: no exchange was answered, nor timed out: protocol.first-turn failed as the \
             agent could not start"
        ),
        "{}",
        timing.message
    );
    assert!(report
        .cases
        .iter()
        .any(|c| c.id == "protocol.first-turn" && c.status == Status::Fail));
}

// ---------------------------------------------------------------------------------------------
// A harness that numbers no turns: it sends only `{"task_description": …}` and answers a tool
// call with `Executed NAME` (as najeed/ai-agent-eval-harness does over HTTP, a process per turn
// and a connection per turn). The conforming mock must still reach its final answer.

const TURNLESS_LIMIT: usize = 5;
const TURNLESS_DEADLINE: Duration = Duration::from_secs(60);

/// How the turnless harness reaches the agent: one request, its answer.
trait Turns {
    async fn send(&mut self, request: serde_json::Value) -> serde_json::Value;
}

/// Runs the turnless harness loop over `turns`: the actions, in order, until a final answer or
/// the turn limit.
async fn turnless_run(turns: &mut impl Turns) -> Vec<String> {
    let mut message = "Identify the customer behind order A-1001.".to_string();
    let mut actions = Vec::new();
    for _ in 0..TURNLESS_LIMIT {
        let answer = turns
            .send(serde_json::json!({ "task_description": message }))
            .await;
        let action = answer["action"].as_str().unwrap_or("").to_string();
        actions.push(action.clone());
        match action.as_str() {
            "call_tool" => {
                let tool = answer["tool_name"].as_str().expect("a tool_name");
                message = format!("Executed {tool}");
            }
            "final_answer" => break,
            other => panic!("unexpected action {other:?}: {answer}"),
        }
    }
    actions
}

const FINISHED: [&str; 2] = ["call_tool", "final_answer"];

/// One HTTP/1.1 POST on `stream` (kept alive), the answer's JSON body.
async fn post(stream: &mut tokio::net::TcpStream, body: &serde_json::Value) -> serde_json::Value {
    use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
    let body = body.to_string();
    let request = format!(
        "POST /execute_task HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: keep-alive\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut reader = BufReader::new(stream);
    let mut length = None;
    let mut status = String::new();
    reader.read_line(&mut status).await.unwrap();
    assert!(status.starts_with("HTTP/1.1 200"), "{status:?}");
    loop {
        let mut header = String::new();
        reader.read_line(&mut header).await.unwrap();
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            if name.eq_ignore_ascii_case("content-length") {
                length = value.trim().parse::<usize>().ok();
            }
        }
    }
    let mut answer = vec![0; length.expect("a Content-Length")];
    reader.read_exact(&mut answer).await.unwrap();
    serde_json::from_slice(&answer).unwrap()
}

/// HTTP: every turn on one keep-alive connection.
struct KeptAlive(tokio::net::TcpStream);

impl Turns for KeptAlive {
    async fn send(&mut self, request: serde_json::Value) -> serde_json::Value {
        post(&mut self.0, &request).await
    }
}

/// HTTP: a connection per turn.
struct ConnectionPerTurn(std::net::SocketAddr);

impl Turns for ConnectionPerTurn {
    async fn send(&mut self, request: serde_json::Value) -> serde_json::Value {
        let mut stream = tokio::net::TcpStream::connect(self.0).await.unwrap();
        post(&mut stream, &request).await
    }
}

/// The turnless harness against the mock `agent` over HTTP: all turns on one keep-alive
/// connection, or a connection per turn.
async fn turnless_over_http(agent: MockAgent, keep_alive: bool) -> Vec<String> {
    let served = agent_tck::mock::fleet::serve_one(agent, Duration::from_secs(120))
        .await
        .unwrap();
    let addr = served.addrs[0];
    let actions = tokio::time::timeout(TURNLESS_DEADLINE, async {
        if keep_alive {
            let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
            turnless_run(&mut KeptAlive(stream)).await
        } else {
            turnless_run(&mut ConnectionPerTurn(addr)).await
        }
    })
    .await
    .unwrap();
    served.stop(Duration::from_secs(1)).await;
    actions
}

#[deadline::test]
async fn a_harness_that_sends_no_turn_gets_a_final_answer_over_http() {
    assert_eq!(turnless_over_http(task_agent(), true).await, FINISHED);
    assert_eq!(turnless_over_http(task_agent(), false).await, FINISHED);
    // An agent that never finishes still never does.
    let never = turnless_over_http(task_agent_behaving("never-finishes"), true).await;
    assert_eq!(never, vec!["call_tool"; TURNLESS_LIMIT]);
}

/// The stdio mock with `args`, started for one conversation (persistent: every turn on its
/// stdin) or one turn (a process per turn: the request without a newline, then stdin closed).
fn stdio_mock(args: &[&str]) -> tokio::process::Child {
    tokio::process::Command::new(env!("CARGO_BIN_EXE_agent-tck"))
        .args(["mock", "agent", "--protocol", "execute-task", "--stdio"])
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap()
}

/// stdio: one process for the conversation, a line each way per turn.
struct Pipes {
    stdin: tokio::process::ChildStdin,
    stdout: tokio::io::BufReader<tokio::process::ChildStdout>,
}

impl Turns for Pipes {
    async fn send(&mut self, request: serde_json::Value) -> serde_json::Value {
        use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
        self.stdin
            .write_all(format!("{request}\n").as_bytes())
            .await
            .unwrap();
        let mut line = String::new();
        self.stdout.read_line(&mut line).await.unwrap();
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"))
    }
}

/// The turnless harness against one persistent stdio mock: its actions, and the process's
/// output once stdin is closed (stdout: what was left after the answers).
async fn turnless_over_stdio(args: &[&str]) -> (Vec<String>, std::process::Output) {
    let mut child = stdio_mock(args);
    let mut pipes = Pipes {
        stdin: child.stdin.take().unwrap(),
        stdout: tokio::io::BufReader::new(child.stdout.take().unwrap()),
    };
    let actions = tokio::time::timeout(TURNLESS_DEADLINE, turnless_run(&mut pipes))
        .await
        .unwrap();
    let Pipes { stdin, mut stdout } = pipes;
    drop(stdin);
    let mut output = tokio::time::timeout(TURNLESS_DEADLINE, child.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    tokio::io::AsyncReadExt::read_to_end(&mut stdout, &mut output.stdout)
        .await
        .unwrap();
    (actions, output)
}

/// stdio: a process per turn, the request without a newline, then stdin closed (as a harness
/// that runs `communicate(input)` does).
struct ProcessPerTurn;

impl Turns for ProcessPerTurn {
    async fn send(&mut self, request: serde_json::Value) -> serde_json::Value {
        use tokio::io::AsyncWriteExt;
        let mut child = stdio_mock(&[]);
        let mut stdin = child.stdin.take().unwrap();
        stdin
            .write_all(request.to_string().as_bytes())
            .await
            .unwrap();
        drop(stdin);
        let output = tokio::time::timeout(TURNLESS_DEADLINE, child.wait_with_output())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(output.status.code(), Some(0), "{output:?}");
        serde_json::from_slice(&output.stdout).unwrap_or_else(|e| panic!("{e}: {output:?}"))
    }
}

#[deadline::test]
async fn a_harness_that_sends_no_turn_gets_a_final_answer_over_stdio() {
    let (actions, output) = turnless_over_stdio(&[]).await;
    assert_eq!(actions, FINISHED);
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(turnless_run(&mut ProcessPerTurn).await, FINISHED);
    let (never, output) = turnless_over_stdio(&["--behavior", "never-finishes"]).await;
    assert_eq!(never, vec!["call_tool"; TURNLESS_LIMIT]);
    assert_eq!(output.status.code(), Some(0));
}

// ---------------------------------------------------------------------------------------------
// A stdio mock says first, on stderr, where its report goes (harnesses often discard stderr).

#[deadline::test]
async fn a_stdio_mock_says_first_where_its_report_goes() {
    let dir = TempDir::new("stdio-report-notice");
    let (json, html) = (dir.path("mock.json"), dir.path("mock.html"));
    let with = ["--json", json.as_str(), "--html", html.as_str()];
    for (args, first_lines) in [
        (
            &with[..],
            vec![format!(
                "agent-tck mock agent (stdio): the readable report goes to stderr when stdin \
                 ends; the report files, rewritten after each answer: --json {json}, --html {html}"
            )],
        ),
        (
            &[][..],
            vec![
                "agent-tck mock agent (stdio): the readable report goes to stderr when stdin ends"
                    .to_string(),
                "warning: no report file asked for: the harness may discard stderr; add --json FILE"
                    .to_string(),
            ],
        ),
    ] {
        let (actions, output) = turnless_over_stdio(args).await;
        assert_eq!(actions, FINISHED, "{args:?}");
        assert_eq!(output.status.code(), Some(0), "{output:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        let lines: Vec<&str> = stderr.lines().take(first_lines.len()).collect();
        assert_eq!(lines, first_lines, "{args:?}: {stderr}");
        // Past the notice, the readable report.
        assert!(stderr.contains("execute-task"), "{stderr}");
        // Nothing but protocol lines on stdout: none left after the two answers.
        assert_eq!(String::from_utf8_lossy(&output.stdout), "", "{args:?}");
    }
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(report["protocol"], "execute-task");
    assert!(std::fs::metadata(&html).unwrap().len() > 0);
}

/// A socket: one connection for the conversation, or one per turn (as a harness that opens a
/// connection per request does); a line each way.
struct SocketTurns {
    addr: String,
    kept: Option<tokio::io::BufReader<tokio::net::TcpStream>>,
    keep_alive: bool,
}

impl Turns for SocketTurns {
    async fn send(&mut self, request: serde_json::Value) -> serde_json::Value {
        use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
        if self.kept.is_none() || !self.keep_alive {
            let stream = tokio::net::TcpStream::connect(&self.addr).await.unwrap();
            self.kept = Some(tokio::io::BufReader::new(stream));
        }
        let stream = self.kept.as_mut().unwrap();
        stream
            .get_mut()
            .write_all(format!("{request}\n").as_bytes())
            .await
            .unwrap();
        let mut line = String::new();
        stream.read_line(&mut line).await.unwrap();
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"))
    }
}

#[deadline::test]
async fn a_harness_that_sends_no_turn_gets_a_final_answer_over_a_socket() {
    let dir = TempDir::new("turnless-socket");
    let json = dir.path("mock.json");
    let args = [
        "mock",
        "agent",
        "--protocol",
        "execute-task",
        "--tcp",
        "0",
        "--json",
        json.as_str(),
    ];
    let mut mock = crate::support::Spawned::tck(&args, Duration::from_secs(120));
    let ready = mock.line();
    let addr = ready
        .rsplit_once("tcp://")
        .map(|(_, addr)| addr.trim().to_string())
        .unwrap_or_else(|| panic!("{ready}"));
    for keep_alive in [true, false] {
        let mut turns = SocketTurns {
            addr: addr.clone(),
            kept: None,
            keep_alive,
        };
        let actions = tokio::time::timeout(TURNLESS_DEADLINE, turnless_run(&mut turns))
            .await
            .unwrap();
        assert_eq!(actions, FINISHED, "keep_alive: {keep_alive}");
    }
    let output = mock.interrupt(Duration::from_secs(30));
    // Its verdict on a harness without `turn`: the request schema fails (exit 1).
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    // The report names the port bound, not the 0 asked for.
    assert_eq!(
        report["target"],
        format!("the harness that connected to tcp://{addr}")
    );
}

// ---------------------------------------------------------------------------------------------
// No silent waits: a stdio agent that never flushes stdout (the spec's Python example without
// its `sys.stdout.flush()`: with stdout a pipe, Python holds every line until it exits) fails one
// case, asked whether stdout is flushed, and the rest is skipped rather than timed out one by one;
// an agent that hangs on one request only has its other cases judged; a failing case's console
// `reproduce:` line is short, the JSON report's whole.

/// Cases skipped because an earlier exchange showed the agent's answers wait in a buffer.
fn stalled_skips(report: &Report) -> Vec<&str> {
    report
        .cases
        .iter()
        .filter(|c| c.status == Status::Skip && c.message.contains("time out the same way"))
        .map(|c| c.id.as_str())
        .collect()
}

#[deadline::test]
async fn an_agent_that_never_flushes_fails_once_and_the_rest_is_skipped() {
    let Some(python) = crate::support::python() else {
        eprintln!("python3 not found; skipped");
        return;
    };
    let dir = TempDir::new("unflushed-agent");
    let script = dir.path("agent.py");
    std::fs::write(
        &script,
        "import sys, json\nfor line in sys.stdin:\n    payload = json.loads(line)\n    print(json.dumps({\"action\": \"final_answer\", \"summary\": \"Done\"}))\n",
    )
    .unwrap();
    // `env -u`: a PYTHONUNBUFFERED=1 in the test's environment would flush for it.
    let config = StdioConfig::new(
        format!(
            "env -u PYTHONUNBUFFERED {} {}",
            shell_quote(python),
            shell_quote(&script)
        ),
        StdioMode::Persistent,
    );
    let mut s = settings(Target::Stdio(config));
    s.timeout = Duration::from_secs(3);
    let started = std::time::Instant::now();
    let report = run(&s, &|_| {}).await.unwrap();
    let took = started.elapsed();
    let failed = failures(&report);
    assert_eq!(failed.len(), 1, "{failed:#?}");
    let (id, message) = &failed[0];
    assert_eq!(id, "protocol.first-turn");
    // The case ends within its timeout and the stated margin (it once took the deadline twice:
    // 6 s for 3 s); the margin is the one --timeout's help states.
    let first = report.cases.iter().find(|c| c.id == *id).unwrap();
    let bound = s.timeout + agent_tck::protocols::execute_task::probe::TURN_MARGIN;
    assert!(
        u128::from(first.duration_ms) <= bound.as_millis(),
        "{} ms, over {bound:?}",
        first.duration_ms
    );
    assert!(first.duration_ms >= 3_000, "{} ms", first.duration_ms);
    assert!(
        crate::support::text(&crate::support::tck(&["probe", "execute-task", "--help"]))
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .contains("A turn takes at most this plus 8 s")
    );
    assert_eq!(
        agent_tck::protocols::execute_task::probe::TURN_MARGIN.as_secs(),
        8
    );
    assert!(
        message.starts_with(
            "no complete answer within 3s (the deadline); 0 bytes of it received; when its \
             stdin was closed then, 46 bytes came out: its answers wait in a buffer until its \
             input ends — is stdout flushed?"
        ),
        "{message}"
    );
    for what in [
        "sys.stdout.flush()",
        "python -u",
        "PYTHONUNBUFFERED=1",
        "stdbuf -oL",
    ] {
        assert!(message.contains(what), "{what}: {message}");
    }
    // Every other exchange: the three protocol cases, then each scenario's cases.
    let skipped = stalled_skips(&report);
    let scenarios = Scenario::builtin();
    let scenario_cases: usize = scenarios.iter().map(|s| 1 + s.expect.len()).sum();
    assert_eq!(skipped.len(), 3 + scenario_cases, "{skipped:?}");
    let unicode = report
        .cases
        .iter()
        .find(|c| c.id == "protocol.unicode")
        .unwrap();
    assert_eq!(
        unicode.message,
        "skipped: protocol.first-turn got no byte back within 3s, and the agent's output came \
         only when its stdin was closed (is stdout flushed?): this exchange would time out the \
         same way (an agent that flushes each answer's line exercises this)"
    );
    let timing = report
        .cases
        .iter()
        .find(|c| c.id == "protocol.within-timeout")
        .unwrap();
    assert_eq!(timing.status, Status::Skip, "{}", timing.message);
    assert!(
        timing
            .message
            .starts_with("skipped: the one exchange that timed out is protocol.first-turn's"),
        "{}",
        timing.message
    );
    // Before, each of the 3 + scenarios.len() exchanges waited out its 3 s (27 s and more).
    let before = Duration::from_secs(3) * (3 + 1 + scenarios.len() as u32);
    assert!(before >= Duration::from_secs(27));
    assert!(took < Duration::from_secs(15), "{took:?}");
    let identity = report
        .cases
        .iter()
        .find(|c| c.id == "protocol.identity")
        .unwrap();
    assert_eq!(
        (identity.status, identity.message.as_str()),
        (
            Status::Skip,
            "no name to look for: protocol.first-turn got no answer (is stdout flushed?), and no \
             other exchange was tried (an agent that flushes each answer's line exercises this)"
        )
    );
    assert_eq!(report.exit_code(), 1);
}

#[deadline::test]
async fn an_agent_that_hangs_on_one_request_has_its_other_cases_judged() {
    let dir = TempDir::new("hangs-once");
    let marker = dir.path("hung");
    // It ignores the first request it ever gets (the marker file remembers, across the restart
    // that follows the timeout) and answers every other one at once, flushed (sh writes each
    // line as it goes).
    let config = StdioConfig::new(
        format!(
            r#"sh -c 'while IFS= read -r l; do if [ ! -e "$0" ]; then : > "$0"; continue; fi; echo "{{\"action\":\"final_answer\",\"summary\":\"Done\"}}"; done' {}"#,
            shell_quote(&marker)
        ),
        StdioMode::Persistent,
    );
    let mut s = settings(Target::Stdio(config));
    s.timeout = Duration::from_secs(3);
    let report = run(&s, &|_| {}).await.unwrap();
    assert_eq!(stalled_skips(&report), Vec::<&str>::new());
    let status = |id: &str| {
        let c = report.cases.iter().find(|c| c.id == id).unwrap();
        (c.status, c.message.clone())
    };
    let (first, message) = status("protocol.first-turn");
    assert_eq!(first, Status::Fail);
    // Nothing came out even at the end of its input: it hangs, and the question is only asked.
    assert!(
        message.starts_with(
            "no complete answer within 3s (the deadline); 0 bytes of it received — is stdout \
             flushed?"
        ),
        "{message}"
    );
    for id in [
        "protocol.unknown-tool",
        "protocol.long-history",
        "protocol.unicode",
    ] {
        assert_eq!(status(id).0, Status::Pass, "{id}: {}", status(id).1);
    }
    for scenario in Scenario::builtin() {
        let (completes, message) = status(&format!("{}.completes", scenario.id));
        assert_eq!(completes, Status::Pass, "{}: {message}", scenario.id);
    }
    let (timing, message) = status("protocol.within-timeout");
    assert_eq!(timing, Status::Fail);
    assert!(message.starts_with("1 of "), "{message}");
}

#[deadline::test]
async fn a_failing_cases_console_reproduce_line_is_short_and_the_json_whole() {
    // Every answer is `{}`: each protocol case fails with the request it sent.
    let config = StdioConfig::new(
        r#"sh -c 'while IFS= read -r l; do echo "{}"; done'"#,
        StdioMode::Persistent,
    );
    let mut s = settings(Target::Stdio(config));
    s.only = vec!["protocol.*".into()];
    let report = run(&s, &|_| {}).await.unwrap();
    let long = report
        .cases
        .iter()
        .find(|c| c.id == "protocol.long-history")
        .unwrap();
    assert_eq!(long.status, Status::Fail, "{}", long.message);
    let whole = long.exchange.reproduce.clone().unwrap();
    assert!(whole.len() > 20_000, "{}", whole.len());
    assert!(whole.starts_with("echo '{"), "{whole:.100}");
    // The JSON report holds the whole command.
    let json: serde_json::Value = serde_json::to_value(&report).unwrap();
    let in_json = json["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == "protocol.long-history")
        .unwrap()["exchange"]["reproduce"]
        .clone();
    assert_eq!(in_json, serde_json::Value::String(whole.clone()));
    let console = agent_tck::report::console::render(&report, false);
    let lines: Vec<&str> = console
        .lines()
        .filter(|l| l.trim_start().starts_with("reproduce:"))
        .collect();
    assert_eq!(lines.len(), 4, "{console}");
    for line in &lines {
        assert!(line.chars().count() < 1_100, "{line}");
    }
    // The long history's: its start, its end (the program), and where the rest is.
    let shown = lines
        .iter()
        .find(|l| l.ends_with(&whole[whole.len() - 100..]))
        .unwrap();
    assert!(shown.chars().count() < 700, "{shown}");
    assert!(
        shown.contains(
            "characters left out; the whole command is in the JSON report (--json FILE), at the \
             case's exchange.reproduce] … "
        ),
        "{shown}"
    );
    assert!(shown.contains(&whole[..200]), "{shown}");
}

/// A socket agent whose writer is never flushed (a Python `socket.makefile('w')` without
/// `flush()`): it writes its answers only when its input ends. One failure asks whether its
/// output is flushed, and the rest is skipped.
#[deadline::test]
async fn a_socket_agent_that_never_flushes_fails_once_and_the_rest_is_skipped() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let (rd, mut wr) = stream.into_split();
                let mut lines = tokio::io::BufReader::new(rd).lines();
                let mut held = Vec::new();
                while let Ok(Some(_)) = lines.next_line().await {
                    held.extend_from_slice(b"{\"action\":\"final_answer\",\"summary\":\"Done\"}\n");
                }
                let _ = wr.write_all(&held).await;
            });
        }
    });
    let mut s = settings(Target::Socket {
        addr: SocketAddrSpec::Tcp(addr.to_string()),
        mode: SocketMode::Persistent,
    });
    s.timeout = Duration::from_secs(3);
    let started = std::time::Instant::now();
    let report = run(&s, &|_| {}).await.unwrap();
    let took = started.elapsed();
    server.abort();
    let failed = failures(&report);
    assert_eq!(failed.len(), 1, "{failed:#?}");
    assert_eq!(failed[0].0, "protocol.first-turn");
    assert!(
        failed[0].1.starts_with(
            "no complete answer within 3s (the deadline); 0 bytes of it received; when our side \
             of the connection was shut down then, 43 bytes came out: its answers wait in a \
             buffer until its input ends — is its output flushed?"
        ),
        "{}",
        failed[0].1
    );
    let scenario_cases: usize = Scenario::builtin().iter().map(|s| 1 + s.expect.len()).sum();
    assert_eq!(stalled_skips(&report).len(), 3 + scenario_cases);
    assert!(took < Duration::from_secs(15), "{took:?}");
}

/// An execute_task agent over HTTP that dies after six answers: one failure names the death
/// (agent.alive), and no case fails on the exchanges it cut.
#[deadline::test]
async fn an_http_agent_that_dies_mid_run_is_named_once_and_nothing_fails_on_its_death() {
    let served = serve_http(task_agent()).await;
    let to = served.urls[0]
        .trim_start_matches("http://")
        .parse()
        .unwrap();
    let relay = crate::support::relay(to, crate::support::Death::AtConnection(6)).await;
    let target = Target::Http {
        base: BaseUrl::parse(&relay.url).unwrap(),
        api_key: None,
    };
    let report = tokio::time::timeout(Duration::from_secs(120), run(&settings(target), &|_| {}))
        .await
        .expect("the probe ends")
        .unwrap();
    let alive = crate::support::case(&report, "agent.alive");
    assert_eq!(alive.status, Status::Fail, "{}", alive.message);
    assert!(
        alive.message.contains("stopped answering at +"),
        "{}",
        alive.message
    );
    let resting: Vec<_> = failures(&report)
        .into_iter()
        .filter(|(id, m)| {
            id != "agent.alive"
                && ["reset", "unreachable", "closed", "refused"]
                    .iter()
                    .any(|w| m.contains(w))
        })
        .collect();
    assert!(
        resting.is_empty(),
        "verdicts rest on the death: {resting:#?}"
    );
    assert!(report
        .cases
        .iter()
        .any(|c| c.status == Status::Skip && c.message.contains("went down at +")));
    assert_eq!(report.exit_code(), 1);
}

/// The same over a TCP socket (a connection per call): the agent's death is named once.
#[deadline::test]
async fn a_socket_agent_that_dies_mid_run_is_named_once_and_nothing_fails_on_its_death() {
    let stop = CancellationToken::new();
    let tcp = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let to = tcp.local_addr().unwrap();
    tokio::spawn(agent_tck::mock::line_server::serve_tcp(
        Arc::new(LineService::judged(
            task_agent(),
            &PlatformExpect::timeout(Duration::from_secs(120)),
        )),
        tcp,
        stop.clone(),
    ));
    let relay = crate::support::relay(to, crate::support::Death::AtConnection(6)).await;
    let target = Target::Socket {
        addr: SocketAddrSpec::Tcp(relay.url.trim_start_matches("http://").to_string()),
        mode: SocketMode::PerCall,
    };
    let report = tokio::time::timeout(Duration::from_secs(120), run(&settings(target), &|_| {}))
        .await
        .expect("the probe ends")
        .unwrap();
    stop.cancel();
    let alive = crate::support::case(&report, "agent.alive");
    assert_eq!(alive.status, Status::Fail, "{}", alive.message);
    let failing: Vec<_> = failures(&report)
        .into_iter()
        .filter(|(id, _)| id != "agent.alive")
        .collect();
    assert!(
        failing.is_empty(),
        "verdicts rest on the death: {failing:#?}"
    );
}

/// A stdio agent that exits before answering the run's very first request, with nothing on
/// stdout (a mistyped script path: the interpreter's "can't open file" on stderr), could not
/// start: one failure says so, quoting its stderr, and every other case that needs an exchange
/// is skipped naming it (before, each of nine failed with the same exit). One that answered
/// once and then dies on each request is judged case by case, never "could not start".
#[deadline::test]
async fn an_agent_that_cannot_start_is_said_once() {
    let not_started = StdioConfig::new(
        "sh -c 'echo \"sh: 0: cannot open agent.py: No such file\" >&2; exit 2'",
        StdioMode::Persistent,
    );
    let report = run(&settings(Target::Stdio(not_started)), &|_| {})
        .await
        .unwrap();
    let failed = failures(&report);
    assert_eq!(failed.len(), 1, "{failed:#?}");
    assert_eq!(
        failed[0],
        (
            "protocol.first-turn".to_string(),
            "the agent could not start: it exited (status 2) at its very first request, before \
             answering, with nothing on stdout; stderr: sh: 0: cannot open agent.py: No such file"
                .to_string()
        )
    );
    let exchanged: Vec<&str> = report
        .cases
        .iter()
        .filter(|c| c.status == Status::Skip && c.message.contains("the agent could not start"))
        .map(|c| c.id.as_str())
        .collect();
    let scenarios = Scenario::builtin();
    let scenario_cases: usize = scenarios.iter().map(|s| 1 + s.expect.len()).sum();
    // The three other protocol cases, the scenarios' cases, and the run-wide ones with no
    // answer to judge (the timing, the name, the sanitization, the harness notes).
    assert!(
        exchanged.len() >= 3 + scenario_cases,
        "{exchanged:?}\n{:#?}",
        report.cases
    );
    assert!(exchanged.contains(&"protocol.unknown-tool"));
    assert_eq!(report.exit_code(), 1);

    // Answers once, then exits: heard, so each later exit is that exchange's own.
    let dies_later = StdioConfig::new(
        "sh -c 'read line; echo \"{\\\"action\\\": \\\"final_answer\\\", \\\"summary\\\": \\\"x\\\"}\"; exit 3'",
        StdioMode::Persistent,
    );
    let report = run(&settings(Target::Stdio(dies_later)), &|_| {})
        .await
        .unwrap();
    assert!(
        report
            .cases
            .iter()
            .all(|c| !c.message.contains("could not start")),
        "{:#?}",
        report.cases
    );
    assert_eq!(
        report
            .cases
            .iter()
            .find(|c| c.id == "protocol.first-turn")
            .unwrap()
            .status,
        Status::Pass
    );
}
