//! Every verdict earned (connector): peers that give nothing to judge, break one rule, or conform.
//!
//! `probe connector` against an inputUrl with no routes (404 to everything) and one that
//! acknowledges but never calls back; the connector fleet against agent servers that take a
//! 200 head cut before its body (`fault:close`) as the acknowledgement it is, that read the
//! body and call it failed, that say nothing after a non-2xx, and that forward nowhere.

use std::collections::HashMap;
use std::time::Duration;

use agent_tck::mock::Reply;
use agent_tck::protocols::connector::fleet::Fleet;
use agent_tck::protocols::connector::probe::run;
use agent_tck::report::{CaseResult, Report, Status, NO_EVIDENCE, NO_REASON};

use crate::agent_server::{self, Flaw};

/// The case `id` of `report`.
fn case<'a>(report: &'a Report, id: &str) -> &'a CaseResult {
    report
        .cases
        .iter()
        .find(|c| c.id == id)
        .unwrap_or_else(|| panic!("no case {id}"))
}

fn explain(report: &Report) -> String {
    report
        .cases
        .iter()
        .map(|c| format!("{:?} {}: {} ({:?})", c.status, c.id, c.message, c.evidence))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every case of `report` has the status the table gives, and its message every needle.
fn assert_cases(report: &Report, table: &[(&str, Status, &[&str])]) {
    for (id, status, needles) in table {
        let c = case(report, id);
        assert_eq!(c.status, *status, "{id}\n{}", explain(report));
        for needle in *needles {
            assert!(
                c.message.contains(needle),
                "{id}: {:?} lacks {needle:?}",
                c.message
            );
        }
    }
    // The report model's sentinels never reach a built-in suite's report.
    for c in &report.cases {
        assert!(
            !c.message.contains(NO_EVIDENCE) && !c.message.contains(NO_REASON),
            "{}: {}",
            c.id,
            c.message
        );
        if c.status == Status::Pass {
            assert!(
                c.evidence.as_ref().is_some_and(|e| e.judged > 0),
                "{}",
                c.id
            );
        }
    }
}

/// `probe connector` against an inputUrl answered by `reply`, callbacks awaited 1 s.
async fn probe_stub(reply: fn() -> Reply) -> Report {
    let stub = crate::support::stub(move |_| reply()).await;
    let mut s = crate::connector::settings(&format!("{}/v1/assistant/input", stub.url()));
    s.reply_timeout = Duration::from_secs(1);
    let report = tokio::time::timeout(Duration::from_secs(60), run(&s, &|_| {}))
        .await
        .expect("the probe ends")
        .unwrap();
    stub.stop().await;
    report
}

fn not_found() -> Reply {
    Reply {
        status: 404,
        content_type: "application/json",
        body: r#"{"detail":"Not Found"}"#.into(),
    }
}

fn ok() -> Reply {
    Reply {
        status: 200,
        content_type: "application/json",
        body: r#"{"ok":true}"#.into(),
    }
}

/// A server with none of the routes: every forward fails naming its 404 and what it said, and
/// every case judged across the callbacks is a skip that says a 404 is no acknowledgement.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_input_url_that_answers_404_passes_nothing_and_says_why() {
    let report = probe_stub(not_found).await;
    let answered_404: &[&str] = &[
        "answered 404 {\"detail\":\"Not Found\"}",
        "not an acknowledgement (a 2xx)",
    ];
    let no_ack: &[&str] = &[
        "none of the 30 forwards was acknowledged 2xx (30 answered 404)",
        "an inputUrl that answers the forwarded message 2xx exercises this case",
    ];
    assert_cases(
        &report,
        &[
            ("forward.plain", Status::Fail, answered_404),
            ("forward.unicode-markdown", Status::Fail, answered_404),
            ("forward.large", Status::Fail, answered_404),
            ("forward.extra-fields", Status::Fail, answered_404),
            ("forward.session-ids", Status::Fail, answered_404),
            (
                "isolation.sessions",
                Status::Fail,
                &[
                    "20 of 20 forwards were not acknowledged: one of twenty at once",
                    "(and 17 more)",
                ],
            ),
            ("resilience.second-message", Status::Fail, answered_404),
            ("resilience.no-flood", Status::Fail, answered_404),
            ("forward.within-5s", Status::Skip, no_ack),
            ("callback.arrives", Status::Skip, no_ack),
            ("callback.exact-url", Status::Skip, no_ack),
            ("callback.not-empty", Status::Skip, no_ack),
            ("callback.raw-text", Status::Skip, no_ack),
        ],
    );
    assert!(report.cases.iter().all(|c| c.status != Status::Pass));
    let plain = case(&report, "forward.plain");
    assert_eq!(plain.evidence.as_ref().map(|e| e.judged), Some(1));
    assert_eq!(report.exit_code(), 1);
}

/// The same server probed through the binary: exit 1, the skip's reason on the console.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_exits_1_against_an_input_url_that_answers_404() {
    let stub = crate::support::stub(|_| not_found()).await;
    let out = tokio::time::timeout(
        Duration::from_secs(60),
        tokio::process::Command::new(crate::support::EXE)
            .args(["probe", "connector", "--input-url"])
            .arg(format!("{}/in", stub.url()))
            .args([
                "--reply-timeout",
                "1s",
                "--only",
                "forward.plain",
                "--only",
                "forward.within-5s",
            ])
            .env("NO_COLOR", "1")
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("the probe ends")
    .unwrap();
    stub.stop().await;
    let text = crate::support::text(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("answered 404"), "{text}");
    assert!(
        text.contains("none of the 1 forwards was acknowledged 2xx (1 answered 404)"),
        "{text}"
    );
}

/// An agent that acknowledges every forward and never calls back: the forwards and their
/// 5 s pass on what was acknowledged; callback.arrives fails naming the sessions; the cases
/// about what the callbacks carried have none to judge, and say so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_that_never_calls_back_is_judged_on_its_acknowledgements_only() {
    let report = probe_stub(ok).await;
    let none_came: &[&str] = &[
        "no callback came within 1s for the 28 acknowledged sessions",
        "exercises this case",
    ];
    assert_cases(
        &report,
        &[
            ("forward.plain", Status::Pass, &["acknowledged 2xx"]),
            ("forward.session-ids", Status::Pass, &[]),
            ("forward.within-5s", Status::Pass, &[]),
            ("callback.arrives", Status::Fail, &["no callback within 1s"]),
            ("isolation.sessions", Status::Fail, &["got no callback at their own URL"]),
            ("resilience.second-message", Status::Fail, &["0 callback(s) for two messages"]),
            (
                "resilience.no-flood",
                Status::Skip,
                &["the agent made no callback within 1s to the session whose endpoint answers 500"],
            ),
            ("callback.exact-url", Status::Skip, none_came),
            ("callback.not-empty", Status::Skip, none_came),
            ("callback.raw-text", Status::Skip, none_came),
        ],
    );
    let timed = case(&report, "forward.within-5s").evidence.clone().unwrap();
    assert_eq!(
        (timed.judged, timed.of.as_str()),
        (30, "forwards acknowledged 2xx")
    );
    let arrives = case(&report, "callback.arrives").evidence.clone().unwrap();
    assert_eq!(arrives.judged, 28, "sessions, the failing endpoint's apart");
}

/// A fleet file of `agents` (name, behaviour) against `url`: one message, two clients.
fn fleet_of(url: &str, agents: &[(&str, &str)]) -> Fleet {
    let lines: Vec<String> = agents
        .iter()
        .map(|(name, behavior)| {
            format!("    - {{ name: {name}, agent-id: ext-{name}, behavior: \"{behavior}\" }}")
        })
        .collect();
    let text = format!(
        "protocol: connector\nseed: 11\nconnector:\n  url: {url}\n  messages: 1\n  clients: 2\n  settle: 1s\n  agents:\n{}\n",
        lines.join("\n")
    );
    Fleet::parse("fleet.yaml", &text, None).unwrap()
}

/// The fleet of `agents` against the reference server with `flaw`.
async fn fleet_run(flaw: Flaw, agents: &[(&str, &str)]) -> Report {
    let (listener, url) = agent_server::bind().await;
    let fleet = fleet_of(&url, agents);
    tokio::time::timeout(
        Duration::from_secs(90),
        crate::connector_fleet::judged_against(&fleet, (listener, url), flaw),
    )
    .await
    .expect("the fleet ends")
}

const CUT: &str = "1 message(s) acknowledged with a 200 head and a FIN before the body (fault:close): an acknowledgement, so no error is due";

/// `fault:close` writes a whole 200 head, then FIN before the body. A server that resolves the
/// forward on that head (as fetch does) and shows no error is not failed for it; one that reads
/// the body and calls it failed is not either (the answer was cut short); an error-ack beside it
/// is what platform.error-message judges; with only the cut acknowledgement it has nothing to
/// judge and says so; a server that stays silent after a 503 fails it, naming the agent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_200_head_cut_before_its_body_is_an_acknowledgement() {
    let _heavy = crate::support::heavy().await;
    let with_error = [
        ("steady", "conforming"),
        ("close", "fault:close"),
        ("err", "error-ack:503"),
    ];
    let (on_head, reads_body, only_cut, silent) = tokio::join!(
        fleet_run(Flaw::AckOnHead, &with_error),
        fleet_run(Flaw::None, &with_error),
        fleet_run(
            Flaw::AckOnHead,
            &[("steady", "conforming"), ("close", "fault:close")]
        ),
        fleet_run(
            Flaw::NoErrorMessage,
            &[("steady", "conforming"), ("err", "error-ack:503")]
        ),
    );
    for (report, shown) in [
        (&on_head, "showed one for 0"),
        (&reads_body, "showed one for 1"),
    ] {
        assert_eq!(
            crate::support::failing(report),
            vec![],
            "{}",
            explain(report)
        );
        assert_cases(
            report,
            &[
                ("platform.error-message", Status::Pass, &[CUT, shown]),
                ("platform.reached-fleet", Status::Pass, &[]),
                ("platform.forward-once", Status::Pass, &[]),
            ],
        );
        let judged = case(report, "platform.error-message")
            .evidence
            .clone()
            .unwrap();
        assert_eq!(
            (judged.judged, judged.of.as_str()),
            (1, "messages whose forward failed on the wire")
        );
    }
    assert_eq!(
        crate::support::failing(&only_cut),
        vec![],
        "{}",
        explain(&only_cut)
    );
    assert_cases(
        &only_cut,
        &[(
            "platform.error-message",
            Status::Skip,
            &[
                "no messages whose forward failed on the wire to judge",
                "serve an agent with error-ack",
                "fault:close sends a whole 200 head, which is an acknowledgement",
                "showed one for 0",
            ],
        )],
    );
    assert_cases(
        &silent,
        &[(
            "platform.error-message",
            Status::Fail,
            &["(agent err): no error message reached the client"],
        )],
    );
    assert_eq!(silent.exit_code(), 1);
}

/// A server that creates the sessions but forwards to an inputUrl nobody serves: reached-fleet
/// fails with its hint; the cases about forwards have none to judge and say what would
/// exercise them; the sessions and clients pass on what they judged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_forwards_elsewhere_fails_reached_fleet_and_judges_no_forward() {
    let (listener, url) = agent_server::bind().await;
    let fleet = fleet_of(&url, &[("steady", "conforming")]);
    let nowhere = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let agents: HashMap<String, String> =
        [("ext-steady".to_string(), format!("http://{nowhere}/in"))].into();
    let served = agent_tck::protocols::connector::fleet::serve(&fleet)
        .await
        .unwrap();
    let _server = agent_server::start((listener, url), Flaw::None, agents);
    let report = tokio::time::timeout(
        Duration::from_secs(60),
        agent_tck::protocols::connector::fleet_judge::run(&fleet, served, false, 11),
    )
    .await
    .expect("the fleet ends");
    let no_forward: &[&str] = &[
        "no forward reached the fleet (see platform.reached-fleet)",
        "exercises this case",
    ];
    assert_cases(
        &report,
        &[
            (
                "platform.reached-fleet",
                Status::Fail,
                &["no forward reached the fleet", "inputUrls"],
            ),
            ("platform.session-create", Status::Pass, &[]),
            ("platform.ws-attach", Status::Pass, &[]),
            ("platform.forward-schema", Status::Skip, no_forward),
            ("platform.forward-once", Status::Skip, no_forward),
            ("platform.forward-timeout", Status::Skip, no_forward),
            ("platform.error-message", Status::Skip, no_forward),
            (
                "platform.callback-delivered",
                Status::Skip,
                &["no text callbacks to sessions with clients to judge"],
            ),
            (
                "platform.callback-empty",
                Status::Skip,
                &["serve an agent with empty-callback or whitespace-callback"],
            ),
            (
                "platform.callback-huge",
                Status::Skip,
                &["serve an agent with huge-callback"],
            ),
            (
                "platform.broadcast-latency",
                Status::Skip,
                &["no callback was broadcast"],
            ),
        ],
    );
    let created = case(&report, "platform.session-create")
        .evidence
        .clone()
        .unwrap();
    assert_eq!(
        (created.judged, created.of.as_str()),
        (1, "session creations")
    );
    assert_eq!(report.exit_code(), 1);
}
