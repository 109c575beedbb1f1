//! The fleet checks itself: the probe against every mock behaviour (the matrix), and the fleet
//! driving the reference platform of `platform.rs` and each of its broken variants, where
//! exactly the matching platform check must fail.

use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;

use agent_tck::mock::driver::Driver;
use agent_tck::mock::fleet::{FleetFile, Layout};
use agent_tck::mock::session::{self, Banner, SessionSettings};
use agent_tck::report::{Level, Report, Status};
use agent_tck::transport::http::{send, BaseUrl, Request};

use crate::platform::{self, PlatformConfig, Variant};

/// The matrices' shape, and that a row judged against the wrong expectation is reported. Every
/// row of every matrix is run (and must pass) by `cli::selftest_passes_and_writes_both_reports`,
/// through the binary; running them all here too doubled the slowest part of the suite (~50 s).
#[deadline::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_probe_fails_exactly_the_cases_each_behaviour_breaks() {
    let exe = std::path::Path::new(env!("CARGO_BIN_EXE_agent-tck"));
    let mut matrices = agent_tck::selftest::matrix::Matrix::builtin().unwrap();
    assert_eq!(
        matrices.len(),
        5,
        "the round table's, execute_task's, the Librarian's, the connector's and the agent standard's"
    );
    for matrix in &mut matrices {
        assert!(
            matrix.file.rows.len() >= 7,
            "{} rows",
            matrix.file.rows.len()
        );
        // The first row: the conforming agent.
        matrix.file.rows.truncate(1);
        let results = matrix.run(11, exe).await.unwrap();
        let wrong: Vec<String> = results
            .iter()
            .filter(|r| !r.ok())
            .map(|r| agent_tck::selftest::matrix::render(std::slice::from_ref(r)))
            .collect();
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
        // The matrix can fail: a conforming row that expected a failure would be reported.
        let mut broken = results[0].clone();
        broken.expected.insert("analyze.response".into());
        assert!(!broken.ok());
    }
}

/// A fleet with one agent of each kind the platform checks need: keyed and keyless conforming
/// agents, agents that fail /analyze (hang, malformed JSON), and agents whose answers the
/// platform must sanitize (NUL bytes, an oversized field, injection payloads).
pub const FLEET: &str = r#"
seed: 5
agents:
  - { name: keyed, api_key: k-keyed, capabilities: [security] }
  - { name: plain }
  - { name: hangs, behaviors: ["hang@analyze"] }
  - { name: garbled, behaviors: ["malformed-json:truncated@analyze"] }
  - { name: nul, behaviors: [null-bytes] }
  - { name: long, behaviors: ["oversized-field:chars=60000"] }
  - { name: injector, behaviors: ["injection:select=instruction-override;per_answer=2"] }
"#;

/// Serves the fleet, drives `platform` (register, two deliberations, deregister), and returns
/// the report.
pub async fn drive(platform_url: &str, agent_timeout: Duration) -> Report {
    drive_fleet(FLEET, &spec(platform_url, agent_timeout)).await
}

/// The `platform:` section [`drive`] drives `platform_url` with.
pub fn spec(platform_url: &str, agent_timeout: Duration) -> String {
    format!(
        r#"
url: {platform_url}
timeout: {}ms
register: {{ path: /api/v1/agents }}
trigger: {{ count: 2, concurrency: 2, margin: 8s, expect: {{ json: ["status == completed"] }} }}
"#,
        agent_timeout.as_millis()
    )
}

/// Serves the agents of `fleet` (a fleet file's text), drives the platform its `platform:`
/// section (`spec`, YAML) describes, and returns the report.
pub async fn drive_fleet(fleet: &str, spec: &str) -> Report {
    drive_fleet_advertised(fleet, spec, None).await
}

/// As [`drive_fleet`], the fleet advertised to the platform as `advertise` (advertise:).
pub async fn drive_fleet_advertised(fleet: &str, spec: &str, advertise: Option<&str>) -> Report {
    drive_fleet_until(fleet, spec, advertise, std::future::pending()).await
}

/// As [`drive_fleet_advertised`], the session ended by `stop` (as by Ctrl-C) where the driver
/// leaves it serving: with no trigger, the test deliberates itself.
pub async fn drive_fleet_until(
    fleet: &str,
    spec: &str,
    advertise: Option<&str>,
    stop: impl std::future::Future<Output = ()> + Send,
) -> Report {
    let settings = settings(fleet, spec, advertise);
    // Bounded: a platform that never answers is cut off by the trigger's own deadline.
    tokio::time::timeout(Duration::from_secs(30), session::run(settings, stop))
        .await
        .expect("the session ends")
        .unwrap()
}

/// The session [`drive_fleet_until`] runs: the agents of `fleet`, the platform of `spec`.
pub fn settings(fleet: &str, spec: &str, advertise: Option<&str>) -> SessionSettings {
    let file = FleetFile::parse("fleet.yaml", fleet).unwrap();
    let agents = file
        .agents("fleet.yaml", 5, crate::support::roundtable())
        .unwrap();
    let spec = serde_saphyr::from_str(spec).unwrap();
    let driver = Driver::new(&spec, None, &agent_tck::protocols::roundtable::Agents).unwrap();
    SessionSettings {
        protocol: &agent_tck::protocols::roundtable::Agents,
        agents,
        layout: Layout::Shared,
        host: IpAddr::V4(Ipv4Addr::LOCALHOST),
        port: 0,
        advertise: advertise.map(str::to_string),
        expect: agent_tck::mock::protocol::PlatformExpect::timeout(driver.timeout),
        driver: Some(driver),
        journal: None,
        journal_body_cap: 1 << 20,
        seed: 5,
        serve_after: false,
        strict: false,
        banner: Banner::Fleet,
        log_requests: false,
    }
}

fn failed_blocking(report: &Report) -> Vec<(String, String)> {
    report
        .cases
        .iter()
        .filter(|c| c.status == Status::Fail && c.level != Level::May)
        .map(|c| (c.id.clone(), c.message.clone()))
        .collect()
}

pub async fn judge(variant: Variant) -> Report {
    // The platform's timeout for an agent: the conforming agents must answer well within it on
    // a busy machine (800 ms once let a 60,000-character answer time out beside 8 concurrent
    // platforms at load 12, and the oversized field was never forwarded), while the hanging
    // agent is given up on after it.
    let agent_timeout = Duration::from_secs(2);
    let platform = platform::start(PlatformConfig {
        variant,
        agent_timeout,
        ..PlatformConfig::default()
    })
    .await;
    let report = drive(&platform.url, agent_timeout).await;
    platform.stop().await;
    report
}

#[deadline::test]
async fn the_reference_platform_passes_every_platform_check() {
    let report = judge(Variant::Conforming).await;
    assert!(
        failed_blocking(&report).is_empty(),
        "{:#?}",
        failed_blocking(&report)
    );
    for id in [
        "platform.register",
        "platform.request-schema",
        "platform.bearer",
        "platform.no-stray-bearer",
        "platform.challenge-not-own",
        "platform.challenge-no-failed",
        "platform.nul-stripped",
        "platform.field-truncated",
        "platform.deliberation-deadline",
        "platform.no-5xx",
        "platform.trigger-expect",
        "platform.deregister",
    ] {
        let case = report
            .cases
            .iter()
            .find(|c| c.id == id)
            .unwrap_or_else(|| panic!("no {id}"));
        assert_eq!(case.status, Status::Pass, "{id}: {}", case.message);
    }
    // The reference platform logs injection patterns but forwards them: reported, as INFO.
    let injection = report
        .cases
        .iter()
        .find(|c| c.id == "platform.injection-forwarded")
        .unwrap();
    assert_eq!(injection.status, Status::Fail, "{}", injection.message);
    assert_eq!(injection.level, Level::May);
    assert!(
        injection.message.contains("instruction-override")
            && injection.message.contains("from injector"),
        "{}",
        injection.message
    );
    let latency = report
        .cases
        .iter()
        .find(|c| c.id == "platform.phase-latency")
        .unwrap();
    assert_eq!(latency.status, Status::Pass, "{}", latency.message);
    assert!(
        latency.message.contains("analyze → challenge: median")
            && latency.message.contains("challenge → vote: median"),
        "{}",
        latency.message
    );
    assert_eq!(report.exit_code(), 0);
}

#[deadline::test]
async fn each_broken_platform_fails_exactly_its_check() {
    // A platform without a timeout is seen from both sides: the trigger's deadline, and the
    // hanging agent's connection held past the platform's timeout. One that crashes on an
    // agent's invalid JSON answers 5xx, and its other agents never get to /challenge.
    let expected: [(Variant, &[&str]); 8] = [
        (
            Variant::NoTimeout,
            &["platform.deliberation-deadline", "platform.gives-up"],
        ),
        (
            Variant::CrashOnInvalidJson,
            &["platform.no-5xx", "platform.phases-continue"],
        ),
        (Variant::NoNulStripping, &["platform.nul-stripped"]),
        (Variant::NoTruncation, &["platform.field-truncated"]),
        (
            Variant::KeepsFailedAgents,
            &["platform.challenge-no-failed"],
        ),
        (
            Variant::OwnAnalysisInChallenge,
            &["platform.challenge-not-own"],
        ),
        (Variant::NoBearer, &["platform.bearer"]),
        (Variant::NoTaskId, &["platform.request-schema"]),
    ];
    assert_eq!(expected.len() + 1, Variant::ALL.len());
    let reports = futures::future::join_all(expected.iter().map(|(v, _)| judge(*v))).await;
    for ((variant, check), report) in expected.iter().zip(&reports) {
        let failed: Vec<String> = failed_blocking(report)
            .into_iter()
            .map(|(id, _)| id)
            .collect();
        let expected: Vec<_> = report
            .cases
            .iter()
            .filter(|c| check.contains(&c.id.as_str()))
            .map(|c| (&c.id, c.status, &c.message))
            .collect();
        assert_eq!(
            failed,
            *check,
            "{}: failed {:#?}; the expected cases: {:#?}",
            variant.name(),
            failed_blocking(report),
            expected
        );
        assert_eq!(report.exit_code(), 1, "{}", variant.name());
    }
}

#[deadline::test]
async fn registration_errors_say_what_the_platform_refused() {
    // Real platforms refuse loopback base URLs: the message points at --advertise.
    let platform = platform::start(PlatformConfig {
        refuse_loopback: true,
        ..PlatformConfig::default()
    })
    .await;
    let report = drive(&platform.url, Duration::from_millis(800)).await;
    platform.stop().await;
    let register = case(&report, "platform.register");
    assert_eq!(register.status, Status::Fail);
    assert!(
        register.message.contains("7 of 7 registrations refused")
            && register
                .message
                .contains("keyed: 400 (refused: the platform may not accept base_url http://127.0.0.1:")
            && register.message.contains("/agents/keyed — a loopback, private or *.internal address? give the fleet an address the platform accepts with advertise: or --advertise, and listen on it with host: or --host, e.g. --host 0.0.0.0)"),
        "{}",
        register.message
    );
    assert_eq!(report.exit_code(), 1);

    // A name already taken.
    let platform = platform::start(PlatformConfig::default()).await;
    let taken = serde_json::json!({"name": "plain", "domain": "x", "base_url": "http://agents.example.test"});
    let request = Request {
        method: "POST".into(),
        path: "/api/v1/agents".into(),
        headers: vec![("content-type".into(), "application/json".into())],
        body: taken.to_string().into(),
    };
    let base = BaseUrl::parse(&platform.url).unwrap();
    assert_eq!(
        send(&base, &request, Default::default())
            .await
            .unwrap()
            .status,
        201
    );
    let report = drive(&platform.url, Duration::from_millis(800)).await;
    platform.stop().await;
    let register = case(&report, "platform.register");
    assert!(
        register.message.contains("1 of 7 registrations refused")
            && register.message.contains("plain: 409 (name taken)"),
        "{}",
        register.message
    );
}

pub fn case<'r>(report: &'r Report, id: &str) -> &'r agent_tck::report::CaseResult {
    report
        .cases
        .iter()
        .find(|c| c.id == id)
        .unwrap_or_else(|| panic!("no case {id}"))
}

/// The README's "try it" pair: `mock agent --api-key KEY` probed by `probe roundtable --api-key
/// KEY`. The probe's deliberate negative requests (no key, a wrong key, a body that is not
/// JSON) are marked, and the mock reports them as the probe's, not as the platform's faults.
#[deadline::test]
async fn the_try_it_pair_ends_green_on_both_sides() {
    let at = crate::support::roundtable();
    let agent = agent_tck::mock::agent::MockAgent::new(
        at.protocol,
        agent_tck::mock::agent::Profile {
            name: "reference-agent".into(),
            domain: "general review".into(),
            capabilities: Vec::new(),
            api_key: Some(crate::support::KEY.into()),
        },
        agent_tck::mock::behavior::parse_list("conforming", at).unwrap(),
        1,
    );
    let (url, stop, mock) = crate::support::mock_session(at.protocol, agent).await;
    let probe = crate::support::probe(&url, Some(crate::support::KEY)).await;
    assert_eq!(
        probe.summary.failed,
        0,
        "{:?}",
        crate::support::failed(&probe)
    );
    stop.send(()).unwrap();
    let mock = mock.await.unwrap().unwrap();
    let failed: Vec<(&str, &str)> = mock
        .cases
        .iter()
        .filter(|c| c.status == Status::Fail)
        .map(|c| (c.id.as_str(), c.message.as_str()))
        .collect();
    assert!(failed.is_empty(), "{failed:?}");
    let marked = mock
        .cases
        .iter()
        .find(|c| c.id == "platform.probe-requests")
        .expect("the probe's own requests are reported");
    assert_eq!(marked.level, Level::May);
    for exchange in [
        "auth-none at /analyze",
        "auth-wrong at /analyze",
        "not-json at /analyze",
    ] {
        assert!(marked.message.contains(exchange), "{}", marked.message);
    }
    // The probe's marked requests are not plotted as the platform's: left out, and said so —
    // all four of the suite's (the three above, and one to an unknown path).
    let note = "the timeline leaves out the 4 answers to requests agent-tck's probe marked as \
                its own deliberate tests (x-agent-tck-case): they are not the platform's"
        .to_string();
    assert!(mock.notes.contains(&note), "{:?}", mock.notes);
    let bearer = mock
        .cases
        .iter()
        .find(|c| c.id == "platform.bearer")
        .unwrap();
    assert_eq!(bearer.status, Status::Pass, "{}", bearer.message);
}

/// KangaKode/aiscaffold's guard against server-side request forgery refuses loopback, private
/// and `*.internal` base URLs with a 400 and its own words: the fleet's registration case shows
/// those words, the URL it sent, and where to give another (advertise, and listen on it).
#[deadline::test]
async fn a_platform_guarding_against_request_forgery_refuses_the_loopback_fleet_and_says_so() {
    let platform = platform::start(PlatformConfig {
        refuse_private: true,
        ..PlatformConfig::default()
    })
    .await;
    let report = drive(&platform.url, Duration::from_millis(800)).await;
    platform.stop().await;
    let register = case(&report, "platform.register");
    assert_eq!(register.status, Status::Fail);
    for needle in [
        "7 of 7 registrations refused",
        "plain: 400 (refused: the platform may not accept base_url http://127.0.0.1:",
        "give the fleet an address the platform accepts with advertise: or --advertise, and listen on it with host: or --host",
        r#"{"error":"base_url cannot point to private/internal addresses"}"#,
    ] {
        assert!(register.message.contains(needle), "{needle}: {}", register.message);
    }
    assert_eq!(
        case(&report, "platform.trigger").message,
        "skipped: no agent was registered (platform.register failed)"
    );
    assert_eq!(report.exit_code(), 1);
}

/// One agent answers /analyze with a bare `NaN`. A platform on Python's json module takes it,
/// then its HTTP client cannot serialise any /challenge (each carries the analyses): /challenge
/// vanishes for every agent, and that is a failure naming them — not a row of skips. The
/// conforming platform refuses the answer as invalid JSON and challenges the others.
#[deadline::test]
async fn an_agents_nan_that_breaks_the_platforms_client_fails_the_vanished_challenge() {
    const NAN_FLEET: &str = r#"
agents:
  - { name: one }
  - { name: two }
  - { name: nan, behaviors: ["malformed-json:nan@analyze"] }
"#;
    let spec = |url: &str| {
        format!(
            "url: {url}\ntimeout: 2s\nregister: {{}}\ntrigger: {{ margin: 8s, expect: {{ json: [\"status == completed\"] }} }}\n"
        )
    };
    let nan = platform::start(PlatformConfig {
        variant: Variant::NanBreaksItsClient,
        agent_timeout: Duration::from_secs(2),
        ..PlatformConfig::default()
    })
    .await;
    let report = drive_fleet(NAN_FLEET, &spec(&nan.url)).await;
    nan.stop().await;
    crate::support::assert_every_verdict_explained(&report);
    assert_eq!(
        failed_blocking(&report)
            .into_iter()
            .map(|(id, _)| id)
            .collect::<Vec<_>>(),
        ["platform.phases-continue"]
    );
    let phases = case(&report, "platform.phases-continue");
    for needle in [
        "/challenge never came for one, two (their /analyze answers conformed)",
        "the platform went on to /vote without them",
    ] {
        assert!(
            phases.message.contains(needle),
            "{needle}: {}",
            phases.message
        );
    }
    assert_eq!(report.exit_code(), 1);

    let conforming = platform::start(PlatformConfig {
        agent_timeout: Duration::from_secs(2),
        ..PlatformConfig::default()
    })
    .await;
    let report = drive_fleet(NAN_FLEET, &spec(&conforming.url)).await;
    conforming.stop().await;
    let phases = case(&report, "platform.phases-continue");
    assert_eq!(phases.status, Status::Pass, "{}", phases.message);
    assert!(
        failed_blocking(&report).is_empty(),
        "{:?}",
        failed_blocking(&report)
    );
}

/// `platform.trigger.deadline` replaces N × timeout + margin as the wait for a deliberation, and
/// the cases say where it came from; a value that is not a duration is refused naming the key.
#[test]
fn a_trigger_deadline_replaces_the_computed_one() {
    let driver = |yaml: &str| {
        let spec = serde_saphyr::from_str(yaml).unwrap();
        Driver::new(&spec, None, &agent_tck::protocols::roundtable::Agents)
    };
    let computed = driver("url: http://p:1\ntimeout: 10s\ntrigger: { margin: 5s }\n").unwrap();
    let trigger = computed.trigger.unwrap();
    assert_eq!(trigger.deadline, Duration::from_secs(35));
    assert_eq!(
        trigger.deadline_why,
        "the deliberation deadline: platform.timeout 10s × 3 + margin 5s"
    );
    let set =
        driver("url: http://p:1\ntimeout: 10s\ntrigger: { margin: 5s, deadline: 2s }\n").unwrap();
    let trigger = set.trigger.unwrap();
    assert_eq!(trigger.deadline, Duration::from_secs(2));
    assert_eq!(
        trigger.deadline_why,
        "the deliberation deadline set by platform.trigger.deadline or --deliberation-deadline: 2s, in place of platform.timeout 10s × 3 + margin 5s"
    );
    let e = driver("url: http://p:1\ntrigger: { deadline: soon }\n")
        .err()
        .unwrap();
    assert!(
        e.to_string().starts_with("platform.trigger.deadline: "),
        "{e}"
    );
}
