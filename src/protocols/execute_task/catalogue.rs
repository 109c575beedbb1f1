//! execute_task's cases in every role: the protocol suite's and each built-in scenario's (the
//! probe judging an agent), and the harness cases its fleet reports on the harness it judges
//! (`observe.rs`).

use crate::error::Error;
use crate::protocols::plugin::{CaseInfo, Role};
use crate::report::{Kind, Level};

/// The cases [`super::observe`] reports on a harness (a test holds that every id observe.rs
/// reports is here).
pub const HARNESS_CASES: &[(&str, Level, &str, &str)] = &[
    ("harness.turns", Level::Must, "turn 1 opens a conversation with an empty history; each next request is the next turn", "Request Body; Multi-turn Flow"),
    ("harness.history", Level::Must, "conversation_history, when sent, keeps the earlier turns and grows by the previous exchange", "Request Body; Multi-turn Flow"),
    ("harness.tool-results", Level::Must, "after call_tool or call_multiple_tools, the next task_description carries each tool's result (or an error naming it, or a GOVERNANCE ERROR)", "Multi-turn Flow; Policy Violations (Governance feedback)"),
    ("harness.loop-ends", Level::Must, "nothing follows final_answer, provide_instructions or error in a conversation", "Multi-turn Flow"),
    ("harness.turn-limit", Level::Must, "against an agent that never finishes, the harness stops at a turn limit", "Multi-turn Flow"),
    ("harness.turn-limit-default", Level::Should, "the turn limit is the spec's default, 5, unless configured (say --expect-max-turns N)", "Multi-turn Flow"),
    ("harness.deadline", Level::Must, "against a slow or hanging agent, the harness gives up within --expect-timeout + 1 s", "agent-tck (robustness)"),
    ("harness.after-bad-answer", Level::Must, "after a malformed, oversized or wrong-schema answer, the harness goes on or ends cleanly (never a half-written request)", "agent-tck (robustness)"),
    ("harness.reference-forms", Level::May, "where the harness used the reference harness's forms rather than the spec's (INFO)", "Policy Violations (Governance feedback)"),
];

/// The protocol suite's cases and the built-in scenarios' (probe), then the harness's (mock).
pub fn catalogue() -> Result<Vec<CaseInfo>, Error> {
    let mut cases = CaseInfo::of_suite(&super::rules::suite()?, Role::Probe);
    for scenario in super::scenario::Scenario::builtin() {
        for case in super::probe::scenario_cases_unjudged(&scenario) {
            // An evaluation case that no scenario gates is scored, not judged: `eval`.
            let level = match (case.kind, case.level) {
                (Kind::Evaluation, Level::May) => "eval".to_string(),
                (_, level) => level.as_str().to_string(),
            };
            cases.push(CaseInfo {
                level,
                ..CaseInfo::new(&case.id, Role::Probe, case.level, &case.title, &case.spec)
            });
        }
    }
    cases.extend(CaseInfo::of_table(HARNESS_CASES, Role::Mock));
    Ok(cases)
}
