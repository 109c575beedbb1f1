//! `probe librarian` against the reference Librarian, which passes every case, and against
//! variants with one flaw each, each caught by exactly the matching case, the rule or field
//! named.

use agent_tck::protocols::librarian::commands::{reference, reference_registry, reference_tokens};
use agent_tck::protocols::librarian::probe::{run, Settings};
use agent_tck::protocols::librarian::reference::Flaws;
use agent_tck::report::{Report, Status};
use agent_tck::transport::http::BaseUrl;
use std::time::Duration;

async fn probe(flaw: &str) -> Report {
    let served = reference(Flaws::named(flaw).unwrap()).await.unwrap();
    let settings = Settings {
        base: BaseUrl::parse(&served.url).unwrap(),
        tokens: reference_tokens(),
        timeout: Duration::from_secs(20),
        max_body: 5_000_000,
        common: agent_tck::probe::args::Common {
            seed: 3,
            only: Vec::new(),
            strict: false,
            ..Default::default()
        },
        quick: false,
        allow_deviations: Some(false),
        registry: Some(reference_registry()),
    };
    let report = run(&settings, &|_| {}).await.unwrap();
    served.stop().await;
    report
}

#[deadline::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reference_librarian_passes_every_case() {
    let report = probe("conforming").await;
    assert_eq!(
        crate::support::failing(&report),
        vec![],
        "{:#?}",
        report.cases
    );
    assert!(
        report.cases.iter().all(|c| c.status == Status::Pass),
        "nothing skipped with two agents: {:#?}",
        report
            .cases
            .iter()
            .filter(|c| c.status != Status::Pass)
            .collect::<Vec<_>>()
    );
    assert!(report
        .notes
        .iter()
        .any(|n| n.contains("rest on an assumption")));
}

/// The cases that judge a LibrarianResponse by the schema: a flaw in every answer's own fields
/// fails each of them.
const SCHEMA_JUDGED: &[&str] = &[
    "request.approval",
    "request.query",
    "request.validate",
    "request.report",
    "robustness.unicode",
    "robustness.concurrent",
];

#[deadline::test(secs = 900, flavor = "multi_thread", worker_threads = 2)]
async fn each_flawed_librarian_fails_exactly_its_case() {
    let _heavy = crate::support::heavy().await;
    // An empty body is not JSON either: the crash shows under both input cases.
    let expected: [(&str, &[&str], &str); 20] = [
        (
            "accepts-any-content-type",
            &["input.wrong-type-content"],
            "wrong-type-content: approved; expected a 4xx",
        ),
        (
            "content-limit-off-by-one",
            &["limits.content-over"],
            "content at 102401 bytes, over the limit, was approved",
        ),
        (
            "allows-deviations",
            &["limits.strict-deviations"],
            "a request with a deviation was approved under strict mode",
        ),
        // Not a departure: a 403 for a request its agent may not make breaks nothing.
        ("forbids-403", &[], ""),
        (
            "no-status-endpoint",
            &["status.lookup"],
            "GET /agent/status/req-",
        ),
        (
            "silent-429",
            &["rate.retry-after"],
            "neither Retry-After nor rate-limit headers",
        ),
        (
            "reverts-escalation",
            &["lifecycle.escalation"],
            "ESCALATED then PENDING",
        ),
        (
            "obeys-injection",
            &["robustness.injection"],
            "talked into it by the injected text",
        ),
        (
            "ignores-capabilities",
            &["registry.action-outside"],
            "has no write capability",
        ),
        (
            "approves-without-rationale",
            &["fields.approval-without-rationale"],
            "without rationale",
        ),
        (
            "crashes-on-malformed-json",
            &["input.malformed-json", "input.empty-body"],
            "answered 500",
        ),
        ("no-rate-limit", &["rate.limit"], "none answered 429"),
        (
            "shared-rate-limit",
            &["rate.isolation"],
            "the limit is not per agent",
        ),
        (
            "leaks-status",
            &["status.no-leak"],
            "another agent was answered 200",
        ),
        (
            "accepts-wrong-token",
            &["auth.wrong-token"],
            "approved; expected 401 or 403",
        ),
        (
            "ignores-max-references",
            &["limits.references-21"],
            "references at 21 items, over the limit, was approved",
        ),
        (
            "confidence-as-percent",
            SCHEMA_JUDGED,
            "confidence: 90.0 is above the maximum 1",
        ),
        (
            "unnamed-status",
            &["request.query"],
            "status: \"success\" is not one of approved, rejected",
        ),
        ("local-timestamp", SCHEMA_JUDGED, "is not a \"date-time\""),
        // Rejections answered 422 with `violations: []`: every rejection is judged, not only
        // the 2xx answers to valid requests (the limit breaches are rejected too).
        (
            "unexplained-rejections",
            &["request.expectations"],
            "(content at 102401 bytes) violations: a rejection carries no violation",
        ),
    ];
    assert_eq!(expected.len(), Flaws::NAMES.len());
    for (flaw, cases, needle) in expected {
        let report = probe(flaw).await;
        let failed = crate::support::failing(&report);
        assert_eq!(
            failed.iter().map(|(id, _)| *id).collect::<Vec<_>>(),
            cases.to_vec(),
            "{flaw}: {failed:#?}"
        );
        assert!(
            failed.iter().all(|(_, m)| m.contains(needle)),
            "{flaw}: {failed:#?}"
        );
        // A SHOULD (the 429's Retry-After) warns; every other flaw fails the run.
        let blocking = if matches!(
            flaw,
            "silent-429" | "forbids-403" | "unexplained-rejections"
        ) {
            0
        } else {
            1
        };
        assert_eq!(report.exit_code(), blocking, "{flaw}");
    }
}

#[deadline::test]
async fn an_unreachable_librarian_is_one_failure_and_the_rest_skipped() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let settings = Settings {
        base: BaseUrl::parse(&format!("http://127.0.0.1:{port}")).unwrap(),
        tokens: reference_tokens(),
        timeout: Duration::from_secs(5),
        max_body: 5_000_000,
        common: agent_tck::probe::args::Common {
            seed: 3,
            only: Vec::new(),
            strict: false,
            ..Default::default()
        },
        quick: true,
        allow_deviations: Some(false),
        registry: None,
    };
    let report = run(&settings, &|_| {}).await.unwrap();
    let failed = crate::support::failing(&report);
    assert_eq!(failed.len(), 1, "{failed:#?}");
    assert_eq!(failed[0].0, "librarian.reachable");
    assert!(
        failed[0]
            .1
            .starts_with("the Librarian is unreachable: cannot connect"),
        "{}",
        failed[0].1
    );
    assert!(
        !failed[0].1.contains("agent unreachable"),
        "{}",
        failed[0].1
    );
    assert!(report.cases[1..].iter().all(|c| c.status == Status::Skip));
}

/// A hostile Librarian (answers nested 100,000 deep, an endless trickle, an endless body) is
/// judged within the deadlines, case by case, without a panic.
#[deadline::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hostile_librarian_is_judged_within_the_deadlines() {
    use tokio::io::AsyncWriteExt;
    for kind in ["deep", "trickle", "endless"] {
        let (url, task) = crate::support::raw_server(move |mut stream| async move {
            crate::support::read_request(&mut stream).await;
            match kind {
                "deep" => {
                    let body = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
                    let head = format!("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n", body.len());
                    let _ = stream.write_all(head.as_bytes()).await;
                    let _ = stream.write_all(body.as_bytes()).await;
                }
                "trickle" => {
                    let _ = stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n").await;
                    for _ in 0..1000 {
                        if stream.write_all(b"{").await.is_err() {
                            return;
                        }
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                }
                _ => {
                    let _ = stream.write_all(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n").await;
                    let chunk = format!("{:x}\r\n{}\r\n", 65536, "x".repeat(65536));
                    while stream.write_all(chunk.as_bytes()).await.is_ok() {}
                }
            }
        })
        .await;
        let settings = Settings {
            base: BaseUrl::parse(&url).unwrap(),
            tokens: reference_tokens(),
            timeout: Duration::from_millis(500),
            max_body: 1_000_000,
            common: agent_tck::probe::args::Common {
                seed: 3,
                only: vec!["request.*".into(), "status.lookup".into(), "input.*".into()],
                strict: false,
                ..Default::default()
            },
            quick: true,
            allow_deviations: Some(false),
            registry: None,
        };
        let started = std::time::Instant::now();
        let report = tokio::time::timeout(Duration::from_secs(120), run(&settings, &|_| {}))
            .await
            .unwrap_or_else(|_| panic!("{kind}: the probe outlived its deadlines"))
            .unwrap();
        task.abort();
        assert!(report.exit_code() == 1, "{kind}: a hostile server fails");
        assert!(
            report
                .cases
                .iter()
                .any(|c| c.id == "request.approval" && c.status == Status::Fail),
            "{kind}: {:#?}",
            report.cases
        );
        // Each exchange is bounded by the 500 ms deadline (a case may make a few).
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "{kind}: {:?}",
            started.elapsed()
        );
    }
}
