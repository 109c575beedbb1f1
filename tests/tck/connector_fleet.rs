//! The connector fleet against the reference agent server of `agent_server.rs`: the reference
//! passes every check, and each flawed variant fails exactly the check for its flaw.

use std::collections::{BTreeSet, HashMap};

use futures::StreamExt;

use agent_tck::protocols::connector::fleet::judge;
use agent_tck::protocols::connector::fleet::{self, Fleet};
use agent_tck::report::{Report, Status};

use crate::agent_server::{self, Flaw};

/// One external agent of each behaviour.
pub(crate) const FLEET: &str = r#"
protocol: connector
seed: 7
connector:
  url: ${SERVER}
  listen: 127.0.0.1:0
  messages: 2
  clients: 2
  agents:
    - { name: steady, agent-id: ext-steady, behavior: conforming, sessions: 2 }
    - { name: md, agent-id: ext-md, behavior: markdown }
    - { name: inj, agent-id: ext-inj, behavior: injection }
    - { name: many, agent-id: ext-many, behavior: many-callbacks }
    - { name: slow, agent-id: ext-slow, behavior: "slow-ack:6500ms" }
    - { name: err, agent-id: ext-err, behavior: "error-ack:503" }
    - { name: reset, agent-id: ext-reset, behavior: "fault:reset" }
    - { name: silent, agent-id: ext-silent, behavior: never-callback }
    - { name: huge, agent-id: ext-huge, behavior: "huge-callback:2MiB" }
    - { name: empty, agent-id: ext-empty, behavior: empty-callback }
    - { name: blank, agent-id: ext-blank, behavior: whitespace-callback }
    - { name: lost, agent-id: ext-lost, behavior: callback-to-unknown-session }
    - { name: gone, agent-id: ext-gone, behavior: callback-to-deleted-session }
"#;

/// Runs the fleet against the reference server with `flaw`.
async fn run(flaw: Flaw) -> Report {
    let (listener, url) = agent_server::bind().await;
    let text = FLEET.replace("${SERVER}", &url);
    let fleet = Fleet::parse("fleet.yaml", &text, None).unwrap();
    judged_against(&fleet, (listener, url), flaw).await
}

/// Serves `fleet`'s inputUrls, starts the reference server with `flaw` on `bound` knowing them,
/// and judges it.
pub(crate) async fn judged_against(
    fleet: &Fleet,
    bound: (tokio::net::TcpListener, String),
    flaw: Flaw,
) -> Report {
    judged_recording(fleet, bound, flaw, None).await
}

/// [`judged_against`], what the run saw recorded to `record` when given.
pub(crate) async fn judged_recording(
    fleet: &Fleet,
    bound: (tokio::net::TcpListener, String),
    flaw: Flaw,
    record: Option<&std::path::Path>,
) -> Report {
    let served = fleet::serve(fleet).await.unwrap();
    let agents: HashMap<String, String> = served
        .input_urls(fleet)
        .into_iter()
        .map(|(_, id, input)| (id, input))
        .collect();
    let _server = agent_server::start(bound, flaw, agents);
    match record {
        Some(path) => judge::run_recorded(fleet, served, false, 7, path)
            .await
            .unwrap(),
        None => judge::run(fleet, served, false, 7).await,
    }
}

fn failed(report: &Report) -> BTreeSet<String> {
    crate::support::failed_ids(&report.cases)
}

fn explain(report: &Report) -> String {
    report
        .cases
        .iter()
        .map(|c| format!("{:?} {}: {}", c.status, c.id, c.message))
        .collect::<Vec<_>>()
        .join("\n")
}

#[deadline::test(secs = 900, flavor = "multi_thread", worker_threads = 2)]
async fn the_reference_server_passes_and_each_flaw_fails_exactly_its_check() {
    let _heavy = crate::support::heavy().await;
    let mut runs = vec![run(Flaw::None)];
    runs.extend(Flaw::ALL.into_iter().map(run));
    // A few fleets at a time: the judge's margins (a server giving up on a slow acknowledgement
    // within 2 s of its 5 s, an error message within 3 s) are a real server's, and thirteen
    // fleets at once beside the rest of the suite on a 2-core CI machine once stretched one.
    let reports: Vec<Report> = futures::stream::iter(runs).buffered(4).collect().await;
    let reference = &reports[0];
    assert_eq!(failed(reference), BTreeSet::new(), "{}", explain(reference));
    // Every check had something to judge against the reference.
    let skipped: Vec<&str> = reference
        .cases
        .iter()
        .filter(|c| c.status == Status::Skip)
        .map(|c| c.id.as_str())
        .collect();
    assert!(
        skipped.is_empty(),
        "skipped: {skipped:?}\n{}",
        explain(reference)
    );
    assert!(
        reference
            .cases
            .iter()
            .all(|c| c.evidence.as_ref().is_some_and(|e| e.judged > 0)),
        "{}",
        explain(reference)
    );
    for (flaw, report) in Flaw::ALL.iter().zip(&reports[1..]) {
        let expected: BTreeSet<String> = flaw.checks().iter().map(|c| c.to_string()).collect();
        assert_eq!(failed(report), expected, "{flaw:?}\n{}", explain(report));
    }
    let latency = reference
        .cases
        .iter()
        .find(|c| c.id == "platform.broadcast-latency")
        .unwrap();
    assert!(latency.message.contains("p99"), "{}", latency.message);
}

/// An error message that comes 2 s after the failed forward (a busy server's), after the fleet's
/// `settle` but within the 3 s the document's rule is judged by: the fleet keeps its clients
/// until it came, and the server passes.
#[deadline::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_error_message_late_but_in_time_passes() {
    let (listener, url) = agent_server::bind().await;
    let mut fleet = Fleet::parse("fleet.yaml", &FLEET.replace("${SERVER}", &url), None).unwrap();
    // One agent whose acknowledgement fails, one message: the fleet would be done a second
    // after it (the broadcasts settle in a second), before the error comes.
    fleet.agents.retain(|a| a.name == "err");
    fleet.messages = 1;
    fleet.settle = std::time::Duration::from_secs(1);
    let report = judged_against(&fleet, (listener, url), Flaw::SlowErrorMessage).await;
    let case = report
        .cases
        .iter()
        .find(|c| c.id == "platform.error-message")
        .unwrap();
    assert_eq!(case.status, Status::Pass, "{}", explain(&report));
    assert_eq!(failed(&report), BTreeSet::new(), "{}", explain(&report));
}

/// A server that knows none of the fleet's agents refuses their sessions: that is the failure
/// (`platform.session-create`), and `platform.reached-fleet`, with no message it could have
/// forwarded, says what would exercise it.
#[deadline::test]
async fn a_server_that_knows_no_agent_fails_session_create_and_reached_fleet_says_why() {
    let (listener, url) = agent_server::bind().await;
    let text = FLEET.replace("${SERVER}", &url);
    let mut short = Fleet::parse("fleet.yaml", &text, None).unwrap();
    short.agents.truncate(1);
    short.messages = 1;
    let served = fleet::serve(&short).await.unwrap();
    let _server = agent_server::start((listener, url), Flaw::None, HashMap::new());
    let report = tokio::time::timeout(
        std::time::Duration::from_secs(60),
        judge::run(&short, served, false, 7),
    )
    .await
    .expect("the fleet ends");
    let case = |id: &str| report.cases.iter().find(|c| c.id == id).unwrap();
    let create = case("platform.session-create");
    assert_eq!(create.status, Status::Fail, "{}", create.message);
    assert!(
        create.message.contains("Unknown agent: ext-steady"),
        "{}",
        create.message
    );
    let reached = case("platform.reached-fleet");
    assert_eq!(reached.status, Status::Skip, "{}", reached.message);
    assert!(
        reached
            .message
            .contains("no user message was sent on a session the server created")
            && reached.message.contains("inputUrls"),
        "{}",
        reached.message
    );
    assert_eq!(report.exit_code(), 1);
}

/// The README's connector fleet file, run through the binary as it says (`mock fleet --config
/// … --platform-url …`) against the reference server: green, every check judged.
#[deadline::test(secs = 900, flavor = "multi_thread", worker_threads = 2)]
async fn the_readmes_connector_fleet_file_runs_green_through_the_binary() {
    let _heavy = crate::support::heavy().await;
    let readme = include_str!("../../README.md");
    let yaml = readme
        .split("# mocks/connector-fleet.yaml\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("the README's connector fleet file");
    // A port for the inputUrls: the server must know them before the fleet starts.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let listen = format!("127.0.0.1:{port}");
    let fleet = Fleet::parse("connector-fleet.yaml", yaml, None).unwrap();
    let agents: HashMap<String, String> = fleet
        .agents
        .iter()
        .map(|a| {
            (
                a.agent_id.clone(),
                Fleet::input_url(&format!("http://{listen}"), &a.name),
            )
        })
        .collect();
    let (listener, url) = agent_server::bind().await;
    let _server = agent_server::start((listener, url.clone()), Flaw::None, agents);
    let dir = crate::support::TempDir::new("connector-fleet");
    let file = dir.path("connector-fleet.yaml");
    let json = dir.path("report.json");
    std::fs::write(&file, yaml).unwrap();
    let mut command = crate::support::tck_command(&["mock", "fleet", "--config"]);
    command
        .arg(&file)
        .args(["--platform-url", &url, "--json"])
        .arg(&json)
        .env("FLEET_LISTEN", &listen);
    let out = crate::support::run_within_async(command, crate::support::RUN_DEADLINE).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains(&format!("http://{listen}/agents/steady/input")),
        "{stdout}"
    );
    // `ws: auto` (the default) says which dialect answered.
    assert!(
        stdout
            .contains("WebSocket dialect: document (hello {sessionId}) answered on tck-steady-0-"),
        "{stdout}"
    );
    let report: Report = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert!(report.cases.len() >= 15);
    let skipped: Vec<&str> = report
        .cases
        .iter()
        .filter(|c| c.status != Status::Pass)
        .map(|c| c.id.as_str())
        .collect();
    assert!(skipped.is_empty(), "{skipped:?}\n{stdout}");
}

/// The fleet file's switches reach the wire: `ws: assistant-v5` speaks protocol 5 (a server that
/// takes it runs green), and `callback-base:` is what every callbackUrl must start with (a server
/// that gives another is told so, naming the URL).
#[deadline::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dialect_and_the_callback_base_are_the_files() {
    let short = |extra: &str, url: &str| {
        FLEET
            .replace("${SERVER}", url)
            .replace("  messages: 2\n", &format!("  messages: 1\n{extra}"))
    };
    for (extra, server, fails) in [
        ("  ws: assistant-v5\n", Flaw::Protocol5Only, None),
        // The same server, spoken to in the document's dialect (forced): no client is attached.
        (
            "  ws: document\n",
            Flaw::Protocol5Only,
            Some("platform.ws-attach"),
        ),
        (
            "  callback-base: http://agent-server.internal:8080\n",
            Flaw::None,
            Some("platform.forward-schema"),
        ),
    ] {
        let (listener, url) = agent_server::bind().await;
        let mut fleet = Fleet::parse("fleet.yaml", &short(extra, &url), None).unwrap();
        // The quick agents: no slow acknowledgement to wait for.
        fleet
            .agents
            .retain(|a| ["steady", "md", "err"].contains(&a.name.as_str()));
        let report = judged_against(&fleet, (listener, url), server).await;
        let failed = failed(&report);
        if fails == Some("platform.ws-attach") {
            // Nothing reaches the server without a client: the forwards fail with it.
            assert!(
                failed.contains("platform.ws-attach"),
                "{}",
                explain(&report)
            );
            // A forced dialect that is not answered names the other, and `ws: auto`.
            let attach = report
                .cases
                .iter()
                .find(|c| c.id == "platform.ws-attach")
                .unwrap();
            assert!(
                attach.message.contains("no session_ready within 5s after document (hello {sessionId}; the fleet file's `ws: auto` tries assistant-v5 too)"),
                "{}",
                attach.message
            );
            continue;
        }
        let expected: BTreeSet<String> = fails.into_iter().map(str::to_string).collect();
        assert_eq!(failed, expected, "{extra}{}", explain(&report));
        if fails.is_some() {
            let case = report
                .cases
                .iter()
                .find(|c| c.id == "platform.forward-schema")
                .unwrap();
            assert!(
                case.message.contains("does not point back at the server")
                    && case
                        .message
                        .contains("http://agent-server.internal:8080/external/sessions/"),
                "{}",
                case.message
            );
        }
    }
}

/// A free loopback port (the OS picks it; it is free again when this returns).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A fleet file of two quick agents (ext-steady, ext-md) against `server`, its inputUrls on
/// the fixed `listen`, in `dialect`.
fn quick_fleet(server: &str, listen: &str, dialect: &str) -> String {
    format!(
        "protocol: connector\nseed: 5\nconnector:\n  url: {server}\n  listen: {listen}\n  ws: {dialect}\n  messages: 1\n  clients: 1\n  settle: 1s\n  agents:\n    - {{ name: steady, agent-id: ext-steady }}\n    - {{ name: md, agent-id: ext-md, behavior: markdown }}\n"
    )
}

/// `--print-config` prints the definitions (and `--write-config` writes the same) for both
/// dialects — a list of the document's definitions, a whole config file for assistant-v5 and
/// for `ws: auto` (the server's kind unknown: the public one would load a list as no agents) —
/// and exits 0 without calling the server; what it wrote loads in the stand-in server as the
/// public one loads it, each external agent at its inputUrl.
#[test]
fn print_config_writes_definitions_that_load_and_does_not_drive() {
    let server = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    server.set_nonblocking(true).unwrap();
    let url = format!("http://{}", server.local_addr().unwrap());
    let listen = format!("127.0.0.1:{}", free_port());
    let dir = crate::support::TempDir::new("connector-print-config");
    for (dialect, whole_file) in [("document", false), ("assistant-v5", true), ("auto", true)] {
        let file = dir.path(&format!("{dialect}.yaml"));
        let written = dir.path(&format!("{dialect}.json"));
        std::fs::write(&file, quick_fleet(&url, &listen, dialect)).unwrap();
        let out = crate::support::tck(&[
            "mock",
            "fleet",
            "--config",
            &file,
            "--print-config",
            "--write-config",
            &written,
        ]);
        let text = crate::support::text(&out);
        assert_eq!(out.status.code(), Some(0), "{text}");
        let json = std::fs::read_to_string(&written).unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout), json, "{text}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains(&format!("to {written}")),
            "{text}"
        );
        let value: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(value.is_object(), whole_file, "{json}");
        if dialect == "auto" {
            assert!(
                String::from_utf8_lossy(&out.stderr).contains(
                    "`ws: auto` leaves the server's kind unknown until the run, and that server would load a bare list as no agents at all"
                ),
                "{text}"
            );
        }
        let config = agent_server::load_config(&json).unwrap_or_else(|e| panic!("{e}\n{json}"));
        assert!(config.session_routes, "{json}");
        assert_eq!(
            config.agents,
            HashMap::from([
                (
                    "ext-steady".to_string(),
                    format!("http://{listen}/agents/steady/input")
                ),
                (
                    "ext-md".to_string(),
                    format!("http://{listen}/agents/md/input")
                ),
            ])
        );
    }
    // Nothing reached the server.
    assert_eq!(
        server.accept().map(|_| ()).unwrap_err().kind(),
        std::io::ErrorKind::WouldBlock
    );
}

/// The stand-in refuses what the public server refuses, in its words: a definition without
/// `description` (the snippet the fleet used to print), or with an empty one.
#[test]
fn the_stand_in_refuses_a_definition_without_description_as_the_public_one_does() {
    let written = r#"{"agents": [{"agentId": "ext-a", "displayName": "agent-tck a", "description": "d", "type": "external", "external": {"inputUrl": "http://127.0.0.1:9400/agents/a/input", "callbackBaseUrl": "http://127.0.0.1:3000"}}]}"#;
    assert!(agent_server::load_config(written).is_ok());
    let without = written.replace(r#""description": "d", "#, "");
    let refused = agent_server::load_config(&without).unwrap_err();
    assert!(
        refused.starts_with("ZodError: [")
            && refused
                .contains("\"path\": [\n      \"agents\",\n      0,\n      \"description\"\n    ]")
            && refused.contains("\"message\": \"Required\""),
        "{refused}"
    );
    let blank = written.replace(r#""description": "d""#, r#""description": "  ""#);
    assert!(agent_server::load_config(&blank)
        .unwrap_err()
        .contains("String must contain at least 1 character(s)"));
    let no_external = written.replace(r#""type": "external", "#, "");
    assert_eq!(
        agent_server::load_config(&no_external).unwrap_err(),
        "agents[ext-a].external is only valid when type is \"external\""
    );
}

/// A tokio runtime of its own for a stand-in server beside a process the test waits on.
fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// The stand-in server, configured from `config` (a file the fleet wrote), on `port`.
fn serve_configured(
    rt: &tokio::runtime::Runtime,
    port: u16,
    config: &str,
) -> agent_server::Running {
    let configured = agent_server::load_config(config).unwrap_or_else(|e| panic!("{e}\n{config}"));
    rt.block_on(async {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
            .await
            .unwrap();
        let url = format!("http://127.0.0.1:{port}");
        agent_server::start_configured((listener, url), Flaw::None, configured)
    })
}

/// A server started after the fleet (once it says it is waiting) with the config it wrote is
/// waited for: the run is driven and passes, `platform.agents-known` saying so.
#[test]
fn a_server_started_late_is_waited_for_and_the_run_passes() {
    let _heavy = crate::support::heavy_blocking();
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}");
    let listen = format!("127.0.0.1:{}", free_port());
    let dir = crate::support::TempDir::new("connector-late-server");
    let file = dir.path("fleet.yaml");
    let written = dir.path("agents.json");
    let report = dir.path("report.json");
    std::fs::write(&file, quick_fleet(&url, &listen, "document")).unwrap();
    let mut fleet = crate::support::Spawned::tck(
        &[
            "mock",
            "fleet",
            "--config",
            &file,
            "--write-config",
            &written,
            "--wait-ready",
            "60s",
            "--json",
            &report,
        ],
        crate::support::RUN_DEADLINE,
    );
    while !fleet.line().starts_with("waiting up to 1m") {}
    let rt = runtime();
    let _server = serve_configured(&rt, port, &std::fs::read_to_string(&written).unwrap());
    let status = fleet.wait();
    let out = fleet.output(status);
    let text = crate::support::text(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(
        text.contains("the agent server knows the fleet's 2 agent ids (after "),
        "{text}"
    );
    let report: Report = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    let known = report
        .cases
        .iter()
        .find(|c| c.id == "platform.agents-known")
        .unwrap();
    assert_eq!(known.status, Status::Pass, "{}", known.message);
    assert_eq!(known.evidence.as_ref().unwrap().judged, 2);
    // The readiness sessions are none of the users': the creates judged are the fleet's two.
    let create = report
        .cases
        .iter()
        .find(|c| c.id == "platform.session-create")
        .unwrap();
    assert_eq!(create.status, Status::Pass, "{}", create.message);
    assert_eq!(create.evidence.as_ref().unwrap().judged, 2);
}

/// A server whose config lacks one of the fleet's agents: at the end of --wait-ready the run
/// ends with exit 1, the message naming the agent id and where to declare it,
/// `platform.agents-known` failing on it, and every other case a skip that says why.
#[test]
fn a_server_missing_an_agent_id_is_named_with_where_to_declare_it() {
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}");
    let listen = format!("127.0.0.1:{}", free_port());
    let dir = crate::support::TempDir::new("connector-missing-agent");
    let file = dir.path("fleet.yaml");
    let written = dir.path("agents.json");
    let report = dir.path("report.json");
    std::fs::write(&file, quick_fleet(&url, &listen, "assistant-v5")).unwrap();
    let out = crate::support::tck(&[
        "mock",
        "fleet",
        "--config",
        &file,
        "--print-config",
        "--write-config",
        &written,
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", crate::support::text(&out));
    // The server's config without ext-md.
    let mut config: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&written).unwrap()).unwrap();
    config["agents"]
        .as_array_mut()
        .unwrap()
        .retain(|a| a["agentId"] != "ext-md");
    let rt = runtime();
    let _server = serve_configured(&rt, port, &config.to_string());
    let out = crate::support::tck(&[
        "mock",
        "fleet",
        "--config",
        &file,
        "--write-config",
        &written,
        "--wait-ready",
        "2s",
        "--json",
        &report,
    ]);
    let text = crate::support::text(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    let expected = String::from_utf8_lossy(&out.stdout)
        .lines()
        .find(|l| l.starts_with(&format!("the agent server at {url} ")))
        .unwrap_or_else(|| panic!("{text}"))
        .to_string();
    for says in [
        "does not know agent id ext-md after 2s (its answer to a session create for ext-md: HTTP 400 ",
        "\"Unknown agent: ext-md\"",
        &format!("declare them in the server's config `agents[]` ({written} has their definitions) and restart it, or give a longer --wait-ready"),
    ] {
        assert!(expected.contains(says), "{says}\n{text}");
    }
    let report: Report = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    for case in &report.cases {
        if case.id == "platform.agents-known" {
            assert_eq!(case.status, Status::Fail);
            assert_eq!(case.message, expected);
        } else {
            assert_eq!(case.status, Status::Skip, "{}", case.id);
            assert!(
                case.message.starts_with(
                    "not driven: the agent server did not know agent id ext-md (see platform.agents-known)"
                ),
                "{}: {}",
                case.id,
                case.message
            );
        }
    }
    assert!(report.cases.len() > 10);
}

/// No server at all during the wait: said so, nothing judged (a skip), exit 1.
#[test]
fn a_server_never_reached_during_the_wait_is_said_to_be_down() {
    let url = format!("http://127.0.0.1:{}", free_port());
    let listen = format!("127.0.0.1:{}", free_port());
    let dir = crate::support::TempDir::new("connector-no-server");
    let file = dir.path("fleet.yaml");
    std::fs::write(&file, quick_fleet(&url, &listen, "document")).unwrap();
    let out = crate::support::tck(&["mock", "fleet", "--config", &file, "--wait-ready", "2s"]);
    let text = crate::support::text(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    // Refused at once, again and again: said so, with the time really waited (polled every
    // 0.5 s until another poll would not fit) against the wait given.
    let said = format!("the agent server at {url} refused every connection: ");
    let line = text
        .lines()
        .find(|l| l.starts_with(&said))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        line.contains(" rounds of session creates over ")
            && line.contains(
                "s (the wait is 2s; the last: the agent server is unreachable: cannot connect to"
            )
            && line.contains("start it (or point --platform-url at it)")
            && !line.contains("did not answer"),
        "{line}"
    );
    // One failure, the drive's own words for a server that is down; the rest skipped.
    let fails: Vec<&str> = text.lines().filter(|l| l.contains("FAIL ")).collect();
    assert_eq!(fails.len(), 1, "{text}");
    assert!(fails[0].contains("platform.session-create"), "{text}");
    assert!(
        text.contains(&format!(
            "the agent server at {url} is down: no session call was answered"
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "not judged: the agent server at {url} is down (see platform.session-create)"
        )),
        "{text}"
    );
}

/// A server that takes connections and never answers: said so, over the whole wait (each
/// create held until the wait runs out), not as a refusal.
#[test]
fn a_server_silent_during_the_wait_is_told_from_one_that_refuses() {
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", silent.local_addr().unwrap());
    // Accepts and holds every connection, reading nothing, until the test ends.
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in silent.incoming().flatten() {
            held.push(stream);
        }
    });
    let listen = format!("127.0.0.1:{}", free_port());
    let dir = crate::support::TempDir::new("connector-silent-server");
    let file = dir.path("fleet.yaml");
    std::fs::write(&file, quick_fleet(&url, &listen, "document")).unwrap();
    let started = std::time::Instant::now();
    let out = crate::support::tck(&["mock", "fleet", "--config", &file, "--wait-ready", "2s"]);
    let text = crate::support::text(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        started.elapsed() >= std::time::Duration::from_secs(2),
        "{text}"
    );
    let said = format!(
        "the agent server at {url} took connections but answered no session create: 1 round of session creates over 2"
    );
    let line = text
        .lines()
        .find(|l| l.starts_with(&said))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        line.contains("(the wait is 2s; the last: no answer before --wait-ready ran out): is it the agent server, and not stuck?"),
        "{line}"
    );
}

/// The new flags mean nothing to another protocol's fleet: a usage error naming the flag.
#[test]
fn the_server_config_flags_are_refused_by_other_fleets() {
    let librarian = concat!(env!("CARGO_MANIFEST_DIR"), "/mocks/librarian-chaos.yaml");
    for (args, flag) in [
        (
            vec!["--config", librarian, "--wait-ready", "5s"],
            "--wait-ready",
        ),
        (
            vec!["--preset", "chaos", "--print-config"],
            "--print-config",
        ),
        (
            vec!["--preset", "chaos", "--write-config", "/tmp/x.json"],
            "--write-config",
        ),
    ] {
        let mut all = vec!["mock", "fleet"];
        all.extend(args);
        let out = crate::support::tck(&all);
        let text = crate::support::text(&out);
        assert_eq!(out.status.code(), Some(2), "{text}");
        assert!(
            text.contains(&format!("{flag}: a fleet of protocol ")),
            "{text}"
        );
    }
}

/// A connector fleet keeps no journal: `--journal FILE` is refused (exit 2, saying why) before
/// anything is served or called, and no file is left behind as if it were one.
#[test]
fn a_connector_fleet_refuses_journal_rather_than_write_nothing() {
    let url = format!("http://127.0.0.1:{}", free_port());
    let listen = format!("127.0.0.1:{}", free_port());
    let dir = crate::support::TempDir::new("connector-journal");
    let file = dir.path("fleet.yaml");
    let journal = dir.path("journal.jsonl");
    std::fs::write(&file, quick_fleet(&url, &listen, "document")).unwrap();
    let out = crate::support::tck(&["mock", "fleet", "--config", &file, "--journal", &journal]);
    let text = crate::support::text(&out);
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(
        text.contains("--journal: a fleet of protocol connector writes no journal (only fleets whose agents a platform calls record one): leave it out; the report (--json FILE) keeps its verdicts"),
        "{text}"
    );
    assert!(!text.contains("inputUrl"), "nothing was served: {text}");
    assert!(!std::path::Path::new(&journal).exists());
}

/// A public-style server whose config does not enable its sessions plugin has no create
/// endpoint (404): the fleet says so and how to enable it, rather than blaming the agent ids.
#[test]
fn a_server_without_its_sessions_plugin_is_told_to_enable_it() {
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}");
    let listen = format!("127.0.0.1:{}", free_port());
    let dir = crate::support::TempDir::new("connector-no-sessions-plugin");
    let file = dir.path("fleet.yaml");
    std::fs::write(&file, quick_fleet(&url, &listen, "assistant-v5")).unwrap();
    let out = crate::support::tck(&["mock", "fleet", "--config", &file, "--print-config"]);
    assert_eq!(out.status.code(), Some(0), "{}", crate::support::text(&out));
    let mut config: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    config.as_object_mut().unwrap().remove("plugins");
    let rt = runtime();
    let _server = serve_configured(&rt, port, &config.to_string());
    let out = crate::support::tck(&["mock", "fleet", "--config", &file, "--wait-ready", "1s"]);
    let text = crate::support::text(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains(&format!(
            "the agent server at {url} has no session create endpoint after 1s (POST /api/plugins/sessions/operations/create answered HTTP 404"
        )) && text.contains(r#"(`"plugins": {"sessions": {"enabled": true}}` in its config"#)
            && text.contains("not driven: the agent server had no session create endpoint"),
        "{text}"
    );
}
// ---------------------------------------------------------------------------------------------
// Meeting real platforms: the WebSocket dialect found (`ws: auto`), a server that is down said
// so once, what the forward timeout measured, and a session awaiting a callback that never
// comes.

/// The fleet file's agents named in `keep`, against `url`, `messages` per session and `extra`
/// settings.
fn fleet_with(url: &str, keep: &[&str], messages: usize, extra: &str) -> Fleet {
    let text = FLEET.replace("${SERVER}", url).replace(
        "  messages: 2\n",
        &format!("  messages: {messages}\n{extra}"),
    );
    let mut fleet = Fleet::parse("fleet.yaml", &text, None).unwrap();
    fleet.agents.retain(|a| keep.contains(&a.name.as_str()));
    fleet
}

/// Runs `keep`'s agents against the reference server with `flaw`.
async fn run_some(flaw: Flaw, keep: &[&str], messages: usize, extra: &str) -> Report {
    let (listener, url) = agent_server::bind().await;
    let fleet = fleet_with(&url, keep, messages, extra);
    tokio::time::timeout(
        std::time::Duration::from_secs(120),
        judged_against(&fleet, (listener, url), flaw),
    )
    .await
    .expect("the fleet ends")
}

fn case<'a>(report: &'a Report, id: &str) -> &'a agent_tck::report::CaseResult {
    report
        .cases
        .iter()
        .find(|c| c.id == id)
        .unwrap_or_else(|| panic!("no case {id}"))
}

/// `ws: auto` (the default) tries the document's dialect, then protocol 5: against the public
/// implementation's stand-in (a document hello is taken for a protocol-5 hello that subscribes
/// to nothing, and answered with nothing) protocol 5 answers, the notes say so, and the run is
/// green; against the document's server the document answers at once. A server that answers
/// neither fails platform.ws-attach naming both dialects and the `ws:` option, and
/// platform.reached-fleet, with no client attached, says why it has nothing to judge.
#[deadline::test(flavor = "multi_thread", worker_threads = 2)]
async fn ws_auto_finds_the_dialect_that_answers_and_names_both_when_neither_does() {
    let quick = ["steady", "md", "err"];
    let (v5, document, deaf) = futures::future::join3(
        run_some(Flaw::Protocol5Only, &quick, 1, ""),
        run_some(Flaw::None, &quick, 1, ""),
        run_some(Flaw::DeafWs, &quick, 1, ""),
    )
    .await;
    assert_eq!(failed(&v5), BTreeSet::new(), "{}", explain(&v5));
    assert!(
        v5.notes.iter().any(|n| n.starts_with("INFO: WebSocket dialect: assistant-v5 (hello {protocolVersion: 5, subscriptions: [{sessionId}]}) answered on tck-steady-0-")
            && n.ends_with("; the run speaks it (document (hello {sessionId}) got no session_ready within 5s; `ws: assistant-v5` in the fleet file skips the try)")),
        "{:?}",
        v5.notes
    );
    // The case names the dialect it judged: protocol 5's hello here, the document's there,
    // both where neither answered.
    assert_eq!(
        case(&v5, "platform.ws-attach").title,
        "a WebSocket client of /ws that says hello {protocolVersion: 5, subscriptions: [{sessionId}]} (assistant-v5 dialect) is told session_ready"
    );
    assert_eq!(
        case(&document, "platform.ws-attach").title,
        "a WebSocket client of /ws that says hello {sessionId} (document dialect) is told session_ready"
    );
    assert_eq!(
        case(&deaf, "platform.ws-attach").title,
        "a WebSocket client of /ws that says hello (document: hello {sessionId}; assistant-v5: hello {protocolVersion: 5, subscriptions: [{sessionId}]}) is told session_ready"
    );
    assert_eq!(failed(&document), BTreeSet::new(), "{}", explain(&document));
    assert!(
        document.notes.iter().any(|n| n.starts_with(
            "INFO: WebSocket dialect: document (hello {sessionId}) answered on tck-steady-0-"
        ) && n.ends_with("; the run speaks it")),
        "{:?}",
        document.notes
    );
    assert_eq!(
        failed(&deaf),
        BTreeSet::from(["platform.ws-attach".to_string()]),
        "{}",
        explain(&deaf)
    );
    let attach = case(&deaf, "platform.ws-attach");
    assert!(
        attach.message.contains("no session_ready within 5s after document (hello {sessionId}) nor after assistant-v5 (hello {protocolVersion: 5, subscriptions: [{sessionId}]})")
            && attach.message.ends_with("neither WebSocket dialect was answered: set the fleet file's `ws:` (auto, document or assistant-v5) to the server's, if it speaks one of them"),
        "{}",
        attach.message
    );
    let reached = case(&deaf, "platform.reached-fleet");
    assert_eq!(reached.status, Status::Skip, "{}", reached.message);
    assert!(
        reached
            .message
            .starts_with("no WebSocket client was told session_ready"),
        "{}",
        reached.message
    );
    assert!(
        deaf.notes
            .iter()
            .any(|n| n.starts_with("INFO: WebSocket dialect: neither answered on tck-steady-0-")),
        "{:?}",
        deaf.notes
    );
}

/// Nothing listens at the server's URL: platform.session-create fails once, saying the server is
/// down, and every other case is a skip that says so and what would exercise it — no row of
/// failures blaming the agents.
#[deadline::test]
async fn a_server_that_is_down_fails_once_and_skips_the_rest_saying_why() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}");
    let fleet = fleet_with(&url, &["steady", "silent", "slow"], 2, "");
    let served = fleet::serve(&fleet).await.unwrap();
    let report = tokio::time::timeout(
        std::time::Duration::from_secs(60),
        judge::run(&fleet, served, false, 7),
    )
    .await
    .expect("the fleet ends");
    assert_eq!(
        failed(&report),
        BTreeSet::from(["platform.session-create".to_string()]),
        "{}",
        explain(&report)
    );
    let down = format!("the agent server at {url} is down");
    let create = case(&report, "platform.session-create");
    assert!(
        create.message.starts_with(&format!(
            "{down}: no session call was answered (the agent server is unreachable: cannot connect to 127.0.0.1:{port}: "
        ))
            && create.message.ends_with(
                "): is it running, and is connector.url (or --platform-url) its address?"
            ),
        "{}",
        create.message
    );
    for c in report
        .cases
        .iter()
        .filter(|c| c.id != "platform.session-create")
    {
        assert_eq!(c.status, Status::Skip, "{}: {}", c.id, c.message);
        assert!(
            c.message
                == format!(
                    "not judged: {down} (see platform.session-create); a server answering at {url} exercises this case"
                ),
            "{}: {}",
            c.id,
            c.message
        );
    }
    assert_eq!(report.exit_code(), 1);
}

/// platform.forward-timeout says what it measured (how many slow forwards were given up, p50 and
/// max); platform.awaiting-callback passes a server whose never-callback session takes its next
/// message, fails one that holds the session for the callback, and skips a fleet with no
/// never-callback agent, or with one message per session, saying what would exercise it.
#[deadline::test(secs = 900, flavor = "multi_thread", worker_threads = 2)]
async fn forward_timeout_gives_its_figures_and_a_session_awaiting_a_callback_stays_usable() {
    let _heavy = crate::support::heavy().await;
    let agents = ["steady", "slow", "silent"];
    let (good, holds, waits, no_silent, one_message) = futures::future::join5(
        run_some(Flaw::None, &agents, 2, ""),
        run_some(Flaw::AwaitsCallback, &agents, 2, ""),
        run_some(Flaw::NoForwardTimeout, &["slow"], 2, ""),
        run_some(Flaw::None, &["steady"], 2, ""),
        run_some(Flaw::None, &["silent"], 1, ""),
    )
    .await;
    assert_eq!(failed(&good), BTreeSet::new(), "{}", explain(&good));
    let timeout = case(&good, "platform.forward-timeout");
    assert!(
        timeout
            .message
            .starts_with("the server gave up on 2 of 2 slow forwards after p50 ")
            && timeout.message.contains(", max ")
            && timeout.message.ends_with("(the document: 5s; 7s allowed)"),
        "{}",
        timeout.message
    );
    let awaiting = case(&good, "platform.awaiting-callback");
    assert_eq!(awaiting.status, Status::Pass, "{}", awaiting.message);
    assert_eq!(awaiting.evidence.as_ref().map(|e| e.judged), Some(1));
    assert_eq!(
        awaiting.message,
        "the clients of the never-callback sessions were shown 0 errors after an acknowledged forward; the document asks for an error only after a non-2xx or a timeout, and does not require the server to tell the user that no reply came (a \"Sent to external agent\" line is the web UI's option): not judged"
    );
    assert_eq!(
        failed(&holds),
        BTreeSet::from([
            "platform.awaiting-callback".to_string(),
            "platform.forward-once".to_string()
        ]),
        "{}",
        explain(&holds)
    );
    let held = case(&holds, "platform.awaiting-callback");
    assert!(
        held.message.starts_with("1 of 1 later user messages on sessions awaiting a callback break the rule, e.g.\n  \"Hello from agent-tck, message 2 to tck-silent-0-00000007\" to tck-silent-0-00000007 (agent silent, never-callback): never forwarded, ")
            && held.message.contains("after the session's earlier message was acknowledged and not called back"),
        "{}",
        held.message
    );
    let waited = case(&waits, "platform.forward-timeout");
    assert_eq!(waited.status, Status::Fail, "{}", waited.message);
    assert!(
        waited
            .message
            .starts_with("the server gave up on none of 2 slow forwards\n2 of 2 slow acknowledgements break the rule"),
        "{}",
        waited.message
    );
    for (report, why) in [
        (
            &no_silent,
            "serve an agent with never-callback, and `messages: 2` or more",
        ),
        (
            &one_message,
            "serve an agent with never-callback, and `messages: 2` or more",
        ),
    ] {
        let c = case(report, "platform.awaiting-callback");
        assert_eq!(c.status, Status::Skip, "{}", c.message);
        assert!(
            c.message
                .starts_with("no later user messages on sessions awaiting a callback to judge: ")
                && c.message.contains(why),
            "{}",
            c.message
        );
    }
}
