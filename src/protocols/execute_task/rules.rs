//! execute_task's additions to the suite engine, for its protocol cases (`suites/execute-task.yaml`):
//! the rule `valid_action` (an answer is one action the spec lists, with its fields), the rules
//! judged across a whole run (`within_timeout`, `identity`, `http_content_type`, `sanitization`,
//! `reference_harness`, `engine_log`: see [`RunRule`]), and the generator `long_history(N)`.

use std::sync::OnceLock;

use serde_json::{json, Value};

use super::model::check_answer;
use crate::content::Content;
use crate::probe::checks::verdict;
use crate::probe::plugin::{Ctx, Rule, SuiteProtocol, Verdict, OWN_ANSWER};
use crate::probe::suite::SuiteError;
use crate::probe::template::{numbers, FillError};
use crate::probe::Suite as LoadedSuite;

/// The built-in protocol cases: (file, YAML).
pub const SUITE: (&str, &str) = (
    "suites/execute-task.yaml",
    include_str!("../../../suites/execute-task.yaml"),
);

/// The built-in protocol cases, loaded once.
pub fn suite() -> Result<LoadedSuite, SuiteError> {
    static LOADED: OnceLock<Result<LoadedSuite, SuiteError>> = OnceLock::new();
    LOADED
        .get_or_init(|| LoadedSuite::parse(SUITE.0, SUITE.1, &Suite))
        .clone()
}

/// execute_task as the suite engine sees it.
pub struct Suite;

/// A check judged across every exchange of a run (a case without an exchange).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunRule {
    WithinTimeout,
    Identity,
    HttpContentType,
    Sanitization,
    ReferenceHarness,
    EngineLog,
}

impl RunRule {
    const ALL: [(&'static str, RunRule); 6] = [
        ("within_timeout", RunRule::WithinTimeout),
        ("identity", RunRule::Identity),
        ("http_content_type", RunRule::HttpContentType),
        ("sanitization", RunRule::Sanitization),
        ("reference_harness", RunRule::ReferenceHarness),
        ("engine_log", RunRule::EngineLog),
    ];

    pub fn named(name: &str) -> Option<RunRule> {
        RunRule::ALL
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, r)| *r)
    }
}

impl SuiteProtocol for Suite {
    fn rule(&self, name: &str) -> Option<&dyn Rule> {
        if name == "valid_action" {
            return Some(&ValidAction);
        }
        RunRule::named(name).map(|rule| match rule {
            RunRule::WithinTimeout => &AcrossTheRun {
                rule: RunRule::WithinTimeout,
            } as &dyn Rule,
            RunRule::Identity => &AcrossTheRun {
                rule: RunRule::Identity,
            },
            RunRule::HttpContentType => &AcrossTheRun {
                rule: RunRule::HttpContentType,
            },
            RunRule::Sanitization => &AcrossTheRun {
                rule: RunRule::Sanitization,
            },
            RunRule::ReferenceHarness => &AcrossTheRun {
                rule: RunRule::ReferenceHarness,
            },
            RunRule::EngineLog => &AcrossTheRun {
                rule: RunRule::EngineLog,
            },
        })
    }

    fn rules(&self) -> Vec<&'static str> {
        let mut names = vec!["valid_action"];
        names.extend(RunRule::ALL.iter().map(|(n, _)| *n));
        names
    }

    fn generate(
        &self,
        name: &str,
        args: &str,
        _: &mut Content,
    ) -> Option<Result<Value, FillError>> {
        (name == "long_history").then(|| numbers(name, args, 1).map(|n| long_history(n[0])))
    }

    fn generators(&self) -> &'static str {
        "long_history(N)"
    }
}

/// `turns` turns of history: a user message of ~2,800 characters, then the assistant's call of a
/// tool, as compact JSON.
fn long_history(turns: usize) -> Value {
    let long_content = "The customer describes the problem at length. ".repeat(60);
    let mut history = Vec::new();
    for i in 0..turns {
        history.push(json!({"role": "user", "content": format!("Turn {}: {long_content}", i + 1)}));
        history.push(json!({"role": "assistant", "content": json!({"action": "call_tool", "tool_name": "lookup_order", "tool_params": {"order_id": format!("A-{i}")}}).to_string()}));
    }
    Value::Array(history)
}

/// The answer is one action the spec lists, with the fields that action requires.
pub struct ValidAction;

impl Rule for ValidAction {
    fn evaluate(&self, _: &Value, ctx: &Ctx<'_>) -> Verdict {
        Verdict::of(|| {
            let outcome = ctx.outcome.ok_or("the case has no exchange")?;
            let answer = outcome.json(ctx.max_body)?;
            Ok(verdict(check_answer(answer), 1, OWN_ANSWER, || {
                action_note(answer)
            }))
        })
    }
}

/// `answered final_answer`: the note of a valid action.
pub fn action_note(answer: &Value) -> String {
    format!(
        "answered {}",
        answer.get("action").and_then(Value::as_str).unwrap_or("?")
    )
}

/// The rules judged across a run: `probe execute-task` judges them after the scenarios, from
/// what every exchange of the run left (`probe::ExchangeLog`); one exchange alone cannot. In
/// traffic the kit did not send (`agent-tck proxy`, a case marked `traffic: true`), the ones
/// that hold of each answer alone are judged on each: `sanitization`, and `http_content_type`
/// when the agents speak HTTP (over stdio an answer has no label: the case is not judged).
struct AcrossTheRun {
    rule: RunRule,
}

impl Rule for AcrossTheRun {
    fn reads_exchange(&self) -> bool {
        false
    }

    fn judges_latency(&self) -> bool {
        self.rule == RunRule::WithinTimeout
    }

    fn reads_headers(&self) -> bool {
        self.rule == RunRule::HttpContentType
    }

    fn once_in_a_run(&self) -> bool {
        self.rule == RunRule::Identity
    }

    fn evaluate(&self, _: &Value, ctx: &Ctx<'_>) -> Verdict {
        match (ctx.live, ctx.outcome, self.rule) {
            (true, Some(outcome), RunRule::Sanitization) => live_sanitization(outcome, ctx),
            (true, Some(outcome), RunRule::HttpContentType) => live_content_type(outcome),
            (true, Some(outcome), RunRule::Identity) => live_identity(outcome, ctx),
            _ => Verdict::broken(
                "judged across a whole run by `probe execute-task`, not on one exchange",
            ),
        }
    }
}

/// `http_content_type` on one answer in traffic: a 2xx labelled application/json (an error
/// page's label is not the protocol's: nothing to judge).
fn live_content_type(outcome: &crate::probe::outcome::Outcome) -> Verdict {
    match &outcome.result {
        Ok(r) if (200..300).contains(&r.status) => {
            crate::probe::checks::content_type_verdict(r, "application/json")
        }
        Ok(r) => Verdict::nothing(format!(
            "answered {}: an error page's label is not the protocol's",
            r.status
        )),
        // The answer's own cases say what became of it.
        Err(e) => Verdict::nothing(format!("no answer to judge ({e})")),
    }
}

/// `identity` on one answer in traffic: the name the harness would discover in it (the case
/// holds once one answer of the agent's names it: [`Rule::once_in_a_run`]).
/// An answer that did not come, or came as no JSON object, holds no name to look for: it is
/// not counted against the agent here (its own cases say what became of it).
fn live_identity(outcome: &crate::probe::outcome::Outcome, ctx: &Ctx<'_>) -> Verdict {
    match &outcome.result {
        Ok(r) if !(200..300).contains(&r.status) => {
            return Verdict::nothing(format!(
                "answered {}: not an answer of the protocol",
                r.status
            ))
        }
        Err(e) => return Verdict::nothing(format!("no answer to look for a name in ({e})")),
        Ok(_) => {}
    }
    let answer = match outcome.json(ctx.max_body) {
        Ok(answer) => answer,
        Err(e) => return Verdict::nothing(format!("no JSON object to look for a name in ({e})")),
    };
    match super::model::discover_name(answer) {
        Some((name, source)) => Verdict::held(
            1,
            OWN_ANSWER,
            format!("discovered {name:?} from `{source}`"),
        ),
        None => Verdict::broken(
            "no name in the answer (name, agent_name, metadata.name, metadata.agent_name or metadata.model)",
        ),
    }
}

/// Why an agent that never names itself fails `identity`.
pub const NO_NAME: &str = "no name in any answer: the harness falls back to --agent-name or the endpoint URL (add `agent_name` to every answer)";

/// `sanitization` on one answer in traffic: no NUL, terminal escape or injection pattern in its
/// strings, but for what it repeats from its request (the sender's to strip, as the round
/// table's agent rules hold it).
fn live_sanitization(outcome: &crate::probe::outcome::Outcome, ctx: &Ctx<'_>) -> Verdict {
    Verdict::of(|| {
        let answer = outcome.json(ctx.max_body)?;
        let patterns = crate::sanitization::patterns()?;
        let sent: std::collections::HashSet<&str> = outcome
            .body_sent()
            .map(|r| {
                crate::jsonpath::strings(r)
                    .into_iter()
                    .flat_map(|(_, s)| patterns.find(s).map(|(_, m)| m))
                    .collect()
            })
            .unwrap_or_default();
        let strings = crate::jsonpath::strings(answer);
        let findings: Vec<_> = strings
            .iter()
            .flat_map(|(path, text)| patterns.scan_except(path, text, |m| sent.contains(m)))
            .collect();
        Ok(verdict(
            findings,
            strings.len() as u64,
            "strings",
            String::new,
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_protocol_cases_load_and_name_their_checks() {
        let suite = suite().unwrap();
        let ids: Vec<&str> = suite.cases().iter().map(|c| c.id.value.as_str()).collect();
        assert!(ids.contains(&"protocol.first-turn") && ids.contains(&"stdio.engine-log"));
        let e = LoadedSuite::parse(
            "x.yaml",
            &SUITE.1.replace("[within_timeout]", "[within_timeouts]"),
            &Suite,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("unknown check \"within_timeouts\""), "{e}");
        let e = LoadedSuite::parse(
            "x.yaml",
            &SUITE.1.replace("long_history(7)", "long_history(7, 2)"),
            &Suite,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("takes 1 number"), "{e}");
    }

    #[test]
    fn a_long_history_has_its_length() {
        let history = long_history(7);
        let turns = history.as_array().unwrap();
        assert_eq!(turns.len(), 14);
        let user = turns[0]["content"].as_str().unwrap();
        assert!(user.starts_with("Turn 1: ") && user.chars().count() > 2_700);
        assert_eq!(
            turns[13]["content"],
            r#"{"action":"call_tool","tool_name":"lookup_order","tool_params":{"order_id":"A-6"}}"#
        );
    }

    #[test]
    fn a_run_rule_is_not_judged_on_one_exchange() {
        let suite = suite().unwrap();
        let ctx = Ctx {
            protocol: suite.protocol,
            outcome: None,
            exchanges: &Default::default(),
            reachable: None,
            max_body: 1,
            max_field: 1,
            status_judged: false,
            live: false,
            notes: true,
        };
        let e = Suite.rule("identity").unwrap().evaluate(&Value::Null, &ctx);
        assert!(
            matches!(&e, Verdict::Broken(why) if why.contains("across a whole run")),
            "{e:?}"
        );
    }
}
