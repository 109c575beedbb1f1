//! Every verdict earned (agent_standard): peers that give nothing to judge, break one rule, or conform.
//!
//! The agent standard's peers are files and commands: saved responses (`probe agent-standard
//! --output`), the mock agent run per mode (`--exec`), definition sets (`lint agents`) and
//! orchestration journals (`probe orchestration`). For each: a conforming one passes with
//! evidence of what was judged, a broken one fails its rule, and one that holds nothing for a
//! rule makes it a SKIP saying what would exercise it. Then the reporters: the evidence and
//! sub-millisecond durations in every format, and a run that judged nothing exits 1.

use std::process::Output;
use std::time::Duration;

use agent_tck::protocols::agent_standard::result::{judge, Context};
use agent_tck::report::{self, CaseResult, Evidence, Level, Report, RunInfo, Status};
use agent_tck::text::Redactor;
use serde_json::Value;

use crate::support::{tck_within, TempDir, EXE};

const PLAN: &str = include_str!("../fixtures/agent-standard/plan.txt");
const EXECUTE: &str = include_str!("../fixtures/agent-standard/execute.txt");

const WITHIN: Duration = Duration::from_secs(60);

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn read_json(path: &str) -> Value {
    let report: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    assert_eq!(
        agent_tck::schema::schemas().validate("report", &report),
        vec![],
        "the report is valid against schemas/report.schema.json"
    );
    report
}

/// The case `id` of a JSON report.
fn case<'a>(report: &'a Value, id: &str) -> &'a Value {
    report["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == id)
        .unwrap_or_else(|| panic!("no case {id} in {report:#}"))
}

fn evidence(judged: u64, of: &str) -> Value {
    serde_json::json!({"judged": judged, "of": of})
}

fn the<'a>(cases: &'a [CaseResult], id: &str) -> &'a CaseResult {
    cases.iter().find(|c| c.id == id).unwrap()
}

// ---- saved responses and the result rules ----

#[test]
fn a_saved_plan_passes_on_what_it_shows_and_skips_what_it_cannot() {
    let dir = TempDir::new("evidence-as-saved");
    let plan = dir.path("plan.txt");
    std::fs::write(&plan, PLAN).unwrap();
    let json = dir.path("report.json");
    let out = tck_within(
        &[
            "probe",
            "agent-standard",
            "--output",
            &plan,
            "--json",
            &json,
        ],
        WITHIN,
    );
    let shown = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{shown}");
    assert!(shown.contains("PASS must   plan.json-last "), "{shown}");
    assert!(shown.contains("(judged 1 response)"), "{shown}");
    let report = read_json(&json);
    for (id, judged) in [
        ("plan.json-last", evidence(1, "response")),
        ("plan.schema", evidence(1, "result against the schema")),
        ("plan.plan-scope", evidence(1, "plan-mode result")),
        (
            "plan.present-to-user",
            evidence(1, "present_to_user summary"),
        ),
    ] {
        let c = case(&report, id);
        assert_eq!(
            (&c["status"], &c["evidence"]),
            (&"pass".into(), &judged),
            "{id}"
        );
    }
    // Nothing to judge without the mode asked, the agent's name or its definitions; a plan has
    // no execute-mode rules, nothing blocked it, and it names no next agent.
    for (id, reason) in [
        ("plan.mode", "say which with --mode plan or --mode execute"),
        ("plan.agent-name", "give the agent's name (--agent NAME)"),
        (
            "plan.next-agents",
            "give the definitions' directory (--agents DIR)",
        ),
        ("plan.execute-findings", "a run in execute mode"),
        (
            "plan.execute-needs-approval",
            "the rule is about execute runs",
        ),
        ("plan.blocked-blockers", "a run that ends blocked"),
        (
            "plan.metrics",
            "an execute-mode result that counts its findings",
        ),
    ] {
        let c = case(&report, id);
        assert_eq!(c["status"], "skip", "{id}");
        assert!(c.get("evidence").is_none(), "{id}");
        let message = c["message"].as_str().unwrap();
        assert!(message.contains(reason), "{id}: {message}");
        assert!(!message.starts_with("not judged"), "{id}: {message}");
    }
}

#[test]
fn result_rules_pass_on_evidence_and_a_broken_one_fails_alone() {
    let cx = |mode: &str| Context {
        mode: Some(mode.into()),
        agents: Some(["security-scanner", "tester"].map(str::to_string).into()),
        agent: None,
    };
    let good = judge("execute", EXECUTE, &cx("execute"));
    for (id, judged) in [
        (
            "execute.mode",
            Evidence::new(1, "result of a run in execute mode"),
        ),
        (
            "execute.execute-findings",
            Evidence::new(1, "execute-mode result"),
        ),
        (
            "execute.execute-needs-approval",
            Evidence::new(1, "execute-mode result"),
        ),
        (
            "execute.agent-name",
            Evidence::new(1, "result naming one of --agents"),
        ),
        // issues_found, critical and medium.
        (
            "execute.metrics",
            Evidence::new(3, "findings.metrics counts"),
        ),
        ("execute.next-agents", Evidence::new(1, "next_agents names")),
    ] {
        let c = the(&good, id);
        assert_eq!(
            (c.status, c.evidence.as_ref()),
            (Status::Pass, Some(&judged)),
            "{id}"
        );
    }
    let off = EXECUTE.replace("\"issues_found\": 3", "\"issues_found\": 5");
    let broken = judge("execute", &off, &cx("execute"));
    assert_eq!(
        crate::support::failed_ids(&broken),
        ["execute.metrics".to_string()].into()
    );
    assert!(the(&broken, "execute.metrics")
        .message
        .contains("the per-severity counts add up to 3, issues_found is 5"));
    // A result with no metrics counts: nothing for the rule to judge.
    let bare = EXECUTE.replace("\"metrics\"", "\"tallies\"");
    let skipped = the(&judge("execute", &bare, &cx("execute")), "execute.metrics").clone();
    assert_eq!(skipped.status, Status::Skip);
    assert!(skipped.message.starts_with("no findings.metrics counts"));
}

#[test]
fn a_run_of_saved_responses_that_judged_no_must_case_exits_1() {
    let dir = TempDir::new("evidence-as-nothing");
    let plan = dir.path("plan.txt");
    std::fs::write(&plan, PLAN).unwrap();
    let out = tck_within(
        &[
            "probe",
            "agent-standard",
            "--output",
            &plan,
            "--only",
            "plan.mode",
        ],
        WITHIN,
    );
    let shown = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{shown}");
    assert!(shown.contains("SKIP must   plan.mode"), "{shown}");
    let last = shown.trim_end().lines().last().unwrap();
    assert_eq!(
        last,
        "0 passed, 0 failed, 1 skipped · nothing judged: the one MUST case skipped for want of evidence (not a pass)"
    );
}

// ---- the agent run per mode ----

#[test]
fn a_plan_run_in_a_workdir_passes_on_the_tree_read_before_and_after() {
    let dir = TempDir::new("evidence-as-exec");
    let tree = dir.path("project");
    std::fs::create_dir_all(&tree).unwrap();
    std::fs::write(format!("{tree}/README.md"), "# p\n").unwrap();
    let agent =
        format!("'{EXE}' mock agent --protocol agent-standard --name security-scanner --seed 3");
    let json = dir.path("report.json");
    let out = tck_within(
        &[
            "probe",
            "agent-standard",
            "--exec",
            &agent,
            "--mode",
            "plan",
            "--workdir",
            &tree,
            "--timeout",
            "30s",
            "--json",
            &json,
        ],
        WITHIN,
    );
    let shown = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{shown}");
    assert!(
        shown.contains("(judged 1 plan run's --workdir copy, read before and after)"),
        "{shown}"
    );
    let report = read_json(&json);
    let ran = case(&report, "plan.ran");
    assert_eq!(ran["evidence"], evidence(1, "plan-mode run"));
    assert!(ran["duration_us"].as_u64().unwrap() > 0, "{ran:#}");
    assert_eq!(case(&report, "plan.no-writes")["status"], "pass");
    // Nothing blocked that run; one blocked with a reason exercises blocked-blockers.
    let blocked = case(&report, "plan.blocked-blockers");
    assert_eq!(blocked["status"], "skip");
    assert!(blocked["message"]
        .as_str()
        .unwrap()
        .contains("a run that ends blocked"));
    let out = tck_within(
        &[
            "probe",
            "agent-standard",
            "--exec",
            &format!("{agent} --behavior blocked"),
            "--mode",
            "plan",
            "--timeout",
            "30s",
            "--json",
            &json,
        ],
        WITHIN,
    );
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    let report = read_json(&json);
    let blocked = case(&report, "plan.blocked-blockers");
    assert_eq!(
        (
            &blocked["status"],
            &blocked["evidence"],
            &blocked["message"]
        ),
        (
            &"pass".into(),
            &evidence(1, "blocked result"),
            &"1 blocker".into()
        )
    );
    // The run failed: nothing of the response to judge, each case says why.
    let out = tck_within(
        &[
            "probe",
            "agent-standard",
            "--exec",
            &format!("{agent} --behavior hang"),
            "--mode",
            "plan",
            "--timeout",
            "1s",
        ],
        WITHIN,
    );
    let shown = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{shown}");
    assert!(shown.contains("FAIL must   plan.ran"), "{shown}");
    assert!(
        shown.contains("no response to judge: plan.ran failed (the run must exit 0 within --timeout and --max-body)"),
        "{shown}"
    );
}

// ---- definition sets ----

const DEFINITION: &str = "---\nname: NAME\ndescription: Review code for bugs.\ntools: [Read, Grep]\nmodel: opus\n---\nRead the code and report.\n";

fn definitions(dir: &TempDir, files: &[(&str, &str)]) -> String {
    let at = dir.path("agents");
    std::fs::create_dir_all(&at).unwrap();
    for (file, name) in files {
        std::fs::write(format!("{at}/{file}.md"), DEFINITION.replace("NAME", name)).unwrap();
    }
    at
}

#[test]
fn lint_rules_pass_on_what_the_set_holds_and_skip_what_it_lacks() {
    // The built-in examples hold something for every rule: each passes on it.
    let out = tck_within(
        &[
            "lint",
            "agents",
            "suites/agent-standard/agents",
            "--format",
            "json",
        ],
        WITHIN,
    );
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        agent_tck::schema::schemas().validate("report", &report),
        vec![]
    );
    for c in report["cases"].as_array().unwrap() {
        assert_eq!(c["status"], "pass", "{c:#}");
        assert!(c["evidence"]["judged"].as_u64().unwrap() >= 1, "{c:#}");
    }
    assert_eq!(
        case(&report, "name-unique")["evidence"],
        evidence(3, "names across the set")
    );
    assert_eq!(
        case(&report, "plan-instructions")["evidence"],
        evidence(2, "bodies of plan-mode definitions")
    );

    // One definition, no supports_plan_mode: three rules have nothing to judge.
    let dir = TempDir::new("evidence-as-lint");
    let one = definitions(&dir, &[("reviewer", "reviewer")]);
    let out = tck_within(&["lint", "agents", &one], WITHIN);
    let shown = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{shown}");
    assert!(
        shown.ends_with("not judged, nothing to judge: plan-mode-boolean, name-unique, plan-instructions (--format json says what would exercise each)\n"),
        "{shown}"
    );
    let out = tck_within(&["lint", "agents", &one, "--format", "json"], WITHIN);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    for (id, reason) in [
        ("plan-mode-boolean", "a definition that opts into plan mode"),
        (
            "name-unique",
            "fewer than two named definitions: lint the whole set",
        ),
        (
            "plan-instructions",
            "no definition with supports_plan_mode: true",
        ),
    ] {
        let c = case(&report, id);
        assert_eq!(c["status"], "skip", "{id}");
        assert!(c["message"].as_str().unwrap().contains(reason), "{c:#}");
    }
    assert_eq!(
        case(&report, "tools-known")["evidence"],
        evidence(2, "tool names")
    );

    // Two definitions with one name: name-unique fails on the names it judged.
    let dir = TempDir::new("evidence-as-lint-twice");
    let twice = definitions(&dir, &[("a", "reviewer"), ("b", "reviewer")]);
    let out = tck_within(&["lint", "agents", &twice, "--format", "json"], WITHIN);
    assert_eq!(out.status.code(), Some(1));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let unique = case(&report, "name-unique");
    assert_eq!(unique["status"], "fail");
    assert_eq!(unique["evidence"], evidence(2, "names across the set"));
    assert!(unique["message"]
        .as_str()
        .unwrap()
        .contains("is also the name of"));
}

// ---- orchestration journals ----

fn journal_line(event: &str, run: &str, agent: &str, mode: &str, at: u64, extra: &str) -> String {
    format!(
        "{{\"event\":\"{event}\",\"run\":\"{run}\",\"agent\":\"{agent}\",\"mode\":\"{mode}\",\"at_us\":{at}{extra}}}\n"
    )
}

/// a plans (needs approval), executes approved and names b (sequential); b plans, then executes
/// after a ended.
fn careful_journal() -> String {
    [
        journal_line("start", "1", "a", "plan", 0, ""),
        journal_line(
            "end",
            "1",
            "a",
            "plan",
            10,
            ",\"status\":\"needs_approval\"",
        ),
        journal_line("start", "2", "a", "execute", 20, ",\"approved\":true"),
        journal_line(
            "end",
            "2",
            "a",
            "execute",
            30,
            ",\"status\":\"complete\",\"next_agents\":[{\"agent\":\"b\",\"can_parallel\":false}]",
        ),
        journal_line("start", "3", "b", "plan", 31, ""),
        journal_line("end", "3", "b", "plan", 35, ",\"status\":\"complete\""),
        journal_line("start", "4", "b", "execute", 40, ""),
        journal_line("end", "4", "b", "execute", 50, ",\"status\":\"complete\""),
    ]
    .concat()
}

#[test]
fn an_orchestration_journal_passes_on_its_runs_and_an_empty_one_judges_nothing() {
    let dir = TempDir::new("evidence-as-orchestration");
    let journal = dir.path("journal.jsonl");
    let json = dir.path("report.json");
    std::fs::write(&journal, careful_journal()).unwrap();
    let out = tck_within(
        &[
            "probe",
            "orchestration",
            "--journal",
            &journal,
            "--json",
            &json,
        ],
        WITHIN,
    );
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    let report = read_json(&json);
    for (id, judged) in [
        ("orchestration.journal", evidence(8, "journal lines")),
        (
            "orchestration.plan-before-execute",
            evidence(2, "execute runs of agents that plan"),
        ),
        (
            "orchestration.approval-before-execute",
            evidence(1, "execute runs after a needs_approval plan"),
        ),
        (
            "orchestration.sequential-handoff",
            evidence(
                1,
                "execute runs of sequential next agents beside the run that named them",
            ),
        ),
        ("orchestration.bounded-runs", evidence(2, "agents executed")),
    ] {
        let c = case(&report, id);
        assert_eq!(
            (&c["status"], &c["evidence"]),
            (&"pass".into(), &judged),
            "{id}"
        );
    }

    // b executed while a still ran: the hand-off rule fails on what it judged.
    let hasty = careful_journal()
        .replace(
            "\"b\",\"mode\":\"plan\",\"at_us\":31",
            "\"b\",\"mode\":\"plan\",\"at_us\":21",
        )
        .replace(
            "\"b\",\"mode\":\"plan\",\"at_us\":35",
            "\"b\",\"mode\":\"plan\",\"at_us\":22",
        )
        .replace(
            "\"b\",\"mode\":\"execute\",\"at_us\":40",
            "\"b\",\"mode\":\"execute\",\"at_us\":25",
        );
    std::fs::write(&journal, hasty).unwrap();
    let out = tck_within(
        &[
            "probe",
            "orchestration",
            "--journal",
            &journal,
            "--json",
            &json,
        ],
        WITHIN,
    );
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let report = read_json(&json);
    assert_eq!(
        crate::support::case_statuses(&report)
            .into_iter()
            .filter(|(_, s)| s == "fail")
            .map(|(id, _)| id)
            .collect::<Vec<_>>(),
        ["orchestration.sequential-handoff"]
    );

    // An empty journal: nothing to judge, every case says what would exercise it, exit 1.
    std::fs::write(&journal, "").unwrap();
    let out = tck_within(
        &[
            "probe",
            "orchestration",
            "--journal",
            &journal,
            "--json",
            &json,
        ],
        WITHIN,
    );
    let shown = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{shown}");
    assert!(
        shown.contains("nothing judged: all 4 MUST cases skipped"),
        "{shown}"
    );
    let report = read_json(&json);
    for c in report["cases"].as_array().unwrap() {
        assert_eq!(c["status"], "skip", "{c:#}");
        assert!(
            c["message"].as_str().unwrap().starts_with(
                "the journal holds no runs: have the orchestrator run the mock agents"
            ),
            "{c:#}"
        );
    }
}

// ---- the reporters ----

/// A run with a pass judged in 412 µs, a failure and a skip.
fn three_cases() -> Report {
    let mut quick = CaseResult::new("a.quick", "a", Level::Must, "quick", "§1");
    quick.pass(
        Evidence::new(14, "strings from 1 agent with null-bytes"),
        String::new,
    );
    quick.set_duration(Duration::from_micros(412));
    let mut broken = CaseResult::new("a.broken", "a", Level::Must, "broken", "§2");
    broken.fail_on(Evidence::new(3, "answers"), "1 of 3 answers is not JSON");
    broken.set_duration(Duration::from_millis(12));
    let mut idle = CaseResult::new("a.idle", "a", Level::Should, "idle", "§3");
    idle.skip("no blocked result: a run that ends blocked would exercise this");
    RunInfo::start("probe", "agent-standard", "t", 1, false)
        .report(vec![quick, broken, idle], &Redactor::new(Vec::new()))
}

#[test]
fn every_reporter_shows_the_evidence_and_microseconds() {
    let report = three_cases();
    let console = report::console::render(&report, false);
    assert!(
        console.contains("PASS must   a.quick   quick (judged 14 strings from 1 agent with null-bytes) (412 µs)\n"),
        "{console}"
    );
    assert!(
        console.contains("a.broken  broken (judged 3 answers) (12 ms)"),
        "{console}"
    );

    let json: Value = serde_json::from_str(&report::json::to_string(&report)).unwrap();
    assert_eq!(
        agent_tck::schema::schemas().validate("report", &json),
        vec![]
    );
    let quick = case(&json, "a.quick");
    assert_eq!(
        quick["evidence"],
        evidence(14, "strings from 1 agent with null-bytes")
    );
    assert_eq!(
        (quick["duration_ms"].as_u64(), quick["duration_us"].as_u64()),
        (Some(0), Some(412))
    );
    assert!(case(&json, "a.idle").get("evidence").is_none());

    let junit = report::junit::to_string(&report);
    assert!(
        junit.contains("<property name=\"judged\" value=\"14\"/>"),
        "{junit}"
    );
    assert!(
        junit.contains("<property name=\"evidence\" value=\"judged 14 strings from 1 agent with null-bytes\"/>"),
        "{junit}"
    );
    // JUnit's time has millisecond places: the microseconds are a property.
    assert!(
        junit.contains("<property name=\"duration\" value=\"412 µs\"/>"),
        "{junit}"
    );

    let html = report::html::to_string(&report);
    assert!(
        html.contains("— quick (judged 14 strings from 1 agent with null-bytes) (412 µs)"),
        "{html}"
    );
    assert!(
        html.contains("— broken (judged 3 answers) (12 ms)"),
        "{html}"
    );
}

#[test]
fn the_schema_refuses_a_pass_without_evidence_and_report_tools_do_too() {
    let mut json: Value = serde_json::from_str(&report::json::to_string(&three_cases())).unwrap();
    let at = json["cases"]
        .as_array()
        .unwrap()
        .iter()
        .position(|c| c["id"] == "a.quick")
        .unwrap();
    json["cases"][at]
        .as_object_mut()
        .unwrap()
        .remove("evidence");
    assert!(!agent_tck::schema::schemas()
        .validate("report", &json)
        .is_empty());
    let dir = TempDir::new("evidence-as-schema");
    let file = dir.path("unearned.json");
    std::fs::write(&file, json.to_string()).unwrap();
    let out = tck_within(&["report", "merge", &file], WITHIN);
    let shown = crate::support::text(&out);
    assert_eq!(out.status.code(), Some(2), "{shown}");
    assert!(shown.contains("not an agent-tck report"), "{shown}");
    // Judged 0 is no evidence either.
    json["cases"][at]["evidence"] = evidence(0, "answers");
    assert!(!agent_tck::schema::schemas()
        .validate("report", &json)
        .is_empty());
}

#[test]
fn a_report_of_only_skipped_must_cases_says_nothing_judged_last_and_exits_1() {
    let mut idle = CaseResult::new("a.idle", "a", Level::Must, "idle", "§1");
    idle.skip("no answer to judge: point the probe at an agent that answers");
    let mut note = CaseResult::new("a.note", "a", Level::May, "note", "§2");
    note.pass(Evidence::new(1, "answer"), String::new);
    let report = RunInfo::start("probe", "agent-standard", "t", 1, false)
        .report(vec![idle, note], &Redactor::new(Vec::new()));
    assert_eq!(report.exit_code(), 1);
    let console = report::console::render(&report, false);
    assert_eq!(
        console.trim_end().lines().last().unwrap(),
        "1 passed, 0 failed, 1 skipped · nothing judged: the one MUST case skipped for want of evidence (not a pass)"
    );
    // JUnit fails with the run: a failed testcase says why.
    let junit = report::junit::to_string(&report);
    assert!(
        junit.contains("<testcase name=\"run.judged [must]\" classname=\"agent-standard.run\""),
        "{junit}"
    );
    assert!(
        junit.contains("<failure message=\"nothing judged: the one MUST case skipped for want of evidence (not a pass)\" type=\"nothing judged\"/>"),
        "{junit}"
    );
    assert!(!report::junit::to_string(&three_cases()).contains("run.judged"));
    let html = report::html::to_string(&report);
    assert!(
        html.contains(
            "exit 1: nothing judged: the one MUST case skipped for want of evidence (not a pass)"
        ),
        "{html}"
    );
    // A pass with nothing judged is settled into a skip that says so.
    let mut unearned = CaseResult::new("a.unearned", "a", Level::Must, "t", "s");
    unearned.status = Status::Pass;
    let report = RunInfo::start("probe", "agent-standard", "t", 1, false)
        .report(vec![unearned], &Redactor::new(Vec::new()));
    assert_eq!(report.cases[0].status, Status::Skip);
    assert!(report.cases[0].message.starts_with(report::NO_EVIDENCE));
}

/// What the user names and cannot be read is a usage error (exit 2), whichever command reads
/// it; a journal the mock agent cannot write ends its run (exit 1). Each message names the
/// file (and the flag when there is one).
#[test]
fn files_the_user_names_are_usage_errors_and_a_journal_not_written_a_run_error() {
    let dir = TempDir::new("agent-standard-errors");
    let missing = dir.0.join("missing").join("file").display().to_string();
    let enoent = "No such file or directory (os error 2)";
    let cases: [(Vec<&str>, i32, String); 3] = [
        (
            vec!["probe", "orchestration", "--journal", &missing],
            2,
            format!("--journal {missing}: {enoent}"),
        ),
        (
            vec!["probe", "agent-standard", "--output", &missing],
            2,
            format!("--output {missing}: {enoent}"),
        ),
        (
            vec![
                "mock",
                "agent",
                "--protocol",
                "agent-standard",
                "--name",
                "a",
                "--mode",
                "plan",
                "--journal",
                &missing,
            ],
            1,
            format!("--journal {missing}: {enoent}"),
        ),
    ];
    for (args, status, message) in cases {
        let out = tck_within(&args, WITHIN);
        assert_eq!(
            out.status.code(),
            Some(status),
            "{args:?}: {}",
            crate::support::text(&out)
        );
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            format!("agent-tck: error: {message}\n"),
            "{args:?}"
        );
    }
}

/// A definition file that is there but cannot be read is the user's input, as a path that is
/// not there is: exit 2 (it was exit 1). `/proc/self/mem` can be looked at but not read from
/// its start, even by root, so the test holds whoever runs it.
#[cfg(target_os = "linux")]
#[test]
fn an_unreadable_definition_file_is_a_usage_error() {
    let out = tck_within(&["lint", "agents", "/proc/self/mem"], WITHIN);
    assert_eq!(out.status.code(), Some(2), "{}", crate::support::text(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "agent-tck: error: /proc/self/mem: Input/output error (os error 5)\n"
    );
    assert!(out.stdout.is_empty(), "{}", crate::support::text(&out));
}

/// `mock agents`' flags are usage errors (exit 2) naming the flag, and nothing is written.
#[test]
fn a_mock_agent_sets_flags_are_usage_errors() {
    let dir = TempDir::new("agent-set-errors");
    std::fs::write(dir.0.join("there.txt"), "x").unwrap();
    let full = dir.0.display().to_string();
    let empty = dir.0.join("new").display().to_string();
    let cases = [
        (
            vec![
                "mock",
                "agents",
                "--protocol",
                "agent-standard",
                "--dir",
                &empty,
                "--count",
                "0",
            ],
            "--count 0: between 1 and 10000".to_string(),
        ),
        (
            vec![
                "mock",
                "agents",
                "--protocol",
                "agent-standard",
                "--dir",
                &full,
                "--count",
                "2",
            ],
            format!("--dir {full}: not empty (the set is written into a new or empty directory)"),
        ),
    ];
    for (args, message) in cases {
        let out = tck_within(&args, WITHIN);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            crate::support::text(&out)
        );
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            format!("agent-tck: error: {message}\n"),
            "{args:?}"
        );
    }
    assert!(!dir.0.join("new").exists(), "nothing is written");
    assert!(!dir.0.join("agents").exists(), "nothing is written");
}
