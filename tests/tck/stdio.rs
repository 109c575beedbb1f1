//! The stdio line transport against small hostile agents written in `sh` (and, where python3 is
//! installed, Python): every exchange ends by its deadline, memory stays bounded, and no process
//! of the agent's group survives.

use std::time::{Duration, Instant};

use agent_tck::text::shell_quote;
use agent_tck::transport::stdio::{LineError, StdioAgent, StdioConfig, StdioMode};
use serde_json::Value;

const LONG: Duration = Duration::from_secs(20);

fn start(command: &str, mode: StdioMode) -> StdioAgent {
    StdioAgent::new(StdioConfig::new(command, mode)).expect("valid command")
}

fn json(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes)
        .unwrap_or_else(|e| panic!("{e}: {:?}", String::from_utf8_lossy(bytes)))
}

/// `/proc/<pid>/stat` fields after the command name: state, ppid, pgrp.
fn stat(pid: i32) -> Option<(String, i32)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &text[text.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.to_string();
    let pgrp = fields.nth(1)?.parse().ok()?;
    Some((state, pgrp))
}

/// Running (not a zombie).
fn alive(pid: i32) -> bool {
    stat(pid).is_some_and(|(state, _)| state != "Z" && state != "X")
}

/// Processes of group `pgid` still running.
fn group_members(pgid: i32) -> Vec<i32> {
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        if let Some((state, pgrp)) = stat(pid) {
            if pgrp == pgid && state != "Z" && state != "X" {
                pids.push(pid);
            }
        }
    }
    pids
}

/// Waits (up to 3s) for group `pgid` to be empty; returns what is left.
async fn group_gone(pgid: i32) -> Vec<i32> {
    let until = Instant::now() + Duration::from_secs(3);
    loop {
        let left = group_members(pgid);
        if left.is_empty() || Instant::now() > until {
            return left;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The pid an agent wrote to stderr as `child <pid>`.
async fn child_pid(agent: &StdioAgent) -> i32 {
    let until = Instant::now() + Duration::from_secs(5);
    loop {
        let tail = agent.stderr().tail;
        if let Some(pid) = tail
            .lines()
            .find_map(|l| l.strip_prefix("child ").and_then(|p| p.trim().parse().ok()))
        {
            return pid;
        }
        assert!(Instant::now() < until, "no child pid on stderr: {tail:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Answers each line with its length and the shell's pid.
const ECHO_LEN: &str =
    r#"sh -c 'while IFS= read -r line; do printf "{\"len\":%d,\"pid\":%d}\n" "${#line}" $$; done'"#;

#[deadline::test]
async fn persistent_agent_answers_many_exchanges_on_one_process() {
    let mut agent = start(ECHO_LEN, StdioMode::Persistent);
    assert_eq!(agent.pid(), None);
    let mut pids = Vec::new();
    for turn in 1..=3u64 {
        let request = format!(r#"{{"task_description":"t","turn":{turn}}}"#);
        let answer = agent.exchange(request.as_bytes(), LONG).await.unwrap();
        assert_eq!(answer.line_no, turn);
        assert!(answer.elapsed < LONG);
        let value = json(&answer.text);
        assert_eq!(value["len"], request.len());
        pids.push(value["pid"].as_u64().unwrap() as u32);
    }
    let pid = agent.pid().unwrap();
    assert_eq!(pids, [pid, pid, pid]);
    let cleanup = agent.shutdown().await;
    assert_eq!(cleanup.signalled, ["TERM"]);
    assert_eq!(cleanup.exit.as_deref(), Some("signal 15 (TERM)"));
    assert!(group_gone(pid as i32).await.is_empty());
    assert_eq!(agent.pid(), None);
    // A shut-down agent respawns on the next exchange.
    let answer = agent.exchange(b"{}", LONG).await.unwrap();
    assert_eq!(answer.line_no, 1);
    assert_ne!(agent.pid(), Some(pid));
}

#[deadline::test]
async fn the_spec_python_example_works_persistently() {
    let Some(python) = crate::support::python() else {
        eprintln!("python3 not found; skipped");
        return;
    };
    let code = "import sys, json\n\
                for line in sys.stdin:\n    \
                    payload = json.loads(line)\n    \
                    print(json.dumps({\"action\": \"final_answer\", \"summary\": payload[\"task_description\"]}))\n    \
                    sys.stdout.flush()\n";
    let command = format!("{} -c {}", shell_quote(python), shell_quote(code));
    let mut agent = start(&command, StdioMode::Persistent);
    for (turn, task) in ["first", "sécond ✓"].iter().enumerate() {
        let request = serde_json::json!({"task_description": task, "turn": turn + 1, "conversation_history": []});
        let answer = agent
            .exchange(request.to_string().as_bytes(), LONG)
            .await
            .unwrap();
        let value = json(&answer.text);
        assert_eq!(value["action"], "final_answer");
        assert_eq!(value["summary"], *task);
    }
    agent.shutdown().await;
}

#[deadline::test]
async fn per_turn_spawns_a_process_per_exchange_and_closes_stdin() {
    // `wc -c` reads until EOF: it answers only if stdin is closed, and counts a newline if we sent one.
    let command =
        r#"sh -c 'n=$(wc -c); printf "{\"bytes\":%d,\"pid\":%d}\n" $n $$; echo note >&2'"#;
    let mut agent = start(command, StdioMode::PerTurn);
    let mut pids = Vec::new();
    for turn in 1..=2 {
        let request = format!(r#"{{"turn":{turn}}}"#);
        let answer = agent.exchange(request.as_bytes(), LONG).await.unwrap();
        assert_eq!(answer.line_no, 1);
        assert!(answer.text.ends_with(b"}\n"), "all of stdout");
        let value = json(&answer.text);
        assert_eq!(value["bytes"], request.len(), "no trailing newline");
        let pid = value["pid"].as_u64().unwrap() as u32;
        assert_eq!(agent.pid(), Some(pid));
        assert!(!alive(pid as i32));
        // The agent ended on its own: nothing to signal.
        assert!(agent.last_cleanup().unwrap().signalled.is_empty());
        pids.push(pid);
    }
    assert_ne!(pids[0], pids[1]);
    assert_eq!(agent.stderr().tail, "note\nnote\n");
    // Nothing runs between per-turn exchanges.
    assert!(agent.restart().await.signalled.is_empty());
}

#[deadline::test]
async fn an_over_long_line_is_too_long_and_quotes_its_start() {
    let mut config = StdioConfig::new(
        r#"sh -c 'read x; head -c 100000 /dev/zero | tr "\0" x; echo; sleep 1000'"#,
        StdioMode::Persistent,
    );
    config.max_line = 1000;
    let mut agent = StdioAgent::new(config).unwrap();
    let error = agent.exchange(b"{}", LONG).await.unwrap_err();
    let LineError::TooLong { limit, start } = &error else {
        panic!("{error}")
    };
    assert_eq!(*limit, 1000);
    assert!(start.starts_with(&"x".repeat(200)), "{start}");
    assert!(start.len() < 300, "{start}");
    assert!(
        error.to_string().contains("longer than 1000 bytes"),
        "{error}"
    );
    // The rest of the line is still in the pipe: the next exchange starts a new process.
    let first = agent.pid().unwrap();
    assert!(matches!(
        agent.exchange(b"{}", LONG).await,
        Err(LineError::TooLong { .. })
    ));
    assert_ne!(agent.pid(), Some(first));
    assert!(group_gone(first as i32).await.is_empty());
    agent.shutdown().await;

    // Per-turn: the cap is on all of stdout.
    let mut config = StdioConfig::new(
        r#"sh -c 'cat >/dev/null; head -c 100000 /dev/zero | tr "\0" y'"#,
        StdioMode::PerTurn,
    );
    config.max_line = 1000;
    let mut agent = StdioAgent::new(config).unwrap();
    let error = agent.exchange(b"{}", LONG).await.unwrap_err();
    assert!(
        matches!(&error, LineError::TooLong { limit: 1000, start } if start.starts_with("yyyy")),
        "{error}"
    );
    assert!(group_gone(agent.pid().unwrap() as i32).await.is_empty());
}

#[deadline::test]
async fn a_silent_agent_times_out_at_the_deadline() {
    let deadline = Duration::from_secs(1);
    let mut agent = start("sleep 1000", StdioMode::Persistent);
    let started = Instant::now();
    let error = agent.exchange(b"{}", deadline).await.unwrap_err();
    assert_eq!(error, LineError::Timeout { deadline, got: 0 });
    assert!(started.elapsed() < deadline + Duration::from_secs(1));
    assert_eq!(
        error.to_string(),
        "no complete answer within 1s (the deadline); 0 bytes of it received"
    );
    let pid = agent.pid().unwrap() as i32;
    assert_eq!(agent.shutdown().await.signalled, ["TERM"]);
    assert!(group_gone(pid).await.is_empty());

    // Per-turn: a partial answer, then silence. The group is gone when the exchange returns.
    let mut agent = start(
        r#"sh -c 'printf "{\"partial\":"; sleep 1000'"#,
        StdioMode::PerTurn,
    );
    let started = Instant::now();
    let error = agent.exchange(b"{}", deadline).await.unwrap_err();
    assert_eq!(error, LineError::Timeout { deadline, got: 11 });
    assert!(started.elapsed() < deadline + Duration::from_secs(1));
    assert!(group_members(agent.pid().unwrap() as i32).is_empty());
}

#[deadline::test]
async fn an_agent_that_never_reads_stdin_cannot_block_our_write() {
    // 4 MB: far more than a pipe holds, so the write blocks until the deadline.
    let request = vec![b'x'; 4_000_000];
    let deadline = Duration::from_secs(1);
    for mode in [StdioMode::Persistent, StdioMode::PerTurn] {
        let mut agent = start("sleep 1000", mode);
        let started = Instant::now();
        let error = agent.exchange(&request, deadline).await.unwrap_err();
        assert!(
            matches!(error, LineError::Timeout { .. }),
            "{mode:?}: {error}"
        );
        assert!(
            started.elapsed() < deadline + Duration::from_secs(1),
            "{mode:?}"
        );
        let pid = agent.pid().unwrap() as i32;
        agent.shutdown().await;
        assert!(group_gone(pid).await.is_empty(), "{mode:?}");
    }
}

#[deadline::test]
async fn an_agent_that_exits_early_is_exited_with_its_status_and_stderr() {
    let mut agent = start(
        r#"sh -c 'echo "boom: no API key" >&2; exit 3'"#,
        StdioMode::Persistent,
    );
    let error = agent.exchange(b"{}", LONG).await.unwrap_err();
    assert_eq!(
        error,
        LineError::Exited {
            status: "status 3, before answering".into(),
            stderr_tail: "boom: no API key".into()
        }
    );
    assert_eq!(
        error.to_string(),
        "the agent exited (status 3, before answering); stderr: boom: no API key"
    );

    // Per-turn: an answer followed by a non-zero exit is still a failure.
    let mut agent = start(
        r#"sh -c 'cat >/dev/null; echo "{}"; printf "bad\033[31m\n" >&2; exit 4'"#,
        StdioMode::PerTurn,
    );
    let error = agent.exchange(b"{}", LONG).await.unwrap_err();
    assert_eq!(
        error,
        LineError::Exited {
            status: "status 4, with 3 bytes on stdout".into(),
            stderr_tail: "bad\\x1b[31m".into()
        }
    );

    // Killed by a signal.
    let mut agent = start(r#"sh -c 'kill -9 $$'"#, StdioMode::PerTurn);
    let error = agent.exchange(b"{}", LONG).await.unwrap_err();
    assert!(
        matches!(&error, LineError::Exited { status, .. } if status.starts_with("signal 9 (KILL)")),
        "{error}"
    );

    // Per-turn, exit 0 and nothing on stdout.
    let mut agent = start("true", StdioMode::PerTurn);
    let error = agent.exchange(b"{}", LONG).await.unwrap_err();
    assert!(matches!(error, LineError::Closed { .. }), "{error}");

    // Persistent, stdout closed but the agent lives on.
    let mut agent = start(
        r#"sh -c 'exec >&-; echo closing >&2; sleep 1000'"#,
        StdioMode::Persistent,
    );
    let error = agent.exchange(b"{}", LONG).await.unwrap_err();
    assert_eq!(
        error,
        LineError::Closed {
            stderr_tail: "closing".into()
        }
    );
    let pid = agent.pid().unwrap() as i32;
    agent.shutdown().await;
    assert!(group_gone(pid).await.is_empty());

    // A program that does not exist.
    let mut agent = start("definitely-not-an-agent-tck --x", StdioMode::Persistent);
    let error = agent.exchange(b"{}", LONG).await.unwrap_err();
    let LineError::Spawn(text) = &error else {
        panic!("{error}")
    };
    assert!(
        text.starts_with("cannot start `definitely-not-an-agent-tck`: No such file or directory"),
        "{text}"
    );
}

#[deadline::test]
async fn a_persistent_agent_that_dies_is_reported_then_respawned() {
    let mut agent = start(r#"sh -c 'read x; echo "{}"'"#, StdioMode::Persistent);
    assert_eq!(&agent.exchange(b"{}", LONG).await.unwrap().text[..], b"{}");
    let first = agent.pid();
    let error = agent.exchange(b"{}", LONG).await.unwrap_err();
    assert!(
        matches!(&error, LineError::Exited { status, .. } if status == "status 0, before answering"),
        "{error}"
    );
    let answer = agent.exchange(b"{}", LONG).await.unwrap();
    assert_eq!(answer.line_no, 1);
    assert_ne!(agent.pid(), first);
    agent.shutdown().await;
}

#[deadline::test]
async fn a_pretty_printed_answer_needs_a_restart() {
    let mut agent = start(
        r#"sh -c 'while read x; do printf "{\n  \"a\": 1\n}\n"; done'"#,
        StdioMode::Persistent,
    );
    let answer = agent.exchange(b"{}", LONG).await.unwrap();
    assert_eq!(&answer.text[..], b"{");
    let first = agent.pid().unwrap();
    let cleanup = agent.restart().await;
    assert_eq!(cleanup.signalled, ["TERM"]);
    assert_eq!(agent.last_cleanup(), Some(&cleanup));
    let answer = agent.exchange(b"{}", LONG).await.unwrap();
    assert_eq!((&answer.text[..], answer.line_no), (&b"{"[..], 1));
    assert_ne!(agent.pid(), Some(first));
    agent.shutdown().await;
}

#[deadline::test]
async fn a_stderr_flood_neither_blocks_the_answer_nor_grows_memory() {
    let flood = 50_000_000u64;
    for (mode, command) in [
        (
            StdioMode::Persistent,
            r#"sh -c 'read x; head -c 50000000 /dev/zero | tr "\0" e >&2; echo "{\"ok\":true}"; read y'"#,
        ),
        (
            StdioMode::PerTurn,
            r#"sh -c 'head -c 50000000 /dev/zero | tr "\0" e >&2; cat >/dev/null; echo "{\"ok\":true}"'"#,
        ),
    ] {
        let mut agent = start(command, mode);
        let answer = agent
            .exchange(b"{}", Duration::from_secs(60))
            .await
            .unwrap();
        assert_eq!(json(&answer.text)["ok"], true);
        agent.shutdown().await;
        let log = agent.stderr();
        assert_eq!(log.total_bytes, flood, "{mode:?}");
        assert!(log.truncated);
        assert_eq!(log.tail.len(), 64 * 1024);
        assert!(log.tail.bytes().all(|b| b == b'e'));
        assert!(log.to_string().starts_with(
            "[50000000 bytes on stderr in total; the earlier ones were dropped]\neee"
        ));
    }
}

#[deadline::test]
async fn a_forked_child_holding_stdout_does_not_survive() {
    // Per-turn: the shell exits, its background child keeps stdout open and sleeps.
    let mut agent = start(
        r#"sh -c 'cat >/dev/null; sleep 1000 & echo "child $!" >&2; echo "{\"ok\":1}"'"#,
        StdioMode::PerTurn,
    );
    let started = Instant::now();
    let answer = agent.exchange(b"{}", LONG).await.unwrap();
    assert_eq!(&answer.text[..], b"{\"ok\":1}\n");
    assert!(started.elapsed() < Duration::from_secs(5));
    let child = child_pid(&agent).await;
    let pgid = agent.pid().unwrap() as i32;
    assert!(!alive(child), "the forked child {child} survived");
    assert!(group_members(pgid).is_empty());
    assert_eq!(agent.last_cleanup().unwrap().signalled, ["TERM"]);

    // Persistent: the child outlives the exchange until shutdown.
    let mut agent = start(
        r#"sh -c 'read x; sleep 1000 & echo "child $!" >&2; echo "{\"ok\":1}"; read y'"#,
        StdioMode::Persistent,
    );
    agent.exchange(b"{}", LONG).await.unwrap();
    let child = child_pid(&agent).await;
    let pgid = agent.pid().unwrap() as i32;
    assert!(alive(child));
    agent.shutdown().await;
    assert!(!alive(child), "the forked child {child} survived");
    assert!(group_members(pgid).is_empty());
}

#[deadline::test]
async fn a_python_fork_holding_stdout_does_not_survive() {
    let Some(python) = crate::support::python() else {
        eprintln!("python3 not found; skipped");
        return;
    };
    let code = "import os, sys, time\n\
                sys.stdin.read()\n\
                pid = os.fork()\n\
                if pid == 0:\n    \
                    time.sleep(1000)\n    \
                    os._exit(0)\n\
                sys.stderr.write(\"child %d\\n\" % pid)\n\
                sys.stderr.flush()\n\
                print(\"{\\\"ok\\\": 1}\")\n";
    let command = format!("{} -c {}", shell_quote(python), shell_quote(code));
    let mut agent = start(&command, StdioMode::PerTurn);
    let answer = agent.exchange(b"{}", LONG).await.unwrap();
    assert_eq!(json(&answer.text)["ok"], 1);
    let child = child_pid(&agent).await;
    assert!(!alive(child), "the forked child {child} survived");
    assert!(group_members(agent.pid().unwrap() as i32).is_empty());
}

#[deadline::test]
async fn an_agent_ignoring_sigterm_is_killed_after_the_grace() {
    let mut config = StdioConfig::new(
        r#"sh -c "trap '' TERM; read x; echo '{}'; sleep 1000""#,
        StdioMode::Persistent,
    );
    config.kill_grace = Duration::from_millis(300);
    let mut agent = StdioAgent::new(config).unwrap();
    agent.exchange(b"{}", LONG).await.unwrap();
    let pid = agent.pid().unwrap() as i32;
    let started = Instant::now();
    let cleanup = agent.shutdown().await;
    let took = started.elapsed();
    assert_eq!(cleanup.signalled, ["TERM", "KILL"]);
    assert_eq!(cleanup.exit.as_deref(), Some("signal 9 (KILL)"));
    assert!(took >= Duration::from_millis(300), "{took:?}");
    assert!(took < Duration::from_secs(2), "{took:?}");
    assert!(group_members(pid).is_empty());
}

#[deadline::test]
async fn dropping_the_agent_or_the_exchange_kills_the_group() {
    let mut agent = start(
        r#"sh -c 'read x; sleep 1000 & echo "child $!" >&2; echo "{}"; sleep 1000'"#,
        StdioMode::Persistent,
    );
    agent.exchange(b"{}", LONG).await.unwrap();
    let child = child_pid(&agent).await;
    let pgid = agent.pid().unwrap() as i32;
    assert!(alive(child));
    drop(agent);
    assert!(group_gone(pgid).await.is_empty());
    assert!(!alive(child));

    // A per-turn exchange abandoned half-way (the caller's own timeout) leaves nothing either.
    let mut agent = start(
        r#"sh -c 'sleep 1000 & echo "child $!" >&2; sleep 1000'"#,
        StdioMode::PerTurn,
    );
    let abandoned =
        tokio::time::timeout(Duration::from_millis(500), agent.exchange(b"{}", LONG)).await;
    assert!(abandoned.is_err());
    let child = child_pid(&agent).await;
    let pgid = agent.pid().unwrap() as i32;
    assert!(group_gone(pgid).await.is_empty());
    assert!(!alive(child));
}

#[test]
fn bad_commands_are_refused_before_spawning() {
    for (command, says) in [
        ("", "empty"),
        ("sh -c 'echo", "unterminated single quote"),
        ("agent | tee", "shell operator"),
    ] {
        let error = StdioAgent::new(StdioConfig::new(command, StdioMode::Persistent))
            .unwrap_err()
            .to_string();
        assert!(error.contains(says), "{command:?}: {error}");
    }
    let agent = start(r#"python3 "my agent.py" --name 'a b'"#, StdioMode::PerTurn);
    assert_eq!(agent.argv(), ["python3", "my agent.py", "--name", "a b"]);
}
