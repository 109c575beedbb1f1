//! Kinds of checks. A suite case lists checks by name with their parameters; each generic kind is
//! implemented once here, on an exchange's outcome, and a protocol adds its semantic rules
//! ([`super::plugin::Rule`], named in suites the same way). The first failing check ends the case,
//! and its message names the JSON path and the rule, what was expected and what came back.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex, OnceLock};

use serde::Deserialize;
use serde_json::Value;

use super::exchange::{AuthMode, ExchangeSpec};
use super::outcome::body_too_large;
use super::plugin::{Ctx, InvalidArgs, SuiteProtocol, Verdict, OWN_ANSWER};
use crate::jsonpath::{strings, JsonPath};
use crate::phrases::PhraseSet;
use crate::schema::{findings_message, schemas, Finding};
use crate::text::{excerpt, excerpt_str};

/// One check, as written in a suite.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Check {
    /// The agent's host accepts a connection (and a TLS handshake for https).
    Reachable,
    /// The status is one of these: `200`, `"4xx"`, `[401, 403]`.
    Status(StatusSpec),
    /// The body is within `--max-body` bytes.
    MaxBody,
    /// The body is one JSON object (valid UTF-8, parseable, not too deeply nested).
    Json,
    /// No object in the body repeats a key.
    UniqueKeys,
    /// The Content-Type's media type is this one (e.g. `application/json`).
    ContentType(String),
    /// The body is valid against an embedded schema, e.g. `roundtable/analyze.response`.
    Schema(String),
    /// Every string in the body is at most `--max-field` characters.
    MaxField,
    /// Lists the platform silently caps: path → largest length kept.
    ListCaps(BTreeMap<String, usize>),
    /// None of these patterns occur in the strings at these paths.
    Phrases {
        fields: Vec<String>,
        patterns: Patterns,
        /// Both compiled, on the first answer judged.
        #[serde(skip)]
        compiled: CompiledPhrases,
    },
    /// The request (sent without the key, or with a wrong one) is refused with 401 or 403.
    Refused,
    /// Always passes; notes the status and an excerpt of the body (for MAY cases).
    ReportAnswer,
    /// A rule of the suite's protocol: a name (`dissent_reason`) or a name with arguments
    /// (`{evidence_tags: [...]}`).
    #[serde(untagged)]
    Rule(RuleCall),
}

/// The patterns of a `phrases` check: written out, or the name of a shared list
/// (`sanitization`: [`crate::sanitization`]).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
#[serde(untagged)]
pub enum Patterns {
    Listed(Vec<String>),
    Named(String),
}

impl Patterns {
    /// The patterns as written; the error names an unknown list.
    pub fn list(&self) -> Result<&[String], crate::sanitization::PatternsError> {
        match self {
            Patterns::Listed(list) => Ok(list),
            Patterns::Named(name) => crate::sanitization::named(name).unwrap_or_else(|| {
                Err(crate::sanitization::PatternsError::Unknown { name: name.clone() })
            }),
        }
    }

    /// The patterns compiled, once per process for each list: a run over thousands of targets
    /// loads the suite for each, and compiling its phrase lists again was a fifth of a
    /// target's instructions.
    fn compiled(&self) -> Result<Arc<PhraseSet>, String> {
        static COMPILED: OnceLock<CompiledLists> = OnceLock::new();
        let lists = COMPILED.get_or_init(|| CompiledLists::new(CompiledLists::CAP));
        Ok(lists.get(self.list()?)?)
    }
}

/// A `phrases` check's list and paths compiled once for the check: each answer the proxy
/// judges reads them, and finding the list among those compiled for the process (hashing every
/// pattern) and parsing the paths again cost more than the search. Set when the check is
/// first judged; the check's fields and patterns are not changed after it is read from its
/// suite.
#[derive(Debug, Clone, Default)]
pub struct CompiledPhrases(OnceLock<Result<Compiled, String>>);

/// A phrase list and the paths it reads.
type Compiled = (Arc<PhraseSet>, Arc<[JsonPath]>);

impl CompiledPhrases {
    fn get(
        &self,
        fields: &[String],
        patterns: &Patterns,
    ) -> Result<(&PhraseSet, &[JsonPath]), String> {
        let compiled = self.0.get_or_init(|| {
            let paths = fields
                .iter()
                .map(|f| JsonPath::parse(f))
                .collect::<Result<Vec<_>, _>>()?;
            Ok((patterns.compiled()?, paths.into()))
        });
        match compiled {
            Ok((set, paths)) => Ok((set, paths)),
            Err(e) => Err(e.clone()),
        }
    }
}

/// Phrase lists compiled, by their patterns. Bounded: past `cap` lists (the suites write a
/// handful; a fuzzer or a long-lived process may write many) a list is compiled but not kept.
struct CompiledLists {
    sets: Mutex<HashMap<Vec<String>, Arc<PhraseSet>>>,
    cap: usize,
}

impl CompiledLists {
    const CAP: usize = 64;

    fn new(cap: usize) -> CompiledLists {
        CompiledLists {
            sets: Mutex::default(),
            cap,
        }
    }

    /// The list compiled: kept from before, or compiled now (and kept while there is room).
    /// A list that does not compile is not kept.
    fn get(&self, list: &[String]) -> Result<Arc<PhraseSet>, crate::phrases::PatternError> {
        let sets = || self.sets.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(set) = sets().get(list) {
            return Ok(Arc::clone(set));
        }
        // Compiled outside the lock: two threads may compile the same list once each.
        let set = Arc::new(PhraseSet::new(list)?);
        let mut sets = sets();
        if sets.len() < self.cap {
            sets.insert(list.to_vec(), Arc::clone(&set));
        }
        Ok(set)
    }
}

/// A protocol rule as a suite names it.
#[derive(Debug, Clone, PartialEq)]
pub struct RuleCall {
    pub name: String,
    /// Its arguments (null when it is named alone).
    pub args: Value,
}

impl<'de> Deserialize<'de> for RuleCall {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<RuleCall, D::Error> {
        use serde::de::Error;
        match Value::deserialize(d)? {
            Value::String(name) => Ok(RuleCall {
                name,
                args: Value::Null,
            }),
            Value::Object(map) if map.len() == 1 => {
                let (name, args) = map.into_iter().next().expect("one entry");
                Ok(RuleCall { name, args })
            }
            _ => Err(D::Error::custom(
                "a check is a kind's name, or a map of one kind's name to its parameters",
            )),
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum StatusSpec {
    One(StatusItem),
    Many(Vec<StatusItem>),
}

#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum StatusItem {
    Code(u16),
    /// `2xx`, `4xx`, …
    Class(String),
}

impl StatusSpec {
    fn items(&self) -> Vec<&StatusItem> {
        match self {
            StatusSpec::One(i) => vec![i],
            StatusSpec::Many(v) => v.iter().collect(),
        }
    }

    fn matches(&self, status: u16) -> bool {
        self.items().iter().any(|i| match i {
            StatusItem::Code(c) => *c == status,
            StatusItem::Class(c) => c
                .as_bytes()
                .first()
                .is_some_and(|d| u16::from(d - b'0') == status / 100),
        })
    }

    fn describe(&self) -> String {
        let items: Vec<String> = self
            .items()
            .iter()
            .map(|i| match i {
                StatusItem::Code(c) => c.to_string(),
                StatusItem::Class(c) => c.clone(),
            })
            .collect();
        items.join(" or ")
    }
}

/// The generic check kinds, for messages (a protocol's rules are named beside them).
pub const GENERIC_KINDS: &str = "reachable, status, max_body, json, unique_keys, content_type, \
schema, max_field, list_caps, phrases, refused, report_answer";

/// The answer broke the check: `why`.
fn broken(why: String) -> Result<Verdict, String> {
    Ok(Verdict::Broken(why))
}

/// Held on `judged` of `of` when there are no findings, else the findings as the failure.
pub fn verdict(
    findings: Vec<Finding>,
    judged: u64,
    of: &str,
    ok: impl FnOnce() -> String,
) -> Verdict {
    if findings.is_empty() {
        Verdict::held(judged, of, ok())
    } else {
        Verdict::Broken(findings_message(&findings))
    }
}

impl Check {
    /// Load-time validation: names, paths and patterns. The error says what is wrong.
    pub fn validate(
        &self,
        has_exchange: bool,
        exchanges: &BTreeMap<String, ExchangeSpec>,
        protocol: &dyn SuiteProtocol,
    ) -> Result<(), InvalidArgs> {
        self.check_args(has_exchange, exchanges, protocol)
            .map_err(InvalidArgs)
    }

    fn check_args(
        &self,
        has_exchange: bool,
        exchanges: &BTreeMap<String, ExchangeSpec>,
        protocol: &dyn SuiteProtocol,
    ) -> Result<(), String> {
        let reads_exchange = match self {
            Check::Reachable => false,
            Check::Rule(call) => match protocol.rule(&call.name) {
                Some(rule) => rule.reads_exchange(),
                None => {
                    return Err(format!(
                        "unknown check {:?} (the generic kinds: {GENERIC_KINDS}; the protocol's rules: {})",
                        call.name,
                        protocol.rules().join(", ")
                    ))
                }
            },
            _ => true,
        };
        if reads_exchange && !has_exchange {
            return Err("a check that reads an answer needs `exchange:`".into());
        }
        match self {
            Check::Status(spec) => {
                for item in spec.items() {
                    if let StatusItem::Class(c) = item {
                        if !matches!(c.as_str(), "1xx" | "2xx" | "3xx" | "4xx" | "5xx") {
                            return Err(format!(
                                "status {c:?} is neither a code nor a class like 4xx"
                            ));
                        }
                    }
                }
                Ok(())
            }
            Check::Schema(id) if !schemas().contains(id) => Err(format!(
                "unknown schema {id:?} (known: {})",
                schemas().ids().collect::<Vec<_>>().join(", ")
            )),
            Check::ListCaps(caps) => caps
                .keys()
                .try_for_each(|p| Ok(JsonPath::parse(p).map(drop)?)),
            Check::Phrases {
                fields, patterns, ..
            } => {
                fields
                    .iter()
                    .try_for_each(|p| JsonPath::parse(p).map(drop))?;
                patterns.compiled().map(drop)
            }
            Check::Rule(call) => match protocol.rule(&call.name) {
                Some(rule) => rule.validate(&call.args, exchanges).map_err(|e| e.0),
                None => Ok(()),
            },
            _ => Ok(()),
        }
    }

    /// The exchanges this check reads besides the case's own.
    pub fn extra_exchanges(&self, protocol: &dyn SuiteProtocol) -> Vec<String> {
        match self {
            Check::Rule(call) => protocol
                .rule(&call.name)
                .map(|r| r.exchanges(&call.args))
                .unwrap_or_default(),
            _ => Vec::new(),
        }
    }

    /// Whether it reads an answer's HTTP header fields (a Content-Type): in traffic over lines
    /// (stdio), where answers carry none, it is not judged.
    pub fn reads_headers(&self, protocol: &dyn SuiteProtocol) -> bool {
        match self {
            Check::ContentType(_) => true,
            Check::Rule(call) => protocol.rule(&call.name).is_some_and(|r| r.reads_headers()),
            _ => false,
        }
    }

    /// Whether it is a protocol rule that holds of a run once one answer holds it
    /// ([`Rule::once_in_a_run`]).
    pub fn once_in_a_run(&self, protocol: &dyn SuiteProtocol) -> bool {
        matches!(self, Check::Rule(call) if protocol.rule(&call.name).is_some_and(|r| r.once_in_a_run()))
    }

    /// Whether it is a protocol rule that judges each answer's time against `--timeout`
    /// ([`super::plugin::Rule::judges_latency`]).
    pub fn judges_latency(&self, protocol: &dyn SuiteProtocol) -> bool {
        match self {
            Check::Rule(call) => protocol
                .rule(&call.name)
                .is_some_and(|r| r.judges_latency()),
            _ => false,
        }
    }

    /// Whether the check reads an answer's body as one of the protocol's answers (so an answer
    /// with a non-2xx status gives it nothing to judge, unless the case asked for that status).
    fn reads_answer_body(&self) -> bool {
        matches!(
            self,
            Check::Json
                | Check::UniqueKeys
                | Check::ContentType(_)
                | Check::Schema(_)
                | Check::MaxField
                | Check::ListCaps(_)
                | Check::Phrases { .. }
        )
    }

    /// Whether the check judges the answer's status itself.
    pub fn judges_status(&self) -> bool {
        matches!(
            self,
            Check::Status(_) | Check::Refused | Check::ReportAnswer
        )
    }

    /// What it found: held on what it judged (`judged == 0`: nothing to judge), or broken.
    pub fn evaluate(&self, ctx: &Ctx<'_>) -> Verdict {
        if let Check::Reachable = self {
            return match &ctx.reachable {
                Some(Ok(note)) => Verdict::held(1, "connection", note.clone()),
                Some(Err(why)) => Verdict::broken(why.clone()),
                None => Verdict::broken("no connection attempt was made"),
            };
        }
        if let Check::Rule(call) = self {
            return match ctx.protocol.rule(&call.name) {
                Some(rule) => rule.evaluate(&call.args, ctx),
                None => Verdict::Broken(format!("unknown check {:?}", call.name)),
            };
        }
        Verdict::of(|| self.judge_answer(ctx))
    }

    /// The verdict of a generic check that reads the case's own answer (Err: the answer could not
    /// be read, which breaks the check as well).
    fn judge_answer(&self, ctx: &Ctx<'_>) -> Result<Verdict, String> {
        let outcome = ctx.outcome.ok_or("the case has no exchange")?;
        let response = outcome.result.as_ref().map_err(|e| e.to_string())?;
        if self.reads_answer_body() && !ctx.status_judged && !(200..300).contains(&response.status)
        {
            return Ok(Verdict::nothing(format!(
                "the endpoint answered {}, not an answer of the protocol: there is no answer to judge (the case needs the endpoint to answer its request 2xx)",
                response.status
            )));
        }
        let json = || outcome.json(ctx.max_body);
        match self {
            Check::Reachable | Check::Rule(_) => unreachable!("handled above"),
            Check::Status(spec) => {
                if spec.matches(response.status) {
                    Ok(Verdict::answer(
                        ctx.note(|| format!("answered {}", response.status)),
                    ))
                } else {
                    broken(format!(
                        "answered {}; expected {}; body: {}",
                        response.status,
                        spec.describe(),
                        excerpt(&response.body[..response.body.len().min(300)], 300)
                    ))
                }
            }
            Check::MaxBody => {
                if response.body_exceeded {
                    broken(body_too_large(response, ctx.max_body).to_string())
                } else {
                    Ok(Verdict::answer(
                        ctx.note(|| format!("{} bytes", response.body.len())),
                    ))
                }
            }
            Check::Json => Ok(json().map(|_| Verdict::answer(""))?),
            Check::UniqueKeys => {
                json()?;
                Ok(verdict(
                    outcome.duplicate_keys(ctx.max_body)?.to_vec(),
                    1,
                    OWN_ANSWER,
                    String::new,
                ))
            }
            Check::ContentType(want) => Ok(content_type_verdict(response, want)),
            Check::Schema(id) => Ok(verdict(
                schemas().validate(id, json()?),
                1,
                OWN_ANSWER,
                String::new,
            )),
            Check::MaxField => Ok(max_field_verdict(json()?, ctx.max_field)),
            Check::ListCaps(caps) => list_caps_verdict(json()?, caps),
            Check::Phrases {
                fields,
                patterns,
                compiled,
            } => {
                let (set, paths) = compiled.get(fields, patterns)?;
                // The request is read only for a phrase found (most answers hold none).
                let request = || outcome.body_sent().filter(|_| ctx.live);
                phrases_verdict(json()?, fields, set, paths, request)
            }
            Check::Refused => match response.status {
                401 | 403 => Ok(Verdict::answer(format!("refused with {}", response.status))),
                s => {
                    let how = match outcome.auth {
                        AuthMode::Wrong => "with a wrong API key",
                        _ => "without an Authorization header",
                    };
                    if (200..300).contains(&s) {
                        broken(format!("security finding: the agent accepted a request {how} (answered {s}); expected 401 or 403"))
                    } else {
                        broken(format!(
                            "answered {s} to a request {how}; expected 401 or 403"
                        ))
                    }
                }
            },
            Check::ReportAnswer => {
                let ct = response.header("content-type").unwrap_or("no content-type");
                Ok(Verdict::answer(format!(
                    "{ct}: {}",
                    excerpt(&response.body[..response.body.len().min(200)], 200)
                )))
            }
        }
    }
}

/// `max_field`: no string of the answer longer than `max_field` characters.
fn max_field_verdict(json: &Value, max_field: usize) -> Verdict {
    let (mut findings, mut measured) = (Vec::new(), 0u64);
    crate::jsonpath::each_string(json, &mut |at, s| {
        measured += 1;
        // No more bytes than the limit cannot be more characters.
        let n = if s.len() > max_field {
            s.chars().count()
        } else {
            0
        };
        if n > max_field {
            findings.push(crate::schema::finding(
                at.to_string(),
                format!(
                    "{n} characters; at most {max_field} (--max-field; the platform truncates)"
                ),
            ));
        }
    });
    if measured == 0 {
        return Verdict::nothing("the answer holds no string to measure");
    }
    verdict(findings, measured, "strings", String::new)
}

/// Whether an answer's Content-Type is the media type `want` (its parameters aside).
pub fn content_type_verdict(response: &crate::transport::http::Response, want: &str) -> Verdict {
    let got = response.header("content-type").unwrap_or("");
    let media = got.split(';').next().unwrap_or("").trim();
    if media.eq_ignore_ascii_case(want) {
        Verdict::answer("")
    } else {
        Verdict::broken(format!(
            "Content-Type is {:?}; expected {want} (clients such as aiohttp's json() refuse other types)",
            excerpt_str(got, 100)
        ))
    }
}

/// `list_caps`: no list at these paths longer than its cap.
fn list_caps_verdict(body: &Value, caps: &BTreeMap<String, usize>) -> Result<Verdict, String> {
    let mut findings = Vec::new();
    let mut lists = 0;
    for (path, cap) in caps {
        JsonPath::cached(path)?.each(body, &mut |at, value| {
            let Some(items) = value.as_array() else {
                return;
            };
            lists += 1;
            if items.len() > *cap {
                findings.push(crate::schema::finding(
                    at.to_string(),
                    format!(
                        "{} items; the platform keeps the first {cap} and silently drops the rest",
                        items.len()
                    ),
                ));
            }
        });
    }
    if lists == 0 {
        return Ok(Verdict::nothing(format!(
            "the answer holds none of the capped lists ({})",
            caps.keys().cloned().collect::<Vec<_>>().join(", ")
        )));
    }
    Ok(verdict(findings, lists, "lists", String::new))
}

thread_local! {
    /// The room a thread joins an answer's strings in for [`phrases_verdict`].
    static LINES: std::cell::Cell<String> = const { std::cell::Cell::new(String::new()) };
}

/// `phrases`: none of the patterns in the strings at these paths. With `request` (an answer in
/// traffic the kit did not send: [`Ctx::live`]), a match the request holds too is the sender's,
/// repeated: it is not judged, and the note counts it.
fn phrases_verdict<'r>(
    body: &Value,
    fields: &[String],
    set: &PhraseSet,
    paths: &[JsonPath],
    request: impl FnOnce() -> Option<&'r Value>,
) -> Result<Verdict, String> {
    // Most answers hold no phrase: their strings, joined as lines, are read once to say so.
    let mut scanned = 0;
    let none = crate::scratch::with(&LINES, |lines| {
        for path in paths {
            path.each_string(body, &mut |_, text| {
                scanned += 1;
                lines.push_str(text);
                lines.push('\n');
            });
        }
        scanned > 0 && set.none_in_lines(lines)
    });
    if none {
        return Ok(verdict(Vec::new(), scanned, "strings", String::new));
    }
    // What the request holds is read only once the answer is found to hold a phrase: most
    // answers hold none, and reading every request for every list was a tenth of the proxy's
    // CPU per answer (and parsing it at all, a twentieth).
    let mut request = Some(request);
    let mut sent: Option<HashSet<&str>> = None;
    let mut sent_by_request = |m: &str| {
        sent.get_or_insert_with(|| match request.take().and_then(|r| r()) {
            Some(r) => strings(r)
                .into_iter()
                .flat_map(|(_, s)| set.find(s).map(|(_, m)| m))
                .collect(),
            None => HashSet::new(),
        })
        .contains(m)
    };
    let mut findings = Vec::new();
    scanned = 0;
    let mut repeated = 0;
    for path in paths {
        path.each_string(body, &mut |at, text| {
            scanned += 1;
            findings.extend(set.scan_except(at, text, |m| {
                let echo = sent_by_request(m);
                repeated += usize::from(echo);
                echo
            }));
        });
    }
    if scanned == 0 {
        return Ok(Verdict::nothing(format!(
            "the answer holds no string at {}",
            fields.join(", ")
        )));
    }
    Ok(verdict(findings, scanned, "strings", || {
        if repeated == 0 {
            String::new()
        } else {
            format!(
                "{} repeated from the request not judged (the sender's to strip)",
                crate::text::count(repeated as u64, "phrases")
            )
        }
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A check says what held only when its note is read: the probe's reports carry "answered
    /// 200" and the body's size; the traffic judge, which throws them away, gets none written.
    /// Either way the check holds on the one answer.
    #[test]
    fn a_note_on_what_held_is_written_only_when_read() {
        let outcome = super::super::outcome::Outcome::new(
            AuthMode::Default,
            None,
            Ok(crate::transport::http::Response {
                status: 200,
                headers: Vec::new(),
                body: bytes::Bytes::from_static(br#"{"a":1}"#),
                body_exceeded: false,
                elapsed: std::time::Duration::ZERO,
            }),
        );
        let exchanges = HashMap::new();
        let checks: Vec<Check> =
            serde_json::from_value(serde_json::json!([{"status": 200}, "max_body"]))
                .expect("the checks as a suite writes them");
        for notes in [true, false] {
            let ctx = Ctx {
                protocol: &super::super::plugin::GenericOnly,
                outcome: Some(&outcome),
                exchanges: &exchanges,
                reachable: None,
                max_body: 1024,
                max_field: 1024,
                status_judged: true,
                live: !notes,
                notes,
            };
            let said: Vec<String> = checks
                .iter()
                .map(|check| match check.evaluate(&ctx) {
                    Verdict::Held(judged) => {
                        assert_eq!(judged.judged, 1, "{check:?}");
                        judged.note
                    }
                    broken => panic!("{check:?}: {broken:?}"),
                })
                .collect();
            let want: &[&str] = if notes {
                &["answered 200", "7 bytes"]
            } else {
                &["", ""]
            };
            assert_eq!(said, want, "notes: {notes}");
        }
    }

    /// Characters are counted, not bytes: a string of more bytes than the limit in no more
    /// characters holds; one character more breaks it, named by its path.
    #[test]
    fn field_length_counts_characters_and_names_the_path() {
        let held = max_field_verdict(&serde_json::json!({"a": ["ééé", "ok"]}), 3);
        assert_eq!(held, Verdict::held(2, "strings", ""));
        match max_field_verdict(&serde_json::json!({"a": ["ok", "éééé"]}), 3) {
            Verdict::Broken(why) => assert!(
                why.contains("a[1]") && why.contains("4 characters"),
                "{why}"
            ),
            held => panic!("expected broken, got {held:?}"),
        }
        assert!(matches!(
            max_field_verdict(&serde_json::json!({"n": 1}), 3),
            Verdict::Held(j) if j.judged == 0
        ));
    }

    /// A list is compiled once for the process (a run over many targets loads the suite again
    /// for each), a named list too; one that does not compile is an error each time.
    #[test]
    fn a_pattern_list_is_compiled_once() {
        let listed = Patterns::Listed(vec![r"\bcompiled-once-\d+\b".into(), "twice".into()]);
        let (a, b) = (
            listed.compiled().unwrap(),
            listed.clone().compiled().unwrap(),
        );
        assert!(Arc::ptr_eq(&a, &b));
        assert_eq!(a.scan("$", "compiled-once-42").len(), 1);
        let named = Patterns::Named(crate::sanitization::NAME.into());
        assert!(Arc::ptr_eq(
            &named.compiled().unwrap(),
            &named.compiled().unwrap()
        ));
        let bad = Patterns::Listed(vec!["(unclosed".into()]);
        for _ in 0..2 {
            let e = bad.compiled().unwrap_err();
            assert!(
                e.starts_with("phrase pattern \"(unclosed\" is not a valid regular expression"),
                "{e}"
            );
        }
        let unknown = Patterns::Named("no-such-list".into());
        assert!(unknown.compiled().is_err());
    }

    /// Past its cap, a list is compiled each time and not kept: memory stays bounded.
    #[test]
    fn the_compiled_lists_are_bounded() {
        let lists = CompiledLists::new(2);
        let list = |n: usize| vec![format!("word{n}")];
        let first = lists.get(&list(1)).unwrap();
        assert!(Arc::ptr_eq(&first, &lists.get(&list(1)).unwrap()));
        lists.get(&list(2)).unwrap();
        let third = lists.get(&list(3)).unwrap();
        assert!(!Arc::ptr_eq(&third, &lists.get(&list(3)).unwrap()));
        assert_eq!(lists.sets.lock().unwrap().len(), 2);
        assert_eq!(third.scan("$", "a word3 here").len(), 1);
    }
}
