//! `agent-tck proxy --protocol execute-task --stdio "CMD"` as a harness runs it: the proxy is the
//! harness's agent command, the kit's own stdio mock agent is the real agent, and the harness is
//! this test (it writes request lines to the proxy's stdin and reads answer lines from its
//! stdout). The relay is judged by what the harness receives, the verdicts by the reports.

use std::io::Write;
use std::time::Duration;

use serde_json::{json, Value};

use crate::support::{case_statuses, tck_command, tck_within, text, Spawned, TempDir};

const KEY: &str = "proxy-stdio-key-61d0c2";

/// Long enough for a busy 2-core machine; the hang test ends well before it.
const DEADLINE: Duration = Duration::from_secs(60);

fn first_turn(task: &str) -> String {
    json!({"task_description": task, "turn": 1, "conversation_history": []}).to_string()
}

/// The proxy relaying to the kit's stdio mock agent with `behavior` (None: conforming), with
/// `extra` flags; the harness's end of its stdin.
fn proxy(behavior: Option<&str>, extra: &[&str]) -> (Spawned, std::process::ChildStdin) {
    let mut agent = "agent-tck mock agent --protocol execute-task --stdio --seed 3".to_string();
    if let Some(b) = behavior {
        agent.push_str(&format!(" --behavior {b}"));
    }
    let mut args = vec![
        "proxy",
        "--protocol",
        "execute-task",
        "--stdio",
        &agent,
        "--seed",
        "5",
    ];
    args.extend(extra);
    Spawned::fed(tck_command(&args), DEADLINE)
}

fn send(stdin: &mut std::process::ChildStdin, line: &str) {
    stdin
        .write_all(format!("{line}\n").as_bytes())
        .and_then(|()| stdin.flush())
        .expect("write to the proxy's stdin");
}

fn read_json(path: &str) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn status_of<'a>(statuses: &'a [(String, String)], id: &str) -> &'a str {
    statuses
        .iter()
        .find(|(i, _)| i == id)
        .map(|(_, s)| s.as_str())
        .unwrap_or_else(|| panic!("no case {id} in {statuses:?}"))
}

fn case<'a>(report: &'a Value, id: &str) -> &'a Value {
    report["cases"]
        .as_array()
        .and_then(|cases| cases.iter().find(|c| c["id"] == id))
        .unwrap_or_else(|| panic!("no case {id} in {report}"))
}

/// A conforming agent through the proxy: the harness gets its answers line for line (stdout
/// holds nothing else), the conversation goes on to its second turn, both sides pass, and the
/// proxy exits with the agent's status (0).
#[test]
fn a_conforming_agent_passes_and_the_harness_gets_its_lines_unchanged() {
    let dir = TempDir::new("proxy-stdio-ok");
    let json_path = dir.path("ok.json");
    let (mut proxy, mut stdin) = proxy(None, &["--json", &json_path, "--timeout", "20s"]);
    let task = "What plan is cust_123 on?";
    send(&mut stdin, &first_turn(task));
    let first: Value = serde_json::from_str(&proxy.line()).expect("the answer is one JSON line");
    let action = first["action"].as_str().expect("an action").to_string();
    // The harness's second turn, as the spec's multi-turn flow writes it.
    let tool = first["tool_name"].as_str().unwrap_or("lookup_order");
    let second = json!({
        "task_description": format!("Tool '{tool}' returned: {{\"plan\": \"Pro\"}}. Continue."),
        "turn": 2,
        "conversation_history": [
            {"role": "user", "content": task},
            {"role": "assistant", "content": first.to_string()},
        ],
    });
    send(&mut stdin, &second.to_string());
    let answer: Value = serde_json::from_str(&proxy.line()).expect("the second answer");
    assert!(answer["action"].is_string(), "{answer}");
    drop(stdin);
    let status = proxy.wait();
    let out = proxy.output(status);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    // Nothing of the proxy's on stdout: the two answer lines only.
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(stdout.lines().count(), 2, "{stdout}");
    assert!(stdout.contains(&action), "{stdout}");
    let report = read_json(&json_path);
    let statuses = case_statuses(&report);
    let failed: Vec<_> = statuses.iter().filter(|(_, s)| s == "fail").collect();
    assert!(failed.is_empty(), "{failed:?}\n{}", text(&out));
    assert_eq!(status_of(&statuses, "stdio/protocol.first-turn"), "pass");
    assert_eq!(status_of(&statuses, "harness.turns"), "pass");
    assert_eq!(case(&report, "harness.turns")["evidence"]["judged"], 2);
    assert_eq!(
        case(&report, "stdio/protocol.first-turn")["group"],
        "agent stdio"
    );
}

/// An agent whose answer is not JSON: the harness gets the bytes as the agent wrote them, and
/// the agent is failed by the probe's own case, under its party.
#[test]
fn a_malformed_answer_is_relayed_as_it_came_and_blamed_on_the_agent() {
    let dir = TempDir::new("proxy-stdio-bad");
    let json_path = dir.path("bad.json");
    let (mut proxy, mut stdin) = proxy(Some("malformed-json"), &["--json", &json_path]);
    send(&mut stdin, &first_turn("What plan is cust_123 on?"));
    let line = proxy.line();
    assert!(serde_json::from_str::<Value>(&line).is_err(), "{line}");
    drop(stdin);
    let status = proxy.wait();
    let out = proxy.output(status);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let report = read_json(&json_path);
    let first = case(&report, "stdio/protocol.first-turn");
    assert_eq!(first["status"], "fail", "{first}");
    assert_eq!(first["group"], "agent stdio");
    let message = first["message"].as_str().unwrap_or("");
    assert!(
        message.starts_with("stdio broke it in 1 of 1 /execute_task answers")
            && message.contains("not valid JSON"),
        "{message}"
    );
    // The harness went on (it ended its input cleanly): not the harness's fault.
    let statuses = case_statuses(&report);
    assert_eq!(status_of(&statuses, "harness.after-bad-answer"), "pass");
}

/// The agent's children, as /proc lists them.
fn children(pid: u32) -> Vec<u32> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    tasks
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("children")).ok())
        .flat_map(|c| {
            c.split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect::<Vec<u32>>()
        })
        .collect()
}

/// The agent the proxy started, once it runs (the proxy's child).
fn started_agent(proxy: &Spawned) -> u32 {
    let until = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(&pid) = children(proxy.id()).first() {
            return pid;
        }
        assert!(
            std::time::Instant::now() < until,
            "the proxy started no agent"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Whether `pid` is a process that runs (a zombie does not).
fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            let state = stat
                .rsplit_once(')')?
                .1
                .split_whitespace()
                .next()?
                .to_string();
            Some(state != "Z" && state != "X")
        })
        .unwrap_or(false)
}

/// An agent that never answers while the harness waits: at the deadline the proxy ends its
/// process group (no process of it is left), the harness's stdout ends, and the agent is
/// failed for it by the probe's time case, saying it hung.
#[test]
fn a_hanging_agent_is_killed_at_the_deadline_and_blamed() {
    let dir = TempDir::new("proxy-stdio-hang");
    let json_path = dir.path("hang.json");
    let record = format!("{}/", dir.path("rec"));
    let (mut proxy, mut stdin) = proxy(
        Some("hang"),
        &[
            "--record",
            &record,
            "--json",
            &json_path,
            "--timeout",
            "1s",
            "--platform-timeout",
            "1s",
        ],
    );
    send(&mut stdin, &first_turn("What plan is cust_123 on?"));
    // The agent is the proxy's child; found once it runs.
    let agent = started_agent(&proxy);
    // The harness keeps its stdin open: only the deadline ends the wait.
    let status = proxy.wait();
    drop(stdin);
    let out = proxy.output(status);
    assert!(
        !running(agent),
        "the agent (pid {agent}) outlived the proxy"
    );
    assert!(out.stdout.is_empty(), "{}", text(&out));
    let report = read_json(&json_path);
    let time = case(&report, "stdio/protocol.within-timeout");
    assert_eq!(time["status"], "fail", "{time}");
    assert_eq!(time["group"], "agent stdio");
    let message = time["message"].as_str().unwrap_or("");
    assert!(
        message.contains("the agent hung")
            && message.contains("ended the agent's process group at the deadline"),
        "{message}"
    );
    // Its recording judged again: the same verdicts, the same words.
    let judged_path = dir.path("judged.json");
    let out = tck_within(&["judge", &record, "--json", &judged_path], DEADLINE);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let verdicts = |r: &Value| -> Vec<(Value, Value, Value)> {
        r["cases"]
            .as_array()
            .map(|cases| {
                cases
                    .iter()
                    .map(|c| (c["id"].clone(), c["status"].clone(), c["message"].clone()))
                    .collect()
            })
            .unwrap_or_default()
    };
    assert_eq!(verdicts(&read_json(&judged_path)), verdicts(&report));
}

/// Two conversations, two proxy processes at once recording into one directory; `agent-tck
/// judge DIR` judges both together.
#[test]
fn two_processes_record_into_one_directory_and_judge_judges_both() {
    let dir = TempDir::new("proxy-stdio-rec");
    let record = format!("{}/", dir.path("recordings"));
    let mut running = Vec::new();
    for task in ["What plan is cust_123 on?", "Is order A-1001 shipped?"] {
        let (mut proxy, mut stdin) = proxy(None, &["--record", &record]);
        send(&mut stdin, &first_turn(task));
        proxy.line();
        running.push((proxy, stdin));
    }
    for (mut proxy, stdin) in running {
        drop(stdin);
        let status = proxy.wait();
        let out = proxy.output(status);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    }
    let files = std::fs::read_dir(&record).expect("the directory").count();
    assert_eq!(files, 2, "a recording per conversation");
    let json_path = dir.path("judged.json");
    let out = tck_within(&["judge", &record, "--json", &json_path], DEADLINE);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let report = read_json(&json_path);
    assert_eq!(
        case(&report, "platform.reached-proxy")["evidence"]["judged"],
        2
    );
    assert_eq!(
        case(&report, "stdio/protocol.first-turn")["evidence"]["judged"],
        2
    );
    assert_eq!(case(&report, "harness.turns")["status"], "pass");
}

/// A key given for the agent (and passed in its command) is in no report, no recording and
/// nothing the proxy prints.
#[test]
fn the_agents_key_is_in_no_output() {
    let dir = TempDir::new("proxy-stdio-key");
    let (json, junit, html) = (dir.path("k.json"), dir.path("k.xml"), dir.path("k.html"));
    let record = format!("{}/", dir.path("rec"));
    let agent = format!("agent-tck mock agent --protocol execute-task --stdio --api-key {KEY}");
    let key_arg = format!("stdio={KEY}");
    let args = [
        "proxy",
        "--protocol",
        "execute-task",
        "--stdio",
        &agent,
        "--agent-key",
        &key_arg,
        "--record",
        &record,
        "--json",
        &json,
        "--junit",
        &junit,
        "--html",
        &html,
    ];
    let (mut proxy, mut stdin) = Spawned::fed(tck_command(&args), DEADLINE);
    send(&mut stdin, &first_turn("What plan is cust_123 on?"));
    proxy.line();
    drop(stdin);
    let status = proxy.wait();
    let out = proxy.output(status);
    assert!(!text(&out).contains(KEY), "{}", text(&out));
    let mut files = vec![json, junit, html];
    for entry in std::fs::read_dir(&record)
        .expect("the recording directory")
        .flatten()
    {
        files.push(entry.path().display().to_string());
    }
    assert_eq!(files.len(), 4, "{files:?}");
    for file in files {
        let content = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert!(!content.contains(KEY), "{file} holds the key");
    }
}

/// What the stdio proxy refuses, each naming the flag.
#[test]
fn stdio_flags_that_do_not_fit_are_usage_errors() {
    let agent = "agent-tck mock agent --protocol execute-task --stdio";
    for (args, needle) in [
        (
            vec![
                "--protocol",
                "execute-task",
                "--stdio",
                agent,
                "--agent",
                "a=http://127.0.0.1:9",
            ],
            "--stdio and --agent",
        ),
        (
            vec!["--protocol", "roundtable", "--stdio", agent],
            "--stdio: --protocol roundtable",
        ),
        (
            vec![
                "--protocol",
                "execute-task",
                "--stdio",
                agent,
                "--fault",
                "stdio=reset",
            ],
            "--fault stdio=reset: reset is a fault below HTTP",
        ),
        (
            vec![
                "--protocol",
                "execute-task",
                "--stdio",
                agent,
                "--record",
                "one.jsonl",
            ],
            "--record one.jsonl: under --stdio each conversation is its own process",
        ),
        (
            vec![
                "--protocol",
                "execute-task",
                "--stdio",
                agent,
                "--fault",
                "stdio=request:hang",
            ],
            "--fault stdio=request:hang: hang is not applied over stdio",
        ),
        (
            vec![
                "--protocol",
                "execute-task",
                "--stdio",
                agent,
                "--fault",
                "stdio=request:reset",
            ],
            "--fault stdio=request:reset: reset is a fault below lines",
        ),
        (
            vec![
                "--protocol",
                "execute-task",
                "--stdio",
                agent,
                "--judging",
                "spare",
            ],
            "--judging spare: not with --stdio",
        ),
    ] {
        let mut all = vec!["proxy"];
        all.extend(args);
        let out = tck_within(&all, DEADLINE);
        assert_eq!(out.status.code(), Some(2), "{all:?}: {}", text(&out));
        assert!(text(&out).contains(needle), "{all:?}: {}", text(&out));
        assert!(
            out.stdout.is_empty(),
            "{all:?}: stdout holds {}",
            text(&out)
        );
    }
}

/// A fault on the real agent's answer line: the harness receives the bent line and is judged on
/// what it received (a bad answer it took cleanly), the agent on what it sent (it passes).
#[test]
fn a_fault_bends_the_real_answer_line_and_the_agent_is_judged_on_its_own() {
    let dir = TempDir::new("proxy-stdio-fault");
    let json_path = dir.path("fault.json");
    let (mut proxy, mut stdin) = proxy(
        None,
        &["--json", &json_path, "--fault", "stdio=malformed-json"],
    );
    send(&mut stdin, &first_turn("What plan is cust_123 on?"));
    let line = proxy.line();
    assert!(serde_json::from_str::<Value>(&line).is_err(), "{line}");
    drop(stdin);
    let status = proxy.wait();
    let out = proxy.output(status);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let report = read_json(&json_path);
    assert_eq!(case(&report, "stdio/protocol.first-turn")["status"], "pass");
    let after_bad = case(&report, "harness.after-bad-answer");
    assert_eq!(after_bad["status"], "pass", "{after_bad}");
    assert_eq!(after_bad["evidence"]["judged"], 1, "{after_bad}");
}

/// The harness gives up (SIGINT to its agent command) while the agent is still working: the
/// agent's group is ended, the report is written saying what ended the relay, and the agent is
/// not blamed for an answer the harness did not wait for.
#[test]
fn a_harness_that_gives_up_ends_the_agent_and_the_reports_say_so() {
    let dir = TempDir::new("proxy-stdio-int");
    let json_path = dir.path("int.json");
    let (proxy, mut stdin) = proxy(
        Some("hang"),
        &[
            "--json",
            &json_path,
            "--timeout",
            "60s",
            "--platform-timeout",
            "60s",
        ],
    );
    send(&mut stdin, &first_turn("What plan is cust_123 on?"));
    let agent = started_agent(&proxy);
    // The request reached the agent before the harness gives up (the report counts it).
    let until = std::time::Instant::now() + Duration::from_secs(30);
    while !std::fs::read_to_string(format!("/proc/{agent}/io"))
        .is_ok_and(|io| !io.contains("rchar: 0\n"))
    {
        assert!(std::time::Instant::now() < until, "the agent read nothing");
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = proxy.interrupt(Duration::from_secs(20));
    drop(stdin);
    assert!(
        !running(agent),
        "the agent (pid {agent}) outlived the proxy"
    );
    let report = read_json(&json_path);
    let notes = report["notes"].to_string();
    assert!(
        notes.contains("Ctrl-C ended the proxy"),
        "{notes}\n{}",
        text(&out)
    );
    let time = case(&report, "stdio/protocol.within-timeout");
    assert_ne!(time["status"], "fail", "{time}");
    assert_eq!(case(&report, "platform.reached-proxy")["status"], "pass");
}

/// The proxy killed outright (`kill -9`: no signal it can catch, no report): the agent it
/// started is killed with it, not left an orphan. The agent here reads nothing and writes
/// nothing (`sleep`): the end of its pipes would never end it.
#[test]
fn an_agent_dies_with_a_proxy_killed_outright() {
    let (mut proxy, mut stdin) = Spawned::fed(
        tck_command(&[
            "proxy",
            "--protocol",
            "execute-task",
            "--stdio",
            "sleep 120",
            "--timeout",
            "60s",
        ]),
        DEADLINE,
    );
    send(&mut stdin, &first_turn("What plan is cust_123 on?"));
    let agent = started_agent(&proxy);
    let pid = libc::pid_t::try_from(proxy.id()).expect("a pid");
    // SAFETY: kill(2) on our child, not yet waited for (its pid is not reused); no memory.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGKILL) }, 0);
    let status = proxy.wait();
    drop(stdin);
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(libc::SIGKILL)
    );
    let until = std::time::Instant::now() + Duration::from_secs(20);
    while running(agent) {
        assert!(
            std::time::Instant::now() < until,
            "the agent (pid {agent}) outlived the proxy killed outright"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `--fault stdio=request:null-bytes`: the harness's request line reaches the agent with a NUL
/// in its longest string (the kit's stdio agent repeats its input, so the harness sees it came
/// through), the harness is judged on the line it sent, and protocol.first-turn judges the
/// answers to the bent lines: a conforming agent holds it, one that answers garbage breaks it,
/// named for the bent request; `judge DIR` says the same of the recording.
#[test]
fn a_request_fault_bends_the_harness_line_the_agent_reads() {
    for (behavior, expect) in [(None, "pass"), (Some("malformed-json"), "fail")] {
        let dir = TempDir::new("proxy-stdio-bent");
        let json_path = dir.path("bent.json");
        let record = format!("{}/", dir.path("rec"));
        let (mut proxy, mut stdin) = proxy(
            behavior,
            &[
                "--fault",
                "stdio=request:null-bytes",
                "--record",
                &record,
                "--json",
                &json_path,
                "--timeout",
                "20s",
            ],
        );
        send(&mut stdin, &first_turn("What plan is cust_123 on?"));
        let answer = proxy.line();
        if behavior.is_none() {
            assert!(
                answer.contains("(after a NUL)"),
                "the agent did not get the bent line: {answer}"
            );
        }
        drop(stdin);
        let status = proxy.wait();
        let out = proxy.output(status);
        assert_eq!(status.code(), Some(0), "{}", text(&out));
        let report = read_json(&json_path);
        let first = case(&report, "stdio/protocol.first-turn");
        assert_eq!(first["status"], expect, "{first}");
        if expect == "fail" {
            let message = first["message"].as_str().unwrap_or("");
            assert!(
                message.contains("to a request the proxy bent (null-bytes)"),
                "{message}"
            );
        }
        let bent = case(&report, "proxy.requests-bent");
        assert_eq!(bent["status"], "pass", "{bent}");
        assert_eq!(bent["evidence"]["judged"], 1, "{bent}");
        // The harness is judged on the line it sent, which had no NUL.
        assert_eq!(case(&report, "platform.request-schema")["status"], "pass");
        let judged_path = dir.path("judged.json");
        let out = tck_within(&["judge", &record, "--json", &judged_path], DEADLINE);
        assert!(out.status.code().is_some(), "{}", text(&out));
        let again = read_json(&judged_path);
        for id in ["stdio/protocol.first-turn", "proxy.requests-bent"] {
            assert_eq!(
                case(&again, id)["status"],
                case(&report, id)["status"],
                "{id}: {}",
                case(&again, id)
            );
        }
    }
}

/// A line the proxy holds (`request:slow`) past the deadline: the relay ends at the deadline
/// with the agent given the line only just, or not at all; the agent is not failed for an
/// answer the proxy's hold kept it from giving.
#[test]
fn a_line_held_past_the_deadline_is_not_the_agents_hang() {
    let dir = TempDir::new("proxy-stdio-held");
    let json_path = dir.path("held.json");
    let (mut proxy, mut stdin) = proxy(
        None,
        &[
            "--fault",
            "stdio=request:slow:3s",
            "--json",
            &json_path,
            "--timeout",
            "1s",
            "--platform-timeout",
            "1s",
        ],
    );
    send(&mut stdin, &first_turn("What plan is cust_123 on?"));
    let status = proxy.wait();
    drop(stdin);
    let out = proxy.output(status);
    let report = read_json(&json_path);
    let time = case(&report, "stdio/protocol.within-timeout");
    assert_ne!(time["status"], "fail", "{time}\n{}", text(&out));
    let first = case(&report, "stdio/protocol.first-turn");
    assert_ne!(first["status"], "fail", "{first}");
    assert_eq!(case(&report, "proxy.requests-bent")["status"], "pass");
}

/// `judge` judges a recorded JSON request by its request schema of now, as it judges every
/// other rule again: a finding the recording kept (a schema since corrected, here one written
/// into the file) is not repeated.
#[test]
fn judge_validates_a_recorded_request_by_the_schema_of_now() {
    let dir = TempDir::new("proxy-stdio-rejudge");
    let record = format!("{}/", dir.path("rec"));
    let (mut proxy, mut stdin) = proxy(None, &["--record", &record, "--timeout", "20s"]);
    send(&mut stdin, &first_turn("What plan is cust_123 on?"));
    proxy.line();
    drop(stdin);
    let status = proxy.wait();
    let out = proxy.output(status);
    assert_eq!(status.code(), Some(0), "{}", text(&out));
    let files: Vec<_> = std::fs::read_dir(dir.path("rec"))
        .expect("the recording directory")
        .flatten()
        .map(|f| f.path())
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    let kept = std::fs::read_to_string(&files[0]).expect("the recording");
    let stale = r#""findings":[{"path":"$","message":"required field \"stale\" is missing"}]"#;
    assert!(kept.contains(r#""findings":[]"#), "{kept}");
    std::fs::write(&files[0], kept.replace(r#""findings":[]"#, stale)).expect("rewrite");
    let judged_path = dir.path("judged.json");
    let out = tck_within(&["judge", &record, "--json", &judged_path], DEADLINE);
    assert!(out.status.code().is_some(), "{}", text(&out));
    let schema = case(&read_json(&judged_path), "platform.request-schema").clone();
    assert_eq!(schema["status"], "pass", "{schema}");
    assert!(!schema.to_string().contains("stale"), "{schema}");
}
