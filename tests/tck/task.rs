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

fn settings(target: Target) -> TaskSettings {
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

fn mock_command(extra: &str) -> String {
    format!(
        "{} mock agent --protocol execute-task --stdio --name stdio-mock {extra}",
        shell_quote(env!("CARGO_BIN_EXE_agent-tck"))
    )
}

fn task_agent() -> MockAgent {
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
        parse_list("conforming", crate::support::execute_task()).unwrap(),
        1,
        reference,
    )
}

#[tokio::test]
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

#[tokio::test]
async fn the_conforming_mock_passes_every_case_on_every_transport() {
    let stop = CancellationToken::new();
    // HTTP, through the fleet's engine.
    let served = agent_tck::mock::fleet::serve(
        vec![task_agent()],
        agent_tck::mock::fleet::Layout::PerAgent,
        "127.0.0.1".parse().unwrap(),
        0,
        agent_tck::mock::journal::Journal::off(std::time::Instant::now()),
        agent_tck::mock::observe::observer_for(
            &agent_tck::protocols::execute_task::Agents,
            &agent_tck::mock::protocol::PlatformExpect::timeout(Duration::from_secs(120)),
        ),
    )
    .await
    .unwrap();
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

#[tokio::test]
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

#[tokio::test]
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
#[tokio::test]
async fn an_http_task_mock_judges_its_harness_by_execute_tasks_rules() {
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
    assert_eq!(
        schema.spec,
        "POST /execute_task: Request Body; Local Subprocess Protocol; Socket Protocol"
    );
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
#[tokio::test]
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
#[tokio::test]
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
    assert!(
        timing
            .message
            .starts_with("there is no answer to time: none of the")
            && timing.message.contains("exit"),
        "{}",
        timing.message
    );
    assert!(report
        .cases
        .iter()
        .any(|c| c.id == "protocol.first-turn" && c.status == Status::Fail));
}
