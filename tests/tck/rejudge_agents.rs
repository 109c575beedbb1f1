//! Rules judge exchanges, wherever they come from: every protocol's probe, run live against a
//! peer of our own with `--record`, then run again with `--replay` and no peer at all, gives the
//! same verdicts (case ids, statuses, evidence, and messages but for their wall-clock figures),
//! for a conforming peer and for one that fails some cases. The recording never holds the key.

use std::path::{Path, PathBuf};
use std::time::Duration;

use agent_tck::judge::tape::TapeSpec;
use agent_tck::protocols::execute_task::probe::Target;
use agent_tck::report::{Report, Status};

use crate::support;

/// A fresh directory for one test's recordings.
pub fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tck-rejudge-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

/// A case as the comparison sees it: id, status, evidence, message with its wall-clock figures
/// (`12 ms`, `+1.3 s`, `1.2s`) blanked.
type Seen = (String, Status, Option<(u64, String)>, String);

fn without_times(message: &str) -> String {
    let times = regex::Regex::new(r"\+?\d+(\.\d+)?\s?(ms|s|µs|ns)\b").expect("regex");
    times.replace_all(message, "<time>").into_owned()
}

fn seen(report: &Report) -> Vec<Seen> {
    report
        .cases
        .iter()
        .map(|c| {
            (
                c.id.clone(),
                c.status,
                c.evidence.as_ref().map(|e| (e.judged, e.of.clone())),
                without_times(&c.message),
            )
        })
        .collect()
}

/// The replay's verdicts are the live run's; the live run judged something, failed where
/// `must_fail` says (a misbehaving peer) and nowhere else (a conforming one).
pub fn assert_same(live: &Report, replayed: &Report, must_fail: bool) {
    let (live, replayed) = (seen(live), seen(replayed));
    assert!(
        live.iter().any(|c| c.1 == Status::Pass),
        "the live run judged nothing: {live:#?}"
    );
    let failed = live.iter().any(|c| c.1 == Status::Fail);
    assert_eq!(failed, must_fail, "live verdicts: {live:#?}");
    assert_eq!(live.len(), replayed.len(), "{live:#?}\n---\n{replayed:#?}");
    for (l, r) in live.iter().zip(&replayed) {
        assert_eq!(l, r);
    }
}

/// The recording holds exchanges, and never `secret`.
pub fn assert_recorded_without(path: &Path, secret: &str) {
    let text = std::fs::read_to_string(path).expect("the recording");
    assert!(text.lines().count() > 0, "nothing recorded");
    assert!(!text.contains(secret), "the key is in {}", path.display());
}

/// Record: `TapeSpec::Record` at `dir/name.jsonl`; the same path to replay.
pub fn tapes(dir: &Path, name: &str) -> (TapeSpec, TapeSpec) {
    let path = dir.join(format!("{name}.jsonl"));
    (TapeSpec::Record(path.clone()), TapeSpec::Replay(path))
}

const DEADLINE: Duration = Duration::from_secs(120);

async fn roundtable_both_ways(behavior: &str, must_fail: bool) {
    let dir = scratch(&format!("roundtable-{behavior}"));
    let (record, replay) = tapes(&dir, "run");
    let served = agent_tck::protocols::roundtable::commands::serve_one(
        "agent",
        Some(support::KEY.to_string()),
        behavior,
        support::SEED,
    )
    .await
    .expect("bind loopback");
    let url = served.urls[0].clone();
    let run = |tape: TapeSpec| {
        let url = url.clone();
        async move {
            let mut s = support::settings(&url);
            s.api_key = Some(support::KEY.to_string());
            s.tape = tape;
            tokio::time::timeout(DEADLINE, agent_tck::probe::run(&s, &|_| {}))
                .await
                .expect("the probe ends")
        }
    };
    let live = run(record).await.expect("the live run");
    served.stop(Duration::from_millis(500)).await;
    assert_recorded_without(&dir.join("run.jsonl"), support::KEY);
    // No agent now: every answer comes from the recording.
    let replayed = run(replay).await.expect("the replay");
    assert_same(&live, &replayed, must_fail);
    let _ = std::fs::remove_dir_all(&dir);
}

#[deadline::test]
async fn roundtable_rejudged_from_its_recording_gives_the_live_verdicts() {
    roundtable_both_ways("conforming", false).await;
}

#[deadline::test]
async fn roundtable_misbehaving_rejudged_gives_the_live_failures() {
    roundtable_both_ways("wrong-content-type", true).await;
}

#[deadline::test]
async fn a_replay_that_lacks_a_call_is_an_error_naming_it() {
    let dir = scratch("unmatched");
    let path = dir.join("empty.jsonl");
    std::fs::write(&path, "").expect("write");
    let mut s = support::settings("http://127.0.0.1:9");
    s.tape = TapeSpec::Replay(path);
    let e = tokio::time::timeout(DEADLINE, agent_tck::probe::run(&s, &|_| {}))
        .await
        .expect("the probe ends")
        .expect_err("nothing to replay");
    let e = e.to_string();
    assert!(e.contains("the recording does not hold"), "{e}");
    assert!(e.contains("(connect) of case"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

async fn librarian_both_ways(flaw: &str, must_fail: bool) {
    use agent_tck::protocols::librarian::commands::{
        reference, reference_registry, reference_tokens,
    };
    use agent_tck::protocols::librarian::probe::{run, Settings};
    use agent_tck::protocols::librarian::reference::Flaws;
    let dir = scratch(&format!("librarian-{flaw}"));
    let (record, replay) = tapes(&dir, "run");
    let served = reference(Flaws::named(flaw).expect("a flaw"))
        .await
        .expect("bind loopback");
    let settings = |tape: TapeSpec| Settings {
        base: agent_tck::transport::http::BaseUrl::parse(&served.url).expect("url"),
        tokens: reference_tokens(),
        timeout: Duration::from_secs(20),
        max_body: 5_000_000,
        common: agent_tck::probe::args::Common {
            seed: 3,
            tape,
            ..Default::default()
        },
        // The rate group's minute of requests is judged the same way; left out for time.
        quick: true,
        allow_deviations: Some(false),
        registry: Some(reference_registry()),
    };
    let probe = |s: Settings| async move {
        tokio::time::timeout(DEADLINE, run(&s, &|_| {}))
            .await
            .expect("the probe ends")
    };
    let live = probe(settings(record)).await.expect("the live run");
    let replay = settings(replay);
    served.stop().await;
    for (_, token) in reference_tokens() {
        assert_recorded_without(&dir.join("run.jsonl"), &token);
    }
    let replayed = probe(replay).await.expect("the replay");
    assert_same(&live, &replayed, must_fail);
    let _ = std::fs::remove_dir_all(&dir);
}

#[deadline::test(flavor = "multi_thread", worker_threads = 2)]
async fn librarian_rejudged_from_its_recording_gives_the_live_verdicts() {
    librarian_both_ways("conforming", false).await;
}

#[deadline::test(flavor = "multi_thread", worker_threads = 2)]
async fn librarian_flawed_rejudged_gives_the_live_failures() {
    librarian_both_ways("accepts-any-content-type", true).await;
}

/// `probe execute-task` against `target` recording, then replaying with `stop` run in between
/// (the agent gone) against `replay_target` (the same, or a stdio agent that does not exist).
async fn execute_task_both_ways(
    name: &str,
    (target, replay_target): (Target, Target),
    stop: impl std::future::Future<Output = ()>,
    must_fail: bool,
) {
    use agent_tck::protocols::execute_task::probe::run;
    let dir = scratch(&format!("execute-task-{name}"));
    let (record, replay) = tapes(&dir, "run");
    let probe = |tape: TapeSpec, target: Target| {
        let mut s = crate::task::settings(target);
        s.tape = tape;
        async move {
            tokio::time::timeout(DEADLINE, run(&s, &|_| {}))
                .await
                .expect("the probe ends")
        }
    };
    let live = probe(record, target).await.expect("the live run");
    stop.await;
    assert_recorded_without(&dir.join("run.jsonl"), support::KEY);
    let replayed = probe(replay, replay_target).await.expect("the replay");
    assert_same(&live, &replayed, must_fail);
    let _ = std::fs::remove_dir_all(&dir);
}

async fn execute_task_http(behavior: &str, must_fail: bool) {
    let served = crate::task::serve_http(crate::task::task_agent_behaving(behavior)).await;
    let target = Target::Http {
        base: agent_tck::transport::http::BaseUrl::parse(&served.urls[0]).expect("url"),
        api_key: Some(support::KEY.to_string()),
    };
    let stop = served.stop(Duration::from_millis(500));
    let targets = (target.clone(), target);
    execute_task_both_ways(&format!("http-{behavior}"), targets, stop, must_fail).await;
}

#[deadline::test]
async fn execute_task_http_rejudged_from_its_recording_gives_the_live_verdicts() {
    execute_task_http("conforming", false).await;
}

#[deadline::test]
async fn execute_task_http_misbehaving_rejudged_gives_the_live_failures() {
    execute_task_http("wrong-content-type", true).await;
}

async fn execute_task_stdio(behavior: &str, must_fail: bool) {
    use agent_tck::transport::stdio::{StdioConfig, StdioMode};
    let extra = format!("--behavior {behavior}");
    let config = StdioConfig::new(crate::task::mock_command(&extra), StdioMode::Persistent);
    // The probe ends the agent's process group itself: nothing to stop. The replay names a
    // program that does not exist: it is never run.
    let gone = StdioConfig::new("/nonexistent/agent-tck-agent", StdioMode::Persistent);
    let targets = (Target::Stdio(config), Target::Stdio(gone));
    execute_task_both_ways(&format!("stdio-{behavior}"), targets, async {}, must_fail).await;
}

#[deadline::test]
async fn execute_task_stdio_rejudged_from_its_recording_gives_the_live_verdicts() {
    execute_task_stdio("conforming", false).await;
}

#[deadline::test]
async fn execute_task_stdio_misbehaving_rejudged_gives_the_live_failures() {
    execute_task_stdio("stdio-banner", true).await;
}

/// The cases of a JSON report as the comparison sees them (its statuses as written).
fn seen_json(report: &serde_json::Value) -> Vec<(String, String, String, String)> {
    report["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .map(|c| {
            (
                c["id"].to_string(),
                c["status"].to_string(),
                c["evidence"].to_string(),
                without_times(c["message"].as_str().unwrap_or("")),
            )
        })
        .collect()
}

/// `probe agent-standard --exec` on the command line with `--record`, then with `--replay` and
/// an --exec that names no program at all: the same exit status and verdicts.
fn agent_standard_both_ways(behavior: &str, must_fail: bool) {
    let dir = crate::support::TempDir::new(&format!("rejudge-agent-standard-{behavior}"));
    let tree = dir.path("project");
    std::fs::create_dir_all(format!("{tree}/src")).expect("project");
    std::fs::write(format!("{tree}/src/main.rs"), "fn main() {}\n").expect("project");
    let tape = dir.path("run.jsonl");
    let mock = format!(
        "'{}' mock agent --protocol agent-standard --name security-scanner --next reviewer --seed 9 {behavior}",
        crate::support::EXE
    );
    let probe = |command: &str, tape_flag: &str, json: &str| {
        crate::support::tck(&[
            "probe",
            "agent-standard",
            "--exec",
            command,
            "--agents",
            "suites/agent-standard/agents",
            "--agent",
            "security-scanner",
            "--workdir",
            &tree,
            tape_flag,
            &tape,
            "--json",
            json,
        ])
    };
    let (live_json, replay_json) = (dir.path("live.json"), dir.path("replay.json"));
    let live = probe(&mock, "--record", &live_json);
    assert_eq!(
        live.status.code(),
        Some(i32::from(must_fail)),
        "{}",
        crate::support::text(&live)
    );
    let replayed = probe(
        "/nonexistent/agent-tck-agent {mode}",
        "--replay",
        &replay_json,
    );
    assert_eq!(
        replayed.status.code(),
        live.status.code(),
        "{}",
        crate::support::text(&replayed)
    );
    let read = |path: &str| -> serde_json::Value {
        serde_json::from_slice(&std::fs::read(path).expect("report")).expect("JSON")
    };
    let (live, replayed) = (seen_json(&read(&live_json)), seen_json(&read(&replay_json)));
    assert!(live.iter().any(|c| c.1 == "\"pass\""), "{live:#?}");
    assert_eq!(
        live.iter().any(|c| c.1 == "\"fail\""),
        must_fail,
        "{live:#?}"
    );
    assert_eq!(live, replayed);
}

#[test]
fn agent_standard_rejudged_from_its_recording_gives_the_live_verdicts() {
    agent_standard_both_ways("", false);
}

#[test]
fn agent_standard_misbehaving_rejudged_gives_the_live_failures() {
    agent_standard_both_ways("--behavior writes-in-plan-mode", true);
}

/// `probe connector` against the reference external agent with `flaw`: the forwards' answers
/// and the callbacks the agent made are recorded; the replay plays the callbacks again to its
/// own callback endpoint, at the recorded delays after their forwards.
async fn connector_both_ways(flaw: &str, must_fail: bool) {
    use agent_tck::mock::http1;
    use agent_tck::protocols::connector::probe::run;
    use agent_tck::protocols::connector::reference::{ExternalAgent, Flaws};
    use std::net::SocketAddr;
    use std::sync::Arc;
    let dir = scratch(&format!("connector-{flaw}"));
    let (record, replay) = tapes(&dir, "run");
    let agent = Arc::new(ExternalAgent::new(Flaws::named(flaw).expect("a flaw")));
    let running = http1::spawn(agent, SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .expect("bind loopback");
    let input = format!("{}/v1/assistant/input", running.url());
    let probe = |tape: TapeSpec| {
        let mut s = crate::connector::settings(&input);
        s.common.tape = tape;
        async move {
            tokio::time::timeout(DEADLINE, run(&s, &|_| {}))
                .await
                .expect("the probe ends")
        }
    };
    let live = probe(record).await.expect("the live run");
    running.stop().await;
    let replayed = probe(replay).await.expect("the replay");
    assert_same(&live, &replayed, must_fail);
    let _ = std::fs::remove_dir_all(&dir);
}

#[deadline::test(flavor = "multi_thread", worker_threads = 2)]
async fn connector_rejudged_from_its_recording_gives_the_live_verdicts() {
    connector_both_ways("conforming", false).await;
}

#[deadline::test(flavor = "multi_thread", worker_threads = 2)]
async fn connector_flawed_rejudged_gives_the_live_failures() {
    connector_both_ways("drops-query", true).await;
}

#[deadline::test(flavor = "multi_thread", worker_threads = 2)]
async fn connector_stray_callbacks_rejudged_give_the_live_failures() {
    connector_both_ways("stray-callback", true).await;
}

/// A replay under another `--seed` asks other requests: an error naming the first, not
/// verdicts on answers to requests that were never sent.
#[deadline::test]
async fn a_replay_under_another_seed_is_an_error_not_a_verdict() {
    let dir = scratch("other-seed");
    let (record, replay) = tapes(&dir, "run");
    let agent = support::reference_agent(None).await;
    let url = agent.url();
    let run = |tape: TapeSpec, seed: u64| {
        let mut s = support::settings(&url);
        s.tape = tape;
        s.seed = seed;
        async move {
            tokio::time::timeout(DEADLINE, agent_tck::probe::run(&s, &|_| {}))
                .await
                .expect("the probe ends")
        }
    };
    run(record, support::SEED).await.expect("the live run");
    agent.stop().await;
    let e = run(replay, support::SEED + 1)
        .await
        .expect_err("other requests")
        .to_string();
    assert!(e.contains("whose request is not the one recorded"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}
