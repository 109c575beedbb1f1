//! Every verdict earned (execute_task): peers that give nothing to judge, break one rule, or conform.

use std::process::Stdio;
use std::time::Duration;

use agent_tck::protocols::execute_task::probe::{run, Target, TaskSettings};
use agent_tck::protocols::execute_task::scenario::Scenario;
use agent_tck::report::{CaseResult, Kind, Level, Report, Status};
use agent_tck::transport::http::BaseUrl;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use crate::harness_judged::{agent, post, session, settled, stdio_harness, GroupEnd, LIMIT};
use crate::support::{self, assert_every_verdict_explained, TempDir};

/// The case `id`'s status, message and evidence count (0 when none).
fn verdict<'a>(report: &'a Report, id: &str) -> (Status, &'a str, u64) {
    let c: &CaseResult = support::case(report, id);
    let judged = c.evidence.as_ref().map_or(0, |e| e.judged);
    (c.status, c.message.as_str(), judged)
}

// ---------------------------------------------------------------------------------------------
// Probe role

fn probe_settings(base: &str) -> TaskSettings {
    TaskSettings {
        target: Target::Http {
            base: BaseUrl::parse(base).unwrap(),
            api_key: None,
        },
        timeout: Duration::from_secs(5),
        max_body: 1 << 20,
        max_turns: None,
        scenarios: Scenario::builtin(),
        seed: support::SEED,
        only: Vec::new(),
        strict: false,
        min_score: None,
        tape: Default::default(),
    }
}

/// A 404 is no answer: nothing but reachability passes, the exchanges fail naming the status,
/// and every case judged across the run is skipped saying what was missing.
#[deadline::test]
async fn a_server_with_no_routes_passes_nothing_but_reachability() {
    let server = support::no_routes().await;
    let base = server.url();
    let report = tokio::time::timeout(
        Duration::from_secs(60),
        run(&probe_settings(&base), &|_| {}),
    )
    .await
    .unwrap()
    .unwrap();
    assert_every_verdict_explained(&report);
    let passed: Vec<&str> = report
        .cases
        .iter()
        .filter(|c| c.status == Status::Pass && c.kind == Kind::Conformance)
        .filter(|c| c.level != Level::May)
        .map(|c| c.id.as_str())
        .collect();
    assert_eq!(passed, ["agent.reachable"]);
    let (_, _, judged) = verdict(&report, "agent.reachable");
    assert_eq!(judged, 1);
    let (s, m, _) = verdict(&report, "protocol.content-type");
    assert_eq!(s, Status::Skip, "{m}");
    assert!(
        m.starts_with("no 2xx answer whose Content-Type to judge")
            && m.contains("answered HTTP 404"),
        "{m}"
    );
    let (s, m, _) = verdict(&report, "protocol.first-turn");
    assert_eq!(s, Status::Fail, "{m}");
    assert!(m.contains("answered HTTP 404; expected 200"), "{m}");
    for id in [
        "protocol.within-timeout",
        "protocol.identity",
        "protocol.sanitization",
        "protocol.reference-harness",
    ] {
        let (s, m, _) = verdict(&report, id);
        assert_eq!(s, Status::Skip, "{id}: {m}");
        assert!(
            m.contains("none of the") && m.contains("404") && m.contains("exercises this"),
            "{id}: {m}"
        );
    }
    assert_eq!(report.exit_code(), 1);
}

/// The conforming agent, over HTTP: every case judged across the run passes on evidence.
#[deadline::test]
async fn the_conforming_agent_passes_on_evidence() {
    let (url, stop, _mock) = support::mock_session(
        &agent_tck::protocols::execute_task::Agents,
        agent("conforming"),
    )
    .await;
    let report = run(&probe_settings(&url), &|_| {}).await.unwrap();
    stop.send(()).unwrap();
    assert_every_verdict_explained(&report);
    for id in [
        "protocol.first-turn",
        "protocol.within-timeout",
        "protocol.identity",
        "protocol.content-type",
        "protocol.sanitization",
        "protocol.reference-harness",
    ] {
        let (s, m, judged) = verdict(&report, id);
        assert_eq!(s, Status::Pass, "{id}: {m}");
        assert!(judged > 0, "{id}");
    }
    let ct = support::case(&report, "protocol.content-type");
    assert_eq!(
        ct.evidence.as_ref().unwrap().of,
        "HTTP answers with a 2xx status"
    );
    assert_eq!(report.exit_code(), 0);
}

// ---------------------------------------------------------------------------------------------
// Mock role over HTTP

/// Serves the mock agent with `behavior`, lets `drive` play the harness against its URL, and
/// returns the mock's report (the turn limit expected: 5).
async fn judging<F, Fut>(behavior: &str, drive: F) -> Report
where
    F: FnOnce(String) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let (url, stop, report) = session(behavior).await;
    tokio::time::timeout(Duration::from_secs(60), drive(url))
        .await
        .unwrap();
    stop.send(()).unwrap();
    report.await.unwrap().unwrap()
}

/// One exchange: the answer as JSON (the test fails without one).
async fn ask(url: &str, request: &Value) -> Value {
    let body = serde_json::to_vec(request).unwrap();
    let answer = post(url, &body, Some(Duration::from_secs(10)))
        .await
        .expect("an answer");
    serde_json::from_slice(&answer).unwrap()
}

/// A harness that sends only `task_description` (no turn, no history): `requests` per
/// conversation, the next one carrying the result of the tool the agent called.
async fn turnless(url: String, conversations: usize, requests: usize) {
    for c in 0..conversations {
        let mut task = format!("Look up order A-{c}.");
        for _ in 0..requests {
            let answer = ask(&url, &json!({ "task_description": task })).await;
            let Some(tool) = answer["tool_name"].as_str() else {
                break;
            };
            task = format!("Tool '{tool}' returned: {{\"status\": \"shipped\"}}. Continue.");
        }
    }
}

/// No `turn` in 20 requests: the turn rules say so (the field, the count) instead of "no
/// requests"; tool results and the turn limit are still judged, by the results the requests
/// carry.
#[deadline::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_harness_without_turn_is_judged_on_what_it_sent() {
    let report = judging("never-finishes", |url| turnless(url, 4, 5)).await;
    assert_every_verdict_explained(&report);
    for id in ["harness.turns", "harness.history", "harness.loop-ends"] {
        let (s, m, _) = verdict(&report, id);
        assert_eq!(s, Status::Skip, "{id}: {m}");
        assert!(
            m.contains("20 of the 20 requests carry no `turn`"),
            "{id}: {m}"
        );
    }
    let (s, m, judged) = verdict(&report, "harness.tool-results");
    assert_eq!((s, judged), (Status::Pass, 16), "{m}");
    assert!(m.contains("came without `turn`"), "{m}");
    let (s, m, judged) = verdict(&report, "harness.turn-limit");
    assert_eq!((s, judged), (Status::Pass, 16), "{m}");
    assert!(
        m.contains("4 conversations the agent never ended, the longest stopped at turn 5"),
        "{m}"
    );
    let (s, m, _) = verdict(&report, "platform.request-schema");
    assert_eq!(s, Status::Fail, "{m}");
    assert!(m.contains("turn"), "{m}");
}

/// The same harness without a turn limit: past 5 requests of one conversation, counted by the
/// tool results that link them.
#[deadline::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_harness_without_turn_or_limit_breaks_the_limit_by_count() {
    let report = judging("never-finishes", |url| turnless(url, 2, 7)).await;
    let (s, m, judged) = verdict(&report, "harness.turn-limit");
    assert_eq!((s, judged), (Status::Fail, 12), "{m}");
    assert!(
        m.contains("request 6 of a conversation followed by its tool results (no `turn`), past --expect-max-turns 5"),
        "{m}"
    );
}

/// A conversation with turns and history, whose second task_description is `feedback`.
async fn governed(url: String, feedback: &str) {
    let mut history: Vec<Value> = Vec::new();
    let mut task = "Look up order A-1001.".to_string();
    for turn in 1..=3 {
        let answer = ask(
            &url,
            &json!({"task_description": task, "turn": turn, "conversation_history": history}),
        )
        .await;
        history.push(json!({"role": "user", "content": task}));
        history.push(json!({"role": "assistant", "content": answer.to_string()}));
        let tool = answer["tool_name"].as_str().unwrap_or("lookup_order");
        task = if turn == 1 {
            feedback.to_string()
        } else {
            format!("Tool '{tool}' returned: {{\"status\": \"shipped\"}}. Continue.")
        };
    }
}

const DICT: &str =
    "{'error': 'GOVERNANCE ERROR: Amount 100 exceeds maximum allowed limit of 50. Please adjust.'}";
const SPEC: &str =
    "GOVERNANCE ERROR: Amount 100 exceeds maximum allowed limit of 50. Please adjust.";

/// A policy violation sent as a Python dict's repr is noted (every request is looked at), and
/// it still carries the tool's result; the spec's text leaves nothing to note.
#[deadline::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_policy_violation_as_a_python_dict_is_noted() {
    let report = judging("never-finishes", |url| governed(url, DICT)).await;
    assert_every_verdict_explained(&report);
    let (s, m, judged) = verdict(&report, "harness.reference-forms");
    assert_eq!((s, judged), (Status::Pass, 3), "{m}");
    assert!(
        m.starts_with("1 task_description in the reference harness's forms")
            && m.contains("a policy violation as a Python dict's repr"),
        "{m}"
    );
    let (s, m, judged) = verdict(&report, "harness.tool-results");
    assert_eq!((s, judged), (Status::Pass, 2), "{m}");

    let report = judging("never-finishes", |url| governed(url, SPEC)).await;
    let (s, m, judged) = verdict(&report, "harness.reference-forms");
    assert_eq!((s, judged), (Status::Pass, 3), "{m}");
    assert!(m.starts_with("nothing to note"), "{m}");
}

// ---------------------------------------------------------------------------------------------
// Mock role over stdio

/// Runs `agent-tck mock agent --stdio` (persistent) with `behavior`, sends `requests` one line
/// each, reads each answer, closes stdin; returns the answers and the --json report.
async fn stdio_session(behavior: &str, requests: &[Value], json: &str) -> (Vec<Value>, Report) {
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_agent-tck"))
        .args(["mock", "agent", "--protocol", "execute-task", "--stdio"])
        .args(["--name", "judge", "--behavior", behavior, "--json", json])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut answers = Vec::new();
    for request in requests {
        stdin
            .write_all(format!("{request}\n").as_bytes())
            .await
            .unwrap();
        let mut line = String::new();
        tokio::time::timeout(Duration::from_secs(30), stdout.read_line(&mut line))
            .await
            .unwrap()
            .unwrap();
        answers.push(serde_json::from_str(&line).unwrap());
    }
    drop(stdin);
    let exit = tokio::time::timeout(Duration::from_secs(30), child.wait())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(exit.code(), Some(0));
    let report = serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
    (answers, report)
}

/// `ignores-governance` acts on the dict form of the feedback too; an agent whose behaviour
/// never took effect says so, naming it.
#[deadline::test]
async fn a_behaviour_that_never_took_effect_is_reported() {
    let dir = TempDir::new("ignores-governance");
    let call =
        json!({"action": "call_tool", "tool_name": "apply_refund", "tool_params": {"amount": 100}});
    let first =
        json!({"task_description": "Refund order ord_9.", "turn": 1, "conversation_history": []});
    let history = json!([
        {"role": "user", "content": "Refund order ord_9."},
        {"role": "assistant", "content": call.to_string()},
    ]);
    let dict = json!({"task_description": DICT, "turn": 2, "conversation_history": history});
    let json = dir.path("applied.json");
    let (answers, report) =
        stdio_session("ignores-governance", &[first.clone(), dict], &json).await;
    assert_eq!(answers[1]["tool_params"]["amount"], 100, "{}", answers[1]);
    let (s, m, judged) = verdict(&report, "agent.behaviors-applied");
    assert_eq!((s, judged), (Status::Pass, 1), "{m}");
    assert!(m.contains("ignores-governance on 1 answer"), "{m}");
    // Lines carry no headers: the cases judged on them are not in a stdio mock's report.
    for http_only in ["platform.bearer", "platform.no-stray-bearer"] {
        assert!(
            report.cases.iter().all(|c| c.id != http_only),
            "{http_only} in a stdio report"
        );
    }
    assert_eq!(
        report.command.as_deref(),
        Some("mock agent --protocol execute-task")
    );

    let json = dir.path("never.json");
    let (_, report) = stdio_session("ignores-governance", &[first], &json).await;
    assert_every_verdict_explained(&report);
    let (s, m, _) = verdict(&report, "agent.behaviors-applied");
    assert_eq!(s, Status::Skip, "{m}");
    assert!(
        m.starts_with(
            "judge: never took effect: ignores-governance (execute_task: after governance feedback"
        ),
        "{m}"
    );
}

/// A SIGTERM from a process other than the harness (here `kill`, started by the test) does not
/// count as the harness ending the group: FAIL, naming the sender.
#[deadline::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signal_from_an_outsider_is_not_the_harness_ending_the_group() {
    let dir = TempDir::new("outsider");
    let json = dir.path("outsider.json");
    stdio_harness("forks-and-exits", true, GroupEnd::Outsider, &json, &[]).await;
    let (status, message) = settled(&json, "stdio.kills-process-group").await;
    assert_eq!(status, "fail", "{message}");
    assert!(
        message.contains("got SIGTERM from pid") && message.contains(", not from the harness (pid"),
        "{message}"
    );
}

/// A harness that never ends the group and keeps the agent's stdout open: the child fails the
/// case once the bound (--expect-timeout + 5 s) has passed; a signal later is not credited.
#[deadline::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_left_past_the_bound_fails() {
    let dir = TempDir::new("past-bound");
    let json = dir.path("past.json");
    let args = ["--expect-timeout", "1s"];
    let held = stdio_harness("forks-and-exits", true, GroupEnd::HoldsStdout, &json, &args).await;
    let (status, message) = settled(&json, "stdio.kills-process-group").await;
    assert_eq!(status, "fail", "{message}");
    assert!(
        message.contains("still running 6 s after the agent exited")
            && message.contains("never ended the agent's process group"),
        "{message}"
    );
    drop(held);
}

/// One per-turn exchange, as the reference harness does it: a process for the turn, the request
/// written without a newline, stdin closed, stdout read to its end.
async fn per_turn(json: &str, request: &Value) -> Value {
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_agent-tck"))
        .args(["mock", "agent", "--protocol", "execute-task", "--stdio"])
        .args(["--name", "judge", "--behavior", "never-finishes"])
        .args(["--expect-max-turns", "5", "--json", json])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(request.to_string().as_bytes())
        .await
        .unwrap();
    drop(stdin);
    let out = tokio::time::timeout(Duration::from_secs(30), child.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// A per-turn harness: 4 conversations of 5 turns, a process per turn, all with the same --json.
/// The report counts every turn of the run, and follows conversations across the processes.
#[deadline::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_processes_of_a_per_turn_run_fold_one_report() {
    let dir = TempDir::new("per-turn-fold");
    let json = dir.path("run.json");
    for c in 0..4 {
        let mut history: Vec<Value> = Vec::new();
        let mut task = format!("Look up order A-{c}.");
        for turn in 1..=LIMIT {
            let request =
                json!({"task_description": task, "turn": turn, "conversation_history": history});
            let answer = per_turn(&json, &request).await;
            history.push(json!({"role": "user", "content": task}));
            history.push(json!({"role": "assistant", "content": answer.to_string()}));
            let tool = answer["tool_name"].as_str().unwrap();
            task = format!("Tool '{tool}' returned: {{\"status\": \"shipped\"}}. Continue.");
        }
    }
    let report: Report = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_every_verdict_explained(&report);
    let (s, m, judged) = verdict(&report, "platform.request-schema");
    assert_eq!((s, judged), (Status::Pass, 20), "{m}");
    let (s, m, judged) = verdict(&report, "harness.turns");
    assert_eq!((s, judged), (Status::Pass, 20), "{m}");
    let (s, m, judged) = verdict(&report, "harness.history");
    assert_eq!((s, judged), (Status::Pass, 16), "{m}");
    let (s, m, _) = verdict(&report, "harness.turn-limit");
    assert_eq!(s, Status::Pass, "{m}");
    assert!(
        m.contains("4 conversations the agent never ended, the longest stopped at turn 5"),
        "{m}"
    );
}

/// A journal an earlier run left (last written an hour ago, by a process of another parent) is
/// not folded into this run's report.
#[deadline::test]
async fn an_earlier_runs_journal_is_started_afresh() {
    let dir = TempDir::new("stale-journal");
    let json = dir.path("run.json");
    let request =
        json!({"task_description": "Look up order A-1.", "turn": 1, "conversation_history": []});
    per_turn(&json, &request).await;
    per_turn(&json, &request).await;
    let journal = format!("{json}.journal");
    let report: Report = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(verdict(&report, "harness.turns").2, 2, "the same run folds");
    // The earlier run's writer: another parent, an hour ago.
    let text = std::fs::read_to_string(&journal).unwrap().replace(
        &format!("\"parent\":{}", std::process::id()),
        "\"parent\":1",
    );
    std::fs::write(&journal, text).unwrap();
    let touched = std::process::Command::new("touch")
        .args(["-d", "1 hour ago", &journal])
        .status()
        .unwrap();
    assert!(touched.success());
    per_turn(&json, &request).await;
    let report: Report = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let (s, m, judged) = verdict(&report, "harness.turns");
    assert_eq!((s, judged), (Status::Pass, 1), "{m}");
}

/// A scenario file that cannot be read is the user's input wherever it is named: exit 2 and
/// the file named, before anything is run (`ScenarioError` is a usage error by type).
#[test]
fn an_unreadable_scenario_file_is_a_usage_error_everywhere() {
    let dir = TempDir::new("unreadable-scenario");
    let missing = dir.0.join("missing.yaml").display().to_string();
    let expected = format!(
        "agent-tck: error: {missing}: cannot read: No such file or directory (os error 2)\n"
    );
    for args in [
        vec![
            "probe",
            "execute-task",
            "--stdio",
            "true",
            "--scenario",
            &missing,
        ],
        vec![
            "mock",
            "agent",
            "--protocol",
            "execute-task",
            "--stdio",
            "--scenario",
            &missing,
        ],
        vec![
            "suites",
            "list",
            "--protocol",
            "execute-task",
            "--suite",
            &missing,
        ],
    ] {
        let out = support::tck_within(&args, std::time::Duration::from_secs(60));
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            support::text(&out)
        );
        assert_eq!(String::from_utf8_lossy(&out.stderr), expected, "{args:?}");
        assert!(out.stdout.is_empty(), "{args:?}: {}", support::text(&out));
    }
}
