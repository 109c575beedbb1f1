//! The toy protocol of `toy/` through the generic engines: the probe runs its suite (its rule and
//! its generator), the mock engine serves its reference agent and its one behaviour, and the
//! probe against the mock passes, or fails exactly the toy's rule.

use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

use agent_tck::mock::agent::{MockAgent, Profile};
use agent_tck::mock::behavior::{parse_list, For};
use agent_tck::mock::fleet::{self, Layout};
use agent_tck::mock::journal::Journal;
use agent_tck::mock::observe::observer_for;
use agent_tck::mock::protocol::PlatformExpect;
use agent_tck::probe::{self, ProbeSettings, Suite};
use agent_tck::report::{Report, Status};
use agent_tck::transport::http::BaseUrl;

use crate::toy;

fn suite() -> Suite {
    Suite::parse(toy::SUITE.0, toy::SUITE.1, &toy::Suite).expect("the toy suite loads")
}

/// A toy mock agent with `behavior`, served on a loopback port and probed with the toy suite.
async fn probe_a_mock(behavior: &str) -> Report {
    let at = For {
        protocol: &toy::Agents,
        others: &[],
    };
    let items = parse_list(behavior, at).expect("the behaviour parses");
    let profile = Profile {
        name: "toy-agent".into(),
        domain: "greetings".into(),
        capabilities: Vec::new(),
        api_key: None,
    };
    let served = fleet::serve(
        vec![MockAgent::new(&toy::Agents, profile, items, 1)],
        Layout::PerAgent,
        Ipv4Addr::LOCALHOST.into(),
        0,
        Journal::off(Instant::now()),
        observer_for(
            &toy::Agents,
            &PlatformExpect::timeout(Duration::from_secs(30)),
        ),
    )
    .await
    .expect("serves on loopback");
    let mut settings = ProbeSettings::new(BaseUrl::parse(&served.urls[0]).unwrap(), suite());
    settings.timeout = Duration::from_secs(30);
    settings.seed = 9;
    let report = probe::run(&settings, &|_| {}).await.expect("runs");
    served.stop(Duration::from_millis(500)).await;
    report
}

fn failed(report: &Report) -> Vec<&str> {
    report
        .cases
        .iter()
        .filter(|c| c.status == Status::Fail)
        .map(|c| c.id.as_str())
        .collect()
}

#[deadline::test]
async fn the_conforming_toy_agent_passes_its_suite() {
    let report = probe_a_mock("conforming").await;
    assert_eq!(report.protocol, "toy");
    assert!(failed(&report).is_empty(), "{:?}", report.cases);
    assert_eq!(report.summary.passed, 4, "{:?}", report.cases);
}

#[deadline::test]
async fn the_toy_behaviour_breaks_exactly_the_toy_rule() {
    let report = probe_a_mock("rude").await;
    assert_eq!(failed(&report), ["hello.by-name"], "{:?}", report.cases);
    let case = report
        .cases
        .iter()
        .find(|c| c.id == "hello.by-name")
        .unwrap();
    assert!(
        case.message
            .starts_with("greeting: \"Hello.\" does not name"),
        "{}",
        case.message
    );
}

#[deadline::test]
async fn the_engines_behaviours_apply_to_the_toy_too() {
    let report = probe_a_mock("http-error:503@bye").await;
    assert_eq!(failed(&report), ["bye.by-name"], "{:?}", report.cases);
}

#[test]
fn the_toy_suite_is_checked_when_loaded() {
    let bad = toy::SUITE
        .1
        .replace("{by_name: greeting}", "{by_name: [greeting]}");
    let e = Suite::parse("toy.yaml", &bad, &toy::Suite)
        .unwrap_err()
        .to_string();
    assert!(e.contains("by_name takes the field to read"), "{e}");
    let bad = toy::SUITE.1.replace("{{ visitor }}", "{{ visitors }}");
    let e = Suite::parse("toy.yaml", &bad, &toy::Suite)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("unknown generator {{ visitors }} (known: task_id, task, sentence, word, unicode, text(N), visitor)"),
        "{e}"
    );
    let e = parse_list(
        "wrong-schema",
        For {
            protocol: &toy::Agents,
            others: &[],
        },
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("unknown behaviour \"wrong-schema\""), "{e}");
}

/// As the command line would: `probe toy --url URL` parsed from the toy's own flags, run as a job.
#[deadline::test]
async fn the_toys_probe_command_runs() {
    use agent_tck::protocols::plugin::ProtocolCommand;
    let probe = toy::commands::PROBE;
    let served = toy::commands::serve("rude", 1).await.unwrap();
    let command = probe.command();
    let matches = command
        .try_get_matches_from(["toy", "--url", &served.urls[0], "--seed", "3"])
        .unwrap();
    let job = probe.run(&matches).unwrap();
    assert_eq!(job.total, 4);
    let report = (job.run)(std::sync::Arc::new(|_: &agent_tck::report::CaseResult| {}))
        .await
        .unwrap();
    assert_eq!(failed(&report), ["hello.by-name"]);
    assert_eq!(report.seed, Some(3));
    let e = probe
        .run(
            &probe
                .command()
                .try_get_matches_from(["toy", "--url", "ftp://x"])
                .unwrap(),
        )
        .err()
        .unwrap();
    // A library user matches on what failed: the URL's own error, a usage error.
    assert!(
        matches!(
            e.layer::<agent_tck::transport::http::UrlError>(),
            Some(agent_tck::transport::http::UrlError::Scheme { .. })
        ),
        "{e:?}"
    );
    assert_eq!(e.class(), agent_tck::error::Class::Usage);
    assert!(e.to_string().starts_with("--url: "), "{e}");
    served.stop(Duration::from_millis(200)).await;
}

/// Its self-test passes and its matrix holds, through the generic matrix runner.
#[deadline::test]
async fn the_toys_selftest_and_matrix_hold() {
    use agent_tck::protocols::plugin::{Selftest, SelftestRun};
    use agent_tck::selftest::matrix::Matrix;
    use clap::Parser;
    #[derive(Parser)]
    struct Flags {
        #[command(flatten)]
        run: agent_tck::probe::args::RunArgs,
        #[command(flatten)]
        suite: agent_tck::probe::args::SuiteArgs,
    }
    let flags = Flags::parse_from(["selftest", "--timeout", "30s"]);
    let exe = std::path::Path::new(env!("CARGO_BIN_EXE_agent-tck"));
    let selftest = toy::commands::ToySelftest;
    let report = selftest
        .run(SelftestRun {
            seed: 5,
            run: &flags.run,
            suite: &flags.suite,
            exe,
        })
        .await
        .unwrap();
    assert!(failed(&report).is_empty(), "{:?}", report.cases);
    let (source, text) = selftest.matrix();
    let matrix = Matrix::of(&toy::commands::Toy, source, text).unwrap();
    let rows = matrix.run(5, exe).await.unwrap();
    assert_eq!(rows.len(), 4);
    for row in &rows {
        assert!(
            row.ok(),
            "{}",
            agent_tck::selftest::matrix::render(std::slice::from_ref(row))
        );
    }
    // A row that names a case the toy does not have is refused when the matrix is read.
    let bad = text.replace("[hello.by-name]", "[hello.by-names]");
    let bad: &'static str = Box::leak(bad.into_boxed_str());
    let e = Matrix::of(&toy::commands::Toy, source, bad).err().unwrap();
    assert!(e.to_string().contains("no case \"hello.by-names\""), "{e}");
}
