//! Every verdict earned, across every protocol: a peer that gives nothing to judge gets no PASS
//! but reachability, every skip says why, and a run that judged nothing is not green. The
//! per-protocol files (`evidence_*.rs`) hold each case to the peers that break it, conform, or
//! give it nothing; this one walks every probe and every mock the registry lists.

use std::time::Duration;

use agent_tck::report::{Level, Report, Status};

use crate::support::{assert_every_verdict_explained, TempDir};

/// The cases that passed though they are MUST or SHOULD and not about reaching the peer.
fn passed_beyond_reachability(report: &Report) -> Vec<String> {
    report
        .cases
        .iter()
        .filter(|c| c.status == Status::Pass && c.level != Level::May)
        .filter(|c| !c.id.contains("reachable"))
        .map(|c| format!("{}: {}", c.id, c.message))
        .collect()
}

#[deadline::test(flavor = "multi_thread")]
async fn no_probe_passes_a_server_with_no_routes() {
    let server = crate::support::no_routes().await;
    let url = server.url();
    let dir = TempDir::new("evidence-no-routes");
    let input = format!("{url}/input");
    let probes: [(&str, Vec<&str>); 4] = [
        ("roundtable", vec!["--url", &url]),
        ("execute-task", vec!["--url", &url, "--max-turns", "2"]),
        (
            "librarian",
            vec![
                "--url",
                &url,
                "--token",
                "claude-3=evidence-token-0123456789",
            ],
        ),
        (
            "connector",
            vec!["--input-url", &input, "--reply-timeout", "2s"],
        ),
    ];
    for (protocol, flags) in probes {
        let json = dir.path(&format!("{protocol}.json"));
        let mut args: Vec<String> = ["probe", protocol, "--seed", "7", "--timeout", "10s"]
            .iter()
            .chain(flags.iter())
            .chain(["--json", json.as_str()].iter())
            .map(|s| s.to_string())
            .collect();
        let out = tokio::task::spawn_blocking(move || {
            let args: Vec<&str> = args.iter_mut().map(|s| s.as_str()).collect();
            crate::support::tck_within(&args, Duration::from_secs(120))
        })
        .await
        .unwrap();
        let text = crate::support::text(&out);
        assert_eq!(out.status.code(), Some(1), "probe {protocol}: {text}");
        let report: Report =
            serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        assert_every_verdict_explained(&report);
        let passed = passed_beyond_reachability(&report);
        assert!(
            passed.is_empty(),
            "probe {protocol} passed rules a server with no routes never exercised: {passed:#?}\n{text}"
        );
    }
    server.stop().await;
}

#[deadline::test(flavor = "multi_thread")]
async fn a_mock_that_no_request_reached_judged_nothing() {
    for protocol in agent_tck::protocols::agent_protocols() {
        let profile = agent_tck::mock::agent::Profile {
            name: "idle".into(),
            domain: "general review".into(),
            capabilities: Vec::new(),
            api_key: None,
        };
        let agent = agent_tck::mock::agent::MockAgent::new(protocol, profile, Vec::new(), 1);
        let (_url, stop, report) = crate::support::mock_session(protocol, agent).await;
        stop.send(()).unwrap();
        let report = tokio::time::timeout(Duration::from_secs(60), report)
            .await
            .expect("the session ends once stopped")
            .unwrap()
            .unwrap();
        let name = protocol.name();
        assert_every_verdict_explained(&report);
        let judged: Vec<&str> = report
            .cases
            .iter()
            .filter(|c| c.status != Status::Skip)
            .filter(|c| c.level != Level::May)
            .map(|c| c.id.as_str())
            .collect();
        assert!(
            judged.is_empty(),
            "{name}: judged with no request: {judged:?}"
        );
        assert!(report.judged_nothing(), "{name}: {:#?}", report.summary);
        assert_eq!(
            report.exit_code(),
            1,
            "{name}: a run that judged nothing is not green"
        );
        let console = agent_tck::report::console::render(&report, false);
        let last = console.lines().last().unwrap_or_default();
        assert!(last.contains("nothing judged"), "{name}: {last}");
    }
}

#[deadline::test(flavor = "multi_thread")]
async fn the_reference_agent_passes_on_evidence() {
    let agent = crate::support::reference_agent(None).await;
    let report = crate::support::probe(&agent.url(), None).await;
    assert_every_verdict_explained(&report);
    assert_eq!(
        report.summary.failed,
        0,
        "{:?}",
        crate::support::failing(&report)
    );
    let evidence = &crate::support::case(&report, "analyze.field-length")
        .evidence
        .clone()
        .expect("a pass carries its evidence");
    assert!(
        evidence.judged > 1 && evidence.of == "strings",
        "{evidence:?}"
    );
    // A case judged on its own answer counts that answer, named after its exchange, and says
    // what held (the probe reads every check's note).
    let response = crate::support::case(&report, "analyze.response");
    let evidence = response
        .evidence
        .as_ref()
        .expect("a pass carries its evidence");
    assert_eq!(
        (evidence.judged, evidence.of.as_str()),
        (1, "answer to exchange analyze")
    );
    assert!(
        response.message.contains("answered 200") && response.message.contains("bytes"),
        "{}",
        response.message
    );
    agent.stop().await;
}

/// A content behaviour that nothing triggered tested nothing: the fleet says so per agent
/// (`agent.behaviors-applied`, INFO), and credits one that took effect with its count.
#[deadline::test(flavor = "multi_thread")]
async fn a_behaviour_the_platform_never_triggered_is_reported_per_agent() {
    use agent_tck::mock::behavior::parse_list;
    let protocol = &agent_tck::protocols::roundtable::Agents;
    let agent = || {
        let profile = agent_tck::mock::agent::Profile {
            name: "nul-agent".into(),
            domain: "general review".into(),
            capabilities: Vec::new(),
            api_key: None,
        };
        let items = parse_list("null-bytes", crate::support::roundtable()).unwrap();
        agent_tck::mock::agent::MockAgent::new(protocol, profile, items, 1)
    };
    let settle = |report: tokio::task::JoinHandle<_>| async move {
        let report: Result<Report, _> = tokio::time::timeout(Duration::from_secs(60), report)
            .await
            .expect("the session ends once stopped")
            .unwrap();
        report.unwrap()
    };

    let (_url, stop, report) = crate::support::mock_session(protocol, agent()).await;
    stop.send(()).unwrap();
    let report = settle(report).await;
    let case = crate::support::case(&report, "agent.behaviors-applied");
    assert_eq!(case.status, Status::Skip, "{}", case.message);
    assert!(
        case.message
            .starts_with("nul-agent: never took effect: null-bytes ("),
        "{}",
        case.message
    );

    let (url, stop, report) = crate::support::mock_session(protocol, agent()).await;
    let request = serde_json::json!({"task_id": "t-1", "content": "Review the login module."});
    let answer = reqwest_free_post(&format!("{url}/analyze"), &request.to_string()).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    stop.send(()).unwrap();
    let report = settle(report).await;
    let case = crate::support::case(&report, "agent.behaviors-applied");
    assert_eq!(case.status, Status::Pass, "{}", case.message);
    assert_eq!(case.evidence.as_ref().map(|e| e.judged), Some(1));
    assert!(
        case.message.contains("null-bytes on 1 answer"),
        "{}",
        case.message
    );
}

/// One POST over a plain TCP connection, its whole answer as text (the connection closes).
async fn reqwest_free_post(url: &str, body: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let rest = url.strip_prefix("http://").unwrap();
    let (host, path) = rest.split_at(rest.find('/').unwrap());
    let mut stream = tokio::net::TcpStream::connect(host).await.unwrap();
    let head = format!(
        "POST {path} HTTP/1.1\r\nhost: {host}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(body.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    tokio::time::timeout(Duration::from_secs(30), stream.read_to_end(&mut answer))
        .await
        .expect("the mock answers within 30 s")
        .unwrap();
    String::from_utf8_lossy(&answer).into_owned()
}
