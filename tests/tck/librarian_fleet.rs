//! A fleet of agent clients against the reference Librarian holds its checks; against a flawed
//! one it names the flaw.

use agent_tck::protocols::librarian::commands::{reference, reference_tokens};
use agent_tck::protocols::librarian::fleet::{run, Fleet, FleetFileError};
use agent_tck::protocols::librarian::reference::Flaws;
use agent_tck::report::{Report, Status};

/// The chaos preset's clients, shortened to 3 s, with the reference's agents and tokens.
fn fleet_file(url: &str) -> String {
    let t = reference_tokens();
    let (a1, t1, a2, t2) = (&t[0].0, &t[0].1, &t[1].0, &t[1].1);
    let mut text = format!(
        "protocol: librarian\nlibrarian:\n  url: {url}\n  duration: 3s\n  clients:\n    - {{ name: steady, agent: {a1}, token: {t1}, behavior: conforming, rate: 60/min }}\n    - {{ name: flood, agent: {a2}, token: {t2}, behavior: flood, rate: 1800/min }}\n"
    );
    for b in [
        "oversized",
        "missing-fields",
        "malformed-json",
        "wrong-token",
        "foreign-agent-id",
        "injection",
        "burst",
    ] {
        text.push_str(&format!(
            "    - {{ name: {b}-client, agent: {a2}, token: {t2}, behavior: {b}, rate: 60/min }}\n"
        ));
    }
    text.push_str(&format!("    - {{ name: trickler, agent: {a2}, token: {t2}, behavior: slow-upload, rate: 60/min, trickle: 1s }}\n"));
    text
}

async fn against(flaw: &str) -> Report {
    let served = reference(Flaws::named(flaw).unwrap()).await.unwrap();
    let fleet = Fleet::parse("fleet.yaml", &fleet_file(&served.url), None).unwrap();
    let report = run(&fleet, false, 1).await;
    served.stop().await;
    report
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_fleet_holds_against_the_reference_and_names_each_flaw() {
    let _heavy = crate::support::heavy().await;
    let report = against("conforming").await;
    assert_eq!(
        crate::support::failing(&report),
        vec![],
        "{:#?}",
        report.cases
    );
    // Titled by the command that runs it, not as the Librarian's own mock.
    let shown = agent_tck::report::console::render(&report, false);
    assert!(
        shown.starts_with(&format!(
            "agent-tck {} · mock fleet (librarian) · ",
            agent_tck::VERSION
        )),
        "{shown}"
    );
    assert!(
        shown.lines().next().unwrap().ends_with(" · seed 1"),
        "{shown}"
    );
    for id in [
        "fleet.no-5xx",
        "fleet.refusals",
        "fleet.flood-limited",
        "fleet.conforming-served",
        "fleet.conforming-latency",
        "fleet.capabilities-after",
    ] {
        let c = report.cases.iter().find(|c| c.id == id).unwrap();
        assert_eq!(c.status, Status::Pass, "{id}: {}", c.message);
    }
    let latency = report
        .cases
        .iter()
        .find(|c| c.id == "fleet.latency")
        .unwrap();
    assert!(
        latency.message.contains("conforming:") && latency.message.contains("p99"),
        "{}",
        latency.message
    );

    for (flaw, cases, needle) in [
        (
            "crashes-on-malformed-json",
            vec!["fleet.no-5xx", "fleet.refusals"],
            "malformed-json-client (malformed-json): answered 500",
        ),
        ("no-rate-limit", vec!["fleet.flood-limited"], "flood sent"),
        (
            "shared-rate-limit",
            vec!["fleet.conforming-served"],
            "steady (conforming): answered 429",
        ),
        (
            "accepts-wrong-token",
            vec!["fleet.refusals"],
            "wrong-token-client (wrong-token): answered 200",
        ),
    ] {
        let report = against(flaw).await;
        let failed = crate::support::failing(&report);
        assert_eq!(
            failed.iter().map(|(id, _)| *id).collect::<Vec<_>>(),
            cases,
            "{flaw}: {failed:#?}"
        );
        assert!(
            failed.iter().any(|(_, m)| m.contains(needle)),
            "{flaw}: {failed:#?}"
        );
    }
}

#[test]
fn fleet_files_name_what_is_wrong() {
    let e = Fleet::parse("f.yaml", "protocol: librarian\nlibrarian:\n  url: http://x:1\n  clients:\n    - { name: a, agent: x, token: t, behavior: shout }\n", None).err().unwrap();
    assert!(
        matches!(&e, FleetFileError::Client { file, client, .. } if file == "f.yaml" && client == "a"),
        "{e:?}"
    );
    assert!(
        e.to_string()
            .starts_with("f.yaml: client \"a\": behavior \"shout\" is not one of conforming"),
        "{e}"
    );
    let e = Fleet::parse("f.yaml", "protocol: librarian\nlibrarian:\n  url: http://x:1\n  clients:\n    - { name: a, agent: x, token: t, behavior: flood, rate: fast }\n", None).err().unwrap();
    assert_eq!(
        e,
        FleetFileError::Client {
            file: "f.yaml".into(),
            client: "a".into(),
            what: "rate \"fast\": expected N/min or N/s".into(),
        }
    );
    assert_eq!(
        e.to_string(),
        "f.yaml: client \"a\": rate \"fast\": expected N/min or N/s"
    );
    let e = Fleet::parse("f.yaml", "protocol: librarian\nlibrarian:\n  url: http://x:1\n  clients:\n    - { name: a, agent: x, token: t, behavior: foreign-agent-id }\n", None).err().unwrap();
    assert_eq!(
        e.to_string(),
        "f.yaml: client \"a\": foreign-agent-id speaks in another agent's name, and the fleet \
         (or its registry) names no agent but x: add a client of another agent"
    );
    let preset = include_str!("../../mocks/librarian-chaos.yaml");
    let fleet = Fleet::parse(
        "mocks/librarian-chaos.yaml",
        preset,
        Some("http://127.0.0.1:9"),
    )
    .unwrap();
    assert_eq!(fleet.target(), "http://127.0.0.1:9");
}
