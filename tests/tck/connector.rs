//! `probe connector` against the reference external agent, which passes every case, and against
//! agents with one flaw each, each caught by exactly its case; an inputUrl that is not there.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use agent_tck::mock::http1;
use agent_tck::protocols::connector::probe::{run, Settings};
use agent_tck::protocols::connector::reference::{split_url, ExternalAgent, Flaws};
use agent_tck::report::{Report, Status};

pub(crate) fn settings(input: &str) -> Settings {
    Settings {
        input: split_url(input).unwrap(),
        agent_id: "external-agent-a".into(),
        listen: SocketAddr::from(([127, 0, 0, 1], 0)),
        callback_base: None,
        reply_timeout: Duration::from_secs(15),
        timeout: Duration::from_secs(15),
        max_body: 5_000_000,
        common: agent_tck::probe::args::Common {
            seed: 9,
            only: Vec::new(),
            strict: false,
            ..Default::default()
        },
    }
}

async fn probe(flaw: &str) -> Report {
    let agent = Arc::new(ExternalAgent::new(Flaws::named(flaw).unwrap()));
    let running = http1::spawn(agent, SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .unwrap();
    let report = run(
        &settings(&format!("{}/v1/assistant/input", running.url())),
        &|_| {},
    )
    .await
    .unwrap();
    running.stop().await;
    report
}

#[deadline::test(secs = 900, flavor = "multi_thread", worker_threads = 2)]
async fn the_reference_agent_passes_and_each_flaw_fails_exactly_its_case() {
    let _heavy = crate::support::heavy().await;
    let report = probe("conforming").await;
    assert_eq!(
        crate::support::failing(&report),
        vec![],
        "{:#?}",
        report.cases
    );
    // Every case passed on evidence of what it judged.
    assert!(
        report
            .cases
            .iter()
            .all(|c| c.status == Status::Pass && c.evidence.as_ref().is_some_and(|e| e.judged > 0)),
        "{:#?}",
        report.cases
    );
    let raw = report
        .cases
        .iter()
        .find(|c| c.id == "callback.raw-text")
        .unwrap();
    assert!(
        raw.message.contains("Content-Type: text/markdown"),
        "{}",
        raw.message
    );
    let flaws = [
        ("slow-ack", "forward.within-5s", "acknowledged after 6."),
        (
            "hard-coded-callback",
            "callback.exact-url",
            "the path lost its prefix `/cb/",
        ),
        (
            "drops-query",
            "callback.exact-url",
            "the query string `?k=tck-",
        ),
        ("put-callback", "callback.method", "PUT /cb/"),
        ("json-envelope", "callback.raw-text", "a JSON envelope"),
        ("empty-callback", "callback.not-empty", "an empty body"),
        (
            "whitespace-callback",
            "callback.not-empty",
            "a whitespace-only body (6 bytes)",
        ),
        ("many-callbacks", "", ""),
        (
            "stray-callback",
            "isolation.sessions",
            "to a session never given",
        ),
        ("floods-failing-endpoint", "resilience.no-flood", "a flood"),
    ];
    // Each probe has its own agent and listener: they run side by side.
    let reports = futures::future::join_all(flaws.iter().map(|(flaw, _, _)| probe(flaw))).await;
    for ((flaw, case, needle), report) in flaws.into_iter().zip(reports) {
        let failed = crate::support::failing(&report);
        let expected: Vec<&str> = [case].into_iter().filter(|c| !c.is_empty()).collect();
        assert_eq!(
            failed.iter().map(|(id, _)| *id).collect::<Vec<_>>(),
            expected,
            "{flaw}: {failed:#?}"
        );
        if let Some((_, message)) = failed.first() {
            assert!(message.contains(needle), "{flaw}: {message}");
        }
    }
}

/// A port nothing listens on (bound a moment ago, then released).
fn closed_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// An inputUrl where nothing listens, through the binary: one failure (the first case, naming
/// the URL), every other case a skip naming it, no pass, exit 1, and no wait for callbacks.
#[test]
fn an_input_url_that_is_not_there_is_one_failure_and_the_rest_skipped() {
    let url = format!("http://127.0.0.1:{}/v1/assistant/input", closed_port());
    let dir = crate::support::TempDir::new("connector-down");
    let json = dir.path("report.json");
    let out = crate::support::tck_within(
        &["probe", "connector", "--input-url", &url, "--json", &json],
        Duration::from_secs(60),
    );
    let text = crate::support::text(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    let report: Report = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let failed = crate::support::failing(&report);
    assert_eq!(failed.len(), 1, "{failed:#?}");
    let (id, message) = failed[0];
    assert_eq!(id, "forward.plain");
    assert!(
        message.starts_with(&format!(
            "the agent is unreachable at {url}: cannot connect to 127.0.0.1:"
        )) && message.ends_with(
            ": is it running, and is --input-url its address? The cases after this one are skipped"
        ),
        "{message}"
    );
    assert!(
        crate::support::ids_with(&report, Status::Pass).is_empty(),
        "{:#?}",
        report.cases
    );
    let skips = format!(
        "not judged: the agent is unreachable at {url} (see forward.plain); an agent listening at its inputUrl exercises this case"
    );
    for c in report.cases.iter().filter(|c| c.id != "forward.plain") {
        assert_eq!(c.status, Status::Skip, "{}: {}", c.id, c.message);
        assert_eq!(c.message, skips, "{}", c.id);
    }
    assert_eq!(report.cases.len(), 14, "{:#?}", report.cases);
    assert!(text.contains("0 passed, 1 failed, 13 skipped"), "{text}");
}

/// The same when the first case run forwards twenty at once (`--only isolation.*`): the
/// reachability failure is that case's.
#[deadline::test]
async fn the_first_case_run_carries_the_reachability_failure() {
    let url = format!("http://127.0.0.1:{}/in", closed_port());
    let mut s = settings(&url);
    s.common.only = vec!["isolation.*".into(), "callback.*".into()];
    let report = run(&s, &|_| {}).await.unwrap();
    let failed = crate::support::failing(&report);
    assert_eq!(failed.len(), 1, "{failed:#?}");
    assert_eq!(failed[0].0, "isolation.sessions");
    let isolation = crate::support::case(&report, "isolation.sessions");
    assert_eq!(isolation.evidence.as_ref().unwrap().judged, 20);
    assert!(crate::support::ids_with(&report, Status::Pass).is_empty());
    for c in report.cases.iter().filter(|c| c.id != "isolation.sessions") {
        assert_eq!(c.status, Status::Skip, "{}: {}", c.id, c.message);
        assert!(
            c.message.contains("(see isolation.sessions)"),
            "{}: {}",
            c.id,
            c.message
        );
    }
}

/// An inputUrl that takes the message and never answers is cut 2 s after the server's 5 s.
#[deadline::test]
async fn an_input_url_that_never_answers_is_cut_at_the_deadline() {
    let (url, task) = crate::support::raw_server(|mut stream| async move {
        crate::support::read_request(&mut stream).await;
        tokio::time::sleep(Duration::from_secs(60)).await;
        drop(stream);
    })
    .await;
    let mut s = settings(&format!("{url}/in"));
    s.common.only = vec!["forward.plain".into()];
    let started = std::time::Instant::now();
    let report = run(&s, &|_| {}).await.unwrap();
    task.abort();
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    let failed = crate::support::failing(&report);
    assert_eq!(failed.len(), 1, "{failed:#?}");
    assert!(
        failed[0].1.contains("no complete answer within 7s (the server's 5 s timeout and 2 s of grace, to tell a slow acknowledgement from none)")
            && !failed[0].1.contains("--timeout"),
        "{}",
        failed[0].1
    );
}

/// A callback over --max-body is refused unread by the kit's endpoint, and the case says so
/// (rather than that no callback came).
#[deadline::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_callback_over_max_body_is_reported_as_refused() {
    let agent = Arc::new(ExternalAgent::new(Flaws::default()));
    let running = http1::spawn(agent, SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .unwrap();
    let mut s = settings(&format!("{}/v1/assistant/input", running.url()));
    // The reference's replies are longer than this; its forwards are not read by the endpoint.
    s.max_body = 16;
    s.common.only = vec!["forward.plain".into(), "callback.arrives".into()];
    let started = std::time::Instant::now();
    let report = run(&s, &|_| {}).await.unwrap();
    running.stop().await;
    let arrives = report
        .cases
        .iter()
        .find(|c| c.id == "callback.arrives")
        .unwrap();
    assert_eq!(arrives.status, Status::Fail, "{}", arrives.message);
    assert!(
        arrives.message.contains("refused unread, HTTP 413")
            && arrives
                .message
                .contains("over the callback endpoint's limit of 16 bytes")
            && !arrives.message.contains("mock")
            && arrives.message.contains("--max-body"),
        "{}",
        arrives.message
    );
    // It is not waited for: the refusal counts as the callback that came.
    assert!(
        started.elapsed() < Duration::from_secs(12),
        "{:?}",
        started.elapsed()
    );
}
