//! `agent-tck proxy --protocol librarian --server URL` before a Librarian of our own (the
//! reference, with its switchable flaws, or the mock Librarian with a script of faults) and the
//! example agent client of `librarian_client.rs` (with its switchable flaws), pointed at the
//! proxy: the server's answers are judged by the rules the fleet holds every answer to and
//! blamed on the platform, each client's requests by the mock Librarian's client rules and
//! blamed on that client; a recording judged again gives the live verdicts.

use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

use agent_tck::judge::record::read_recording;
use agent_tck::protocols::librarian::mock::Script;
use agent_tck::protocols::librarian::model;
use agent_tck::protocols::librarian::proxied::Proxied;
use agent_tck::protocols::librarian::reference::{self, Flaws, Librarian};
use agent_tck::proxy::server::{
    judge, start, ProxiedServer, RunningServer, ServerFault, ServerSettings,
};
use agent_tck::proxy::settings::RunSettings;
use agent_tck::report::{Exit, Report, Status};
use agent_tck::transport::http::BaseUrl;

use crate::librarian_client::{Client, Flaws_};
use crate::support::{self, TempDir, SEED};

/// The example client's bearer, given to the proxy as its key.
const KEY: &str = "example-token";
/// The example client's agent_id: its party.
const AGENT: &str = "example-agent";

async fn proxy_before(
    server: &str,
    keys: &[(&str, &str)],
    record: Option<String>,
) -> RunningServer {
    proxy_with(server, keys, record, Vec::new()).await
}

async fn proxy_with(
    server: &str,
    keys: &[(&str, &str)],
    record: Option<String>,
    faults: Vec<ServerFault>,
) -> RunningServer {
    start(ServerSettings {
        protocol: "librarian",
        proxied: &Proxied,
        server: BaseUrl::parse(server).unwrap(),
        keys: keys
            .iter()
            .map(|(n, k)| (n.to_string(), k.to_string()))
            .collect(),
        faults,
        listen: SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
        timeout: Duration::from_secs(30),
        duration: None,
        record: record.map(Into::into),
        seed: SEED,
        strict: false,
        log: false,
    })
    .await
    .expect("the proxy starts")
}

fn client(proxy: &RunningServer, flaws: Flaws_) -> Client {
    Client {
        base: BaseUrl::parse(&proxy.url()).unwrap(),
        flaws,
        n: 0,
    }
}

fn status_of(report: &Report, id: &str) -> Status {
    support::case(report, id).status
}

fn failing(report: &Report) -> Vec<&str> {
    support::failing(report)
        .into_iter()
        .map(|(id, _)| id)
        .collect()
}

/// The mock Librarian with the script of every decision and fault, the example client with
/// `flaws` making `changes` changes through the proxy; the proxy's report.
async fn behind_the_mock(flaws: Flaws_, changes: usize, record: Option<String>) -> Report {
    let script = Script::parse(
        "mocks/librarian-decisions.yaml",
        include_str!("../../mocks/librarian-decisions.yaml"),
    )
    .unwrap();
    let served = reference::serve(Librarian::new(Vec::new(), Flaws::default()).mocking(script))
        .await
        .unwrap();
    let proxy = proxy_before(&served.url, &[(AGENT, KEY)], record).await;
    let mut c = client(&proxy, flaws);
    c.call("GET", "/agent/capabilities", None).await;
    for _ in 0..changes {
        c.change().await;
    }
    let report = proxy.end("the test's end".into()).await.unwrap();
    served.stop().await;
    report
}

/// A conforming Librarian (the reference) and the conforming example client: nothing fails,
/// and both parties were judged on evidence.
#[deadline::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conforming_librarian_with_a_conforming_client_passes_on_evidence() {
    let served = reference::serve(Librarian::new(Vec::new(), Flaws::default()))
        .await
        .unwrap();
    let proxy = proxy_before(&served.url, &[(AGENT, KEY)], None).await;
    let mut c = client(&proxy, Flaws_::default());
    for _ in 0..2 {
        c.change().await;
    }
    let report = proxy.end("the test's end".into()).await.unwrap();
    served.stop().await;
    assert_eq!(
        report.exit_code(),
        Exit::Passed,
        "{:#?}",
        support::failing(&report)
    );
    for id in [
        "proxy.clients-reached",
        "fleet.no-5xx",
        "fleet.answers-valid",
        "fleet.answers-expected",
        "example-agent/client.request-schema",
        "example-agent/client.bearer",
        "example-agent/client.reports",
    ] {
        let case = support::case(&report, id);
        assert_eq!(case.status, Status::Pass, "{id}: {}", case.message);
        assert!(case.evidence.as_ref().is_some_and(|e| e.judged > 0), "{id}");
    }
    let groups: Vec<&str> = report.cases.iter().map(|c| c.group.as_str()).collect();
    for party in ["proxy", "platform", "agent example-agent"] {
        assert!(groups.contains(&party), "{party}: {groups:?}");
    }
}

/// The mock Librarian's scripted 500 is the server's failure (fleet.no-5xx, the platform's),
/// never the client's: the example client, which retries it within the limit, passes every
/// rule of its own — as the mock's own judge has it — and is judged on evidence for each
/// occasion the script gave it (the 429, the rejection, the escalation).
#[deadline::test(secs = 300, flavor = "multi_thread", worker_threads = 2)]
async fn a_servers_5xx_is_blamed_on_the_server_and_the_client_is_judged_as_the_mock_judges_it() {
    let _heavy = support::heavy().await;
    let report = behind_the_mock(Flaws_::default(), 6, None).await;
    assert_eq!(failing(&report), ["fleet.no-5xx"], "{:#?}", report.cases);
    let no5xx = support::case(&report, "fleet.no-5xx");
    assert_eq!(no5xx.group, "platform");
    assert!(
        no5xx.message.contains("POST /agent/request answered 500"),
        "{}",
        no5xx.message
    );
    for rule in [
        "client.backs-off",
        "client.retries",
        "client.polling",
        "client.no-unchanged-resend",
        "client.waits-for-human",
    ] {
        let id = format!("{AGENT}/{rule}");
        assert_eq!(
            status_of(&report, &id),
            Status::Pass,
            "{id}: {:#?}",
            support::case(&report, &id)
        );
    }
}

/// Each flaw of the client is caught behind the proxy by the same rule the mock Librarian
/// catches it with, and blamed on that client; anything else that fails is the server's.
#[deadline::test(secs = 600, flavor = "multi_thread", worker_threads = 2)]
async fn each_flawed_client_is_caught_by_its_rule_and_named() {
    let _heavy = support::heavy().await;
    for (flaws, rule, needle) in [
        (
            Flaws_ {
                ignores_429: true,
                ..Default::default()
            },
            "client.backs-off",
            "after a 429 with Retry-After: 1",
        ),
        (
            Flaws_ {
                reports_escalated_early: true,
                ..Default::default()
            },
            "client.waits-for-human",
            "while it awaited a human decision (ESCALATED; no status of it had shown a decision yet)",
        ),
        (
            Flaws_ {
                oversized_content: true,
                ..Default::default()
            },
            "client.content-size",
            "content of 102401 bytes",
        ),
    ] {
        let report = behind_the_mock(flaws, 6, None).await;
        let id = format!("{AGENT}/{rule}");
        let clients: Vec<&str> = failing(&report)
            .into_iter()
            .filter(|f| f.contains('/'))
            .collect();
        assert_eq!(clients, [id.as_str()], "{flaws:?}: {:#?}", support::failing(&report));
        // What else failed is the server's (its scripted 500), blamed on the platform.
        for case in report.cases.iter().filter(|c| c.status == Status::Fail && !c.id.contains('/')) {
            assert_eq!(case.group, "platform", "{flaws:?}: {}: {}", case.id, case.message);
        }
        let case = support::case(&report, &id);
        assert_eq!(case.group, format!("agent {AGENT}"));
        assert!(case.message.contains(needle), "{flaws:?}: {}", case.message);
    }
}

/// A client without a bearer, and one whose bearer is not the key the proxy was told for it,
/// break client.bearer, each under its own name; no key nor bearer is in the report or the
/// recording.
#[deadline::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_or_wrong_bearer_is_the_clients_and_the_key_is_never_shown() {
    const OWN_KEY: &str = "the-example-agents-own-key";
    let served = reference::serve(Librarian::new(Vec::new(), Flaws::default()))
        .await
        .unwrap();
    let dir = TempDir::new("proxy-librarian-key");
    let har = dir.path("run.har");
    let proxy = proxy_before(&served.url, &[(AGENT, OWN_KEY)], Some(har.clone())).await;
    let bare = client(
        &proxy,
        Flaws_ {
            no_token: true,
            ..Default::default()
        },
    );
    bare.request(&model::request("bare-agent", "QUERY", 1))
        .await;
    // The example client's bearer is not the key the proxy was told for it.
    let c = client(&proxy, Flaws_::default());
    c.request(&model::request(AGENT, "QUERY", 2)).await;
    let report = proxy.end("the test's end".into()).await.unwrap();
    served.stop().await;
    let bare = support::case(&report, "bare-agent/client.bearer");
    assert_eq!(bare.status, Status::Fail, "{}", bare.message);
    assert!(
        bare.message.contains("no Authorization: Bearer token"),
        "{}",
        bare.message
    );
    let wrong = support::case(&report, &format!("{AGENT}/client.bearer"));
    assert_eq!(wrong.status, Status::Fail, "{}", wrong.message);
    assert!(
        wrong.message.contains("not the key given for it"),
        "{}",
        wrong.message
    );
    let json = serde_json::to_string(&report).unwrap();
    let recorded = std::fs::read_to_string(&har).unwrap();
    for secret in [OWN_KEY, KEY] {
        assert!(!json.contains(secret), "the report holds {secret}");
        assert!(!recorded.contains(secret), "the recording holds {secret}");
    }
}

/// A Librarian that answers a body that is not JSON 500 (crashes_on_malformed_json) and a 429
/// without Retry-After (silent_429): the 500 and the silent 429 are the platform's; the body
/// that is not JSON and the flood past 60 a minute are the client's. The recording judged
/// again gives the same verdicts.
#[deadline::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_and_client_flaws_are_each_blamed_on_their_party_live_and_recorded() {
    let flaws = Flaws {
        crashes_on_malformed_json: true,
        silent_429: true,
        ..Flaws::default()
    };
    let served = reference::serve(Librarian::new(Vec::new(), flaws))
        .await
        .unwrap();
    let dir = TempDir::new("proxy-librarian-flaws");
    let record = dir.path("run.jsonl");
    let proxy = proxy_before(&served.url, &[(AGENT, KEY)], Some(record.clone())).await;
    let c = client(&proxy, Flaws_::default());
    for n in 0..62 {
        c.call(
            "POST",
            "/agent/request",
            Some(&model::request(AGENT, "QUERY", n)),
        )
        .await;
    }
    // No body to name it: its bearer, learned as example-agent's, does.
    c.call("POST", "/agent/request", None).await;
    let report = proxy.end("the test's end".into()).await.unwrap();
    served.stop().await;
    for (id, group) in [
        ("fleet.no-5xx", "platform"),
        ("fleet.retry-after", "platform"),
        ("example-agent/client.request-schema", "agent example-agent"),
        ("example-agent/client.rate", "agent example-agent"),
    ] {
        let case = support::case(&report, id);
        assert_eq!(
            (case.status, case.group.as_str()),
            (Status::Fail, group),
            "{id}: {}",
            case.message
        );
    }
    assert!(support::case(&report, "fleet.retry-after")
        .message
        .contains("a 429 with neither Retry-After nor rate-limit headers"));

    let read = read_recording(std::path::Path::new(&record)).unwrap();
    assert!(!read.cut);
    let settings = RunSettings::of(&read.entries).unwrap();
    let again = judge(&read.entries, &Proxied, &settings).unwrap();
    let statuses = |cases: &[agent_tck::report::CaseResult]| -> Vec<(String, Status)> {
        cases.iter().map(|c| (c.id.clone(), c.status)).collect()
    };
    assert_eq!(statuses(&again), statuses(&report.cases));
}

/// No client came through the proxy: the precondition fails (nobody's fault but the set-up:
/// the proxy's party), and every rule skips saying there was nothing.
#[deadline::test]
async fn no_traffic_judges_nothing_and_says_so() {
    let proxy = proxy_before("http://127.0.0.1:9", &[(AGENT, KEY)], None).await;
    let report = proxy.end("the test's end".into()).await.unwrap();
    assert_eq!(report.exit_code(), Exit::Failed);
    assert_eq!(failing(&report), ["proxy.clients-reached"]);
    assert_eq!(
        support::case(&report, "proxy.clients-reached").group,
        "proxy"
    );
    let silent: Vec<_> = report
        .cases
        .iter()
        .filter(|c| c.id != "proxy.clients-reached")
        .collect();
    assert!(!silent.is_empty());
    for c in silent {
        assert_eq!(c.status, Status::Skip, "{}: {}", c.id, c.message);
        assert!(
            c.message.contains("no request") || c.message.contains("came through the proxy"),
            "{}: {}",
            c.id,
            c.message
        );
    }
}

/// The server dies mid-run: the requests after it are the server's failures (fleet.no-5xx,
/// said once in a note, when and after what), never the client's.
#[deadline::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_dies_is_blamed_not_its_clients() {
    let served = reference::serve(Librarian::new(Vec::new(), Flaws::default()))
        .await
        .unwrap();
    let proxy = proxy_before(&served.url, &[(AGENT, KEY)], None).await;
    let c = client(&proxy, Flaws_::default());
    assert!(c
        .request(&model::request(AGENT, "QUERY", 1))
        .await
        .is_some());
    served.stop().await;
    assert!(c
        .request(&model::request(AGENT, "QUERY", 2))
        .await
        .is_none());
    let report = proxy.end("the test's end".into()).await.unwrap();
    assert_eq!(
        failing(&report),
        ["fleet.no-5xx"],
        "{:#?}",
        support::failing(&report)
    );
    let no5xx = support::case(&report, "fleet.no-5xx");
    assert!(no5xx.message.contains("no answer"), "{}", no5xx.message);
    assert!(
        report
            .notes
            .iter()
            .any(|n| n.contains("the server stopped answering") && n.contains("after 1 answer")),
        "{:?}",
        report.notes
    );
}

/// Faults on the real server's answers: a 429 given to a client that does not wait breaks its
/// client.backs-off; a 500 given to a client that retries within the limit passes its
/// client.retries; neither is the server's (it answered 200: fleet.no-5xx holds, and no 429 of
/// its own was there to judge). The recording keeps what each client got: judged again, the
/// same verdicts.
#[deadline::test(flavor = "multi_thread", worker_threads = 2)]
async fn faults_on_real_answers_are_judged_on_the_client_that_got_them_never_the_server() {
    let served = reference::serve(Librarian::new(Vec::new(), Flaws::default()))
        .await
        .unwrap();
    let fault = |client: &str, text: &str| ServerFault {
        client: Some(client.to_string()),
        at: Some("/agent/request".into()),
        share: 1.0,
        fault: Proxied.fault(text).unwrap(),
        source: format!("{client}={text}@/agent/request"),
    };
    let dir = TempDir::new("proxy-librarian-faults");
    let record = dir.path("run.har");
    let faults = vec![fault(AGENT, "429:1"), fault("polite", "500")];
    // No key: each client is named by the agent_id it speaks for (both send the same bearer).
    let proxy = proxy_with(&served.url, &[], Some(record.clone()), faults).await;
    let hasty = client(
        &proxy,
        Flaws_ {
            ignores_429: true,
            ..Default::default()
        },
    );
    assert!(hasty
        .request(&model::request(AGENT, "QUERY", 1))
        .await
        .is_none());
    let polite = client(&proxy, Flaws_::default());
    assert!(polite
        .request(&model::request("polite", "QUERY", 2))
        .await
        .is_none());
    let report = proxy.end("the test's end".into()).await.unwrap();
    served.stop().await;
    let backs_off = support::case(&report, &format!("{AGENT}/client.backs-off"));
    assert_eq!(backs_off.status, Status::Fail, "{}", backs_off.message);
    assert!(
        backs_off
            .message
            .contains("after a 429 with Retry-After: 1"),
        "{}",
        backs_off.message
    );
    let retries = support::case(&report, "polite/client.retries");
    assert_eq!(retries.status, Status::Pass, "{}", retries.message);
    assert!(retries.evidence.as_ref().is_some_and(|e| e.judged > 0));
    assert_eq!(status_of(&report, "fleet.no-5xx"), Status::Pass);
    assert_eq!(status_of(&report, "fleet.retry-after"), Status::Skip);
    let applied = support::case(&report, "proxy.faults-applied");
    assert_eq!(applied.status, Status::Pass, "{}", applied.message);
    assert!(
        applied.message.starts_with("8 answers bent"),
        "{}",
        applied.message
    );

    let read = read_recording(std::path::Path::new(&record)).unwrap();
    let settings = RunSettings::of(&read.entries).unwrap();
    let again = judge(&read.entries, &Proxied, &settings).unwrap();
    let statuses = |cases: &[agent_tck::report::CaseResult]| -> Vec<(String, Status)> {
        cases.iter().map(|c| (c.id.clone(), c.status)).collect()
    };
    assert_eq!(statuses(&again), statuses(&report.cases));
}
