//! `probe agent-standard --output …`: the standard's two example responses (its "Examples"
//! section, in tests/fixtures/agent-standard/) pass in their modes; one response per rule broken
//! is caught by exactly its case; the command line.

use std::collections::BTreeSet;

use agent_tck::protocols::agent_standard::result::{judge, Context, RULES};
use agent_tck::report::Status;

const PLAN: &str = include_str!("../fixtures/agent-standard/plan.txt");
const EXECUTE: &str = include_str!("../fixtures/agent-standard/execute.txt");

fn names(list: &[&str]) -> Option<BTreeSet<String>> {
    Some(list.iter().map(|s| s.to_string()).collect())
}

fn cx(mode: &str) -> Context {
    Context {
        mode: Some(mode.into()),
        agents: names(&["security-scanner", "tester"]),
        agent: None,
    }
}

#[test]
fn the_standards_examples_pass_in_their_modes_and_each_rule_broken_fails_alone() {
    let plan = judge("plan", PLAN, &cx("plan"));
    assert_eq!(
        crate::support::failed_ids(&plan),
        BTreeSet::new(),
        "{plan:#?}"
    );
    let execute = judge("execute", EXECUTE, &cx("execute"));
    assert_eq!(
        crate::support::failed_ids(&execute),
        BTreeSet::new(),
        "{execute:#?}"
    );
    // Judged, not skipped: what applies to an execute-mode result with --agents passes.
    let passed: BTreeSet<&str> = execute
        .iter()
        .filter(|c| c.status == Status::Pass)
        .map(|c| c.id.as_str())
        .collect();
    for id in [
        "json-last",
        "schema",
        "mode",
        "execute-findings",
        "agent-name",
        "metrics",
        "findings-summary",
        "next-agents",
        "present-to-user",
    ] {
        assert!(
            passed.contains(format!("execute.{id}").as_str()),
            "{id}: {execute:#?}"
        );
    }
    // (label, response, the mode it was run in, the one case that must fail)
    let broken: Vec<(&str, String, &str, &str)> = vec![
        (
            "json-last",
            EXECUTE.replace("```\n", "```\nThanks!\n"),
            "execute",
            "json-last",
        ),
        (
            "schema",
            EXECUTE.replace("\"priority\": \"high\"", "\"priority\": \"urgent\""),
            "execute",
            "schema",
        ),
        ("mode", EXECUTE.to_string(), "plan", "mode"),
        (
            "plan-scope",
            PLAN.replace("\"scope\"", "\"scope_\""),
            "plan",
            "plan-scope",
        ),
        (
            "execute-findings",
            EXECUTE.replace("\"findings\"", "\"findings_\""),
            "execute",
            "execute-findings",
        ),
        (
            "blocked-blockers",
            PLAN.replace("\"needs_approval\"", "\"blocked\""),
            "plan",
            "blocked-blockers",
        ),
        (
            "execute-needs-approval",
            EXECUTE.replace("\"complete\"", "\"needs_approval\""),
            "execute",
            "execute-needs-approval",
        ),
        (
            "agent-name",
            EXECUTE.replace(
                "\"agent\": \"security-scanner\"",
                "\"agent\": \"scanner-9\"",
            ),
            "execute",
            "agent-name",
        ),
        (
            "metrics",
            EXECUTE.replace("\"issues_found\": 3", "\"issues_found\": 4"),
            "execute",
            "metrics",
        ),
        (
            "findings-summary",
            EXECUTE.replace("\"summary\": \"Found", "\"headline\": \"Found"),
            "execute",
            "findings-summary",
        ),
        (
            "next-agents",
            EXECUTE.replace("\"agent\": \"tester\"", "\"agent\": \"nobody\""),
            "execute",
            "next-agents",
        ),
        (
            "present-to-user",
            PLAN.replace(
                "\"present_to_user\": \"**Security",
                "\"present_to_user\": \" \", \"was\": \"**Security",
            ),
            "plan",
            "present-to-user",
        ),
    ];
    for (label, text, mode, rule) in &broken {
        let cases = judge(label, text, &cx(mode));
        assert_eq!(
            crate::support::failed_ids(&cases),
            [format!("{label}.{rule}")].into(),
            "{rule}: {cases:#?}"
        );
    }
    let covered: BTreeSet<&str> = broken.iter().map(|b| b.3).collect();
    let all: BTreeSet<&str> = RULES.iter().map(|r| r.0).collect();
    assert_eq!(covered, all, "every rule has a broken response");
    // A response that is no JSON: the rest is skipped, saying why.
    let none = judge("x", "I could not finish.", &cx("plan"));
    assert_eq!(
        crate::support::failed_ids(&none),
        ["x.json-last".to_string()].into()
    );
    assert!(none[1..]
        .iter()
        .all(|c| c.status == Status::Skip && c.message.contains("json-last")));
}

#[test]
fn the_command_line_judges_saved_responses() {
    let dir = crate::support::TempDir::new("agent-results");
    std::fs::create_dir_all(dir.path("agents")).unwrap();
    for name in ["security-scanner", "tester"] {
        std::fs::write(
            dir.path(&format!("agents/{name}.md")),
            format!(
                "---\nname: {name}\ndescription: Test.\ntools: [Read]\nmodel: opus\n---\nBody.\n"
            ),
        )
        .unwrap();
    }
    let (plan, execute) = (dir.path("plan.txt"), dir.path("execute.txt"));
    std::fs::write(&plan, PLAN).unwrap();
    std::fs::write(
        &execute,
        EXECUTE.replace("\"agent\": \"tester\"", "\"agent\": \"nobody\""),
    )
    .unwrap();
    let json = dir.path("report.json");
    let out = crate::support::tck(&[
        "probe",
        "agent-standard",
        "--output",
        &plan,
        &execute,
        "--agents",
        &dir.path("agents"),
        "--json",
        &json,
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("execute.next-agents"), "{stdout}");
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let failed: Vec<&str> = report["cases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["status"] == "fail")
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(failed, ["execute.next-agents"]);
    assert_eq!(
        agent_tck::schema::schemas().validate("report", &report),
        vec![]
    );
}

// Issue #31 points 5 and 6: the sign-off line, findings without summary, a trailing comma deep
// in the result, a result with no agent.

#[test]
fn a_sign_off_a_missing_summary_a_deep_trailing_comma_and_no_agent_are_said_plainly() {
    // The standard's example with a sign-off line after its fence: json-last fails, saying so.
    let signed = EXECUTE.replace("```\n", "```\nLet me know if you need anything else.\n");
    let cases = judge("signed", &signed, &cx("execute"));
    assert_eq!(
        crate::support::failed_ids(&cases),
        ["signed.json-last".to_string()].into()
    );
    assert_eq!(
        cases[0].message,
        "text after the JSON result: \"Let me know if you need anything else.\" (a sign-off line \
         after the fenced result: the standard wants the result last, though the consumers of its \
         home repository, z3r0-c001/Claude_Protocol, accept this)"
    );
    // A result with no findings: findings-summary has nothing to judge.
    let bare = "{\"agent\": \"tester\", \"execution_mode\": \"plan\", \"status\": \"complete\", \"present_to_user\": \"Plan.\"}\n";
    let cases = judge("bare", bare, &cx("plan"));
    let summary = cases
        .iter()
        .find(|c| c.id == "bare.findings-summary")
        .unwrap();
    assert_eq!(summary.status, Status::Skip, "{summary:#?}");
    assert!(
        summary.message.contains("no findings object"),
        "{}",
        summary.message
    );
    // A trailing comma after the last finding: the JSON error, at its line, not "text after".
    let comma = EXECUTE.replacen("}\n    ]", "},\n    ]", 1);
    assert_ne!(
        comma, EXECUTE,
        "the fixture's details list ends as expected"
    );
    let cases = judge("comma", &comma, &cx("execute"));
    assert_eq!(
        crate::support::failed_ids(&cases),
        ["comma.json-last".to_string()].into()
    );
    assert!(
        cases[0].message == "the JSON result does not parse: trailing comma at line 22, column 5 of the response",
        "{}",
        cases[0].message
    );
    // No agent, with --agents: said once, as such.
    let nameless = EXECUTE.replace("\"agent\": \"security-scanner\",", "");
    let cases = judge("nameless", &nameless, &cx("execute"));
    let named = cases
        .iter()
        .find(|c| c.id == "nameless.agent-name")
        .unwrap();
    assert_eq!(
        named.message,
        "the result names no agent (`agent` is missing or empty)"
    );
    assert!(cases
        .iter()
        .all(|c| !c.message.contains("no definition named")));
}
