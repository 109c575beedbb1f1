use super::*;
use serde_json::json;

#[test]
fn shipped_scenarios_parse() {
    let all = Scenario::builtin();
    assert_eq!(all.len(), BUILTIN.len());
    let ids: Vec<&str> = all.iter().map(|s| s.id.as_str()).collect();
    let mut unique = ids.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), ids.len(), "ids are unique: {ids:?}");
    for s in &all {
        assert!(!s.expect.is_empty(), "{}", s.id);
        assert!(s.expect.iter().all(|e| e.line > 0), "{}", s.id);
    }
    let refund = all.iter().find(|s| s.id == "refund-policy").unwrap();
    let policy = refund.tools["apply_refund"].policy.as_ref().unwrap();
    assert_eq!(policy.to_string(), "amount <= 50");
    assert!(refund.task.contains("$100"));
    let credit = all.iter().find(|s| s.id == "credit-override").unwrap();
    assert!(credit
        .expect
        .iter()
        .any(|e| e.expect == Expect::AskedHuman(true)));
    let failing = all.iter().find(|s| s.id == "tool-failure").unwrap();
    assert!(failing
        .tools
        .values()
        .any(|t| matches!(t.result, ToolResult::Fails(_))));
}

const BASE: &str = "id: s1\ntitle: t\ntask: do it\ntools:\n  a: {returns: {ok: true}}\n";

fn err(rest: &str) -> String {
    Scenario::parse("x.yaml", &format!("{BASE}{rest}"))
        .unwrap_err()
        .to_string()
}

#[test]
fn a_minimal_scenario_gets_the_defaults() {
    let s = Scenario::parse("x.yaml", &format!("{BASE}expect:\n  - called: a\n")).unwrap();
    assert_eq!(s.max_turns, 5);
    assert_eq!(s.on_hitl, OnHitl::Stop);
    assert_eq!(s.on_branch, OnBranch::Follow);
    assert_eq!(s.spec, "Multi-turn Flow");
    assert_eq!(
        s.expect,
        vec![Expectation {
            expect: Expect::Called("a".into()),
            level: Level::May,
            line: 7
        }]
    );
    assert_eq!(
        s.tools["a"].result,
        ToolResult::Returns(json!({"ok": true}))
    );
}

#[test]
fn every_expectation_kind_parses() {
    let s = Scenario::parse(
        "x.yaml",
        &format!(
            "{BASE}  b: {{error: down, policy: 'n >= 2'}}\non_branch: stop\nexpect:\n\
                 - ends_with: [final_answer, branch]\n\
                 - {{within_turns: 3, level: should}}\n\
                 - not_called: delete_everything\n\
                 - no_violation_after_governance_error: b\n\
                 - asked_human: false\n\
                 - {{used: call_multiple_tools, level: may}}\n"
        ),
    )
    .unwrap();
    let got: Vec<String> = s.expect.iter().map(|e| e.to_string()).collect();
    assert_eq!(
        got,
        [
            "ends_with: [final_answer, branch]",
            "within_turns: 3",
            "not_called: delete_everything",
            "no_violation_after_governance_error: b",
            "asked_human: false",
            "used: call_multiple_tools"
        ]
    );
    assert_eq!(s.expect[1].level, Level::Should);
    assert_eq!(s.expect[5].level, Level::May);
    assert_eq!(s.expect[0].line, 9);
    assert_eq!(s.expect[5].line, 14);
    assert_eq!(s.tools["b"].result, ToolResult::Fails("down".into()));
}

#[test]
fn errors_name_file_and_line() {
    let cases: &[(&str, &str)] = &[
            ("expect:\n  - called: zz\n", "x.yaml:7: scenario s1: called \"zz\": no such tool (tools: a)"),
            ("expect:\n  - ends_with: done\n", "x.yaml:7: scenario s1: ends_with \"done\" is not one of final_answer, provide_instructions, error, hitl_pause, branch, max_turns"),
            ("expect:\n  - called: a\n  - {called: a, not_called: b}\n", "x.yaml:8: scenario s1: one expectation per item, this one has called and not_called"),
            ("expect:\n  - level: must\n", "x.yaml:7: scenario s1: an expectation needs one of"),
            ("expect:\n  - no_violation_after_governance_error: a\n", "x.yaml:7: scenario s1: no_violation_after_governance_error \"a\": the tool has no policy"),
            ("expect:\n  - within_turns: 9\n", "x.yaml:7: scenario s1: within_turns 9 must be between 1 and max_turns (5)"),
            ("expect:\n  - used: shout\n", "x.yaml:7: scenario s1: used \"shout\" is not one of call_tool"),
            ("on_hitl: continue\nexpect:\n  - ends_with: hitl_pause\n", "x.yaml:8: scenario s1: ends_with hitl_pause cannot hold with on_hitl: continue"),
            ("expect:\n  - ends_with: branch\n", "x.yaml:7: scenario s1: ends_with branch cannot hold with on_branch: follow"),
            ("max_turns: 0\nexpect:\n  - called: a\n", "x.yaml:6: scenario s1: max_turns must be at least 1"),
            ("expect: []\n", "x.yaml:1: scenario s1: no expectations"),
            ("expect:\n  - {called: a, level: maybe}\n", "x.yaml:7:"),
            ("expect:\n  - called: a\nsurprise: 1\n", "x.yaml:8:"),
        ];
    for (rest, expected) in cases {
        let e = err(rest);
        assert!(
            e.starts_with(expected),
            "{rest}\n  got: {e}\n  expected: {expected}"
        );
        assert_eq!(e.lines().count(), 1, "{e}");
    }
    let e = Scenario::parse(
        "y.yaml",
        "id: s\ntitle: t\ntask: x\ntools:\n  a: {returns: 1, error: e}\nexpect: [{called: a}]\n",
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.starts_with("y.yaml:5: scenario s: tool a: give exactly one of"),
        "{e}"
    );
    let e = Scenario::parse(
            "y.yaml",
            "id: s\ntitle: t\ntask: x\ntools:\n  a:\n    returns: 1\n    policy: amount <> 5\nexpect: [{called: a}]\n",
        )
        .unwrap_err().to_string();
    assert!(
        e.starts_with(
            "y.yaml:6: scenario s: tool a: policy \"amount <> 5\": expected PARAM OP NUMBER"
        ),
        "{e}"
    );
    let e = Scenario::parse(
        "y.yaml",
        "id: s\ntitle: t\ntask: '  '\nexpect: [{used: error}]\n",
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.starts_with("y.yaml:3: scenario s: the task is empty"),
        "{e}"
    );
    let e = Scenario::parse("y.yaml", "id: s\ntitle: t\nexpect: [{used: error}]\n")
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("y.yaml:") && e.contains("task"), "{e}");
}

#[test]
fn returns_null_is_a_value() {
    let s = Scenario::parse(
        "x.yaml",
        "id: s\ntitle: t\ntask: x\ntools:\n  a: {returns: null}\nexpect: [{called: a}]\n",
    )
    .unwrap();
    assert_eq!(s.tools["a"].result, ToolResult::Returns(Value::Null));
}

#[test]
fn policies_parse() {
    for (text, param, op, limit) in [
        ("amount <= 50", "amount", Op::Le, 50.0),
        ("amount<50", "amount", Op::Lt, 50.0),
        (" credit >= -2.5 ", "credit", Op::Ge, -2.5),
        ("n > 0", "n", Op::Gt, 0.0),
        ("qty == 3", "qty", Op::Eq, 3.0),
        ("_x != 1e3", "_x", Op::Ne, 1000.0),
    ] {
        let p = Policy::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"));
        assert_eq!(
            (p.param.as_str(), p.op, p.limit),
            (param, op, limit),
            "{text}"
        );
    }
    for bad in [
        "amount",
        "amount <> 50",
        "<= 50",
        "two words <= 5",
        "amount <= fifty",
        "amount <= ",
        "amount <= inf",
        "amount = 5",
    ] {
        assert!(Policy::parse(bad).is_err(), "{bad} parsed");
    }
}

#[test]
fn policy_violations_read_like_the_spec() {
    let p = Policy::parse("amount <= 50").unwrap();
    assert_eq!(
        p.violation(&json!({"amount": 100})).as_deref(),
        Some("GOVERNANCE ERROR: Amount 100 exceeds maximum allowed limit of 50. Please adjust.")
    );
    assert_eq!(p.violation(&json!({"amount": 50})), None);
    assert_eq!(p.violation(&json!({"amount": 49.99})), None);
    assert_eq!(
        p.violation(&json!({"amount": "75"})).as_deref(),
        Some("GOVERNANCE ERROR: Amount 75 exceeds maximum allowed limit of 50. Please adjust.")
    );
    assert_eq!(p.violation(&json!({"amount": 50.5})).map(|_| ()), Some(()));
    assert_eq!(p.violation(&json!({})), None);
    assert_eq!(p.violation(&json!({"amount": "a lot"})), None);
    assert_eq!(p.violation(&json!({"amount": [100]})), None);
    assert_eq!(p.violation(&json!("not an object")), None);
    let min = Policy::parse("credit >= 10").unwrap();
    assert_eq!(
        min.violation(&json!({"credit": 5})).as_deref(),
        Some("GOVERNANCE ERROR: Credit 5 is below the minimum allowed limit of 10. Please adjust.")
    );
    let lt = Policy::parse("n < 3").unwrap();
    assert!(lt.violation(&json!({"n": 3})).is_some());
    assert!(lt.violation(&json!({"n": 2})).is_none());
    let gt = Policy::parse("n > 3").unwrap();
    assert!(gt.violation(&json!({"n": 3})).is_some());
    let eq = Policy::parse("n == 3").unwrap();
    assert!(eq.violation(&json!({"n": 4})).is_some());
    assert!(eq.violation(&json!({"n": 3.0})).is_none());
    let ne = Policy::parse("n != 3").unwrap();
    assert!(ne.violation(&json!({"n": 3})).is_some());
}
