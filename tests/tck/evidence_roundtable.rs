//! Every verdict earned (roundtable): peers that give nothing to judge, break one rule, or conform.
//!
//! The mock role: the fleet of `fleet.rs` (conforming agents, a hanging one, a garbled one, and
//! agents that send NUL characters, an over-long field and injection payloads) drives the test
//! platform of `platform.rs` and its variants. The probe role: the built-in suite against a
//! server that answers 404 to everything.

use std::time::Duration;

use agent_tck::report::{CaseResult, Level, Report, Status};

use crate::fleet::{case, drive_fleet, judge};
use crate::platform::{self, PlatformConfig, Variant};
use crate::support::{assert_every_verdict_explained, raw_server, read_request};

/// The MUST and SHOULD cases that failed.
fn failed_blocking(report: &Report) -> Vec<&str> {
    report
        .cases
        .iter()
        .filter(|c| c.status == Status::Fail && c.level != Level::May)
        .map(|c| c.id.as_str())
        .collect()
}

#[track_caller]
fn assert_status(report: &Report, id: &str, status: Status, needles: &[&str]) -> CaseResult {
    let c = case(report, id).clone();
    assert_eq!(c.status, status, "{id}: {}", c.message);
    for needle in needles {
        assert!(
            c.message.contains(needle),
            "{id}: {:?} lacks {needle:?}",
            c.message
        );
    }
    c
}

/// Passed, on evidence of at least one thing whose description holds `of`.
#[track_caller]
fn assert_judged(report: &Report, id: &str, of: &str) -> u64 {
    let c = assert_status(report, id, Status::Pass, &[]);
    let evidence = c.evidence.expect("a pass carries evidence");
    assert!(evidence.judged > 0, "{id}: {evidence}");
    assert!(evidence.of.contains(of), "{id}: {evidence}");
    evidence.judged
}

/// Two conforming agents and nothing else: no agent fails, none sends what must be sanitized.
const PLAIN_FLEET: &str = r#"
seed: 5
agents:
  - { name: keyed, api_key: k-keyed }
  - { name: plain }
"#;

/// The `platform:` section for a platform at `url` whose agent timeout is `timeout`.
fn platform_spec(url: &str, timeout: Duration) -> String {
    format!(
        r#"
url: {url}
timeout: {}ms
register: {{ path: /api/v1/agents }}
trigger: {{ count: 2, concurrency: 2, margin: 8s, expect: {{ json: ["status == completed"] }} }}
"#,
        timeout.as_millis()
    )
}

#[deadline::test]
async fn the_reference_platform_passes_each_rule_on_what_exercised_it() {
    let report = judge(Variant::Conforming).await;
    assert_every_verdict_explained(&report);
    // Only the strings forwarded from the agents that sent such things are judged.
    assert_judged(
        &report,
        "platform.nul-stripped",
        "strings forwarded from 1 agent whose analyses held NUL characters",
    );
    assert_judged(
        &report,
        "platform.field-truncated",
        "strings forwarded from 1 agent whose analyses held a string over 50,000 characters",
    );
    // In each of the two deliberations: /challenge is due to the two conforming agents (keyed,
    // plain), /vote to the five that were challenged (nul, long and injector too).
    let due = assert_judged(&report, "platform.phases-continue", "calls due");
    assert_eq!(due, 2 * (2 + 5));
    // hangs and garbled failed /analyze in each deliberation, and were not called again.
    let failed = assert_judged(&report, "platform.failed-not-recalled", "failed answers");
    assert_eq!(failed, 4);
    assert_judged(
        &report,
        "platform.gives-up",
        "outlasted the platform's timeout",
    );
    assert_judged(
        &report,
        "platform.challenge-no-failed",
        "/challenge requests in tasks where an agent's /analyze failed",
    );
    // The reference platform logs injection patterns but forwards them (an INFO failure), judged
    // on the payloads in the analyses it forwarded.
    let injection = assert_status(
        &report,
        "platform.injection-forwarded",
        Status::Fail,
        &["from injector to keyed in /challenge"],
    );
    let evidence = injection.evidence.expect("a failure says what it judged");
    assert!(
        evidence.judged > 0 && evidence.of.contains("payloads in analyses forwarded"),
        "{evidence}"
    );
    assert_judged(&report, "platform.trigger", "triggers");
    assert_judged(&report, "platform.register", "registrations");
    assert_eq!(report.exit_code(), 0);
}

#[deadline::test]
async fn without_such_agents_the_rules_they_exercise_skip_and_say_what_to_add() {
    let platform = platform::start(PlatformConfig {
        agent_timeout: Duration::from_millis(800),
        ..PlatformConfig::default()
    })
    .await;
    let report = drive_fleet(
        PLAIN_FLEET,
        &platform_spec(&platform.url, Duration::from_millis(800)),
    )
    .await;
    platform.stop().await;
    assert_every_verdict_explained(&report);
    assert_status(
        &report,
        "platform.nul-stripped",
        Status::Skip,
        &[
            "no agent's analysis held NUL characters",
            "null-bytes behaviour",
        ],
    );
    assert_status(
        &report,
        "platform.field-truncated",
        Status::Skip,
        &["oversized-field behaviour"],
    );
    assert_status(
        &report,
        "platform.injection-forwarded",
        Status::Skip,
        &["injection behaviour"],
    );
    assert_status(
        &report,
        "platform.challenge-no-failed",
        Status::Skip,
        &["hang@analyze"],
    );
    assert_status(
        &report,
        "platform.failed-not-recalled",
        Status::Skip,
        &["failing behaviour"],
    );
    assert_status(
        &report,
        "platform.gives-up",
        Status::Skip,
        &["hang behaviour"],
    );
    // What two conforming agents do exercise still passes.
    assert_judged(&report, "platform.challenge-not-own", "/challenge requests");
    assert_eq!(
        assert_judged(&report, "platform.phases-continue", "calls due"),
        8
    );
    assert_judged(&report, "platform.phase-latency", "phase transitions");
    assert_eq!(report.exit_code(), 0);
}

#[deadline::test]
async fn a_platform_that_never_challenges_fails_the_phases_and_judges_no_forwarding() {
    let report = judge(Variant::NeverChallenges).await;
    assert_every_verdict_explained(&report);
    assert_eq!(failed_blocking(&report), ["platform.phases-continue"]);
    let phases = assert_status(
        &report,
        "platform.phases-continue",
        Status::Fail,
        &[
            "/challenge never came for keyed, plain",
            "the deliberation ended after /analyze",
        ],
    );
    assert_eq!(
        phases.evidence.map(|e| e.judged),
        Some(4),
        "keyed and plain, twice"
    );
    // Nothing was forwarded: the sanitization rules have nothing to judge.
    assert_status(
        &report,
        "platform.nul-stripped",
        Status::Skip,
        &["forwarded none of those analyses"],
    );
    assert_status(
        &report,
        "platform.field-truncated",
        Status::Skip,
        &["forwarded none of those analyses"],
    );
    assert_status(
        &report,
        "platform.injection-forwarded",
        Status::Skip,
        &["payloads sent, but the platform forwarded no analysis that carried one"],
    );
    assert_status(
        &report,
        "platform.challenge-not-own",
        Status::Skip,
        &["no /challenge request"],
    );
    assert_status(
        &report,
        "platform.phase-latency",
        Status::Skip,
        &["no task reached two of the phases (/analyze, /challenge, /vote)"],
    );
    assert_eq!(report.exit_code(), 1);
}

#[deadline::test]
async fn a_platform_that_drops_the_challenge_after_a_failure_fails_naming_the_phase() {
    let report = judge(Variant::DropsChallengeAfterFailure).await;
    assert_every_verdict_explained(&report);
    assert_eq!(failed_blocking(&report), ["platform.phases-continue"]);
    assert_status(
        &report,
        "platform.phases-continue",
        Status::Fail,
        &[
            "4 of 4 calls due",
            "/challenge never came for keyed, plain (their /analyze answers conformed)",
            "the platform went on to /vote without them",
        ],
    );
    assert_eq!(report.exit_code(), 1);
}

#[deadline::test]
async fn a_platform_that_calls_a_timed_out_agent_again_fails_with_the_count_and_times() {
    let report = judge(Variant::RetriesTimeouts).await;
    assert_every_verdict_explained(&report);
    assert_eq!(failed_blocking(&report), ["platform.failed-not-recalled"]);
    let c = assert_status(
        &report,
        "platform.failed-not-recalled",
        Status::Fail,
        &[
            "2 of 4 first failed answers of an agent",
            "hangs /analyze (task ",
            "called 3 times",
            "its first answer timed out",
        ],
    );
    assert!(
        !c.message.contains("garbled"),
        "a malformed answer is not retried: {}",
        c.message
    );
    // Each call was given up at the timeout: that rule holds.
    assert_eq!(assert_judged(&report, "platform.gives-up", "outlasted"), 6);
    assert_eq!(report.exit_code(), 1);
}

#[deadline::test]
async fn a_platform_without_a_timeout_fails_gives_up_naming_the_agent_and_the_wait() {
    let report = judge(Variant::NoTimeout).await;
    assert_every_verdict_explained(&report);
    let c = assert_status(
        &report,
        "platform.gives-up",
        Status::Fail,
        &[
            "hangs /analyze (task ",
            "the platform gave up only after 14.",
            "expected to give up within its timeout 2s (and 1s 100ms of grace)",
        ],
    );
    assert_eq!(c.evidence.map(|e| e.judged), Some(2));
    // Stuck on the hang, the platform never got to /challenge: that is not judged as a phase
    // that vanished.
    assert_ne!(
        case(&report, "platform.phases-continue").status,
        Status::Fail
    );
}

#[deadline::test]
async fn a_forwarded_nul_is_named_with_the_agent_that_sent_it() {
    let report = judge(Variant::NoNulStripping).await;
    let c = assert_status(
        &report,
        "platform.nul-stripped",
        Status::Fail,
        &["from nul (task ", ": a NUL character"],
    );
    let evidence = c.evidence.expect("a failure says what it judged");
    assert!(evidence.of.contains("from 1 agent"), "{evidence}");
}

#[deadline::test]
async fn a_trigger_that_gets_no_answer_head_is_not_a_pass() {
    // A platform that reads the trigger and never answers.
    let (url, _server) = raw_server(|mut stream| async move {
        read_request(&mut stream).await;
        std::future::pending::<()>().await;
    })
    .await;
    let spec = format!("url: {url}\ntimeout: 100ms\ntrigger: {{ count: 1, margin: 300ms }}\n");
    let report = drive_fleet(PLAIN_FLEET, &spec).await;
    assert_every_verdict_explained(&report);
    assert_status(
        &report,
        "platform.trigger",
        Status::Skip,
        &[
            "1 of 1 trigger got no answer head within the deliberation deadline 600ms",
            "#0:",
            "no response head received",
            "(waited 0.",
        ],
    );
    let deadline = assert_status(
        &report,
        "platform.deliberation-deadline",
        Status::Fail,
        &[
            "#0: no complete answer within 600ms",
            "no response head received",
        ],
    );
    assert_eq!(deadline.evidence.map(|e| e.judged), Some(1));
    assert_status(
        &report,
        "platform.no-5xx",
        Status::Skip,
        &["no trigger got a whole answer (0 unreachable, 1 without an answer head, 0 late)"],
    );
    assert_eq!(report.exit_code(), 1);
}

#[deadline::test]
async fn the_probe_against_a_server_with_no_routes_passes_only_reachability() {
    let server = crate::support::no_routes().await;
    let report = crate::support::probe(&server.url(), Some(crate::support::KEY)).await;
    assert_every_verdict_explained(&report);
    let passed: Vec<&str> = report
        .cases
        .iter()
        .filter(|c| c.status == Status::Pass && c.level != Level::May)
        .map(|c| c.id.as_str())
        .collect();
    assert_eq!(passed, ["agent.reachable"]);
    // One failure per endpoint that does not exist (and /health, which platforms poll); every
    // other case skips, naming the failure it rests on and the 404 that left nothing to read.
    let mut failed = crate::support::failed(&report);
    failed.sort_unstable();
    assert_eq!(
        failed,
        [
            "analyze.response",
            "challenge.response",
            "http.health",
            "vote.response"
        ]
    );
    for c in report.cases.iter().filter(|c| c.status == Status::Skip) {
        let endpoint = c.id.split('.').next().unwrap();
        let need = match endpoint {
            "challenge" | "vote" => format!("{endpoint}.response"),
            _ => "analyze.response".to_string(),
        };
        let first = if c.id == "agent.name-consistent" {
            "skipped: it needs analyze.response, which failed with no answer to read (answered 404)"
                .to_string()
        } else {
            format!("skipped: it needs {need}, which failed with no answer to read (answered 404)")
        };
        assert_eq!(c.message, first, "{}", c.id);
    }
    assert_eq!(report.exit_code(), 1);
}

/// agent-tck's probe sends one run's exchanges under one task_id, to one agent: against a
/// hanging mock agent it is not a platform that calls a timed-out agent again.
#[deadline::test]
async fn the_probe_against_a_hanging_mock_agent_is_not_judged_a_retrying_platform() {
    let at = crate::support::roundtable();
    let agent = agent_tck::mock::agent::MockAgent::new(
        at.protocol,
        agent_tck::mock::agent::Profile {
            name: "hanging-agent".into(),
            domain: "general review".into(),
            capabilities: Vec::new(),
            api_key: None,
        },
        agent_tck::mock::behavior::parse_list("hang@analyze", at).unwrap(),
        1,
    );
    let (url, stop, mock) = crate::support::mock_session(at.protocol, agent).await;
    let probe = crate::support::probe_with(&url, |s| s.timeout = Duration::from_millis(300)).await;
    assert!(crate::support::failed(&probe).contains(&"analyze.response"));
    stop.send(()).unwrap();
    let mock = tokio::time::timeout(Duration::from_secs(20), mock)
        .await
        .expect("the session ends")
        .unwrap()
        .unwrap();
    assert_every_verdict_explained(&mock);
    assert_status(
        &mock,
        "platform.failed-not-recalled",
        Status::Skip,
        &["two agents or more"],
    );
    // The probe gave up on each hanging /analyze at its own 300 ms.
    assert_judged(&mock, "platform.gives-up", "outlasted");
    assert_eq!(failed_blocking(&mock), Vec::<&str>::new());
}
