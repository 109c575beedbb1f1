//! A fleet against a real platform, as a user writes it: what a fleet-refused answer counts as,
//! a run whose platform never calls the fleet, pointing a file at a platform from the command
//! line, list expectations, the messages when the platform is down, and `strict_requests`.

use std::net::{IpAddr, Ipv4Addr};
use std::process::Output;
use std::time::{Duration, Instant};

use agent_tck::mock::fleet::{self, FleetFile, Layout};
use agent_tck::mock::journal::Journal;
use agent_tck::mock::protocol::PlatformExpect;
use agent_tck::mock::Reply;
use agent_tck::report::Status;
use agent_tck::transport::http::{send, BaseUrl, Limits, Request};
use serde_json::json;

use crate::fleet::{case, drive_fleet};
use crate::platform::{self, PlatformConfig, Variant};
use crate::support::{self, TempDir};

/// A port nothing listens on (bound a moment ago, then released).
fn closed_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

async fn serve(fleet_text: &str) -> fleet::Served {
    let file = FleetFile::parse("fleet.yaml", fleet_text).unwrap();
    let agents = file.agents("fleet.yaml", 1, support::roundtable()).unwrap();
    let protocol = &agent_tck::protocols::roundtable::Agents;
    fleet::serve(
        agents,
        Layout::Shared,
        IpAddr::V4(Ipv4Addr::LOCALHOST),
        0,
        Journal::off(Instant::now()),
        agent_tck::mock::observe::observer_for(
            protocol,
            &PlatformExpect::timeout(Duration::from_secs(5)),
        ),
    )
    .await
    .unwrap()
}

/// The fleet's shared port (agent `a` answers under `/agents/a/`).
fn fleet_base(served: &fleet::Served) -> String {
    let url = &served.urls[0];
    url.split("/agents/").next().unwrap_or(url).to_string()
}

async fn post(
    base: &str,
    path: &str,
    body: serde_json::Value,
    key: Option<&str>,
    deadline: Duration,
) -> Result<u16, String> {
    let mut headers = vec![("content-type".to_string(), "application/json".to_string())];
    if let Some(k) = key {
        headers.push(("authorization".into(), format!("Bearer {k}")));
    }
    let request = Request {
        method: "POST".into(),
        path: path.into(),
        headers,
        body: body.to_string().into(),
    };
    let limits = Limits {
        deadline,
        ..Limits::default()
    };
    send(&BaseUrl::parse(base).unwrap(), &request, limits)
        .await
        .map(|r| r.status)
        .map_err(|e| e.to_string())
}

#[deadline::test]
async fn an_analysis_the_fleet_refused_is_a_failed_one() {
    let served = serve(
        "agents:\n  - { name: alpha, api_key: k-alpha }\n  - { name: beta }\n  - { name: gamma }\n",
    )
    .await;
    let base = fleet_base(&served);
    let long = Duration::from_secs(10);
    let analyze = json!({"task_id": "t1", "content": "Review the login handler."});
    // alpha gets no key (401), gamma a request it finds invalid (400), beta a good one.
    assert_eq!(
        post(&base, "/agents/alpha/analyze", analyze.clone(), None, long).await,
        Ok(401)
    );
    assert_eq!(
        post(
            &base,
            "/agents/gamma/analyze",
            json!({"task_id": "t1"}),
            None,
            long
        )
        .await,
        Ok(400)
    );
    assert_eq!(
        post(&base, "/agents/beta/analyze", analyze.clone(), None, long).await,
        Ok(200)
    );
    // The platform forwards alpha's and gamma's stand-ins to beta anyway.
    let stand_in = |name: &str| json!({"agent_name": name, "domain": "d", "observations": [], "recommendations": [], "confidence": 0.5});
    let challenge = json!({"task_id": "t1", "content": "c", "other_analyses": [stand_in("alpha"), stand_in("gamma")]});
    assert_eq!(
        post(&base, "/agents/beta/challenge", challenge, None, long).await,
        Ok(200)
    );
    served.stop(Duration::from_secs(2)).await;
    let cases = served
        .handler
        .observer
        .cases(agent_tck::mock::protocol::Served::Fleet);
    let c = cases
        .iter()
        .find(|c| c.id == "platform.challenge-no-failed")
        .unwrap();
    assert_eq!(c.status, Status::Fail, "{}", c.message);
    assert!(
        c.message.contains("alpha") && c.message.contains("gamma"),
        "{}",
        c.message
    );
}

#[deadline::test]
async fn a_trigger_that_reaches_no_agent_fails_with_a_hint() {
    // A platform that answers every deliberation and never calls an agent (it knows none).
    let platform = support::stub(|_| Reply::json(200, &json!({"status": "completed"}))).await;
    let spec = format!(
        "url: {}\ntimeout: 1s\ntrigger: {{ margin: 1s }}\n",
        platform.url()
    );
    let report = drive_fleet("agents:\n  - { name: plain }\n", &spec).await;
    platform.stop().await;
    let reached = case(&report, "platform.reached-fleet");
    assert_eq!(reached.status, Status::Fail, "{}", reached.message);
    assert!(
        reached.message.contains("no request reached the fleet")
            && reached.message.contains(
                "has no register: section, so the platform knows none of the fleet's agents \
                 (add `register: {}` for POST /api/v1/agents)"
            ),
        "{}",
        reached.message
    );
    assert!(!reached.message.contains("  "), "{}", reached.message);
    assert_eq!(report.exit_code(), 1);
}

/// A platform that registers the fleet's agents and answers each deliberation without calling
/// one: the hint follows what was set. Without advertise:, the fleet on loopback is told to
/// advertise an address; advertised where it does not listen, to listen there; advertised where
/// it listens, that the cause lies between the platform and this host (no advice to set what
/// was set).
#[deadline::test]
async fn a_trigger_that_reaches_no_agent_hints_at_what_was_set() {
    let platform = support::stub(|_| Reply::json(200, &json!({"status": "completed"}))).await;
    let spec = format!(
        "url: {}\ntimeout: 1s\nregister: {{}}\ntrigger: {{ margin: 1s }}\n",
        platform.url()
    );
    let fleet = "agents:\n  - { name: plain }\n";
    let (none, elsewhere, here) = futures::future::join3(
        crate::fleet::drive_fleet_advertised(fleet, &spec, None),
        crate::fleet::drive_fleet_advertised(fleet, &spec, Some("http://192.0.2.7:9400")),
        crate::fleet::drive_fleet_advertised(fleet, &spec, Some("http://localhost:9400")),
    )
    .await;
    platform.stop().await;
    let hint = |report: &agent_tck::report::Report| {
        let reached = case(report, "platform.reached-fleet");
        assert_eq!(reached.status, Status::Fail, "{}", reached.message);
        assert_eq!(report.exit_code(), 1);
        reached.message.clone()
    };
    let none = hint(&none);
    assert!(
        none.contains("the platform was given http://127.0.0.1:")
            && none.contains(
                "where the fleet listens on loopback (127.0.0.1): from another host or container \
                 that address is the platform's own; give the fleet an address the platform \
                 reaches with advertise: or --advertise, and listen on it with host: or --host"
            ),
        "{none}"
    );
    let elsewhere = hint(&elsewhere);
    assert!(
        elsewhere.contains(
            "the platform was given http://192.0.2.7:9400/agents/plain (advertised as \
             http://192.0.2.7:9400), but the fleet listens on 127.0.0.1 only, so nothing answers \
             there: listen on the advertised address with host: or --host"
        ) && !elsewhere.contains("advertise: or --advertise"),
        "{elsewhere}"
    );
    let here = hint(&here);
    assert!(
        here.contains(
            "the platform was given http://localhost:9400/agents/plain (advertised as \
             http://localhost:9400), and the fleet listens there (127.0.0.1): check that the \
             platform can reach that address"
        ) && !here.contains("advertise: or --advertise")
            && !here.contains("--host"),
        "{here}"
    );
}

#[deadline::test]
async fn a_platform_that_is_down_is_named_and_nothing_runs_after_a_failed_registration() {
    let url = format!("http://127.0.0.1:{}", closed_port());
    // With registration: it fails, saying the platform is unreachable; the triggers and the
    // deregistration are skipped, saying why.
    let spec = format!("url: {url}\ntimeout: 1s\nregister: {{}}\ntrigger: {{ margin: 1s }}\n");
    let report = drive_fleet("agents:\n  - { name: plain }\n", &spec).await;
    let register = case(&report, "platform.register");
    assert_eq!(register.status, Status::Fail);
    assert!(
        register
            .message
            .contains("platform unreachable: cannot connect"),
        "{}",
        register.message
    );
    assert!(
        !register.message.contains("agent unreachable"),
        "{}",
        register.message
    );
    for id in [
        "platform.trigger",
        "platform.deliberation-deadline",
        "platform.no-5xx",
        "platform.trigger-expect",
    ] {
        let c = case(&report, id);
        assert_eq!(c.status, Status::Skip, "{id}: {}", c.message);
        assert!(
            c.message.contains("no agent was registered"),
            "{id}: {}",
            c.message
        );
    }
    let deregister = case(&report, "platform.deregister");
    assert_eq!(deregister.status, Status::Skip, "{}", deregister.message);
    assert!(deregister.message.contains("nothing was registered"));
    // Without registration: the trigger's own case fails, not the deliberation deadline.
    let spec = format!("url: {url}\ntimeout: 1s\ntrigger: {{ margin: 1s }}\n");
    let report = drive_fleet("agents:\n  - { name: plain }\n", &spec).await;
    let trigger = case(&report, "platform.trigger");
    assert_eq!(trigger.status, Status::Fail);
    assert!(
        trigger.message.contains("platform unreachable"),
        "{}",
        trigger.message
    );
    assert_eq!(
        case(&report, "platform.deliberation-deadline").status,
        Status::Skip
    );
    assert_eq!(report.exit_code(), 1);
}

#[deadline::test]
async fn the_deliberation_deadline_names_where_it_comes_from() {
    let agent_timeout = Duration::from_millis(800);
    let platform = platform::start(PlatformConfig {
        variant: Variant::NoTimeout,
        agent_timeout,
        ..PlatformConfig::default()
    })
    .await;
    let report = crate::fleet::drive(&platform.url, agent_timeout).await;
    platform.stop().await;
    let deadline = case(&report, "platform.deliberation-deadline");
    assert_eq!(deadline.status, Status::Fail);
    assert!(
        deadline
            .message
            .contains("the deliberation deadline: platform.timeout 800ms × 3 + margin 8s"),
        "{}",
        deadline.message
    );
    assert!(
        !deadline.message.contains("--timeout"),
        "{}",
        deadline.message
    );
}

#[deadline::test]
async fn strict_requests_false_lets_a_hang_hold_an_invalid_request() {
    let served = serve(
        "agents:\n  - { name: strict, behaviors: hang }\n  - { name: lenient, behaviors: hang, strict_requests: false }\n",
    )
    .await;
    let base = fleet_base(&served);
    let short = Duration::from_millis(1500);
    let invalid = json!({"task_id": "t1"});
    // By default an invalid request is answered 400 at once, whatever the behaviour.
    assert_eq!(
        post(
            &base,
            "/agents/strict/analyze",
            invalid.clone(),
            None,
            short
        )
        .await,
        Ok(400)
    );
    // strict_requests: false: the hang holds it too.
    let lenient = post(&base, "/agents/lenient/analyze", invalid, None, short).await;
    assert!(
        lenient
            .as_ref()
            .is_err_and(|e| e.contains("no complete answer")),
        "{lenient:?}"
    );
    served.stop(Duration::from_secs(2)).await;
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

async fn fleet_cli(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = crate::support::tck_command(&["mock", "fleet"]);
    command.args(args);
    for (k, v) in env {
        command.env(k, v);
    }
    crate::support::run_within_async(command, crate::support::RUN_DEADLINE).await
}

#[deadline::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fleet_file_is_pointed_at_its_platform_by_flag_or_environment() {
    let platform = platform::start(PlatformConfig::default()).await;
    let dir = TempDir::new("fleet-url");
    let body = "protocol: roundtable\nagents:\n  - { name: one }\n  - { name: two }\n";
    let trigger = "  register: {}\n  trigger:\n    margin: 5s\n    expect:\n      json: [\"status == completed\", \"count(votes) == 2\", \"votes[*].agent_name contains one\", \"count(excluded.analyze) == 0\", \"all(votes[*].agent_name) != nobody\"]\n";
    // --platform-url over a file that names a platform that is down.
    let file = dir.path("flag.yaml");
    std::fs::write(
        &file,
        format!(
            "{body}platform:\n  url: http://127.0.0.1:{}\n  timeout: 5s\n{trigger}",
            closed_port()
        ),
    )
    .unwrap();
    let out = fleet_cli(
        &[
            "--config",
            &file,
            "--platform-url",
            &platform.url,
            "--quiet",
        ],
        &[],
    )
    .await;
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    // ${ENV} in the file.
    let file = dir.path("env.yaml");
    std::fs::write(
        &file,
        format!("{body}platform:\n  url: ${{TEST_PLATFORM_URL}}\n  timeout: 5s\n{trigger}"),
    )
    .unwrap();
    let out = fleet_cli(
        &["--config", &file, "--quiet"],
        &[("TEST_PLATFORM_URL", &platform.url)],
    )
    .await;
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    // Unset, without a default: a usage error naming the file, the line and the variable.
    let out = fleet_cli(&["--config", &file], &[]).await;
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains("env.yaml:6: ${TEST_PLATFORM_URL}: the environment variable TEST_PLATFORM_URL is not set (set it, or give a default: ${TEST_PLATFORM_URL:-VALUE})"),
        "{err}"
    );
    // --platform-url without a platform: section to point.
    let file = dir.path("none.yaml");
    std::fs::write(&file, body).unwrap();
    let out = fleet_cli(&["--config", &file, "--platform-url", &platform.url], &[]).await;
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("has no platform: section"),
        "{}",
        text(&out.stderr)
    );
    platform.stop().await;
}

/// The README's complete fleet file, run as it says against the reference platform: every
/// expectation it writes holds, and the run is green.
#[deadline::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_readmes_fleet_file_runs_green_against_the_reference_platform() {
    let readme = include_str!("../../README.md");
    let yaml = readme
        .split("# fleet.yaml\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("the README's fleet file");
    let platform = platform::start(PlatformConfig {
        agent_timeout: Duration::from_secs(2),
        ..PlatformConfig::default()
    })
    .await;
    let dir = TempDir::new("readme-fleet");
    let file = dir.path("fleet.yaml");
    std::fs::write(&file, yaml).unwrap();
    let out = fleet_cli(&["--config", &file, "--platform-url", &platform.url], &[]).await;
    platform.stop().await;
    let stdout = text(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        text(&out.stderr)
    );
    assert!(
        stdout.contains("PASS must   platform.trigger-expect"),
        "{stdout}"
    );
    assert!(
        stdout.contains("PASS must   platform.challenge-no-failed"),
        "{stdout}"
    );
    if std::env::var_os("AGENT_TCK_SHOW").is_some() {
        eprintln!("{stdout}");
    }
}

/// The platform's own agents (registered before the fleet's, as a platform's built-in agents
/// come first in its answers: KangaKode/aiscaffold lists them in `votes` ahead of any other).
const OWN_AGENTS: [&str; 3] = ["architect", "security", "skeptic"];

/// A fleet file of one agent, `wschema`, whose trigger expects `conditions` (one a line).
fn one_agent_fleet(url: &str, conditions: &[&str]) -> String {
    let mut text = format!(
        "protocol: roundtable\nagents:\n  - {{ name: wschema }}\nplatform:\n  url: {url}\n  timeout: 5s\n  register: {{}}\n  trigger:\n    margin: 5s\n    expect:\n      json:\n"
    );
    for c in conditions {
        text.push_str(&format!("        - '{c}'\n"));
    }
    text
}

/// Expectations that pick an agent by name: with the platform's own agents voting first, a
/// filter on agent_name still judges the fleet's agent; a wrong one says what it found and
/// where; one that names no agent says which names there were; a filter that does not read is
/// a usage error naming the file, the line and the column, before anything is served.
#[deadline::test(flavor = "multi_thread", worker_threads = 2)]
async fn expectations_pick_the_fleets_agent_by_name_whatever_the_platforms_own_agents() {
    let platform = platform::start(PlatformConfig::default()).await;
    let own = serve(
        &OWN_AGENTS
            .iter()
            .fold("agents:\n".to_string(), |text, name| {
                text + &format!("  - {{ name: {name} }}\n")
            }),
    )
    .await;
    for (name, url) in OWN_AGENTS.iter().zip(&own.urls) {
        let registered = post(
            &platform.url,
            "/api/v1/agents",
            json!({"name": name, "base_url": url, "domain": "built in"}),
            None,
            Duration::from_secs(30),
        )
        .await;
        assert_eq!(registered, Ok(201), "{name}");
    }
    let dir = TempDir::new("fleet-filters");
    let file = dir.path("fleet.yaml");
    let run = |conditions: &[&str]| {
        std::fs::write(&file, one_agent_fleet(&platform.url, conditions)).unwrap();
        let command = crate::support::tck_command(&["mock", "fleet", "--config", &file]);
        crate::support::run_within_async(command, crate::support::RUN_DEADLINE)
    };
    // A conforming platform: every agent voted against (each challenge is a minority view).
    let out = run(&[
        r#"votes[?agent_name == "wschema"].approve == false"#,
        r#"count(votes[?agent_name != "wschema"]) == 3"#,
        r#"votes[3].agent_name == wschema"#,
        r#"all(votes[?agent_name != "wschema"].approve) == false"#,
        r#"any(votes[*].agent_name) == wschema"#,
        r#"participants contains wschema"#,
    ])
    .await;
    let stdout = text(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        text(&out.stderr)
    );
    assert!(
        stdout.contains("PASS must   platform.trigger-expect"),
        "{stdout}"
    );
    // Wrong expectations: what was found, and where; the names there were.
    let out = run(&[
        r#"votes[?agent_name == "wschema"].approve == true"#,
        r#"votes[?agent_name == "w-schema"].approve == false"#,
        r#"all(votes[?agent_name == "w-schema"].approve) == false"#,
    ])
    .await;
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    let expect = stdout
        .lines()
        .skip_while(|l| !l.contains("platform.trigger-expect"))
        .take(5)
        .collect::<Vec<_>>()
        .join("\n");
    assert!(
        expect.contains("FAIL must   platform.trigger-expect") && expect.contains("3 problems:"),
        "{stdout}"
    );
    for said in [
        r#"#0: votes[?agent_name == "wschema"].approve == true: found false (votes[3].approve)"#,
        r#"#0: votes[?agent_name == "w-schema"].approve == false: selects nothing: no item of votes has agent_name == "w-schema" (agent_name found: "architect", "security", "skeptic", "wschema")"#,
        r#"#0: all(votes[?agent_name == "w-schema"].approve) == false: selects nothing: no item of votes has agent_name == "w-schema""#,
    ] {
        assert!(expect.contains(said), "{said}\n{stdout}");
    }
    // A filter that does not read: a usage error, before the fleet serves or registers.
    let out = run(&[
        "status == completed",
        r#"votes[?agent_name == wschema].approve == false"#,
    ])
    .await;
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains(&format!(
            "{file}: platform.trigger.expect.json, line 13: condition \"votes[?agent_name == wschema].approve == false\", column 22: wschema is not a JSON value: a string is quoted, \"wschema\""
        )),
        "{err}"
    );
    assert!(
        !text(&out.stdout).contains("listening"),
        "{}",
        text(&out.stdout)
    );
    assert_eq!(
        platform.registered(),
        OWN_AGENTS,
        "the fleet deregistered after its runs, and registered nothing on a bad file"
    );
    own.stop(Duration::from_secs(2)).await;
    platform.stop().await;
}

// A fleet meeting a real platform: the address it is advertised at, a deliberation that never
// ends, and Ctrl-C at any moment.

/// `mock fleet ARGS`, started; returned once it has printed its banner line.
fn fleet_started(args: &[&str]) -> support::Spawned {
    let mut all = vec!["mock", "fleet"];
    all.extend_from_slice(args);
    let mut fleet = support::Spawned::tck(&all, support::RUN_DEADLINE);
    let banner = fleet.line();
    assert!(banner.starts_with("agent-tck mock fleet · "), "{banner}");
    fleet
}

/// The case `id` of a JSON report file.
fn json_case(path: &str, id: &str) -> serde_json::Value {
    let report: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}")),
    )
    .unwrap_or_else(|e| panic!("{path}: {e}"));
    report["cases"]
        .as_array()
        .and_then(|cases| cases.iter().find(|c| c["id"] == id))
        .unwrap_or_else(|| panic!("{path}: no case {id}"))
        .clone()
}

/// `advertise` changes only what the platform is told: a fleet that listens where it is not
/// advertised says so at start, naming both and the fix; one that listens there does not.
#[test]
fn an_advertised_host_the_fleet_does_not_listen_on_is_warned_of_at_start() {
    let dir = TempDir::new("advertise");
    let file = dir.path("fleet.yaml");
    std::fs::write(&file, "agents:\n  - { name: one }\n").unwrap();
    let run = |host: &str, advertise: &str| {
        let fleet = fleet_started(&[
            "--config",
            &file,
            "--host",
            host,
            "--port",
            "0",
            "--advertise",
            advertise,
        ]);
        let out = fleet.interrupt(Duration::from_secs(30));
        // No platform to drive: Ctrl-C is how serving ends, not an interruption; nothing was
        // judged, so the verdict is a failure.
        assert_eq!(out.status.code(), Some(1), "{}", support::text(&out));
        text(&out.stderr)
    };
    let err = run("127.0.0.1", "http://192.168.1.5:9000");
    assert!(
        err.contains("warning: the fleet is advertised to the platform as http://192.168.1.5:9000, but it listens on 127.0.0.1 only: the platform will find nothing there. Listen on the advertised address too: --host 0.0.0.0 (every interface) or --host 192.168.1.5 (the fleet file's host:)"),
        "{err}"
    );
    for (host, advertise) in [
        ("127.0.0.1", "http://localhost:9000"),
        ("127.0.0.1", "http://127.0.0.1:9000"),
        ("0.0.0.0", "http://192.168.1.5:9000"),
    ] {
        let err = run(host, advertise);
        assert!(!err.contains("warning:"), "{host} {advertise}: {err}");
    }
}

/// A deliberation stuck on a hung agent, on a platform that waits for it without end:
/// `--deliberation-deadline` ends the run after it, not after 3 × the platform's 120 s + 30 s
/// (and the cut is not held against the platform: its own timeout had not come).
#[deadline::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stuck_deliberation_ends_the_run_at_the_deliberation_deadline() {
    let platform = platform::start(PlatformConfig {
        variant: Variant::NoTimeout,
        ..PlatformConfig::default()
    })
    .await;
    let dir = TempDir::new("stuck");
    let file = dir.path("fleet.yaml");
    std::fs::write(
        &file,
        format!(
            "agents:\n  - {{ name: one }}\n  - {{ name: hangs, behaviors: \"hang@analyze\" }}\nplatform:\n  url: {}\n  timeout: 120s\n  register: {{}}\n  trigger: {{ margin: 30s }}\n",
            platform.url
        ),
    )
    .unwrap();
    let json = dir.path("stuck.json");
    let started = Instant::now();
    let out = fleet_cli(
        &[
            "--config",
            &file,
            "--deliberation-deadline",
            "3s",
            "--json",
            &json,
        ],
        &[],
    )
    .await;
    let took = started.elapsed();
    assert!(took < Duration::from_secs(90), "took {took:?}");
    // What was judged held (registration, the requests): the cut is no failure.
    assert_eq!(out.status.code(), Some(0), "{}", support::text(&out));
    // A deadline shorter than the spec's bound, run out while the platform still waits within
    // its own timeout: the run's end, not the platform's failure, and not a verdict either way.
    let deadline = json_case(&json, "platform.deliberation-deadline");
    assert_eq!(deadline["status"], "skip", "{deadline}");
    let message = deadline["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("cut by the run's own end")
            && message.contains("the deliberation deadline 3s ran out after 3.")
            && message.contains("the spec lets a deliberation take 6m 30s"),
        "{message}"
    );
    let trigger = json_case(&json, "platform.trigger");
    assert!(
        trigger["message"]
            .as_str()
            .unwrap_or_default()
            .contains("no complete answer within 3s (the deliberation deadline set by platform.trigger.deadline or --deliberation-deadline: 3s, in place of platform.timeout 2m × 3 + margin 30s)"),
        "{trigger}"
    );
    assert!(
        text(&out.stdout).contains("SKIP must   platform.deliberation-deadline"),
        "{}",
        text(&out.stdout)
    );
    // The flag needs a trigger to bound, and a duration.
    let bare = dir.path("bare.yaml");
    std::fs::write(&bare, "agents:\n  - { name: one }\n").unwrap();
    let out = fleet_cli(&["--config", &bare, "--deliberation-deadline", "3s"], &[]).await;
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("--deliberation-deadline: ")
            && text(&out.stderr).contains("bare.yaml has no platform.trigger section"),
        "{}",
        text(&out.stderr)
    );
    let out = fleet_cli(&["--config", &file, "--deliberation-deadline", "soon"], &[]).await;
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("--deliberation-deadline: "),
        "{}",
        text(&out.stderr)
    );
    platform.stop().await;
}

/// Ctrl-C right after the banner, while the platform is still deliberating: the reports are
/// written all the same (the cases not reached say so), and the exit is 130.
#[deadline::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_right_after_the_banner_writes_the_reports_and_exits_130() {
    let platform = platform::start(PlatformConfig {
        variant: Variant::NoTimeout,
        ..PlatformConfig::default()
    })
    .await;
    let dir = TempDir::new("interrupted");
    let file = dir.path("fleet.yaml");
    std::fs::write(
        &file,
        format!(
            "agents:\n  - {{ name: one }}\n  - {{ name: hangs, behaviors: \"hang@analyze\" }}\nplatform:\n  url: {}\n  timeout: 120s\n  register: {{}}\n  trigger: {{}}\n",
            platform.url
        ),
    )
    .unwrap();
    let (json, junit) = (dir.path("out.json"), dir.path("out.xml"));
    let args = [
        "--config", &file, "--json", &json, "--junit", &junit, "--quiet",
    ]
    .map(String::from);
    let out = tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        fleet_started(&args).interrupt(Duration::from_secs(60))
    })
    .await
    .unwrap();
    platform.stop().await;
    assert_eq!(out.status.code(), Some(130), "{}", support::text(&out));
    assert!(
        text(&out.stderr).contains("interrupted: stopping the fleet and writing the reports"),
        "{}",
        text(&out.stderr)
    );
    // The line every interrupted command ends with, counting the cases judged before Ctrl-C.
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let cases = report["cases"].as_array().unwrap();
    let done = cases
        .iter()
        .filter(|c| {
            !c["message"]
                .as_str()
                .unwrap_or_default()
                .starts_with("not reached: the run was interrupted")
        })
        .count();
    assert!(
        text(&out.stderr).contains(&format!(
            "interrupted (Ctrl-C): the report has the {} done; the rest are marked not run",
            agent_tck::text::count(done as u64, "cases")
        )),
        "{}",
        text(&out.stderr)
    );
    for id in [
        "platform.trigger",
        "platform.deliberation-deadline",
        "platform.reached-fleet",
    ] {
        let case = json_case(&json, id);
        assert_eq!(case["status"], "skip", "{case}");
        assert!(
            case["message"]
                .as_str()
                .unwrap_or_default()
                .starts_with("not reached: the run was interrupted (Ctrl-C) after "),
            "{case}"
        );
    }
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(
        xml.contains("<testsuite") && xml.contains("platform.trigger"),
        "{xml}"
    );
    // Marked interrupted in every format (--quiet: stdout is the console's end).
    support::assert_marked_interrupted(&json, Some(&junit), None, &text(&out.stdout));
    assert!(
        report["interrupted"]["not_reached"]
            .as_array()
            .unwrap()
            .iter()
            .any(|id| id == "platform.trigger"),
        "{}",
        report["interrupted"]
    );
}

/// Ctrl-C while the platform holds a deregistration (it never answers one): the run ends at once
/// with the reports, the deregistration skipped as not reached, exit 130.
#[deadline::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_during_a_hung_deregistration_writes_the_reports_and_exits_130() {
    let platform = platform::start(PlatformConfig {
        agent_timeout: Duration::from_secs(5),
        hang_deregistration: true,
        ..PlatformConfig::default()
    })
    .await;
    let dir = TempDir::new("interrupted-leaving");
    let file = dir.path("fleet.yaml");
    std::fs::write(
        &file,
        format!(
            "agents:\n  - {{ name: one }}\n  - {{ name: two }}\nplatform:\n  url: {}\n  timeout: 5s\n  register: {{}}\n  trigger: {{}}\n",
            platform.url
        ),
    )
    .unwrap();
    let json = dir.path("out.json");
    let args = ["--config", &file, "--json", &json, "--quiet"].map(String::from);
    let fleet = tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        fleet_started(&args)
    })
    .await
    .unwrap();
    tokio::time::timeout(support::RUN_DEADLINE, async {
        while platform.deregistrations_seen() == 0 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the fleet deregisters after its trigger");
    let out = tokio::task::spawn_blocking(move || fleet.interrupt(Duration::from_secs(30)))
        .await
        .unwrap();
    platform.stop().await;
    assert_eq!(out.status.code(), Some(130), "{}", support::text(&out));
    assert_eq!(json_case(&json, "platform.trigger")["status"], "pass");
    let deregister = json_case(&json, "platform.deregister");
    assert_eq!(deregister["status"], "skip", "{deregister}");
    assert_eq!(
        deregister["message"],
        "not reached: the run was interrupted (Ctrl-C) during the deregistrations"
    );
}
