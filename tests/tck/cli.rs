//! The real binary: exit statuses, one-line usage errors, report files, and the commands a
//! newcomer runs first (`selftest`, `suites list`, `schemas export`, `mock agent`).

use std::process::Output;
use std::time::Duration;

use crate::support::*;

/// Runs the binary with `args` to its end (within [`RUN_DEADLINE`]), with no API key from the
/// environment.
fn agent_tck(args: &[&str]) -> Output {
    let mut command = tck_command(args);
    command.env_remove("AGENT_TCK_API_KEY");
    run_within(command, RUN_DEADLINE)
}

/// What `args` (ending in `--help` or `--version`) prints: it exits 0, saying nothing on stderr.
fn printed(args: &[&str]) -> String {
    let out = agent_tck(args);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{args:?}: {}",
        text(&out.stderr)
    );
    assert!(out.stderr.is_empty(), "{args:?}: {}", text(&out.stderr));
    text(&out.stdout)
}

/// The URL at the end of a banner line (`... listening on http://127.0.0.1:PORT`).
fn banner_url(line: &str) -> String {
    line.trim()
        .rsplit(' ')
        .next()
        .unwrap_or_default()
        .to_string()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[track_caller]
fn assert_usage_error(args: &[&str], needle: &str) {
    assert_error(args, 2, needle);
}

/// A run that could not go on (a port in use): one line, exit 1.
fn assert_run_error(args: &[&str], needle: &str) {
    assert_error(args, 1, needle);
}

fn assert_error(args: &[&str], status: i32, needle: &str) {
    let out = agent_tck(args);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(status), "{args:?}: {stderr}");
    assert_eq!(
        stderr.lines().count(),
        1,
        "{args:?}: one line, got {stderr:?}"
    );
    assert!(
        stderr.contains(needle),
        "{args:?}: {stderr:?} lacks {needle:?}"
    );
    assert!(out.stdout.is_empty(), "{args:?}: nothing on stdout");
}

#[test]
fn usage_and_configuration_errors_are_one_line_and_exit_2() {
    let dir = TempDir::new("usage");
    let bad_suite = dir.path("bad.yaml");
    std::fs::write(&bad_suite, "protocol: roundtable\ntitle: t\nspec: s\ncases:\n  - id: a\n    level: must\n    title: t\n    spec: s\n    checks: [reachable, {no_such_check: 1}]\n").unwrap();
    let url = "http://127.0.0.1:9";
    assert_usage_error(&["probe", "roundtable"], "--url");
    assert_usage_error(
        &["probe", "roundtable", "--url", url, "--timeout", "soon"],
        "--timeout",
    );
    assert_usage_error(
        &["probe", "roundtable", "--url", url, "--timeout", "0"],
        "more than zero",
    );
    assert_usage_error(
        &[
            "probe",
            "roundtable",
            "--url",
            url,
            "--max-body",
            "5 parsecs",
        ],
        "--max-body",
    );
    assert_usage_error(
        &["probe", "roundtable", "--url", url, "--concurrency", "0"],
        "--concurrency",
    );
    assert_usage_error(
        &["probe", "roundtable", "--url", "ftp://example.org"],
        "--url",
    );
    assert_usage_error(
        &[
            "probe",
            "roundtable",
            "--url",
            url,
            "--only",
            "nothing.matches",
        ],
        "--only \"nothing.matches\" matches no case",
    );
    assert_usage_error(
        &[
            "probe",
            "roundtable",
            "--url",
            url,
            "--suite",
            &dir.path("missing.yaml"),
        ],
        "missing.yaml: cannot read",
    );
    assert_usage_error(
        &["probe", "roundtable", "--url", url, "--suite", &bad_suite],
        "bad.yaml:5: case a: unknown check \"no_such_check\" (the generic kinds: reachable, status,",
    );
    assert_usage_error(
        &[
            "probe",
            "roundtable",
            "--url",
            url,
            "--json",
            "/no/such/dir/r.json",
        ],
        "--json /no/such/dir/r.json",
    );
    assert_usage_error(
        &["probe", "roundtable", "--url", url, "--api-key", ""],
        "--api-key",
    );
    assert_usage_error(&["probe", "nosuchprotocol"], "nosuchprotocol");
    assert_usage_error(&["frobnicate"], "frobnicate");
}

#[test]
fn help_and_version_exit_0() {
    assert!(printed(&["--help"]).contains("probe"));
    assert!(printed(&["probe", "roundtable", "--help"]).contains("--max-body"));
    // `-V` is the version alone; `--version` begins with it (then the specs, see
    // spec_identity.rs).
    assert_eq!(
        printed(&["-V"]).trim(),
        format!("agent-tck {}", agent_tck::VERSION)
    );
    assert_eq!(
        printed(&["--version"]).lines().next(),
        Some(format!("agent-tck {}", agent_tck::VERSION).as_str())
    );
}

/// Each probe command is described by its own protocol (a flag group's doc comment once
/// replaced every description with the same text about --targets).
#[test]
fn each_probe_command_says_what_it_probes() {
    let out = agent_tck(&["probe", "--help"]);
    let help = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{help}");
    for protocol in agent_tck::protocols::REGISTRY {
        let line = help
            .lines()
            .find(|l| l.trim_start().starts_with(&format!("{} ", protocol.name())))
            .unwrap_or_else(|| panic!("{}: not listed\n{help}", protocol.name()));
        assert!(!line.contains("--targets"), "{line}");
    }
    assert!(help.contains("POST /analyze, /challenge, /vote"), "{help}");
}

#[test]
fn selftest_passes_and_writes_both_reports() {
    use crate::readme_table::{block_after, Clone};
    let _heavy = crate::support::heavy_blocking();
    // The README's Quick start, run as written (the one selftest of the suite: it takes a
    // minute): its `cargo run --release -- selftest` is the installed binary's `agent-tck
    // selftest`, the line after `cargo install`, which writes the reports too.
    assert_eq!(
        block_after("one command shows the whole kit at work"),
        ["cargo run --release -- selftest"]
    );
    let install = block_after("Install the binary");
    assert_eq!(install[0], "cargo install --locked --path .");
    let command = &install[1];
    let (json, junit) = ("selftest.json", "selftest.xml");
    assert_eq!(
        *command,
        format!("agent-tck selftest --json {json} --junit {junit}")
    );
    let clone = Clone::new("selftest");
    let (json, junit) = (clone.path(json), clone.path(junit));
    let mut shell = clone.shell(command);
    shell.env_remove("AGENT_TCK_API_KEY");
    let out = crate::support::run_within(shell, crate::readme_table::DEADLINE);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    let report: agent_tck::report::Report =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let roundtable = agent_tck::protocols::roundtable::suite()
        .unwrap()
        .cases()
        .len();
    // Every protocol: no reference agent fails a case, and what a reference gives nothing to
    // judge is skipped with its own reason; the agent standard's example definitions break no
    // lint rule, each judged on the three of them.
    assert_eq!(
        report.protocol,
        "roundtable+execute-task+librarian+connector+agent-standard"
    );
    assert!(report.cases.iter().any(|c| c.id == "name-kebab-case"
        && c.status == agent_tck::report::Status::Pass
        && c.evidence == Some(agent_tck::report::Evidence::new(3, "names"))));
    assert_eq!(report.summary.failed, 0, "{stdout}");
    for c in &report.cases {
        assert!(
            !c.message.starts_with(agent_tck::report::NO_EVIDENCE)
                && !c.message.starts_with(agent_tck::report::NO_REASON),
            "{}: {}",
            c.id,
            c.message
        );
    }
    let (rows, agents): (Vec<_>, Vec<_>) = report
        .cases
        .iter()
        .partition(|c| c.group.starts_with("matrix "));
    assert!(agents.len() > roundtable, "{stdout}");
    let agents_passed = agents
        .iter()
        .filter(|c| {
            c.status == agent_tck::report::Status::Pass
                && c.kind == agent_tck::report::Kind::Conformance
        })
        .count();
    let skipped = agents
        .iter()
        .filter(|c| {
            c.status == agent_tck::report::Status::Skip
                && c.kind == agent_tck::report::Kind::Conformance
        })
        .count();
    // The last line counts conformance cases; the scenarios' expectations are scored apart.
    let counts = format!("{agents_passed} passed, 0 failed, {skipped} skipped");
    assert!(stdout.lines().any(|l| l == counts), "{stdout}");
    // The stdio mock's own counts (its stderr, in stdio.engine-log) are quoted, never a line
    // that reads like this run's.
    let like_counts: Vec<&str> = stdout
        .lines()
        .filter(|l| l.contains(" passed, ") && l.contains(" skipped") && *l != counts)
        .collect();
    assert!(
        like_counts
            .iter()
            .all(|l| l.trim_start().starts_with("stderr> ")),
        "{like_counts:?}"
    );
    assert!(
        stdout.starts_with(&format!("agent-tck {} · selftest · ", agent_tck::VERSION)),
        "{stdout}"
    );
    // Then the behaviour matrices: a row per behaviour (and transport), each as expected, each
    // a case of the JSON report too; and one verdict line at the end.
    let mut all_rows = 0;
    for matrix in agent_tck::selftest::matrix::Matrix::builtin().unwrap() {
        let line = format!("matrix: {} passed, 0 failed", matrix.file.rows.len());
        assert!(stdout.lines().any(|l| l == line), "{line}: {stdout}");
        all_rows += matrix.file.rows.len();
    }
    assert_eq!(rows.len(), all_rows);
    assert!(rows
        .iter()
        .any(|c| c.id == "matrix.roundtable.wrong-schema:approve-string"
            && c.message == "fails vote.extra-fields, vote.response, vote.trade-offs-minority"
            && c.evidence.as_ref().is_some_and(|e| e.judged > 1)));
    assert_eq!(
        stdout.lines().last(),
        Some(format!("selftest: the reference agents pass; each of {all_rows} mock behaviours broke exactly the cases it should").as_str()),
        "{stdout}"
    );
    assert!(stdout.contains("wrong-schema:approve-string"), "{stdout}");
    assert!(
        stdout.contains("ignores-governance (stdio-per-turn)"),
        "{stdout}"
    );
    // The seed, from the clock, is printed and recorded.
    let seed = report.seed.expect("a seed");
    assert!(
        stdout.contains(&format!("seed {seed}")),
        "the seed is printed"
    );
    assert!(!stdout.contains('\u{1b}'), "no colour when piped");
    assert!(
        !text(&out.stdout).contains("selftest-key-"),
        "the selftest key is redacted"
    );
    roxmltree::Document::parse(&std::fs::read_to_string(&junit).unwrap()).unwrap();
    // Each protocol's spec, named in the one report of them all.
    assert_eq!(
        report
            .judged_by
            .iter()
            .map(|b| b.protocol.as_str())
            .collect::<Vec<_>>(),
        agent_tck::protocols::names()
    );
}

#[test]
fn an_unreachable_agent_exits_1_and_says_so() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let out = agent_tck(&[
        "probe",
        "roundtable",
        "--url",
        &format!("http://127.0.0.1:{port}"),
        "--timeout",
        "5s",
    ]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("FAIL must   agent.reachable") && stdout.contains("agent unreachable"),
        "{stdout}"
    );
    assert!(
        stdout
            .lines()
            .last()
            .unwrap()
            .starts_with("0 passed, 1 failed, "),
        "{stdout}"
    );
}

#[deadline::test]
async fn probing_a_real_agent_with_a_key_exits_0_and_hides_the_key() {
    let agent = reference_agent(Some(KEY)).await;
    let url = agent.url();
    let dir = TempDir::new("probe");
    let (json, junit) = (dir.path("r.json"), dir.path("r.xml"));
    let out = tokio::task::spawn_blocking(move || {
        agent_tck(&[
            "probe",
            "roundtable",
            "--url",
            &url,
            "--api-key",
            KEY,
            "--seed",
            "5",
            "--json",
            &json,
            "--junit",
            &junit,
        ])
    })
    .await
    .unwrap();
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("PASS should auth.wrong-key"), "{stdout}");
    for file in ["r.json", "r.xml"] {
        let written = std::fs::read_to_string(dir.path(file)).unwrap();
        assert!(!written.contains(KEY) && written.contains("***"), "{file}");
    }
    assert!(!stdout.contains(KEY));
}

#[deadline::test]
async fn a_should_failure_exits_0_and_1_under_strict() {
    let agent = mutated("analyze", |_, a| {
        a["observations"][0]["evidence"] = serde_json::json!("untagged")
    })
    .await;
    let url = agent.url();
    let run = move |strict: bool| {
        let url = url.clone();
        tokio::task::spawn_blocking(move || {
            let mut args = vec![
                "probe",
                "roundtable",
                "--url",
                url.as_str(),
                "--only",
                "analyze.evidence-tags",
            ];
            if strict {
                args.push("--strict");
            }
            agent_tck(&args)
        })
    };
    let lenient = run(false).await.unwrap();
    assert_eq!(lenient.status.code(), Some(0));
    assert!(
        text(&lenient.stdout).contains("WARN should analyze.evidence-tags"),
        "{}",
        text(&lenient.stdout)
    );
    let strict = run(true).await.unwrap();
    assert_eq!(strict.status.code(), Some(1));
    assert!(text(&strict.stdout).contains("FAIL should analyze.evidence-tags"));
}

#[test]
fn suites_list_prints_every_case() {
    let out = agent_tck(&["suites", "list"]);
    assert_eq!(out.status.code(), Some(0));
    let stdout = text(&out.stdout);
    for case in agent_tck::protocols::roundtable::suite().unwrap().cases() {
        assert!(stdout.contains(&case.id.value), "{} missing", case.id.value);
    }
}

#[test]
fn schemas_export_writes_the_embedded_files() {
    let dir = TempDir::new("export");
    let out = agent_tck(&["schemas", "export", &dir.path("out")]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    for (_, file, content) in agent_tck::schema::EMBEDDED {
        assert_eq!(
            std::fs::read_to_string(dir.0.join("out").join(file)).unwrap(),
            *content,
            "{file}"
        );
    }
}

#[deadline::test(flavor = "multi_thread", worker_threads = 2)]
async fn mock_agent_serves_a_conforming_agent() {
    let mut child = Spawned::tck(
        &[
            "mock",
            "agent",
            "--port",
            "0",
            "--seed",
            "1",
            "--api-key",
            KEY,
        ],
        RUN_DEADLINE,
    );
    let line = tokio::task::block_in_place(|| child.line());
    let url = banner_url(&line);
    assert!(url.starts_with("http://127.0.0.1:"), "{line}");
    let report = probe(&url, Some(KEY)).await;
    assert!(failed(&report).is_empty(), "{:?}", failed(&report));
    let out = tokio::task::block_in_place(|| child.interrupt(Duration::from_secs(30)));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
}

/// One `mock agent` stopped before any request came is not a fleet: its skips say no request
/// reached the mock agent (a fleet's say the fleet, fleet_file.rs), and its counts read in the
/// right number.
#[test]
fn a_mock_agent_stopped_with_no_traffic_names_itself_not_a_fleet() {
    let dir = TempDir::new("mock-agent-idle");
    let json = dir.path("r.json");
    let mut child = Spawned::tck(
        &[
            "mock", "agent", "--port", "0", "--seed", "1", "--json", &json,
        ],
        RUN_DEADLINE,
    );
    let line = child.line();
    assert!(banner_url(&line).starts_with("http://127.0.0.1:"), "{line}");
    let out = child.interrupt(Duration::from_secs(30));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains(
            "no request reached the mock agent: nothing to judge (point the platform at the \
             mock agent and have it run a task)"
        ),
        "{stdout}"
    );
    assert!(!stdout.contains("fleet"), "{stdout}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert!(report["cases"]
        .as_array()
        .unwrap()
        .iter()
        .all(|c| c["message"]
            .as_str()
            .unwrap()
            .contains("reached the mock agent")));
}

#[test]
fn mock_agent_reports_a_port_in_use() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    assert_run_error(
        &["mock", "agent", "--port", &port],
        "cannot listen on 127.0.0.1:",
    );
}

#[deadline::test(flavor = "multi_thread", worker_threads = 2)]
async fn mock_fleet_stops_on_sigint_and_still_writes_the_reports() {
    let dir = TempDir::new("fleet-sigint");
    let fleet = dir.path("fleet.yaml");
    std::fs::write(
        &fleet,
        "agents:\n  - { name: one }\n  - { name: two, behaviors: [hang] }\n",
    )
    .unwrap();
    let (journal, json, junit) = (dir.path("j.jsonl"), dir.path("r.json"), dir.path("r.xml"));
    let mut child = Spawned::tck(
        &[
            "mock",
            "fleet",
            "--config",
            &fleet,
            "--port",
            "0",
            "--seed",
            "1",
            "--journal",
            &journal,
            "--json",
            &json,
            "--junit",
            &junit,
        ],
        RUN_DEADLINE,
    );
    let line = tokio::task::block_in_place(|| child.line());
    let addr = line.trim().rsplit("http://").next().unwrap().to_string();
    // One good request to `one`, one left hanging at `two`.
    let base = agent_tck::transport::http::BaseUrl::parse(&format!("http://{addr}")).unwrap();
    let analyze = |agent: &str| agent_tck::transport::http::Request {
        method: "POST".into(),
        path: format!("/agents/{agent}/analyze"),
        headers: vec![("content-type".into(), "application/json".into())],
        body: r#"{"task_id":"t","content":"c"}"#.into(),
    };
    let limits = agent_tck::transport::http::Limits {
        deadline: std::time::Duration::from_secs(5),
        ..Default::default()
    };
    let ok = agent_tck::transport::http::send(&base, &analyze("one"), limits)
        .await
        .unwrap();
    assert_eq!(ok.status, 200);
    // The request to `two` goes over a connection of our own, so that its port says which of
    // the kernel's sockets are its ends: once `two` has read it all, SIGINT finds it hanging.
    let body = r#"{"task_id":"t","content":"c"}"#;
    let mut hung = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let request = format!(
        "POST /agents/two/analyze HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\n\
         content-length: {}\r\n\r\n{body}",
        body.len()
    );
    tokio::io::AsyncWriteExt::write_all(&mut hung, request.as_bytes())
        .await
        .unwrap();
    let (server, client) = (
        hung.peer_addr().unwrap().port(),
        hung.local_addr().unwrap().port(),
    );
    let read_by = std::time::Instant::now() + Duration::from_secs(20);
    while !request_read(server, client) {
        assert!(
            std::time::Instant::now() < read_by,
            "the fleet did not read the request to `two` within 20 s"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // SIGINT, as Ctrl-C sends it: it must end within 10 s (or it is killed and the test fails;
    // the wait blocks this worker, not the one the hung exchange runs on).
    let out = tokio::task::block_in_place(|| child.interrupt(Duration::from_secs(10)));
    let rest = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{rest}{}", text(&out.stderr));
    assert!(rest.contains("platform.request-schema"), "{rest}");
    let mut answer = Vec::new();
    let read = tokio::time::timeout(
        Duration::from_secs(10),
        tokio::io::AsyncReadExt::read_to_end(&mut hung, &mut answer),
    )
    .await
    .expect("the hung exchange's connection ends with the fleet");
    assert!(
        read.is_err() || answer.is_empty(),
        "the hung exchange was cut by the shutdown, not answered: {}",
        String::from_utf8_lossy(&answer)
    );
    let lines = std::fs::read_to_string(&journal).unwrap();
    assert_eq!(lines.lines().count(), 4, "{lines}");
    assert!(lines.contains(r#""outcome":"shutdown""#), "{lines}");
    let report: agent_tck::report::Report =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(report.role, "mock");
    roxmltree::Document::parse(&std::fs::read_to_string(&junit).unwrap()).unwrap();
}

/// Whether the loopback server on port `server` has read everything its client on port
/// `client` sent: the client's send queue and the server's receive queue are both empty
/// (Linux's /proc/net/tcp). The fleet prints nothing when a request arrives, only when it is
/// answered, so this is the sign that a hanging agent has its request.
fn request_read(server: u16, client: u16) -> bool {
    let table = std::fs::read_to_string("/proc/net/tcp").expect("/proc/net/tcp");
    let port = |address: &str| {
        address
            .rsplit(':')
            .next()
            .and_then(|p| u16::from_str_radix(p, 16).ok())
    };
    let queue = |hex: &str| u64::from_str_radix(hex, 16).ok();
    let (mut server_unread, mut client_unsent) = (None, None);
    for line in table.lines().skip(1) {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let (Some(local), Some(remote), Some((tx, rx))) = (
            fields.get(1).and_then(|a| port(a)),
            fields.get(2).and_then(|a| port(a)),
            fields.get(4).and_then(|q| q.split_once(':')),
        ) else {
            continue;
        };
        if (local, remote) == (server, client) {
            server_unread = queue(rx);
        } else if (local, remote) == (client, server) {
            client_unsent = queue(tx);
        }
    }
    server_unread == Some(0) && client_unsent == Some(0)
}

#[test]
fn mock_usage_errors_are_one_line() {
    assert_usage_error(
        &["mock", "agent", "--behavior", "sloww"],
        "--behavior: unknown behaviour \"sloww\"",
    );
    assert_usage_error(&["mock", "fleet", "--preset", "calm"], "no such preset");
    // A typo gets the nearest name, as a behaviour or a subcommand does.
    assert_usage_error(
        &["mock", "fleet", "--preset", "chaoss"],
        "--preset \"chaoss\": no such preset (did you mean \"chaos\"? known: chaos,",
    );
    assert_usage_error(&["mock", "fleet"], "--config");
}

#[test]
fn probe_execute_task_usage_errors_are_one_line() {
    assert_usage_error(&["probe", "execute-task"], "--url <URL>|--stdio <CMD>");
    assert_usage_error(
        &["probe", "execute-task", "--tcp", "nohost"],
        "invalid value 'nohost' for '--tcp <[HOST:]PORT>': expected PORT or HOST:PORT",
    );
    assert_usage_error(
        &["probe", "execute-task", "--stdio", "a | b"],
        "not through a shell",
    );
    assert_usage_error(
        &[
            "probe",
            "execute-task",
            "--stdio",
            "x",
            "--scenario",
            "/nonexistent.yaml",
        ],
        "/nonexistent.yaml: cannot read",
    );
    assert_usage_error(&["mock", "agent", "--stdio"], "add --protocol execute-task");
}

#[test]
fn suites_list_shows_the_execute_task_cases_and_scenarios() {
    let out = agent_tck(&["suites", "list", "--protocol", "execute-task"]);
    assert_eq!(out.status.code(), Some(0));
    let stdout = text(&out.stdout);
    for id in [
        "protocol.unknown-tool",
        "protocol.identity",
        "refund-policy.no_violation_after_governance_error-apply_refund",
    ] {
        assert!(stdout.contains(id), "{id}: {stdout}");
    }
}

/// What a new user reads: help texts that say what a flag does, errors that say what to add,
/// and README commands as they should be typed.
#[test]
fn help_texts_and_hints_say_what_to_do() {
    let help = printed(&["schemas", "export", "--help"]);
    assert!(help.contains("DIR/roundtable/"), "{help}");
    assert!(!help.contains("DIR/schemas/"), "{help}");
    assert!(help.contains("The folder to write them in"), "{help}");
    let help = printed(&["probe", "execute-task", "--help"]);
    let seed = help
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("--seed"))
        .nth(1)
        .unwrap_or_default();
    assert!(seed.contains("Seed of every generated request"), "{help}");
    let help = printed(&["mock", "agent", "--help"]);
    assert!(help.contains("The protocol the agent speaks"), "{help}");
    assert_usage_error(
        &["mock", "agent", "--behavior", "never-finishes"],
        "(add --protocol execute-task)",
    );
    let readme = include_str!("../../README.md");
    assert!(readme.contains("cargo install --locked --path ."));
    assert!(!readme.contains("cargo install --path ."));
}

/// The release binary carries no debug information (it was 95 MB); the profiling profile keeps
/// line tables for perf and callgrind.
#[test]
fn the_release_build_is_small_and_profiling_has_line_tables() {
    let manifest = include_str!("../../Cargo.toml");
    let release = manifest
        .split("[profile.release]")
        .nth(1)
        .and_then(|r| r.split("\n[").next())
        .expect("a release profile");
    assert!(release.contains("strip = \"debuginfo\""), "{release}");
    assert!(release.contains("debug = false"), "{release}");
    let profiling = manifest
        .split("[profile.profiling]")
        .nth(1)
        .expect("a profiling profile");
    assert!(profiling.contains("inherits = \"release\""));
    assert!(profiling.contains("debug = \"line-tables-only\""));
}

/// `mock fleet` with nothing to serve names both ways to give it a fleet.
#[test]
fn mock_fleet_names_both_ways_to_give_a_fleet() {
    assert_usage_error(&["mock", "fleet"], "--preset");
    assert_usage_error(&["mock", "fleet"], "--config");
    assert_usage_error(
        &["mock", "fleet", "--preset", "chaos", "--config", "x.yaml"],
        "cannot be used with",
    );
}

/// The README explains each protocol in its own words (a clone has no ../shared/specs), and its
/// execute_task examples are answers the probe accepts.
#[test]
fn the_readme_stands_alone_and_its_examples_are_valid() {
    let readme = include_str!("../../README.md");
    assert!(
        !readme.contains("../shared/specs"),
        "a clone has no ../shared/specs"
    );
    assert!(readme.contains("schemas/roundtable/") && readme.contains("schemas/execute_task/"));
    assert!(
        !readme.contains("--agent-cmd"),
        "no flag of that name exists"
    );
    let answers: Vec<serde_json::Value> = readme
        .split('`')
        .filter(|s| s.starts_with("{\"action\""))
        .map(|s| serde_json::from_str(&s.replace('…', "x")).unwrap_or_else(|e| panic!("{s}: {e}")))
        .chain(
            readme
                .lines()
                .filter(|l| l.starts_with("{\"action\""))
                .map(|l| serde_json::from_str(l).unwrap()),
        )
        .collect();
    // One example per action the spec lists.
    let mut actions: Vec<&str> = answers
        .iter()
        .filter_map(|a| a["action"].as_str())
        .collect();
    actions.sort();
    let mut spec = agent_tck::protocols::execute_task::model::ACTIONS.to_vec();
    spec.sort();
    assert_eq!(actions, spec, "{answers:?}");
    for answer in &answers {
        let findings = agent_tck::protocols::execute_task::model::check_answer(answer);
        assert!(findings.is_empty(), "{answer}: {findings:?}");
    }
}

/// `mock agent` says what it serves as it serves it: a line per request (asked for here with
/// AGENT_TCK_REQUEST_LOG=1, as stdout is not a terminal), none with --quiet.
#[deadline::test(flavor = "multi_thread", worker_threads = 2)]
async fn mock_agent_prints_a_line_per_request_unless_quiet() {
    /// What it printed after its banner, the probe run against it and the mock stopped.
    async fn lines(quiet: bool) -> Vec<String> {
        let mut args = vec!["mock", "agent", "--port", "0", "--seed", "1"];
        if quiet {
            args.push("--quiet");
        }
        let mut command = tck_command(&args);
        command.env("AGENT_TCK_REQUEST_LOG", "1");
        let mut child = Spawned::start(command, RUN_DEADLINE);
        let first = tokio::task::block_in_place(|| child.line());
        let url = banner_url(&first);
        let report = probe(&url, None).await;
        assert!(failed(&report).is_empty(), "{:?}", failed(&report));
        // Stopped, it has printed every answer's line: the whole stdout is read to its end.
        let out = tokio::task::block_in_place(|| child.interrupt(Duration::from_secs(30)));
        let stdout = text(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{stdout}");
        stdout
            .lines()
            .skip(1)
            .filter(|l| l.split(' ').nth(1).is_some_and(|w| w.starts_with('/')))
            .map(str::to_string)
            .collect()
    }
    let logged = lines(false).await;
    assert!(
        logged
            .iter()
            .any(|l| l.starts_with("reference-agent /analyze 200 ") && l.contains(" ms Complete")),
        "{logged:?}"
    );
    assert!(logged
        .iter()
        .any(|l| l.starts_with("reference-agent /vote 200 ")));
    assert!(lines(true).await.is_empty());
}

#[test]
fn completions_and_man_pages_cover_every_command() {
    use crate::support::{tck, text};
    for shell in ["bash", "zsh", "fish"] {
        let out = tck(&["completions", shell]);
        assert!(out.status.success(), "{shell}");
        let script = String::from_utf8_lossy(&out.stdout);
        for word in [
            "probe",
            "orchestration",
            "roundtable",
            "--baseline",
            "merge",
        ] {
            assert!(script.contains(word), "{shell}: {word}");
        }
    }
    assert_eq!(tck(&["completions", "cmd.exe"]).status.code(), Some(2));

    let dir = crate::support::TempDir::new("manpages");
    let out = tck(&["manpages", &dir.path("man")]);
    assert!(out.status.success(), "{}", text(&out));
    for page in [
        "agent-tck.1",
        "agent-tck-probe-roundtable.1",
        "agent-tck-probe-orchestration.1",
        "agent-tck-mock-fleet.1",
        "agent-tck-report-diff.1",
    ] {
        let page_text = std::fs::read_to_string(dir.path(&format!("man/{page}"))).unwrap();
        assert!(page_text.contains(".TH"), "{page}");
        assert!(
            page_text.contains(page.trim_end_matches(".1")),
            "{page} names itself"
        );
    }
    // A hidden command (the stdio mock's lingering child) gets no page.
    assert!(!std::path::Path::new(&dir.path("man/agent-tck-mock-linger.1")).exists());
}

/// A reader that went away (`2>&1 | head`, a harness that closed its pipes) is no reason to
/// panic: with stdout and stderr both closed pipes, a run that writes notes on each ends with
/// its own status — a file written and exit 0, a usage error and exit 2 — never 101.
#[test]
fn closed_stdout_and_stderr_do_not_make_the_kit_panic() {
    let dir = TempDir::new("closed-pipes");
    let fleet = dir.path("fleet.yaml");
    let config = dir.path("agents.json");
    std::fs::write(
        &fleet,
        "protocol: connector\nconnector:\n  url: http://127.0.0.1:1\n  listen: 127.0.0.1:9400\n  agents:\n    - { name: a, agent-id: ext-a }\n",
    )
    .unwrap();
    let runs: [(&[&str], i32); 2] = [
        (
            &[
                "mock",
                "fleet",
                "--config",
                &fleet,
                "--print-config",
                "--write-config",
                &config,
            ],
            0,
        ),
        (&["probe", "roundtable"], 2),
    ];
    for (args, expected) in runs {
        let closed = || {
            let (reader, writer) = std::io::pipe().unwrap();
            drop(reader);
            writer
        };
        let mut child = tck_command(args)
            .stdin(std::process::Stdio::null())
            .stdout(closed())
            .stderr(closed())
            .spawn()
            .unwrap();
        let deadline = std::time::Instant::now() + RUN_DEADLINE;
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            if std::time::Instant::now() > deadline {
                let _ = child.kill();
                panic!("{args:?} ran past {RUN_DEADLINE:?} with its pipes closed");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        assert_eq!(status.code(), Some(expected), "{args:?}: {status:?}");
    }
    let written: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&config).unwrap()).unwrap();
    // `ws: auto` (the default): the whole config file, the definitions as its `agents`.
    assert_eq!(written["agents"][0]["agentId"], "ext-a");
}

// ---- Consistency: Ctrl-C and --quiet behave the same on every command that judges ----

/// The line every command that judges prints when Ctrl-C cut it short, and the number in it.
fn interrupted_line(stderr: &str) -> usize {
    let line = stderr
        .lines()
        .find(|l| l.starts_with("interrupted (Ctrl-C): the report has the "))
        .unwrap_or_else(|| panic!("no interrupted line: {stderr}"));
    let done: usize = line["interrupted (Ctrl-C): the report has the ".len()..]
        .split(' ')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{line}"));
    // The count's noun in its number.
    let cases = if done == 1 { "case" } else { "cases" };
    assert!(
        line.ends_with(&format!(
            " {done} {cases} done; the rest are marked not run; exit 130, not a verdict"
        )),
        "{line}"
    );
    done
}

/// The cases of a JSON report file: (id, status, message).
fn report_cases(path: &str) -> Vec<(String, String, String)> {
    let report: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}")),
    )
    .unwrap_or_else(|e| panic!("{path}: {e}"));
    report["cases"]
        .as_array()
        .unwrap_or_else(|| panic!("{path}: no cases"))
        .iter()
        .map(|c| {
            let s = |k: &str| c[k].as_str().unwrap_or_default().to_string();
            (s("id"), s("status"), s("message"))
        })
        .collect()
}

/// Checks an interrupted run's report against its line: the cases done are those the line
/// counts, every other one is a SKIP saying it was not run; returns the ids not run.
fn assert_done_and_not_run(path: &str, done: usize) -> Vec<String> {
    let cases = report_cases(path);
    let not_run: Vec<&(String, String, String)> = cases
        .iter()
        .filter(|(_, _, m)| m.starts_with("not run: interrupted (Ctrl-C) after "))
        .collect();
    assert!(
        not_run
            .iter()
            .all(|(_, s, m)| s == "skip" && m.ends_with(" s")),
        "{not_run:?}"
    );
    assert_eq!(cases.len() - not_run.len(), done, "{cases:?}");
    not_run.iter().map(|(id, _, _)| id.clone()).collect()
}

/// Ctrl-C while a probe waits on a slow agent (our mock agent, its /challenge answer 60 s
/// late): the report holds the cases done and the rest marked not run, the line says how many,
/// exit 130; every format says the run was interrupted, none PASS nor exit 0 (agent.reachable
/// and the /analyze cases passed: before, the page read "PASS", "exit 0").
#[test]
fn an_interrupted_probe_writes_the_cases_done_and_marks_the_rest() {
    let dir = TempDir::new("interrupted-probe");
    let mut command = tck_command(&[
        "mock",
        "agent",
        "--port",
        "0",
        "--seed",
        "1",
        "--behavior",
        "slow:ttfb=60s@challenge",
        "--api-key",
        KEY,
    ]);
    // A line per answered request: the sign that the probe's run has started.
    command.env("AGENT_TCK_REQUEST_LOG", "1");
    let mut agent = Spawned::start(command, RUN_DEADLINE);
    let url = banner_url(&agent.line());
    let (json, junit, html) = (
        dir.path("probe.json"),
        dir.path("probe.xml"),
        dir.path("probe.html"),
    );
    let probe = Spawned::tck(
        &[
            "probe",
            "roundtable",
            "--url",
            &url,
            "--seed",
            "1",
            "--timeout",
            "90s",
            "--api-key",
            KEY,
            "--json",
            &json,
            "--junit",
            &junit,
            "--html",
            &html,
        ],
        RUN_DEADLINE,
    );
    // Two answers given (to /analyze): the probe is running, and its /challenge waits.
    agent.line();
    agent.line();
    let out = probe.interrupt(Duration::from_secs(30));
    assert_eq!(out.status.code(), Some(130), "{}", text(&out.stderr));
    let done = interrupted_line(&text(&out.stderr));
    let not_run = assert_done_and_not_run(&json, done);
    assert!(done >= 1, "agent.reachable at least had ended");
    assert!(
        not_run.iter().any(|id| id == "challenge.response"),
        "{not_run:?}"
    );
    let cases = report_cases(&json);
    assert_eq!(cases.len(), 42, "every case of the suite: {cases:?}");
    assert!(
        cases
            .iter()
            .any(|(id, s, _)| id == "agent.reachable" && s == "pass"),
        "{cases:?}"
    );
    // The console report was printed too, ending with its counts and the interruption.
    assert!(
        text(&out.stdout).contains(" passed, "),
        "{}",
        text(&out.stdout)
    );
    assert_marked_interrupted(&json, Some(&junit), Some(&html), &text(&out.stdout));
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(
        report["interrupted"]["not_reached_count"].as_u64(),
        Some(not_run.len() as u64)
    );
    // The key is in no output: the report made on Ctrl-C is redacted as the run's own.
    let written = std::fs::read_to_string(&json).unwrap();
    for shown in [written, text(&out.stdout), text(&out.stderr)] {
        assert!(!shown.contains(KEY), "{shown}");
    }
    drop(agent);
}

/// Ctrl-C during the self-test's matrix: the reference agent's cases are in the report, the
/// matrix rows not run are marked, the same line, exit 130; the files say the run was
/// interrupted and stdout ends with a verdict line that says so (before: the page said exit 0
/// and stdout stopped without a verdict).
#[test]
fn an_interrupted_selftest_writes_the_cases_done_and_marks_the_rest() {
    let _heavy = heavy_blocking();
    let dir = TempDir::new("interrupted-selftest");
    let (json, junit, html) = (
        dir.path("selftest.json"),
        dir.path("selftest.xml"),
        dir.path("selftest.html"),
    );
    let mut selftest = Spawned::tck(
        &[
            "selftest",
            "--protocol",
            "roundtable",
            "--seed",
            "1",
            "--json",
            &json,
            "--junit",
            &junit,
            "--html",
            &html,
        ],
        RUN_DEADLINE,
    );
    // The reference agent's report has begun: its probe ended; the matrix is next.
    let first = selftest.line();
    assert!(first.starts_with("agent-tck "), "{first}");
    let out = selftest.interrupt(Duration::from_secs(60));
    assert_eq!(out.status.code(), Some(130), "{}", text(&out.stderr));
    let done = interrupted_line(&text(&out.stderr));
    let not_run = assert_done_and_not_run(&json, done);
    assert!(done >= 40, "the reference agent's cases: {done}");
    assert!(
        !not_run.is_empty()
            && not_run
                .iter()
                .all(|id| id.starts_with("matrix.roundtable.")),
        "{not_run:?}"
    );
    let stdout = text(&out.stdout);
    assert_marked_interrupted(&json, Some(&junit), Some(&html), &stdout);
    assert!(
        stdout
            .trim_end()
            .lines()
            .last()
            .unwrap()
            .starts_with("selftest: INTERRUPTED (Ctrl-C) after "),
        "{stdout}"
    );
}

/// Whether stdout holds a line of a case (`  PASS must  agent.reachable …`).
fn has_case_lines(stdout: &str) -> bool {
    stdout.lines().any(|l| {
        ["  PASS ", "  FAIL ", "  SKIP ", "  WARN ", "  INFO "]
            .iter()
            .any(|w| l.starts_with(w))
    })
}

/// `--quiet` on `mock librarian`: the counts, no case; without it, the cases.
#[test]
fn quiet_mock_librarian_prints_no_case() {
    let run = |quiet: bool| {
        let mut args = vec!["mock", "librarian", "--port", "0", "--until", "1s"];
        if quiet {
            args.push("--quiet");
        }
        let out = agent_tck(&args);
        assert!(
            matches!(out.status.code(), Some(0 | 1)),
            "{}",
            text(&out.stderr)
        );
        text(&out.stdout)
    };
    let loud = run(false);
    assert!(has_case_lines(&loud), "{loud}");
    let quiet = run(true);
    assert!(!has_case_lines(&quiet), "{quiet}");
    assert!(quiet.contains(" passed, "), "{quiet}");
}

/// `--quiet` on `mock agent` and `mock fleet`: served until Ctrl-C, then the counts, no case.
#[test]
fn quiet_mock_agent_and_fleet_print_no_case() {
    let dir = TempDir::new("quiet-fleet");
    let file = dir.path("fleet.yaml");
    std::fs::write(&file, "agents:\n  - { name: one }\n").unwrap();
    for args in [
        vec!["mock", "agent", "--port", "0", "--quiet"],
        vec!["mock", "fleet", "--config", &file, "--port", "0", "--quiet"],
    ] {
        let mut mock = Spawned::tck(&args, RUN_DEADLINE);
        mock.line();
        let out = mock.interrupt(Duration::from_secs(30));
        // Nothing to drive: Ctrl-C ends serving; nothing was judged (exit 1), not interrupted.
        assert_eq!(
            out.status.code(),
            Some(1),
            "{args:?}: {}",
            text(&out.stderr)
        );
        let stdout = text(&out.stdout);
        assert!(!has_case_lines(&stdout), "{args:?}: {stdout}");
        assert!(stdout.contains(" passed, "), "{args:?}: {stdout}");
    }
}

/// `scripts/html-screenshot.sh` run from any directory: the paths given are the caller's,
/// the defaults the checkout's (`--dry-run` prints them; no browser needed).
#[test]
fn the_screenshot_script_resolves_paths_from_where_it_is_run() {
    let dir = TempDir::new("screenshot-paths");
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/html-screenshot.sh");
    let run = |args: &[&str]| {
        let mut command = std::process::Command::new(&script);
        command.args(args).current_dir(&dir.0);
        let out = run_within(command, RUN_DEADLINE);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        text(&out.stdout)
    };
    let caller = dir.0.display().to_string();
    assert_eq!(
        run(&[
            "--html",
            "r.html",
            "--png",
            "out/x.png",
            "--dom",
            "/abs/d.html",
            "--dry-run"
        ]),
        format!("html={caller}/r.html\npng={caller}/out/x.png\ndom=/abs/d.html\n")
    );
    assert_eq!(
        run(&["--dry-run"]),
        format!(
            "html=(the report of a self-test run)\npng={}/docs/html-report.png\ndom=(none)\n",
            env!("CARGO_MANIFEST_DIR")
        )
    );
    let mut command = std::process::Command::new(&script);
    command.args(["--png"]).current_dir(&dir.0);
    let out = run_within(command, RUN_DEADLINE);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).starts_with("html-screenshot.sh: --png needs a value"));
}

/// `--quiet` on `selftest`: the reference report's counts and the verdict, no case and no
/// matrix table.
#[test]
fn quiet_selftest_prints_no_case_and_no_table() {
    let _heavy = heavy_blocking();
    let out = agent_tck(&[
        "selftest",
        "--protocol",
        "agent-standard",
        "--seed",
        "1",
        "--quiet",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(!has_case_lines(&stdout), "{stdout}");
    assert!(
        !stdout.contains("The probe against each mock behaviour"),
        "{stdout}"
    );
    assert!(stdout.contains(" passed, 0 failed"), "{stdout}");
    assert!(
        stdout
            .trim_end()
            .ends_with("broke exactly the cases it should"),
        "{stdout}"
    );
}

/// `--tcp` reads alike on both sides: the mock binds HOST:PORT, the probe takes the PORT alone
/// (127.0.0.1) — and the other way round.
#[test]
fn tcp_takes_a_port_or_a_host_and_port_on_the_mock_and_the_probe() {
    for (bind, reach) in [("127.0.0.1:0", false), ("0", true)] {
        let mut mock = Spawned::tck(
            &["mock", "agent", "--protocol", "execute-task", "--tcp", bind],
            RUN_DEADLINE,
        );
        let banner = mock.line();
        let addr = banner
            .rsplit("tcp://")
            .next()
            .unwrap_or_default()
            .trim()
            .to_string();
        assert!(addr.starts_with("127.0.0.1:"), "{banner}");
        let port = addr.rsplit(':').next().unwrap_or_default().to_string();
        let target = if reach { addr.clone() } else { port };
        let out = agent_tck(&["probe", "execute-task", "--tcp", &target, "--quiet"]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "--tcp {target}: {}",
            text(&out.stdout)
        );
        assert!(
            text(&out.stdout).contains("0 MUST failed"),
            "--tcp {target}: {}",
            text(&out.stdout)
        );
        mock.interrupt(Duration::from_secs(20));
    }
}
