//! The try-it pairs of the Librarian and the connector: `mock agent --protocol librarian|connector`
//! serves the reference peer the self-test certifies (with the flaws its matrix plays), prints the
//! probe command to point at it, and ends on Ctrl-C; `probe librarian|connector` against it
//! passes every case, or fails exactly a flaw's. The mock Librarian sets the probe's marked
//! requests aside and still judges an unmarked bad one. Every peer here is the kit's own binary.

use std::time::Duration;

use serde_json::Value;

use crate::support::{tck_within, text, Spawned, TempDir, RUN_DEADLINE};

/// The reference peer of `protocol` served by `mock agent` with `extra` flags: the process, and
/// its two readiness lines (what it serves, and the probe command).
fn serve(protocol: &str, extra: &[&str]) -> (Spawned, String, String) {
    let mut args = vec!["mock", "agent", "--protocol", protocol, "--port", "0"];
    args.extend_from_slice(extra);
    let mut child = Spawned::tck(&args, RUN_DEADLINE);
    let banner = child.line();
    let probe = child.line();
    (child, banner, probe)
}

/// The probe command a readiness line gives, as arguments (after `agent-tck`).
fn probe_args(line: &str) -> Vec<String> {
    let command = line
        .trim()
        .strip_prefix("probe it: agent-tck ")
        .unwrap_or_else(|| panic!("no probe command in {line:?}"));
    command.split(' ').map(str::to_string).collect()
}

/// Runs a probe with `args`, writing its JSON report: (exit status, the report).
fn probe(args: &[String], dir: &TempDir) -> (Option<i32>, Value) {
    let json = dir.path("probe.json");
    let mut all: Vec<&str> = args.iter().map(String::as_str).collect();
    all.extend(["--json", &json]);
    let out = tck_within(&all, RUN_DEADLINE);
    let report = read_report(&json, &out);
    (out.status.code(), report)
}

fn read_report(path: &str, out: &std::process::Output) -> Value {
    let text_of = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{path}: {e}; printed:\n{}", text(out)));
    serde_json::from_str(&text_of).unwrap()
}

/// The ids of the cases of `report` with `status`.
fn with_status(report: &Value, status: &str) -> Vec<String> {
    report["cases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["status"] == status)
        .map(|c| c["id"].as_str().unwrap().to_string())
        .collect()
}

/// The case `id` of `report`.
fn case<'r>(report: &'r Value, id: &str) -> &'r Value {
    report["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == id)
        .unwrap_or_else(|| panic!("no case {id}"))
}

/// The connector's reference agent, probed as its readiness line says: every case passes; on
/// Ctrl-C it ends 130 (interrupted: it judges nothing), saying so.
#[test]
fn probe_connector_passes_every_case_against_mock_agent() {
    let dir = TempDir::new("try-it-connector");
    let (child, banner, line) = serve("connector", &[]);
    assert!(
        banner.starts_with(
            "agent-tck mock agent · connector · the reference external agent (behavior conforming) · inputUrl http://127.0.0.1:"
        ),
        "{banner}"
    );
    let input = banner.rsplit(' ').next().unwrap();
    assert!(input.ends_with("/v1/assistant/input"), "{banner}");
    let args = probe_args(&line);
    assert_eq!(args, ["probe", "connector", "--input-url", input]);
    let (status, report) = probe(&args, &dir);
    assert_eq!(status, Some(0), "{report:#}");
    assert_eq!(with_status(&report, "fail"), Vec::<String>::new());
    assert_eq!(with_status(&report, "skip"), Vec::<String>::new());
    assert_eq!(with_status(&report, "pass").len(), 14);
    let out = child.interrupt(Duration::from_secs(30));
    assert_eq!(out.status.code(), Some(130), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("interrupted: the reference external agent stopped"),
        "{}",
        text(&out)
    );
}

/// With flaws (comma-separated), exactly their cases fail (mocks/matrix-connector.yaml).
#[test]
fn probe_connector_fails_exactly_the_flaws_cases() {
    let dir = TempDir::new("try-it-connector-flaw");
    let (child, banner, line) = serve("connector", &["--behavior", "put-callback,drops-query"]);
    assert!(
        banner.contains("(behavior put-callback,drops-query)"),
        "{banner}"
    );
    let (status, report) = probe(&probe_args(&line), &dir);
    assert_eq!(status, Some(1), "{report:#}");
    assert_eq!(
        with_status(&report, "fail"),
        ["callback.exact-url", "callback.method"]
    );
    drop(child);
}

/// The reference Librarian, probed as its readiness line says: all 50 cases pass. The mock's
/// own report (on Ctrl-C) sets the probe's marked requests aside (client.probe-requests, with
/// their count) and holds none of them against the client; one unmarked request without its
/// rationale still fails client.request-schema, alone.
#[deadline::test(flavor = "multi_thread", worker_threads = 2)]
async fn probe_librarian_passes_against_mock_agent_which_sets_the_marked_requests_aside() {
    let dir = TempDir::new("try-it-librarian");
    let mock_json = dir.path("mock.json");
    let (child, banner, line) =
        tokio::task::block_in_place(|| serve("librarian", &["--json", &mock_json]));
    assert!(
        banner.starts_with(
            "agent-tck mock agent · librarian · the reference Librarian (behavior conforming) · listening on http://127.0.0.1:"
        ),
        "{banner}"
    );
    let url = banner.rsplit(' ').next().unwrap().to_string();
    let mut args = probe_args(&line);
    assert_eq!(
        args.join(" "),
        format!(
            "probe librarian --url {url} --token claude-3=tck-token-claude-3 --token \
             gemini-pro=tck-token-gemini-pro --registry mocks/librarian-agents.yaml \
             --allow-deviations false"
        )
    );
    // The file named is the repository's, whatever the tests' working directory.
    let registry = args.iter().position(|a| a == "--registry").unwrap() + 1;
    args[registry] = format!("{}/{}", env!("CARGO_MANIFEST_DIR"), args[registry]);
    let (status, report) = tokio::task::block_in_place(|| probe(&args, &dir));
    assert_eq!(status, Some(0), "{report:#}");
    assert_eq!(with_status(&report, "fail"), Vec::<String>::new());
    assert_eq!(with_status(&report, "skip"), Vec::<String>::new());
    assert_eq!(with_status(&report, "pass").len(), 50);

    // One request of the client's own (unmarked), without the rationale an APPROVAL needs (from
    // the second agent: the probe's rate group has used up the first one's minute).
    let base = agent_tck::transport::http::BaseUrl::parse(&url).unwrap();
    let mut body = agent_tck::protocols::librarian::model::request("gemini-pro", "APPROVAL", 1);
    body.as_object_mut().unwrap().remove("rationale");
    let request = agent_tck::transport::http::Request {
        method: "POST".into(),
        path: "/agent/request".into(),
        headers: vec![
            ("content-type".into(), "application/json".into()),
            ("authorization".into(), "Bearer tck-token-gemini-pro".into()),
        ],
        body: body.to_string().into(),
    };
    let limits = agent_tck::transport::http::Limits {
        deadline: Duration::from_secs(30),
        ..Default::default()
    };
    let answer = agent_tck::transport::http::send(&base, &request, limits)
        .await
        .unwrap();
    assert_eq!(answer.status, 400, "the rules refuse it: {answer:?}");

    let out = tokio::task::block_in_place(|| child.interrupt(Duration::from_secs(30)));
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let mock = read_report(&mock_json, &out);
    assert_eq!(with_status(&mock, "fail"), ["client.request-schema"]);
    let schema = case(&mock, "client.request-schema");
    let message = schema["message"].as_str().unwrap();
    assert!(
        message.starts_with("1 of ") && message.contains("required field \"rationale\" is missing"),
        "{message}"
    );
    assert_eq!(with_status(&mock, "warn"), Vec::<String>::new());
    let aside = case(&mock, "client.probe-requests");
    assert_eq!(aside["status"], "pass", "{aside:#}");
    let marked = aside["evidence"]["judged"].as_u64().unwrap();
    assert!(marked >= 40, "{aside:#}");
    let note = aside["message"].as_str().unwrap();
    for kind in [
        "auth.no-token at POST /agent/request (1)",
        "fields.approval-without-rationale at POST /agent/request (1)",
        "limits.content-over at POST /agent/request (1)",
    ] {
        assert!(note.contains(kind), "{kind}: {note}");
    }
    assert!(
        note.starts_with(&format!("{marked} marked requests set aside: ")),
        "{note}"
    );
    // The reference's tokens, printed for the probe, are masked in the mock's report.
    let written = std::fs::read_to_string(&mock_json).unwrap();
    assert!(!written.contains("tck-token-claude-3"));
}

/// With a flaw, exactly its case fails (mocks/matrix-librarian.yaml).
#[test]
fn probe_librarian_fails_exactly_the_flaws_case() {
    let dir = TempDir::new("try-it-librarian-flaw");
    let (child, banner, line) = serve("librarian", &["--behavior", "approves-without-rationale"]);
    assert!(
        banner.contains("(behavior approves-without-rationale)"),
        "{banner}"
    );
    let mut args = probe_args(&line);
    let registry = args.iter().position(|a| a == "--registry").unwrap() + 1;
    args[registry] = format!("{}/{}", env!("CARGO_MANIFEST_DIR"), args[registry]);
    let (status, report) = probe(&args, &dir);
    assert_eq!(status, Some(1), "{report:#}");
    assert_eq!(
        with_status(&report, "fail"),
        ["fields.approval-without-rationale"]
    );
    drop(child);
}

/// A flaw that is none, and the flags that are not for a reference peer: usage errors (exit 2)
/// that say what is wrong, and nothing served.
#[test]
fn mock_agent_refuses_what_a_reference_peer_does_not_take() {
    let cases: [(&[&str], &str); 6] = [
        (
            &["--protocol", "connector", "--behavior", "slow-ack,no-such"],
            "agent-tck: error: --behavior \"no-such\": no flaw of the reference external agent (known: \
             conforming, slow-ack, hard-coded-callback, json-envelope, empty-callback, \
             whitespace-callback, stray-callback, floods-failing-endpoint, put-callback, \
             drops-query, many-callbacks)",
        ),
        (
            &["--protocol", "librarian", "--behavior", "slow-ack"],
            "agent-tck: error: --behavior \"slow-ack\": no flaw of the reference Librarian (known: \
             conforming, accepts-any-content-type,",
        ),
        (
            &["--protocol", "connector", "--stdio"],
            "agent-tck: error: --stdio, --tcp and --unix: not for --protocol connector: its reference \
             peer is served over HTTP, as it is",
        ),
        (
            &["--protocol", "connector", "--json", "r.json"],
            "agent-tck: error: --json, --junit and --html: not for --protocol connector",
        ),
        (
            &["--protocol", "librarian", "--scenario", "s.yaml"],
            "agent-tck: error: --scenario: not for --protocol librarian",
        ),
        (
            &["--protocol", "connector", "--seed", "7"],
            "agent-tck: error: --seed: not for --protocol connector",
        ),
    ];
    for (flags, expected) in cases {
        let mut args = vec!["mock", "agent", "--port", "0"];
        args.extend_from_slice(flags);
        let out = tck_within(&args, Duration::from_secs(60));
        assert_eq!(out.status.code(), Some(2), "{flags:?}: {}", text(&out));
        assert!(
            out.stdout.is_empty(),
            "{flags:?}: nothing served: {}",
            text(&out)
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.starts_with(expected), "{flags:?}: {stderr}");
    }
}
