//! The mock Librarian judges an agent client: a small conforming client (the example a client
//! author can start from) is judged clean against a script of every decision and fault, and
//! clients with one flaw each are caught by exactly their check.

use std::time::Duration;

use agent_tck::protocols::librarian::mock::Script;
use agent_tck::protocols::librarian::model;
use agent_tck::protocols::librarian::reference::{self, Flaws, Librarian};
use agent_tck::report::{CaseResult, Status};
use agent_tck::transport::http::{send, BaseUrl, Limits, Request};
use serde_json::{json, Value};

/// How a client goes wrong (the example client has no flaw).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Flaws_ {
    pub(crate) ignores_429: bool,
    pub(crate) tight_polling: bool,
    pub(crate) never_reports: bool,
    pub(crate) no_token: bool,
    pub(crate) no_rationale: bool,
    /// Reports an escalated change at once, without waiting for the human.
    pub(crate) reports_escalated_early: bool,
    /// Its first change's content is over 100 KB.
    pub(crate) oversized_content: bool,
}

/// The example client: the proxy's tests put it behind the proxy (`proxy_librarian.rs`).
pub(crate) struct Client {
    pub(crate) base: BaseUrl,
    pub(crate) flaws: Flaws_,
    pub(crate) n: usize,
}

pub(crate) struct Answer {
    status: u16,
    json: Option<Value>,
    retry_after: Option<u64>,
}

impl Client {
    pub(crate) async fn call(
        &self,
        method: &str,
        path: &str,
        body: Option<&Value>,
    ) -> Option<Answer> {
        let mut headers = vec![("content-type".to_string(), "application/json".to_string())];
        if !self.flaws.no_token {
            headers.push(("authorization".into(), "Bearer example-token".into()));
        }
        let request = Request {
            method: method.into(),
            path: path.into(),
            headers,
            body: body.map(|b| b.to_string().into()).unwrap_or_default(),
        };
        let limits = Limits {
            deadline: Duration::from_secs(15),
            ..Limits::default()
        };
        let r = send(&self.base, &request, limits).await.ok()?;
        Some(Answer {
            status: r.status,
            json: serde_json::from_slice(&r.body).ok(),
            retry_after: r.header("retry-after").and_then(|v| v.parse().ok()),
        })
    }

    /// Sends `body`, retrying a failure at most 3 times (after Retry-After for a 429).
    pub(crate) async fn request(&self, body: &Value) -> Option<Value> {
        for _ in 0..=model::LIMITS.max_retries {
            let answer = self.call("POST", "/agent/request", Some(body)).await;
            match answer {
                Some(Answer {
                    status: 429,
                    retry_after,
                    ..
                }) => {
                    if !self.flaws.ignores_429 {
                        tokio::time::sleep(Duration::from_secs(retry_after.unwrap_or(1))).await;
                    }
                }
                Some(Answer {
                    status: 200,
                    json: Some(v),
                    ..
                }) => return Some(v),
                Some(Answer { status, .. }) if (400..500).contains(&status) => return None,
                _ => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        }
        None
    }

    fn approval(&mut self, extra: &str) -> Value {
        self.n += 1;
        let mut r = model::request("example-agent", "APPROVAL", self.n);
        r["content"] = json!(format!("# Design {}\n{extra}", self.n));
        if self.flaws.oversized_content && self.n == 1 {
            r["content"] = json!("x".repeat(model::LIMITS.max_content + 1));
        }
        if self.flaws.no_rationale {
            r.as_object_mut().unwrap().remove("rationale");
        }
        r
    }

    /// One change: asked for, fixed when rejected or unclear, awaited when escalated, reported
    /// when approved.
    pub(crate) async fn change(&mut self) {
        let mut body = self.approval("");
        for _ in 0..3 {
            let Some(answer) = self.request(&body).await else {
                return;
            };
            let id = answer["request_id"].as_str().unwrap_or("").to_string();
            match answer["status"].as_str() {
                Some("approved") => return self.report(&id).await,
                Some("escalated") if self.flaws.reports_escalated_early => {
                    return self.report(&id).await
                }
                Some("escalated") => {
                    if self.await_decision(&id).await {
                        self.report(&id).await;
                    }
                    return;
                }
                // Rejected or unclear: fix it, then ask again.
                _ => {
                    body["content"] = json!(format!(
                        "{}\nFixed after: {}",
                        body["content"].as_str().unwrap_or(""),
                        answer["feedback"]
                    ));
                    body["rationale"] =
                        json!("Implementing user story US-123, with the reviewer's points");
                }
            }
        }
    }

    async fn await_decision(&self, id: &str) -> bool {
        let every = if self.flaws.tight_polling { 100 } else { 1_100 };
        for _ in 0..30 {
            tokio::time::sleep(Duration::from_millis(every)).await;
            let status = self.call("GET", &format!("/agent/status/{id}"), None).await;
            match status
                .and_then(|a| a.json)
                .and_then(|v| v["status"].as_str().map(str::to_string))
                .as_deref()
            {
                Some("ESCALATED") | Some("escalated") => continue,
                Some("APPROVED") | Some("approved") => return true,
                _ => return false,
            }
        }
        false
    }

    async fn report(&mut self, id: &str) {
        if self.flaws.never_reports {
            return;
        }
        let mut r = model::request("example-agent", "REPORT", self.n);
        r["request_id"] = json!(id);
        self.request(&r).await;
    }
}

async fn judged(flaws: Flaws_) -> Vec<CaseResult> {
    let script = Script::parse(
        "mocks/librarian-decisions.yaml",
        include_str!("../../mocks/librarian-decisions.yaml"),
    )
    .unwrap();
    let served = reference::serve(Librarian::new(Vec::new(), Flaws::default()).mocking(script))
        .await
        .unwrap();
    let mut client = Client {
        base: BaseUrl::parse(&served.url).unwrap(),
        flaws,
        n: 0,
    };
    client.call("GET", "/agent/capabilities", None).await;
    for _ in 0..6 {
        client.change().await;
    }
    let cases = served.librarian.judge.as_ref().unwrap().cases();
    served.stop().await;
    cases
}

fn failing(cases: &[CaseResult]) -> Vec<&str> {
    cases
        .iter()
        .filter(|c| c.status == Status::Fail)
        .map(|c| c.id.as_str())
        .collect()
}

#[deadline::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_example_client_is_judged_clean_and_every_rule_is_exercised() {
    let cases = judged(Flaws_::default()).await;
    assert_eq!(failing(&cases), Vec::<&str>::new(), "{cases:#?}");
    for c in &cases {
        assert_eq!(
            c.status,
            Status::Pass,
            "{} judged nothing: {}",
            c.id,
            c.message
        );
    }
}

#[deadline::test(secs = 900, flavor = "multi_thread", worker_threads = 2)]
async fn each_flawed_client_is_caught_by_exactly_its_check() {
    let _heavy = crate::support::heavy().await;
    let cases = [
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
                tight_polling: true,
                ..Default::default()
            },
            "client.polling",
            "no faster than once a second",
        ),
        (
            Flaws_ {
                never_reports: true,
                ..Default::default()
            },
            "client.reports",
            "never reported",
        ),
        (
            Flaws_ {
                no_token: true,
                ..Default::default()
            },
            "client.bearer",
            "no Authorization: Bearer token",
        ),
        (
            Flaws_ {
                no_rationale: true,
                ..Default::default()
            },
            "client.request-schema",
            "rationale",
        ),
        (
            Flaws_ {
                reports_escalated_early: true,
                ..Default::default()
            },
            "client.waits-for-human",
            "while it awaited a human decision (ESCALATED)",
        ),
        (
            Flaws_ {
                oversized_content: true,
                ..Default::default()
            },
            "client.content-size",
            "content of 102401 bytes",
        ),
    ];
    for (flaws, check, needle) in cases {
        let judged = judged(flaws).await;
        assert_eq!(failing(&judged), vec![check], "{flaws:?}: {judged:#?}");
        let c = judged.iter().find(|c| c.id == check).unwrap();
        assert!(c.message.contains(needle), "{flaws:?}: {}", c.message);
    }
}

#[deadline::test(flavor = "multi_thread", worker_threads = 2)]
async fn mock_librarian_on_the_command_line_stops_after_n_requests_and_journals_them() {
    use tokio::io::AsyncBufReadExt;
    let dir = crate::support::TempDir::new("mock-librarian");
    let (journal, json) = (dir.path("j.jsonl"), dir.path("r.json"));
    let mut mock = tokio::process::Command::new(env!("CARGO_BIN_EXE_agent-tck"))
        .args(["mock", "librarian", "--port", "0", "--until", "2-requests"])
        .args(["--journal", &journal, "--json", &json])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut out = tokio::io::BufReader::new(mock.stdout.take().unwrap());
    let mut banner = String::new();
    tokio::time::timeout(Duration::from_secs(30), out.read_line(&mut banner))
        .await
        .expect("the mock's banner within 30 s")
        .unwrap();
    let url = banner
        .trim()
        .rsplit_once("listening on ")
        .unwrap()
        .1
        .to_string();
    let client = Client {
        base: BaseUrl::parse(&url).unwrap(),
        flaws: Flaws_::default(),
        n: 0,
    };
    let query = model::request("example-agent", "QUERY", 1);
    assert!(client.request(&query).await.is_some());
    let no_token = Client {
        flaws: Flaws_ {
            no_token: true,
            ..Default::default()
        },
        ..client
    };
    no_token.call("POST", "/agent/request", Some(&query)).await;
    let status = tokio::time::timeout(Duration::from_secs(20), mock.wait())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        status.code(),
        Some(1),
        "no token is a MUST failure of the client"
    );
    let lines: Vec<Value> = std::fs::read_to_string(&journal)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(
        (lines[0]["bearer"].clone(), lines[1]["bearer"].clone()),
        (json!(true), json!(false))
    );
    assert_eq!(lines[0]["body"]["request_type"], "QUERY");
    assert!(!std::fs::read_to_string(&journal)
        .unwrap()
        .contains("example-token"));
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(report["protocol"], "librarian");
    // Nothing in a Librarian mock is chosen by a seed: the report names none.
    assert_eq!(report.get("seed"), None, "{report}");
}

/// Runs `mock librarian` (with `extra` flags) until 4 requests: from each of two clients, one
/// with a long token and one with a short one, a body that is not JSON (a verdict's example
/// names its sender) and a valid QUERY. Returns everything it wrote: console, JSON, JUnit, HTML.
async fn mock_librarian_outputs(extra: &[&str], tokens: [(&str, &str); 2]) -> (String, Value) {
    use tokio::io::{AsyncBufReadExt, AsyncReadExt};
    let dir = crate::support::TempDir::new("mock-librarian-tokens");
    let (json_path, junit, html) = (dir.path("r.json"), dir.path("r.xml"), dir.path("r.html"));
    let mut mock = tokio::process::Command::new(env!("CARGO_BIN_EXE_agent-tck"))
        .args(["mock", "librarian", "--port", "0", "--until", "4-requests"])
        .args(["--json", &json_path, "--junit", &junit, "--html", &html])
        .args(extra)
        .env("NO_COLOR", "1")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut out = tokio::io::BufReader::new(mock.stdout.take().unwrap());
    let mut console = String::new();
    tokio::time::timeout(Duration::from_secs(30), out.read_line(&mut console))
        .await
        .expect("the mock's banner within 30 s")
        .unwrap();
    let url = console
        .trim()
        .rsplit_once("listening on ")
        .unwrap()
        .1
        .to_string();
    let base = BaseUrl::parse(&url).unwrap();
    for (agent, token) in tokens {
        let query = model::request(agent, "QUERY", 1);
        for body in [
            b"{\"agent_id\": \"half".to_vec(),
            query.to_string().into_bytes(),
        ] {
            let request = Request {
                method: "POST".into(),
                path: "/agent/request".into(),
                headers: vec![
                    ("content-type".into(), "application/json".into()),
                    ("authorization".into(), format!("Bearer {token}")),
                ],
                body: body.into(),
            };
            let limits = Limits {
                deadline: Duration::from_secs(10),
                ..Limits::default()
            };
            send(&base, &request, limits).await.unwrap();
        }
    }
    let status = tokio::time::timeout(Duration::from_secs(20), mock.wait())
        .await
        .expect("the mock stops after 4 requests")
        .unwrap();
    assert_eq!(
        status.code(),
        Some(1),
        "bodies that are not JSON fail the client"
    );
    out.read_to_string(&mut console).await.unwrap();
    mock.stderr
        .take()
        .unwrap()
        .read_to_string(&mut console)
        .await
        .unwrap();
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(&json_path).unwrap()).unwrap();
    let mut written = console;
    for path in [&json_path, &junit, &html] {
        written.push_str(&std::fs::read_to_string(path).unwrap());
    }
    (written, report)
}

/// A client's bearer token never shows in `mock librarian`'s verdicts, in any format, with or
/// without a registry, however short: the judge names a token by its number.
#[deadline::test(flavor = "multi_thread", worker_threads = 2)]
async fn mock_librarian_never_prints_a_clients_token() {
    let tokens = [
        ("claude-3", "tck-client-secret-7f3a9c"),
        ("gemini-pro", "Qz9_Xv"),
    ];
    let dir = crate::support::TempDir::new("mock-librarian-registry");
    let registry = dir.path("agents.yaml");
    std::fs::write(
        &registry,
        format!(
            "agents:\n  claude-3:\n    token: {}\n  gemini-pro:\n    token: {}\n",
            tokens[0].1, tokens[1].1
        ),
    )
    .unwrap();
    for extra in [vec![], vec!["--registry", registry.as_str()]] {
        let (written, report) = mock_librarian_outputs(&extra, tokens).await;
        for (_, token) in tokens {
            assert!(
                !written.contains(token),
                "{extra:?}: {token} is printed:\n{written}"
            );
        }
        let schema = report["cases"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["id"] == "client.request-schema")
            .unwrap();
        assert_eq!(schema["status"], "fail", "{extra:?}: {schema}");
        let message = schema["message"].as_str().unwrap();
        assert!(
            message.contains("token #1: a body that is not JSON")
                && message.contains("token #2: a body that is not JSON"),
            "{extra:?}: {message}"
        );
    }
}

/// `mock librarian`'s errors are classed by their type: a `--journal` that cannot be created is
/// a usage error (exit 2: nothing was served), a port already taken a run that could not go on
/// (exit 1); each is one line on stderr that names what failed.
#[test]
fn mock_librarian_exits_2_on_a_journal_it_cannot_create_and_1_on_a_port_taken() {
    let dir = crate::support::TempDir::new("librarian-exit");
    let journal = dir.path("no-such-dir/journal.jsonl");
    let args = ["mock", "librarian", "--port", "0", "--until", "1-requests"];
    let out = crate::support::tck_within(
        &[&args[..], &["--journal", &journal]].concat(),
        Duration::from_secs(30),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{}", crate::support::text(&out));
    assert!(
        err.starts_with(&format!(
            "agent-tck: error: --journal {journal}: cannot create: "
        )) && err.trim().lines().count() == 1,
        "{err}"
    );
    assert!(out.stdout.is_empty(), "{}", crate::support::text(&out));

    // Held open until the run has ended, so that the port stays taken.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let out = crate::support::tck_within(
        &[
            "mock",
            "librarian",
            "--port",
            &port,
            "--until",
            "1-requests",
        ],
        Duration::from_secs(30),
    );
    drop(taken);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{}", crate::support::text(&out));
    assert!(
        err.starts_with(&format!(
            "agent-tck: error: cannot listen on 127.0.0.1:{port}: "
        )) && err.trim().lines().count() == 1,
        "{err}"
    );
}
