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
#[deadline::test(flavor = "multi_thread", worker_threads = 2)]
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
                Status::Skip,
                &[
                    "20 of its 20 forwards not acknowledged, a failure the forward.* cases report",
                    "one of twenty at once",
                    "(and 17 more)",
                    "an inputUrl that acknowledges the forwarded messages 2xx exercises it",
                ],
            ),
            (
                "resilience.second-message",
                Status::Skip,
                &["2 of its 2 forwards not acknowledged", "answered 404"],
            ),
            (
                "resilience.no-flood",
                Status::Skip,
                &["1 of its 1 forward not acknowledged", "answered 404"],
            ),
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
#[deadline::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_exits_1_against_an_input_url_that_answers_404() {
    let stub = crate::support::stub(|_| not_found()).await;
    let input = format!("{}/in", stub.url());
    let out = tokio::task::spawn_blocking(move || {
        crate::support::tck_within(
            &[
                "probe",
                "connector",
                "--input-url",
                &input,
                "--reply-timeout",
                "1s",
                "--only",
                "forward.plain",
                "--only",
                "forward.within-5s",
            ],
            Duration::from_secs(60),
        )
    })
    .await
    .unwrap();
    stub.stop().await;
    let text = crate::support::text(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("answered 404"), "{text}");
    assert!(
        text.contains("none of the 1 forward was acknowledged 2xx (1 answered 404)"),
        "{text}"
    );
}

/// An agent that acknowledges every forward and never calls back: the forwards and their
/// 5 s pass on what was acknowledged; callback.arrives fails naming the sessions; the cases
/// about what the callbacks carried have none to judge, and say so.
#[deadline::test(flavor = "multi_thread", worker_threads = 2)]
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
            ("resilience.second-message", Status::Fail, &["0 callbacks for two messages"]),
            (
                "resilience.no-flood",
                Status::Skip,
                &["the agent made no callback within 1s to the session whose endpoint answers 500"],
            ),
            ("callback.exact-url", Status::Skip, none_came),
            ("callback.method", Status::Skip, none_came),
            ("callback.not-empty", Status::Skip, none_came),
            ("callback.raw-text", Status::Skip, none_came),
        ],
    );
    // The cases judged after the wait for callbacks took that wait (1 s), not 0 ms.
    for id in [
        "callback.arrives",
        "callback.exact-url",
        "forward.within-5s",
    ] {
        assert!(
            case(&report, id).duration_ms >= 1000,
            "{id}: {}",
            case(&report, id).duration_text()
        );
    }
    assert!(report.cases.iter().all(|c| c.duration_us > 0));
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
        "protocol: connector\nseed: 11\nconnector:\n  url: {url}\n  listen: 127.0.0.1:0\n  messages: 1\n  clients: 2\n  settle: 1s\n  agents:\n{}\n",
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

const CUT: &str = "1 message acknowledged with a 200 head and a FIN before the body (fault:close): an acknowledgement, so no error is due";

/// `fault:close` writes a whole 200 head, then FIN before the body. A server that resolves the
/// forward on that head (as fetch does) and shows no error is not failed for it; one that reads
/// the body and calls it failed is not either (the answer was cut short); an error-ack beside it
/// is what platform.error-message judges; with only the cut acknowledgement it has nothing to
/// judge and says so; a server that stays silent after a 503 fails it, naming the agent.
#[deadline::test(secs = 900, flavor = "multi_thread", worker_threads = 2)]
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
#[deadline::test(flavor = "multi_thread", worker_threads = 2)]
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
        agent_tck::protocols::connector::fleet::judge::run(&fleet, served, false, 11),
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

/// `probe connector` against the reference external agent with `flaw`, the callbacks awaited
/// up to 10 s (the reference calls back within a second).
async fn probe_flaw(flaw: &str) -> Report {
    use agent_tck::protocols::connector::reference::{ExternalAgent, Flaws};
    let agent = std::sync::Arc::new(ExternalAgent::new(Flaws::named(flaw).unwrap()));
    let running = agent_tck::mock::http1::spawn(agent, ([127, 0, 0, 1], 0).into())
        .await
        .unwrap();
    let mut s = crate::connector::settings(&format!("{}/v1/assistant/input", running.url()));
    s.reply_timeout = Duration::from_secs(10);
    let report = tokio::time::timeout(Duration::from_secs(60), run(&s, &|_| {}))
        .await
        .expect("the probe ends")
        .unwrap();
    running.stop().await;
    report
}

/// A callback PUT to exactly the URL given is named by its method (the endpoint answers 405),
/// not reported as a callback to a session never given; the reference's POSTs pass.
#[deadline::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_put_callback_is_named_by_its_method() {
    let (put, reference) = tokio::join!(probe_flaw("put-callback"), probe_flaw("conforming"));
    assert_cases(
        &put,
        &[
            (
                "callback.method",
                Status::Fail,
                &[
                    "29 of 29 callbacks",
                    ": PUT /cb/",
                    "(the document: POST; the kit's endpoint answered 405)",
                ],
            ),
            (
                "isolation.sessions",
                Status::Pass,
                &["none to a session never given"],
            ),
            ("callback.arrives", Status::Pass, &[]),
            ("callback.exact-url", Status::Pass, &[]),
        ],
    );
    assert_cases(&reference, &[("callback.method", Status::Pass, &[])]);
    let judged = case(&reference, "callback.method")
        .evidence
        .clone()
        .unwrap();
    assert_eq!((judged.judged, judged.of.as_str()), (29, "callbacks"));
}

/// A callback to the URL given without its query string: the case shows the URL it came to,
/// the URL given, and what differs.
#[deadline::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_callback_that_drops_the_query_string_shows_both_urls_and_the_difference() {
    let report = probe_flaw("drops-query").await;
    assert_cases(
        &report,
        &[(
            "callback.exact-url",
            Status::Fail,
            &[
                "29 of 29 callbacks",
                "/messages, given /cb/",
                "/messages?k=tck-",
                ": the query string `?k=tck-",
            ],
        )],
    );
    let message = &case(&report, "callback.exact-url").message;
    // Only the query differs: the path is not blamed.
    assert!(!message.contains("the path"), "{message}");
    // One example whole: `S: to /cb/N/…/messages, given /cb/N/…/messages?k=tck-N: the query
    // string `?k=tck-N` was dropped`.
    let example = message
        .split("callbacks: ")
        .nth(1)
        .unwrap()
        .split("; ")
        .next()
        .unwrap();
    let (_, rest) = example.split_once(": to ").unwrap();
    let (got, rest) = rest.split_once(", given ").unwrap();
    let (given, difference) = rest.split_once(": ").unwrap();
    let query = given.split_once('?').unwrap().1;
    assert_eq!(given, format!("{got}?{query}"), "{example}");
    assert_eq!(
        difference,
        format!("the query string `?{query}` was dropped")
    );
}

/// Thirty callbacks for one message at an endpoint answering 500, each tried three times, are
/// thirty callbacks retried a little, not a flood; one callback tried thirty times is.
#[deadline::test(flavor = "multi_thread", worker_threads = 2)]
async fn retries_are_counted_per_callback() {
    let (many, floods) = tokio::join!(
        probe_flaw("many-callbacks"),
        probe_flaw("floods-failing-endpoint")
    );
    assert_eq!(crate::support::failing(&many), vec![], "{}", explain(&many));
    assert_cases(
        &many,
        &[(
            "resilience.no-flood",
            Status::Pass,
            &["30 callbacks, at most 3 attempts each"],
        )],
    );
    let judged = case(&many, "resilience.no-flood").evidence.clone().unwrap();
    assert_eq!(
        (judged.judged, judged.of.as_str()),
        (30, "callbacks to an endpoint answering 500 (90 attempts)")
    );
    assert_cases(
        &floods,
        &[(
            "resilience.no-flood",
            Status::Fail,
            &[
                "1 of 1 callback tried more than 5 times",
                "the most, 30 attempts of one callback",
                "a flood",
            ],
        )],
    );
}

/// A forward cut at the kit's own bound says where the bound came from: the server's 5 s and
/// 2 s of grace by default, --timeout when that is shorter.
#[deadline::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forward_cut_at_the_deadline_says_where_the_deadline_came_from() {
    let (url, task) = crate::support::raw_server(|mut stream| async move {
        crate::support::read_request(&mut stream).await;
        tokio::time::sleep(Duration::from_secs(60)).await;
        drop(stream);
    })
    .await;
    let mut s = crate::connector::settings(&format!("{url}/in"));
    s.common.only = vec!["forward.plain".into()];
    s.timeout = Duration::from_secs(3);
    let short = tokio::time::timeout(Duration::from_secs(30), run(&s, &|_| {}))
        .await
        .expect("the probe ends")
        .unwrap();
    task.abort();
    assert_cases(
        &short,
        &[(
            "forward.plain",
            Status::Fail,
            &["no complete answer within 3s (--timeout): no response head received"],
        )],
    );
}

/// A fleet of one conforming agent against the reference server with `flaw`.
async fn revive_run(flaw: Flaw) -> Report {
    fleet_run(flaw, &[("steady", "conforming")]).await
}

/// A deleted session created again is revived: the reference attaches it and takes its
/// callback; a server that answers 201 but keeps it deleted fails, naming the step; a server
/// with no delete endpoint gives nothing to revive, and says what would.
#[deadline::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_session_is_revived_and_called_back() {
    let (reference, stale, no_delete) = tokio::join!(
        revive_run(Flaw::None),
        revive_run(Flaw::StaleRevive),
        revive_run(Flaw::NoDelete)
    );
    assert_eq!(
        crate::support::failing(&reference),
        vec![],
        "{}",
        explain(&reference)
    );
    assert_cases(
        &reference,
        &[(
            "platform.session-revive",
            Status::Pass,
            &[
                "-revive: created, deleted, created again (HTTP 201",
                "its callback answered 2xx and shown once",
            ],
        )],
    );
    let judged = case(&reference, "platform.session-revive")
        .evidence
        .clone()
        .unwrap();
    // Judged over the whole exchange, which took at least the 1 s settle: not 0 ms.
    assert!(
        reference.cases.iter().all(|c| c.duration_ms >= 1000),
        "{:?}",
        reference
            .cases
            .iter()
            .map(|c| c.duration_ms)
            .collect::<Vec<_>>()
    );
    assert_eq!(
        (judged.judged, judged.of.as_str()),
        (1, "deleted sessions created again")
    );
    assert_eq!(
        crate::support::failed_ids(&stale.cases),
        ["platform.session-revive".to_string()].into(),
        "{}",
        explain(&stale)
    );
    assert_cases(
        &stale,
        &[(
            "platform.session-revive",
            Status::Fail,
            &[
                "-revive was created again (HTTP 201",
                "but a WebSocket client could not attach to it",
            ],
        )],
    );
    assert_eq!(stale.exit_code(), 1);
    assert_eq!(
        crate::support::failing(&no_delete),
        vec![],
        "{}",
        explain(&no_delete)
    );
    assert_cases(
        &no_delete,
        &[(
            "platform.session-revive",
            Status::Skip,
            &[
                "(POST /api/plugins/sessions/operations/delete {sessionId}) answered HTTP 404",
                "nothing to revive; a server that deletes sessions there exercises this case",
            ],
        )],
    );
}

/// A server error to a callback of any size is a MUST failure that states the size; taking a
/// huge body whole is the SHOULD (stated with its size too); a 413 passes both.
#[deadline::test(secs = 900, flavor = "multi_thread", worker_threads = 2)]
async fn a_5xx_to_a_huge_callback_is_a_crash_and_no_bound_is_a_should() {
    let _heavy = crate::support::heavy().await;
    let agents = [("steady", "conforming"), ("huge", "huge-callback:2MiB")];
    let (reference, crashes, unbounded) = tokio::join!(
        fleet_run(Flaw::None, &agents),
        fleet_run(Flaw::ServerErrorOnHugeCallback, &agents),
        fleet_run(Flaw::NoBodyLimit, &agents)
    );
    assert_eq!(
        crate::support::failing(&reference),
        vec![],
        "{}",
        explain(&reference)
    );
    assert_cases(
        &reference,
        &[
            (
                "platform.callback-huge",
                Status::Pass,
                &["2097152 bytes (2 MiB) refused with HTTP 413"],
            ),
            ("platform.callback-no-5xx", Status::Pass, &[]),
        ],
    );
    assert_cases(
        &crashes,
        &[
            (
                "platform.callback-no-5xx",
                Status::Fail,
                &["1 of 2 callbacks break the rule", "a huge callback of 2097152 bytes (2 MiB) to tck-huge-0-", "(agent huge): HTTP 500"],
            ),
            (
                "platform.callback-huge",
                Status::Skip,
                &["the 1 huge callback got a server error or no answer (see platform.callback-no-5xx)"],
            ),
        ],
    );
    assert_eq!(
        case(&crashes, "platform.callback-no-5xx").level,
        agent_tck::report::Level::Must
    );
    assert_eq!(crashes.exit_code(), 1);
    assert_cases(
        &unbounded,
        &[
            (
                "platform.callback-huge",
                Status::Fail,
                &["2097152 bytes (2 MiB) accepted (HTTP 200) and broadcast whole (2097152 bytes): no bound"],
            ),
            ("platform.callback-no-5xx", Status::Pass, &[]),
        ],
    );
    // A SHOULD: the run is not failed for it.
    assert_eq!(
        crate::support::failing(&unbounded).len(),
        1,
        "{}",
        explain(&unbounded)
    );
    assert_eq!(unbounded.exit_code(), 0);
}

/// A server without the callback route answers the default huge callback (32 MiB, past common
/// servers' limits) 404 before reading it and closes: the 404 is read, so it is a refusal, not
/// a broken pipe taken for a crash.
#[deadline::test(secs = 900, flavor = "multi_thread", worker_threads = 2)]
async fn a_huge_callback_answered_404_before_its_body_is_a_refusal_not_a_crash() {
    let _heavy = crate::support::heavy().await;
    let report = fleet_run(
        Flaw::NoCallbackRoute,
        &[("steady", "conforming"), ("huge", "huge-callback")],
    )
    .await;
    assert_cases(
        &report,
        &[
            ("platform.callback-no-5xx", Status::Pass, &[]),
            (
                "platform.callback-huge",
                Status::Pass,
                &["33554432 bytes (32 MiB) refused with HTTP 404"],
            ),
            (
                "platform.callback-delivered",
                Status::Fail,
                &["HTTP 404 (expected 200)"],
            ),
        ],
    );
    for c in &report.cases {
        assert!(
            !c.message.contains("Broken pipe"),
            "{}: {}",
            c.id,
            c.message
        );
    }
}

/// A forward whose field names are not the document's arrived: forward-once counts it by its
/// values and says it was malformed (forward-schema fails it), never "never forwarded".
#[deadline::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forward_with_other_field_names_arrived_malformed() {
    let report = fleet_run(Flaw::WrongFieldNames, &[("steady", "conforming")]).await;
    assert_eq!(
        crate::support::failed_ids(&report.cases),
        ["platform.forward-schema".to_string()].into(),
        "{}",
        explain(&report)
    );
    assert_cases(
        &report,
        &[(
            "platform.forward-once",
            Status::Pass,
            &["1 forward arrived malformed, its session id and text under other field names (see platform.forward-schema)"],
        )],
    );
}

/// The connector's errors are classed by their type: a fleet file whose `ws:` names no dialect
/// is a usage error (exit 2: nothing was sent), a callback endpoint that cannot listen a run
/// that could not go on (exit 1); each is one line on stderr that names what failed.
#[test]
fn the_binary_exits_2_on_an_unknown_ws_dialect_and_1_on_a_callback_port_taken() {
    let dir = crate::support::TempDir::new("connector-exit");
    let file = dir.path("fleet.yaml");
    std::fs::write(
        &file,
        "protocol: connector\nconnector:\n  url: http://127.0.0.1:9\n  listen: 127.0.0.1:0\n  ws: telepathy\n  agents:\n    - { name: steady, agent-id: ext-steady, behavior: conforming }\n",
    )
    .unwrap();
    let out = crate::support::tck_within(
        &["mock", "fleet", "--config", &file],
        Duration::from_secs(30),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{}", crate::support::text(&out));
    assert_eq!(
        err.trim(),
        format!(
            "agent-tck: error: {file}: connector.ws: \"telepathy\" (expected auto, document or assistant-v5)"
        )
    );

    // Held open until the run has ended, so that the port stays taken.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let listen = taken.local_addr().unwrap().to_string();
    let out = crate::support::tck_within(
        &[
            "probe",
            "connector",
            "--input-url",
            "http://127.0.0.1:9/in",
            "--callback-listen",
            &listen,
        ],
        Duration::from_secs(30),
    );
    drop(taken);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{}", crate::support::text(&out));
    assert!(
        err.starts_with(&format!("agent-tck: error: cannot listen on {listen}: "))
            && err.trim().lines().count() == 1,
        "{err}"
    );
}
