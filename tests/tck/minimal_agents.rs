//! The README's ten-line agents (`examples/minimal-agents/`), probed as the README says: the
//! execute_task one over stdio passes every case a stdio agent can be judged on, the external
//! agent every connector case. Each is shown in the README as it is in its file. The peers are
//! the example files themselves, run by python3.

use std::time::Duration;

use serde_json::Value;

use crate::support::{python, tck_within, text, Spawned, TempDir, RUN_DEADLINE};

const README: &str = include_str!("../../README.md");

/// The path of an example agent in this checkout.
fn example(name: &str) -> String {
    format!(
        "{}/examples/minimal-agents/{name}",
        env!("CARGO_MANIFEST_DIR")
    )
}

/// python3, or None (the test skips) outside CI; CI installs it (`.ci/run`), so there a
/// missing python3 fails the test rather than skipping it unseen.
fn python3() -> Option<&'static str> {
    let found = python();
    assert!(
        found.is_some() || std::env::var_os("CI").is_none(),
        "python3 not found (.ci/run installs it)"
    );
    if found.is_none() {
        eprintln!("python3 not found; skipped");
    }
    found
}

/// Runs `args` with `--json`: the exit status, the report's cases as (id, status, kind), and
/// what it printed.
fn probe(args: &[&str], dir: &TempDir) -> (Option<i32>, Vec<(String, String, String)>, String) {
    let json = dir.path("report.json");
    let all = [args, &["--seed", "42", "--json", &json]].concat();
    let out = tck_within(&all, RUN_DEADLINE);
    let report: Value = serde_json::from_str(
        &std::fs::read_to_string(&json).unwrap_or_else(|e| panic!("{json}: {e}\n{}", text(&out))),
    )
    .unwrap();
    let field = |c: &Value, key: &str| c[key].as_str().unwrap_or_default().to_string();
    let cases = report["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (field(c, "id"), field(c, "status"), field(c, "kind")))
        .collect();
    (out.status.code(), cases, text(&out))
}

/// The cases of `kind` (or of every kind, "") with `status`.
fn with(cases: &[(String, String, String)], kind: &str, status: &str) -> Vec<String> {
    cases
        .iter()
        .filter(|(_, s, k)| s == status && (kind.is_empty() || k == kind))
        .map(|(id, _, _)| id.clone())
        .collect()
}

#[test]
fn the_readme_shows_each_minimal_agent_as_it_is() {
    for name in ["execute_task.py", "connector.py"] {
        let code = std::fs::read_to_string(example(name)).unwrap();
        assert!(
            code.lines().count() <= 20,
            "{name}: {} lines",
            code.lines().count()
        );
        assert!(
            README.contains(&format!("```python\n{code}```\n")),
            "the README does not show examples/minimal-agents/{name} as it is"
        );
    }
}

/// Every conformance case passes; the evaluation expectations are scored (a one-action agent
/// meets some), and the one skip is HTTP's Content-Type, which stdio has none of.
#[test]
fn the_minimal_execute_task_agent_passes_every_case() {
    let Some(python) = python3() else { return };
    let dir = TempDir::new("minimal-execute-task");
    let command = format!("{python} {}", example("execute_task.py"));
    let (code, cases, printed) = probe(&["probe", "execute-task", "--stdio", &command], &dir);
    assert_eq!(code, Some(0), "{printed}");
    let conformance = "conformance";
    assert_eq!(
        with(&cases, conformance, "fail"),
        Vec::<String>::new(),
        "{printed}"
    );
    assert_eq!(
        with(&cases, conformance, "skip"),
        ["protocol.content-type"],
        "{printed}"
    );
    assert_eq!(with(&cases, conformance, "pass").len(), 15, "{printed}");
    // The score the README gives: 11 of the 19 expectations met (unmet ones are not failures).
    let evaluation = cases.iter().filter(|c| c.2 == "evaluation").count();
    assert_eq!(evaluation, 19, "{printed}");
    assert_eq!(with(&cases, "evaluation", "pass").len(), 11, "{printed}");
    assert!(
        printed.contains("evaluation: 11/19 expectations met"),
        "{printed}"
    );
}

/// Every one of the connector's cases passes, the retry rule included (the agent tries a
/// callback once: no flood).
#[test]
fn the_minimal_external_agent_passes_every_case() {
    let Some(python) = python3() else { return };
    let dir = TempDir::new("minimal-connector");
    let mut command = std::process::Command::new(python);
    command.args([&example("connector.py"), "0"]);
    let mut agent = Spawned::start(command, RUN_DEADLINE + Duration::from_secs(60));
    let ready = agent.line();
    let url = ready
        .strip_prefix("inputUrl: ")
        .unwrap_or_else(|| panic!("no inputUrl in {ready:?}"));
    let (code, cases, printed) = probe(&["probe", "connector", "--input-url", url], &dir);
    assert_eq!(code, Some(0), "{printed}");
    let ids: Vec<String> = cases.iter().map(|(id, _, _)| id.clone()).collect();
    assert_eq!(with(&cases, "", "pass"), ids, "{printed}");
    assert_eq!(ids.len(), 14, "{printed}");
}
