//! What an agent run returns: a response that ends with one structured JSON result (bare, or in
//! a ```json fence; text before it is allowed), and the rules it is judged by
//! (`schemas/agent_standard/result.json`, then the standard's rules by mode and status, and its
//! consistency with the definitions).

use std::collections::BTreeSet;

use serde_json::Value;

use crate::probe::plugin::{Judged, Verdict};
use crate::report::{CaseResult, Evidence, Level};

pub const RESULT_SCHEMA: &str = "agent_standard/result";

/// Most candidate starts tried when looking for the last JSON object (a response with thousands
/// of `{` lines is not searched forever).
const TRIES: usize = 200;

/// Why a response holds no JSON result at its end, in words for the json-last case: the agent's
/// doing, so a failed case, never an error of the run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct NoResult(pub String);

/// The last JSON object of `text`, which must end the response (only whitespace, or a closing
/// fence, after it). Candidates are the `{` that begin a line, last first.
pub fn last_object(text: &str) -> Result<Value, NoResult> {
    last_object_or_why(text).map_err(NoResult)
}

fn last_object_or_why(text: &str) -> Result<Value, String> {
    let starts = object_starts(text);
    if starts.is_empty() {
        return Err("no JSON object in the response (the result must end it)".into());
    }
    let mut last_error = String::new();
    // An object followed by text: the outermost such (the earliest start) is what is reported
    // when no object ends the response (the inner ones are nested in it).
    let mut followed: Option<(usize, String)> = None;
    // A candidate that does not parse, and where: when it spans an object that did (a trailing
    // comma deep in the result), its error is the one to report, not the text after the nested
    // object.
    let mut broken: Option<(usize, usize, String)> = None;
    for &start in starts.iter().rev().take(TRIES) {
        let mut stream = serde_json::Deserializer::from_str(&text[start..]).into_iter::<Value>();
        match stream.next() {
            Some(Ok(value @ Value::Object(_))) => {
                let after = &text[start + stream.byte_offset()..];
                let rest = after.trim();
                let fenced = rest.starts_with("```");
                let rest = rest.strip_prefix("```").map_or(rest, str::trim);
                if rest.is_empty() {
                    return Ok(value);
                }
                let mut why = format!(
                    "text after the JSON result: {:?}",
                    crate::text::shorten(rest, 80)
                );
                if fenced && sign_off(rest) {
                    why.push_str(SIGN_OFF);
                }
                followed = Some((start, why));
            }
            Some(Err(e)) => {
                last_error = e.to_string();
                if !e.is_eof() {
                    let at = start + offset_in(&text[start..], e.line(), e.column());
                    broken = Some((start, at, syntax_error(text, at, &e)));
                }
            }
            _ => {}
        }
    }
    match (followed, broken) {
        (Some((inner, _)), Some((outer, at, why))) if outer < inner && at > inner => Err(why),
        (Some((_, why)), _) => Err(why),
        (None, _) => Err(format!(
            "no complete JSON object ends the response ({last_error})"
        )),
    }
}

/// Added to json-last's failure when a fenced result is followed by a sign-off line only.
const SIGN_OFF: &str = " (a sign-off line after the fenced result: the standard wants the \
                        result last, though the consumers of its home repository, \
                        z3r0-c001/Claude_Protocol, accept this)";

/// One short line of words, no JSON: "Let me know if you need anything else."
fn sign_off(rest: &str) -> bool {
    !rest.contains('\n') && rest.chars().count() <= 120 && !rest.contains(['{', '}', '[', ']'])
}

/// The byte offset of 1-based `line` and `column` (serde_json's, in bytes) in `text`.
fn offset_in(text: &str, line: usize, column: usize) -> usize {
    let line_start: usize = text
        .split_inclusive('\n')
        .take(line.saturating_sub(1))
        .map(str::len)
        .sum();
    (line_start + column.saturating_sub(1)).min(text.len())
}

/// serde_json's error `e`, placed at its line and column in the whole response (`at`, bytes).
fn syntax_error(text: &str, at: usize, e: &serde_json::Error) -> String {
    let shown = e.to_string();
    let what = shown
        .rsplit_once(" at line ")
        .map_or(shown.as_str(), |(w, _)| w);
    let boundary = (0..=at.min(text.len()))
        .rev()
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(0);
    let before = &text[..boundary];
    let line = before.matches('\n').count() + 1;
    let column = before.len() - before.rfind('\n').map_or(0, |n| n + 1) + 1;
    format!(
        "the JSON result does not parse: {what} at line {line}, column {column} of the response"
    )
}

/// Where the candidate objects begin: the first `{` of each line, when only blanks or a
/// "```json" come before it on the line. One pass over the lines: a response that is one long
/// line of `{` (a hostile nesting) costs its length, not its length squared.
fn object_starts(text: &str) -> Vec<usize> {
    let mut starts = Vec::new();
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        let t = line.trim_start();
        let t = match t.strip_prefix("```json") {
            Some(rest) => rest.trim_start(),
            None => t,
        };
        if t.starts_with('{') {
            starts.push(at + line.len() - t.len());
        }
        at += line.len();
    }
    starts
}

/// What the judge knows besides the response.
#[derive(Debug, Clone, Default)]
pub struct Context {
    /// The mode the run was asked for (None: take the result's own).
    pub mode: Option<String>,
    /// The names of the definitions (`--agents`), when given.
    pub agents: Option<BTreeSet<String>>,
    /// The agent that was run (`--agent`), when known.
    pub agent: Option<String>,
}

/// The rules, in the order the cases come: (id, level, title).
pub const RULES: &[(&str, Level, &str)] = &[
    (
        "json-last",
        Level::Must,
        "the response ends with one JSON object (bare or in a ```json fence)",
    ),
    (
        "schema",
        Level::Must,
        "the result is valid against schemas/agent_standard/result.json",
    ),
    (
        "mode",
        Level::Must,
        "execution_mode is the mode the agent was run in",
    ),
    ("plan-scope", Level::Must, "a plan-mode result has a scope"),
    (
        "execute-findings",
        Level::Must,
        "an execute-mode result has findings",
    ),
    (
        "blocked-blockers",
        Level::Must,
        "a blocked result names at least one blocker",
    ),
    (
        "execute-needs-approval",
        Level::Should,
        "needs_approval belongs to plan mode, not execute mode",
    ),
    (
        "agent-name",
        Level::Must,
        "agent is the name of the agent run (one of --agents' definitions)",
    ),
    (
        "metrics",
        Level::Should,
        "findings.metrics agree with themselves and with findings.details",
    ),
    (
        "findings-summary",
        Level::Should,
        "findings, when present, has a summary (the validator of the standard's home repository requires it)",
    ),
    (
        "next-agents",
        Level::Must,
        "next_agents name agents that exist (with --agents)",
    ),
    (
        "present-to-user",
        Level::Must,
        "present_to_user is a non-empty Markdown summary",
    ),
];

/// Settles `case` by `verdict`: a pass on its evidence, a skip saying what would exercise the
/// rule, or a failure.
pub fn settle(case: &mut CaseResult, verdict: Verdict) {
    match verdict {
        Verdict::Held(j) if j.judged == 0 => case.skip(j.note),
        Verdict::Held(j) => case.pass_noting(Evidence::new(j.judged, j.of), j.note, String::new),
        Verdict::Broken(why) => case.fail(why),
    }
}

/// The cases of one response, labelled `label` (`plan`, `execute`, a file's name).
pub fn judge(label: &str, text: &str, cx: &Context) -> Vec<CaseResult> {
    let mut cases: Vec<CaseResult> = RULES
        .iter()
        .map(|(id, level, title)| {
            CaseResult::new(
                &format!("{label}.{id}"),
                label,
                *level,
                title,
                super::lint::SPEC,
            )
        })
        .collect();
    let started = std::time::Instant::now();
    let found = last_object(text);
    cases[0].set_duration(started.elapsed());
    match found {
        Ok(result) => {
            let found = Judged::held(1, "response", "a JSON object ends the response");
            settle(&mut cases[0], Verdict::Held(found));
            for (case, (id, _, _)) in cases.iter_mut().zip(RULES).skip(1) {
                let started = std::time::Instant::now();
                let v = verdict(id, &result, cx);
                case.set_duration(started.elapsed());
                settle(case, v);
            }
        }
        Err(NoResult(e)) => {
            cases[0].fail(e);
            for c in &mut cases[1..] {
                c.skip(format!(
                    "no JSON result to judge: {label}.json-last failed (the response must end \
                     with the result object)"
                ));
            }
        }
    }
    cases
}

/// The verdict of rule `id` (of [`RULES`], after json-last) on the result that ends the response.
fn verdict(id: &str, result: &Value, cx: &Context) -> Verdict {
    match id {
        "schema" => schema(result),
        "mode" => mode(result, cx),
        "plan-scope" => has_object(result, "plan", "scope"),
        "execute-findings" => has_object(result, "execute", "findings"),
        "blocked-blockers" => blocked_blockers(result),
        "execute-needs-approval" => execute_needs_approval(result),
        "agent-name" => agent_name(result, cx),
        "metrics" => metrics(&result["findings"]),
        "findings-summary" => findings_summary(&result["findings"]),
        "next-agents" => next_agents(result, cx),
        "present-to-user" => present_to_user(result),
        other => Verdict::Broken(format!("no result rule {other:?}")),
    }
}

fn schema(result: &Value) -> Verdict {
    let findings = crate::schema::schemas().validate(RESULT_SCHEMA, result);
    if findings.is_empty() {
        return Verdict::Held(Judged::held(1, "result against the schema", ""));
    }
    let list: Vec<String> = findings
        .iter()
        .map(|f| format!("{}: {}", f.path, f.message))
        .collect();
    Verdict::Broken(list.join("; "))
}

/// The result's own execution_mode (empty when it has none).
fn own_mode(result: &Value) -> &str {
    result["execution_mode"].as_str().unwrap_or("")
}

fn mode(result: &Value, cx: &Context) -> Verdict {
    let said = own_mode(result);
    match &cx.mode {
        None => Verdict::Held(Judged::nothing(
            "the mode asked is not known (a saved response): say which with --mode plan or \
             --mode execute, or run the agent with --exec",
        )),
        Some(asked) if asked == said => Verdict::Held(Judged::held(
            1,
            format!("result of a run in {asked} mode"),
            "",
        )),
        Some(asked) => Verdict::Broken(format!("run in {asked} mode, the result says {said:?}")),
    }
}

/// A `mode` result (by its own execution_mode) has an object `field`.
fn has_object(result: &Value, mode: &str, field: &str) -> Verdict {
    let said = own_mode(result);
    if said != mode {
        return Verdict::Held(Judged::nothing(format!(
            "not {} result (execution_mode {said:?}): a run in {mode} mode (--mode {mode} or \
             both with --exec) would exercise this",
            crate::text::with_article(&format!("{mode}-mode"))
        )));
    }
    if result[field].is_object() {
        Verdict::Held(Judged::held(1, format!("{mode}-mode result"), ""))
    } else {
        Verdict::Broken(format!(
            "no {field} object in {} result",
            crate::text::with_article(&format!("{mode}-mode"))
        ))
    }
}

fn blocked_blockers(result: &Value) -> Verdict {
    let status = result["status"].as_str().unwrap_or("");
    if status != "blocked" {
        return Verdict::Held(Judged::nothing(format!(
            "the result is not blocked (status {status:?}): a run that ends blocked (a task the \
             agent cannot do) would exercise this"
        )));
    }
    match result["blockers"].as_array().map_or(0, Vec::len) {
        0 => Verdict::Broken("status blocked, but no blocker says why".into()),
        n => Verdict::Held(Judged::held(
            1,
            "blocked result",
            crate::text::count(n as u64, "blockers"),
        )),
    }
}

fn execute_needs_approval(result: &Value) -> Verdict {
    if own_mode(result) != "execute" {
        return Verdict::Held(Judged::nothing(format!(
            "not an execute-mode result (execution_mode {:?}): the rule is about execute runs \
             (--mode execute or both with --exec)",
            own_mode(result)
        )));
    }
    if result["status"] == "needs_approval" {
        Verdict::Broken("needs_approval in execute mode: approval is asked for in plan mode".into())
    } else {
        Verdict::Held(Judged::held(1, "execute-mode result", ""))
    }
}

fn agent_name(result: &Value, cx: &Context) -> Verdict {
    let agent = result["agent"].as_str().unwrap_or("");
    if agent.is_empty() && (cx.agent.is_some() || cx.agents.is_some()) {
        // Said once, rather than as a name no definition has.
        return Verdict::Broken("the result names no agent (`agent` is missing or empty)".into());
    }
    match (&cx.agent, &cx.agents) {
        (Some(run), _) if agent == run => {
            Verdict::Held(Judged::held(1, "result naming the agent run", ""))
        }
        (Some(run), _) => Verdict::Broken(format!(
            "the result's agent is {agent:?}, the agent run {run:?}"
        )),
        (None, Some(names)) if names.contains(agent) => {
            Verdict::Held(Judged::held(1, "result naming one of --agents", ""))
        }
        (None, Some(_)) => Verdict::Broken(format!("no definition named {agent:?} among --agents")),
        (None, None) => Verdict::Held(Judged::nothing(
            "no --agent or --agents to compare the result's agent with: give the agent's name \
             (--agent NAME) or its definitions (--agents DIR)",
        )),
    }
}

fn metrics(findings: &Value) -> Verdict {
    let counts = metric_counts(&findings["metrics"]);
    if counts == 0 {
        return Verdict::Held(Judged::nothing(
            "no findings.metrics counts (issues_found, critical … info) in the result: an \
             execute-mode result that counts its findings would exercise this",
        ));
    }
    let problems = metrics_problems(findings);
    if problems.is_empty() {
        Verdict::Held(Judged::held(counts, "findings.metrics counts", ""))
    } else {
        Verdict::Broken(problems.join("; "))
    }
}

/// A `findings` object says what it found in a `summary`: the standard's example has one, and the
/// hook of its home repository (z3r0-c001/Claude_Protocol, agent-handoff-validator.py) rejects a
/// `findings` without it. The schema leaves it optional, hence a SHOULD.
fn findings_summary(findings: &Value) -> Verdict {
    if !findings.is_object() {
        return Verdict::Held(Judged::nothing(
            "the result has no findings object: an execute-mode result (or a plan that reports \
             findings) would exercise this",
        ));
    }
    match findings["summary"].as_str() {
        Some(s) if !s.trim().is_empty() => Verdict::Held(Judged::held(1, "findings object", "")),
        Some(_) => Verdict::Broken("findings.summary is empty".into()),
        None => Verdict::Broken(
            "findings has no summary (z3r0-c001/Claude_Protocol's agent-handoff-validator \
             requires findings.summary)"
                .into(),
        ),
    }
}

fn next_agents(result: &Value, cx: &Context) -> Verdict {
    let Some(names) = &cx.agents else {
        return Verdict::Held(Judged::nothing(
            "no --agents to look the names up in: give the definitions' directory (--agents DIR)",
        ));
    };
    let named: Vec<&str> = result["next_agents"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|n| n["agent"].as_str())
        .collect();
    if named.is_empty() {
        return Verdict::Held(Judged::nothing(
            "the result names no next_agents: a run that hands off to another agent would \
             exercise this",
        ));
    }
    let unknown: Vec<String> = named
        .iter()
        .filter(|n| !names.contains(**n))
        .map(|n| format!("{n:?}"))
        .collect();
    if unknown.is_empty() {
        Verdict::Held(Judged::held(named.len() as u64, "next_agents names", ""))
    } else {
        Verdict::Broken(format!(
            "next_agents name no definition: {}",
            unknown.join(", ")
        ))
    }
}

fn present_to_user(result: &Value) -> Verdict {
    let present = result["present_to_user"].as_str().unwrap_or("");
    if present.trim().is_empty() {
        Verdict::Broken("present_to_user is empty or missing".into())
    } else {
        Verdict::Held(Judged::held(1, "present_to_user summary", ""))
    }
}

/// How many counts findings.metrics holds (issues_found and the per-severity ones).
fn metric_counts(metrics: &Value) -> u64 {
    std::iter::once("issues_found")
        .chain(SEVERITIES)
        .filter(|k| metrics[*k].is_u64())
        .count() as u64
}

const SEVERITIES: [&str; 5] = ["critical", "high", "medium", "low", "info"];

/// How findings.metrics disagree: per-severity counts that do not add up to issues_found, or
/// fewer than the details of a severity (details may be a sample: fewer is fine).
fn metrics_problems(findings: &Value) -> Vec<String> {
    let m = &findings["metrics"];
    let mut problems = Vec::new();
    let counted: u64 = SEVERITIES.iter().filter_map(|s| m[*s].as_u64()).sum();
    let details = findings["details"].as_array().cloned().unwrap_or_default();
    if let Some(total) = m["issues_found"].as_u64() {
        if SEVERITIES.iter().any(|s| m[*s].is_u64()) && counted != total {
            problems.push(format!(
                "the per-severity counts add up to {counted}, issues_found is {total}"
            ));
        }
        if (details.len() as u64) > total {
            problems.push(format!(
                "{} details, issues_found is {total}",
                details.len()
            ));
        }
    }
    for s in SEVERITIES {
        let listed = details.iter().filter(|d| d["severity"] == s).count() as u64;
        if let Some(n) = m[s].as_u64() {
            if listed > n {
                problems.push(format!("{listed} {s} details, metrics.{s} is {n}"));
            }
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_object_ends_the_response() {
        let fenced = "Done.\n\n```json\n{\"a\": {\"b\": 1}}\n```\n";
        assert_eq!(last_object(fenced).unwrap()["a"]["b"], 1);
        let bare = "Notes {not json}\n{\"x\": 1}\n{\"agent\": \"a\"}\n";
        assert_eq!(last_object(bare).unwrap()["agent"], "a");
        assert!(last_object("{\"x\": 1}\nand then words")
            .unwrap_err()
            .0
            .contains("text after"));
        assert_eq!(
            last_object("no json at all").unwrap_err().to_string(),
            "no JSON object in the response (the result must end it)"
        );
        let deep = format!("{}{}", "{\"a\":".repeat(100_000), "1");
        assert!(last_object(&deep).is_err());
        // 200,000 levels, one line of braces or one brace a line: an error, soon.
        let started = std::time::Instant::now();
        assert!(last_object(&"{".repeat(200_000)).is_err());
        assert!(last_object(&"{\n".repeat(200_000)).is_err());
        let closed = format!("{}{}", "[".repeat(200_000), "]".repeat(200_000));
        assert!(last_object(&closed).is_err());
        assert!(started.elapsed() < std::time::Duration::from_secs(20));
        assert_eq!(
            object_starts("a {\n  {x\n```json {\n}"),
            vec![6, 9 + "```json ".len()]
        );
    }

    #[test]
    fn metrics_may_sample_details_but_must_add_up() {
        let sample = serde_json::json!({"details": [{"severity": "critical"}], "metrics": {"issues_found": 3, "critical": 1, "medium": 2}});
        assert_eq!(metrics_problems(&sample), Vec::<String>::new());
        let off = serde_json::json!({"details": [{"severity": "high"}, {"severity": "high"}], "metrics": {"issues_found": 1, "high": 1}});
        assert_eq!(metrics_problems(&off).len(), 2);
    }

    #[test]
    fn a_sign_off_after_a_fenced_result_is_said_and_still_fails() {
        let signed = "Done.\n```json\n{\"a\": 1}\n```\nLet me know if you need anything else.\n";
        assert_eq!(
            last_object(signed).unwrap_err().0,
            format!(
                "text after the JSON result: \"Let me know if you need anything else.\"{SIGN_OFF}"
            )
        );
        // Bare, or more than one line after it: no such clause.
        let bare = "{\"a\": 1}\nLet me know if you need anything else.\n";
        assert!(!last_object(bare).unwrap_err().0.contains("sign-off"));
        let two = "```json\n{\"a\": 1}\n```\nThanks.\nAnd one more thing.\n";
        assert!(!last_object(two).unwrap_err().0.contains("sign-off"));
    }

    #[test]
    fn a_trailing_comma_deep_inside_is_reported_at_its_line() {
        let text = "Report:\n```json\n{\n  \"agent\": \"a\",\n  \"findings\": {\n    \"details\": [\n      {\"severity\": \"low\"},\n      {\"severity\": \"high\"},\n    ]\n  }\n}\n```\n";
        assert_eq!(
            last_object(text).unwrap_err().0,
            "the JSON result does not parse: trailing comma at line 9, column 5 of the response"
        );
        // Prose with a brace before a result followed by text: still the text after it.
        let prose = "{not json}\n{\"x\": 1}\nand then words\n";
        assert_eq!(
            last_object(prose).unwrap_err().0,
            "text after the JSON result: \"and then words\""
        );
    }

    #[test]
    fn findings_without_summary_is_noted_and_no_findings_is_nothing_to_judge() {
        let v = |findings: Value| findings_summary(&findings);
        assert!(
            matches!(v(serde_json::json!({"summary": "Found 2"})), Verdict::Held(j) if j.judged == 1)
        );
        assert!(matches!(v(Value::Null), Verdict::Held(j) if j.judged == 0));
        match v(serde_json::json!({"details": []})) {
            Verdict::Broken(why) => assert_eq!(
                why,
                "findings has no summary (z3r0-c001/Claude_Protocol's agent-handoff-validator requires findings.summary)"
            ),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_result_with_no_agent_says_so_once() {
        let cx = Context {
            agents: Some(["scanner".to_string()].into()),
            ..Context::default()
        };
        match agent_name(&serde_json::json!({"status": "complete"}), &cx) {
            Verdict::Broken(why) => {
                assert_eq!(
                    why,
                    "the result names no agent (`agent` is missing or empty)"
                )
            }
            other => panic!("{other:?}"),
        }
    }
}
