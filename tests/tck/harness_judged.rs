//! The mock role for execute_task judges the harness: a small reference harness (here, over HTTP
//! and stdio) is judged clean against every behaviour that tests a harness, and each variant
//! with one flaw is caught by exactly its check.

use std::process::Stdio;
use std::time::Duration;

use agent_tck::mock::agent::{MockAgent, Profile};
use agent_tck::mock::behavior::parse_list;
use agent_tck::mock::protocol::PlatformExpect;
use agent_tck::protocols::execute_task::reference::TaskAgent;
use agent_tck::protocols::execute_task::scenario::Scenario;
use agent_tck::report::{Report, Status};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

use crate::support::{self, TempDir};

/// How a harness goes wrong (the reference harness has no flaw).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Flaws {
    /// Runs until the agent ends the loop (capped at 12 turns here, to end the test).
    pub(crate) no_turn_limit: bool,
    /// Waits for an answer as long as it takes.
    pub(crate) no_timeout: bool,
    /// On an answer that is not JSON, writes half of a next request and dies.
    pub(crate) crashes_on_malformed: bool,
    /// Every request says turn 1.
    pub(crate) turn_stuck: bool,
    /// Sends an empty history every turn.
    pub(crate) forgets_history: bool,
}

/// The harness: the spec's loop, a turn limit of 5, a 1 s deadline per turn.
pub(crate) struct Harness {
    pub(crate) url: String,
    pub(crate) flaws: Flaws,
}

pub(crate) const LIMIT: u32 = 5;
pub(crate) const DEADLINE: Duration = Duration::from_secs(1);

/// What one turn's exchange gave.
enum Got {
    Answer(Vec<u8>),
    /// Gave up at the deadline, or the connection failed.
    Nothing,
}

impl Harness {
    /// POST /execute_task over a fresh connection; `half`: dies in the middle of writing it.
    async fn post(&self, body: &[u8], half: bool) -> Got {
        let deadline = (!self.flaws.no_timeout).then_some(DEADLINE);
        if !half {
            return match post(&self.url, body, deadline).await {
                Some(answer) => Got::Answer(answer),
                None => Got::Nothing,
            };
        }
        let (addr, prefix) = split_url(&self.url);
        let Ok(mut stream) = TcpStream::connect(addr).await else {
            return Got::Nothing;
        };
        // Dies in the middle of writing: the head and half the body, then gone.
        let head = request_head(addr, prefix, body.len());
        let _ = stream.write_all(head.as_bytes()).await;
        let _ = stream.write_all(&body[..body.len() / 2]).await;
        Got::Nothing
    }

    /// One conversation from `task`.
    pub(crate) async fn run(&self, task: &str) {
        let mut history: Vec<Value> = Vec::new();
        let mut description = task.to_string();
        let limit = if self.flaws.no_turn_limit { 12 } else { LIMIT };
        for turn in 1..=limit {
            let request = json!({
                "task_description": description,
                "turn": if self.flaws.turn_stuck { 1 } else { turn },
                "conversation_history": if self.flaws.forgets_history { Vec::new() } else { history.clone() },
            });
            let body = serde_json::to_vec(&request).unwrap();
            let Got::Answer(bytes) = self.post(&body, false).await else {
                return;
            };
            let Ok(answer) = serde_json::from_slice::<Value>(&bytes) else {
                if self.flaws.crashes_on_malformed {
                    let next = json!({"task_description": "Continue.", "turn": turn + 1, "conversation_history": history});
                    self.post(&serde_json::to_vec(&next).unwrap(), true).await;
                }
                return;
            };
            history.push(json!({"role": "user", "content": description}));
            history.push(json!({"role": "assistant", "content": answer.to_string()}));
            let tools: Vec<String> = match answer["action"].as_str() {
                Some("call_tool") => vec![answer["tool_name"].as_str().unwrap_or("").to_string()],
                Some("call_multiple_tools") => answer["tool_names"]
                    .as_array()
                    .map(|l| {
                        l.iter()
                            .filter_map(|t| t.as_str().map(str::to_string))
                            .collect()
                    })
                    .unwrap_or_default(),
                Some("branch") => Vec::new(),
                _ => return,
            };
            description = tools
                .iter()
                .map(|t| format!("Tool '{t}' returned: {{\"ok\": true}}."))
                .collect::<Vec<_>>()
                .join(" ")
                + " Continue.";
        }
    }
}

/// `http://HOST:PORT/PREFIX` as the address to connect to and the path prefix (`/agents/a`,
/// a proxy's, or empty).
fn split_url(url: &str) -> (&str, &str) {
    let rest = url.trim_start_matches("http://");
    match rest.find('/') {
        Some(slash) => (&rest[..slash], rest[slash..].trim_end_matches('/')),
        None => (rest, ""),
    }
}

fn request_head(addr: &str, prefix: &str, len: usize) -> String {
    format!(
        "POST {prefix}/execute_task HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {len}\r\nConnection: close\r\n\r\n"
    )
}

/// POST /execute_task to `url` over a fresh connection (HTTP/1.1, closed after the answer): the
/// answer's body, or None when it failed or took longer than `deadline`.
pub(crate) async fn post(url: &str, body: &[u8], deadline: Option<Duration>) -> Option<Vec<u8>> {
    let (addr, prefix) = split_url(url);
    let mut stream = TcpStream::connect(addr).await.ok()?;
    stream
        .write_all(request_head(addr, prefix, body.len()).as_bytes())
        .await
        .ok()?;
    stream.write_all(body).await.ok()?;
    let mut answer = Vec::new();
    let read = stream.read_to_end(&mut answer);
    match deadline {
        Some(d) => tokio::time::timeout(d, read).await.ok()?.ok()?,
        None => read.await.ok()?,
    };
    let text = String::from_utf8_lossy(&answer);
    text.split_once("\r\n\r\n")
        .map(|(_, body)| body.as_bytes().to_vec())
}

pub(crate) fn agent(behavior: &str) -> MockAgent {
    let profile = Profile {
        name: "judge".into(),
        domain: "support".into(),
        capabilities: Vec::new(),
        api_key: None,
    };
    let reference = Box::new(TaskAgent::with_scenarios("judge", &Scenario::builtin()));
    MockAgent::with_responder(
        &agent_tck::protocols::execute_task::Agents,
        profile,
        parse_list(behavior, crate::support::execute_task()).unwrap(),
        3,
        reference,
    )
}

/// A mock execute_task agent with `behavior`, served as a session that expects the harness's
/// deadline and turn limit ([`DEADLINE`], [`LIMIT`]): its URL, the stop, the report to come.
pub(crate) async fn session(
    behavior: &str,
) -> (
    String,
    tokio::sync::oneshot::Sender<()>,
    tokio::task::JoinHandle<Result<Report, agent_tck::error::Error>>,
) {
    recorded_session(behavior, None).await
}

/// What the mock expects of the harness: [`DEADLINE`], [`LIMIT`].
pub(crate) const EXPECT: PlatformExpect = PlatformExpect {
    timeout: DEADLINE,
    max_turns: Some(LIMIT),
};

/// [`session`], the harness's exchanges recorded to `record` when given.
async fn recorded_session(
    behavior: &str,
    record: Option<std::path::PathBuf>,
) -> (
    String,
    tokio::sync::oneshot::Sender<()>,
    tokio::task::JoinHandle<Result<Report, agent_tck::error::Error>>,
) {
    support::mock_session_recording(
        &agent_tck::protocols::execute_task::Agents,
        agent(behavior),
        EXPECT,
        record,
    )
    .await
}

/// Serves a mock with `behavior`, runs the harness through `tasks`, and returns the mock's
/// report. `linger` keeps the mock serving that long after the harness is done (a harness
/// stuck waiting is then still waiting when the mock stops).
async fn judged(behavior: &str, flaws: Flaws, tasks: &[&str], linger: Duration) -> Report {
    judged_recording(behavior, flaws, tasks, linger, None).await
}

/// [`judged`], the harness's exchanges recorded to `record` when given.
pub(crate) async fn judged_recording(
    behavior: &str,
    flaws: Flaws,
    tasks: &[&str],
    linger: Duration,
    record: Option<std::path::PathBuf>,
) -> Report {
    let (url, stop, report) = recorded_session(behavior, record).await;
    let harness = Harness { url, flaws };
    let tasks: Vec<String> = tasks.iter().map(|t| t.to_string()).collect();
    let run = tokio::spawn(async move {
        for task in tasks {
            harness.run(&task).await;
        }
    });
    if linger.is_zero() {
        run.await.unwrap();
        stop.send(()).unwrap();
    } else {
        // The harness still waiting: the mock stops first, then the harness is dropped.
        tokio::time::sleep(linger).await;
        stop.send(()).unwrap();
        let report = report.await.unwrap().unwrap();
        run.abort();
        return report;
    }
    report.await.unwrap().unwrap()
}

fn failing(report: &Report) -> Vec<&str> {
    report
        .cases
        .iter()
        .filter(|c| c.status == Status::Fail)
        .map(|c| c.id.as_str())
        .collect()
}

fn status<'a>(report: &'a Report, id: &str) -> (Status, &'a str) {
    let c = support::case(report, id);
    (c.status, c.message.as_str())
}

pub(crate) const TASKS: &[&str] = &["Look up customer cust_1.", "Refund order ord_9."];

#[deadline::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reference_harness_is_judged_clean_against_every_behaviour() {
    // Conforming: every rule about turns, history and tool results judged, none broken.
    let report = judged("conforming", Flaws::default(), TASKS, Duration::ZERO).await;
    assert_eq!(failing(&report), Vec::<&str>::new(), "{:#?}", report.cases);
    assert_eq!(report.protocol, "execute-task");
    for id in [
        "harness.turns",
        "harness.history",
        "harness.tool-results",
        "harness.loop-ends",
    ] {
        assert_eq!(
            status(&report, id).0,
            Status::Pass,
            "{id}: {}",
            status(&report, id).1
        );
    }
    assert!(
        !report
            .cases
            .iter()
            .any(|c| c.id.starts_with("platform.challenge")),
        "no round-table rule judges an execute_task harness"
    );
    // Never finishes: the harness stops at its limit.
    let report = judged("never-finishes", Flaws::default(), TASKS, Duration::ZERO).await;
    assert_eq!(failing(&report), Vec::<&str>::new(), "{:#?}", report.cases);
    let (s, m) = status(&report, "harness.turn-limit");
    assert_eq!(s, Status::Pass, "{m}");
    assert!(m.contains("the longest stopped at turn 5"), "{m}");
    // Hang: the harness gives up at its deadline.
    let report = judged("hang", Flaws::default(), &TASKS[..1], Duration::ZERO).await;
    assert_eq!(failing(&report), Vec::<&str>::new(), "{:#?}", report.cases);
    let (s, m) = status(&report, "harness.deadline");
    assert_eq!(s, Status::Pass, "{m}: {:#?}", report.cases);
    assert!(m.contains("gave up on 1"), "{m}");
    // Malformed JSON: the harness ends the scenario cleanly.
    let report = judged("malformed-json", Flaws::default(), TASKS, Duration::ZERO).await;
    assert_eq!(failing(&report), Vec::<&str>::new(), "{:#?}", report.cases);
    assert_eq!(status(&report, "harness.after-bad-answer").0, Status::Pass);
}

#[deadline::test(secs = 900, flavor = "multi_thread", worker_threads = 2)]
async fn each_flawed_harness_is_caught_by_exactly_its_check() {
    let _heavy = crate::support::heavy().await;
    let cases: &[(&str, Flaws, &str, &str)] = &[
        (
            "never-finishes",
            Flaws {
                no_turn_limit: true,
                ..Flaws::default()
            },
            "harness.turn-limit",
            "turn 6, past --expect-max-turns 5",
        ),
        (
            "malformed-json",
            Flaws {
                crashes_on_malformed: true,
                ..Flaws::default()
            },
            "harness.after-bad-answer",
            "a half-written request",
        ),
        (
            "conforming",
            Flaws {
                turn_stuck: true,
                ..Flaws::default()
            },
            "harness.turns",
            "turn 1 with 2 history entries",
        ),
        (
            "conforming",
            Flaws {
                forgets_history: true,
                ..Flaws::default()
            },
            "harness.history",
            "the previous exchange is not in it",
        ),
    ];
    for (behavior, flaws, check, needle) in cases {
        let report = judged(behavior, *flaws, TASKS, Duration::ZERO).await;
        assert_eq!(
            failing(&report),
            vec![*check],
            "{flaws:?}: {:#?}",
            report.cases
        );
        let (_, message) = status(&report, check);
        assert!(message.contains(needle), "{flaws:?}: {message}");
    }
    // No timeout: still waiting on the hanging agent when the mock stops, 3 s later.
    let flaws = Flaws {
        no_timeout: true,
        ..Flaws::default()
    };
    let report = judged("hang", flaws, &TASKS[..1], Duration::from_secs(3)).await;
    assert_eq!(
        failing(&report),
        vec!["harness.deadline"],
        "{:#?}",
        report.cases
    );
    let (_, message) = status(&report, "harness.deadline");
    assert!(message.contains("still waiting after"), "{message}");
}

/// How a stdio harness is done with the agent's process group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum GroupEnd {
    /// The harness (this test's process, the agent's parent) sends SIGTERM to the group.
    Kills,
    /// The harness only closes the pipes.
    ClosesPipes,
    /// Another process (`kill`, started here) sends SIGTERM to the group; the harness does not.
    Outsider,
    /// The harness neither ends the group nor closes the agent's stdout (it returns it, open).
    HoldsStdout,
}

/// A stdio harness: starts `agent-tck mock agent --stdio` (with `args`) in its own process
/// group, sends one request, reads the answer; then, as told, drains stderr or not, and ends the
/// group as `ends` says. Returns the agent's stdout when the harness holds it open.
pub(crate) async fn stdio_harness(
    behavior: &str,
    drains_stderr: bool,
    ends: GroupEnd,
    json: &str,
    args: &[&str],
) -> Option<BufReader<tokio::process::ChildStdout>> {
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_agent-tck"))
        .args([
            "mock",
            "agent",
            "--protocol",
            "execute-task",
            "--stdio",
            "--name",
            "judge",
        ])
        .args(["--behavior", behavior, "--json", json, "--seed", "1"])
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(if drains_stderr {
            Stdio::null()
        } else {
            Stdio::piped()
        })
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let pgid = child.id().unwrap() as i32;
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let request =
        json!({"task_description": "Look up cust_1.", "turn": 1, "conversation_history": []});
    stdin
        .write_all(format!("{request}\n").as_bytes())
        .await
        .unwrap();
    let mut line = String::new();
    tokio::time::timeout(Duration::from_secs(30), stdout.read_line(&mut line))
        .await
        .unwrap()
        .unwrap();
    assert!(line.contains("\"action\""), "{line}");
    // The end of the run: stdin closed, the agent gone (a forking agent exits by itself, the
    // others at the end of their input); then the group ended, or not.
    drop(stdin);
    let _ = tokio::time::timeout(Duration::from_secs(30), child.wait()).await;
    match ends {
        // SAFETY: a group we made (process_group(0) above), never 0 or -1.
        GroupEnd::Kills => unsafe {
            libc::killpg(pgid, libc::SIGTERM);
        },
        GroupEnd::Outsider => {
            let sent = std::process::Command::new("kill")
                .args(["-TERM", "--", &format!("-{pgid}")])
                .status()
                .unwrap();
            assert!(sent.success(), "kill -TERM -{pgid}: {sent}");
        }
        GroupEnd::HoldsStdout => return Some(stdout),
        GroupEnd::ClosesPipes => {}
    }
    None
}

/// The report's case `id` once it is no longer skipped (the child a forking agent leaves settles
/// its case a moment after the agent is gone).
pub(crate) async fn settled(json: &str, id: &str) -> (String, String) {
    for _ in 0..200 {
        if let Ok(text) = std::fs::read_to_string(json) {
            if let Ok(report) = serde_json::from_str::<Value>(&text) {
                if let Some(c) = report["cases"]
                    .as_array()
                    .and_then(|cs| cs.iter().find(|c| c["id"] == id))
                {
                    if c["status"] != "skip" {
                        return (
                            c["status"].as_str().unwrap().into(),
                            c["message"].as_str().unwrap().into(),
                        );
                    }
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{id} never settled in {json}");
}

#[deadline::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stdio_harness_must_drain_stderr_and_end_the_process_group() {
    let dir = TempDir::new("stdio-harness");
    // Drains stderr: the flood goes through.
    let json = dir.path("drains.json");
    stdio_harness("stderr-flood:bytes=1MB", true, GroupEnd::Kills, &json, &[]).await;
    assert_eq!(settled(&json, "stdio.drains-stderr").await.0, "pass");
    // Never reads stderr: the 1 MB flood blocks on a full pipe, and the mock says so.
    let json = dir.path("blocks.json");
    stdio_harness("stderr-flood:bytes=1MB", false, GroupEnd::Kills, &json, &[]).await;
    let (status, message) = settled(&json, "stdio.drains-stderr").await;
    assert_eq!(status, "fail", "{message}");
    assert!(
        message.contains("does not read the agent's stderr"),
        "{message}"
    );
    // Ends the group: the child the agent left is signalled.
    let json = dir.path("kills.json");
    stdio_harness("forks-and-exits", true, GroupEnd::Kills, &json, &[]).await;
    let (status, message) = settled(&json, "stdio.kills-process-group").await;
    assert_eq!(status, "pass", "{message}");
    assert!(
        message.contains("the harness (pid") && message.contains("got SIGTERM from it"),
        "{message}"
    );
    // Only closes the pipes: the child outlives them, and says so (then exits itself).
    let json = dir.path("leaves.json");
    stdio_harness("forks-and-exits", true, GroupEnd::ClosesPipes, &json, &[]).await;
    let (status, message) = settled(&json, "stdio.kills-process-group").await;
    assert_eq!(status, "fail", "{message}");
    assert!(
        message.contains("end the agent's process group"),
        "{message}"
    );
}

#[test]
fn a_socket_mock_judges_its_harness_and_reports_when_stopped() {
    use crate::support::{tck_within, text, Spawned, RUN_DEADLINE};
    let dir = TempDir::new("tcp-judge");
    let json = dir.path("mock.json");
    let mut mock = Spawned::tck(
        &[
            "mock",
            "agent",
            "--protocol",
            "execute-task",
            "--tcp",
            "0",
            "--behavior",
            "never-finishes",
            "--expect-max-turns",
            "5",
            "--json",
            &json,
        ],
        RUN_DEADLINE,
    );
    let banner = mock.line();
    let addr = banner
        .trim()
        .rsplit_once("tcp://")
        .map(|(_, a)| a.to_string())
        .unwrap_or_else(|| panic!("{banner}"));
    // agent-tck's own harness drives it: the scenario's turn limit (5) ends each conversation.
    let probe = tck_within(
        &[
            "probe",
            "execute-task",
            "--tcp",
            &addr,
            "--only",
            "customer-support.*",
        ],
        RUN_DEADLINE,
    );
    // The never-finishing agent meets no conformance rule it breaks: exit 0 (scored, not failed).
    assert_eq!(probe.status.code(), Some(0), "{}", text(&probe));
    // Ctrl-C: the mock reports and ends (or is killed, failing the test, 30 s on).
    let out = mock.interrupt(Duration::from_secs(30));
    let rest = text(&out);
    assert_eq!(out.status.code(), Some(0), "{rest}");
    let report: Report = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(report.protocol, "execute-task");
    let (s, m) = status(&report, "harness.turn-limit");
    assert_eq!(s, Status::Pass, "{m}");
    assert!(m.contains("stopped at turn 5"), "{m}");
    assert_eq!(status(&report, "harness.turns").0, Status::Pass);
    assert!(rest.contains("harness.turn-limit"), "{rest}");
}
