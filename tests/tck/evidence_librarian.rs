//! Every verdict earned (librarian): peers that give nothing to judge, break one rule, or conform.
//!
//! The peer that gives nothing to judge is a server with none of the routes (404
//! `{"detail":"Not Found"}` to everything, as a web framework answers a route it lacks): it once
//! passed 21 cases of `probe librarian`, 17 of them MUST. Only the cases that judge whether an
//! endpoint answers its own valid request may speak of it (they fail); every other case skips,
//! saying what would exercise it.

use std::time::Duration;

use agent_tck::protocols::librarian::commands::{reference, reference_registry, reference_tokens};
use agent_tck::protocols::librarian::fleet::{self, Fleet};
use agent_tck::protocols::librarian::probe::{run, Settings};
use agent_tck::protocols::librarian::reference::Flaws;
use agent_tck::report::{Level, Report, Status, NO_EVIDENCE, NO_REASON};
use agent_tck::transport::http::BaseUrl;
use serde_json::{json, Value};

fn settings(url: &str, only: &[&str]) -> Settings {
    Settings {
        base: BaseUrl::parse(url).unwrap(),
        tokens: reference_tokens(),
        timeout: Duration::from_secs(10),
        max_body: 5_000_000,
        common: agent_tck::probe::args::Common {
            seed: 3,
            only: only.iter().map(|s| s.to_string()).collect(),
            strict: false,
            ..Default::default()
        },
        quick: false,
        allow_deviations: Some(false),
        registry: Some(reference_registry()),
    }
}

async fn probe(url: &str, only: &[&str]) -> Report {
    tokio::time::timeout(Duration::from_secs(180), run(&settings(url, only), &|_| {}))
        .await
        .expect("the probe ends within its deadlines")
        .unwrap()
}

fn case<'a>(report: &'a Report, id: &str) -> &'a agent_tck::report::CaseResult {
    report
        .cases
        .iter()
        .find(|c| c.id == id)
        .unwrap_or_else(|| panic!("no case {id}: {:#?}", report.cases))
}

fn ids_with(report: &Report, status: Status) -> Vec<&str> {
    report
        .cases
        .iter()
        .filter(|c| c.status == status)
        .map(|c| c.id.as_str())
        .collect()
}

/// MUST and SHOULD cases that passed.
fn passed_that_matter(report: &Report) -> Vec<&str> {
    report
        .cases
        .iter()
        .filter(|c| c.status == Status::Pass && c.level != Level::May)
        .map(|c| c.id.as_str())
        .collect()
}

/// Words of a reason that says what would exercise the case.
const EXERCISE_WORDS: [&str; 6] = ["exercise", "give ", "add ", "point ", "have ", "start it"];

/// Every skip has a reason of its own (never the report's sentinels), which says what would
/// exercise the case.
fn assert_skips_explain(report: &Report) {
    for c in report.cases.iter().filter(|c| c.status == Status::Skip) {
        assert!(
            !c.message.starts_with(NO_EVIDENCE) && !c.message.starts_with(NO_REASON),
            "{}: {}",
            c.id,
            c.message
        );
        assert!(
            EXERCISE_WORDS.iter().any(|w| c.message.contains(w)),
            "{}: the skip does not say what would exercise it: {}",
            c.id,
            c.message
        );
    }
}

#[deadline::test(flavor = "multi_thread", worker_threads = 2)]
async fn probe_against_a_server_without_the_routes_passes_nothing_and_each_skip_says_why() {
    let server = crate::support::no_routes().await;
    let report = probe(&server.url(), &[]).await;
    server.stop().await;
    assert_eq!(passed_that_matter(&report), Vec::<&str>::new());
    // The cases that judge whether an endpoint answers its own valid request fail, naming the
    // 404; nothing else does.
    assert_eq!(
        ids_with(&report, Status::Fail),
        vec![
            "request.approval",
            "request.query",
            "request.validate",
            "context.query",
            "capabilities.get"
        ]
    );
    for (id, message) in crate::support::failing(&report) {
        assert!(message.contains("answered 404"), "{id}: {message}");
    }
    assert_eq!(report.exit_code(), 1);
    assert_skips_explain(&report);
    // A refusal of a faulty request says nothing while the valid one gets a 404.
    for id in [
        "fields.approval-without-content",
        "input.malformed-json",
        "limits.content-under",
        "limits.content-over",
        "auth.no-token",
        "registry.target-outside",
    ] {
        let c = case(&report, id);
        assert_eq!(c.status, Status::Skip, "{id}: {}", c.message);
        assert!(
            c.message
                .contains("a valid APPROVAL to POST /agent/request was answered 404")
                && c.message.contains("(request.approval judges that)"),
            "{id}: {}",
            c.message
        );
    }
    let unknown = case(&report, "status.unknown");
    assert_eq!(unknown.status, Status::Skip);
    assert!(
        unknown.message.contains("a valid QUERY was answered 404"),
        "{}",
        unknown.message
    );
    for id in ["request.within-timeout", "request.no-5xx"] {
        let c = case(&report, id);
        assert_eq!(c.status, Status::Skip, "{id}");
        assert!(
            c.message
                .starts_with("not judged: no answers from endpoints that answered 2xx"),
            "{id}: {}",
            c.message
        );
    }
    assert!(
        case(&report, "request.report")
            .message
            .contains("needs an approved APPROVAL first"),
        "{}",
        case(&report, "request.report").message
    );
}

#[deadline::test(flavor = "multi_thread", worker_threads = 2)]
async fn probe_librarian_on_the_command_line_exits_1_against_a_server_without_the_routes() {
    let server = crate::support::no_routes().await;
    let dir = crate::support::TempDir::new("evidence-librarian-cli");
    let json_path = dir.path("r.json");
    let url = server.url();
    let args = json_path.clone();
    let out = tokio::task::spawn_blocking(move || {
        crate::support::tck_within(
            &[
                "probe",
                "librarian",
                "--url",
                &url,
                "--quick",
                "--token",
                "claude-3=tck-token-claude-3",
                "--json",
                &args,
            ],
            Duration::from_secs(120),
        )
    })
    .await
    .unwrap();
    server.stop().await;
    assert_eq!(out.status.code(), Some(1), "{}", crate::support::text(&out));
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(&json_path).unwrap()).unwrap();
    for c in report["cases"].as_array().unwrap() {
        assert!(
            c["status"] != "pass" || c["level"] == "may",
            "{} passed against no routes: {c}",
            c["id"]
        );
        if c["status"] == "skip" {
            let message = c["message"].as_str().unwrap();
            assert!(
                EXERCISE_WORDS.iter().any(|w| message.contains(w)),
                "{}: {message}",
                c["id"]
            );
        }
    }
    assert_eq!(
        case_status(&report, "limits.content-under"),
        "skip",
        "the case that once passed on a 404"
    );
}

fn case_status(report: &Value, id: &str) -> String {
    crate::support::case_statuses(report)
        .into_iter()
        .find(|(i, _)| i == id)
        .map(|(_, s)| s)
        .unwrap_or_default()
}

/// Every kind of client the brief's no-routes server is to be held against, for a second.
fn fleet_file(url: &str) -> String {
    let t = reference_tokens();
    let (a1, t1, a2, t2) = (&t[0].0, &t[0].1, &t[1].0, &t[1].1);
    let mut text = format!(
        "protocol: librarian\nlibrarian:\n  url: {url}\n  duration: 1s\n  clients:\n    - {{ name: steady, agent: {a1}, token: {t1}, behavior: conforming, rate: 120/min }}\n    - {{ name: flood, agent: {a2}, token: {t2}, behavior: flood, rate: 6000/min }}\n"
    );
    for b in [
        "oversized",
        "missing-fields",
        "malformed-json",
        "wrong-token",
    ] {
        text.push_str(&format!(
            "    - {{ name: {b}-client, agent: {a2}, token: {t2}, behavior: {b}, rate: 120/min }}\n"
        ));
    }
    text
}

#[deadline::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_client_fleet_passes_nothing_against_a_server_without_the_routes() {
    let server = crate::support::no_routes().await;
    let fleet = Fleet::parse("fleet.yaml", &fleet_file(&server.url()), None).unwrap();
    let report = tokio::time::timeout(Duration::from_secs(60), fleet::run(&fleet, false, 1))
        .await
        .expect("the fleet ends");
    server.stop().await;
    assert_eq!(passed_that_matter(&report), Vec::<&str>::new());
    assert_eq!(
        ids_with(&report, Status::Pass),
        Vec::<&str>::new(),
        "not even the latency of 404s"
    );
    let failed = crate::support::failing(&report);
    assert_eq!(failed.len(), 1, "{failed:#?}");
    assert_eq!(failed[0].0, "fleet.conforming-served");
    assert!(
        failed[0].1.contains("steady (conforming): answered 404"),
        "{}",
        failed[0].1
    );
    assert_eq!(report.exit_code(), 1);
    assert_skips_explain(&report);
    for id in ["fleet.no-5xx", "fleet.refusals", "fleet.flood-limited"] {
        let c = case(&report, id);
        assert_eq!(c.status, Status::Skip, "{id}");
        assert!(
            c.message.contains("never answered as a Librarian")
                && c.message.contains("point --platform-url"),
            "{id}: {}",
            c.message
        );
    }
    assert!(
        case(&report, "fleet.capabilities-after")
            .message
            .contains("answered 404 before the fleet already"),
        "{}",
        case(&report, "fleet.capabilities-after").message
    );
}

#[deadline::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_fleet_judges_the_reference_on_evidence() {
    let served = reference(Flaws::default()).await.unwrap();
    let fleet = Fleet::parse("fleet.yaml", &fleet_file(&served.url), None).unwrap();
    let report = tokio::time::timeout(Duration::from_secs(60), fleet::run(&fleet, false, 1))
        .await
        .expect("the fleet ends");
    served.stop().await;
    assert_eq!(crate::support::failing(&report), vec![]);
    for c in &report.cases {
        assert_eq!(c.status, Status::Pass, "{}: {}", c.id, c.message);
        let e = c.evidence.as_ref().unwrap();
        assert!(e.judged > 0 && !e.of.is_empty(), "{}: {e:?}", c.id);
    }
    // 6000/min for a second: about 100 requests, more than 60 within the minute.
    assert_eq!(
        case(&report, "fleet.flood-limited")
            .evidence
            .as_ref()
            .unwrap()
            .of,
        "flooding clients"
    );
    assert_eq!(
        case(&report, "fleet.capabilities-after").message,
        "200, as before the fleet"
    );
}

#[deadline::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_too_slow_to_pass_the_limit_is_not_judged() {
    let served = reference(Flaws::default()).await.unwrap();
    let t = reference_tokens();
    let text = format!(
        "protocol: librarian\nlibrarian:\n  url: {}\n  duration: 1s\n  clients:\n    - {{ name: slowflood, agent: {}, token: {}, behavior: flood, rate: 300/min }}\n",
        served.url, t[1].0, t[1].1
    );
    let fleet = Fleet::parse("fleet.yaml", &text, None).unwrap();
    let report = fleet::run(&fleet, false, 1).await;
    served.stop().await;
    let flood = case(&report, "fleet.flood-limited");
    assert_eq!(flood.status, Status::Skip, "{}", flood.message);
    assert!(
        flood
            .message
            .contains("no client sent more than 60 requests within a minute"),
        "{}",
        flood.message
    );
    let served_case = case(&report, "fleet.conforming-served");
    assert_eq!(served_case.status, Status::Skip);
    assert!(
        served_case
            .message
            .contains("add one (`behavior: conforming`)"),
        "{}",
        served_case.message
    );
}

/// The reference Librarian passes every case on evidence that says how many of what it judged.
#[deadline::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reference_passes_on_evidence() {
    let served = reference(Flaws::default()).await.unwrap();
    let report = probe(
        &served.url,
        &["request.*", "status.*", "fields.*", "limits.*", "auth.*"],
    )
    .await;
    served.stop().await;
    for c in &report.cases {
        assert_eq!(c.status, Status::Pass, "{}: {}", c.id, c.message);
        let e = c.evidence.as_ref().unwrap();
        assert!(e.judged > 0 && !e.of.is_empty(), "{}: {e:?}", c.id);
    }
    let e = |id: &str| {
        let e = case(&report, id).evidence.clone().unwrap();
        (e.judged, e.of)
    };
    assert_eq!(
        e("request.approval"),
        (1, "valid APPROVAL requests answered".to_string())
    );
    assert_eq!(
        e("fields.report-without-completed"),
        (1, "REPORT requests without completed".to_string())
    );
    assert_eq!(
        e("limits.content-under"),
        (1, "APPROVALs with content at 102400 bytes".to_string())
    );
    assert_eq!(
        e("status.unknown"),
        (1, "lookups of an unknown request_id".to_string())
    );
    let (answers, of) = e("request.within-timeout");
    assert!(answers > 20, "{answers} {of}");
    let (refusals, of) = e("fields.named");
    assert_eq!(
        (refusals, of.as_str()),
        (9, "refusals for a missing field"),
        "one per fields.* case"
    );
}

/// A Librarian without the status route: only status.lookup, which judges the endpoint, fails;
/// the other cases about it have nothing to judge and say so.
#[deadline::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_status_route_fails_its_own_case_and_skips_the_rest() {
    let served = reference(Flaws::named("no-status-endpoint").unwrap())
        .await
        .unwrap();
    let report = probe(&served.url, &["status.*", "lifecycle.*"]).await;
    served.stop().await;
    assert_eq!(ids_with(&report, Status::Fail), vec!["status.lookup"]);
    assert!(
        case(&report, "status.lookup")
            .message
            .contains("answered 404"),
        "{}",
        case(&report, "status.lookup").message
    );
    assert_eq!(
        ids_with(&report, Status::Skip),
        vec![
            "status.unknown",
            "status.no-leak",
            "lifecycle.report-completes",
            "lifecycle.escalation"
        ]
    );
    for id in ids_with(&report, Status::Skip) {
        let m = &case(&report, id).message;
        assert!(
            m.contains(
                "GET /agent/status/{request_id} of the agent's own request was answered 404 \
                 (status.lookup judges that)"
            ),
            "{id}: {m}"
        );
    }
    assert_skips_explain(&report);
}

/// A mock Librarian with `steps` as its script, and a client's way to it.
struct MockSession {
    served: agent_tck::protocols::librarian::reference::Served,
    base: BaseUrl,
}

impl MockSession {
    async fn start(steps: &[&str]) -> MockSession {
        use agent_tck::protocols::librarian::mock::{Script, Step};
        let steps = steps.iter().map(|s| Step::parse(s).unwrap()).collect();
        MockSession::scripted(Script::new(steps)).await
    }

    async fn scripted(script: agent_tck::protocols::librarian::mock::Script) -> MockSession {
        use agent_tck::protocols::librarian::reference::{self, Librarian};
        let served = reference::serve(Librarian::new(Vec::new(), Flaws::default()).mocking(script))
            .await
            .unwrap();
        let base = BaseUrl::parse(&served.url).unwrap();
        MockSession { served, base }
    }

    /// POSTs `body` to /agent/request with a token; the answer's status.
    async fn post(&self, body: &Value) -> u16 {
        use agent_tck::transport::http::{send, Limits, Request};
        let request = Request {
            method: "POST".into(),
            path: "/agent/request".into(),
            headers: vec![
                ("content-type".into(), "application/json".into()),
                ("authorization".into(), "Bearer tck-evidence-client".into()),
            ],
            body: body.to_string().into(),
        };
        let limits = Limits {
            deadline: Duration::from_secs(10),
            ..Limits::default()
        };
        send(&self.base, &request, limits).await.unwrap().status
    }

    /// POSTs `body` to /agent/request with a token; the answer's status and JSON.
    async fn ask(&self, body: &Value) -> (u16, Value) {
        self.call("POST", "/agent/request", Some(body)).await
    }

    /// One request with the client's token: the answer's status and JSON (null if none).
    async fn call(&self, method: &str, path: &str, body: Option<&Value>) -> (u16, Value) {
        use agent_tck::transport::http::{send, Limits, Request};
        let request = Request {
            method: method.into(),
            path: path.into(),
            headers: vec![
                ("content-type".into(), "application/json".into()),
                ("authorization".into(), "Bearer tck-evidence-client".into()),
            ],
            body: body.map(|b| b.to_string()).unwrap_or_default().into(),
        };
        let limits = Limits {
            deadline: Duration::from_secs(10),
            ..Limits::default()
        };
        let r = send(&self.base, &request, limits).await.unwrap();
        (
            r.status,
            serde_json::from_slice(&r.body).unwrap_or(Value::Null),
        )
    }

    async fn verdicts(self) -> Vec<agent_tck::report::CaseResult> {
        let cases = self.served.librarian.judge.as_ref().unwrap().cases();
        self.served.stop().await;
        cases
    }
}

fn verdict<'a>(
    cases: &'a [agent_tck::report::CaseResult],
    id: &str,
) -> &'a agent_tck::report::CaseResult {
    cases.iter().find(|c| c.id == id).unwrap()
}

#[deadline::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_mock_librarian_judges_what_the_client_exercised_and_names_what_would_exercise_the_rest(
) {
    // No request: every rule skips, saying so.
    let idle = MockSession::start(&["decide"]).await.verdicts().await;
    assert_eq!(idle.len(), 11);
    for c in &idle {
        assert_eq!(c.status, Status::Skip, "{}", c.id);
        assert!(
            c.message
                .contains("no request reached the mock Librarian; point the agent client"),
            "{}: {}",
            c.id,
            c.message
        );
    }
    // Two valid QUERYs, decided by the rules: the schema, the token and the rate are judged on
    // them; nothing else was exercised, and each skip names what would.
    let session = MockSession::start(&["decide"]).await;
    for n in 0..2 {
        assert_eq!(
            session
                .post(&agent_tck::protocols::librarian::model::request(
                    "example-agent",
                    "QUERY",
                    n
                ))
                .await,
            200
        );
    }
    let cases = session.verdicts().await;
    for (id, of) in [
        ("client.request-schema", "requests to /agent/request"),
        ("client.bearer", "requests"),
        ("client.rate", "requests to /agent/request"),
    ] {
        let c = verdict(&cases, id);
        assert_eq!(c.status, Status::Pass, "{id}: {}", c.message);
        assert_eq!(
            c.evidence.as_ref().map(|e| (e.judged, e.of.as_str())),
            Some((2, of)),
            "{id}"
        );
    }
    for (id, would) in [
        ("client.backs-off", "add a `429:SECS` step to --script"),
        ("client.polling", "add an `escalate:DUR` step to --script"),
        (
            "client.retries",
            "add a `500`, `reset`, `malformed-json` or `429:SECS` step",
        ),
        ("client.reports", "no APPROVAL was approved"),
        (
            "client.no-unchanged-resend",
            "add a `reject` step to --script",
        ),
    ] {
        let c = verdict(&cases, id);
        assert_eq!(c.status, Status::Skip, "{id}");
        assert!(c.message.contains(would), "{id}: {}", c.message);
    }
}

#[deadline::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_mock_librarian_judges_retries_and_resends_on_their_occasions() {
    use agent_tck::protocols::librarian::model::request;
    // Two 500s, retried once: held, on two failures answered.
    let session = MockSession::start(&["500"]).await;
    let body = request("example-agent", "APPROVAL", 1);
    for _ in 0..2 {
        assert_eq!(session.post(&body).await, 500);
    }
    let cases = session.verdicts().await;
    let retries = verdict(&cases, "client.retries");
    assert_eq!(retries.status, Status::Pass, "{}", retries.message);
    assert_eq!(
        retries.evidence.as_ref().map(|e| e.judged),
        Some(2),
        "{retries:?}"
    );
    // The same request sent five times after 500s: four retries, one too many.
    let session = MockSession::start(&["500"]).await;
    for _ in 0..5 {
        session.post(&body).await;
    }
    let cases = session.verdicts().await;
    let retries = verdict(&cases, "client.retries");
    assert_eq!(retries.status, Status::Fail);
    assert!(
        retries
            .message
            .contains("token #1: the same request sent 5 times"),
        "{}",
        retries.message
    );
    // A rejected request sent again unchanged, then changed.
    let session = MockSession::start(&["reject"]).await;
    let mut body = request("example-agent", "APPROVAL", 2);
    session.post(&body).await;
    session.post(&body).await;
    body["rationale"] = json!("fixed after the rejection");
    session.post(&body).await;
    let cases = session.verdicts().await;
    let resend = verdict(&cases, "client.no-unchanged-resend");
    assert_eq!(resend.status, Status::Fail);
    assert_eq!(resend.evidence.as_ref().map(|e| e.judged), Some(2));
    assert!(
        resend
            .message
            .contains("1 of 2 requests after a rejection break the rule"),
        "{}",
        resend.message
    );
}

/// The reference Librarian with some answers replaced: `tweak` answers the requests it wants
/// to (a departure from the document), the reference the rest.
struct Tweaked<F> {
    inner: agent_tck::protocols::librarian::reference::Librarian,
    tweak: F,
}

impl<F> agent_tck::mock::http1::Handler for Tweaked<F>
where
    F: Fn(&agent_tck::mock::http1::Request) -> Option<agent_tck::mock::http1::Response>
        + Send
        + Sync
        + 'static,
{
    type Note = ();

    async fn handle(
        &self,
        request: agent_tck::mock::http1::Request,
    ) -> (agent_tck::mock::http1::Plan, ()) {
        match (self.tweak)(&request) {
            Some(answer) => (agent_tck::mock::http1::Plan::immediate(answer), ()),
            None => self.inner.handle(request).await,
        }
    }

    async fn finish(&self, _: (), _: agent_tck::mock::http1::Delivered) {}
}

/// Probes (the cases `only`) the reference Librarian with `tweak`'s answers in place.
async fn probe_tweaked<F>(only: &[&str], tweak: F) -> Report
where
    F: Fn(&agent_tck::mock::http1::Request) -> Option<agent_tck::mock::http1::Response>
        + Send
        + Sync
        + 'static,
{
    use agent_tck::protocols::librarian::reference::Librarian;
    let handler = Tweaked {
        inner: Librarian::new(reference_registry(), Flaws::default()),
        tweak,
    };
    let running =
        agent_tck::mock::http1::spawn(std::sync::Arc::new(handler), ([127, 0, 0, 1], 0).into())
            .await
            .unwrap();
    let report = probe(&running.url(), only).await;
    running.stop().await;
    report
}

fn json_answer(status: u16, body: Value) -> Option<agent_tck::mock::http1::Response> {
    Some(agent_tck::mock::http1::Response::new(
        status,
        "application/json",
        body.to_string().into_bytes(),
    ))
}

/// The body of a POST, when it is JSON.
fn body_of(r: &agent_tck::mock::http1::Request) -> Option<Value> {
    serde_json::from_slice(&r.body).ok()
}

#[deadline::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_request_id_answered_200_fails_status_unknown() {
    let report = probe_tweaked(&["status.*"], |r| {
        r.path()
            .starts_with("/agent/status/tck-no-such-request-")
            .then(|| json!({"request_id": "x", "status": "APPROVED"}))
            .and_then(|v| json_answer(200, v))
    })
    .await;
    assert_eq!(ids_with(&report, Status::Fail), vec!["status.unknown"]);
    assert!(
        case(&report, "status.unknown")
            .message
            .contains("answered 200; expected 404"),
        "{}",
        case(&report, "status.unknown").message
    );
    assert_eq!(
        case(&report, "status.lookup")
            .evidence
            .as_ref()
            .unwrap()
            .judged,
        1
    );
}

#[deadline::test(flavor = "multi_thread", worker_threads = 2)]
async fn content_under_the_limit_refused_for_its_size_fails_and_refused_for_nothing_named_skips() {
    let under = |r: &agent_tck::mock::http1::Request| {
        body_of(r).and_then(|b| b["content"].as_str().map(str::len)) == Some(102_400)
    };
    let report = probe_tweaked(&["limits.content-under"], move |r| {
        under(r).then(|| agent_tck::mock::http1::Response::json_error(413, "payload too large"))
    })
    .await;
    let c = case(&report, "limits.content-under");
    assert_eq!(c.status, Status::Fail, "{}", c.message);
    assert!(
        c.message
            .contains("content at 102400 bytes, within the limit, was refused for it (413)"),
        "{}",
        c.message
    );
    let report = probe_tweaked(&["limits.content-under"], move |r| {
        under(r).then(|| json_answer(400, json!({"detail": "bad request"})))?
    })
    .await;
    let c = case(&report, "limits.content-under");
    assert_eq!(c.status, Status::Skip, "{}", c.message);
    assert!(
        c.message
            .contains("was refused with 400 for something it does not name"),
        "{}",
        c.message
    );
}

#[deadline::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_404_to_a_malformed_body_from_a_live_endpoint_says_nothing() {
    let report = probe_tweaked(&["input.malformed-json", "input.empty-body"], |r| {
        (r.method == "POST" && body_of(r).is_none())
            .then(|| json_answer(404, json!({"detail": "Not Found"})))?
    })
    .await;
    for id in ["input.malformed-json", "input.empty-body"] {
        let c = case(&report, id);
        assert_eq!(c.status, Status::Skip, "{id}: {}", c.message);
        assert!(
            c.message
                .contains("was answered 404, as if there were no such endpoint, which says nothing of the fault"),
            "{id}: {}",
            c.message
        );
    }
}

#[deadline::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_without_a_token_answered_400_fails_auth_no_token() {
    let report = probe_tweaked(&["auth.*"], |r| {
        r.header("authorization")
            .is_none()
            .then(|| json_answer(400, json!({"detail": "bad request"})))?
    })
    .await;
    assert_eq!(ids_with(&report, Status::Fail), vec!["auth.no-token"]);
    assert!(
        case(&report, "auth.no-token")
            .message
            .contains("no-token: answered 400; expected 401 or 403"),
        "{}",
        case(&report, "auth.no-token").message
    );
    assert_eq!(ids_with(&report, Status::Pass).len(), 2);
}

/// A 5xx counts wherever it comes from, even from an endpoint that never answered 2xx.
#[deadline::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_5xx_from_any_endpoint_fails_no_5xx() {
    let report = probe_tweaked(
        &["request.approval", "capabilities.get", "request.no-5xx"],
        |r| {
            (r.path() == "/agent/capabilities")
                .then(|| json_answer(503, json!({"detail": "unavailable"})))?
        },
    )
    .await;
    assert_eq!(
        ids_with(&report, Status::Fail),
        vec!["capabilities.get", "request.no-5xx"]
    );
    let c = case(&report, "request.no-5xx");
    assert!(c.message.contains("capabilities: 503"), "{}", c.message);
    assert_eq!(c.evidence.as_ref().unwrap().judged, 2, "{c:?}");
}

#[deadline::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_that_do_not_name_the_missing_field_pass_its_case_and_fail_fields_named() {
    let report = probe_tweaked(&["fields.*"], |r| {
        let b = body_of(r)?;
        let missing = ["content", "rationale", "target_type"]
            .iter()
            .any(|f| b.get(*f).is_none() && b["request_type"] == "APPROVAL");
        missing.then(|| json_answer(400, json!({"detail": "invalid request"})))?
    })
    .await;
    assert_eq!(ids_with(&report, Status::Fail), vec!["fields.named"]);
    let named = case(&report, "fields.named");
    assert!(
        named
            .message
            .starts_with("3 of 9 refusals for a missing field: without content"),
        "{}",
        named.message
    );
    assert_eq!(
        case(&report, "fields.approval-without-content").message,
        "APPROVAL without content: 400"
    );
}

/// A Librarian that answers GET /agent/capabilities before the fleet and not after it fails
/// `fleet.capabilities-after`; one that never answered it gives that case nothing to judge.
#[deadline::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_fleet_judges_capabilities_after_only_against_a_before() {
    use agent_tck::protocols::librarian::reference::Librarian;
    use std::sync::atomic::{AtomicUsize, Ordering};
    for answered_before in [true, false] {
        let asked = AtomicUsize::new(0);
        let handler = Tweaked {
            inner: Librarian::new(reference_registry(), Flaws::default()),
            tweak: move |r: &agent_tck::mock::http1::Request| {
                if r.path() != "/agent/capabilities" {
                    return None;
                }
                let first = asked.fetch_add(1, Ordering::SeqCst) == 0;
                (!(first && answered_before))
                    .then(|| json_answer(503, json!({"detail": "unavailable"})))?
            },
        };
        let running =
            agent_tck::mock::http1::spawn(std::sync::Arc::new(handler), ([127, 0, 0, 1], 0).into())
                .await
                .unwrap();
        let fleet = Fleet::parse("fleet.yaml", &fleet_file(&running.url()), None).unwrap();
        let report = tokio::time::timeout(Duration::from_secs(60), fleet::run(&fleet, false, 1))
            .await
            .expect("the fleet ends");
        running.stop().await;
        let after = case(&report, "fleet.capabilities-after");
        if answered_before {
            assert_eq!(after.status, Status::Fail, "{}", after.message);
            assert_eq!(
                after.message,
                "answered 200 before the fleet, then: answered 503"
            );
        } else {
            assert_eq!(after.status, Status::Skip, "{}", after.message);
            assert!(
                after
                    .message
                    .contains("answered 503 before the fleet already"),
                "{}",
                after.message
            );
        }
    }
}

// ---- The client fleet: each client asks what its agent may; refusals judged per client ----

/// `fleet_file`'s clients and one client of each `extra` behaviour (speaking for the second
/// agent), for a second against `url`; with the reference's registry when `registry`.
async fn fleet_with(url: &str, extra: &[&str], registry: bool) -> Report {
    let t = reference_tokens();
    let mut text = fleet_file(url);
    for b in extra {
        text.push_str(&format!(
            "    - {{ name: {b}-client, agent: {}, token: {}, behavior: {b}, rate: 120/min }}\n",
            t[1].0, t[1].1
        ));
    }
    let fleet = Fleet::parse("fleet.yaml", &text, None)
        .and_then(|f| f.with_registry(registry.then(reference_registry)))
        .unwrap();
    tokio::time::timeout(Duration::from_secs(60), fleet::run(&fleet, false, 1))
        .await
        .expect("the fleet ends")
}

/// Serves `handler` on loopback, runs `fleet_with` against it, stops it.
async fn fleet_against<H: agent_tck::mock::http1::Handler<Note = ()>>(
    handler: H,
    extra: &[&str],
    registry: bool,
) -> Report {
    let running =
        agent_tck::mock::http1::spawn(std::sync::Arc::new(handler), ([127, 0, 0, 1], 0).into())
            .await
            .unwrap();
    let report = fleet_with(&running.url(), extra, registry).await;
    running.stop().await;
    report
}

/// The reference Librarian refusing an agent's request outside its registry entry 403 "Agent
/// not authorized" (as a server that enforces capabilities answers).
fn forbidding() -> agent_tck::protocols::librarian::reference::Librarian {
    agent_tck::protocols::librarian::reference::Librarian::new(
        reference_registry(),
        Flaws::default(),
    )
    .forbidding()
}

fn bearer(r: &agent_tck::mock::http1::Request) -> String {
    r.header("authorization").unwrap_or_default().to_string()
}

const ALL_FAULTS: [&str; 3] = ["injection", "foreign-agent-id", "unregistered-agent-id"];

/// A Librarian that refuses the second agent's APPROVALs 403 (it lacks `write`) is right: the
/// fleet fails it neither with nor without the registry; without one it says which answers it
/// could not tell from a wrong refusal, per client, and with one it judges them.
#[deadline::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_librarian_refusing_unauthorized_requests_403_passes_the_fleet() {
    let report = fleet_against(forbidding(), &ALL_FAULTS, false).await;
    assert_eq!(crate::support::failing(&report), vec![]);
    let refusals = case(&report, "fleet.refusals");
    assert_eq!(refusals.status, Status::Pass, "{}", refusals.message);
    // The oversized and injected APPROVALs of an agent without `write`, answered 403.
    for client in [
        "oversized-client (oversized)",
        "injection-client (injection)",
    ] {
        let line = refusals
            .message
            .lines()
            .find(|l| l.trim_start().starts_with(client))
            .unwrap_or_else(|| panic!("{client}: {}", refusals.message));
        assert!(
            line.contains(
                " not judged: answered 401/403 to a request no registry says its agent may make"
            ) && line.ends_with("give --registry (the server's config/agents.yaml)"),
            "{line}"
        );
    }

    let report = fleet_against(forbidding(), &ALL_FAULTS, true).await;
    assert_eq!(crate::support::failing(&report), vec![]);
    let refusals = case(&report, "fleet.refusals");
    assert_eq!(refusals.status, Status::Pass, "{}", refusals.message);
    assert!(
        !refusals.message.contains("not judged"),
        "with the registry every refusal is judged: {}",
        refusals.message
    );
    assert!(refusals.evidence.as_ref().unwrap().judged >= 7);
    assert_eq!(
        case(&report, "fleet.conforming-served").status,
        Status::Pass
    );
}

/// A 403 to a request its agent may make (the second agent's QUERY) is a fault, and one
/// client's many faults do not hide another's single one: the message names each client.
#[deadline::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_403_to_a_permitted_request_fails_refusals_naming_each_client() {
    let gemini = format!("Bearer {}", reference_tokens()[1].1);
    let handler = Tweaked {
        inner: forbidding(),
        tweak: move |r: &agent_tck::mock::http1::Request| {
            let body = body_of(r)?;
            if bearer(r).ends_with("-wrong") {
                return json_answer(200, json!({"request_id": "r-1", "status": "approved"}));
            }
            (bearer(r) == gemini && body["request_type"] == "QUERY" && body["content"].is_string())
                .then(|| {
                    agent_tck::mock::http1::Response::json_error(
                        403,
                        "Agent not authorized: gemini-pro lacks required capability",
                    )
                })
        },
    };
    let report = fleet_against(handler, &[], true).await;
    let refusals = case(&report, "fleet.refusals");
    assert_eq!(refusals.status, Status::Fail, "{}", refusals.message);
    assert!(
        refusals.message.contains("by client:\n  flood (flood): ")
            && refusals
                .message
                .contains("answered 403; expected 429 once over 60 a minute")
            && refusals
                .message
                .contains("wrong-token-client (wrong-token): ")
            && refusals
                .message
                .contains("answered 200 approved; expected 401 or 403"),
        "{}",
        refusals.message
    );
}

/// Injected text that gets its forbidden target approved fails `fleet.refusals` on the answer
/// (a 200 is no pass); with no registry to say what is forbidden it is not judged.
#[deadline::test(flavor = "multi_thread", worker_threads = 2)]
async fn injected_text_approved_for_a_forbidden_target_fails_refusals() {
    let obeys = || {
        agent_tck::protocols::librarian::reference::Librarian::new(
            reference_registry(),
            Flaws::named("obeys-injection").unwrap(),
        )
    };
    let report = fleet_against(obeys(), &["injection"], true).await;
    let refusals = case(&report, "fleet.refusals");
    assert_eq!(refusals.status, Status::Fail, "{}", refusals.message);
    assert!(
        refusals.message.contains("injection-client (injection): ")
            && refusals
                .message
                .contains("answered 200 approved; expected the forbidden target not approved"),
        "{}",
        refusals.message
    );
    let report = fleet_against(obeys(), &["injection"], false).await;
    let refusals = case(&report, "fleet.refusals");
    assert_eq!(refusals.status, Status::Pass, "{}", refusals.message);
    assert!(
        refusals
            .message
            .contains("not judged: answers to injected text"),
        "{}",
        refusals.message
    );
}

/// Agent A's token in agent B's name and an agent no registry holds are two tests: a Librarian
/// that checks registration but not whose token it is fails only the first.
#[deadline::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_taken_in_another_registered_agents_name_fails_foreign_agent_id_only() {
    let gemini = format!("Bearer {}", reference_tokens()[1].1);
    let claude = reference_tokens()[0].0.clone();
    let handler = Tweaked {
        inner: forbidding(),
        tweak: move |r: &agent_tck::mock::http1::Request| {
            let body = body_of(r)?;
            (bearer(r) == gemini && body["agent_id"] == claude.as_str())
                .then(|| json!({"request_id": "r-2", "status": "approved"}))
                .and_then(|v| json_answer(200, v))
        },
    };
    let report = fleet_against(handler, &ALL_FAULTS, true).await;
    let refusals = case(&report, "fleet.refusals");
    assert_eq!(refusals.status, Status::Fail, "{}", refusals.message);
    assert!(
        refusals
            .message
            .contains("foreign-agent-id-client (foreign-agent-id): ")
            && !refusals.message.contains("unregistered-agent-id-client"),
        "{}",
        refusals.message
    );
}

// ---- The probe: each case asks with a token whose agent may make its request ----

/// Probes `url` (the cases `only`) with the reference's tokens, the second agent (which may not
/// change anything) first, and the reference's registry when `registry`.
async fn probe_reversed(url: &str, only: &[&str], registry: bool) -> Report {
    let mut s = settings(url, only);
    s.tokens.reverse();
    if !registry {
        s.registry = None;
    }
    tokio::time::timeout(Duration::from_secs(180), run(&s, &|_| {}))
        .await
        .expect("the probe ends within its deadlines")
        .unwrap()
}

/// The cases that make a change, or look one up, or name another agent.
const CHANGES: [&str; 8] = [
    "request.*",
    "status.*",
    "fields.approval-*",
    "limits.*",
    "auth.*",
    "lifecycle.*",
    "robustness.unicode",
    "input.*",
];

/// With the first --token an agent that may not create designs, a Librarian that refuses its
/// changes 403 is right: with the registry every case asks with an agent that may, and nothing
/// fails; without it, a 403 to a valid request is not judged (it names --registry).
#[deadline::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_order_does_not_change_verdicts_against_a_librarian_refusing_403() {
    let served = server_forbidding().await;
    let report = probe_reversed(&served.url, &CHANGES, true).await;
    assert_eq!(crate::support::failing(&report), vec![]);
    for id in [
        "request.approval",
        "lifecycle.report-completes",
        "limits.content-over",
        "auth.foreign-agent",
    ] {
        assert_eq!(
            case(&report, id).status,
            Status::Pass,
            "{id}: {}",
            case(&report, id).message
        );
    }
    let report = probe_reversed(&served.url, &["request.approval", "request.query"], false).await;
    served.stop().await;
    let approval = case(&report, "request.approval");
    assert_eq!(approval.status, Status::Skip, "{}", approval.message);
    assert!(
        approval.message.contains(
            "was refused 403, and no registry says whether its agent may make it; give --registry"
        ),
        "{}",
        approval.message
    );
    assert_eq!(case(&report, "request.query").status, Status::Pass);
}

async fn server_forbidding() -> agent_tck::protocols::librarian::reference::Served {
    agent_tck::protocols::librarian::reference::serve(forbidding())
        .await
        .unwrap()
}

/// A Librarian that takes the agent from agent_id (checking its capabilities) and never asks
/// whose token it is fails auth.foreign-agent: the case asks, in B's name, what B may (a QUERY),
/// so a capability refusal cannot hide the fault.
#[deadline::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_taken_in_another_agents_name_fails_auth_foreign_agent() {
    let tokens = reference_tokens();
    let handler = Tweaked {
        inner: forbidding(),
        tweak: move |r: &agent_tck::mock::http1::Request| {
            let body = body_of(r)?;
            let named = body["agent_id"].as_str()?;
            // Another registered agent's token: the request is judged as the named agent's.
            tokens
                .iter()
                .find(|(a, t)| a != named && bearer(r) == format!("Bearer {t}"))?;
            let entry = reference_registry().into_iter().find(|e| e.id == named)?;
            match entry.refuses(&body) {
                Some(why) => Some(agent_tck::mock::http1::Response::json_error(
                    403,
                    &format!("Agent not authorized: {why}"),
                )),
                None => json_answer(200, json!({"request_id": "r-3", "status": "approved"})),
            }
        },
    };
    let running =
        agent_tck::mock::http1::spawn(std::sync::Arc::new(handler), ([127, 0, 0, 1], 0).into())
            .await
            .unwrap();
    let report = probe(&running.url(), &["request.query", "auth.*"]).await;
    running.stop().await;
    assert_eq!(ids_with(&report, Status::Fail), vec!["auth.foreign-agent"]);
    let c = case(&report, "auth.foreign-agent");
    assert!(
        c.message
            .contains("foreign-agent: 200 approved; expected 401 or 403"),
        "{}",
        c.message
    );
}

// ---- Content of the wrong type, the content limit at its edge, the server's compliance mode ----

/// Probes `url` (the cases `only`) with the test settings as `tweak` leaves them.
async fn probe_with(url: &str, only: &[&str], tweak: impl FnOnce(&mut Settings)) -> Report {
    let mut s = settings(url, only);
    tweak(&mut s);
    tokio::time::timeout(Duration::from_secs(180), run(&s, &|_| {}))
        .await
        .expect("the probe ends within its deadlines")
        .unwrap()
}

/// content as a list is a 4xx from the reference; a Librarian that approves it fails the case.
#[deadline::test(flavor = "multi_thread", worker_threads = 2)]
async fn content_of_the_wrong_type_approved_fails_input_wrong_type_content() {
    let served = reference(Flaws::default()).await.unwrap();
    let report = probe(&served.url, &["input.wrong-type-content"]).await;
    served.stop().await;
    let c = case(&report, "input.wrong-type-content");
    assert_eq!(c.status, Status::Pass, "{}", c.message);
    assert_eq!(c.message, "400");
    assert_eq!(
        c.evidence.as_ref().unwrap().of,
        "wrong-type-content requests"
    );

    let report = probe_tweaked(&["input.wrong-type-content"], |r| {
        body_of(r)
            .filter(|b| b["content"].is_array())
            .map(|_| json!({"request_id": "r-4", "status": "approved"}))
            .and_then(|v| json_answer(200, v))
    })
    .await;
    let c = case(&report, "input.wrong-type-content");
    assert_eq!(c.status, Status::Fail, "{}", c.message);
    assert!(
        c.message
            .contains("wrong-type-content: approved; expected a 4xx"),
        "{}",
        c.message
    );
}

/// 102,400 bytes of content (100 KB, the kit's KB being 1024) are accepted and 102,401 refused
/// by the reference; a Librarian off by one either way fails the case at that edge.
#[deadline::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_content_limit_is_judged_at_its_exact_edge() {
    let only = ["limits.content-*"];
    let served = reference(Flaws::default()).await.unwrap();
    let report = probe(&served.url, &only).await;
    served.stop().await;
    assert_eq!(
        ids_with(&report, Status::Pass),
        vec!["limits.content-under", "limits.content-over"]
    );
    assert_eq!(
        case(&report, "limits.content-over")
            .evidence
            .as_ref()
            .unwrap()
            .of,
        "APPROVALs with content at 102401 bytes"
    );
    let length = |r: &agent_tck::mock::http1::Request| {
        body_of(r).and_then(|b| b["content"].as_str().map(str::len))
    };
    // A limit of "100 KB" read as 102,399 bytes (the limit itself refused).
    let report = probe_tweaked(&only, move |r| {
        (length(r) == Some(102_400)).then(|| {
            agent_tck::mock::http1::Response::json_error(400, "content exceeds max_content_size")
        })
    })
    .await;
    assert_eq!(
        ids_with(&report, Status::Fail),
        vec!["limits.content-under"]
    );
    // One byte past the limit let through.
    let report = probe_tweaked(&only, move |r| {
        (length(r) == Some(102_401))
            .then(|| json!({"request_id": "r-5", "status": "approved"}))
            .and_then(|v| json_answer(200, v))
    })
    .await;
    assert_eq!(ids_with(&report, Status::Fail), vec!["limits.content-over"]);
    assert!(
        case(&report, "limits.content-over")
            .message
            .contains("content at 102401 bytes, over the limit, was approved"),
        "{}",
        case(&report, "limits.content-over").message
    );
}

/// limits.strict-deviations holds the server to the mode it is given: skipped without one,
/// one deviation refused under strict mode, not refused for it when deviations are allowed.
#[deadline::test(flavor = "multi_thread", worker_threads = 2)]
async fn strict_deviations_is_judged_against_the_servers_declared_mode() {
    use agent_tck::protocols::librarian::reference::{serve, Librarian};
    let only = ["limits.strict-deviations"];
    let strict = reference(Flaws::default()).await.unwrap();
    let allowing =
        serve(Librarian::new(reference_registry(), Flaws::default()).allowing_deviations())
            .await
            .unwrap();
    let verdict = |r: &Report| {
        let c = case(r, "limits.strict-deviations");
        assert_eq!(c.level, Level::Must);
        (c.status, c.message.clone())
    };
    let unknown = probe_with(&strict.url, &only, |s| s.allow_deviations = None).await;
    let (status, message) = verdict(&unknown);
    assert_eq!(status, Status::Skip, "{message}");
    assert!(
        message.contains("compliance mode is not known; give --allow-deviations false"),
        "{message}"
    );
    for (url, allowed, want, words) in [
        (&strict.url, false, Status::Pass, "refused: 200 rejected"),
        (
            &allowing.url,
            true,
            Status::Pass,
            "deviations at 1 items: 200 approved",
        ),
        (
            &strict.url,
            true,
            Status::Fail,
            "deviations at 1 items, within the limit, was refused for it",
        ),
        (
            &allowing.url,
            false,
            Status::Fail,
            "a request with a deviation was approved under strict mode",
        ),
    ] {
        let report = probe_with(url, &only, |s| s.allow_deviations = Some(allowed)).await;
        let (status, message) = verdict(&report);
        assert_eq!(status, want, "allowed {allowed}: {message}");
        assert!(message.contains(words), "allowed {allowed}: {message}");
    }
    strict.stop().await;
    allowing.stop().await;
}

// ---- The mock Librarian: resubmissions, content size, waiting for the human ----

/// A rejected APPROVAL fixed and resubmitted: three times is within max_retry_attempts, four
/// is one too many; a client whose requests are never rejected gives nothing to judge.
#[deadline::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_mock_librarian_judges_resubmissions_of_a_rejected_request() {
    use agent_tck::protocols::librarian::model::request;
    for (resubmitted, want) in [(3, Status::Pass), (4, Status::Fail)] {
        let session = MockSession::start(&["reject"]).await;
        let mut body = request("example-agent", "APPROVAL", 1);
        assert_eq!(session.ask(&body).await.1["status"], "rejected");
        for n in 0..resubmitted {
            body["rationale"] = json!(format!("fixed, take {n}"));
            session.ask(&body).await;
        }
        let cases = session.verdicts().await;
        let c = verdict(&cases, "client.resubmissions");
        assert_eq!(c.status, want, "{resubmitted}: {}", c.message);
        assert_eq!(
            c.evidence.as_ref().map(|e| (e.judged, e.of.as_str())),
            Some((resubmitted, "resubmissions after a rejection"))
        );
        if want == Status::Fail {
            assert!(
                c.message.contains(
                    "token #1: a rejected APPROVAL resubmitted 4 times (max_retry_attempts: 3)"
                ),
                "{}",
                c.message
            );
        }
    }
    let session = MockSession::start(&["approve"]).await;
    session.ask(&request("example-agent", "APPROVAL", 1)).await;
    let cases = session.verdicts().await;
    let c = verdict(&cases, "client.resubmissions");
    assert_eq!(c.status, Status::Skip);
    assert!(
        c.message
            .contains("no rejected request was resubmitted; add a `reject` step"),
        "{}",
        c.message
    );
}

/// Content of 102,400 bytes is within max_content_size; 102,401 is over it; a client that
/// sends no content gives nothing to judge.
#[deadline::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_mock_librarian_judges_the_clients_content_size() {
    use agent_tck::protocols::librarian::model::request;
    for (bytes, want) in [(102_400, Status::Pass), (102_401, Status::Fail)] {
        let session = MockSession::start(&["decide"]).await;
        let mut body = request("example-agent", "QUERY", 1);
        body["content"] = json!("q".repeat(bytes));
        session.ask(&body).await;
        let cases = session.verdicts().await;
        let c = verdict(&cases, "client.content-size");
        assert_eq!(c.status, want, "{bytes}: {}", c.message);
        assert_eq!(c.evidence.as_ref().map(|e| e.judged), Some(1));
        if want == Status::Fail {
            assert!(
                c.message.contains(
                    "token #1: content of 102401 bytes (max_content_size: 100 KB = 102400 bytes)"
                ),
                "{}",
                c.message
            );
        }
    }
    let session = MockSession::start(&["decide"]).await;
    session.ask(&request("example-agent", "REPORT", 1)).await;
    let cases = session.verdicts().await;
    let c = verdict(&cases, "client.content-size");
    assert_eq!(c.status, Status::Skip);
    assert!(
        c.message
            .contains("the client sent no request with content"),
        "{}",
        c.message
    );
}

/// A client that REPORTs an escalated request before its human decided fails
/// client.waits-for-human; one that polls until the decision and then reports passes it.
#[deadline::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_mock_librarian_judges_waiting_for_the_human_decision() {
    use agent_tck::protocols::librarian::model::request;
    let reported = |id: &Value| {
        let mut r = request("example-agent", "REPORT", 2);
        r["request_id"] = id.clone();
        r
    };
    // Reported at once: the human has 60 s left.
    let session = MockSession::start(&["escalate:60s"]).await;
    let (_, answer) = session.ask(&request("example-agent", "APPROVAL", 1)).await;
    assert_eq!(answer["status"], "escalated");
    session.ask(&reported(&answer["request_id"])).await;
    let cases = session.verdicts().await;
    let c = verdict(&cases, "client.waits-for-human");
    assert_eq!(c.status, Status::Fail, "{}", c.message);
    assert!(
        c.message
            .contains("while it awaited a human decision (ESCALATED)"),
        "{}",
        c.message
    );

    // Polled once a second until the decision, then reported.
    let session = MockSession::start(&["escalate:1s"]).await;
    let (_, answer) = session.ask(&request("example-agent", "APPROVAL", 1)).await;
    let id = answer["request_id"].as_str().unwrap().to_string();
    let decided = tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            tokio::time::sleep(Duration::from_millis(1_000)).await;
            let (_, s) = session
                .call("GET", &format!("/agent/status/{id}"), None)
                .await;
            if s["status"] != "ESCALATED" {
                return s["status"].clone();
            }
        }
    })
    .await
    .expect("the human decides within 20 s");
    assert_eq!(decided, "APPROVED");
    assert_eq!(
        session.ask(&reported(&json!(id))).await.1["status"],
        "approved"
    );
    let cases = session.verdicts().await;
    let c = verdict(&cases, "client.waits-for-human");
    assert_eq!(c.status, Status::Pass, "{}", c.message);
    assert_eq!(
        c.evidence.as_ref().map(|e| (e.judged, e.of.as_str())),
        Some((1, "escalations"))
    );

    let session = MockSession::start(&["approve"]).await;
    session.ask(&request("example-agent", "APPROVAL", 1)).await;
    let cases = session.verdicts().await;
    let c = verdict(&cases, "client.waits-for-human");
    assert_eq!(c.status, Status::Skip);
    assert!(
        c.message.contains("add an `escalate:DUR` step"),
        "{}",
        c.message
    );
}

// ---- Messages written for a person ----

/// A Librarian that approves a forbidden target with or without injected text fails
/// robustness.injection saying it is a permission problem; one talked into it by the text
/// alone is blamed on the text, with what the plain request got.
#[deadline::test(flavor = "multi_thread", worker_threads = 2)]
async fn injection_is_blamed_only_when_the_plain_request_is_refused() {
    let only = ["robustness.injection", "registry.target-outside"];
    let report = probe_tweaked(&only, |r| {
        body_of(r)
            .filter(|b| b["request_type"] == "APPROVAL" && b["target_type"] == "test")
            .map(|_| json!({"request_id": "r-6", "status": "approved"}))
            .and_then(|v| json_answer(200, v))
    })
    .await;
    assert_eq!(
        ids_with(&report, Status::Fail),
        vec!["registry.target-outside", "robustness.injection"]
    );
    let m = &case(&report, "robustness.injection").message;
    assert!(
        m.contains("the same request with no injected text was approved too: a permission problem (registry.target-outside judges it), not an injection one")
            && !m.contains("talked into it"),
        "{m}"
    );

    let served = reference(Flaws::named("obeys-injection").unwrap())
        .await
        .unwrap();
    let report = probe(&served.url, &only).await;
    served.stop().await;
    assert_eq!(
        ids_with(&report, Status::Fail),
        vec!["robustness.injection"]
    );
    let m = &case(&report, "robustness.injection").message;
    assert!(
        m.contains("talked into it by the injected text (TCK-CANARY-")
            && m.contains("the same request with no injected text was 200 rejected"),
        "{m}"
    );
}

/// A REPORT that leaves its request APPROVED is said in the document's words, not Rust's.
#[deadline::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_still_approved_after_its_report_is_said_plainly() {
    let report = probe_tweaked(&["lifecycle.report-completes"], |r| {
        let id = r.path().strip_prefix("/agent/status/")?;
        json_answer(200, json!({"request_id": id, "status": "APPROVED"}))
    })
    .await;
    let c = case(&report, "lifecycle.report-completes");
    assert_eq!(c.status, Status::Fail, "{}", c.message);
    assert!(
        c.message.ends_with("is still APPROVED at /agent/status after its REPORT was answered 200 approved; expected COMPLETED (states seen: APPROVED → APPROVED)"),
        "{}",
        c.message
    );
    assert!(
        !c.message.contains("Some(") && !c.message.contains("Approved"),
        "{}",
        c.message
    );
}

// ---- The mock Librarian's script: steps that name what they answer ----

/// One script serves any client: each step names the requests it answers, an invalid request
/// takes no step, a request no step answers is decided by the rules, and an old script (steps
/// naming nothing) reads as before.
#[deadline::test(flavor = "multi_thread", worker_threads = 2)]
async fn script_steps_answer_the_requests_they_name() {
    use agent_tck::protocols::librarian::mock::{Script, ScriptError};
    use agent_tck::protocols::librarian::model::request;
    let text = "decisions:\n  - \"APPROVAL create design docs/design/*: reject\"\n  - \"QUERY: escalate:1s\"\n  - \"APPROVAL: approve\"\n";
    let session = MockSession::scripted(Script::parse("s.yaml", text).unwrap()).await;
    let decision =
        |(status, v): (u16, Value)| format!("{status} {}", v["status"].as_str().unwrap_or(""));
    let approval = request("example-agent", "APPROVAL", 1);
    let mut code = approval.clone();
    code["target_type"] = json!("code");
    code["target_path"] = json!("src/auth/login.py");
    let mut invalid = request("example-agent", "QUERY", 2);
    invalid.as_object_mut().unwrap().remove("content");
    assert_eq!(
        decision(session.ask(&invalid).await),
        "400 ",
        "an invalid request takes no step"
    );
    assert_eq!(decision(session.ask(&approval).await), "200 rejected");
    assert_eq!(
        decision(session.ask(&code).await),
        "200 approved",
        "APPROVAL: approve"
    );
    assert_eq!(
        decision(session.ask(&request("example-agent", "QUERY", 3)).await),
        "200 escalated"
    );
    // A design APPROVAL is answered by its two steps in turn, whatever came between.
    assert_eq!(decision(session.ask(&approval).await), "200 approved");
    assert_eq!(decision(session.ask(&code).await), "200 approved");
    assert_eq!(
        decision(session.ask(&approval).await),
        "200 rejected",
        "the cycle comes round"
    );
    assert_eq!(
        decision(session.ask(&request("example-agent", "VALIDATE", 4)).await),
        "200 approved",
        "no step answers a VALIDATE: the rules decide it"
    );
    session.verdicts().await;

    let old = include_str!("../../mocks/librarian-decisions.yaml");
    assert!(Script::parse("mocks/librarian-decisions.yaml", old).is_ok());
    for (bad, words) in [
        ("decisions:\n  - approve\n  - \"APPROVAL create delete: reject\"\n", "s.yaml:3: script step \"APPROVAL create delete: reject\": \"delete\" is a second action"),
        ("decisions:\n  - explode\n", "s.yaml:2: script step \"explode\": expected decide, approve"),
        ("decisions:\n  - \"QUERY: explode\"\n", "s.yaml:2: script step \"explode\""),
    ] {
        let e = Script::parse("s.yaml", bad).unwrap_err();
        assert!(matches!(e, ScriptError::Step { .. }), "{e:?}");
        assert!(e.to_string().contains(words), "{e}");
    }
}

/// `mock fleet --registry FILE` reads the server's registry: against a Librarian that refuses
/// 403 what an agent may not do, every refusal is judged and the run exits 0; a registry that
/// cannot be read is a one-line usage error naming the file.
#[deadline::test(flavor = "multi_thread", worker_threads = 2)]
async fn mock_fleet_reads_the_registry_flag() {
    let served = reference(Flaws::named("forbids-403").unwrap())
        .await
        .unwrap();
    let dir = crate::support::TempDir::new("fleet-registry");
    let (fleet, registry, json) = (
        dir.path("f.yaml"),
        dir.path("agents.yaml"),
        dir.path("r.json"),
    );
    std::fs::write(&fleet, fleet_file(&served.url)).unwrap();
    std::fs::write(
        &registry,
        "agents:\n  claude-3:\n    capabilities: [read, write, analyze]\n    allowed_targets: [architecture, design, code]\n  gemini-pro:\n    capabilities: [read, analyze, validate]\n    allowed_targets: [all]\n",
    )
    .unwrap();
    let run = |registry: String| {
        let (fleet, json) = (fleet.clone(), json.clone());
        async move {
            let command = crate::support::tck_command(&[
                "mock",
                "fleet",
                "--config",
                &fleet,
                "--registry",
                &registry,
                "--json",
                &json,
            ]);
            crate::support::run_within_async(command, Duration::from_secs(60)).await
        }
    };
    let out = run(registry.clone()).await;
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(case_status(&report, "fleet.refusals"), "pass");
    let missing = run(dir.path("nowhere.yaml")).await;
    served.stop().await;
    assert_eq!(missing.status.code(), Some(2));
    let err = String::from_utf8_lossy(&missing.stderr);
    assert!(
        err.contains("nowhere.yaml: cannot read") && err.trim().lines().count() == 1,
        "{err}"
    );
}

/// With only the token of an agent the registry lets make no APPROVAL, the cases that need one
/// are not judged, and say why in plain English ("an APPROVAL", never "a APPROVAL").
#[deadline::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_case_no_token_agent_may_ask_names_the_request_with_its_article() {
    let served = server_forbidding().await;
    let mut s = settings(&served.url, &["request.approval"]);
    s.tokens.reverse();
    s.tokens.truncate(1);
    let report = tokio::time::timeout(Duration::from_secs(180), run(&s, &|_| {}))
        .await
        .expect("the probe ends within its deadlines")
        .unwrap();
    served.stop().await;
    let approval = case(&report, "request.approval");
    assert_eq!(approval.status, Status::Skip, "{}", approval.message);
    assert!(
        approval
            .message
            .starts_with("not judged: no --token agent may make an APPROVAL ("),
        "{}",
        approval.message
    );
}
