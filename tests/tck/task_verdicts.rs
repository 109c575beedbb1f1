//! execute_task's two kinds of verdict: agents that follow the protocol to the letter but are
//! not tuned to the built-in scenarios pass (exit 0) with their evaluation score printed, over
//! every transport; an expectation gated with `level: must`, and `--min-score`, fail the run.

use std::process::Output;

use agent_tck::mock::Reply;
use agent_tck::text::shell_quote;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use crate::support::{self, TempDir};

/// An agent that follows the protocol but knows nothing of the scenarios.
#[derive(Clone, Copy, Debug)]
enum Naive {
    /// final_answer at once, every turn.
    FinalAnswer,
    /// Turn 1: a tool no sandbox has; then final_answer.
    UnknownTool,
    /// Turn 1: call_multiple_tools; then final_answer.
    ManyTools,
}

const FINAL: &str = r#"{"action":"final_answer","summary":"Done"}"#;
const UNKNOWN: &str =
    r#"{"action":"call_tool","tool_name":"teleport_customer","tool_params":{"to":"mars"}}"#;
const MANY: &str = r#"{"action":"call_multiple_tools","tool_names":["run_line_test","run_remote_speed_test"],"tool_outputs":[{},{}],"summary":"Remote diagnostics."}"#;

impl Naive {
    const ALL: [Naive; 3] = [Naive::FinalAnswer, Naive::UnknownTool, Naive::ManyTools];

    fn first(self) -> &'static str {
        match self {
            Naive::FinalAnswer => FINAL,
            Naive::UnknownTool => UNKNOWN,
            Naive::ManyTools => MANY,
        }
    }

    fn answer(self, request: &Value) -> &'static str {
        if request["turn"] == json!(1) {
            self.first()
        } else {
            FINAL
        }
    }

    /// The same agent as a shell program (a line in, a line out; the last line may lack its
    /// newline, as in per-turn mode). The harness's requests are compact JSON.
    fn script(self) -> String {
        format!(
            "while IFS= read -r line || [ -n \"$line\" ]; do\n  case \"$line\" in\n    \
             *'\"turn\":1,'*|*'\"turn\":1}}'*) echo '{}' ;;\n    *) echo '{FINAL}' ;;\n  esac\ndone\n",
            self.first()
        )
    }
}

fn answer_reply(agent: Naive, request: &Value) -> Reply {
    let answer: Value = serde_json::from_str(agent.answer(request)).unwrap();
    Reply::json(200, &answer)
}

async fn probe(args: &[&str]) -> Output {
    let mut command =
        crate::support::tck_command(&["probe", "execute-task", "--seed", "5", "--timeout", "20s"]);
    command.args(args);
    crate::support::run_within_async(command, crate::support::RUN_DEADLINE).await
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Exit 0, no conformance failure, and the evaluation score line printed.
fn assert_passes_with_a_score(what: &str, out: &Output) {
    let stdout = text(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{what}: {stdout}\n{}",
        text(&out.stderr)
    );
    // Conformance: nothing fails the run (the missing name is a SHOULD warning).
    assert!(
        stdout.contains("0 MUST failed, 1 SHOULD failed (warnings)"),
        "{what}: {stdout}"
    );
    let score = stdout
        .lines()
        .find(|l| l.starts_with("evaluation: "))
        .unwrap_or_else(|| panic!("{what}: no score line: {stdout}"));
    assert!(score.contains("expectations met"), "{what}: {score}");
    // Not tuned to the scenarios: some expectations are unmet, and shown as such.
    assert!(stdout.contains("UNMET"), "{what}: {stdout}");
    assert!(!stdout.contains("FAIL "), "{what}: {stdout}");
}

async fn tcp_agent(agent: Naive) -> (String, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let task = tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let (r, mut w) = stream.into_split();
                let mut lines = BufReader::new(r).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    let request: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
                    let answer = format!("{}\n", agent.answer(&request));
                    if w.write_all(answer.as_bytes()).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    (addr, task)
}

#[deadline::test(flavor = "multi_thread", worker_threads = 2)]
async fn agents_not_tuned_to_the_scenarios_pass_on_every_transport() {
    let dir = TempDir::new("naive-agents");
    for agent in Naive::ALL {
        // HTTP
        let server = support::stub(move |req| answer_reply(agent, &req.json())).await;
        let out = probe(&["--url", &server.url()]).await;
        assert_passes_with_a_score(&format!("{agent:?} over http"), &out);
        server.stop().await;
        // TCP
        let (addr, task) = tcp_agent(agent).await;
        let out = probe(&["--tcp", &addr]).await;
        assert_passes_with_a_score(&format!("{agent:?} over tcp"), &out);
        task.abort();
        // stdio, both modes
        let script = dir.path(&format!("{agent:?}.sh"));
        std::fs::write(&script, agent.script()).unwrap();
        let command = format!("sh {}", shell_quote(&script));
        for mode in ["persistent", "per-turn"] {
            let out = probe(&["--stdio", &command, "--stdio-mode", mode]).await;
            assert_passes_with_a_score(&format!("{agent:?} over stdio ({mode})"), &out);
        }
    }
}

#[deadline::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_specs_python_example_passes_with_its_score_in_both_stdio_modes() {
    let Some(python) = support::python() else {
        eprintln!("python3 not found; skipped");
        return;
    };
    let dir = TempDir::new("spec-example");
    let script = dir.path("agent.py");
    // The spec's "Example Agent (Python)", verbatim.
    std::fs::write(
        &script,
        "import sys, json\nfor line in sys.stdin:\n    payload = json.loads(line)\n    # Process...\n    print(json.dumps({\"action\": \"final_answer\", \"summary\": \"Done\"}))\n    sys.stdout.flush()\n",
    )
    .unwrap();
    let command = format!("{} {}", shell_quote(python), shell_quote(&script));
    for mode in ["persistent", "per-turn"] {
        let out = probe(&["--stdio", &command, "--stdio-mode", mode]).await;
        assert_passes_with_a_score(&format!("the spec's example ({mode})"), &out);
    }
}

#[deadline::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gated_expectation_and_min_score_fail_the_run_when_unmet() {
    let agent = Naive::FinalAnswer;
    let server = support::stub(move |req| answer_reply(agent, &req.json())).await;
    let url = server.url();

    // A scenario of the user's own, one expectation gated.
    let dir = TempDir::new("gated");
    let file = dir.path("gated.yaml");
    std::fs::write(
        &file,
        "id: gated\ntitle: the tool must be called\ntask: Use get_customer_details for cust_1.\n\
         tools:\n  get_customer_details: {returns: {name: Jane}}\nexpect:\n  \
         - called: get_customer_details\n    level: must\n  - ends_with: final_answer\n",
    )
    .unwrap();
    let out = probe(&["--url", &url, "--scenario", &file]).await;
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("FAIL  must   gated.called-get_customer_details"),
        "{stdout}"
    );
    assert!(
        stdout.contains("MET   eval   gated.ends_with-final_answer"),
        "{stdout}"
    );
    assert!(
        stdout.contains(
            "evaluation: 1/2 expectations met (50%) · 1 gated expectation unmet: fail the run"
        ),
        "{stdout}"
    );

    // The built-in scenarios and --min-score: below it fails, at or above it passes.
    let json = dir.path("r.json");
    let junit = dir.path("r.xml");
    let out = probe(&[
        "--url",
        &url,
        "--min-score",
        "0.9",
        "--json",
        &json,
        "--junit",
        &junit,
    ])
    .await;
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("--min-score 0.9: below it: fails the run"),
        "{stdout}"
    );
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(report["min_score"], json!(0.9));
    let score = &report["summary"]["evaluation"];
    let (met, unmet) = (
        score["met"].as_u64().unwrap(),
        score["unmet"].as_u64().unwrap(),
    );
    assert!(unmet > 0 && met > 0, "{score}");
    assert_eq!(report["summary"]["failed_must"], json!(0), "{stdout}");
    let kinds: Vec<&str> = report["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["kind"].as_str().unwrap())
        .collect();
    assert!(kinds.contains(&"conformance") && kinds.contains(&"evaluation"));
    // JUnit fails exactly where the run does: the min-score gate, not the unmet expectations.
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert_eq!(xml.matches("<failure").count(), 1, "{xml}");
    assert!(xml.contains("evaluation.min-score [0.9]"), "{xml}");
    assert!(
        xml.contains("<testsuite name=\"evaluation.customer-support\""),
        "{xml}"
    );
    assert!(xml.contains("name=\"evaluation\" value=\"unmet"), "{xml}");

    let low = format!("{}", met as f64 / (met + unmet) as f64);
    let out = probe(&["--url", &url, "--min-score", &low]).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    assert!(text(&out.stdout).contains(&format!("--min-score {low}: met")));

    let out = probe(&["--url", &url, "--min-score", "1.5"]).await;
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("expected a fraction from 0 to 1"),
        "{}",
        text(&out.stderr)
    );
    server.stop().await;
}

#[test]
fn a_report_without_kinds_still_reads() {
    // Reports written before the split have no `kind`: their cases are conformance cases.
    let case: agent_tck::report::CaseResult = serde_json::from_value(json!({
        "id": "a", "group": "g", "level": "must", "status": "pass", "title": "t",
        "spec": "s", "message": "", "duration_ms": 0
    }))
    .unwrap();
    assert_eq!(case.kind, agent_tck::report::Kind::Conformance);
}
