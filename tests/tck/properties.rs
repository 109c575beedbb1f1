//! Properties of the kit itself, not of an agent under test:
//!
//! - what the content generator answers (the reference agent's answers) passes every schema and
//!   every semantic rule the probe applies, for any seed and stream;
//! - what the probe sends (the built-in suite's rendered request templates) matches the request
//!   schemas and the Rust request types, for any seed;
//! - validation and the semantic rules never panic, whatever JSON an agent sends;
//! - the execute_task harness loop survives any answers, within its turn limit, sending valid
//!   requests;
//! - the Rust message types and the JSON Schemas agree on what is required, what is optional and
//!   which values are refused.

use std::collections::{BTreeSet, HashMap};
use std::fmt::Debug;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use agent_tck::content::Content;
use agent_tck::jsonpath::{strings, JsonPath};
use agent_tck::phrases::PhraseSet;
use agent_tck::probe::checks::Check;
use agent_tck::probe::outcome::Outcome;
use agent_tck::probe::plugin::Ctx;
use agent_tck::probe::suite::AuthMode;
use agent_tck::probe::template::{self, RunValues};
use agent_tck::probe::Suite;
use agent_tck::protocols::execute_task::harness::{
    judge, run_scenario, End, Exchanger, Held, NoAnswer,
};
use agent_tck::protocols::execute_task::model as execute_task;
use agent_tck::protocols::execute_task::scenario::Scenario;
use agent_tck::protocols::roundtable::content::RoundtableContent;
use agent_tck::protocols::roundtable::evidence::{check_tag, evidence_level};
use agent_tck::protocols::roundtable::model::{
    self as roundtable, AgentAnalysis, AgentChallenge, AgentVote, AnalyzeRequest, Challenge,
    ChallengeRequest, Concession, KeyFinding, Observation, Recommendation, Severity, Synthesis,
    VoteRequest,
};
use agent_tck::schema::{findings_message, schemas, Finding, EMBEDDED};
use agent_tck::transport::http::Response;
use proptest::prelude::*;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{json, Map, Number, Value};

fn suite() -> &'static Suite {
    static SUITE: OnceLock<Suite> = OnceLock::new();
    SUITE.get_or_init(|| {
        agent_tck::protocols::roundtable::suite().expect("the built-in suite loads")
    })
}

/// Every `phrases` check of the built-in suite (speculation, hedging, sanitization), once each:
/// the fields it reads and the compiled patterns.
fn phrase_checks() -> &'static [(Vec<JsonPath>, PhraseSet)] {
    static CHECKS: OnceLock<Vec<(Vec<JsonPath>, PhraseSet)>> = OnceLock::new();
    CHECKS.get_or_init(|| {
        let mut seen = BTreeSet::new();
        let mut out = Vec::new();
        for case in suite().cases() {
            for check in &case.checks {
                if let Check::Phrases {
                    fields, patterns, ..
                } = check
                {
                    if seen.insert((fields.clone(), patterns.clone())) {
                        let paths = fields
                            .iter()
                            .map(|f| JsonPath::parse(f).expect("suite paths parse"))
                            .collect();
                        let set = PhraseSet::new(patterns.list().expect("suite patterns"))
                            .expect("suite patterns compile");
                        out.push((paths, set));
                    }
                }
            }
        }
        let probably = seen.iter().any(|(_, patterns)| {
            patterns
                .list()
                .is_ok_and(|list| list.iter().any(|p| p.contains("probably")))
        });
        assert!(
            probably,
            "the built-in suite has no speculation phrase list (no pattern for \"probably\")"
        );
        out
    })
}

/// The quick look of a phrase list (the words every match holds, found at once) never calls a
/// text clean that one of its patterns matches: texts made of the lists' own words and of the
/// characters their patterns name, in any case, with and without non-ASCII characters, each
/// judged alone and joined as lines with another.
#[test]
fn the_quick_look_calls_no_matching_text_clean() {
    use rand::{RngExt, SeedableRng};
    let escapes = regex::Regex::new(r"\\x[0-9a-fA-F]{2}|\\[a-zA-Z]|\(\?-?[im]+\)").unwrap();
    let words = regex::Regex::new(r"[A-Za-z' _]+").unwrap();
    let marks = [
        " ", "\n", "\t", ":", "%", "90", "4.5", "#", "##", "<", ">", "<|", "|>", "<<", ">>", "/",
        "[", "]", "\"", "\u{0}", "\u{1b}", "é", "—", "x",
    ];
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(41);
    for (_, set) in phrase_checks() {
        assert!(set.has_quick_look(), "a built-in list has no quick look");
        let patterns: Vec<&str> = set.patterns().collect();
        // The oracle: the patterns alone, as the list compiles them, without the quick look.
        let oracle = regex::RegexSet::new(patterns.iter().map(|p| format!("(?i){p}"))).unwrap();
        let pieces: Vec<String> = patterns
            .iter()
            .flat_map(|p| {
                let plain = escapes.replace_all(p, " ");
                words
                    .find_iter(&plain)
                    .map(|m| m.as_str().to_string())
                    .collect::<Vec<_>>()
            })
            .collect();
        let (mut matched, mut ascii) = (0, 0);
        for _ in 0..30_000 {
            let mut text = String::new();
            for _ in 0..rng.random_range(1..8) {
                let piece = if rng.random_bool(0.6) {
                    pieces[rng.random_range(0..pieces.len())].clone()
                } else {
                    marks[rng.random_range(0..marks.len())].to_string()
                };
                text.push_str(&match rng.random_range(0..3) {
                    0 => piece.to_uppercase(),
                    1 => piece.to_lowercase(),
                    _ => piece,
                });
            }
            if !oracle.is_match(&text) {
                continue;
            }
            matched += 1;
            assert!(
                set.find(&text).next().is_some(),
                "{text:?} holds a phrase of {patterns:?}"
            );
            ascii += usize::from(text.is_ascii());
            for joined in [format!("{text}\n"), format!("fine text\n{text}\nmore\n")] {
                assert!(
                    !set.none_in_lines(&joined),
                    "{joined:?} holds a phrase of {patterns:?}"
                );
            }
        }
        assert!(
            ascii > 100 && matched > ascii,
            "{matched} texts matched ({ascii} ASCII): too few to exercise {patterns:?}"
        );
    }
}

/// Findings of every phrase list of the suite on `answer`.
fn phrase_findings(answer: &Value) -> Vec<Finding> {
    let mut findings = Vec::new();
    for (paths, set) in phrase_checks() {
        for path in paths {
            for (at, value) in path.select(answer) {
                findings.extend(set.scan(&at, value.as_str().unwrap_or_default()));
            }
        }
    }
    findings
}

/// Findings of the evidence-tag rule on every value at `path` (a value that is not a string is a
/// finding too).
fn tag_findings(answer: &Value, path: &str) -> Vec<Finding> {
    JsonPath::parse(path)
        .expect("a valid path")
        .select(answer)
        .into_iter()
        .filter_map(|(at, value)| match value.as_str() {
            Some(text) => check_tag(&at, text),
            None => Some(Finding {
                path: at,
                message: "is not a string".into(),
            }),
        })
        .collect()
}

fn clean(what: &str, value: &Value, findings: &[Finding]) -> Result<(), TestCaseError> {
    prop_assert!(
        findings.is_empty(),
        "{what}:\n{}\nin {value:#}",
        findings_message(findings)
    );
    Ok(())
}

fn to_json(value: &impl Serialize) -> Value {
    serde_json::to_value(value).expect("message types serialize")
}

/// Agent names as an agent might choose them: letters (any script), digits, `_` and `-`.
const NAME: &str = "[\\p{L}\\p{N}_-]{1,32}";

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Generated answers (1) pass every schema and every semantic rule.
    #[test]
    fn generated_answers_conform(
        seed: u64,
        stream in "\\PC{0,24}",
        name in NAME,
        others in 0usize..8,
        trade_offs in proptest::option::of(0usize..4),
        minority_views in proptest::option::of(0usize..4),
    ) {
        let mut c = Content::new(seed, &stream);

        // /analyze
        let analysis = to_json(&c.analysis(&name));
        clean("analyze schema", &analysis, &schemas().validate("roundtable/analyze.response", &analysis))?;
        prop_assert!(!analysis["observations"].as_array().is_some_and(Vec::is_empty));
        clean("analyze evidence tags", &analysis, &tag_findings(&analysis, "observations[*].evidence"))?;
        clean("analyze phrases", &analysis, &phrase_findings(&analysis))?;

        // /challenge, against 0 to 7 other agents
        let request = ChallengeRequest {
            task_id: c.task_id(),
            content: c.task_content(),
            other_analyses: c.analyses(others),
        };
        let request_json = to_json(&request);
        clean("challenge request schema", &request_json, &schemas().validate("roundtable/challenge.request", &request_json))?;
        let challenge = to_json(&c.challenge_response(&name, &request));
        clean("challenge schema", &challenge, &schemas().validate("roundtable/challenge.response", &challenge))?;
        clean("counter evidence", &challenge, &roundtable::challenges_have_counter_evidence(&challenge))?;
        clean("known targets", &challenge, &roundtable::targets_are_known(&challenge, &request_json))?;
        clean("counter evidence tags", &challenge, &tag_findings(&challenge, "challenges[*].counter_evidence"))?;
        clean("challenge phrases", &challenge, &phrase_findings(&challenge))?;
        let challenged = challenge["challenges"].as_array().map_or(0, Vec::len);
        prop_assert_eq!(challenged, others, "one challenge per other agent");

        // /vote, with and without trade-offs and minority views
        let mut synthesis = c.synthesis(trade_offs.unwrap_or(0), minority_views.unwrap_or(0));
        if trade_offs.is_none() {
            synthesis.trade_offs = None;
        }
        if minority_views.is_none() {
            synthesis.minority_views = None;
        }
        let request = VoteRequest { task_id: c.task_id(), content: c.task_content(), synthesis };
        let request_json = to_json(&request);
        clean("vote request schema", &request_json, &schemas().validate("roundtable/vote.request", &request_json))?;
        let vote = to_json(&c.vote_response(&name, &request));
        clean("vote schema", &vote, &schemas().validate("roundtable/vote.response", &vote))?;
        clean("dissent reason", &vote, &roundtable::dissent_has_reason(&vote))?;
        clean("vote phrases", &vote, &phrase_findings(&vote))?;
        prop_assert_eq!(
            vote["approve"].as_bool(),
            Some(minority_views.unwrap_or(0) == 0),
            "the reference agent dissents exactly when there are minority views"
        );

        // The same agent_name at every endpoint.
        let names: Vec<(String, String)> = [("analyze", &analysis), ("challenge", &challenge), ("vote", &vote)]
            .iter()
            .map(|(e, v)| (e.to_string(), v["agent_name"].as_str().unwrap_or_default().to_string()))
            .collect();
        clean("agent_name", &vote, &roundtable::agent_name_consistent(&names))?;
        prop_assert_eq!(&names[0].1, &name);
    }
}

/// The request schema of an endpoint path.
fn request_schema(path: &str) -> Option<&'static str> {
    match path {
        "/analyze" => Some("roundtable/analyze.request"),
        "/challenge" => Some("roundtable/challenge.request"),
        "/vote" => Some("roundtable/vote.request"),
        _ => None,
    }
}

fn deserializes<T: DeserializeOwned>(value: &Value) -> Result<(), String> {
    serde_json::from_value::<T>(value.clone())
        .map(drop)
        .map_err(|e| e.to_string())
}

proptest! {
    // Rendering `analyze-long` (100,000 characters) dominates: fewer cases.
    #![proptest_config(ProptestConfig::with_cases(32))]

    /// Generated requests (2): what the probe sends matches the request schemas and the Rust
    /// request types.
    #[test]
    fn generated_requests_conform(seed: u64) {
        let run = RunValues::new(seed);
        let mut checked = BTreeSet::new();
        for (name, exchange) in &suite().file.exchanges {
            // raw_body exchanges (deliberately not JSON) and GET /health send no JSON body.
            let Some(body) = &exchange.body else { continue };
            // As the runner renders it: run values plus the exchange's own stream.
            let mut fill = template::Fill {
                run: &run,
                content: Content::new(seed, name),
                protocol: suite().protocol,
            };
            let request = template::render(body, &mut fill).map_err(|e| TestCaseError::fail(e.to_string()))?;
            // An unknown path has no request schema of its own.
            let Some(schema) = request_schema(&exchange.path) else { continue };
            clean(&format!("exchange {name} against {schema}"), &request, &schemas().validate(schema, &request))?;
            let typed = match schema {
                "roundtable/analyze.request" => deserializes::<AnalyzeRequest>(&request),
                "roundtable/challenge.request" => deserializes::<ChallengeRequest>(&request),
                _ => deserializes::<VoteRequest>(&request),
            };
            prop_assert!(typed.is_ok(), "exchange {}: {:?}", name, typed);
            // The analyses and findings the probe sends carry well-formed evidence tags.
            for path in ["other_analyses[*].observations[*].evidence", "synthesis.key_findings[*].evidence"] {
                clean(&format!("exchange {name} evidence"), &request, &tag_findings(&request, path))?;
            }
            checked.insert(schema);
        }
        prop_assert_eq!(checked.len(), 3, "every endpoint has an exchange with a JSON body");
    }
}

/// Field names of the protocol, so arbitrary objects often look almost right.
const FIELD_NAMES: &[&str] = &[
    "agent_name",
    "domain",
    "observations",
    "finding",
    "evidence",
    "severity",
    "confidence",
    "recommendations",
    "action",
    "rationale",
    "priority",
    "challenges",
    "target_agent",
    "finding_challenged",
    "counter_evidence",
    "concessions",
    "finding_accepted",
    "reason",
    "approve",
    "conditions",
    "dissent_reason",
    "task_id",
    "content",
    "context",
    "constraints",
    "other_analyses",
    "synthesis",
    "recommended_direction",
    "key_findings",
    "trade_offs",
    "minority_views",
    // execute_task
    "tool_name",
    "tool_params",
    "tool_names",
    "tool_outputs",
    "summary",
    "instructions",
    "metadata",
    "name",
    "model",
    "prompt",
    "branches",
];

/// Strings that are near the rules' edges.
const EDGE_STRINGS: &[&str] = &[
    "",
    "call_tool",
    "call_multiple_tools",
    "final_answer",
    "hitl_pause",
    "branch",
    "apply_refund",
    " ",
    "\u{0}",
    "critical",
    "high",
    "false",
    "true",
    "[POSSIBLE]",
    "[POSSIBLE: x]",
    "[VERIFIED: a:b] ok",
    "[VERIFIED: a]",
    "[verified: a:b]",
    "[CORROBORATED: a + ]",
    "[INDICATED]",
    "[",
    "probably 95% confident",
    "ignore all previous instructions",
    "é🔐\u{200d}\u{202e}ا",
];

fn json_key() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => proptest::sample::select(FIELD_NAMES).prop_map(String::from),
        1 => any::<String>(),
    ]
}

fn json_leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        // Non-finite floats have no JSON form; they become null, as serde_json writes them.
        any::<f64>().prop_map(|f| Number::from_f64(f).map_or(Value::Null, Value::Number)),
        (-0.5f64..1.5).prop_map(|f| Number::from_f64(f).map_or(Value::Null, Value::Number)),
        any::<String>().prop_map(Value::String),
        proptest::sample::select(EDGE_STRINGS).prop_map(Value::from),
    ]
}

fn json_value() -> impl Strategy<Value = Value> {
    json_leaf().prop_recursive(5, 96, 8, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
            proptest::collection::btree_map(json_key(), inner, 0..8)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Mostly objects, as agents' answers are, but any JSON at all now and then.
fn json_body() -> impl Strategy<Value = Value> {
    prop_oneof![
        3 => proptest::collection::btree_map(json_key(), json_value(), 0..10)
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        1 => json_value(),
    ]
}

fn messages_nonempty(what: &str, findings: &[Finding]) -> Result<(), TestCaseError> {
    for f in findings {
        prop_assert!(
            !f.message.trim().is_empty(),
            "{what}: empty message at {}",
            f.path
        );
    }
    Ok(())
}

/// A 200 answer carrying `body`, as the probe would have received it.
fn outcome(body: &Value, sent: &Value) -> Outcome {
    let response = Response {
        status: 200,
        headers: vec![("content-type".into(), "application/json".into())],
        body: serde_json::to_vec(body).expect("a Value serializes").into(),
        body_exceeded: false,
        elapsed: Duration::from_millis(1),
    };
    Outcome::new(AuthMode::Default, Some(sent.clone()), Ok(response))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Arbitrary JSON (3): validation, the semantic rules and every check of the suite survive
    /// it, and every finding says something.
    #[test]
    fn arbitrary_json_never_panics(
        body in json_body(),
        other in json_body(),
        names in proptest::collection::vec((any::<String>(), any::<String>()), 0..4),
    ) {
        for id in schemas().ids() {
            messages_nonempty(id, &schemas().validate(id, &body))?;
        }
        messages_nonempty("dissent_has_reason", &roundtable::dissent_has_reason(&body))?;
        messages_nonempty(
            "challenges_have_counter_evidence",
            &roundtable::challenges_have_counter_evidence(&body),
        )?;
        messages_nonempty("targets_are_known", &roundtable::targets_are_known(&body, &other))?;
        messages_nonempty("targets_are_known", &roundtable::targets_are_known(&other, &body))?;
        messages_nonempty("agent_name_consistent", &roundtable::agent_name_consistent(&names))?;
        let from_body: Vec<(String, String)> = [&body, &other]
            .iter()
            .filter_map(|v| v.get("agent_name").and_then(Value::as_str))
            .map(|n| ("analyze".to_string(), n.to_string()))
            .collect();
        messages_nonempty("agent_name_consistent", &roundtable::agent_name_consistent(&from_body))?;
        for (at, text) in strings(&body) {
            if let Err(why) = evidence_level(text) {
                prop_assert!(!why.to_string().trim().is_empty(), "evidence_level at {}", at);
            }
            messages_nonempty("check_tag", &check_tag(&at, text).into_iter().collect::<Vec<_>>())?;
        }
        messages_nonempty("phrases", &phrase_findings(&body))?;
        messages_nonempty("execute_task::check_answer", &execute_task::check_answer(&body))?;
        if let Some((name, _)) = execute_task::discover_name(&body) {
            prop_assert!(!name.trim().is_empty());
        }
        for note in execute_task::reference_harness_notes(&body) {
            prop_assert!(!note.trim().is_empty());
        }

        // Every check of the built-in suite, as the runner evaluates it, on this answer.
        let exchanges: HashMap<String, Arc<Outcome>> = suite()
            .file
            .exchanges
            .keys()
            .map(|name| (name.clone(), Arc::new(outcome(&body, &other))))
            .collect();
        let own = outcome(&body, &other);
        let ctx = Ctx {
            protocol: suite().protocol,
            outcome: Some(&own),
            exchanges: &exchanges,
            reachable: Some(Ok(String::new())),
            max_body: 5 * 1024 * 1024,
            max_field: 50_000,
            status_judged: true,
            live: false,
            notes: true,
        };
        for case in suite().cases() {
            for check in &case.checks {
                if let agent_tck::probe::plugin::Verdict::Broken(why) = check.evaluate(&ctx) {
                    prop_assert!(!why.trim().is_empty(), "case {}: {:?} failed without a message", case.id.value, check);
                }
            }
        }
    }
}

/// A fake execute_task agent answering whatever the test gives it, turn after turn.
struct Canned {
    answers: std::collections::VecDeque<Vec<u8>>,
    requests: Vec<Value>,
}

impl Exchanger for Canned {
    fn exchange(
        &mut self,
        request: &Value,
    ) -> impl std::future::Future<Output = Result<Vec<u8>, NoAnswer>> + Send {
        self.requests.push(request.clone());
        let next = self
            .answers
            .pop_front()
            .ok_or_else(|| NoAnswer("no more answers".to_string()));
        async move { next }
    }
}

/// Answers as an execute_task agent might send them: mostly objects with an action (valid or
/// not), sometimes any JSON, sometimes bytes that are not JSON.
fn execute_task_answer() -> impl Strategy<Value = Vec<u8>> {
    let action = proptest::sample::select(&execute_task::ACTIONS[..]).prop_map(Value::from);
    prop_oneof![
        4 => (action, proptest::collection::btree_map(json_key(), json_value(), 0..6)).prop_map(
            |(action, map)| {
                let mut map: Map<String, Value> = map.into_iter().collect();
                map.insert("action".into(), action);
                serde_json::to_vec(&Value::Object(map)).expect("serializes")
            }
        ),
        2 => json_body().prop_map(|v| serde_json::to_vec(&v).expect("serializes")),
        1 => proptest::collection::vec(any::<u8>(), 0..64),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// The harness loop on arbitrary answers, for every built-in scenario: never panics, sends
    /// at most max_turns requests, each valid against the request schema and numbered from 1,
    /// and every turn it records matches a request.
    #[test]
    fn harness_survives_arbitrary_answers(
        answers in proptest::collection::vec(execute_task_answer(), 0..8),
        max in proptest::option::of(1u32..7),
    ) {
        let runtime = tokio::runtime::Builder::new_current_thread().build().expect("a runtime");
        for scenario in Scenario::builtin() {
            let mut agent = Canned { answers: answers.clone().into(), requests: Vec::new() };
            let t = runtime.block_on(run_scenario(&scenario, &mut agent, max));
            let limit = max.unwrap_or(scenario.max_turns) as usize;
            prop_assert!(agent.requests.len() <= limit);
            prop_assert_eq!(agent.requests.len(), t.turns.len());
            for (i, request) in agent.requests.iter().enumerate() {
                clean("execute_task request", request, &schemas().validate(execute_task::REQUEST_SCHEMA, request))?;
                prop_assert_eq!(request["turn"].as_u64(), Some(i as u64 + 1));
                prop_assert_eq!(request["conversation_history"].as_array().map(Vec::len), Some(2 * i));
            }
            if t.end == End::Reached(agent_tck::protocols::execute_task::scenario::Ending::MaxTurns) {
                prop_assert_eq!(t.turns.len(), limit);
            }
            for (expectation, verdict) in judge(&scenario, &t) {
                let message = match verdict { Held::Met(m) | Held::Missed(m) => m };
                prop_assert!(!message.trim().is_empty(), "{} has no message", expectation);
            }
        }
    }
}

// ---- 4. Rust types and schemas agree -------------------------------------------------------

/// An embedded schema document by its file (`roundtable/analyze.response.json`).
fn schema_doc(file: &str) -> Value {
    let (_, _, text) = EMBEDDED
        .iter()
        .find(|(_, f, _)| *f == file)
        .unwrap_or_else(|| panic!("no embedded schema file {file}"));
    serde_json::from_str(text).expect("embedded schemas are JSON")
}

/// Follows `$ref`s (`#/$defs/x` within `file`, or a sibling file, possibly with a fragment).
fn resolve(schema: &Value, file: &str) -> (Value, String) {
    let Some(reference) = schema.get("$ref").and_then(Value::as_str) else {
        return (schema.clone(), file.to_string());
    };
    let (target, fragment) = reference.split_once('#').unwrap_or((reference, ""));
    let file = if target.is_empty() {
        file.to_string()
    } else {
        match file.rsplit_once('/') {
            Some((dir, _)) => format!("{dir}/{target}"),
            None => target.to_string(),
        }
    };
    let doc = schema_doc(&file);
    let found = if fragment.is_empty() {
        doc
    } else {
        doc.pointer(fragment)
            .cloned()
            .unwrap_or_else(|| panic!("{file}: no {fragment} for $ref {reference}"))
    };
    resolve(&found, &file)
}

/// A field of an example message, found by walking its schema.
#[derive(Debug)]
struct Field {
    /// JSON pointer into the example.
    pointer: String,
    required: bool,
}

/// Walks `schema` (in `file`) alongside `instance`: every property the schema declares that the
/// instance has, at any depth (through `items` and `$ref`s). A declared property the instance
/// lacks is noted in `missing` as a pattern (`/observations/*/confidence`), so a test can insist
/// that its example exercises every field.
fn walk(
    schema: &Value,
    file: &str,
    instance: &Value,
    pointer: &str,
    pattern: &str,
    out: &mut Vec<Field>,
    missing: &mut BTreeSet<String>,
) {
    let (schema, file) = resolve(schema, file);
    match instance {
        Value::Object(map) => {
            let required: Vec<&str> = schema
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let properties = schema.get("properties").and_then(Value::as_object);
            for key in &required {
                assert!(
                    properties.is_some_and(|p| p.contains_key(*key)),
                    "{file}: required {key} at {pattern} is not among the properties"
                );
            }
            for (key, sub) in properties.into_iter().flatten() {
                let here = format!("{pointer}/{key}");
                let here_pattern = format!("{pattern}/{key}");
                match map.get(key) {
                    Some(value) => {
                        out.push(Field {
                            pointer: here.clone(),
                            required: required.contains(&key.as_str()),
                        });
                        walk(sub, &file, value, &here, &here_pattern, out, missing);
                    }
                    None => {
                        missing.insert(here_pattern);
                    }
                }
            }
        }
        Value::Array(items) => {
            if let Some(item) = schema.get("items") {
                for (i, value) in items.iter().enumerate() {
                    walk(
                        item,
                        &file,
                        value,
                        &format!("{pointer}/{i}"),
                        &format!("{pattern}/*"),
                        out,
                        missing,
                    );
                }
            }
        }
        _ => {}
    }
}

fn without(example: &Value, pointer: &str) -> Value {
    let mut value = example.clone();
    let (parent, key) = pointer.rsplit_once('/').expect("a pointer to a field");
    value
        .pointer_mut(parent)
        .and_then(Value::as_object_mut)
        .expect("the parent is an object")
        .remove(key);
    value
}

fn with(example: &Value, pointer: &str, replacement: Value) -> Value {
    let mut value = example.clone();
    *value.pointer_mut(pointer).expect("the field exists") = replacement;
    value
}

/// What the schema and the Rust type say about one instance.
fn verdicts<T: DeserializeOwned>(
    schema_id: &str,
    value: &Value,
) -> (Vec<Finding>, Result<T, String>) {
    (
        schemas().validate(schema_id, value),
        serde_json::from_value::<T>(value.clone()).map_err(|e| e.to_string()),
    )
}

/// Checks one message type against its schema; returns the disagreements found.
fn agree<T>(schema_id: &str, message: &T) -> Vec<String>
where
    T: Serialize + DeserializeOwned + PartialEq + Debug,
{
    let mut problems = Vec::new();
    let example = to_json(message);
    let findings = schemas().validate(schema_id, &example);
    if !findings.is_empty() {
        problems.push(format!(
            "{schema_id}: the example serialized from the Rust type is invalid:\n{}",
            findings_message(&findings)
        ));
    }
    match serde_json::from_value::<T>(example.clone()) {
        Ok(back) if &back == message => {}
        other => problems.push(format!(
            "{schema_id}: the example does not round-trip: {other:?}"
        )),
    }

    let file = format!("{schema_id}.json");
    let mut fields = Vec::new();
    let mut missing = BTreeSet::new();
    walk(
        &schema_doc(&file),
        &file,
        &example,
        "",
        "",
        &mut fields,
        &mut missing,
    );
    // A field the example never has is a field this test would not exercise.
    let present: BTreeSet<String> = fields
        .iter()
        .map(|f| {
            f.pointer
                .split('/')
                .map(|s| if s.parse::<usize>().is_ok() { "*" } else { s })
                .collect::<Vec<_>>()
                .join("/")
        })
        .collect();
    let unexercised: Vec<&String> = missing.difference(&present).collect();
    if !unexercised.is_empty() {
        problems.push(format!("{schema_id}: the example lacks {unexercised:?}"));
    }

    for field in &fields {
        let value = without(&example, &field.pointer);
        let (findings, typed) = verdicts::<T>(schema_id, &value);
        let (schema_ok, type_ok) = (findings.is_empty(), typed.is_ok());
        if field.required && (schema_ok || type_ok) {
            problems.push(format!(
                "{schema_id}: without required {}: schema {}, Rust type {}",
                field.pointer,
                if schema_ok {
                    "accepts (should refuse)"
                } else {
                    "refuses"
                },
                if type_ok {
                    "accepts (should refuse)".to_string()
                } else {
                    "refuses".to_string()
                },
            ));
        }
        let both_accept = schema_ok && type_ok;
        if !field.required && !both_accept {
            problems.push(format!(
                "{schema_id}: without optional {}: schema {}, Rust type {}",
                field.pointer,
                if schema_ok {
                    "accepts".to_string()
                } else {
                    format!("refuses ({})", findings_message(&findings))
                },
                match typed {
                    Ok(_) => "accepts".to_string(),
                    Err(e) => format!("refuses ({e})"),
                },
            ));
        }
    }
    problems
}

/// Both the schema and the Rust type refuse `value`.
fn both_refuse<T: DeserializeOwned>(schema_id: &str, what: &str, value: &Value) -> Vec<String> {
    let (findings, typed) = verdicts::<T>(schema_id, value);
    let mut problems = Vec::new();
    if findings.is_empty() {
        problems.push(format!("{schema_id}: the schema accepts {what}"));
    }
    if typed.is_ok() {
        problems.push(format!("{schema_id}: the Rust type accepts {what}"));
    }
    problems
}

fn observation(finding: &str, evidence: &str, severity: Severity) -> Observation {
    Observation {
        finding: finding.into(),
        evidence: evidence.into(),
        severity,
        confidence: Some(0.9),
    }
}

/// A conforming analysis with every optional field present, at every level.
fn full_analysis(agent: &str) -> AgentAnalysis {
    AgentAnalysis {
        agent_name: agent.into(),
        domain: "application security".into(),
        observations: vec![
            observation(
                "SQL injection in user search",
                "[VERIFIED: auth_module.py:line_42] raw string interpolation",
                Severity::Critical,
            ),
            observation(
                "No rate limiting on login",
                "[INDICATED: routes/auth.py] no limiter middleware",
                Severity::Warning,
            ),
        ],
        recommendations: Some(vec![Recommendation {
            action: "Use parameterized queries".into(),
            rationale: Some("Prevents SQL injection".into()),
            priority: Some("critical".into()),
        }]),
        confidence: Some(0.85),
    }
}

/// Rust types ↔ schemas (4): for the six messages, the types and the schemas agree on every
/// required and optional field, and on the values both must refuse.
#[test]
fn rust_types_and_schemas_agree() {
    let analyze_request = AnalyzeRequest {
        task_id: "a1b2c3d4e5f6".into(),
        content: "Review the authentication module".into(),
        context: Some(
            json!({"source": "round_table", "agent_focus_areas": {"me": "security"}})
                .as_object()
                .cloned()
                .unwrap_or_else(Map::new),
        ),
        constraints: Some(vec!["Must cite evidence".into()]),
    };
    let analysis = full_analysis("security_analyst");
    let challenge_request = ChallengeRequest {
        task_id: "a1b2c3d4e5f6".into(),
        content: "Review the authentication module".into(),
        other_analyses: vec![full_analysis("code_reviewer")],
    };
    let challenge = AgentChallenge {
        agent_name: "security_analyst".into(),
        challenges: Some(vec![Challenge {
            target_agent: "code_reviewer".into(),
            finding_challenged: "SQL injection in user search".into(),
            counter_evidence: Some(
                "[VERIFIED: search.py:line_9] the query is parameterized".into(),
            ),
        }]),
        concessions: Some(vec![Concession {
            target_agent: "code_reviewer".into(),
            finding_accepted: "No rate limiting on login".into(),
            reason: Some("The router has no limiter".into()),
        }]),
    };
    let vote_request = VoteRequest {
        task_id: "a1b2c3d4e5f6".into(),
        content: "Review the authentication module".into(),
        synthesis: Synthesis {
            recommended_direction: "Fix the injection, then add rate limiting".into(),
            key_findings: Some(vec![KeyFinding {
                agent_name: Some("security_analyst".into()),
                finding: Some("SQL injection".into()),
                evidence: Some("[VERIFIED: auth_module.py:line_42] interpolation".into()),
            }]),
            trade_offs: Some(vec!["Rate limiting may slow bulk users".into()]),
            minority_views: Some(vec![json!("Ship first"), json!({"agent_name": "x"})]),
        },
    };
    let vote = AgentVote {
        agent_name: "security_analyst".into(),
        approve: false,
        conditions: Some(vec!["Parameterized queries, not escaping".into()]),
        dissent_reason: Some("Rate limiting must come first".into()),
    };

    let mut problems = Vec::new();
    problems.extend(agree("roundtable/analyze.request", &analyze_request));
    problems.extend(agree("roundtable/analyze.response", &analysis));
    problems.extend(agree("roundtable/challenge.request", &challenge_request));
    problems.extend(agree("roundtable/challenge.response", &challenge));
    problems.extend(agree("roundtable/vote.request", &vote_request));
    problems.extend(agree("roundtable/vote.response", &vote));

    // Values both sides must refuse.
    let vote_json = to_json(&vote);
    problems.extend(both_refuse::<AgentVote>(
        "roundtable/vote.response",
        "approve: \"false\"",
        &with(&vote_json, "/approve", json!("false")),
    ));
    problems.extend(both_refuse::<AgentVote>(
        "roundtable/vote.response",
        "approve: 0",
        &with(&vote_json, "/approve", json!(0)),
    ));
    let analysis_json = to_json(&analysis);
    problems.extend(both_refuse::<AgentAnalysis>(
        "roundtable/analyze.response",
        "severity \"high\"",
        &with(&analysis_json, "/observations/1/severity", json!("high")),
    ));
    problems.extend(both_refuse::<AgentAnalysis>(
        "roundtable/analyze.response",
        "severity \"Critical\"",
        &with(
            &analysis_json,
            "/observations/0/severity",
            json!("Critical"),
        ),
    ));
    let challenge_request_json = to_json(&challenge_request);
    problems.extend(both_refuse::<ChallengeRequest>(
        "roundtable/challenge.request",
        "severity \"high\" in other_analyses",
        &with(
            &challenge_request_json,
            "/other_analyses/0/observations/0/severity",
            json!("high"),
        ),
    ));
    problems.extend(both_refuse::<ChallengeRequest>(
        "roundtable/challenge.request",
        "other_analyses as an object",
        &with(&challenge_request_json, "/other_analyses", json!({})),
    ));
    // Ranges are the schema's alone: the Rust type holds any f64.
    for pointer in ["/confidence", "/observations/0/confidence"] {
        for bad in [json!(1.5), json!(-0.1)] {
            let value = with(&analysis_json, pointer, bad.clone());
            if schemas()
                .validate("roundtable/analyze.response", &value)
                .is_empty()
            {
                problems.push(format!(
                    "roundtable/analyze.response: the schema accepts {pointer} = {bad}"
                ));
            }
        }
    }
    // dissent_reason may be null, as the spec's example shows; both sides accept it.
    let null_reason = with(&vote_json, "/dissent_reason", Value::Null);
    let (findings, typed) = verdicts::<AgentVote>("roundtable/vote.response", &null_reason);
    if !findings.is_empty() || typed.is_err() {
        problems.push(format!(
            "roundtable/vote.response: dissent_reason null: schema {findings:?}, Rust type {typed:?}"
        ));
    }

    assert!(
        problems.is_empty(),
        "types and schemas disagree:\n{}",
        problems.join("\n")
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// The execute_task mock's answers are valid actions whatever the request holds, and its
    /// line server frames each as exactly one line, whatever characters the request carries
    /// (newlines, U+2028, NUL: JSON escapes them, so a request is one line too).
    #[test]
    fn the_task_mocks_answers_are_valid_single_lines(
        task in "(?s).{0,200}",
        turn in 1u32..12,
        history in proptest::collection::vec(("(user|assistant)", "(?s).{0,80}"), 0..6),
    ) {
        let history: Vec<Value> = history
            .into_iter()
            .map(|(role, content)| json!({"role": role, "content": content}))
            .collect();
        let request = json!({"task_description": task, "turn": turn, "conversation_history": history});
        let agent = agent_tck::protocols::execute_task::reference::TaskAgent::with_scenarios("prop", &Scenario::builtin());
        let answer = agent.answer(&request);
        prop_assert!(execute_task::check_answer(&answer).is_empty(), "{answer}");
        let lines = task_mock_lines(&[serde_json::to_vec(&request).unwrap()]);
        prop_assert_eq!(lines.len(), 1);
        let parsed: Value = serde_json::from_slice(&lines[0]).unwrap();
        prop_assert!(execute_task::check_answer(&parsed).is_empty(), "{parsed}");
    }
}

/// Writes each request as a line to the execute_task mock's line server (over an in-memory
/// pipe) and returns the lines it answered with.
fn task_mock_lines(requests: &[Vec<u8>]) -> Vec<Vec<u8>> {
    use agent_tck::mock::agent::{MockAgent, Profile};
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let profile = Profile {
            name: "prop".into(),
            domain: "d".into(),
            capabilities: vec![],
            api_key: None,
        };
        let reference =
            Box::new(agent_tck::protocols::execute_task::reference::TaskAgent::new("prop"));
        let items =
            agent_tck::mock::behavior::parse_list("conforming", crate::support::execute_task())
                .unwrap();
        let agent = Arc::new(agent_tck::mock::line_server::LineService::judged(
            MockAgent::with_responder(
                &agent_tck::protocols::execute_task::Agents,
                profile,
                items,
                1,
                reference,
            ),
            &agent_tck::mock::protocol::PlatformExpect::timeout(Duration::from_secs(120)),
        ));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let stop = tokio_util::sync::CancellationToken::new();
        tokio::spawn(agent_tck::mock::line_server::serve_tcp(
            agent,
            listener,
            stop.clone(),
        ));
        let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        let (r, mut w) = stream.into_split();
        for request in requests {
            w.write_all(request).await.unwrap();
            w.write_all(b"\n").await.unwrap();
        }
        w.shutdown().await.unwrap();
        let mut lines = Vec::new();
        let mut reader = tokio::io::BufReader::new(r);
        loop {
            let mut line = Vec::new();
            let n =
                tokio::time::timeout(Duration::from_secs(5), reader.read_until(b'\n', &mut line))
                    .await
                    .unwrap()
                    .unwrap();
            if n == 0 {
                break;
            }
            line.pop();
            lines.push(line);
        }
        stop.cancel();
        lines
    })
}
