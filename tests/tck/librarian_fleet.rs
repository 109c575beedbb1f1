//! A fleet of agent clients against the reference Librarian holds its checks; against a flawed
//! one it names the flaw.

use agent_tck::protocols::librarian::commands::{reference, reference_registry, reference_tokens};
use agent_tck::protocols::librarian::fleet::{run, Fleet, FleetFileError};
use agent_tck::protocols::librarian::reference::{Flaws, Registered};
use agent_tck::report::{Report, Status};

/// The chaos preset's clients, shortened to 3 s, with the reference's agents and tokens: as in
/// the preset, the missing-fields client speaks for the first agent (one that may make
/// APPROVALs, so that it sends one without rationale), the other misbehaving ones for the
/// flood's.
pub(crate) fn fleet_file(url: &str) -> String {
    let t = reference_tokens();
    let (a1, t1, a2, t2) = (&t[0].0, &t[0].1, &t[1].0, &t[1].1);
    let mut text = format!(
        "protocol: librarian\nlibrarian:\n  url: {url}\n  duration: 3s\n  clients:\n    - {{ name: steady, agent: {a1}, token: {t1}, behavior: conforming, rate: 60/min }}\n    - {{ name: flood, agent: {a2}, token: {t2}, behavior: flood, rate: 1800/min }}\n"
    );
    text.push_str(&format!(
        "    - {{ name: missing-fields-client, agent: {a1}, token: {t1}, behavior: missing-fields, rate: 60/min }}\n"
    ));
    for b in [
        "oversized",
        "malformed-json",
        "wrong-token",
        "foreign-agent-id",
        "injection",
        "burst",
    ] {
        text.push_str(&format!(
            "    - {{ name: {b}-client, agent: {a2}, token: {t2}, behavior: {b}, rate: 60/min }}\n"
        ));
    }
    text.push_str(&format!("    - {{ name: trickler, agent: {a2}, token: {t2}, behavior: slow-upload, rate: 60/min, trickle: 1s }}\n"));
    text
}

async fn against(flaw: &str) -> Report {
    against_with(flaw, None).await
}

/// The fleet against the reference with `flaw`, told the server's `registry` (`--registry`).
async fn against_with(flaw: &str, registry: Option<Vec<Registered>>) -> Report {
    let served = reference(Flaws::named(flaw).unwrap()).await.unwrap();
    let fleet = Fleet::parse("fleet.yaml", &fleet_file(&served.url), None)
        .unwrap()
        .with_registry(registry)
        .unwrap();
    let report = run(&fleet, false, 1).await;
    served.stop().await;
    report
}

#[deadline::test(secs = 900, flavor = "multi_thread", worker_threads = 2)]
async fn the_fleet_holds_against_the_reference_and_names_each_flaw() {
    let _heavy = crate::support::heavy().await;
    let report = against("conforming").await;
    assert_eq!(
        crate::support::failing(&report),
        vec![],
        "{:#?}",
        report.cases
    );
    // Titled by the command that runs it, not as the Librarian's own mock.
    let shown = agent_tck::report::console::render(&report, false);
    assert!(
        shown.starts_with(&format!(
            "agent-tck {} · mock fleet (librarian) · ",
            agent_tck::VERSION
        )),
        "{shown}"
    );
    assert!(
        shown.lines().next().unwrap().ends_with(" · seed 1"),
        "{shown}"
    );
    for id in [
        "fleet.no-5xx",
        "fleet.refusals",
        "fleet.flood-limited",
        "fleet.conforming-served",
        "fleet.conforming-latency",
        "fleet.capabilities-after",
    ] {
        let c = report.cases.iter().find(|c| c.id == id).unwrap();
        assert_eq!(c.status, Status::Pass, "{id}: {}", c.message);
    }
    let latency = report
        .cases
        .iter()
        .find(|c| c.id == "fleet.latency")
        .unwrap();
    assert!(
        latency.message.contains("conforming:") && latency.message.contains("p99"),
        "{}",
        latency.message
    );

    for (flaw, cases, needle) in [
        (
            "crashes-on-malformed-json",
            vec!["fleet.no-5xx", "fleet.refusals"],
            "malformed-json-client (malformed-json): answered 500",
        ),
        ("no-rate-limit", vec!["fleet.flood-limited"], "flood sent"),
        (
            "shared-rate-limit",
            vec!["fleet.conforming-served"],
            "steady (conforming): answered 429",
        ),
        (
            "accepts-wrong-token",
            vec!["fleet.refusals"],
            "wrong-token-client (wrong-token): answered 200",
        ),
    ] {
        let report = against(flaw).await;
        let failed = crate::support::failing(&report);
        assert_eq!(
            failed.iter().map(|(id, _)| *id).collect::<Vec<_>>(),
            cases,
            "{flaw}: {failed:#?}"
        );
        assert!(
            failed.iter().any(|(_, m)| m.contains(needle)),
            "{flaw}: {failed:#?}"
        );
    }
}

/// Every answer any client gets is judged by the probe's rules, the fleet told the server's
/// registry as `--registry` tells it: each flaw of an answer fails its one case, naming the
/// client that got it; the reference trips none of them, on answers it did judge.
#[deadline::test(secs = 900, flavor = "multi_thread", worker_threads = 2)]
async fn the_fleet_judges_every_answer_it_gets_by_the_probes_rules() {
    let _heavy = crate::support::heavy().await;
    let report = against_with("conforming", Some(reference_registry())).await;
    assert_eq!(
        crate::support::failing(&report),
        vec![],
        "{:#?}",
        report.cases
    );
    for id in [
        "fleet.answers-valid",
        "fleet.answers-expected",
        "fleet.retry-after",
    ] {
        let c = report.cases.iter().find(|c| c.id == id).unwrap();
        assert_eq!(c.status, Status::Pass, "{id}: {}", c.message);
        assert!(
            c.evidence.as_ref().is_some_and(|e| e.judged > 0),
            "{id}: {:?}",
            c.evidence
        );
    }
    for (flaw, case, needles) in [
        (
            "approves-without-rationale",
            "fleet.refusals",
            vec!["missing-fields-client (missing-fields): answered 200 approved"],
        ),
        (
            "confidence-as-percent",
            "fleet.answers-valid",
            vec!["steady (conforming): a QUERY answered 200: confidence"],
        ),
        (
            "unnamed-status",
            "fleet.answers-valid",
            vec!["steady (conforming): a QUERY answered 200: status"],
        ),
        (
            "local-timestamp",
            "fleet.answers-valid",
            vec!["steady (conforming): a QUERY answered 200: timestamp"],
        ),
        (
            "silent-429",
            "fleet.retry-after",
            vec!["flood (flood): a 429 with neither Retry-After nor rate-limit headers"],
        ),
    ] {
        let report = against_with(flaw, Some(reference_registry())).await;
        let failed = crate::support::failing(&report);
        assert_eq!(
            failed.iter().map(|(id, _)| *id).collect::<Vec<_>>(),
            vec![case],
            "{flaw}: {failed:#?}"
        );
        for needle in needles {
            assert!(failed[0].1.contains(needle), "{flaw}: {}", failed[0].1);
        }
    }
}

#[test]
fn fleet_files_name_what_is_wrong() {
    let e = Fleet::parse("f.yaml", "protocol: librarian\nlibrarian:\n  url: http://x:1\n  clients:\n    - { name: a, agent: x, token: t, behavior: shout }\n", None).err().unwrap();
    assert!(
        matches!(&e, FleetFileError::Client { file, client, .. } if file == "f.yaml" && client == "a"),
        "{e:?}"
    );
    assert!(
        e.to_string()
            .starts_with("f.yaml: client \"a\": behavior \"shout\" is not one of conforming"),
        "{e}"
    );
    let e = Fleet::parse("f.yaml", "protocol: librarian\nlibrarian:\n  url: http://x:1\n  clients:\n    - { name: a, agent: x, token: t, behavior: flood, rate: fast }\n", None).err().unwrap();
    assert_eq!(
        e,
        FleetFileError::Client {
            file: "f.yaml".into(),
            client: "a".into(),
            what: "rate \"fast\": expected N/min or N/s".into(),
        }
    );
    assert_eq!(
        e.to_string(),
        "f.yaml: client \"a\": rate \"fast\": expected N/min or N/s"
    );
    let e = Fleet::parse("f.yaml", "protocol: librarian\nlibrarian:\n  url: http://x:1\n  clients:\n    - { name: a, agent: x, token: t, behavior: foreign-agent-id }\n", None).err().unwrap();
    assert_eq!(
        e.to_string(),
        "f.yaml: client \"a\": foreign-agent-id speaks in another agent's name, and the fleet \
         (or its registry) names no agent but x: add a client of another agent"
    );
    // The preset's tokens come from TOKEN_1 and TOKEN_2 (without them it is refused: see
    // `the_librarian_preset_without_its_tokens_is_refused_naming_the_variable`).
    let preset = include_str!("../../mocks/librarian-chaos.yaml")
        .replace("${TOKEN_1}", "t1")
        .replace("${TOKEN_2}", "t2");
    let fleet = Fleet::parse(
        "mocks/librarian-chaos.yaml",
        &preset,
        Some("http://127.0.0.1:9"),
    )
    .unwrap();
    assert_eq!(fleet.target(), "http://127.0.0.1:9");
}

/// The preset's tokens are the server's, from TOKEN_1 and TOKEN_2: without one, the run is a
/// usage error before anything is sent, naming the variable, the file and its line (before, the
/// preset's placeholder tokens ran 20 s and every answer was a 401).
#[test]
fn the_librarian_preset_without_its_tokens_is_refused_naming_the_variable() {
    let url = format!("http://127.0.0.1:{}", closed_port());
    let line = include_str!("../../mocks/librarian-chaos.yaml")
        .lines()
        .position(|l| l.contains("${TOKEN_1}"))
        .unwrap()
        + 1;
    let started = std::time::Instant::now();
    let mut command = crate::support::tck_command(&[
        "mock",
        "fleet",
        "--preset",
        "librarian-chaos",
        "--platform-url",
        &url,
    ]);
    command.env_remove("TOKEN_1").env("TOKEN_2", "t2");
    let out = crate::support::run_within(command, crate::support::RUN_DEADLINE);
    let text = crate::support::text(&out);
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(
        text.contains(&format!(
            "mocks/librarian-chaos.yaml:{line}: ${{TOKEN_1}}: the environment variable TOKEN_1 \
             is not set (the built-in preset librarian-chaos reads it: set it, as in `TOKEN_1=… \
             agent-tck mock fleet --preset librarian-chaos …`, or write the preset out, \
             `agent-tck mock fleet --preset librarian-chaos --print-file > fleet.yaml`, edit it"
        )),
        "{text}"
    );
    // The tip's command runs as written (the variables still unset): the preset's file as built
    // in, to copy and edit, and nothing run.
    let mut command = crate::support::tck_command(&[
        "mock",
        "fleet",
        "--preset",
        "librarian-chaos",
        "--print-file",
    ]);
    command.env_remove("TOKEN_1").env_remove("TOKEN_2");
    let out = crate::support::run_within(command, crate::support::RUN_DEADLINE);
    assert_eq!(out.status.code(), Some(0), "{}", crate::support::text(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim_end(),
        include_str!("../../mocks/librarian-chaos.yaml").trim_end()
    );
    // A built-in file takes no default: the user file's tip is not given.
    assert!(!text.contains("give a default"), "{text}");
    // The same file given as the user's own: a default is theirs to give.
    let file = concat!(env!("CARGO_MANIFEST_DIR"), "/mocks/librarian-chaos.yaml");
    let mut command =
        crate::support::tck_command(&["mock", "fleet", "--config", file, "--platform-url", &url]);
    command.env_remove("TOKEN_1").env("TOKEN_2", "t2");
    let out = crate::support::run_within(command, crate::support::RUN_DEADLINE);
    let text = crate::support::text(&out);
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(
        text.contains(&format!(
            "librarian-chaos.yaml:{line}: ${{TOKEN_1}}: the environment variable TOKEN_1 is not \
             set (set it, or give a default: ${{TOKEN_1:-VALUE}})"
        )) && !text.contains("built-in preset"),
        "{text}"
    );
    assert!(!text.contains("is down"), "nothing was sent: {text}");
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
}

/// A port nothing listens on (bound a moment ago, then released).
fn closed_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
fn a_librarian_that_is_down_is_one_failure_naming_it_and_no_client_runs() {
    let url = format!("http://127.0.0.1:{}", closed_port());
    let dir = crate::support::TempDir::new("librarian-fleet-down");
    let json = dir.path("fleet.json");
    let started = std::time::Instant::now();
    // The preset runs its clients for 20 s: a run far shorter than that started none.
    let mut command = crate::support::tck_command(&[
        "mock",
        "fleet",
        "--preset",
        "librarian-chaos",
        "--platform-url",
        &url,
        "--json",
        &json,
    ]);
    command.env("TOKEN_1", "t1").env("TOKEN_2", "t2");
    let out = crate::support::run_within(command, std::time::Duration::from_secs(90));
    let took = started.elapsed();
    let text = crate::support::text(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        took < std::time::Duration::from_secs(12),
        "took {took:?}: {text}"
    );
    let report: Report = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let failed = crate::support::failing(&report);
    assert_eq!(failed.len(), 1, "{failed:#?}");
    let (id, message) = failed[0];
    assert_eq!(id, "fleet.no-5xx");
    assert!(
        message.starts_with(&format!(
            "the Librarian at {url} is down: GET /agent/capabilities got no answer (cannot connect to 127.0.0.1:"
        )) && message.contains("no client was started")
            && message.contains("librarian.url (or --platform-url)"),
        "{message}"
    );
    assert!(!message.contains("agent unreachable"), "{message}");
    for c in report.cases.iter().filter(|c| c.id != "fleet.no-5xx") {
        assert_eq!(c.status, Status::Skip, "{}: {}", c.id, c.message);
        assert_eq!(
            c.message,
            format!(
                "not judged: the Librarian at {url} is down (see fleet.no-5xx); a Librarian answering at {url} exercises this case"
            ),
            "{}",
            c.id
        );
    }
    assert_eq!(report.cases.len(), 10, "{:#?}", report.cases);
    assert!(
        text.contains(&format!("the Librarian at {url} is down")),
        "{text}"
    );
}

/// Conforming clients against the reference: `steady` with a token of the server's, and, with
/// `stranger`, one whose token the server does not know (every request answered 401).
fn conforming_file(url: &str, steady: bool, stranger: bool) -> String {
    let t = reference_tokens();
    let (a1, t1, a2) = (&t[0].0, &t[0].1, &t[1].0);
    let mut text = format!(
        "protocol: librarian\nlibrarian:\n  url: {url}\n  duration: 10s\n  requests: 3\n  clients:\n"
    );
    if steady {
        text.push_str(&format!(
            "    - {{ name: steady, agent: {a1}, token: {t1}, behavior: conforming, rate: 600/min }}\n"
        ));
    }
    if stranger {
        text.push_str(&format!(
            "    - {{ name: stranger, agent: {a2}, token: not-a-token-of-the-server, behavior: conforming, rate: 600/min }}\n"
        ));
    }
    text
}

#[deadline::test(flavor = "multi_thread", worker_threads = 2)]
async fn conforming_latency_names_the_conforming_clients_that_got_nothing_to_time() {
    let served = reference(Flaws::named("conforming").unwrap())
        .await
        .unwrap();
    let latency = |report: &Report| {
        report
            .cases
            .iter()
            .find(|c| c.id == "fleet.conforming-latency")
            .unwrap()
            .clone()
    };
    // One answered, one refused every time: timed over the answered, the other named.
    let fleet = Fleet::parse("f.yaml", &conforming_file(&served.url, true, true), None).unwrap();
    let both = latency(&run(&fleet, false, 1).await);
    // Only the refused one: nothing to time, and the message says why (not "no such client").
    let fleet = Fleet::parse("f.yaml", &conforming_file(&served.url, false, true), None).unwrap();
    let refused = latency(&run(&fleet, false, 1).await);
    served.stop().await;

    assert_eq!(both.status, Status::Pass, "{}", both.message);
    assert_eq!(
        both.evidence.as_ref().unwrap().judged,
        3,
        "{}",
        both.message
    );
    assert!(
        both.message.starts_with("p99 ")
            && both.message.ends_with(
                " over 3 answers; no 2xx answer to time from stranger (conforming): 3 requests, 3 answered 401"
            ),
        "{}",
        both.message
    );
    assert_eq!(refused.status, Status::Skip, "{}", refused.message);
    assert_eq!(
        refused.message,
        "not judged: no conforming client got a 2xx answer to time (see fleet.conforming-served): stranger (conforming): 3 requests, 3 answered 401; a Librarian that answers them 2xx exercises this case"
    );
}

#[deadline::test]
async fn conforming_latency_without_a_conforming_client_says_to_add_one() {
    let served = reference(Flaws::named("conforming").unwrap())
        .await
        .unwrap();
    let t = reference_tokens();
    let text = format!(
        "protocol: librarian\nlibrarian:\n  url: {}\n  duration: 10s\n  requests: 2\n  clients:\n    - {{ name: big, agent: {}, token: {}, behavior: oversized, rate: 600/min }}\n",
        served.url, t[1].0, t[1].1
    );
    let fleet = Fleet::parse("f.yaml", &text, None).unwrap();
    let report = run(&fleet, false, 1).await;
    served.stop().await;
    let c = report
        .cases
        .iter()
        .find(|c| c.id == "fleet.conforming-latency")
        .unwrap();
    assert_eq!(c.status, Status::Skip, "{}", c.message);
    assert_eq!(
        c.message,
        "not judged: the fleet has no conforming client to time: add one (`behavior: conforming`), speaking for an agent of its own"
    );
}

/// The conforming fleet's report against a Librarian that answers every request `status`.
async fn fleet_against(status: u16) -> Report {
    let server = answering(status).await;
    let fleet = Fleet::parse("f.yaml", &conforming_file(&server.url(), true, false), None).unwrap();
    let report = run(&fleet, false, 1).await;
    server.stop().await;
    report
}

/// A Librarian that answers every request with `status` (and `Retry-After: 42` on a 429), its
/// capabilities 200: one whose agents' rate limit an earlier run spent, or one that refuses.
async fn answering(status: u16) -> crate::stub_server::Running {
    use axum::http::StatusCode;
    use axum::routing::{get, post};
    let app = axum::Router::new()
        .route(
            "/agent/capabilities",
            get(|| async { axum::Json(serde_json::json!({"capabilities": []})) }),
        )
        .route(
            "/agent/request",
            post(move || async move {
                let code = StatusCode::from_u16(status).unwrap();
                let mut response = axum::response::IntoResponse::into_response((
                    code,
                    axum::Json(serde_json::json!({"detail": "refused"})),
                ));
                if status == 429 {
                    response
                        .headers_mut()
                        .insert("retry-after", "42".parse().unwrap());
                }
                response
            }),
        );
    crate::stub_server::spawn("127.0.0.1:0".parse().unwrap(), app)
        .await
        .unwrap()
}

/// `fleet.conforming-served` against a Librarian that answers the conforming client only 429s
/// (its rate limit spent by an earlier probe on the same server): the failure says the limit is
/// spent, when to come back and what else to do, and the cases with nothing to judge do not send
/// the user to another URL. A server that refuses with a 401 is not said to be rate-limited.
#[deadline::test]
async fn a_spent_rate_limit_is_said_as_such() {
    let conforming = |report: &Report| {
        report
            .cases
            .iter()
            .find(|c| c.id == "fleet.conforming-served")
            .unwrap()
            .clone()
    };
    let report = fleet_against(429).await;
    let served = conforming(&report);
    assert_eq!(served.status, Status::Fail, "{}", served.message);
    assert!(
        served.message.ends_with(
            "every refusal was a 429: the agent's rate limit is spent (claude-3: an earlier probe \
             or fleet on this server may have used it): wait 42 s (the Retry-After it sent) or \
             use another agent"
        ),
        "{}",
        served.message
    );
    let valid = report
        .cases
        .iter()
        .find(|c| c.id == "fleet.answers-valid")
        .unwrap();
    assert!(
        valid
            .message
            .contains("it answered 429, the agent's rate limit is spent")
            && !valid.message.contains("--platform-url"),
        "{}",
        valid.message
    );
}

/// A Librarian that refuses every request 401, run without a registry (the preset's way, its
/// tokens wrong for this server): one cause, said once where it belongs (`fleet.conforming-
/// served`, not judged: the tokens), and the case with nothing to judge saying it rests on that
/// — not a failure of one case and a skip of the other.
#[deadline::test]
async fn a_librarian_refusing_every_token_is_said_once_and_the_rest_rests_on_it() {
    let report = fleet_against(401).await;
    let case = |id: &str| report.cases.iter().find(|c| c.id == id).unwrap().clone();
    let served = case("fleet.conforming-served");
    let valid = case("fleet.answers-valid");
    assert_eq!(served.status, Status::Skip, "{}", served.message);
    assert_eq!(valid.status, Status::Skip, "{}", valid.message);
    assert!(
        served.message.starts_with(
            "not judged: it refused every request 401 (claude-3): the tokens are wrong for this \
             server; give each client a token this server issued for its agent"
        ) && !served.message.contains("add one"),
        "{}",
        served.message
    );
    assert!(
        valid.message.contains(
            "from POST /agent/request: it refused every request 401 (claude-3), for the clients' \
             tokens (see fleet.conforming-served)"
        ) && !valid.message.contains("the tokens are wrong")
            && !valid.message.contains("--platform-url"),
        "{}",
        valid.message
    );
}
