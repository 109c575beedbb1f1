//! The run's own end is not the platform's act: a round-table fleet cut by its deliberation
//! deadline or by Ctrl-C, while the platform still waits for a hanging agent within its own
//! timeout, counts that answer neither as a failure nor as a giving-up, and says why; a platform
//! whose timeout did come is judged as before, whatever the run's end cut afterwards.

use std::time::{Duration, Instant};

use agent_tck::report::{CaseResult, Report, Status};

use crate::fleet::{case, drive_fleet};
use crate::platform::{self, PlatformConfig, Variant};
use crate::support::{assert_every_verdict_explained, Spawned, TempDir, RUN_DEADLINE};

/// Two conforming agents and one whose /analyze hangs.
const FLEET: &str = r#"
seed: 5
agents:
  - { name: alpha }
  - { name: gamma }
  - { name: hangs, behaviors: ["hang@analyze"] }
"#;

/// The `platform:` section: agent timeout `timeout`, one trigger with `deadline`.
fn spec(url: &str, timeout: &str, deadline: &str) -> String {
    format!(
        "url: {url}\ntimeout: {timeout}\nregister: {{ path: /api/v1/agents }}\ntrigger: {{ count: 1, deadline: {deadline} }}\n"
    )
}

#[track_caller]
fn assert_case(report: &Report, id: &str, status: Status, needles: &[&str]) -> CaseResult {
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

/// The platform waits 120 s for an agent; the fleet's deliberation deadline is 2 s. When it
/// runs out, the hanging /analyze is still within the platform's timeout: nothing the platform
/// did or failed to do is judged from it.
#[deadline::test]
async fn a_run_cut_by_its_own_deadline_judges_no_failure_of_the_platform() {
    let platform = platform::start(PlatformConfig::default()).await;
    let report = drive_fleet(FLEET, &spec(&platform.url, "120s", "2s")).await;
    platform.stop().await;
    assert_every_verdict_explained(&report);
    let cut = [
        "hangs's /analyze (task ",
        "was still hanging when the run ended at +",
        "(the deliberation deadline of 2s, set by --deliberation-deadline or platform.trigger.deadline)",
        "the platform's own timeout (2m) had not come",
    ];
    let recalled = assert_case(&report, "platform.failed-not-recalled", Status::Skip, &cut);
    assert!(
        recalled
            .message
            .starts_with("not judged: 1 failed answer, cut by the run's own end")
            && recalled
                .message
                .contains("whether it would call hangs again is not known"),
        "{}",
        recalled.message
    );
    assert_case(&report, "platform.gives-up", Status::Skip, &cut);
    assert_case(
        &report,
        "platform.deliberation-deadline",
        Status::Skip,
        &[
            "not judged: 1 deliberation, cut by the run's own end",
            "#0: the deliberation deadline 2s ran out after 2.",
            "while the platform was still waiting, within its own timeout 2m, for hangs's /analyze (task ",
            "the spec lets a deliberation take 6m 30s",
        ],
    );
    assert_eq!(report.exit_code(), 0, "no MUST failure rests on the cut");
}

/// A platform whose 2 s timeout came gave up on the first call and called the agent again:
/// that recall fails the rule though the run's 3 s deadline cut the second call; the cut call
/// is named beside the verdicts, and the deadline that cut it is not the platform's failure.
#[deadline::test]
async fn a_recall_before_the_runs_end_fails_and_the_call_it_cut_is_named() {
    let platform = platform::start(PlatformConfig {
        variant: Variant::RetriesTimeouts,
        agent_timeout: Duration::from_secs(2),
        ..PlatformConfig::default()
    })
    .await;
    let report = drive_fleet(FLEET, &spec(&platform.url, "2s", "3s")).await;
    platform.stop().await;
    assert_every_verdict_explained(&report);
    let recalled = assert_case(
        &report,
        "platform.failed-not-recalled",
        Status::Fail,
        &[
            "1 of 1 first failed answers of an agent",
            "hangs /analyze (task ",
            "called 2 times",
        ],
    );
    assert!(
        !recalled.message.contains("not judged"),
        "{}",
        recalled.message
    );
    let gave_up = assert_case(
        &report,
        "platform.gives-up",
        Status::Pass,
        &[
            "(not judged: 1 answer meant to outlast the platform's timeout, cut by the run's own end:",
            "the platform's own timeout (2s) had not come",
        ],
    );
    assert_eq!(
        gave_up.evidence.map(|e| e.judged),
        Some(1),
        "the first call"
    );
    assert_case(
        &report,
        "platform.deliberation-deadline",
        Status::Skip,
        &["within its own timeout 2s, for hangs's /analyze"],
    );
    assert_eq!(report.exit_code(), 1);
}

/// Ctrl-C while the platform (timeout 120 s) waits for the hanging agent: exit 130, and the
/// answer the interrupt cut is neither a failed answer nor a giving-up.
#[deadline::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_mid_deliberation_is_not_the_platforms_failure() {
    let platform = platform::start(PlatformConfig::default()).await;
    let dir = TempDir::new("run-end-sigint");
    let fleet = dir.path("fleet.yaml");
    let section = spec(&platform.url, "120s", "10m");
    let indented: String = section.lines().map(|l| format!("  {l}\n")).collect();
    std::fs::write(&fleet, format!("{FLEET}platform:\n{indented}")).unwrap();
    let (journal, json) = (dir.path("j.jsonl"), dir.path("r.json"));
    let args = [
        "mock",
        "fleet",
        "--config",
        &fleet,
        "--port",
        "0",
        "--journal",
        &journal,
        "--json",
        &json,
    ];
    let child = Spawned::tck(&args, RUN_DEADLINE);
    // Ready when the platform's /analyze to the hanging agent is in the journal (flushed
    // when the fleet is idle).
    let until = Instant::now() + Duration::from_secs(60);
    let hanging = |text: &str| {
        text.lines().any(|l| {
            l.contains(r#""event":"request""#)
                && l.contains(r#""agent":"hangs""#)
                && l.contains(r#""endpoint":"analyze""#)
        })
    };
    while !std::fs::read_to_string(&journal).is_ok_and(|t| hanging(&t)) {
        assert!(Instant::now() < until, "the platform never called hangs");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let out = tokio::task::block_in_place(|| child.interrupt(Duration::from_secs(60)));
    platform.stop().await;
    assert_eq!(out.status.code(), Some(130));
    let report: Report = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let cut = [
        "hangs's /analyze (task ",
        "when the run ended at +",
        "(interrupted by Ctrl-C or SIGTERM)",
        "the platform's own timeout (2m) had not come",
    ];
    assert_case(&report, "platform.failed-not-recalled", Status::Skip, &cut);
    assert_case(&report, "platform.gives-up", Status::Skip, &cut);
    assert_case(
        &report,
        "platform.deliberation-deadline",
        Status::Skip,
        &["not reached: the run was interrupted (Ctrl-C)"],
    );
}
