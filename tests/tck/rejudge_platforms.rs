//! The rules that judge a platform are a function of its exchanges: for each protocol, a live
//! run against a platform of our own records its exchanges, and judging the recording again —
//! no mock, no platform, no network — gives the same verdicts (case ids, statuses, evidence
//! counts, and messages but for the wall-clock figures some of them hold).

use std::path::Path;
use std::time::Duration;

use agent_tck::judge::record::read_entries;
use agent_tck::mock::observe::observer_for;
use agent_tck::mock::protocol::{AgentProtocol, PlatformExpect};
use agent_tck::mock::recording::rejudge;
use agent_tck::report::{CaseResult, Status};

use crate::platform::{self, PlatformConfig, Variant};
use crate::support::TempDir;

/// A message with each figure (a run of digits, with its decimal point) as `#`: what is left
/// must be the same live and offline; the figures themselves may hold a wait's length.
fn figures_masked(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut in_figure = false;
    for c in message.chars() {
        let figure = c.is_ascii_digit() || (in_figure && c == '.');
        if figure && !in_figure {
            out.push('#');
        } else if !figure {
            out.push(c);
        }
        in_figure = figure;
    }
    out
}

/// Every case judged `again` is in `live` with the same status, evidence and message (figures
/// aside); returns how many messages are the same to the character.
pub fn assert_same_verdicts(live: &[CaseResult], again: &[CaseResult]) -> usize {
    assert!(!again.is_empty(), "nothing was judged offline");
    let mut exact = 0;
    for case in again {
        let Some(twin) = live.iter().find(|c| c.id == case.id) else {
            panic!("{} was judged offline and not live", case.id);
        };
        let evidence = |c: &CaseResult| c.evidence.as_ref().map(|e| (e.judged, e.of.clone()));
        assert_eq!(
            (case.status, evidence(case)),
            (twin.status, evidence(twin)),
            "{}: offline {:?}, live {:?}",
            case.id,
            case.message,
            twin.message
        );
        assert_eq!(
            figures_masked(&case.message),
            figures_masked(&twin.message),
            "{}",
            case.id
        );
        exact += usize::from(case.message == twin.message);
    }
    exact
}

/// Judges the recording at `path` again with a fresh observer of `protocol`, expecting
/// `expect` of the platform, and compares with `live`.
fn rejudged_alike(
    path: &Path,
    protocol: &dyn AgentProtocol,
    expect: &PlatformExpect,
    live: &[CaseResult],
) -> Vec<CaseResult> {
    let entries = read_entries(path).unwrap();
    let observer = observer_for(protocol, expect);
    let again = rejudge(&entries, &*observer).unwrap();
    let exact = assert_same_verdicts(live, &again);
    eprintln!(
        "{}: {} exchanges and events, {} cases judged again alike, {exact} messages to the character",
        protocol.name(),
        entries.len(),
        again.len()
    );
    again
}

/// A key or token the run was given never appears in its recording.
fn assert_no_secret(path: &Path, secrets: &[&str]) {
    let text = std::fs::read_to_string(path).unwrap();
    assert!(!text.is_empty(), "{}: nothing recorded", path.display());
    for secret in secrets {
        assert!(
            !text.contains(secret),
            "{}: the recording holds the secret {secret:?}",
            path.display()
        );
    }
}

fn status<'a>(cases: &'a [CaseResult], id: &str) -> (Status, &'a str) {
    let case = cases
        .iter()
        .find(|c| c.id == id)
        .unwrap_or_else(|| panic!("no {id}"));
    (case.status, case.message.as_str())
}

/// The round table: the fleet drives the reference platform that keeps failed agents in
/// /challenge (a broken rule, with examples), through two deliberations with a hanging agent
/// (a wait judged against the platform's timeout).
#[deadline::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_round_tables_platform_verdicts_come_again_from_its_recording() {
    let dir = TempDir::new("rejudge-roundtable");
    let path = std::path::PathBuf::from(dir.path("exchanges.jsonl"));
    let agent_timeout = Duration::from_secs(2);
    let platform = platform::start(PlatformConfig {
        variant: Variant::KeepsFailedAgents,
        agent_timeout,
        ..PlatformConfig::default()
    })
    .await;
    let spec = crate::fleet::spec(&platform.url, agent_timeout);
    let settings = crate::fleet::settings(crate::fleet::FLEET, &spec, None);
    let expect = settings.expect;
    let run = agent_tck::mock::session::run_recorded(settings, std::future::pending(), &path);
    let report = tokio::time::timeout(Duration::from_secs(60), run)
        .await
        .expect("the session ends")
        .unwrap();
    platform.stop().await;
    // The fleet's keyed agent is registered with its key, and the platform sends it back.
    assert!(crate::fleet::FLEET.contains("api_key: k-keyed"));
    assert_no_secret(&path, &["k-keyed"]);
    let again = rejudged_alike(
        &path,
        &agent_tck::protocols::roundtable::Agents,
        &expect,
        &report.cases,
    );
    // The run judged something: the broken rule, and the wait on the hanging agent.
    let (s, m) = status(&again, "platform.challenge-no-failed");
    assert_eq!(s, Status::Fail, "{m}");
    let (s, m) = status(&again, "platform.gives-up");
    assert_eq!(s, Status::Pass, "{m}");
}

/// execute_task: the reference harness that says turn 1 every turn (a broken rule), and the
/// harness that gives up on a hanging agent at its deadline (a wait judged).
#[deadline::test(flavor = "multi_thread", worker_threads = 2)]
async fn execute_tasks_harness_verdicts_come_again_from_its_recording() {
    use crate::harness_judged::{judged_recording, Flaws, EXPECT, TASKS};
    let dir = TempDir::new("rejudge-execute-task");
    for (behavior, flaws, id, want) in [
        (
            "conforming",
            Flaws {
                turn_stuck: true,
                ..Flaws::default()
            },
            "harness.turns",
            Status::Fail,
        ),
        ("hang", Flaws::default(), "harness.deadline", Status::Pass),
    ] {
        let path = std::path::PathBuf::from(dir.path(&format!("{behavior}.jsonl")));
        let report =
            judged_recording(behavior, flaws, TASKS, Duration::ZERO, Some(path.clone())).await;
        let again = rejudged_alike(
            &path,
            &agent_tck::protocols::execute_task::Agents,
            &EXPECT,
            &report.cases,
        );
        let (s, m) = status(&again, id);
        assert_eq!(s, want, "{behavior}: {m}");
    }
}

/// A recording with a line that is not an exchange is refused with its file and line; one cut
/// before its verdicts were drawn is refused for that; neither panics.
#[test]
fn a_broken_recording_is_refused_with_where_it_breaks() {
    let dir = TempDir::new("rejudge-broken");
    let path = std::path::PathBuf::from(dir.path("exchanges.jsonl"));
    std::fs::write(
        &path,
        "{\"event\": \"run-end\", \"at_ms\": 1.0}\n{\"seq\": \"x\"}\n",
    )
    .unwrap();
    let e = read_entries(&path).unwrap_err().to_string();
    assert!(
        e.contains("exchanges.jsonl:2: not a recorded exchange"),
        "{e}"
    );
    std::fs::write(
        &path,
        "{\"event\": \"triggers-answered\", \"at_ms\": 1.0, \"context\": {\"order\": 1}}\n",
    )
    .unwrap();
    let observer = observer_for(
        &agent_tck::protocols::roundtable::Agents,
        &PlatformExpect::timeout(Duration::from_secs(1)),
    );
    let e = rejudge(&read_entries(&path).unwrap(), &*observer)
        .unwrap_err()
        .to_string();
    assert!(e.contains("no `judged` event"), "{e}");
    // A connector recording whose driver's view is not one, or that has none.
    use agent_tck::protocols::connector::fleet::record;
    std::fs::write(
        &path,
        "{\"event\": \"drive\", \"at_ms\": 1.0, \"context\": {\"drive\": 5}}\n",
    )
    .unwrap();
    let e = record::read(&read_entries(&path).unwrap())
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("its drive is not an object"), "{e}");
    std::fs::write(&path, "").unwrap();
    let e = record::read(&read_entries(&path).unwrap())
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("no `drive` event"), "{e}");
}

/// The cases of two reports are the same, case for case and in order: the offline judging
/// gives the whole list the live run gave.
fn same_list(live: &[CaseResult], again: &[CaseResult]) {
    let ids = |cases: &[CaseResult]| cases.iter().map(|c| c.id.clone()).collect::<Vec<_>>();
    assert_eq!(ids(live), ids(again));
}

/// The Librarian: the chaos fleet against the reference server that crashes on malformed JSON
/// (two broken rules, with examples), every client's answers judged by the probe's rules.
#[deadline::test(secs = 900, flavor = "multi_thread", worker_threads = 2)]
async fn the_librarians_server_verdicts_come_again_from_its_recording() {
    use agent_tck::protocols::librarian::commands::reference;
    use agent_tck::protocols::librarian::fleet::{rejudge, run_recorded, Fleet};
    use agent_tck::protocols::librarian::reference::Flaws;
    let _heavy = crate::support::heavy().await;
    let dir = TempDir::new("rejudge-librarian");
    let path = std::path::PathBuf::from(dir.path("exchanges.jsonl"));
    let served = reference(Flaws::named("crashes-on-malformed-json").unwrap())
        .await
        .unwrap();
    let text = crate::librarian_fleet::fleet_file(&served.url);
    let fleet = Fleet::parse("fleet.yaml", &text, None).unwrap();
    let run = run_recorded(&fleet, false, 1, &path);
    let report = tokio::time::timeout(Duration::from_secs(60), run)
        .await
        .expect("the fleet ends")
        .unwrap();
    served.stop().await;
    let tokens = agent_tck::protocols::librarian::commands::reference_tokens();
    let secrets: Vec<&str> = tokens.iter().map(|(_, token)| token.as_str()).collect();
    assert_no_secret(&path, &secrets);
    let entries = read_entries(&path).unwrap();
    let again = rejudge(&fleet, false, &entries).unwrap();
    same_list(&report.cases, &again);
    let exact = assert_same_verdicts(&report.cases, &again);
    eprintln!(
        "librarian: {} exchanges, {} cases judged again alike, {exact} messages to the character",
        entries.len(),
        again.len()
    );
    let (s, m) = status(&again, "fleet.no-5xx");
    assert_eq!(s, Status::Fail, "{m}");
    assert!(m.contains("malformed-json-client"), "{m}");
}

/// The connector: the fleet of one agent of each behaviour against the reference agent server
/// that broadcasts each callback to every client (a broken rule, with examples), forwards,
/// callbacks, broadcasts and session calls judged.
#[deadline::test(secs = 900, flavor = "multi_thread", worker_threads = 2)]
async fn the_connector_servers_verdicts_come_again_from_its_recording() {
    use agent_tck::protocols::connector::fleet::{judge, Fleet};
    let _heavy = crate::support::heavy().await;
    let dir = TempDir::new("rejudge-connector");
    let path = std::path::PathBuf::from(dir.path("exchanges.jsonl"));
    let (listener, url) = crate::agent_server::bind().await;
    let text = crate::connector_fleet::FLEET.replace("${SERVER}", &url);
    let fleet = Fleet::parse("fleet.yaml", &text, None).unwrap();
    let flaw = crate::agent_server::Flaw::BroadcastsToAll;
    let run = crate::connector_fleet::judged_recording(&fleet, (listener, url), flaw, Some(&path));
    let report = tokio::time::timeout(Duration::from_secs(120), run)
        .await
        .expect("the fleet ends");
    let entries = read_entries(&path).unwrap();
    // Judged with a fleet of its own, as a reader of the recording would: no server, no
    // inputUrls served.
    let offline = Fleet::parse("fleet.yaml", &text, None).unwrap();
    let again = judge::rejudge(&offline, false, &entries).unwrap();
    same_list(&report.cases, &again);
    let exact = assert_same_verdicts(&report.cases, &again);
    eprintln!(
        "connector: {} exchanges and events, {} cases judged again alike, {exact} messages to the character",
        entries.len(),
        again.len()
    );
    let (s, m) = status(&again, "platform.broadcast-isolated");
    assert_eq!(s, Status::Fail, "{m}");
}
