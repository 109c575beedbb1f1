//! `harness.deadline` credits a giving-up only to the harness. A harness of the tests' own
//! (`waiting_harness.py`: one request to `mock agent --protocol execute-task`, then a wait with a
//! timeout of its own or none) is ended from outside by `timeout` — which signals the whole
//! process group (the stdio agent too, so the sender is named) or, with `--foreground`, only the
//! harness — over stdio, TCP and a Unix socket. Its end is never counted as giving up: the case
//! skips naming the end, or fails when the wait was already past the bound. A harness that gives
//! up in time passes, one that gives up late fails, one never kept waiting is not judged.

use std::process::Command;
use std::time::Duration;

use agent_tck::report::Status;

use crate::support::{self, Spawned, TempDir};

const SCRIPT: &str = include_str!("waiting_harness.py");

/// Far past any run's need here (the longest waits 4 s), short of a hung test.
const WITHIN: Duration = Duration::from_secs(60);

/// How the harness is run: under a wrapper (`timeout 3`), with a timeout of its own (seconds)
/// or none, against an agent with `behavior` and `--expect-timeout`.
struct Run<'a> {
    wrapper: &'a [&'a str],
    give_up: Option<&'a str>,
    behavior: &'a str,
    expect: &'a str,
}

impl Run<'_> {
    /// The harness's command: the wrapper, python3, the script, its transport and target.
    fn harness(&self, python: &str, script: &str, transport: &str, target: &str) -> Command {
        let (program, args) = match self.wrapper.split_first() {
            Some((first, rest)) => (*first, rest.to_vec()),
            None => (python, Vec::new()),
        };
        let mut command = Command::new(program);
        command.args(args);
        if !self.wrapper.is_empty() {
            command.arg(python);
        }
        command.args([script, transport, target]);
        command.args(self.give_up);
        command
    }

    fn mock_args(&self) -> Vec<String> {
        [
            "mock",
            "agent",
            "--protocol",
            "execute-task",
            "--behavior",
            self.behavior,
            "--expect-timeout",
            self.expect,
            "--quiet",
        ]
        .map(String::from)
        .to_vec()
    }
}

/// `harness.deadline` in the report at `json`.
fn deadline(json: &str) -> (Status, String) {
    let text = std::fs::read_to_string(json).unwrap_or_else(|e| panic!("{json}: {e}"));
    let report: agent_tck::report::Report = serde_json::from_str(&text).unwrap();
    let case = support::case(&report, "harness.deadline");
    (case.status, case.message.clone())
}

/// Waits (bounded) until process `pid` is gone: the agent a killed harness left writes its
/// report as it ends.
fn wait_gone(pid: i32) {
    let until = std::time::Instant::now() + WITHIN;
    while std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        !s.rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z')
    }) {
        assert!(
            std::time::Instant::now() < until,
            "the agent (pid {pid}) still runs {WITHIN:?} after its harness ended"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The harness starts the agent on stdio; its verdict once both are gone.
fn over_stdio(python: &str, dir: &TempDir, run: &Run) -> (Status, String) {
    let json = dir.path("stdio.json");
    let _ = std::fs::remove_file(&json);
    let _ = std::fs::remove_file(format!("{json}.journal"));
    let script = dir.path("harness.py");
    let mut argv = vec![support::EXE.to_string()];
    argv.extend(run.mock_args());
    argv.extend(["--stdio".into(), "--json".into(), json.clone()]);
    let target = serde_json::to_string(&argv).unwrap();
    let mut harness = Spawned::start(run.harness(python, &script, "stdio", &target), WITHIN);
    let waiting = harness.line();
    let agent: i32 = waiting
        .strip_prefix("waiting ")
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("not `waiting PID`: {waiting}"));
    let status = harness.wait();
    wait_gone(agent);
    let out = harness.output(status);
    let expected = if run.wrapper.is_empty() { 0 } else { 124 };
    assert_eq!(out.status.code(), Some(expected), "{}", support::text(&out));
    deadline(&json)
}

/// The agent listens on `transport` (tcp or unix); the harness connects to it. The agent's
/// verdict once it is stopped after the harness ended.
fn over_socket(python: &str, dir: &TempDir, transport: &str, run: &Run) -> (Status, String) {
    let json = dir.path(&format!("{transport}.json"));
    let socket = dir.path("agent.sock");
    let _ = std::fs::remove_file(&socket);
    let mut args = run.mock_args();
    match transport {
        "tcp" => args.extend(["--tcp".into(), "0".into()]),
        "http" => args.extend(["--port".into(), "0".into()]),
        _ => args.extend(["--unix".into(), socket.clone()]),
    }
    args.extend(["--json".into(), json.clone()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut agent = Spawned::tck(&args, WITHIN);
    let listening = agent.line();
    let target = match transport {
        "tcp" | "http" => listening
            .rsplit(&format!("{transport}://"))
            .next()
            .unwrap_or_default()
            .to_string(),
        _ => socket,
    };
    let script = dir.path("harness.py");
    let out = support::run_within(run.harness(python, &script, transport, &target), WITHIN);
    let expected = if run.wrapper.is_empty() { 0 } else { 124 };
    assert_eq!(out.status.code(), Some(expected), "{}", support::text(&out));
    let ended = agent.interrupt(Duration::from_secs(30));
    let (status, message) = deadline(&json);
    // Its exit status is the verdict's: 1 when a MUST failed (this one), else 0.
    let expected = if status == Status::Fail { 1 } else { 0 };
    assert_eq!(
        ended.status.code(),
        Some(expected),
        "{}",
        support::text(&ended)
    );
    (status, message)
}

fn setup(name: &str) -> Option<(&'static str, TempDir)> {
    let Some(python) = support::python() else {
        eprintln!("python3 not found; skipped");
        return None;
    };
    let dir = TempDir::new(name);
    std::fs::write(dir.path("harness.py"), SCRIPT).unwrap();
    Some((python, dir))
}

/// The runs every transport gets, and what `harness.deadline` must say of each.
fn judged_everywhere(judge: &dyn Fn(&Run) -> (Status, String), closed: &str) {
    // Killed by `timeout` while it waited, the bound (120 s) far off: not judged, the end named.
    let killed = Run {
        wrapper: &["timeout", "3"],
        give_up: None,
        behavior: "hang",
        expect: "120s",
    };
    let (s, m) = judge(&killed);
    assert_eq!(s, Status::Skip, "{m}");
    assert!(m.starts_with("not judged: "), "{m}");
    assert!(m.contains("no giving-up of its own"), "{m}");
    assert!(!m.contains("gave up on"), "{m}");
    assert!(m.contains(closed), "{m}");
    // Killed only after the wait passed the bound (1 s + 1 s): the rule broken, whoever ended it.
    let late_kill = Run {
        wrapper: &["timeout", "4"],
        expect: "1s",
        ..killed
    };
    let (s, m) = judge(&late_kill);
    assert_eq!(s, Status::Fail, "{m}");
    assert!(m.contains("still waiting after"), "{m}");
    assert!(m.contains("past the bound"), "{m}");
    assert!(!m.contains("gave up only after"), "{m}");
    // Gives up itself within the bound: must not trip.
    let gives_up = Run {
        wrapper: &[],
        give_up: Some("1"),
        behavior: "hang",
        expect: "5s",
    };
    let (s, m) = judge(&gives_up);
    assert_eq!(s, Status::Pass, "{m}");
    assert!(m.contains("the harness gave up on 1"), "{m}");
    // Gives up itself, late.
    let late = Run {
        give_up: Some("3"),
        expect: "1s",
        ..gives_up
    };
    let (s, m) = judge(&late);
    assert_eq!(s, Status::Fail, "{m}");
    let after: f64 = m
        .split("the harness gave up only after ")
        .nth(1)
        .and_then(|rest| rest.split(" s").next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no time in {m}"));
    assert!((2.5..4.5).contains(&after), "{m}");
    // Never kept waiting: nothing to judge.
    let answered = Run {
        behavior: "conforming",
        ..gives_up
    };
    let (s, m) = judge(&answered);
    assert_eq!(s, Status::Skip, "{m}");
    assert!(m.contains("no slow or hanging answers to judge"), "{m}");
}

#[test]
fn over_stdio_an_outside_kill_is_not_the_harness_giving_up() {
    let Some((python, dir)) = setup("harness-kill-stdio") else {
        return;
    };
    // `timeout` signals the whole group: the agent is told who sent it.
    judged_everywhere(&|run| over_stdio(python, &dir, run), "(timeout)");
    let (_, m) = over_stdio(
        python,
        &dir,
        &Run {
            wrapper: &["timeout", "3"],
            give_up: None,
            behavior: "hang",
            expect: "120s",
        },
    );
    assert!(m.contains("ended from outside at +"), "{m}");
    assert!(m.contains("SIGTERM from pid "), "{m}");
    assert!(m.contains("not from the harness, pid "), "{m}");
    // `--foreground`: only the harness is signalled; its death closes the agent's stdin.
    let (s, m) = over_stdio(
        python,
        &dir,
        &Run {
            wrapper: &["timeout", "--foreground", "3"],
            give_up: None,
            behavior: "hang",
            expect: "120s",
        },
    );
    assert_eq!(s, Status::Skip, "{m}");
    assert!(m.contains("the harness's process (pid "), "{m}");
    assert!(m.contains("(python3"), "{m}");
    assert!(m.contains("which closed the agent's stdin"), "{m}");
}

#[test]
fn over_sockets_an_outside_kill_is_not_the_harness_giving_up() {
    let Some((python, dir)) = setup("harness-kill-socket") else {
        return;
    };
    judged_everywhere(
        &|run| over_socket(python, &dir, "tcp", run),
        "which closed the connection",
    );
    // A Unix socket's peer is found by its credentials.
    let (s, m) = over_socket(
        python,
        &dir,
        "unix",
        &Run {
            wrapper: &["timeout", "3"],
            give_up: None,
            behavior: "hang",
            expect: "120s",
        },
    );
    assert_eq!(s, Status::Skip, "{m}");
    assert!(m.contains("the harness's process (pid "), "{m}");
    assert!(m.contains("which closed the connection"), "{m}");
}

/// Over HTTP the harness's process is found from its connection as the answer is held back.
#[test]
fn over_http_an_outside_kill_is_not_the_harness_giving_up() {
    let Some((python, dir)) = setup("harness-kill-http") else {
        return;
    };
    judged_everywhere(
        &|run| over_socket(python, &dir, "http", run),
        "which closed the connection",
    );
}
