//! The round table's rules for the probe's suite (`suites/roundtable.yaml`), named there beside
//! the generic check kinds: `evidence_tags`, `dissent_reason`, `counter_evidence`,
//! `known_targets`, `same_agent_name`; and its template generators, `analyses(N)` and
//! `synthesis(TRADE_OFFS, MINORITY_VIEWS)`.

use std::collections::BTreeMap;

use serde_json::Value;

use super::content::RoundtableContent;
use super::evidence::check_tag;
use super::model;
use crate::content::Content;
use crate::jsonpath::JsonPath;
use crate::probe::checks::verdict;
use crate::probe::plugin::{Ctx, InvalidArgs, Verdict};
use crate::probe::plugin::{Rule, SuiteProtocol};
use crate::probe::suite::ExchangeSpec;
use crate::probe::template::{numbers, FillError};
use crate::text::excerpt_str;

/// The round table as the suite engine sees it.
pub struct Suite;

impl SuiteProtocol for Suite {
    fn rule(&self, name: &str) -> Option<&dyn Rule> {
        Some(match name {
            "evidence_tags" => &EvidenceTags,
            "dissent_reason" => &DissentReason,
            "counter_evidence" => &CounterEvidence,
            "known_targets" => &KnownTargets,
            "same_agent_name" => &SameAgentName,
            _ => return None,
        })
    }

    fn rules(&self) -> Vec<&'static str> {
        vec![
            "evidence_tags",
            "dissent_reason",
            "counter_evidence",
            "known_targets",
            "same_agent_name",
        ]
    }

    fn generate(
        &self,
        name: &str,
        args: &str,
        c: &mut Content,
    ) -> Option<Result<Value, FillError>> {
        let value = match name {
            "analyses" => numbers(name, args, 1)
                .map(|n| serde_json::to_value(c.analyses(n[0])).unwrap_or(Value::Null)),
            "synthesis" => numbers(name, args, 2)
                .map(|n| serde_json::to_value(c.synthesis(n[0], n[1])).unwrap_or(Value::Null)),
            _ => return None,
        };
        Some(value)
    }

    fn generators(&self) -> &'static str {
        "analyses(N), synthesis(T, M)"
    }
}

/// A list of strings as a rule's arguments (paths, exchange names).
fn string_list<'a>(args: &'a Value, what: &str) -> Result<Vec<&'a str>, String> {
    args.as_array()
        .and_then(|items| items.iter().map(Value::as_str).collect())
        .ok_or_else(|| format!("expects a list of {what}"))
}

/// Each string at these paths carries a well-formed evidence level tag.
struct EvidenceTags;

impl Rule for EvidenceTags {
    fn validate(
        &self,
        args: &Value,
        _: &BTreeMap<String, ExchangeSpec>,
    ) -> Result<(), InvalidArgs> {
        string_list(args, "paths")?
            .iter()
            .try_for_each(|p| Ok(JsonPath::parse(p).map(drop)?))
    }

    fn evaluate(&self, args: &Value, ctx: &Ctx<'_>) -> Verdict {
        Verdict::of(|| {
            let body = answer(ctx)?;
            let mut findings = Vec::new();
            let paths = string_list(args, "paths")?;
            let mut tagged = 0;
            for path in &paths {
                JsonPath::cached(path)?.each(body, &mut |at, value| {
                    tagged += 1;
                    findings.extend(check_tag(at, value.as_str().unwrap_or_default()));
                });
            }
            if tagged == 0 {
                return Ok(Verdict::nothing(format!(
                    "the answer holds no evidence string at {}",
                    paths.join(", ")
                )));
            }
            Ok(verdict(findings, tagged, "evidence strings", String::new))
        })
    }
}

/// /vote: a dissent carries a non-empty dissent_reason.
struct DissentReason;

impl Rule for DissentReason {
    fn evaluate(&self, _: &Value, ctx: &Ctx<'_>) -> Verdict {
        Verdict::of(|| {
            let vote = answer(ctx)?;
            if vote.get("approve") != Some(&Value::Bool(false)) {
                return Ok(Verdict::nothing(
                    "the agent approved: there is no dissent whose reason to judge",
                ));
            }
            Ok(verdict(
                model::dissent_has_reason(vote),
                1,
                "dissent",
                String::new,
            ))
        })
    }
}

/// /challenge: every challenge carries non-empty counter_evidence.
struct CounterEvidence;

impl Rule for CounterEvidence {
    fn evaluate(&self, _: &Value, ctx: &Ctx<'_>) -> Verdict {
        Verdict::of(|| {
            let body = answer(ctx)?;
            let challenges = count(body, &["challenges"]);
            if challenges == 0 {
                return Ok(Verdict::nothing(
                    "the answer holds no challenge whose counter_evidence to judge",
                ));
            }
            Ok(verdict(
                model::challenges_have_counter_evidence(body),
                challenges,
                "challenges",
                String::new,
            ))
        })
    }
}

/// /challenge: targets are agents named in the request's other_analyses.
struct KnownTargets;

impl Rule for KnownTargets {
    fn evaluate(&self, _: &Value, ctx: &Ctx<'_>) -> Verdict {
        Verdict::of(|| {
            let outcome = ctx.outcome.ok_or("the case has no exchange")?;
            outcome.result.as_ref().map_err(|e| e.to_string())?;
            let request = outcome.body_sent().ok_or("the request had no JSON body")?;
            let body = outcome.json(ctx.max_body)?;
            let targets = count(body, &["challenges", "concessions"]);
            if targets == 0 {
                return Ok(Verdict::nothing(
                    "the answer holds no challenge or concession whose target to judge",
                ));
            }
            Ok(verdict(
                model::targets_are_known(body, request),
                targets,
                "challenges and concessions",
                String::new,
            ))
        })
    }
}

/// `agent_name` is the same in the answers to these exchanges.
struct SameAgentName;

impl Rule for SameAgentName {
    fn reads_exchange(&self) -> bool {
        false
    }

    fn validate(
        &self,
        args: &Value,
        exchanges: &BTreeMap<String, ExchangeSpec>,
    ) -> Result<(), InvalidArgs> {
        let names = string_list(args, "exchanges")?;
        match names.iter().find(|n| !exchanges.contains_key(**n)) {
            Some(n) => Err(format!("same_agent_name: unknown exchange {n:?}").into()),
            None => Ok(()),
        }
    }

    fn exchanges(&self, args: &Value) -> Vec<String> {
        string_list(args, "exchanges")
            .unwrap_or_default()
            .into_iter()
            .map(String::from)
            .collect()
    }

    fn evaluate(&self, args: &Value, ctx: &Ctx<'_>) -> Verdict {
        Verdict::of(|| {
            let mut seen = Vec::new();
            // Answers without a string agent_name: their schema case fails on it; here they
            // are left out, and the names there are compared.
            let mut nameless = Vec::new();
            for name in string_list(args, "exchanges")? {
                let outcome = ctx
                    .exchanges
                    .get(name)
                    .ok_or_else(|| format!("exchange {name} was not run"))?;
                let body = outcome
                    .json(ctx.max_body)
                    .map_err(|e| format!("/{name}: {e}"))?;
                match body.get("agent_name").and_then(Value::as_str) {
                    Some(agent) => seen.push((name.to_string(), agent.to_string())),
                    None => nameless.push(format!("/{name}")),
                }
            }
            let left_out = match nameless.as_slice() {
                [] => String::new(),
                some => format!(
                    "; {} carried no agent_name string (its schema case says so) and was not compared",
                    some.join(" and ")
                ),
            };
            if seen.len() < 2 {
                return Ok(Verdict::nothing(format!(
                    "fewer than two answers carry an agent_name to compare{left_out}"
                )));
            }
            let answers = seen.len() as u64;
            Ok(verdict(
                model::agent_name_consistent(&seen),
                answers,
                "answers",
                || match seen.first() {
                    Some((_, n)) => format!(
                        "agent_name {}{left_out}",
                        excerpt_str(&Value::from(n.as_str()).to_string(), 80)
                    ),
                    None => String::new(),
                },
            ))
        })
    }
}

/// How many items the answer's lists hold.
fn count(body: &Value, lists: &[&str]) -> u64 {
    lists
        .iter()
        .filter_map(|l| body.get(l).and_then(Value::as_array))
        .map(|a| a.len() as u64)
        .sum()
}

/// The case's own answer as JSON, as the generic checks read it.
fn answer<'a>(ctx: &Ctx<'a>) -> Result<&'a Value, String> {
    let outcome = ctx.outcome.ok_or("the case has no exchange")?;
    outcome.result.as_ref().map_err(|e| e.to_string())?;
    Ok(outcome.json(ctx.max_body)?)
}
