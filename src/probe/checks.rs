//! Kinds of checks. A suite case lists checks by name with their parameters; each kind is
//! implemented once here, on an exchange's outcome. The first failing check ends the case, and its
//! message names the JSON path and the rule, what was expected and what came back.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, OnceLock};

use serde::Deserialize;
use serde_json::Value;

use super::path::{strings, JsonPath};
use super::suite::{AuthMode, ExchangeSpec};
use crate::protocol::evidence::{check_tag, PhraseSet};
use crate::protocol::roundtable;
use crate::schema::{schemas, Finding};
use crate::text::{excerpt, excerpt_str};
use crate::transport::http::{Error as HttpError, Response};

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
    /// Each string at these paths carries a well-formed evidence level tag.
    EvidenceTags(Vec<String>),
    /// None of these patterns occur in the strings at these paths.
    Phrases {
        fields: Vec<String>,
        patterns: Vec<String>,
    },
    /// /vote: a dissent carries a non-empty dissent_reason.
    DissentReason,
    /// /challenge: every challenge carries non-empty counter_evidence.
    CounterEvidence,
    /// /challenge: targets are agents named in the request's other_analyses.
    KnownTargets,
    /// `agent_name` is the same in the answers to these exchanges.
    SameAgentName(Vec<String>),
    /// The request (sent without the key, or with a wrong one) is refused with 401 or 403.
    Refused,
    /// Always passes; notes the status and an excerpt of the body (for MAY cases).
    ReportAnswer,
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

/// What the runner knows when it evaluates a case.
pub struct Ctx<'a> {
    /// The case's own exchange.
    pub outcome: Option<&'a Outcome>,
    /// Every exchange the case's checks read, by name.
    pub exchanges: &'a HashMap<String, Arc<Outcome>>,
    /// The result of a connection attempt, for `reachable`.
    pub reachable: Option<Result<String, String>>,
    pub max_body: usize,
    pub max_field: usize,
}

/// A request as sent and what came back; shared by every case that reads the same exchange.
pub struct Outcome {
    pub auth: AuthMode,
    /// The JSON body sent, when it was JSON.
    pub body_sent: Option<Value>,
    pub result: Result<Response, HttpError>,
    parsed: OnceLock<Result<Value, String>>,
}

impl Outcome {
    pub fn new(
        auth: AuthMode,
        body_sent: Option<Value>,
        result: Result<Response, HttpError>,
    ) -> Outcome {
        Outcome {
            auth,
            body_sent,
            result,
            parsed: OnceLock::new(),
        }
    }

    /// The body as JSON, parsed once.
    pub fn json(&self, max_body: usize) -> Result<&Value, String> {
        let response = self.result.as_ref().map_err(|e| e.to_string())?;
        self.parsed
            .get_or_init(|| parse_body(response, max_body))
            .as_ref()
            .map_err(Clone::clone)
    }
}

/// Parses a body as one JSON object, saying precisely why it is not one.
pub fn parse_body(response: &Response, max_body: usize) -> Result<Value, String> {
    if response.body_exceeded {
        return Err(body_too_large(response, max_body));
    }
    let body = &response.body;
    if body.is_empty() {
        return Err("the body is empty; expected a JSON object".into());
    }
    if let Err(e) = std::str::from_utf8(body) {
        let at = e.valid_up_to();
        return Err(format!("the body is not valid UTF-8: byte 0x{:02x} at offset {at} (JSON must be UTF-8, RFC 8259)", body[at]));
    }
    match serde_json::from_slice::<Value>(body) {
        Ok(v @ Value::Object(_)) => Ok(v),
        Ok(other) => Err(format!("the body is JSON but not an object: {}", excerpt_str(&other.to_string(), 120))),
        Err(e) if e.to_string().contains("recursion limit") => Err(format!(
            "the body is not usable JSON: nested deeper than 128 levels ({e}); a platform parser would refuse or crash on it"
        )),
        Err(e) => Err(format!("the body is not valid JSON: {e}; body begins: {}", excerpt(&body[..body.len().min(200)], 200))),
    }
}

fn body_too_large(response: &Response, max_body: usize) -> String {
    format!(
        "the body exceeds {max_body} bytes (--max-body; the platform truncates or rejects it): stopped reading after {} bytes",
        response.body.len()
    )
}

/// Findings as one message: at most 8, then a count of the rest.
pub fn findings_message(findings: &[Finding]) -> String {
    const SHOWN: usize = 8;
    let mut lines: Vec<String> = findings
        .iter()
        .take(SHOWN)
        .map(ToString::to_string)
        .collect();
    if findings.len() > SHOWN {
        lines.push(format!("(and {} more)", findings.len() - SHOWN));
    }
    lines.join("\n")
}

fn verdict(findings: Vec<Finding>, ok: impl FnOnce() -> String) -> Result<String, String> {
    if findings.is_empty() {
        Ok(ok())
    } else {
        Err(findings_message(&findings))
    }
}

impl Check {
    /// Whether the check reads an exchange's answer.
    fn reads_exchange(&self) -> bool {
        !matches!(self, Check::Reachable | Check::SameAgentName(_))
    }

    /// Load-time validation: names, paths and patterns. The error says what is wrong.
    pub fn validate(
        &self,
        has_exchange: bool,
        exchanges: &BTreeMap<String, ExchangeSpec>,
    ) -> Result<(), String> {
        if self.reads_exchange() && !has_exchange {
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
            Check::ListCaps(caps) => caps.keys().try_for_each(|p| JsonPath::parse(p).map(drop)),
            Check::EvidenceTags(paths) => {
                paths.iter().try_for_each(|p| JsonPath::parse(p).map(drop))
            }
            Check::Phrases { fields, patterns } => {
                fields
                    .iter()
                    .try_for_each(|p| JsonPath::parse(p).map(drop))?;
                PhraseSet::new(patterns).map(drop)
            }
            Check::SameAgentName(names) => match names.iter().find(|n| !exchanges.contains_key(*n))
            {
                Some(n) => Err(format!("same_agent_name: unknown exchange {n:?}")),
                None => Ok(()),
            },
            _ => Ok(()),
        }
    }

    /// The exchanges this check reads besides the case's own.
    pub fn extra_exchanges(&self) -> &[String] {
        match self {
            Check::SameAgentName(names) => names,
            _ => &[],
        }
    }

    /// Ok(note) or Err(why it failed).
    pub fn evaluate(&self, ctx: &Ctx<'_>) -> Result<String, String> {
        if let Check::Reachable = self {
            return ctx
                .reachable
                .clone()
                .unwrap_or_else(|| Err("no connection attempt was made".into()));
        }
        if let Check::SameAgentName(names) = self {
            return same_agent_name(names, ctx);
        }
        let outcome = ctx.outcome.ok_or("the case has no exchange")?;
        let response = outcome.result.as_ref().map_err(|e| e.to_string())?;
        let json = || outcome.json(ctx.max_body);
        match self {
            Check::Reachable | Check::SameAgentName(_) => unreachable!("handled above"),
            Check::Status(spec) => {
                if spec.matches(response.status) {
                    Ok(format!("answered {}", response.status))
                } else {
                    Err(format!(
                        "answered {}; expected {}; body: {}",
                        response.status,
                        spec.describe(),
                        excerpt(&response.body[..response.body.len().min(300)], 300)
                    ))
                }
            }
            Check::MaxBody => {
                if response.body_exceeded {
                    Err(body_too_large(response, ctx.max_body))
                } else {
                    Ok(format!("{} bytes", response.body.len()))
                }
            }
            Check::Json => json().map(|_| String::new()),
            Check::UniqueKeys => {
                json()?;
                verdict(super::dupkeys::duplicate_keys(&response.body)?, String::new)
            }
            Check::ContentType(want) => {
                let got = response.header("content-type").unwrap_or("");
                let media = got.split(';').next().unwrap_or("").trim();
                if media.eq_ignore_ascii_case(want) {
                    Ok(String::new())
                } else {
                    Err(format!(
                        "Content-Type is {:?}; expected {want} (clients such as aiohttp's json() refuse other types)",
                        excerpt_str(got, 100)
                    ))
                }
            }
            Check::Schema(id) => verdict(schemas().validate(id, json()?), String::new),
            Check::MaxField => {
                let findings = strings(json()?)
                    .into_iter()
                    .filter_map(|(path, s)| {
                        let n = s.chars().count();
                        (n > ctx.max_field).then(|| crate::protocol::finding(path, format!("{n} characters; at most {} (--max-field; the platform truncates)", ctx.max_field)))
                    })
                    .collect();
                verdict(findings, String::new)
            }
            Check::ListCaps(caps) => {
                let body = json()?;
                let mut findings = Vec::new();
                for (path, cap) in caps {
                    for (at, value) in JsonPath::parse(path)?.select(body) {
                        if let Some(items) = value.as_array().filter(|a| a.len() > *cap) {
                            findings.push(crate::protocol::finding(at, format!("{} items; the platform keeps the first {cap} and silently drops the rest", items.len())));
                        }
                    }
                }
                verdict(findings, String::new)
            }
            Check::EvidenceTags(paths) => {
                let body = json()?;
                let mut findings = Vec::new();
                for path in paths {
                    for (at, value) in JsonPath::parse(path)?.select(body) {
                        findings.extend(check_tag(&at, value.as_str().unwrap_or_default()));
                    }
                }
                verdict(findings, String::new)
            }
            Check::Phrases { fields, patterns } => {
                let set = PhraseSet::new(patterns)?;
                let body = json()?;
                let mut findings = Vec::new();
                for path in fields {
                    for (at, value) in JsonPath::parse(path)?.select(body) {
                        findings.extend(set.scan(&at, value.as_str().unwrap_or_default()));
                    }
                }
                verdict(findings, String::new)
            }
            Check::DissentReason => verdict(roundtable::dissent_has_reason(json()?), String::new),
            Check::CounterEvidence => verdict(
                roundtable::challenges_have_counter_evidence(json()?),
                String::new,
            ),
            Check::KnownTargets => {
                let request = outcome
                    .body_sent
                    .as_ref()
                    .ok_or("the request had no JSON body")?;
                verdict(roundtable::targets_are_known(json()?, request), String::new)
            }
            Check::Refused => match response.status {
                401 | 403 => Ok(format!("refused with {}", response.status)),
                s => {
                    let how = match outcome.auth {
                        AuthMode::Wrong => "with a wrong API key",
                        _ => "without an Authorization header",
                    };
                    if (200..300).contains(&s) {
                        Err(format!("security finding: the agent accepted a request {how} (answered {s}); expected 401 or 403"))
                    } else {
                        Err(format!(
                            "answered {s} to a request {how}; expected 401 or 403"
                        ))
                    }
                }
            },
            Check::ReportAnswer => {
                let ct = response.header("content-type").unwrap_or("no content-type");
                Ok(format!(
                    "{ct}: {}",
                    excerpt(&response.body[..response.body.len().min(200)], 200)
                ))
            }
        }
    }
}

fn same_agent_name(names: &[String], ctx: &Ctx<'_>) -> Result<String, String> {
    let mut seen = Vec::new();
    for name in names {
        let outcome = ctx
            .exchanges
            .get(name)
            .ok_or_else(|| format!("exchange {name} was not run"))?;
        let body = outcome
            .json(ctx.max_body)
            .map_err(|e| format!("/{name}: {e}"))?;
        let agent = body
            .get("agent_name")
            .and_then(Value::as_str)
            .ok_or_else(|| format!("/{name}: no agent_name"))?;
        seen.push((name.clone(), agent.to_string()));
    }
    verdict(roundtable::agent_name_consistent(&seen), || {
        match seen.first() {
            Some((_, n)) => format!(
                "agent_name {}",
                excerpt_str(&Value::from(n.as_str()).to_string(), 80)
            ),
            None => String::new(),
        }
    })
}
