use super::*;

#[test]
fn a_protocol_without_a_platform_api_cannot_be_driven() {
    let spec: PlatformSpec = serde_saphyr::from_str("url: http://platform:8000\n").unwrap();
    let e = Driver::new(&spec, None, &crate::mock::stub::STUB)
        .err()
        .unwrap();
    assert_eq!(e, PlatformSpecError::NoApi { protocol: "stub" });
    assert_eq!(
        e.to_string(),
        "platform: the stub protocol has no platform API that a fleet can drive"
    );
    assert_eq!(
        crate::error::Error::from(e).shown(),
        (
            crate::error::Class::Usage,
            "platform: the stub protocol has no platform API that a fleet can drive".into()
        )
    );
}

#[test]
fn trigger_bodies_are_filled() {
    let body = fill(
        &json!({"content": "{{ task }}", "title": "run {{ n }}"}),
        4,
        1,
    );
    assert_eq!(body["title"], "run 4");
    assert!(!body["content"].as_str().unwrap().contains("{{"));
}

fn spec() -> TriggerSpec {
    serde_saphyr::from_str("expect: { json: [\"status == completed\"] }").unwrap()
}

fn answer(status: u16, body: &str) -> Result<http::Response, Failure> {
    Ok(http::Response {
        status,
        headers: Vec::new(),
        body: Bytes::from(body.to_string()),
        body_exceeded: false,
        elapsed: Duration::from_millis(5),
    })
}

fn judged(results: Vec<(usize, Duration, Result<http::Response, Failure>)>) -> [CaseResult; 4] {
    let spec = spec();
    let conditions = vec![Condition::parse("status == completed").unwrap()];
    let results: Vec<Triggered> = results
        .into_iter()
        .map(|(n, elapsed, answer)| Triggered {
            n,
            started: Instant::now(),
            elapsed,
            answer,
            within: Vec::new(),
        })
        .collect();
    let short = ShortDeadline {
        deadline: Duration::from_secs(9),
        bound: Duration::from_secs(9),
        timeout: Duration::from_secs(3),
    };
    judge_triggers(&spec, &conditions, &short, "http://p/t", &results)
}

/// Each trigger case judges only what reached it, and says so.
#[test]
fn trigger_cases_are_judged_on_what_each_trigger_got() {
    use crate::report::Status::{Fail, Pass, Skip};
    let took = Duration::from_millis(20);
    let ok = r#"{"status":"completed"}"#;
    let [reached, deadline, no5xx, expect] = judged(vec![
        (0, took, answer(200, ok)),
        (1, took, answer(503, "down")),
    ]);
    assert_eq!((reached.status, deadline.status), (Pass, Pass));
    assert_eq!(no5xx.status, Fail, "{}", no5xx.message);
    assert!(no5xx.message.contains("#1: 503 down"), "{}", no5xx.message);
    // The 5xx is no-5xx's finding: the expectations judge the other answer only.
    assert_eq!(expect.status, Pass, "{}", expect.message);
    assert_eq!(expect.evidence.as_ref().map(|e| e.judged), Some(1));

    let silent = Failure::Silent("no complete answer within 9s: no response head received".into());
    let [reached, deadline, no5xx, expect] = judged(vec![(0, Duration::from_secs(9), Err(silent))]);
    assert_eq!(reached.status, Skip);
    assert!(
        reached
            .message
            .contains("1 of 1 trigger got no answer head")
            && reached.message.contains("(waited 9.0 s)"),
        "{}",
        reached.message
    );
    assert_eq!(deadline.status, Fail);
    assert_eq!((no5xx.status, expect.status), (Skip, Skip));
    assert!(
        no5xx.message.contains("1 without an answer head"),
        "{}",
        no5xx.message
    );

    let refused = Failure::Unreachable("platform unreachable: cannot connect".into());
    let [reached, deadline, ..] = judged(vec![(0, took, Err(refused))]);
    assert_eq!(reached.status, Fail, "{}", reached.message);
    assert_eq!(reached.evidence.as_ref().map(|e| e.judged), Some(1));
    assert_eq!(deadline.status, Skip);

    let [_, _, _, expect] = judged(vec![(0, took, answer(500, "x"))]);
    assert_eq!(expect.status, Skip);
    assert!(
        expect.message.contains("every answer was a 5xx"),
        "{}",
        expect.message
    );
}

/// `1 problem:`, `2 problems:` (issue 39, point 13).
#[test]
fn a_listing_counts_its_problems_in_their_number() {
    assert_eq!(listing(&["a: 500".into()]), "1 problem:\n  a: 500");
    assert_eq!(
        listing(&["a: 500".into(), "b: 502".into()]),
        "2 problems:\n  a: 500\n  b: 502"
    );
}
