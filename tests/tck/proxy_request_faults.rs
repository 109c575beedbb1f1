//! Faults on the platform's requests (`--fault NAME=request:…`), with `proxy.rs`'s platform and
//! agents behind the proxy: the answer to a request the proxy bent is judged by the probe's
//! robustness case for that fault, under the agent's party; the platform, told the request as
//! it sent it, is never blamed for what the proxy did; a fault that bent nothing leaves its
//! cases skipped, saying so; an agent that dies on a bent request is the agent's to answer for.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use agent_tck::mock::{Reply, Responder};
use agent_tck::protocols::roundtable::{self, reference::ReferenceAgent};
use agent_tck::report::{Exit, Report, Status};
use serde_json::Value;
use tokio::io::AsyncWriteExt;

use agent_tck::mock::encoding::Malformed;
use agent_tck::mock::protocol::AgentProtocol;
use agent_tck::proxy::bend::{bent_case, parse, How, Requests, What};

use crate::platform::Variant;
use crate::proxy::{failures, judged, status_of, Stand};
use crate::support::{self, SEED};

/// The stand's agents, with beta's requests bent by `fault`, and beta replaced by `real` when
/// given.
async fn bent_for_beta(fault: &str, real: Option<String>) -> Report {
    let faults = [("beta", fault)];
    let real: Vec<(&str, String)> = real.into_iter().map(|url| ("beta", url)).collect();
    judged(Stand {
        faults: &faults,
        real: &real,
        ..Stand::of(Variant::Conforming)
    })
    .await
}

/// No case of the platform's failed: what the proxy did is not the platform's.
fn platform_not_blamed(report: &Report) {
    let platform: Vec<&str> = support::failed(report)
        .into_iter()
        .filter(|id| !id.contains('/'))
        .collect();
    assert!(platform.is_empty(), "{}", failures(report));
}

/// The reference agent, but with what `bend(request body, reply)` makes of its replies.
async fn agent_that(
    bend: impl Fn(&[u8], Reply) -> Reply + Send + Sync + 'static,
) -> crate::stub_server::Running {
    support::stub(move |req| bend(&req.body, req.reference())).await
}

#[deadline::test]
async fn an_agent_that_refuses_a_malformed_request_passes_the_probes_case() {
    let report = bent_for_beta("request:malformed-json@analyze", None).await;
    let case = support::case(&report, "beta/http.not-json");
    assert_eq!(case.status, Status::Pass, "{}", case.message);
    assert_eq!(
        case.evidence.as_ref().map(|e| e.judged),
        Some(2),
        "one per deliberation"
    );
    let bent = support::case(&report, "proxy.requests-bent");
    assert_eq!(bent.status, Status::Pass, "{}", bent.message);
    assert!(
        bent.message
            .contains("beta: request:malformed-json@analyze on 2 requests"),
        "{}",
        bent.message
    );
    // The ordinary rules did not judge the answers to the broken requests (a 400 is no schema
    // failure of /analyze), and the platform met an agent that failed, not a fault of its own.
    let ordinary = support::case(&report, "beta/analyze.response");
    assert_eq!(ordinary.status, Status::Skip, "{}", ordinary.message);
    assert_eq!(
        ordinary.message,
        "none of beta's 2 /analyze answers was judged: it answered a request the proxy bent (malformed-json), which http.not-json judges"
    );
    platform_not_blamed(&report);
    assert_eq!(report.exit_code(), Exit::Passed, "{}", failures(&report));
}

#[deadline::test]
async fn an_agent_that_fails_on_a_malformed_request_is_blamed_for_it_and_the_platform_is_not() {
    let fragile = agent_that(|body, reply| match serde_json::from_slice::<Value>(body) {
        Ok(_) => reply,
        Err(_) => Reply::error(500, "internal error"),
    })
    .await;
    let report = bent_for_beta("request:malformed-json@analyze", Some(fragile.url())).await;
    let case = support::case(&report, "beta/http.not-json");
    assert_eq!(case.status, Status::Fail, "{}", case.message);
    assert!(
        case.message
            .contains("to a request the proxy bent (malformed-json)"),
        "{}",
        case.message
    );
    platform_not_blamed(&report);
    let others: Vec<&str> = support::failed(&report)
        .into_iter()
        .filter(|id| !id.starts_with("beta/"))
        .collect();
    assert!(others.is_empty(), "{}", failures(&report));
    fragile.stop().await;
}

#[deadline::test]
async fn a_nul_in_a_request_is_judged_by_the_sanitization_case_stripped_or_echoed() {
    // The reference agent does not echo what it is sent: its answers stay clean.
    let report = bent_for_beta("request:null-bytes@analyze", None).await;
    let case = support::case(&report, "beta/analyze.sanitization");
    assert_eq!(case.status, Status::Pass, "{}", case.message);
    platform_not_blamed(&report);
    // An agent that echoes the request's content into its finding, NUL and all.
    let echoing = agent_that(|body, reply| {
        let request: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
        let Some(content) = with_nul(&request) else {
            return reply;
        };
        let Ok(mut answer) = serde_json::from_slice::<Value>(&reply.body) else {
            return reply;
        };
        answer["observations"][0]["finding"] = Value::String(format!("About: {content}"));
        Reply::json(200, &answer)
    })
    .await;
    let report = bent_for_beta("request:null-bytes@analyze", Some(echoing.url())).await;
    let case = support::case(&report, "beta/analyze.sanitization");
    assert_eq!(case.status, Status::Fail, "{case:?}\n{}", failures(&report));
    assert!(
        case.message.contains("the proxy bent (null-bytes)"),
        "{}",
        case.message
    );
    platform_not_blamed(&report);
    echoing.stop().await;
}

#[deadline::test]
async fn a_fault_that_bent_no_request_leaves_its_cases_skipped_saying_so() {
    let report = bent_for_beta("request:malformed-json@analyze:0%", None).await;
    let bent = support::case(&report, "proxy.requests-bent");
    assert_eq!(bent.status, Status::Skip, "{}", bent.message);
    assert!(
        bent.message.contains("no request was bent"),
        "{}",
        bent.message
    );
    let case = support::case(&report, "beta/http.not-json");
    assert_eq!(case.status, Status::Skip, "{}", case.message);
    assert!(
        case.message
            .contains("the proxy bent no /analyze request to beta"),
        "{}",
        case.message
    );
    // An agent with no request fault is not given the cases at all.
    assert!(
        !report.cases.iter().any(|c| c.id == "alpha/http.not-json"),
        "alpha's requests were never to be bent"
    );
}

#[deadline::test]
async fn a_request_held_or_never_passed_on_is_the_platforms_test_not_the_agents() {
    let report = bent_for_beta("request:hang@analyze", None).await;
    // The platform met a silent agent and gave up on it; beta never saw the request.
    let case = support::case(&report, "platform.gives-up");
    assert_eq!(case.status, Status::Pass, "{}", case.message);
    let beta_failed: Vec<&str> = support::failed(&report)
        .into_iter()
        .filter(|id| id.starts_with("beta/"))
        .collect();
    assert!(beta_failed.is_empty(), "{}", failures(&report));
    // Held past the platform's timeout, then passed on: beta's answer is judged on its own time.
    let report = bent_for_beta("request:slow:2s@analyze", None).await;
    assert_eq!(status_of(&report, "platform.gives-up"), Status::Pass);
    let latency = support::case(&report, "beta/agent.latency");
    assert_ne!(latency.status, Status::Fail, "{}", latency.message);
    assert!(
        support::failed(&report)
            .iter()
            .all(|id| !id.starts_with("beta/")),
        "{}",
        failures(&report)
    );
}

/// The first string of `value` that holds a NUL.
fn with_nul(value: &Value) -> Option<&str> {
    match value {
        Value::String(s) => s.contains('\0').then_some(s.as_str()),
        Value::Array(items) => items.iter().find_map(with_nul),
        Value::Object(map) => map.values().find_map(with_nul),
        _ => None,
    }
}

/// An agent that dies (every connection reset from then on) on the first request whose body
/// holds a NUL.
async fn agent_dying_on_a_nul() -> String {
    let dead = Arc::new(AtomicBool::new(false));
    let reference = Arc::new(ReferenceAgent::new("reference-agent", SEED));
    let (url, _task) = support::raw_server(move |mut stream| {
        let dead = dead.clone();
        let reference = reference.clone();
        async move {
            if dead.load(Ordering::SeqCst) {
                return support::reset(stream);
            }
            let request = support::read_request(&mut stream).await;
            let Some(split) = request.windows(4).position(|w| w == b"\r\n\r\n") else {
                return support::reset(stream);
            };
            let head = String::from_utf8_lossy(&request[..split]).to_string();
            let body = &request[split + 4..];
            if String::from_utf8_lossy(body).contains("\\u0000") {
                dead.store(true, Ordering::SeqCst);
                return support::reset(stream);
            }
            let path = head.split(' ').nth(1).unwrap_or("/");
            let reply = reference.respond(path.trim_start_matches('/'), body);
            let answer = format!(
                "HTTP/1.1 {} X\r\ncontent-type: {}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                reply.status,
                reply.content_type,
                reply.body.len()
            );
            let _ = stream.write_all(&[answer.as_bytes(), &reply.body].concat()).await;
            let _ = stream.shutdown().await;
        }
    })
    .await;
    url
}

#[deadline::test]
async fn an_agent_that_dies_on_a_bent_request_is_blamed_and_the_platform_is_not() {
    let url = agent_dying_on_a_nul().await;
    let report = bent_for_beta("request:null-bytes@analyze", Some(url)).await;
    let case = support::case(&report, "beta/analyze.sanitization");
    assert_eq!(case.status, Status::Fail, "{case:?}\n{}", failures(&report));
    assert!(case.message.contains("no answer"), "{}", case.message);
    // Dead from then on: the platform left it out of the later phases, whose cases skip.
    let later = support::case(&report, "beta/challenge.response");
    assert_eq!(later.status, Status::Skip, "{}", later.message);
    platform_not_blamed(&report);
}

#[deadline::test]
async fn a_recording_of_bent_requests_keeps_both_and_is_judged_again_the_same() {
    let dir = support::TempDir::new("proxy-bent-record");
    for file in ["run.jsonl", "run.har"] {
        let path = std::path::PathBuf::from(dir.path(file));
        let fragile = agent_that(|body, reply| match serde_json::from_slice::<Value>(body) {
            Ok(_) => reply,
            Err(_) => Reply::error(500, "internal error"),
        })
        .await;
        let faults = [
            ("beta", "request:malformed-json@analyze"),
            ("gamma", "request:null-bytes@challenge"),
            ("alpha", "request:slow:200ms@vote"),
        ];
        let real = [("beta", fragile.url())];
        let live = judged(Stand {
            faults: &faults,
            real: &real,
            record: Some(path.clone()),
            ..Stand::of(Variant::Conforming)
        })
        .await;
        assert_eq!(status_of(&live, "beta/http.not-json"), Status::Fail);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            text.contains("\"forwarded\""),
            "{file}: what was passed on is kept"
        );
        let entries = agent_tck::judge::record::read_entries(&path).unwrap();
        let settings = agent_tck::proxy::settings::RunSettings::of(&entries).expect("the settings");
        let again = agent_tck::proxy::judge::judge(
            &entries,
            &roundtable::Agents,
            roundtable::suite().unwrap(),
            &settings,
        )
        .unwrap();
        crate::rejudge_platforms::assert_same_verdicts(&live.cases, &again);
        assert_eq!(
            again.len(),
            live.cases.len(),
            "{file}: every live case, offline"
        );
        fragile.stop().await;
    }
}

// ---- the faults themselves, without a platform ----------------------------------------------

#[test]
fn a_request_fault_parses_as_the_answer_side_form_and_one_that_bends_no_request_is_named() {
    let f = parse(
        "malformed-json:truncated@analyze+vote:25%",
        &roundtable::Agents,
    )
    .unwrap();
    assert!(matches!(f.how, How::Malformed(Malformed::Truncated)));
    assert_eq!(f.endpoints, ["analyze", "vote"]);
    assert!((f.share - 0.25).abs() < 1e-9);
    assert!(matches!(
        parse("slow:2s", &roundtable::Agents).unwrap().how,
        How::Hold(_)
    ));
    let e = parse("wrong-content-type", &roundtable::Agents)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("\"wrong-content-type\": not a fault on a request"),
        "{e}"
    );
    assert!(e.contains("malformed-json, null-bytes"), "{e}");
    let e = parse("malformed-json:duplicate-keys", &roundtable::Agents)
        .unwrap_err()
        .to_string();
    assert!(e.contains("still parses"), "{e}");
    let e = parse("null-bytes@health", &roundtable::Agents)
        .unwrap_err()
        .to_string();
    assert!(e.contains("@health"), "{e}");
}

#[test]
fn each_content_fault_bends_the_request_and_says_so() {
    let p: &dyn AgentProtocol = &roundtable::Agents;
    let analyze = p.endpoints().iter().find(|e| e.name == "analyze").unwrap();
    let body = br#"{"task_id":"t1","content":"review this code please"}"#;
    let bend = |text: &str| {
        let r = Requests::new(vec![parse(text, p).unwrap()], "beta", 7);
        let bent = r.bend(p, analyze, "beta", body).expect(text);
        match bent.what {
            What::Body(b, _) => b,
            _ => panic!("{text}: not a body"),
        }
    };
    let nul = bend("null-bytes");
    let v: Value = serde_json::from_slice(&nul).unwrap();
    assert!(v["content"].as_str().unwrap().contains('\0'));
    assert_eq!(v["task_id"], "t1", "the longest string only");
    assert!(serde_json::from_slice::<Value>(&bend("malformed-json")).is_err());
    let missing: Value = serde_json::from_slice(&bend("missing-field")).unwrap();
    assert_eq!(missing.as_object().unwrap().len(), 1, "{missing}");
    let long: Value = serde_json::from_slice(&bend("oversized-field:chars=100")).unwrap();
    assert_eq!(long["content"].as_str().unwrap().chars().count(), 101);
    let injected: Value = serde_json::from_slice(&bend("injection")).unwrap();
    let content = injected["content"].as_str().unwrap();
    assert!(
        !agent_tck::mock::injection::find_canaries(content).is_empty(),
        "{content}"
    );
}

#[test]
fn a_share_bends_some_requests_and_the_case_counts_them() {
    let p: &dyn AgentProtocol = &roundtable::Agents;
    let vote = p.endpoints().iter().find(|e| e.name == "vote").unwrap();
    let analyze = p.endpoints().iter().find(|e| e.name == "analyze").unwrap();
    let r = Requests::new(
        vec![
            parse("null-bytes@vote:50%", p).unwrap(),
            parse("hang@challenge", p).unwrap(),
        ],
        "beta",
        1,
    );
    let body = br#"{"task_id":"t1","content":"x"}"#;
    let bent = (0..100)
        .filter(|_| r.bend(p, vote, "beta", body).is_some())
        .count();
    assert!((25..75).contains(&bent), "{bent} of 100");
    assert!(
        r.bend(p, analyze, "beta", body).is_none(),
        "not its endpoint"
    );
    let case = bent_case([("beta", &r)]).unwrap();
    assert_eq!(case.status, Status::Pass, "{case:?}");
    assert!(
        case.message.contains("hang@challenge bent no request"),
        "{}",
        case.message
    );
    let none = Requests::new(vec![parse("hang", p).unwrap()], "beta", 1);
    let case = bent_case([("beta", &none)]).unwrap();
    assert_eq!(case.status, Status::Skip);
    assert!(bent_case([("beta", &Requests::new(vec![], "beta", 1))]).is_none());
}

/// Where the platform's requests are not bent (the Librarian's clients, the connector's
/// server), a request fault is a usage error saying so and naming what can be bent there.
#[test]
fn a_request_fault_where_requests_are_not_bent_is_refused_saying_so() {
    for (args, needle) in [
        (
            vec!["--protocol", "librarian", "--server", "http://127.0.0.1:9"],
            "the clients' requests are not bent for --protocol librarian",
        ),
        (
            vec!["--protocol", "connector", "--agent", "a=http://127.0.0.1:9"],
            "the server's forwards are not bent for --protocol connector",
        ),
    ] {
        let mut all = vec!["proxy"];
        all.extend(args);
        all.extend(["--fault", "a=request:null-bytes"]);
        let out = support::tck_within(&all, std::time::Duration::from_secs(60));
        let said = support::text(&out);
        assert_eq!(out.status.code(), Some(2), "{all:?}: {said}");
        assert!(
            said.contains(&format!("--fault a=request:null-bytes: {needle}")),
            "{all:?}: {said}"
        );
    }
}
