//! What an agent run returns: a response that ends with one structured JSON result (bare, or in
//! a ```json fence; text before it is allowed), and the rules it is judged by
//! (`schemas/agent_standard/result.json`, then the standard's rules by mode and status, and its
//! consistency with the definitions).

use std::collections::BTreeSet;

use serde_json::Value;

use crate::report::{CaseResult, Level, Status};

pub const RESULT_SCHEMA: &str = "agent_standard/result";

/// Most candidate starts tried when looking for the last JSON object (a response with thousands
/// of `{` lines is not searched forever).
const TRIES: usize = 200;

/// The last JSON object of `text`, which must end the response (only whitespace, or a closing
/// fence, after it). Candidates are the `{` that begin a line, last first.
pub fn last_object(text: &str) -> Result<Value, String> {
    let starts = object_starts(text);
    if starts.is_empty() {
        return Err("no JSON object in the response (the result must end it)".into());
    }
    let mut last_error = String::new();
    // An object followed by text: the outermost such (the earliest start) is what is reported
    // when no object ends the response (the inner ones are nested in it).
    let mut followed: Option<String> = None;
    for &start in starts.iter().rev().take(TRIES) {
        let mut stream = serde_json::Deserializer::from_str(&text[start..]).into_iter::<Value>();
        match stream.next() {
            Some(Ok(value @ Value::Object(_))) => {
                let rest = text[start + stream.byte_offset()..].trim();
                let rest = rest.strip_prefix("```").map_or(rest, str::trim);
                if rest.is_empty() {
                    return Ok(value);
                }
                followed = Some(crate::text::shorten(rest, 80));
            }
            Some(Err(e)) => last_error = e.to_string(),
            _ => {}
        }
    }
    match followed {
        Some(rest) => Err(format!("text after the JSON result: {rest:?}")),
        None => Err(format!(
            "no complete JSON object ends the response ({last_error})"
        )),
    }
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
    let result = match last_object(text) {
        Ok(v) => v,
        Err(e) => {
            cases[0].fail(e);
            for c in &mut cases[1..] {
                c.skip(format!("skipped: {label}.json-last failed"));
            }
            return cases;
        }
    };
    cases[0].message = "a JSON object ends the response".into();
    let findings = crate::schema::schemas().validate(RESULT_SCHEMA, &result);
    if !findings.is_empty() {
        let list: Vec<String> = findings
            .iter()
            .map(|f| format!("{}: {}", f.path, f.message))
            .collect();
        cases[1].fail(list.join("; "));
    }
    let mode = result["execution_mode"].as_str().unwrap_or("");
    let status = result["status"].as_str().unwrap_or("");
    let mut verdict = |id: &str, applies: bool, ok: bool, why: String| {
        let c = cases
            .iter_mut()
            .find(|c| c.id == format!("{label}.{id}"))
            .expect("a rule");
        if !applies {
            c.status = Status::Skip;
            c.message = why;
        } else if !ok {
            c.fail(why);
        }
    };
    match &cx.mode {
        Some(asked) => verdict(
            "mode",
            true,
            asked == mode,
            format!("run in {asked} mode, the result says {mode:?}"),
        ),
        None => verdict(
            "mode",
            false,
            true,
            "the mode asked is not known (a saved response): its own is taken".into(),
        ),
    }
    verdict(
        "plan-scope",
        mode == "plan",
        result["scope"].is_object(),
        if mode == "plan" {
            "no scope object in a plan-mode result".into()
        } else {
            "not a plan-mode result".into()
        },
    );
    verdict(
        "execute-findings",
        mode == "execute",
        result["findings"].is_object(),
        if mode == "execute" {
            "no findings object in an execute-mode result".into()
        } else {
            "not an execute-mode result".into()
        },
    );
    let blockers = result["blockers"].as_array().map_or(0, Vec::len);
    verdict(
        "blocked-blockers",
        status == "blocked",
        blockers > 0,
        if status == "blocked" {
            "status blocked, but no blocker says why".into()
        } else {
            "not blocked".into()
        },
    );
    verdict(
        "execute-needs-approval",
        true,
        !(mode == "execute" && status == "needs_approval"),
        "needs_approval in execute mode: approval is asked for in plan mode".into(),
    );
    let agent = result["agent"].as_str().unwrap_or("");
    let named = match (&cx.agent, &cx.agents) {
        (Some(run), _) => Some((
            agent == run,
            format!("the result's agent is {agent:?}, the agent run {run:?}"),
        )),
        (None, Some(names)) => Some((
            names.contains(agent),
            format!("no definition named {agent:?} among --agents"),
        )),
        (None, None) => None,
    };
    match named {
        Some((ok, why)) => verdict("agent-name", true, ok, why),
        None => verdict(
            "agent-name",
            false,
            true,
            "no --agents or --agent to compare with".into(),
        ),
    }
    let metrics = metrics_problems(&result["findings"]);
    verdict(
        "metrics",
        result["findings"]["metrics"].is_object(),
        metrics.is_empty(),
        if result["findings"]["metrics"].is_object() {
            metrics.join("; ")
        } else {
            "no findings.metrics".into()
        },
    );
    match &cx.agents {
        Some(names) => {
            let unknown: Vec<String> = result["next_agents"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|n| n["agent"].as_str())
                .filter(|n| !names.contains(*n))
                .map(|n| format!("{n:?}"))
                .collect();
            verdict(
                "next-agents",
                true,
                unknown.is_empty(),
                format!("next_agents name no definition: {}", unknown.join(", ")),
            );
        }
        None => verdict(
            "next-agents",
            false,
            true,
            "no --agents to look the names up in".into(),
        ),
    }
    let present = result["present_to_user"].as_str().unwrap_or("");
    verdict(
        "present-to-user",
        true,
        !present.trim().is_empty(),
        "present_to_user is empty or missing".into(),
    );
    cases
}

/// How findings.metrics disagree: per-severity counts that do not add up to issues_found, or
/// fewer than the details of a severity (details may be a sample: fewer is fine).
fn metrics_problems(findings: &Value) -> Vec<String> {
    const SEVERITIES: [&str; 5] = ["critical", "high", "medium", "low", "info"];
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
            .contains("text after"));
        assert!(last_object("no json at all")
            .unwrap_err()
            .contains("no JSON object"));
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
}
