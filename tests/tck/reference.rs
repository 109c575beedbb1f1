//! The conforming reference agent passes every case of the built-in suite.

use agent_tck::report::Status;

use crate::support::*;

#[deadline::test]
async fn with_a_key_every_case_passes() {
    let agent = reference_agent(Some(KEY)).await;
    let report = probe(&agent.url(), Some(KEY)).await;
    let not_passed: Vec<_> = report
        .cases
        .iter()
        .filter(|c| c.status != Status::Pass)
        .map(|c| (&c.id, &c.message))
        .collect();
    assert!(not_passed.is_empty(), "{not_passed:#?}");
    assert_eq!(
        report.cases.len(),
        agent_tck::protocols::roundtable::suite()
            .unwrap()
            .cases()
            .len()
    );
    assert_eq!(report.exit_code(), 0);
    assert_eq!(report.summary.passed, report.cases.len());
    agent.stop().await;
}

#[deadline::test]
async fn without_a_key_only_the_auth_cases_are_skipped() {
    let agent = reference_agent(None).await;
    let report = probe(&agent.url(), None).await;
    assert!(failed(&report).is_empty(), "{:?}", failed(&report));
    assert_eq!(
        ids_with(&report, Status::Skip),
        ["auth.missing-key", "auth.wrong-key"]
    );
    assert!(
        case(&report, "auth.missing-key")
            .message
            .contains("no --api-key"),
        "{}",
        case(&report, "auth.missing-key").message
    );
    assert_eq!(report.exit_code(), 0);
}

#[deadline::test]
async fn every_seed_passes_and_the_same_seed_sends_the_same_requests() {
    let agent = reference_agent(None).await;
    for seed in [0, 1, 7, u64::MAX] {
        let report = probe_with(&agent.url(), |s| s.seed = seed).await;
        assert!(
            failed(&report).is_empty(),
            "seed {seed}: {:?}",
            report
                .cases
                .iter()
                .filter(|c| c.status == Status::Fail)
                .map(|c| (&c.id, &c.message))
                .collect::<Vec<_>>()
        );
    }
    let a = probe_with(&agent.url(), |s| s.seed = 9).await;
    let b = probe_with(&agent.url(), |s| s.seed = 9).await;
    let c = probe_with(&agent.url(), |s| s.seed = 10).await;
    let request = |r: &agent_tck::report::Report| {
        case(r, "analyze.response")
            .exchange
            .request
            .clone()
            .unwrap()
    };
    assert_eq!(request(&a), request(&b));
    assert_ne!(request(&a), request(&c));
}

#[deadline::test]
async fn only_runs_the_chosen_cases_and_what_they_need() {
    let agent = reference_agent(None).await;
    let report = probe_with(&agent.url(), |s| s.only = vec!["vote.dissent-*".into()]).await;
    let ids: Vec<&str> = report.cases.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(
        ids,
        // /vote's cases need /vote's answer, not /analyze's: the probe writes each request.
        ["agent.reachable", "vote.response", "vote.dissent-reason"]
    );
}

#[deadline::test]
async fn a_base_url_with_a_path_prefix_is_honoured() {
    // An agent mounted under /agents/x: the stub only answers there.
    let agent = stub(|req| match req.endpoint.strip_prefix("agents/x/") {
        Some(endpoint) => Req {
            endpoint: endpoint.to_string(),
            ..req
        }
        .reference(),
        None => agent_tck::mock::Reply::error(404, "not here"),
    })
    .await;
    let report = probe(&format!("{}/agents/x", agent.url()), None).await;
    assert!(failed(&report).is_empty(), "{:?}", failed(&report));
}
